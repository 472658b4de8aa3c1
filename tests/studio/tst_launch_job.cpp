// LaunchJob with a fake worker (a shell script standing for hap-worker, so failure and stop are
// tested in milliseconds): lines arrive in batches by rank and stream; a rank that exits 3 ends
// the launch as RankFailed with its error line and stops the others; stop() ends every rank
// (checked in /proc, not assumed); a chatty run is delivered in bounded batches; the destructor
// leaves no process; a worker that cannot be started is said, not thrown.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QProcess>
#include <QtTest>

#include <signal.h>

#include "app/studio/core/jobs/launch_job.h"
#include "tests/studio/process_census.h"

using namespace hap;
using namespace hap::studio;

namespace {

using hap::test::processesWith;

// The fake worker: its --model, the first option after the plan, picks what it does; RANK says
// which rank it is.
const char* kScript = R"(#!/bin/sh
mode="$3"
case "$mode" in
  ok)
    echo "rank $RANK of $WORLD_SIZE on port $MASTER_PORT"
    echo "warning on stderr" 1>&2
    exit 0 ;;
  fail)
    echo "step 1/5: loss 2.0"
    if [ "$RANK" = "1" ]; then
      sleep 0.2
      echo "hap-worker: error: token file 'x.bin' has 3 bytes" 1>&2
      exit 3
    fi
    while true; do sleep 0.05; done ;;
  sleep)
    echo "started $RANK"
    while true; do sleep 0.05; done ;;
  chatty)
    i=0
    while [ $i -lt 30000 ]; do echo "line $i"; i=$((i+1)); done
    exit 0 ;;
esac
exit 2
)";

std::shared_ptr<const plan::Plan> planOf(int ranks) {
  auto p = std::make_shared<plan::Plan>();
  for (int r = 0; r < ranks; ++r) {
    plan::PlanDevice d;
    d.rank = r;
    p->devices.push_back(d);
  }
  return p;
}

}  // namespace

