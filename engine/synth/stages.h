// The exact stage model (../shared/DESIGN.md §3 "Stages and cost"): the iteration time of a
// program.
//
// Collectives synchronise every device, so each pass splits into stages: a collective phase
// (the communicating steps, back to back), then the computations up to the next one, which each
// device runs at its own speed. A stage costs its communication plus the slowest device's
// computation; the iteration costs the forward stages (steps in program order, forward
// communication) plus the backward stages (steps in reverse, the duals' communication: a
// conversion's backward collective, SFB's gathers, a reshard's inverse all-to-all).
//
// A replicated parameter's gradient all-reduce is not part of a stage: the runtime packs those
// gradients into buckets (cost::assignGradientBuckets) and all-reduces each bucket while backward
// still runs, one after another on its own channel. A gradient is in once every device has run
// the backward of the steps before its replicate-parameter step in its stage (the stage's
// communication, then each device's computations in order: the slowest device's point); a bucket
// is ready when its last gradient is in; the iteration pays only what the buckets' all-reduces
// leave exposed after the last backward stage (cost::scheduleBuckets).
//
// Per stage this is max over devices of a sum, which is at most the sum over ops of the maximum
// the search adds up (cost_table.h) whenever one device type is slowest in both passes; the LP
// over shares (balance/share_lp.h) optimises exactly this model, and the simulator replays it.
#pragma once

#include <vector>

#include "engine/synth/cost_table.h"
#include "engine/synth/program.h"

namespace hap::synth {

// What one program step costs: communication per pass, computation per device group per pass.
struct StepTimes {
  double forwardCommunication = 0, backwardCommunication = 0;
  // Whether the step synchronises the devices in that pass: a collective (any positive cost),
  // SFB's gathers, a reshard (even where the cuts agree and it moves nothing, so that a
  // program's stages do not depend on its shares).
  bool forwardSync = false, backwardSync = false;
  std::vector<double> forward, backward;  // per CostTable group; empty for a conversion
  // A replicated parameter's gradient all-reduce (its share of a bucket's), run asynchronously
  // in the gradient buckets: not in backwardCommunication, never synchronising.
  double gradientSeconds = 0;
};
StepTimes stepTimes(const CostTable& table, const Step& step);

struct StageCost {
  bool backward = false;
  std::vector<int> steps;  // program step indices, in the pass's execution order
  double communicationSeconds = 0;
  std::vector<double> groupComputation;  // per CostTable group
  double computationSeconds = 0;         // the slowest group's
  double seconds() const { return communicationSeconds + computationSeconds; }
};

// One gradient bucket as the stage model runs it.
struct GradientBucket {
  std::vector<int> steps;  // the replicate-parameter steps whose gradients it sums, in fill order
  double seconds = 0;      // its all-reduce: the sum of their gradientSeconds
  int readyStage = 0;      // index into StageModel::stages: the backward stage its last gradient is in
  int readyStep = 0;       // the step whose backward brings that gradient: the last to run of b.steps
  double readyOffset = 0;  // when, after that stage's communication (the slowest device's point)
  double ready = 0, start = 0, end = 0;  // seconds from the start of the iteration
};

struct StageModel {
  std::vector<StageCost> stages;  // forward stages, then backward stages
  double forwardSeconds = 0, backwardSeconds = 0;
  std::vector<GradientBucket> buckets;  // in the order the runtime starts them
  // What the buckets' all-reduces leave after the last backward stage: max(0, last end − the
  // stages' end).
  double exposedGradientSeconds = 0;
  double gradientSeconds() const;  // every bucket's all-reduce, hidden or not
  double seconds() const { return forwardSeconds + backwardSeconds + exposedGradientSeconds; }
};

StageModel stageModel(const CostTable& table, const Program& program);

// stageModel(table, program).seconds(): the predicted iteration time.
double iterationSeconds(const CostTable& table, const Program& program);

}  // namespace hap::synth
