// A local launch (launcher.h) recorded as a run in the profile store (db/store.h), the same way
// for `hap launch --local --db` and the desktop app. Plain C++: no LibTorch, no Qt.
//
// Contract:
// - beginRecordedRun, before any worker starts: marks runs whose recording process died as
//   aborted (Store::recoverAbandonedRuns), stores the plan's cluster (as YAML), the plan (its
//   file's text and SHA-256, model, strategy, predicted times and memory) and a run `running`
//   with the launch settings as JSON (ranks, CPU shares and period, slowdowns, the worker options
//   that shape the run as the text workerArguments passes, null where that is the worker's
//   default; plan and model paths, timeout, OMP_NUM_THREADS, the worker arguments after the
//   plan), owned by this process (host, pid).
//   The caller then passes `--db PATH --run-id ID` to every worker, which records its steps and
//   stages into the run (run_recorder.h).
// - finishRecordedRun, after the last worker is reaped: the run's status and exit reason from
//   the launch's outcome. When the launch itself throws (a worker cannot start), finish the run
//   with Store::finishRun(run, RunStatus::Failed, what). A launcher killed in between leaves the
//   run `running` until a later recoverAbandonedRuns marks it aborted.
// - Store errors are db::StoreError naming the file; nothing is printed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/store.h"
#include "engine/plan/plan.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/worker_options.h"

namespace hap::runtime {

// What shapes a local launch, as stored with its run.
struct LaunchSettings {
  // Every worker's options (without dbPath and runId): options.planPath is the plan file the
  // workers run (stored whole, and its absolute path).
  WorkerOptions options;
  std::vector<double> cpuShares;        // one per rank (WorkerCommand::cpuShare)
  // One per rank: each worker's --slowdown (options.slowdown is not used); empty: all 1.
  std::vector<double> slowdowns;
  int cpuPeriodMs = 20;                 // LaunchOptions::quotaPeriod
  double timeoutSeconds = 0;            // LaunchOptions::timeout; 0: none
  std::string label;                    // free text shown by `hap runs`
};

// Begins the run (contract above) and returns its id. `plan` is the plan read from
// settings.options.planPath. Error naming the file when the plan file cannot be read; db::StoreError.
int64_t beginRecordedRun(db::Store& store, const plan::Plan& plan, const LaunchSettings& settings);

// Finishes run `run` from the launch's outcome: succeeded; failed with "rank R: <exit>: <its last
// error line>"; failed with "timed out after T s (--timeout)" (T: timeoutSeconds); stopped with
// "interrupted (SIGINT)". db::StoreError.
void finishRecordedRun(db::Store& store, int64_t run, const LaunchResult& result, double timeoutSeconds);

}  // namespace hap::runtime
