// Fitting the cost model to recorded runs (`hap calibrate`, docs/cost-model.md §7).
//
// A run's plan was priced under a base profile; its prediction is a sum over the exact stage
// model's stages (../shared/DESIGN.md §3) of communication plus the slowest device's computation.
// The fit keeps that structure and every per-op figure of the base profile, and adjusts, per
// device type:
//   - computeScale s_t: every computation of type t is s_t times the base's (what the per-op
//     benchmarks miss at training time: cache effects between ops, the executor's dispatch, a
//     throttled core's uneven pace);
//   - collectiveSlowdown k_t: a collective among devices of types T takes max_{t∈T} k_t times
//     the base's (a rank whose own, throttled, CPU runs the collective slows all of them down);
//   - and for all types at once, gradientExposure g: how much of the replicated parameters'
//     gradient all-reduces the step pays beyond what the stage model predicts. Plans priced with
//     gradient buckets (synth/stages.h) carry the buckets' exposed time, which g scales (a first
//     order fit: more exposure in time would also shift with the computation scales); older plans
//     held those all-reduces in their backward stages, of which g scales the share;
//   - baseMemoryBytes m_t and memoryScale: peak memory = m_t + memoryScale_t · predicted bytes
//     (the runtime's own memory: libraries, allocator pools, the process image).
// Step time: predicted(θ) = Σ_stages [ k(run) · (comm_stage − (1 − g) · grad_stage)
//                                      + max_t s_t · comp_stage,t ] + k(run) · g · exposed, fitted
// by least squares of the relative error over every recorded step of the fit runs (a mean per
// run, weighted by its step count). Memory: ordinary least squares per type over every rank.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/cost/profile.h"

namespace hap::cost {

// One stage of a run's plan as priced under the base profile.
struct StageObservation {
  double communicationSeconds = 0;  // all of it, gradientSeconds included
  double gradientSeconds = 0;       // of which replicated parameters' gradient all-reduces
  std::map<std::string, double> computeByType;  // the slowest device of each type present
};

// One rank's memory in a run.
struct MemoryObservation {
  std::string type;
  double predictedBytes = 0;
  double measuredPeakBytes = 0;
};

struct RunObservation {
  long long run = 0;
  long long plan = 0;
  std::string label;              // shown in reports ("bert-tiny hap on local-cpu-3")
  bool heldOut = false;           // not used in the fit, only reported
  std::vector<StageObservation> stages;
  double extraSeconds = 0;        // per-iteration time outside the stages (a replicated plan's
                                  // cross-machine gradient sums), scaled like communication
  double exposedGradientSeconds = 0;  // the gradient buckets' all-reduces left after backward
                                      // (Plan::exposedGradientSeconds)
  double measuredStepSeconds = 0; // mean over the measured (non-warm-up) steps
  int measuredSteps = 0;
  std::vector<MemoryObservation> memory;
};

struct TypeParameters {
  double computeScale = 1;
  double collectiveSlowdown = 1;
  double baseMemoryBytes = 0;
  double memoryScale = 1;
};

struct Calibration {
  std::map<std::string, TypeParameters> types;
  // The share of the gradient all-reduces the step pays (Profile::gradientExposure).
  double gradientExposure = 1;
};

// The predicted step time of run r under calibration c (types absent from c: identity).
double predictStep(const RunObservation& r, const Calibration& c);
double predictMemory(const MemoryObservation& m, const Calibration& c);

// Fits every parameter above to the runs whose heldOut is false. Types that appear only in
// held-out runs keep the identity. Parameters are bounded: scales in [0.05, 20], slowdowns in
// [0.2, 20] (below 1 where the collectives ran faster than priced: an inventory's conservative
// per-call costs, a fit measured on a busier machine), memory terms non-negative.
Calibration fit(const std::vector<RunObservation>& runs);

// `profile` with calibration `c` composed onto what it already held (a fit is relative to the
// profile's own predictions): per type, scales multiply and the runtime memory maps through the
// fit's line; a type the profile lacks is added. Version, creation time and note are the
// caller's (`hap calibrate`, `hap tune`).
void compose(Profile& profile, const Calibration& c);

// Accuracy of predictions against measurements over a set of runs.
struct Accuracy {
  int runs = 0;
  double stepMape = 0;      // mean absolute percentage error of the step time, in [0, ∞)
  double stepPearson = 0;   // correlation of predicted and measured step times (0 for < 2 runs)
  double memoryMape = 0;    // over every rank's peak memory
  double memoryPearson = 0;
  int rankingPairs = 0;     // pairs of runs of one model and cluster compared
  int rankingRight = 0;     // of which the prediction orders as measured
};
// `rankingKey` groups runs whose plans compete (same model and cluster): only pairs with equal
// keys are ranked. Empty keys: no ranking.
Accuracy accuracy(const std::vector<RunObservation>& runs, const Calibration& c,
                  const std::vector<std::string>& rankingKey = {});

// Pearson correlation of two equal-length series (0 when either is constant or shorter than 2).
double pearson(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace hap::cost
