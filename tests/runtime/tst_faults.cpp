// Faults during a run (issue 32 item 4), each injected into real processes and bounded well under
// a minute, on free ports, leaving no process behind:
// - a rank killed with SIGKILL: hap launch stops every rank within 10 s, exits 1 naming the rank
//   and the signal, and the profile store records the run as failed with every step measured
//   until then (the surviving ranks' every printed step, the killed rank's up to its last write);
// - hap launch itself killed with SIGKILL: the workers notice (PR_SET_PDEATHSIG) and are gone
//   within 10 s;
// - a rank stopped with SIGSTOP: the collective timeout (HAP_TIMEOUT_S, 5 s here) fires on the
//   other ranks and the error names the rank that did not arrive (runtime/comm/liveness.h);
// - the profile store written by 8 processes at once while one of them is killed: PRAGMA
//   integrity_check is ok and no run that had committed is lost.
// Workers are found as hap launch's children in /proc and told apart by their RANK variable.
#include <QtTest>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <SQLiteCpp/Database.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include "db/store.h"
#include "tests/runtime/run_process.h"

namespace {

// A process as seen in /proc: its id and start time (so that a reused id is not taken for it).
struct Proc {
  pid_t pid = 0;
  QByteArray started;
};

struct Stat {
  char state = '?';
  pid_t parent = 0;
  QByteArray started;
};

// /proc/PID/stat: "pid (comm) state ppid ... starttime(22nd) ..."; comm may hold spaces.
std::optional<Stat> readStat(pid_t pid) {
  QFile f(QString("/proc/%1/stat").arg(pid));
  if (!f.open(QIODevice::ReadOnly)) return std::nullopt;
  const QByteArray text = f.readAll();
  const int close = text.lastIndexOf(')');
  if (close < 0) return std::nullopt;
  const QList<QByteArray> fields = text.mid(close + 2).split(' ');  // from field 3, state
  if (fields.size() < 20) return std::nullopt;
  return Stat{fields[0].isEmpty() ? '?' : fields[0][0], static_cast<pid_t>(fields[1].toInt()),
              fields[19]};
}

bool alive(const Proc& p) {
  const std::optional<Stat> s = readStat(p.pid);
  return s && s->started == p.started && s->state != 'Z' && s->state != 'X';
}

// The children of `parent` that have RANK in their environment, by rank.
std::map<int, Proc> workersOf(pid_t parent) {
  std::map<int, Proc> out;
  const QStringList entries = QDir("/proc").entryList(QDir::Dirs | QDir::NoDotAndDotDot);
  for (const QString& e : entries) {
    bool number = false;
    const pid_t pid = static_cast<pid_t>(e.toInt(&number));
    if (!number) continue;
    const std::optional<Stat> s = readStat(pid);
    if (!s || s->parent != parent) continue;
    QFile f(QString("/proc/%1/environ").arg(pid));
    if (!f.open(QIODevice::ReadOnly)) continue;
    for (const QByteArray& v : f.readAll().split('\0'))
      if (v.startsWith("RANK=")) out[v.mid(5).toInt()] = Proc{pid, s->started};
  }
  return out;
}

// Waits up to `ms` for every process of `procs` to be gone; returns those still alive.
QStringList stillAlive(const std::map<int, Proc>& procs, int ms) {
  QElapsedTimer t;
  t.start();
  QStringList left;
  do {
    left.clear();
    for (const auto& [rank, p] : procs)
      if (alive(p)) left << QString("rank %1 (pid %2)").arg(rank).arg(p.pid);
    if (left.isEmpty()) break;
    QTest::qWait(50);
  } while (t.elapsed() < ms);
  return left;
}

QProcessEnvironment cleanEnvironment() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* v : {"OMP_NUM_THREADS", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                        "MASTER_PORT", "HAP_DB", "HAP_TIMEOUT_S"})
    env.remove(v);
  return env;
}

