// `hap launch` as a user runs it, with tests/runtime/fake_worker.sh standing in for hap-worker:
// rank-prefixed output, the torchrun environment, stopping every rank when one fails, on a
// timeout and on Ctrl-C, CPU shares (the CPU quota's bookkeeping directly, and its effect on two
// busy ranks measured side by side), --slowdown (two real workers, one computing 4 times slower),
// and the --emit scripts run with sh and bash.
#include <QtTest>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>

#include <signal.h>

#include <atomic>
#include <thread>

#include "db/store.h"
#include "engine/base/error.h"
#include "engine/plan/plan_json.h"
#include "runtime/launch/launch_scripts.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/local_launch.h"
#include "tests/runtime/run_process.h"

namespace {

QString fakeSource(const char* name) { return qEnvironmentVariable("HAP_SOURCE_DIR") + "/tests/runtime/" + name; }

QString readAll(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(f.readAll());
}

// True while `pid` names a live process (a zombie counts as gone).
bool alive(qint64 pid) {
  const QString stat = readAll(QString("/proc/%1/stat").arg(pid));
  if (stat.isEmpty()) return false;
  const int close = stat.lastIndexOf(')');
  return close > 0 && stat.mid(close + 2, 1) != "Z";
}

// Pids written by fake_worker.sh (pid-R and child-R files).
QList<qint64> recordedPids(const QString& dir) {
  QList<qint64> pids;
  for (const QString& name : QDir(dir).entryList({"pid-*", "child-*"}, QDir::Files))
    pids.append(readAll(dir + "/" + name).trimmed().toLongLong());
  return pids;
}

bool allGone(const QList<qint64>& pids, int waitMs = 3000) {
  QElapsedTimer t;
  t.start();
  for (;;) {
    bool any = false;
    for (qint64 pid : pids) any = any || alive(pid);
    if (!any) return true;
    if (t.elapsed() > waitMs) return false;
    QThread::msleep(50);
  }
}

}  // namespace

