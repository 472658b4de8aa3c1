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

struct StageModel {
  std::vector<StageCost> stages;  // forward stages, then backward stages
  double forwardSeconds = 0, backwardSeconds = 0;
  double seconds() const { return forwardSeconds + backwardSeconds; }
};

StageModel stageModel(const CostTable& table, const Program& program);

// stageModel(table, program).seconds(): the predicted iteration time.
double iterationSeconds(const CostTable& table, const Program& program);

}  // namespace hap::synth
