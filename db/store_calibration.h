// Calibrating the cost model on the runs recorded in a profile store (docs/cost-model.md §7): what
// `hap calibrate` and the app's Run ▸ Calibrate… both run. It prepares every usable run (its plan's
// stages as priced under the plan's profile, the slowest rank's step time averaged over the measured
// steps, every rank's peak memory), splits fitted from held-out plans, fits (cost::fit), measures the
// accuracy before and after, composes the fit with the base profile and saves it as the next version.
//
// Contract:
// - calibrateStore opens the store read-write (it marks abandoned runs `aborted` first) and, unless
//   dryRun, writes exactly one thing: the new profile version. Nothing is written when it throws.
// - It throws CalibrationError (a StoreError) for everything a user can cause: a run that does not
//   exist, no usable run, runs planned under different profiles, a base profile the store no longer
//   holds, runs planned without a profile and no name given, every run held out. The error keeps the
//   runs left out so far (what the CLI prints before the message). A store that cannot be opened
//   throws StoreError; a stored plan file that does not parse throws its plan::PlanError.
// - The result holds every figure `hap calibrate` prints; the CLI only formats it.
// - A Store is used by one thread at a time: call these from one thread (they open their own).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/store.h"
#include "engine/cost/calibration.h"
#include "engine/cost/profile.h"

namespace hap::db {

struct CalibrationRequest {
  std::string storePath;          // "" = defaultPath()
  std::string name;               // the calibrated profile's name; "" = the base profile's
  std::vector<int64_t> runs;      // only these runs; empty = every succeeded run of the store
  std::vector<int64_t> holdOut;   // plans whose runs are only reported, not fitted
  enum class Split { Half, None };
  Split split = Split::Half;      // without holdOut: Half holds out every second plan by id (never the only one)
  bool dryRun = false;            // fit and report; save nothing
  std::string origin = "hap calibrate";  // what the saved version's note starts with
};

// A run the calibration left out, and why ("status failed", "no measured steps recorded", ...).
// Only runs asked for by id, and succeeded runs that cannot be used, are listed: a run that is not
// `succeeded` is no candidate when every run is taken.
struct SkippedRun {
  int64_t run = 0;
  std::string why;
};

// One run of the calibration: what was measured and what was predicted before and after.
struct CalibratedRun {
  cost::RunObservation observation;  // run, plan, label, heldOut, measured step time and memory
  std::string strategy;              // the plan's ("hap", "dp-ev", ...)
  std::string rankingKey;            // runs with equal keys are competing plans (model, cluster, ranks)
  double beforeSeconds = 0;          // predicted step time under the base (the stored plan's)
  double afterSeconds = 0;           // ... under the fit
  double memoryErrorBefore = 0;      // MAPE of the run's ranks' peak memory (0 without memory)
  double memoryErrorAfter = 0;
  // Relative error of the predicted step time: predicted / measured − 1.
  double beforeError() const { return beforeSeconds / observation.measuredStepSeconds - 1; }
  double afterError() const { return afterSeconds / observation.measuredStepSeconds - 1; }
};

// One set of runs' accuracy under the base and under the fit (runs = 0: the set is empty).
struct AccuracyChange {
  cost::Accuracy before, after;
};

struct CalibrationResult {
  std::string storePath;
  std::string base;                  // the profile the runs were planned under ("NAME@N"), "" = the inventory alone
  std::vector<SkippedRun> skipped;   // in run id order
  std::vector<CalibratedRun> runs;   // in run id order, fitted and held out
  int plans = 0;                     // distinct plans among runs
  int heldOutPlans = 0;
  AccuracyChange fit, heldOut;
  cost::Calibration calibration;     // the fitted parameters, relative to the base
  cost::Profile profile;             // the base composed with the fit; version and createdAt set once saved
  std::string saved;                 // "NAME@N" as saved; "" on a dry run

  int fittedRuns() const { return fit.after.runs; }
  int heldOutRuns() const { return heldOut.after.runs; }
};

class CalibrationError : public StoreError {
 public:
  CalibrationError(const std::string& message, std::vector<SkippedRun> skipped = {})
      : StoreError(message), m_skipped(std::move(skipped)) {}
  const std::vector<SkippedRun>& skipped() const { return m_skipped; }

 private:
  std::vector<SkippedRun> m_skipped;
};

CalibrationResult calibrateStore(const CalibrationRequest& request);

// A recorded run as the calibration sees it, for choosing runs (the app's list): usable or not.
struct CalibrationCandidate {
  RunRecord run;
  std::string modelPath, strategy, clusterName;  // of its plan ("" without one)
  std::string base;          // the profile its plan was priced under ("NAME@N"), "" = the inventory alone
  int measuredSteps = 0;     // distinct steps that are not warm-up
  double measuredStepSeconds = 0;  // the slowest rank's, averaged over them (0 without)
  std::string why;           // "" when calibration can use it, else why it leaves it out
  bool usable() const { return why.empty(); }
};
// Every run of the store at `storePath` ("" = defaultPath()), by id. Opens it read-only; throws
// StoreError when it cannot (a missing file included).
std::vector<CalibrationCandidate> calibrationCandidates(const std::string& storePath);

}  // namespace hap::db
