// The simulator: replays a plan's program on its cluster into a timeline of what every rank does
// when (../shared/DESIGN.md §3 "Stages and cost"; docs/simulator.md).
//
// The replay follows the exact stage model of synth/stages.h, but device by device:
// - each pass splits into stages: the forward pass runs the steps in program order with their
//   forward times, the backward pass in reverse order with their backward times; the first step
//   of a pass opens a stage, and a synchronising step opens a new one once the current stage
//   holds a computation;
// - a stage starts on every device when the previous stage has ended on all of them (collectives
//   synchronise); its communicating steps run one after another on every device; then each
//   device runs the stage's computations back to back at its group's times, and waits idle for
//   the slowest device.
// - the gradient buckets (Plan::gradientBuckets) all-reduce one after another beside the backward
//   stages, each once every device has run the backward of its last gradient's step
//   (cost::scheduleBuckets); what they leave after the last backward stage is one more stage, of
//   communication only;
// - a replicated plan (Plan::Replication) ends with one more stage, of communication only and
//   without steps: its gradient sums across machines.
// Everything is recomputed from the steps' times (PlanStep::*Communication, *Sync, *ByGroup);
// the plan's Stage totals and estimate are never read, so a total equal to
// Plan::estimate.iterationSeconds cross-checks the planner (matchesPrediction).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/plan/plan.h"

namespace hap::plan {

enum class EventKind : uint8_t { Compute, Communication, Idle };
std::string_view eventKindName(EventKind k);  // "compute", "communication", "idle"

// One interval of one device's time. A step that takes no time on a device in a pass (a free
// slice, a device with a zero share) has no event there.
struct Event {
  EventKind kind = EventKind::Compute;
  double start = 0, duration = 0;  // seconds from the start of the iteration; duration > 0
  int step = -1;                   // index into Plan::steps; -1 for idle and for a replicated
                                   // plan's gradient sums across machines
  int stage = 0;                   // index into Timeline::stages
  bool backward = false;
  std::string label;  // the step's label (stepLabels); "idle" for idle
  double end() const { return start + duration; }
};

// One rank's iteration. Its events are in start order; communication never overlaps computation
// or idle time, nor computation idle time. busySeconds() + idleSeconds equals the total.
struct DeviceTimeline {
  int rank = 0;
  std::vector<Event> events;
  double computeSeconds = 0, communicationSeconds = 0, idleSeconds = 0;
  double busySeconds() const { return computeSeconds + communicationSeconds; }
};

// One stage as replayed: [start, end()) on every device.
struct StageSpan {
  bool backward = false;
  std::vector<int> steps;  // step indices in execution order (none: gradient sums across machines)
  double start = 0;
  double communicationSeconds = 0;        // every device's communication phase
  std::vector<double> deviceComputation;  // per rank
  double computationSeconds = 0;          // the slowest device's
  int slowestRank = 0;                    // the first rank with the most computation
  // A stage without steps says what it is: "gradient buckets" (what their all-reduces leave after
  // backward) or "across machines" (a replicated plan's gradient sums).
  std::string what;
  double seconds() const { return communicationSeconds + computationSeconds; }
  double end() const { return start + seconds(); }
};

// One gradient bucket's all-reduce (Plan::gradientBuckets), run beside the backward stages.
struct BucketRun {
  int bucket = 0;      // index into Plan::gradientBuckets
  double ready = 0;    // when every device had produced its last gradient
  double start = 0, end = 0;
};

struct Timeline {
  std::vector<DeviceTimeline> devices;  // by rank
  std::vector<StageSpan> stages;        // forward stages, then backward stages, in time order
  double forwardSeconds = 0, backwardSeconds = 0;
  double totalSeconds = 0;  // the end of the last stage
  // The gradient buckets' all-reduces, on every device beside its stages (not in its events);
  // what they leave after the last backward stage is a stage of its own ("gradient buckets").
  std::vector<BucketRun> buckets;
  double exposedGradientSeconds = 0;
};

// Names of the steps for events, traces and reports, one per Plan::steps entry: a computation is
// its op and module scope ("linear layers.0.attn.q"; the op alone at the top level), a conversion
// its instruction and value name ("all-gather input0.1"). `imported` is the model's imported
// graph (as for toJson); throws PlanError when the plan was made for another graph.
std::vector<std::string> stepLabels(const Plan& p, const ir::Graph& imported);
// The same without the model, by ids: "node 12 column", "all-gather value 7".
std::vector<std::string> stepLabels(const Plan& p);

// Replays `p`; `labels` has one entry per step (stepLabels). Throws PlanError naming the field
// when the plan is inconsistent: devices not listed by rank, a segment's ratios not one per
// device, a step in no segment or without a time for some device's group.
Timeline simulate(const Plan& p, const std::vector<std::string>& labels);
Timeline simulate(const Plan& p);  // labelled by stepLabels(p)

// The bottleneck device: the rank with the most busy time (the first of equals).
int bottleneckRank(const Timeline& t);

// Whether the simulated total equals the plan's predicted iteration time, relative to it.
inline constexpr double kPredictionTolerance = 1e-9;
bool matchesPrediction(const Plan& p, const Timeline& t);

}  // namespace hap::plan
