// Runs a plan locally for the Run dock (issue 20, items 1 and 2) through the runtime's own launcher
// (runtime::runLocalLaunch: one hap-worker per plan device, CPU shares, the run recorded in the profile
// store), off the GUI thread.
//
// Contract:
// - One launch at a time: start() while busy refuses (returns false, emits nothing).
// - runLocalLaunch blocks until every worker is reaped; it runs on the job's own thread. Its
//   onStart becomes started(); the workers' lines are buffered and delivered as linesArrived()
//   batches at most every interval (default 100 ms), so a chatty run cannot flood the event loop;
//   past kMaxPendingLines undelivered lines the oldest are dropped and a note says how many.
//   Everything left is delivered before finished(), which comes exactly once per start() that
//   returned true, after every worker is reaped.
// - stop(): the launcher sends SIGTERM to every rank, then SIGKILL after the request's grace; the
//   outcome is Stopped. stopAndWait() also blocks until every worker is reaped and emits
//   finished() before it returns (for closing the window). The destructor stops and joins, so no
//   worker outlives the job (and PR_SET_PDEATHSIG covers a crashed app).
// - A launch that cannot run (a bad request, the store, a worker that cannot be started) ends in
//   finished() with Kind::Error and the launcher's message; nothing is thrown at the caller.
#pragma once

#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QTimer>

#include <memory>
#include <thread>

#include "engine/plan/plan.h"
#include "runtime/launch/local_launch.h"

namespace hap::studio {

// One line of a worker's output. rank -1: a note of the job itself (lines dropped).
struct LaunchLine {
  int rank = 0;
  bool stderrLine = false;
  QString text;
};
using LaunchLines = QList<LaunchLine>;

struct LaunchOutcome {
  enum class Kind { Succeeded, RankFailed, Stopped, TimedOut, Error };
  Kind kind = Kind::Succeeded;
  int failedRank = -1;  // RankFailed: the first rank seen to fail
  QString exit;         // RankFailed: how it ended (runtime::describeExit: "exit code 1")
  QString errorLine;    // RankFailed: its last error line (WorkerExit::lastErrorLine)
  QString message;      // one line for people: "Rank 2 failed (exit code 1): hap-worker: error: ..."
  double seconds = 0;   // wall time of the launch
  qint64 run = 0;       // the recorded run (0: not recorded or not begun)
  QStringList exits;    // per rank: runtime::describeExit, "" for a rank that succeeded
  bool succeeded() const { return kind == Kind::Succeeded; }
};

class LaunchJob : public QObject {
  Q_OBJECT
 public:
  static constexpr int kMaxPendingLines = 20000;

  explicit LaunchJob(QObject* parent = nullptr);
  ~LaunchJob() override;  // stops and joins: every worker is reaped

  // Launches `plan` (the plan that request.options.planPath holds) as `request` says; request.interrupt
  // is the job's own. False when a launch is going.
  bool start(std::shared_ptr<const plan::Plan> plan, runtime::LocalLaunchRequest request);
  // Asks the launcher to stop every rank (no-op when idle); finished() follows.
  void stop();
  // stop(), then waits until every rank is reaped and finished() has been emitted.
  void stopAndWait();
  bool busy() const { return m_shared != nullptr; }
  bool stopping() const { return m_stopRequested; }

  // The running (or last) launch: its recorded run (0 before started()), and its command line.
  qint64 runId() const { return m_run; }
  QString commandLine() const { return m_commandLine; }

  void setInterval(int milliseconds) { m_timer.setInterval(milliseconds); }

 Q_SIGNALS:
  // The run is recorded (run 0 when not) and the workers are about to start.
  void started(qint64 run, int port, int ranks, const QString& commandLine);
  void linesArrived(const hap::studio::LaunchLines& lines);
  void finished(const hap::studio::LaunchOutcome& outcome);
  void busyChanged(bool busy);

 private:
  struct Shared;
  void deliverLines();
  void onStarted(const std::shared_ptr<Shared>& shared);
  void onDone(const std::shared_ptr<Shared>& shared);

  QTimer m_timer;
  std::shared_ptr<Shared> m_shared;  // the running launch; null when idle
  std::unique_ptr<std::thread> m_thread;
  bool m_stopRequested = false;
  qint64 m_run = 0;
  QString m_commandLine;
};

}  // namespace hap::studio

Q_DECLARE_METATYPE(hap::studio::LaunchLines)
Q_DECLARE_METATYPE(hap::studio::LaunchOutcome)