class TstLaunchJob : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  QString m_worker, m_plan;

  runtime::LocalLaunchRequest request(const QString& mode) {
    runtime::LocalLaunchRequest r;
    r.options.planPath = m_plan.toStdString();
    r.options.modelPath = mode.toStdString();  // the fake worker's mode: its --model
    r.worker = m_worker.toStdString();
    r.grace = std::chrono::milliseconds(1000);
    return r;
  }

  static LaunchOutcome outcomeOf(const QSignalSpy& spy) { return spy.first().first().value<LaunchOutcome>(); }

 private Q_SLOTS:
  void initTestCase() {
    hap::test::markChildren();  // every process this test starts, checked in cleanupTestCase
    QVERIFY(m_dir.isValid());
    m_worker = m_dir.filePath("fake-worker.sh");
    QFile f(m_worker);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(kScript);
    f.close();
    QVERIFY(f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    m_plan = m_dir.filePath("plan.json");
    QFile p(m_plan);
    QVERIFY(p.open(QIODevice::WriteOnly));
    p.write("{}");
  }

  // The census the no-orphan checks rely on sees a process of this test even after it left the
  // test's process tree (a detached one is re-parented at once), and stops seeing it once it ends.
  void processCensusSeesOrphans() {
    qint64 pid = 0;
    QVERIFY(QProcess::startDetached(QStringLiteral("sleep"), {QStringLiteral("30")}, QString(), &pid));
    struct Kill {
      qint64 pid;
      ~Kill() { ::kill(static_cast<pid_t>(pid), SIGKILL); }
    } kill{pid};
    auto seen = [pid] {
      for (const QString& p : hap::test::markedProcesses())
        if (p.startsWith(QStringLiteral("%1 ").arg(pid)) && p.endsWith(QStringLiteral("sleep 30"))) return true;
      return false;
    };
    QTRY_VERIFY_WITH_TIMEOUT(seen(), 5000);
    QCOMPARE(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
    QVERIFY2(hap::test::survivors().isEmpty(), qPrintable(hap::test::markedProcesses().join(';')));
  }

  void cleanupTestCase() {
    // No process this test started outlives it (checked by the process list).
    const QStringList left = hap::test::survivors();
    QVERIFY2(left.isEmpty(), qPrintable(left.join(QStringLiteral("; "))));
  }

  void cleanup() { QTRY_COMPARE_WITH_TIMEOUT(processesWith(m_worker.toUtf8()).size(), 0, 5000); }

  void linesAndSuccess() {
    LaunchJob job;
    QSignalSpy started(&job, &LaunchJob::started);
    QSignalSpy lines(&job, &LaunchJob::linesArrived);
    QSignalSpy finished(&job, &LaunchJob::finished);
    QSignalSpy busy(&job, &LaunchJob::busyChanged);
    QVERIFY(job.start(planOf(2), request("ok")));
    QVERIFY(job.busy());
    QVERIFY(!job.start(planOf(2), request("ok")));  // one at a time
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    QVERIFY(!job.busy());
    QCOMPARE(busy.count(), 2);
    QCOMPARE(started.count(), 1);
    QCOMPARE(started.first().at(0).toLongLong(), 0);  // not recorded
    QVERIFY(started.first().at(1).toInt() > 0);       // the port
    QCOMPARE(started.first().at(2).toInt(), 2);
    QVERIFY(started.first().at(3).toString().contains("fake-worker.sh"));
    QVERIFY(job.commandLine().endsWith(" ok"));
    QMap<int, QStringList> out, err;
    for (const QList<QVariant>& call : lines)
      for (const LaunchLine& l : call.first().value<LaunchLines>()) (l.stderrLine ? err : out)[l.rank] << l.text;
    const int port = started.first().at(1).toInt();
    QCOMPARE(out[0], QStringList{QStringLiteral("rank 0 of 2 on port %1").arg(port)});
    QCOMPARE(out[1], QStringList{QStringLiteral("rank 1 of 2 on port %1").arg(port)});
    QCOMPARE(err[1], QStringList{"warning on stderr"});
    const LaunchOutcome o = outcomeOf(finished);
    QVERIFY(o.succeeded());
    QCOMPARE(o.exits, (QStringList{"", ""}));
    QVERIFY(o.seconds > 0 && o.seconds < 10);
  }

  void aFailingRankStopsAll() {
    LaunchJob job;
    QSignalSpy finished(&job, &LaunchJob::finished);
    QVERIFY(job.start(planOf(3), request("fail")));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    const LaunchOutcome o = outcomeOf(finished);
    QCOMPARE(o.kind, LaunchOutcome::Kind::RankFailed);
    QCOMPARE(o.failedRank, 1);
    QCOMPARE(o.exit, QStringLiteral("exit code 3"));
    QCOMPARE(o.errorLine, QStringLiteral("hap-worker: error: token file 'x.bin' has 3 bytes"));
    QVERIFY2(o.message.startsWith("Rank 1 failed (exit code 3): hap-worker: error:"), qPrintable(o.message));
    QCOMPARE(o.exits.size(), 3);
    QVERIFY(o.exits[0].contains("signal"));  // stopped by the launcher
    QCOMPARE(processesWith(m_worker.toUtf8()).size(), 0);
  }

  void stopEndsEveryRank() {
    LaunchJob job;
    QSignalSpy lines(&job, &LaunchJob::linesArrived);
    QSignalSpy finished(&job, &LaunchJob::finished);
    QVERIFY(job.start(planOf(3), request("sleep")));
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(m_worker.toUtf8()).size(), 3, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(!lines.isEmpty(), 5000);
    QElapsedTimer clock;
    clock.start();
    job.stop();
    QVERIFY(job.stopping());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    QVERIFY(clock.elapsed() < 5000);
    const LaunchOutcome o = outcomeOf(finished);
    QCOMPARE(o.kind, LaunchOutcome::Kind::Stopped);
    QVERIFY2(o.message.contains("SIGTERM"), qPrintable(o.message));
    QCOMPARE(processesWith(m_worker.toUtf8()).size(), 0);  // reaped before finished()
  }

  void stopAndWaitEmitsFinishedBeforeItReturns() {
    LaunchJob job;
    QSignalSpy finished(&job, &LaunchJob::finished);
    QVERIFY(job.start(planOf(2), request("sleep")));
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(m_worker.toUtf8()).size(), 2, 10000);
    job.stopAndWait();
    QCOMPARE(finished.count(), 1);
    QVERIFY(!job.busy());
    QCOMPARE(processesWith(m_worker.toUtf8()).size(), 0);
    QCOMPARE(outcomeOf(finished).kind, LaunchOutcome::Kind::Stopped);
    QTest::qWait(50);  // the thread's queued calls find nothing to do
    QCOMPARE(finished.count(), 1);
  }

  void theDestructorLeavesNoProcess() {
    auto job = std::make_unique<LaunchJob>();
    QVERIFY(job->start(planOf(2), request("sleep")));
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(m_worker.toUtf8()).size(), 2, 10000);
    job.reset();
    QCOMPARE(processesWith(m_worker.toUtf8()).size(), 0);
  }

  void aChattyRunComesInBoundedBatches() {
    LaunchJob job;
    job.setInterval(50);
    QSignalSpy lines(&job, &LaunchJob::linesArrived);
    QSignalSpy finished(&job, &LaunchJob::finished);
    QVERIFY(job.start(planOf(1), request("chatty")));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 20000);
    qsizetype total = 0, dropped = 0;
    for (const QList<QVariant>& call : lines) {
      const LaunchLines batch = call.first().value<LaunchLines>();
      QVERIFY(batch.size() <= LaunchJob::kMaxPendingLines + 1);
      for (const LaunchLine& l : batch)
        if (l.rank < 0) dropped += l.text.section(' ', 0, 0).mid(1).toLongLong();
        else ++total;
    }
    QCOMPARE(total + dropped, 30000);
    QVERIFY(lines.count() < 30000 / 10);  // batched, not a signal per line
  }

  void aWorkerThatCannotStartIsSaid() {
    LaunchJob job;
    QSignalSpy finished(&job, &LaunchJob::finished);
    runtime::LocalLaunchRequest r = request("ok");
    r.cpuShares = {1, 2};  // out of range: the launcher refuses the request
    QVERIFY(job.start(planOf(2), r));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    LaunchOutcome o = outcomeOf(finished);
    QCOMPARE(o.kind, LaunchOutcome::Kind::Error);
    QVERIFY2(o.message.contains("rank 1"), qPrintable(o.message));

    finished.clear();
    r = request("ok");
    r.worker = m_dir.filePath("no-such-worker").toStdString();
    QVERIFY(job.start(planOf(2), r));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
    o = outcomeOf(finished);
    QCOMPARE(o.kind, LaunchOutcome::Kind::Error);
    QVERIFY2(o.message.contains("no-such-worker"), qPrintable(o.message));
  }
};

QTEST_GUILESS_MAIN(TstLaunchJob)
#include "tst_launch_job.moc"
