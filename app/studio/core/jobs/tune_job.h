// Run ▸ Tune… off the GUI thread (issue 30, item 3): hap::tune::runTune, the closed loop `hap tune`
// runs (app/cli/tune_loop.h: profile if the store lacks figures, plan, run the plan and the
// baselines that matter, calibrate, re-plan, until the best measured step stops improving).
//
// Contract:
// - One loop at a time: start() while busy refuses (returns false, emits nothing).
// - The loop runs on a thread of the job's own pool (it may take minutes: the global pool, which
//   opening, planning and layout share and which other jobs wait for when they are destroyed, is
//   left to them). Its TuneListener callbacks become queued
//   signals on the GUI thread, in the order the loop made them: message (progress in words, and
//   the error lines of workers and profilers, "[rank N] ..."), roundStarted, runFinished,
//   calibrated, roundFinished. Workers' ordinary output is not forwarded (the store records the
//   runs; the Run dock shows a single run's lines).
// - Each start() that returned true ends with exactly one of finished(result) or failed(message),
//   after every signal of the loop and after every worker and profiler of it is reaped; busy() is
//   false from then on. Nothing the loop throws escapes: every error is failed()'s one line
//   (hap::tune::TuneError says what to do).
// - stop() sets the request's interrupt (SIGTERM): the running launch stops its ranks, the loop
//   throws TuneError("interrupted"), and failed() follows. The destructor stops and waits for the
//   loop; no signal comes after it.
// - prepareTune turns what the app has open (TuneSetup) into the loop's request without starting
//   anything: a folder of its own in the runs folder (runsDirectory(): <stamp>-<model>-tune) holds
//   the rounds' plans (rounds/), the chosen plan (tuned-plan.json) and, when the cluster has no
//   file or was changed since it was read, the cluster as the app has it (cluster.yaml). The CPU
//   shares and slowdowns are the Run dock's when it has one per rank of the cluster, else the
//   cluster's emulated shares and no slowdown.
#pragma once

#include <QDateTime>
#include <QFuture>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QThreadPool>

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "app/cli/tune_loop.h"
#include "app/studio/core/documents/model_document.h"
#include "engine/cost/cluster.h"

namespace hap::studio {

// What Run ▸ Tune… tunes, as the main window has it open.
struct TuneSetup {
  QString modelPath;
  std::vector<import::InputSpec> inputOverrides;  // the model's, as opened
  cost::Cluster cluster;                          // the cluster panel's
  QString clusterPath;                            // its file ("" when not saved)
  bool clusterModified = false;                   // changed since it was read or saved
  QString storePath;                              // the Profiles dock's store ("" = the default)
  std::vector<double> cpuShares, slowdowns;       // the Run dock's form, per rank (may be empty)
  int64_t steps = tune::TuneRequest{}.steps;
  int64_t warmup = tune::TuneRequest{}.warmup;
  int rounds = tune::TuneRequest{}.rounds;
};

// The per-rank CPU shares and slowdowns a tune of `s` runs with (contract), and whether they are
// the Run dock's (false: the cluster's emulated shares, no slowdown).
struct TuneEmulation {
  std::vector<double> cpuShares, slowdowns;  // one per rank each
  bool fromRunDock = false;
};
TuneEmulation tuneEmulation(const TuneSetup& s);

struct PreparedTune {
  tune::TuneRequest request;
  QString folder;     // the tune's own folder
  QString tunedPlan;  // request.output: where the chosen plan is copied
};
// The request for `s` (contract); nullopt with `error` set (one line naming the file or field) when
// there is no model or cluster, or the folder or the cluster file cannot be written.
std::optional<PreparedTune> prepareTune(const TuneSetup& s, const QDateTime& at, QString* error);

class TuneJob : public QObject {
  Q_OBJECT
 public:
  explicit TuneJob(QObject* parent = nullptr);
  ~TuneJob() override;  // stops and waits: no worker outlives the job

  // Runs the loop on `request`; request.interrupt is replaced by the job's own. False when busy.
  bool start(tune::TuneRequest request);
  // Asks the loop to stop (no-op when idle); failed("... interrupted ...") follows.
  void stop();
  bool busy() const { return m_busy; }
  bool stopping() const { return m_busy && m_interrupt.load() != 0; }

  // --input arguments ("NAME=DIMx...:DTYPE[:LOW..HIGH]", import::parseInputArg's form) of a
  // model's input overrides, so the loop imports the model as the app did.
  static std::vector<std::string> inputArguments(const std::vector<import::InputSpec>& overrides);
  // "1,0.5,0.25": per-rank values as hap launch --cpu-share / --slowdown take them; "" when every
  // value is 1 (or there is none).
  static std::string perRankList(const std::vector<double>& values);
  // The CPU share per rank that emulates `cluster` on this machine, by the Run dock's rule
  // (emulatedShares): where every machine is this host and the device types differ in float32
  // FLOP/s, each rank's type's FLOP/s over the fastest's (clamped to [0.05, 1]); else 1 each.
  static std::vector<double> emulatedShares(const cost::Cluster& cluster);

 Q_SIGNALS:
  void message(const QString& line);
  void roundStarted(int round, const QString& profile);
  void runFinished(const hap::tune::TuneRun& run);
  void calibrated(int round, const hap::tune::TuneCalibration& calibration);
  void roundFinished(const hap::tune::TuneRound& round);
  void finished(std::shared_ptr<const hap::tune::TuneResult> result);
  void failed(const QString& message);
  void busyChanged(bool busy);

 private:
  class Listener;
  QThreadPool m_pool;  // one thread: the loop's
  QFuture<void> m_future;
  std::atomic<int> m_interrupt{0};
  bool m_busy = false;
};

}  // namespace hap::studio

Q_DECLARE_METATYPE(hap::tune::TuneRun)
Q_DECLARE_METATYPE(hap::tune::TuneCalibration)
Q_DECLARE_METATYPE(hap::tune::TuneRound)
Q_DECLARE_METATYPE(std::shared_ptr<const hap::tune::TuneResult>)
