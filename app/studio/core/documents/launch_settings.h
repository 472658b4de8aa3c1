// What the Run dock (issue 20, item 1) launches: hap-worker's options as the form holds them (the
// runtime's own runtime::WorkerOptions, runtime/launch/worker_options.h: one struct for the worker,
// `hap launch`, the preflight and the run recording), the launch's own settings (CPU share per
// rank, slowdown per rank, timeout, label), and where a run's files go. No process is started here.
//
// Contract:
// - launchedOptions is a pure function of the settings: the form's worker options with what does
//   not apply left at the worker's default (the momentum of Adam, the data file of synthetic
//   data, ...), so that the worker's argument list (runtime::workerArguments) holds only what the
//   run uses. It never sets the plan, --db or --run-id (the launch does).
// - validate says, in one line naming the field and what to do, why settings cannot be launched
//   (a token file not given, a share outside (0, 1], ...); "" when they can. It checks files
//   only for existence, not contents (the preflight's job).
#pragma once

#include <QDateTime>
#include <QString>

#include <cstdint>
#include <vector>

#include "runtime/launch/worker_options.h"

namespace hap::studio {

struct LaunchSettings {
  // The workers' options (hap-worker --help); defaults are the worker's. The form fills what it
  // shows (worker.modelPath is the dock's: "" = the plan's); planPath, dbPath and runId stay unset.
  runtime::WorkerOptions worker;

  // The launch.
  std::vector<double> cpuShares;  // one per rank in (0, 1]; empty = all 1
  // One per rank, each >= 1: the rank computes that many times slower while its collectives run
  // at full speed (hap-worker --slowdown, an emulated slower GPU); empty = all 1.
  std::vector<double> slowdowns;
  double timeoutSeconds = 0;      // 0 = none
  QString label;                  // the recorded run's label

  // Steps the worker runs in all: warm-up + measured.
  int64_t totalSteps() const { return worker.warmup + worker.steps; }
};

// "sgd", "adam", "adamw" (runtime::optimizerKindName), and back: Sgd for any other name.
QString optimizerName(runtime::OptimizerOptions::Kind kind);
runtime::OptimizerOptions::Kind optimizerKind(const QString& name);

// The workers' options for `s` (contract above): s.worker with the momentum unless SGD, the data
// file unless the data reads one, the token dtype unless tokens, and the checkpoint interval
// without a checkpoint folder left at the worker's defaults.
runtime::WorkerOptions launchedOptions(const LaunchSettings& s);

// Why `s` cannot run `ranks` ranks ("" when it can); see the contract.
QString validate(const LaunchSettings& s, int ranks);

// Where the app's runs go: $HAP_RUNS_DIR when set, else "runs" beside the default profile store
// (db::defaultPath(), which honours $HAP_DB).
QString runsDirectory();
// A new folder for a run of `modelPath` started at `at`, created inside `runsDir`:
// <runsDir>/<yyyyMMdd-HHmmss>-<model base name>, with "-2", "-3", ... when that exists. "" with
// `error` set when it cannot be created.
QString makeRunFolder(const QString& runsDir, const QString& modelPath, const QDateTime& at, QString* error = nullptr);

}  // namespace hap::studio
