// The profile store under process death and concurrency (issue 19 item 7): a writer killed with
// SIGKILL in the middle of a run leaves a sound database with whole steps and a run that is
// recovered as aborted; four processes writing at once lose nothing. The writers are
// store_writer processes (STORE_WRITER_PATH).
#include <QtTest>

#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <unistd.h>

#include <array>
#include <memory>

#include "db/store.h"

using hap::db::RunRecord;
using hap::db::RunStatus;
using hap::db::StepRecord;
using hap::db::Store;

namespace {

constexpr int kTimeoutMs = 120'000;

std::unique_ptr<QProcess> startWriter(const QString& db, const QString& what) {
  auto p = std::make_unique<QProcess>();
  p->setProcessChannelMode(QProcess::SeparateChannels);
  p->start(STORE_WRITER_PATH, {db, what});
  if (!p->waitForStarted(10'000)) qFatal("store_writer did not start");
  return p;
}

}  // namespace

class TstStoreReliability : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

 private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void killedWriter() {
    const QString path = dir_.path() + "/killed.db";
    Store store(path.toStdString());
    // A run of this (living) process on this host: recovery must leave it alone.
    RunRecord mine;
    mine.ranks = 1;
    const int64_t myRun = store.beginRun(mine);

    std::unique_ptr<QProcess> writer = startWriter(path, "forever");
    const qint64 pid = writer->processId();
    int64_t run = 0, lastStep = 0;
    QElapsedTimer clock;
    clock.start();
    while (lastStep < 50) {
      QVERIFY2(clock.elapsed() < kTimeoutMs, "the writer did not record 50 steps in time");
      if (!writer->canReadLine() && !writer->waitForReadyRead(1000)) {
        QVERIFY2(writer->state() == QProcess::Running, qPrintable(writer->readAllStandardError()));
        continue;
      }
      while (writer->canReadLine()) {
        const QString line = QString::fromUtf8(writer->readLine()).trimmed();
        if (line.startsWith("run ")) run = line.mid(4).toLongLong();
        if (line.startsWith("step ")) lastStep = line.mid(5).toLongLong();
      }
    }
    QVERIFY(run > 0);
    writer->kill();  // SIGKILL, in the middle of its loop
    QVERIFY(writer->waitForFinished(kTimeoutMs));  // reaped: its pid is gone
    QCOMPARE(writer->exitStatus(), QProcess::CrashExit);

    {
      SQLite::Database db(path.toStdString(), SQLite::OPEN_READONLY);
      QCOMPARE(db.execAndGet("PRAGMA integrity_check").getString(), std::string("ok"));
      SQLite::Statement status(db, "SELECT status FROM run WHERE id = ?");
      status.bind(1, static_cast<int64_t>(run));
      QVERIFY(status.executeStep());
      QCOMPARE(status.getColumn(0).getString(), std::string("running"));
      // Every step holds all 3 ranks, and steps 1..N are all there.
      SQLite::Statement half(db, "SELECT count(*) FROM (SELECT step FROM step WHERE run_id = ? GROUP BY step "
                                 "HAVING count(*) != 3)");
      half.bind(1, static_cast<int64_t>(run));
      half.executeStep();
      QCOMPARE(half.getColumn(0).getInt(), 0);
      SQLite::Statement span(db, "SELECT count(DISTINCT step), min(step), max(step) FROM step WHERE run_id = ?");
      span.bind(1, static_cast<int64_t>(run));
      span.executeStep();
      const int64_t steps = span.getColumn(0).getInt64();
      QVERIFY2(steps >= lastStep, qPrintable(QString("%1 steps stored, %2 printed").arg(steps).arg(lastStep)));
      QCOMPARE(span.getColumn(1).getInt64(), int64_t{1});
      QCOMPARE(span.getColumn(2).getInt64(), steps);
    }

    QCOMPARE(store.recoverAbandonedRuns(), 1);
    const std::optional<RunRecord> aborted = store.run(run);
    QVERIFY(aborted->status == RunStatus::Aborted);
    QVERIFY(!aborted->endedAt.empty());
    QVERIFY(QString::fromStdString(aborted->exitReason).contains(QString("pid %1").arg(pid)));
    QVERIFY(store.run(myRun)->status == RunStatus::Running);
    for (const RunRecord& r : store.runs())
      if (r.id != myRun) QVERIFY(r.status != RunStatus::Running);

    // The next writer gets on with it.
    Store next(path.toStdString());
    const int64_t again = next.beginRun(mine);
    std::vector<StepRecord> step(3);
    for (int rank = 0; rank < 3; ++rank) {
      step[rank].rank = rank;
      step[rank].step = 1;
      step[rank].seconds = 0.5;
    }
    next.recordSteps(again, step);
    next.finishRun(again, RunStatus::Succeeded);
    QVERIFY(next.run(again)->status == RunStatus::Succeeded);
    QCOMPARE(next.steps(again).size(), size_t{3});
    next.finishRun(myRun, RunStatus::Stopped, "test over");
  }

  // Four processes create the same new store and record a run each into it at once.
  void concurrentWriters() {
    const QString path = dir_.path() + "/sub/concurrent.db";
    constexpr int kWriters = 4, kSteps = 200;
    std::array<std::unique_ptr<QProcess>, kWriters> writers;
    for (auto& w : writers) w = startWriter(path, QString::number(kSteps));
    for (auto& w : writers) {
      QVERIFY2(w->waitForFinished(kTimeoutMs), "a writer did not finish in time");
      QVERIFY2(w->exitStatus() == QProcess::NormalExit && w->exitCode() == 0,
               qPrintable(QString::fromUtf8(w->readAllStandardError())));
      QVERIFY(QString::fromUtf8(w->readAllStandardOutput()).contains("done"));
    }
    Store store(path.toStdString(), Store::Mode::ReadOnly);
    const std::vector<RunRecord> runs = store.runs();
    QCOMPARE(static_cast<int>(runs.size()), kWriters);
    for (const RunRecord& r : runs) {
      QVERIFY(r.status == RunStatus::Succeeded);
      QCOMPARE(static_cast<int>(store.steps(r.id).size()), kSteps * 3);
      QCOMPARE(static_cast<int>(store.stages(r.id).size()), 3);
    }
    SQLite::Database db(path.toStdString(), SQLite::OPEN_READONLY);
    QCOMPARE(db.execAndGet("PRAGMA integrity_check").getString(), std::string("ok"));
    QCOMPARE(db.execAndGet("SELECT count(*) FROM step").getInt(), kWriters * kSteps * 3);
  }
};

QTEST_GUILESS_MAIN(TstStoreReliability)
#include "tst_store_reliability.moc"