class TstLaunch : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString plan_;       // 4 CPU ranks on one machine
  QString emitPlan_;   // 2 machines x 2 ranks, its file name with a space and a quote
  QString worker_;     // fake_worker.sh, copied into a folder whose name has a space and a quote
  QString fakeSsh_;
  QString workDir_;    // FAKE_WORKER_DIR of the current test

  QProcessEnvironment env(const char* mode) {
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    for (const char* v : {"OMP_NUM_THREADS", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                          "HAP_TIMEOUT_S", "HAP_WORKER", "HAP_MODEL", "HAP_PLAN", "HAP_DIR", "HAP_REMOTE_DIR"})
      e.remove(v);
    e.insert("FAKE_WORKER_MODE", mode);
    e.insert("FAKE_WORKER_DIR", workDir_);
    return e;
  }

  Run hap(const QStringList& args, const QProcessEnvironment& e, int limitMs = 60'000) {
    return runProcess(HAP_CLI_PATH, args, e, limitMs);
  }

  QStringList local(const QStringList& more = {}) {
    return QStringList{"launch", plan_, "--local", "--worker", worker_} + more;
  }

  void freshWorkDir(const QString& name) {
    workDir_ = tmp_.filePath("work-" + name);
    QDir(workDir_).removeRecursively();
    QVERIFY(QDir().mkpath(workDir_));
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    const QString zoo = qEnvironmentVariable("HAP_ZOO_DIR") + "/mlp-tiny.pt";
    const QString clusters = qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/";
    plan_ = tmp_.filePath("plan.json");
    Run r = runProcess(HAP_CLI_PATH,
                       {"plan", zoo, "-c", clusters + "local-cpu-4.yaml", "--ratios", "even", "-o", plan_, "-q"},
                       QProcessEnvironment::systemEnvironment(), 120'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    emitPlan_ = tmp_.filePath("it's a plan.json");
    r = runProcess(HAP_CLI_PATH,
                   {"plan", zoo, "-c", clusters + "a100-p100-4.yaml", "--ratios", "even", "-o", emitPlan_, "-q"},
                   QProcessEnvironment::systemEnvironment(), 120'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));

    const QString bin = tmp_.filePath("bin dir 'q'");
    QVERIFY(QDir().mkpath(bin));
    worker_ = bin + "/fake worker.sh";
    fakeSsh_ = tmp_.filePath("fake_ssh.sh");
    QVERIFY(QFile::copy(fakeSource("fake_worker.sh"), worker_));
    QVERIFY(QFile::copy(fakeSource("fake_ssh.sh"), fakeSsh_));
    for (const QString& f : {worker_, fakeSsh_})
      QVERIFY(QFile::setPermissions(f, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
  }

  // (a) Every line is whole and carries its rank; the environment and arguments are right.
  void allRanksSucceed() {
    freshWorkDir("ok");
    Run r = hap(local({"--steps", "3", "--", "--export", "a b'c", "--lr", "0.5"}), env("chatty"));
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("hap launch: all 4 ranks finished"), qPrintable(r.err));

    static const QRegularExpression prefixed(R"(^\[rank (\d)\] (.*)$)");
    static const QRegularExpression numbered(R"(^line (\d) (\d+) \.+ (\d)$)");
    int port = -1;
    QMap<int, int> lines;
    QStringList outLines = r.out.split('\n');
    QCOMPARE(outLines.takeLast(), QString());  // the output ends with a newline
    for (const QString& line : outLines) {
      const QRegularExpressionMatch m = prefixed.match(line);
      QVERIFY2(m.hasMatch(), qPrintable("not prefixed by its rank: " + line));
      const int rank = m.captured(1).toInt();
      const QString text = m.captured(2);
      if (const QRegularExpressionMatch n = numbered.match(text); n.hasMatch()) {
        QVERIFY2(n.captured(1).toInt() == rank && n.captured(3).toInt() == rank, qPrintable(line));
        QCOMPARE(n.captured(2).toInt(), lines[rank]++);  // in order, none lost
      } else if (text.startsWith("env ")) {
        QVERIFY2(text.contains(QString("RANK=%1 WORLD_SIZE=4 LOCAL_RANK=%1 MASTER_ADDR=127.0.0.1 ").arg(rank)),
                 qPrintable(text));
        QVERIFY2(text.endsWith("OMP_NUM_THREADS=1"), qPrintable(text));
        const int p = QRegularExpression("MASTER_PORT=(\\d+)").match(text).captured(1).toInt();
        QVERIFY(p > 0 && p < 65536);
        if (port >= 0) QCOMPARE(p, port);  // one rendezvous port for all ranks
        port = p;
      } else if (text.startsWith("arg <")) {
        continue;
      } else {
        QVERIFY2(text == QString("partial %1").arg(rank), qPrintable("unexpected line: " + line));
      }
    }
    for (int rank = 0; rank < 4; ++rank) {
      QCOMPARE(lines[rank], 200);
      const QString args = QString("[rank %1] arg <").arg(rank);
      // The worker options in hap-worker --help's order, each as one argument.
      QVERIFY2(r.out.contains(args + plan_ + ">\n" + args + "--steps>\n" + args + "3>\n" + args + "--lr>\n" + args +
                              "0.5>\n" + args + "--export>\n" + args + "a b'c>\n"),
               qPrintable(r.out.left(2000)));
      QVERIFY2(r.err.contains(QString("[rank %1] to stderr %1\n").arg(rank)), qPrintable(r.err));
    }

    // The port is chosen per run, not fixed; OMP_NUM_THREADS set by the user is kept.
    QProcessEnvironment e = env("chatty");
    e.insert("OMP_NUM_THREADS", "3");
    Run again = hap(local(), e);
    QCOMPARE(again.exitCode, 0);
    const int port2 = QRegularExpression("MASTER_PORT=(\\d+)").match(again.out).captured(1).toInt();
    QVERIFY(port2 > 0);
    QVERIFY2(port2 != port, qPrintable(QString("the same port %1 twice").arg(port)));
    QVERIFY(again.out.contains("OMP_NUM_THREADS=3"));
  }

  // (b) Rank 1 fails while the others sleep: all stop within seconds, nothing is left running.
  void failingRankStopsAll() {
    freshWorkDir("fail");
    Run r = hap(local(), env("fail"), 30'000);
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.ms < 10'000, qPrintable(QString("took %1 ms").arg(r.ms)));
    QVERIFY2(r.err.contains("hap launch: rank 1 failed (exit code 3): hap-worker: error: rank 1 could not read its "
                            "shard (test); stopped ranks 0, 2, 3"),
             qPrintable(r.err));
    QVERIFY2(r.err.contains("[rank 1] hap-worker: error: rank 1 could not read"), qPrintable(r.err));
    QVERIFY(!r.out.contains("woke up"));
    const QList<qint64> pids = recordedPids(workDir_);
    QCOMPARE(pids.size(), 6);  // ranks 0, 2, 3 and their sleep children
    QVERIFY2(allGone(pids), "a worker process outlived hap launch");
  }

  void timeoutStopsAll() {
    freshWorkDir("timeout");
    Run r = hap(local({"--timeout", "1.5"}), env("sleep"), 30'000);
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("hap launch: timed out after 1.5 s (--timeout); stopped ranks 0, 1, 2, 3"),
             qPrintable(r.err));
    QVERIFY2(r.ms < 10'000, qPrintable(QString("took %1 ms").arg(r.ms)));
    QVERIFY(allGone(recordedPids(workDir_)));
  }

  // Ctrl-C (SIGINT to the launcher) stops every worker.
  void interruptStopsAll() {
    freshWorkDir("interrupt");
    QProcess p;
    p.setProcessEnvironment(env("sleep"));
    p.start(HAP_CLI_PATH, local());
    QVERIFY(p.waitForStarted());
    QElapsedTimer t;
    t.start();
    while (recordedPids(workDir_).size() < 8 && t.elapsed() < 20'000) QThread::msleep(50);
    QCOMPARE(recordedPids(workDir_).size(), 8);
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    if (!p.waitForFinished(15'000)) {
      p.kill();
      QFAIL("hap launch did not stop after SIGINT");
    }
    QCOMPARE(p.exitCode(), 130);
    QVERIFY2(QString::fromUtf8(p.readAllStandardError()).contains("hap launch: interrupted (SIGINT)"), "message");
    QVERIFY(allGone(recordedPids(workDir_)));
  }

  // The library the CLI and the app share (runtime/launch/local_launch.h), called directly: the start is
  // reported once, before the first worker line, with the recorded run; an interrupt stops every
  // rank and the run is recorded as stopped; bad shares are refused before anything starts.
  void localLaunchLibrary() {
    freshWorkDir("library");
    const QProcessEnvironment e = env("chatty");
    for (const QString& k : {QString("FAKE_WORKER_MODE"), QString("FAKE_WORKER_DIR")})
      qputenv(k.toUtf8(), e.value(k).toUtf8());
    const hap::plan::Plan p = hap::plan::readPlan(plan_.toStdString());
    hap::runtime::LocalLaunchRequest request;
    request.options.planPath = plan_.toStdString();
    request.options.steps = 2;
    request.worker = worker_.toStdString();
    request.dbPath = tmp_.filePath("library.db").toStdString();
    request.label = "library";
    int starts = 0, linesBeforeStart = 0, lines = 0;
    hap::runtime::LocalLaunchStart seen;
    const hap::runtime::LocalLaunchResult r = hap::runtime::runLocalLaunch(
        p, request,
        [&](int, hap::runtime::OutputStream, std::string_view) {
          ++lines;
          if (starts == 0) ++linesBeforeStart;
        },
        [&](const hap::runtime::LocalLaunchStart& s) {
          ++starts;
          seen = s;
        });
    QCOMPARE(starts, 1);
    QCOMPARE(linesBeforeStart, 0);
    QVERIFY(lines > 4 * 200);
    QCOMPARE(seen.ranks, 4);
    QVERIFY(seen.port > 0);
    QVERIFY(seen.run > 0);
    QCOMPARE(r.start.run, seen.run);
    QVERIFY(std::find(seen.args.begin(), seen.args.end(), "--run-id") != seen.args.end());
    QCOMPARE(static_cast<int>(r.result.outcome), static_cast<int>(hap::runtime::LaunchResult::Outcome::Succeeded));
    {
      hap::db::Store store(request.dbPath, hap::db::Store::Mode::ReadOnly);
      const auto run = store.run(seen.run);
      QVERIFY(run);
      QCOMPARE(static_cast<int>(run->status), static_cast<int>(hap::db::RunStatus::Succeeded));
      QCOMPARE(run->label, std::string("library"));
    }

    // Interrupted from another thread once every rank sleeps.
    freshWorkDir("library-stop");
    qputenv("FAKE_WORKER_MODE", "sleep");
    qputenv("FAKE_WORKER_DIR", workDir_.toUtf8());
    std::atomic<int> interrupt{0};
    request.interrupt = &interrupt;
    std::thread stopper([&] {
      QElapsedTimer t;
      t.start();
      while (recordedPids(workDir_).size() < 8 && t.elapsed() < 20'000) QThread::msleep(50);
      interrupt.store(SIGTERM);
    });
    const hap::runtime::LocalLaunchResult stopped = hap::runtime::runLocalLaunch(p, request, [](int, hap::runtime::OutputStream, std::string_view) {});
    stopper.join();
    QCOMPARE(static_cast<int>(stopped.result.outcome), static_cast<int>(hap::runtime::LaunchResult::Outcome::Interrupted));
    QVERIFY(allGone(recordedPids(workDir_)));
    {
      hap::db::Store store(request.dbPath, hap::db::Store::Mode::ReadOnly);
      QCOMPARE(static_cast<int>(store.run(stopped.start.run)->status), static_cast<int>(hap::db::RunStatus::Stopped));
    }

    // Shares are checked before a run is recorded or a worker starts.
    request.cpuShares = {1, 0.5};
    const size_t runsBefore = hap::db::Store(request.dbPath, hap::db::Store::Mode::ReadOnly).runs().size();
    QVERIFY_THROWS_EXCEPTION(hap::Error, hap::runtime::runLocalLaunch(p, request, [](int, hap::runtime::OutputStream, std::string_view) {}));
    request.cpuShares = {1, 1, 1.5, 1};
    QVERIFY_THROWS_EXCEPTION(hap::Error, hap::runtime::runLocalLaunch(p, request, [](int, hap::runtime::OutputStream, std::string_view) {}));
    QCOMPARE(hap::db::Store(request.dbPath, hap::db::Store::Mode::ReadOnly).runs().size(), runsBefore);
    qunsetenv("FAKE_WORKER_MODE");
    qunsetenv("FAKE_WORKER_DIR");
  }

  // (c) The CPU quota's bookkeeping (cgroup cpu.max semantics): a busy throttled worker gets
  // share × period of CPU per period, a blocked one is never stopped, an overrun is owed to the
  // next period, and budget left unused is not kept.
  void cpuQuotaBookkeeping() {
    using namespace std::chrono;
    const nanoseconds period = milliseconds(20);
    {
      // A single-threaded busy worker: its CPU clock advances while it may run.
      hap::runtime::CpuQuota quota({1.0, 0.25}, period);
      QVERIFY(!quota.throttled(0) && quota.throttled(1) && quota.anyThrottled());
      const nanoseconds step = microseconds(50);
      nanoseconds cpu{0};
      for (nanoseconds t{0}; t < 50 * period; t += step) {
        QVERIFY(quota.mayRun(0, t, t));
        if (quota.mayRun(1, t, cpu)) cpu += step;
      }
      QCOMPARE(cpu, 50 * period / 4);
    }
    {
      hap::runtime::CpuQuota quota({0.25}, period);
      // Blocked (no CPU used): never stopped, whatever the time.
      for (nanoseconds t{0}; t < 3 * period; t += milliseconds(1)) QVERIFY(quota.mayRun(0, t, milliseconds(2)));
      // Budget is 5 ms per period; unused budget of earlier periods is not kept.
      QVERIFY(quota.mayRun(0, 3 * period, milliseconds(2)));
      QCOMPARE(quota.remaining(0, milliseconds(6)), milliseconds(1));
      QVERIFY(!quota.mayRun(0, 3 * period + milliseconds(6), milliseconds(7)));
      QCOMPARE(quota.remaining(0, milliseconds(7)), nanoseconds(0));
      // Four threads overran by 4 ms (9 ms used by the time the launcher looked): owed next period.
      QVERIFY(!quota.mayRun(0, 3 * period + milliseconds(8), milliseconds(11)));
      QVERIFY(quota.mayRun(0, 4 * period, milliseconds(11)));
      QCOMPARE(quota.remaining(0, milliseconds(11)), milliseconds(1));
      QVERIFY(!quota.mayRun(0, 4 * period + milliseconds(1), milliseconds(12)));
      QVERIFY(quota.mayRun(0, 5 * period, milliseconds(12)));
      QCOMPARE(quota.nextPeriod(5 * period + milliseconds(3)), 6 * period);
    }
    QVERIFY(hap::runtime::CpuQuota({1.0}, period).remaining(0, milliseconds(100)) == nanoseconds::max());
    QVERIFY(!hap::runtime::CpuQuota({1.0, 1.0}, period).anyThrottled());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, hap::runtime::CpuQuota({0.0}, period));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, hap::runtime::CpuQuota({1.5}, period));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, hap::runtime::CpuQuota({0.5}, nanoseconds(0)));
  }

  // (c) A share of 0.25 slows a CPU-bound rank. Ranks 0 (share 1) and 1 (share 0.25) busy-loop
  // side by side for the same 1.5 s of wall time, so load from elsewhere hits both alike: rank 0
  // should do about 4 times the rounds (at least 1.8 times), and rank 1 may use at most about a
  // quarter of the wall time as CPU time (0.35 allows for the launcher's sampling).
  void cpuShareSlowsARank() {
    freshWorkDir("busy");
    QProcessEnvironment e = env("busy");
    const double wallSeconds = 1.5;
    e.insert("FAKE_WORKER_MS", "1500");
    Run r = hap(local({"--cpu-share", "1,0.25,1,1"}), e, 60'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("CPU shares 1, 0.25, 1, 1"), qPrintable(r.err));
    const QRegularExpression busy(R"(\[rank (\d)\] busy \d (\d+) (\d+) (\d+))");
    QMap<int, double> rounds, cpuSeconds;
    for (auto it = busy.globalMatch(r.out); it.hasNext();) {
      const QRegularExpressionMatch m = it.next();
      rounds[m.captured(1).toInt()] = m.captured(2).toDouble();
      cpuSeconds[m.captured(1).toInt()] = m.captured(3).toDouble() / m.captured(4).toDouble();
    }
    QVERIFY2(rounds.size() == 2 && rounds[1] > 0, qPrintable(r.out));
    const double ratio = rounds[0] / rounds[1];
    qInfo("busy rounds: rank 0 (share 1) %.0f, rank 1 (share 0.25) %.0f, ratio %.2f; CPU time %.2f s and %.2f s "
          "of %.1f s",
          rounds[0], rounds[1], ratio, cpuSeconds[0], cpuSeconds[1], wallSeconds);
    QVERIFY2(ratio > 1.8, qPrintable(QString("ratio %1").arg(ratio)));
    QVERIFY2(cpuSeconds[1] < 0.35 * wallSeconds, qPrintable(QString("rank 1 used %1 s of CPU").arg(cpuSeconds[1])));
  }

  // --slowdown: a rank's computation stretched, its collectives at full speed. Two real workers
  // of a data-parallel plan of the tiny VGG (no collective inside forward or backward, so the
  // compute spans hold no wait on the other rank), rank 1 at --slowdown 4, recorded with --db:
  // rank 1's least compute of a step is over twice rank 0's (about 3.5 times: the autograd
  // engine's own time between nodes is not stretched; 4 rather than 3 leaves room for load from
  // elsewhere on a 2-core machine, which moved the ratio at 3 between 1.8 and 4). A second short run with
  // --check passes on both ranks (the check's reference program adds to the compute spans, so the
  // timing run goes without it). The worker refuses a factor below 1.
  void slowdownSlowsARanksComputation() {
#ifndef HAP_WORKER_PATH
    QFAIL("this build has no hap-worker target (tests/runtime/launch.cmake)");
#else
    QVERIFY2(QFileInfo(HAP_WORKER_PATH).isExecutable(), "hap-worker is not built (ninja hap-worker)");
    freshWorkDir("slowdown");
    const QString clusters = qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/";
    QString yaml = readAll(clusters + "local-cpu-4.yaml");
    QVERIFY(yaml.contains("count: 4"));
    yaml.replace("count: 4", "count: 2").replace("name: local-cpu-4", "name: local-cpu-2");
    const QString cluster = tmp_.filePath("local-cpu-2.yaml"), plan = tmp_.filePath("dp-2.json");
    {
      QFile f(cluster);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(yaml.toUtf8());
    }
    Run planned = runProcess(HAP_CLI_PATH,
                             {"plan", qEnvironmentVariable("HAP_ZOO_DIR") + "/vgg19-tiny.pt", "-c", cluster,
                              "--baseline", "dp-ev", "-o", plan, "-q"},
                             QProcessEnvironment::systemEnvironment(), 120'000);
    QVERIFY2(planned.exitCode == 0, qPrintable(planned.err));
    const QString db = tmp_.filePath("slowdown.db");
    Run r = hap({"launch", plan, "--local", "--worker", HAP_WORKER_PATH, "--steps", "10", "--slowdown", "1,4",
                 "--db", db, "--timeout", "240", "--", "--warmup", "2"},
                env("chatty"), 300'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.err.contains("slowdowns 1, 4"), qPrintable(r.err));
    hap::db::Store store(db.toStdString(), hap::db::Store::Mode::ReadOnly);
    const auto runs = store.runs();
    QCOMPARE(runs.size(), size_t{1});
    QVERIFY2(QString::fromStdString(runs[0].settingsJson).contains(R"("slowdowns":[1.0,4.0])"),
             runs[0].settingsJson.c_str());
    // Each rank's least compute of a measured step: load from elsewhere on this machine only adds
    // time (to the one rank it hits), so the least is the rank's own speed.
    double least[2] = {1e9, 1e9};
    int measured[2] = {0, 0};
    for (const hap::db::StepRecord& step : store.steps(runs[0].id))
      if (!step.warmup && step.rank >= 0 && step.rank < 2) {
        least[step.rank] = std::min(least[step.rank], step.computeSeconds);
        ++measured[step.rank];
      }
    QVERIFY(measured[0] == 10 && measured[1] == 10);
    const double ratio = least[1] / least[0];
    qInfo("least compute of a step: rank 0 (slowdown 1) %.2f ms, rank 1 (slowdown 4) %.2f ms, ratio %.2f",
          1e3 * least[0], 1e3 * least[1], ratio);
    QVERIFY2(ratio > 2, qPrintable(QString("ratio %1").arg(ratio)));

    Run checked = hap({"launch", plan, "--local", "--worker", HAP_WORKER_PATH, "--steps", "2", "--slowdown", "1,3",
                       "--timeout", "240", "--", "--warmup", "0", "--check"},
                      env("chatty"), 300'000);
    QVERIFY2(checked.exitCode == 0, qPrintable(checked.err + checked.out));
    for (const char* rank : {"[rank 0] check rank 0: ", "[rank 1] check rank 1: "}) {
      const QRegularExpression verdict(QRegularExpression::escape(rank) + ".*; PASS");
      QVERIFY2(verdict.match(checked.out + checked.err).hasMatch(), qPrintable(checked.out + checked.err));
    }

    Run bad = runProcess(HAP_WORKER_PATH, {plan, "--slowdown", "0.5"}, QProcessEnvironment::systemEnvironment(),
                         60'000);
    QVERIFY(bad.exitCode != 0);
    QVERIFY2((bad.out + bad.err).contains("--slowdown") && (bad.out + bad.err).contains(">= 1"),
             qPrintable(bad.out + bad.err));
    Run badList = hap(local({"--slowdown", "1,2,0.5,1"}), env("chatty"));
    QCOMPARE(badList.exitCode, 1);
    QVERIFY2(badList.err.contains("hap: error: --slowdown: value 3 (0.5) is not >= 1"), qPrintable(badList.err));
#endif
  }

  void cpuShareValidation() {
    freshWorkDir("shares");
    const QList<QPair<QString, QString>> cases = {
        {"0.5,0.5", "--cpu-share: 2 values for 4 ranks"},
        {"1,1,1,0", "--cpu-share: value 4 (0) is not in (0, 1]"},
        {"1.5", "--cpu-share: value 1 (1.5) is not in (0, 1]"},
        {"-0.2", "--cpu-share: value 1 (-0.2) is not in (0, 1]"},
        {"1,abc,1,1", "--cpu-share: value 2 ('abc') is not a number"},
        {"nan", "--cpu-share: value 1 ('nan') is not a number"},
        {"1,,1,1", "--cpu-share: value 2 ('') is not a number"},
    };
    for (const auto& [value, message] : cases) {
      Run r = hap(local({"--cpu-share", value}), env("chatty"));
      QVERIFY2(r.exitCode == 1, qPrintable(value));
      QVERIFY2(r.err.contains("hap: error: " + message), qPrintable(value + ": " + r.err));
      QVERIFY(r.out.isEmpty());  // nothing started
    }
  }

  void usageErrors() {
    freshWorkDir("usage");
    Run neither = hap({"launch", plan_}, env("chatty"));
    QCOMPARE(neither.exitCode, 2);
    QVERIFY2(neither.err.contains("--local or --emit"), qPrintable(neither.err));
    Run both = hap({"launch", plan_, "--local", "--emit", "ssh", tmp_.filePath("x")}, env("chatty"));
    QCOMPARE(both.exitCode, 2);
    Run shareWithEmit = hap({"launch", plan_, "--emit", "ssh", tmp_.filePath("x"), "--cpu-share", "1"}, env("chatty"));
    QCOMPARE(shareWithEmit.exitCode, 2);
    Run missing = hap({"launch", plan_, "--local", "--worker", "/nonexistent/hap-worker"}, env("chatty"));
    QCOMPARE(missing.exitCode, 1);
    QVERIFY2(missing.err.contains("--worker /nonexistent/hap-worker: no such file"), qPrintable(missing.err));
    Run workers = hap(local({"--workers", "3"}), env("chatty"));
    QCOMPARE(workers.exitCode, 1);
    QVERIFY2(workers.err.contains("--workers 3: the plan") && workers.err.contains("has 4 devices"),
             qPrintable(workers.err));
    Run kind = hap({"launch", plan_, "--emit", "mpi", tmp_.filePath("x")}, env("chatty"));
    QCOMPARE(kind.exitCode, 1);
    QVERIFY2(kind.err.contains("--emit mpi: unknown kind"), qPrintable(kind.err));
    // The arguments after -- are read as hap-worker reads them: a bad one is named before any
    // worker starts.
    for (const QStringList& bad : {QStringList{"--lr", "0.5", "--nonsense"}, QStringList{"--data", "lamb"},
                                   QStringList{"--steps", "x"}, QStringList{"stray"}}) {
      Run r = hap(local(QStringList{"--"} + bad), env("chatty"));
      QCOMPARE(r.exitCode, 1);
      QVERIFY2(r.err.contains("hap-worker arguments: ") && r.err.contains(bad.last()),
               qPrintable(r.err));
      QVERIFY(r.out.isEmpty());
    }
    Run twice = hap(local({"--steps", "2", "--", "--steps", "3"}), env("chatty"));
    QCOMPARE(twice.exitCode, 1);
    QVERIFY2(twice.err.contains("--steps is given both"), qPrintable(twice.err));
  }

  // The quoting helper: every word reads back unchanged, in a command and in the
  // ${VAR:-default} assignments the scripts use, in sh and in bash.
  void shellQuoting() {
    const QStringList words = {"",    "plain",   "a b",    "it's", "'",     "''",        "$HOME", "`id`", "a\"b",
                               "\\",  "x\ny",    "*",      "~",    "-n",    "a;b|c&d>e", "é ü",   "}",    "{a,b}",
                               "#c",  "a\tb",    "$(id)",  "!x",   "%s",    "/p/q.r-s_t:u@v+w=x,y"};
    QCOMPARE(QString::fromStdString(hap::runtime::shellQuote("/a/b.json")), QString("/a/b.json"));
    QCOMPARE(QString::fromStdString(hap::runtime::shellQuote("it's")), QString("'it'\\''s'"));
    QCOMPARE(QString::fromStdString(hap::runtime::shellQuote("")), QString("''"));
    QString script, expected;
    for (const QString& w : words) {
      const QString q = QString::fromStdString(hap::runtime::shellQuote(w.toStdString()));
      script += "printf '[%s]' " + q + "\n";
      script += "unset V; V=${V:-" + q + "}; printf '(%s)' \"$V\"\n";
      expected += "[" + w + "](" + w + ")";
    }
    const QString file = tmp_.filePath("quoting.sh");
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(script.toUtf8());
    f.close();
    for (const QString& shell : shells()) {
      Run r = runProcess(shell, {file}, QProcessEnvironment::systemEnvironment());
      QCOMPARE(r.exitCode, 0);
      QCOMPARE(r.out, expected);
    }
  }

  // (d) torchrun: a script per host that starts that host's ranks with the plan's global ranks.
  void emitTorchrun() {
    freshWorkDir("torchrun");
    QString dir;
    emitTo("torchrun", &dir);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(QDir(dir).entryList(QDir::Files, QDir::Name),
             QStringList({"README.txt", "hostfile", "it's a plan.json", "mlp-tiny.pt", "run-a100-0.sh",
                          "run-p100-0.sh"}));
    QCOMPARE(readAll(dir + "/hostfile"), QString("10.0.1.1 slots=2\n10.0.1.2 slots=2\n"));
    QVERIFY(readAll(dir + "/README.txt").contains("mlp-tiny.pt"));
    for (const QString& shell : shells()) {
      freshWorkDir("torchrun-" + QFileInfo(shell).fileName());
      QProcessEnvironment e = env("record");
      e.insert("HAP_WORKER", worker_);
      Run r = runProcess(shell, {dir + "/run-a100-0.sh"}, e);
      QVERIFY2(r.exitCode == 0, qPrintable(r.err));
      e.insert("MASTER_ADDR", "192.0.2.7");
      r = runProcess(shell, {dir + "/run-p100-0.sh"}, e);
      QVERIFY2(r.exitCode == 0, qPrintable(r.err));
      checkRecord(0, 0, 0, "10.0.1.1", "29500", dir);
      checkRecord(1, 1, 0, "10.0.1.1", "29500", dir);
      checkRecord(2, 0, 1, "192.0.2.7", "29500", dir);
      checkRecord(3, 1, 1, "192.0.2.7", "29500", dir);
    }
    // A worker that fails makes the script fail; a missing worker is named.
    freshWorkDir("torchrun-fail");
    QProcessEnvironment e = env("nonsense");
    e.insert("HAP_WORKER", worker_);
    QCOMPARE(runProcess("sh", {dir + "/run-a100-0.sh"}, e).exitCode, 1);
    e.insert("HAP_WORKER", "/nonexistent/hap-worker");
    Run missing = runProcess("sh", {dir + "/run-a100-0.sh"}, e);
    QCOMPARE(missing.exitCode, 1);
    QVERIFY2(missing.err.contains("hap-worker not found at /nonexistent/hap-worker"), qPrintable(missing.err));
  }

  // (d) ssh: launch-ssh.sh runs each host's script over ssh (a fake ssh that runs the remote
  // command here), in a folder whose path has a space and quotes, passing variables on.
  void emitSsh() {
    freshWorkDir("ssh");
    QString dir;
    emitTo("ssh", &dir);
    if (QTest::currentTestFailed()) return;
    QVERIFY(QFileInfo(dir + "/launch-ssh.sh").permissions() & QFile::ExeOwner);
    for (const QString& shell : shells()) {
      freshWorkDir("ssh-" + QFileInfo(shell).fileName());
      QProcessEnvironment e = env("record");
      e.insert("SSH", "sh " + fakeSsh_);
      e.insert("HAP_WORKER", worker_);
      e.insert("MASTER_PORT", "31234");
      Run r = runProcess(shell, {dir + "/launch-ssh.sh"}, e);
      QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
      QCOMPARE(readAll(workDir_ + "/ssh-hosts").split('\n', Qt::SkipEmptyParts).size(), 2);
      QVERIFY(readAll(workDir_ + "/ssh-hosts").contains("10.0.1.2"));
      checkRecord(0, 0, 0, "10.0.1.1", "31234", dir);
      checkRecord(3, 1, 1, "10.0.1.1", "31234", dir);
    }
  }

  // (d) ssh with --record: every rank gets --record "$HAP_RECORD" (rank 0 writes it, as hap-worker
  // --record does); where the hosts' folder is another one (HAP_REMOTE_DIR), launch-ssh.sh copies
  // rank 0's record back into the folder it was started from; where it is the same, it is left
  // where rank 0 wrote it.
  void emitSshRecordsBack() {
    freshWorkDir("ssh-record");
    const QString dir = tmp_.filePath("out ssh record 'q'");
    Run r = hap({"launch", emitPlan_, "--emit", "ssh", dir, "--record", "run.db", "--steps", "5"}, env("record"));
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("hap runs import " + dir + "/run.db"), qPrintable(r.out));
    QVERIFY(readAll(dir + "/README.txt").contains("hap runs import run.db"));
    QFile model(dir + "/mlp-tiny.pt");
    QVERIFY(model.open(QIODevice::WriteOnly));
    model.close();
    // The hosts' copy of the folder, elsewhere.
    const QString remote = tmp_.filePath("remote 'copy'");
    QDir(remote).removeRecursively();
    QVERIFY(QDir().mkpath(remote));
    for (const QFileInfo& f : QDir(dir).entryInfoList(QDir::Files))
      QVERIFY(QFile::copy(f.filePath(), remote + "/" + f.fileName()));
    QProcessEnvironment e = env("record");
    e.insert("SSH", "sh " + fakeSsh_);
    e.insert("HAP_WORKER", worker_);
    e.insert("HAP_REMOTE_DIR", remote);
    r = runProcess("sh", {dir + "/launch-ssh.sh"}, e);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    for (int rank = 0; rank < 4; ++rank) {
      const QString text = readAll(QString("%1/rank-%2.txt").arg(workDir_).arg(rank));
      QVERIFY2(text.endsWith("arg <--record>\narg <" + remote + "/run.db>\n"), qPrintable(text));
    }
    QCOMPARE(readAll(remote + "/run.db"), QString("recorded by rank 0\n"));
    QCOMPARE(readAll(dir + "/run.db"), QString("recorded by rank 0\n"));  // copied back
    // Same folder on the hosts: written in place, nothing to copy.
    QVERIFY(QFile::remove(dir + "/run.db"));
    e.remove("HAP_REMOTE_DIR");
    freshWorkDir("ssh-record-shared");
    r = runProcess("sh", {dir + "/launch-ssh.sh"}, e);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    QCOMPARE(readAll(dir + "/run.db"), QString("recorded by rank 0\n"));
    // A name that is a path is refused: the record is written inside the folder.
    r = hap({"launch", emitPlan_, "--emit", "ssh", tmp_.filePath("bad-record"), "--record", "x/run.db"},
            env("record"));
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("--record x/run.db: give a file name"), qPrintable(r.err));
  }

  // (d) slurm: hap.sbatch's directives, and slurm-task.sh as srun runs it for task 3.
  void emitSlurm() {
    freshWorkDir("slurm");
    QString dir;
    emitTo("slurm", &dir);
    if (QTest::currentTestFailed()) return;
    const QString sbatch = readAll(dir + "/hap.sbatch");
    for (const char* line : {"#SBATCH --nodes=2\n", "#SBATCH --ntasks=4\n", "#SBATCH --nodelist=10.0.1.1,10.0.1.2\n",
                             "--distribution=arbitrary"})
      QVERIFY2(sbatch.contains(line), line);
    QCOMPARE(readAll(dir + "/slurm-hostfile"), QString("10.0.1.1\n10.0.1.1\n10.0.1.2\n10.0.1.2\n"));
    for (const QString& shell : shells()) {
      freshWorkDir("slurm-" + QFileInfo(shell).fileName());
      QProcessEnvironment e = env("record");
      e.insert("HAP_WORKER", worker_);
      e.insert("SLURM_PROCID", "3");
      e.insert("SLURM_LOCALID", "1");
      e.insert("SLURM_NTASKS", "4");
      e.insert("SLURMD_NODENAME", "10.0.1.2");
      Run r = runProcess(shell, {dir + "/slurm-task.sh"}, e);
      QVERIFY2(r.exitCode == 0, qPrintable(r.err));
      QVERIFY2(!r.err.contains("warning"), qPrintable(r.err));
      checkRecord(3, 1, -1, "10.0.1.1", "29500", dir);
      e.insert("SLURM_NTASKS", "8");
      r = runProcess(shell, {dir + "/slurm-task.sh"}, e);
      QCOMPARE(r.exitCode, 1);
      QVERIFY2(r.err.contains("SLURM_NTASKS is '8' but the plan has 4 ranks"), qPrintable(r.err));
    }
  }

  // The real hap-worker under hap launch: 4 ranks train 2 steps (one at half a CPU), every line
  // comes out prefixed; a bad worker argument fails with the worker's own error line.
  void realWorker() {
#ifndef HAP_WORKER_PATH
    QFAIL("this build has no hap-worker target (tests/runtime/launch.cmake)");
#else
    QVERIFY2(QFileInfo(HAP_WORKER_PATH).isExecutable(), "hap-worker is not built (ninja hap-worker)");
    freshWorkDir("real");
    Run r = hap({"launch", plan_, "--local", "--worker", HAP_WORKER_PATH, "--steps", "2", "--cpu-share", "1,1,1,0.5",
                 "--timeout", "240"},
                env("chatty"), 300'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("hap launch: all 4 ranks finished"), qPrintable(r.err));
    QVERIFY(r.out.startsWith("[rank "));
    for (const QString& line : (r.out + r.err).split('\n', Qt::SkipEmptyParts))
      QVERIFY2(line.startsWith("[rank ") || line.startsWith("hap launch: "), qPrintable(line));
    Run bad = hap({"launch", plan_, "--local", "--worker", HAP_WORKER_PATH, "--steps", "1", "--timeout", "240", "--",
                   "--data", "cifar"},
                  env("chatty"), 300'000);
    QCOMPARE(bad.exitCode, 1);
    QVERIFY2(QRegularExpression(R"(hap launch: rank \d failed \(exit code 1\): hap-worker: error: )")
                 .match(bad.err)
                 .hasMatch(),
             qPrintable(bad.err));
#endif
  }

  void emitRefusesNonEmptyFolder() {
    freshWorkDir("refuse");
    const QString dir = tmp_.filePath("not empty");
    QVERIFY(QDir().mkpath(dir));
    QFile keep(dir + "/keep.txt");
    QVERIFY(keep.open(QIODevice::WriteOnly));
    keep.close();
    Run r = hap({"launch", emitPlan_, "--emit", "torchrun", dir}, env("record"));
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(dir + ": the folder is not empty") && r.err.contains("--force"), qPrintable(r.err));
    QVERIFY(!QFile::exists(dir + "/hostfile"));
    r = hap({"launch", emitPlan_, "--emit", "torchrun", dir, "--force"}, env("record"));
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY(QFile::exists(dir + "/hostfile") && QFile::exists(dir + "/keep.txt"));
  }

 private:
  static QStringList shells() {
    QStringList list{"sh"};
    if (!QStandardPaths::findExecutable("bash").isEmpty()) list << "bash";
    return list;
  }

  // Runs hap launch --emit KIND into a fresh folder whose path has a space and quotes, with worker
  // arguments that need quoting; checks the files' syntax and modes; sets *dir to the folder.
  void emitTo(const char* kind, QString* dir) {
    *dir = tmp_.filePath(QString("out %1 'q' \"d\"").arg(kind));
    Run r = hap({"launch", emitPlan_, "--emit", kind, *dir, "--steps", "5", "--", "--data-path", weirdArg()},
                env("record"));
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("Wrote ") && r.out.contains("README.txt"), qPrintable(r.out));
    QFile model(*dir + "/mlp-tiny.pt");  // what the ops team copies next to the scripts
    QVERIFY(model.open(QIODevice::WriteOnly));
    model.close();
    for (const QFileInfo& f : QDir(*dir).entryInfoList(QDir::Files)) {
      if (f.fileName() == "mlp-tiny.pt") continue;
      const bool script = f.suffix() == "sh" || f.suffix() == "sbatch";
      QVERIFY2(script == bool(f.permissions() & QFile::ExeOwner), qPrintable(f.fileName() + ": wrong mode"));
      QVERIFY(f.permissions() & QFile::ReadOther);
      if (!script) continue;
      QVERIFY2(readAll(f.filePath()).startsWith("#!/bin/sh\n"), qPrintable(f.fileName()));
      for (const QString& shell : shells()) {
        const Run syntax = runProcess(shell, {"-n", f.filePath()}, QProcessEnvironment::systemEnvironment());
        QVERIFY2(syntax.exitCode == 0, qPrintable(shell + " -n " + f.fileName() + ": " + syntax.err));
      }
    }
  }

  static QString weirdArg() { return "/data dir/it's \"x\" $HOME `id` ;|&*"; }

  // The record fake_worker.sh wrote for `rank` (groupRank -1: not checked).
  void checkRecord(int rank, int localRank, int groupRank, const QString& masterAddr, const QString& port,
                   const QString& dir) {
    const QString text = readAll(QString("%1/rank-%2.txt").arg(workDir_).arg(rank));
    QVERIFY2(!text.isEmpty(), qPrintable(QString("rank %1 did not run").arg(rank)));
    const QString head = QString("RANK=%1\nLOCAL_RANK=%2\nWORLD_SIZE=4\nLOCAL_WORLD_SIZE=2\n").arg(rank).arg(localRank);
    QVERIFY2(text.startsWith(head), qPrintable(text));
    if (groupRank >= 0) QVERIFY2(text.contains(QString("GROUP_RANK=%1\n").arg(groupRank)), qPrintable(text));
    QVERIFY2(text.contains("MASTER_ADDR=" + masterAddr + "\nMASTER_PORT=" + port + "\nHAP_TIMEOUT_S=300\n"),
             qPrintable(text));
    const QString args = "arg <" + dir + "/it's a plan.json>\narg <--model>\narg <" + dir +
                         "/mlp-tiny.pt>\narg <--steps>\narg <5>\narg <--data-path>\narg <" + weirdArg() + ">\n";
    QVERIFY2(text.endsWith(args), qPrintable(text + "\nexpected arguments:\n" + args));
  }
};

QTEST_GUILESS_MAIN(TstLaunch)
#include "tst_launch.moc"
