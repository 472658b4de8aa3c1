// What the Run dock (issue 20, item 1) launches: hap-worker's options as the form holds them, the
// launch's own settings (CPU share per rank, timeout, label), and the pure functions from them to
// the worker's argument list and to where a run's files go. No process is started here.
//
// Contract:
// - workerArguments is a pure function of the settings: the flags of app/worker/main.cpp, each
//   given once, in a fixed order; an option at its "off" value (no file, 0 threads, no clipping)
//   is left out, so the worker's own default holds. Numbers are written in their shortest form
//   that reads back exactly. It never adds --db or --run-id (the launcher does).
// - validate says, in one line naming the field and what to do, why settings cannot be launched
//   (a token file not given, a share outside (0, 1], ...); "" when they can. It checks files
//   only for existence, not contents (the preflight's job).
#pragma once

#include <QDateTime>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <vector>

namespace hap::studio {

struct LaunchSettings {
  enum class Data { Synthetic, Tokens, Cifar };
  enum class Optimizer { Sgd, Adam, AdamW };

  // The worker (hap-worker --help); defaults are the worker's.
  QString modelPath;          // --model; "" = the plan's
  int64_t steps = 20;         // --steps: measured steps after the warm-up
  int64_t warmup = 2;         // --warmup
  uint64_t seed = 0;          // --seed
  Data data = Data::Synthetic;
  QString dataPath;           // --data-path (tokens, cifar)
  QString tokenDtype = QStringLiteral("uint16");  // --token-dtype (tokens): uint16 or int32
  Optimizer optimizer = Optimizer::Sgd;
  double lr = 0.01;           // --lr
  double momentum = 0.9;      // --momentum (SGD only)
  double weightDecay = 0;     // --weight-decay
  double clipNorm = 0;        // --clip-norm; 0 = off
  QString checkpointDir;      // --checkpoint-dir; "" = none
  int64_t checkpointEvery = 0;  // --checkpoint-every (with a checkpoint dir); 0 = at the end only
  QString resumePath;         // --resume
  QString exportPath;         // --export
  int threads = 0;            // --threads; 0 = LibTorch's default

  // The launch.
  std::vector<double> cpuShares;  // one per rank in (0, 1]; empty = all 1
  double timeoutSeconds = 0;      // 0 = none
  QString label;                  // the recorded run's label

  // Steps the worker runs in all: warm-up + measured.
  int64_t totalSteps() const { return warmup + steps; }
};

// "synthetic", "tokens", "cifar"; "sgd", "adam", "adamw".
QString dataName(LaunchSettings::Data d);
QString optimizerName(LaunchSettings::Optimizer o);

// hap-worker's arguments after the plan (contract above).
QStringList workerArguments(const LaunchSettings& s);
std::vector<std::string> toStdStrings(const QStringList& list);

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