// hap launch as a process whose output is followed as it comes.
class Launch {
 public:
  Launch(const QStringList& args, const QProcessEnvironment& env) {
    p_.setProcessEnvironment(env);
    p_.start(HAP_CLI_PATH, args);
  }
  ~Launch() {
    if (p_.state() != QProcess::NotRunning) {
      p_.kill();
      p_.waitForFinished(5000);
    }
  }
  bool started() { return p_.waitForStarted(10'000); }
  pid_t pid() const { return static_cast<pid_t>(p_.processId()); }

  // Waits up to `ms` for rank 0 to print step `n`.
  bool waitForStep(int n, int ms) {
    QElapsedTimer t;
    t.start();
    while (last_ < n && t.elapsed() < ms && p_.state() != QProcess::NotRunning) {
      p_.waitForReadyRead(100);
      read();
    }
    return last_ >= n;
  }
  // Waits up to `ms` for the launch to end; its wall time from now in `elapsed`.
  bool waitForEnd(int ms, qint64* elapsed = nullptr) {
    QElapsedTimer t;
    t.start();
    while (p_.state() != QProcess::NotRunning && t.elapsed() < ms) {
      p_.waitForFinished(50);
      read();
    }
    read();
    if (elapsed) *elapsed = t.elapsed();
    return p_.state() == QProcess::NotRunning;
  }
  // hap launch's line saying which rank failed and why.
  QString failureLine() const {
    for (const QString& line : err().split('\n'))
      if (line.startsWith("hap launch: rank ")) return line;
    return {};
  }
  int exitCode() const { return p_.exitStatus() == QProcess::NormalExit ? p_.exitCode() : -1; }
  int lastStep() const { return last_; }
  QString out() const { return QString::fromUtf8(out_); }
  QString err() const { return QString::fromUtf8(err_); }
  QString tail() const {
    return QString::fromUtf8(err_.right(3000) + "\n--- stdout ---\n" + out_.right(1500));
  }

 private:
  void read() {
    out_ += p_.readAllStandardOutput();
    err_ += p_.readAllStandardError();
    static const QRegularExpression step(R"(\[rank 0\] step (\d+)/)");
    // Only the recent output: the whole of it grows by a line a step.
    const QString recent = QString::fromUtf8(out_.right(4000));
    for (auto it = step.globalMatch(recent); it.hasNext();)
      last_ = std::max(last_, it.next().captured(1).toInt());
  }

  QProcess p_;
  QByteArray out_, err_;
  int last_ = 0;
};

}  // namespace

class TstFaults : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString plan_;  // mlp-tiny on local-cpu-3

  QStringList launchArgs(const QStringList& more) const {
    return QStringList{"launch",    plan_, "--local", "--worker", HAP_WORKER_PATH,
                       "--timeout", "120", "--steps", "1000000"} +
           more;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    plan_ = tmp_.filePath("plan.json");
    const Run r = planLocal("mlp-tiny.pt", "local-cpu-3.yaml", plan_);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
  }

