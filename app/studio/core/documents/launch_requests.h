// What the Run dock hands the runtime, built from its form (issue 29, item 5: the dock only draws
// and forwards): for Start, Check and Export Model the plan file the workers run (the open plan
// written as Plan ▸ Plan File… writes it, then read back), the local launch request
// (runtime::LocalLaunchRequest) and the preflight request of the same worker options; the launch
// scripts of the form's options; and what the profile store says of a recorded run. No process is
// started here.
//
// Contract:
// - The launch request and the preflight request of one preparation carry the same worker options
//   (launchedOptions of the settings, the plan file read back as their planPath), so the
//   preflight checks exactly what the workers get.
// - A preparation that fails returns nullopt with `error` set to one line naming the file or
//   field and what to do, and leaves nothing behind (prepareStart removes the run folder it made).
// - The model the workers load is settings.worker.modelPath: the dock's model, else ""
//   (launchModelPath gives the plan's).
#pragma once

#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "app/studio/core/documents/launch_settings.h"
#include "app/studio/core/documents/plan_document.h"
#include "db/store.h"
#include "runtime/launch/launch_scripts.h"
#include "runtime/launch/local_launch.h"
#include "runtime/launch/preflight.h"

namespace hap::studio {

// The plan's ranks: one worker per device of every machine (plan::worldDevices); none without a
// plan.
std::vector<plan::PlanDevice> launchDevices(const PlanDocument* doc);
int launchRanks(const PlanDocument* doc);
// The CPU share per rank that emulates the plan's cluster on this machine: where every machine is
// this host (127.0.0.1, localhost, ::1) and the device types differ in float32 FLOP/s, each rank's
// type's FLOP/s over the fastest's (local-cpu-hetero-3: 1, 0.5, 0.25); else 1 for every rank.
std::vector<double> emulatedShares(const PlanDocument* doc);
// The same rule for a cluster's ranks (the tune's shares when the Run dock has none).
std::vector<double> emulatedShares(const cost::Cluster& cluster);

// The model file the workers of `doc` load: `modelPath` when given, else the plan's.
QString launchModelPath(const PlanDocument* doc, const QString& modelPath);

// The hap-worker the dock runs: $HAP_WORKER when set, else the build's or the installed one
// (runtime::resolveWorker beside this program); "" when there is none (the preflight's Worker
// check says so).
QString launchWorker();

// The profile store runs are recorded in: `store`, or db::defaultPath() when it is "".
QString launchStorePath(const QString& store);

// The preflight of launching `plan` (read from `planPath`, the file the workers run) with the
// form's `settings` (the workers' options as launched, launchedOptions; the CPU shares) by
// `worker` ("" when none was found: the Worker check says so).
runtime::PreflightRequest preflightRequest(const plan::Plan& plan, const QString& planPath,
                                           const LaunchSettings& settings, const QString& worker);

// A launch waiting for its preflight.
struct PreparedLaunch {
  std::shared_ptr<const plan::Plan> plan;  // read back from request.options.planPath
  runtime::LocalLaunchRequest request;     // Check: the launch Start would make (not run)
  runtime::PreflightRequest preflight;
  int ranks = 0;
  QString folder;           // Start: the run folder (discardRunFolder when the start is refused)
  QString checkpointDir;    // the run's checkpoint folder
};

// Start: validates `s` for the plan's ranks, makes a run folder (runsDirectory, makeRunFolder)
// and writes the plan there as plan.json; the checkpoints go to the form's folder, else
// <run folder>/checkpoints. Recorded in launchStorePath(store), labelled s.label or
// "<model> · <strategy> · hap-studio".
std::optional<PreparedLaunch> prepareStart(const PlanDocument& doc, const LaunchSettings& s, const QString& store,
                                           QString* error);
// Removes a run folder prepareStart made, with its plan.json (a start that was refused).
void discardRunFolder(const QString& folder);

// Check: the preflight of `s` as Start would launch it, the plan written to `planPath` (a scratch
// file); the checkpoint folder, when the form has none, where Start would put it (a new folder in
// the runs folder).
std::optional<PreparedLaunch> prepareCheck(const PlanDocument& doc, const LaunchSettings& s, const QString& planPath,
                                           QString* error);

// Export Model: the plan's ranks load `checkpoint` and write the model to `exportPath`, no step
// (--resume CKPT --steps 0 --warmup 0 --export FILE, synthetic data, the checkpoint's optimizer,
// no CPU share), the plan written to `planPath`; recorded in launchStorePath(store), labelled
// "<model> · export of <checkpoint> · hap-studio".
std::optional<PreparedLaunch> prepareExport(const PlanDocument& doc, const LaunchSettings& s, const QString& planPath,
                                            const QString& checkpoint, const QString& exportPath,
                                            const QString& store, QString* error);

// Writes launch scripts of `kind` into `dir` with the form's worker options (no CPU shares: a
// local emulation only; no --model: the scripts name the model's file); "" on success, else why
// not. `force`: write into a folder that is not empty.
QString writeLaunchScripts(const PlanDocument& doc, const LaunchSettings& s, runtime::ScriptKind kind,
                           const QString& dir, bool force);

// A run recorded in a profile store, as the dock shows it when it is opened later.
struct RecordedRun {
  int ranks = 0;
  QString checkpointDir;  // its --checkpoint-dir (recordedCheckpointDir); "" when none
  QString exitReason;     // why it ended, when not succeeded
};
// Run `run` of the store at `storePath` (opened read-only); nullopt with `error` set when it is
// not there or the store cannot be read.
std::optional<RecordedRun> readRecordedRun(const QString& storePath, qint64 run, QString* error);

// "running", "succeeded", ... (db::runStatusName).
QString runStatusText(db::RunStatus status);

}  // namespace hap::studio