  void rankKilled() {
    const QString db = tmp_.filePath("killed-rank.db");
    Launch launch(launchArgs({"--db", db, "--", "--warmup", "1"}), cleanEnvironment());
    QVERIFY(launch.started());
    // Past a second of steps, so that every rank has written a batch to the store (RunRecorder
    // writes every 0.5 s).
    QVERIFY2(launch.waitForStep(5, 40'000), qPrintable(launch.tail()));
    QTest::qWait(1200);
    QVERIFY2(launch.waitForStep(launch.lastStep() + 1, 10'000), qPrintable(launch.tail()));
    const std::map<int, Proc> workers = workersOf(launch.pid());
    QCOMPARE(workers.size(), size_t{3});
    QCOMPARE(::kill(workers.at(1).pid, SIGKILL), 0);
    qint64 ms = 0;
    QVERIFY2(launch.waitForEnd(10'000, &ms),
             "hap launch did not end within 10 s of a rank's SIGKILL");
    qInfo("rank 1 killed: hap launch ended %lld ms later; rank 0 printed %d steps\n%s", ms,
          launch.lastStep(), qPrintable(launch.failureLine()));
    QCOMPARE(launch.exitCode(), 1);
    QVERIFY2(launch.err().contains("hap launch: rank 1 failed (killed by signal 9 (SIGKILL))"),
             qPrintable(launch.tail()));
    const QStringList left = stillAlive(workers, 1000);
    QVERIFY2(left.isEmpty(), qPrintable("left running: " + left.join(", ")));

    hap::db::Store store(db.toStdString(), hap::db::Store::Mode::ReadOnly);
    const std::vector<hap::db::RunRecord> runs = store.runs();
    QCOMPARE(runs.size(), size_t{1});
    QCOMPARE(runs[0].status, hap::db::RunStatus::Failed);
    QVERIFY2(QString::fromStdString(runs[0].exitReason)
                 .startsWith("rank 1: killed by signal 9 (SIGKILL)"),
             runs[0].exitReason.c_str());
    // Every rank's steps are whole and in order from 1; the ranks that were stopped wrote every
    // step rank 0 printed (less one for the step in flight), the killed one at least a batch.
    std::map<int, std::vector<int64_t>> stepsOf;
    for (const hap::db::StepRecord& s : store.steps(runs[0].id)) {
      QVERIFY2(std::isfinite(s.seconds) && s.seconds > 0,
               qPrintable(QString("rank %1 step %2").arg(s.rank).arg(s.step)));
      stepsOf[s.rank].push_back(s.step);
    }
    QCOMPARE(stepsOf.size(), size_t{3});
    for (auto& [rank, steps] : stepsOf) {
      std::sort(steps.begin(), steps.end());
      for (size_t i = 0; i < steps.size(); ++i)
        QVERIFY2(steps[i] == static_cast<int64_t>(i + 1),
                 qPrintable(QString("rank %1: steps not 1..n").arg(rank)));
    }
    QVERIFY2(static_cast<int>(stepsOf[0].size()) >= launch.lastStep(),
             qPrintable(QString("rank 0 printed step %1, the store has %2")
                            .arg(launch.lastStep())
                            .arg(stepsOf[0].size())));
    QVERIFY2(static_cast<int>(stepsOf[2].size()) >= launch.lastStep() - 1,
             qPrintable(
                 QString("rank 2: %1 steps of %2").arg(stepsOf[2].size()).arg(launch.lastStep())));
    QVERIFY2(!stepsOf[1].empty(), "the killed rank wrote nothing in more than a second");
  }

  void launcherKilled() {
    Launch launch(launchArgs({}), cleanEnvironment());
    QVERIFY(launch.started());
    QVERIFY2(launch.waitForStep(3, 40'000), qPrintable(launch.tail()));
    const std::map<int, Proc> workers = workersOf(launch.pid());
    QCOMPARE(workers.size(), size_t{3});
    QCOMPARE(::kill(launch.pid(), SIGKILL), 0);
    QElapsedTimer t;
    t.start();
    const QStringList left = stillAlive(workers, 10'000);
    QVERIFY2(left.isEmpty(),
             qPrintable("10 s after hap launch's SIGKILL, still running: " + left.join(", ")));
    qInfo("hap launch killed: its 3 workers gone within %lld ms", t.elapsed());
    launch.waitForEnd(5000);
  }

  void rankStopped() {
    QProcessEnvironment env = cleanEnvironment();
    env.insert("HAP_TIMEOUT_S", "5");
    Launch launch(launchArgs({}), env);
    QVERIFY(launch.started());
    QVERIFY2(launch.waitForStep(3, 40'000), qPrintable(launch.tail()));
    const std::map<int, Proc> workers = workersOf(launch.pid());
    QCOMPARE(workers.size(), size_t{3});
    QCOMPARE(::kill(workers.at(1).pid, SIGSTOP), 0);
    qint64 ms = 0;
    const bool ended = launch.waitForEnd(25'000, &ms);
    if (!ended) ::kill(workers.at(1).pid, SIGCONT);  // let the destructor's kill reach it
    QVERIFY2(ended, qPrintable("hap launch did not end within 25 s of a rank's SIGSTOP:\n" +
                               launch.tail()));
    qInfo("rank 1 stopped: hap launch ended %lld ms later\n%s", ms,
          qPrintable(launch.failureLine()));
    QCOMPARE(launch.exitCode(), 1);
    const QString err = launch.err();
    QVERIFY2(
        QRegularExpression(R"(hap launch: rank [02] failed \(exit code 1\): .*HAP_TIMEOUT_S=5)")
            .match(err)
            .hasMatch(),
        qPrintable(launch.tail()));
    QVERIFY2(err.contains("rank 1 did not arrive (no sign of life from it"),
             qPrintable(launch.tail()));
    QVERIFY2(ms >= 4000,
             qPrintable(QString("ended %1 ms after the SIGSTOP, before the 5 s timeout").arg(ms)));
    const QStringList left = stillAlive(workers, 1000);
    QVERIFY2(left.isEmpty(), qPrintable("left running: " + left.join(", ")));
  }

  void storeWrittenWhileAWriterIsKilled() {
    const QString db = tmp_.filePath("eight-writers.db");
    constexpr int kWriters = 7, kSteps = 300;
    auto start = [&](const QString& what) {
      auto p = std::make_unique<QProcess>();
      p->start(STORE_WRITER_PATH, {db, what});
      return p;
    };
    // The one to kill starts first, so that the store exists; the others then write beside it.
    std::unique_ptr<QProcess> victim = start("forever");
    QVERIFY(victim->waitForStarted(10'000));
    QByteArray victimOut;
    QElapsedTimer t;
    t.start();
    while (!victimOut.contains("step 5\n") && t.elapsed() < 20'000) {
      victim->waitForReadyRead(100);
      victimOut += victim->readAllStandardOutput();
    }
    QVERIFY2(victimOut.contains("step 5\n"), victimOut.constData());
    std::array<std::unique_ptr<QProcess>, kWriters> writers;
    std::array<QByteArray, kWriters> outs;
    for (auto& w : writers) w = start(QString::number(kSteps));
    // Killed once every other writer has begun its run and before all have finished.
    int begun = 0, done = 0;
    while (begun < kWriters && t.elapsed() < 40'000) {
      QTest::qWait(5);
      begun = done = 0;
      for (int i = 0; i < kWriters; ++i) {
        outs[static_cast<size_t>(i)] += writers[static_cast<size_t>(i)]->readAllStandardOutput();
        begun += outs[static_cast<size_t>(i)].startsWith("run ");
        done += outs[static_cast<size_t>(i)].contains(" done");
      }
    }
    victim->kill();
    QVERIFY(victim->state() == QProcess::NotRunning || victim->waitForFinished(5000));
    victimOut += victim->readAllStandardOutput();
    QCOMPARE(begun, kWriters);
    QVERIFY2(done < kWriters, "every writer finished before the kill: it hit no write in progress");
    for (int i = 0; i < kWriters; ++i) {
      QProcess& w = *writers[static_cast<size_t>(i)];
      // (waitForFinished is false for a process already seen to end.)
      QVERIFY2(w.state() == QProcess::NotRunning || w.waitForFinished(40'000),
               qPrintable(QString("writer %1 did not finish").arg(i)));
      outs[static_cast<size_t>(i)] += w.readAllStandardOutput();
      QVERIFY2(
          w.exitStatus() == QProcess::NormalExit && w.exitCode() == 0,
          qPrintable(
              QString("writer %1: %2").arg(i).arg(QString::fromUtf8(w.readAllStandardError()))));
    }

    {
      SQLite::Database raw(db.toStdString(), SQLite::OPEN_READONLY);
      QCOMPARE(raw.execAndGet("PRAGMA integrity_check").getString(), std::string("ok"));
    }
    hap::db::Store store(db.toStdString());  // marks the killed writer's run aborted
    QCOMPARE(store.runs().size(), size_t{kWriters + 1});
    // Every run a writer reported committed is there, whole.
    const QRegularExpression doneLine(R"(^run (\d+) done$)", QRegularExpression::MultilineOption);
    for (int i = 0; i < kWriters; ++i) {
      const QRegularExpressionMatch m =
          doneLine.match(QString::fromUtf8(outs[static_cast<size_t>(i)]));
      QVERIFY2(m.hasMatch(), outs[static_cast<size_t>(i)].constData());
      const std::optional<hap::db::RunRecord> run = store.run(m.captured(1).toLongLong());
      QVERIFY(run.has_value());
      QCOMPARE(run->status, hap::db::RunStatus::Succeeded);
      QCOMPARE(store.steps(run->id).size(), size_t{3 * kSteps});
      QCOMPARE(store.stages(run->id).size(), size_t{3});
    }
    // The killed writer's run: aborted, with every step it reported committed.
    const QRegularExpression runLine(R"(^run (\d+)$)", QRegularExpression::MultilineOption);
    const QRegularExpression stepLine(R"(^step (\d+)$)", QRegularExpression::MultilineOption);
    const QString victimText = QString::fromUtf8(victimOut);
    const QRegularExpressionMatch m = runLine.match(victimText);
    QVERIFY(m.hasMatch());
    int64_t committed = 0;
    for (auto it = stepLine.globalMatch(victimText); it.hasNext();)
      committed = it.next().captured(1).toLongLong();
    const std::optional<hap::db::RunRecord> killed = store.run(m.captured(1).toLongLong());
    QVERIFY(killed.has_value());
    QCOMPARE(killed->status, hap::db::RunStatus::Aborted);
    const size_t kept = store.steps(killed->id).size();
    QVERIFY2(
        kept >= static_cast<size_t>(3 * committed) && kept % 3 == 0,
        qPrintable(
            QString("%1 step records kept, %2 steps reported committed").arg(kept).arg(committed)));
    qInfo("8 writers, one killed after %lld committed steps: integrity ok, %d runs whole (%lld ms)",
          static_cast<long long>(committed), kWriters, t.elapsed());
  }
};

QTEST_GUILESS_MAIN(TstFaults)
#include "tst_faults.moc"
