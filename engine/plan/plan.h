// A plan: the distributed program with exact shard lengths, its predicted cost and memory, the
// baselines and search statistics (../shared/DESIGN.md §4 "Plan file"). Self-contained: with the
// model file, a worker needs nothing else. Serialised as JSON by plan_json.h; checked by
// verifier.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/cost/bucketed_gradients.h"
#include "engine/cost/cluster.h"
#include "engine/ir/graph.h"
#include "engine/rules/relation.h"
#include "engine/rules/rule.h"
#include "engine/synth/memory.h"

namespace hap::plan {

struct PlanDevice {
  int rank = 0;
  std::string machine, host, type;
  double capacityBytes = 0;     // device memory
  double memoryBytes = 0;       // predicted use (memory.h)
  // memoryBytes by kind; all zero in plans written before the breakdown was recorded.
  synth::MemoryBreakdown memory;
  double computeSeconds = 0;    // predicted computation per iteration (forward + backward; no
                                // communication)
  int group = 0;                // devices of one group have one type and the same ratios in
                                // every segment, hence the same step times (PlanStep::*ByGroup)
};

// A segment: the nodes that share one ratio vector (ir/segments.h).
struct Segment {
  std::string name;            // "layers.3", "prologue", "part2", "all"
  std::vector<double> ratios;  // per rank, summing to 1
};

// A value in one form: the relation and, for G(d), the exact length of dimension d per rank.
struct Form {
  ir::ValueId value = ir::kNone;
  rules::Rel rel = rules::kIdentity;
  std::vector<int64_t> lengths;  // G(d) only: one per rank, summing to the dimension's size
};

struct PlanStep {
  enum class Kind : uint8_t { Convert, Compute };
  Kind kind = Kind::Compute;
  ir::NodeId node = ir::kNone;  // Compute: the node; Convert: the consumer it prepares
  // Compute: the rule variant's name, and its input and output forms in the variant's order.
  std::string variant;
  bool sfb = false;
  // Compute: what the runtime must do beyond the op (the variant's rules::Execution). Not in the
  // plan file: the planner copies it from the rule, and verification (plan/verifier.h) from the
  // rule it matches the step to, so it is always the rule's own.
  rules::Execution execution = rules::Execution::Plain;
  std::vector<Form> inputs, outputs;
  // Convert: the instruction ("all-gather", "load-shard", ...; synth::conversionName), the method
  // of padded/grouped collectives ("padded", "grouped" or ""), and the forms before and after.
  std::string instruction, method;
  Form from, to;
  int segment = 0;  // Compute: the node's segment; Convert: the value's
  // Predicted times (synth/stages.h): communication per pass, synchronising in that pass or not;
  // computation per device group and pass (empty for a conversion).
  double forwardCommunication = 0, backwardCommunication = 0;
  bool forwardSync = false, backwardSync = false;
  // replicate-parameter: its gradient's all-reduce, run in a gradient bucket while backward goes
  // on (Plan::gradientBuckets), so neither in backwardCommunication nor synchronising. 0 in plans
  // written before the buckets were priced: those hold it in backwardCommunication.
  double gradientSeconds = 0;
  std::vector<double> forwardByGroup, backwardByGroup;
  // The slowest device's forward and backward time, communication included (for display).
  double forwardSeconds = 0, backwardSeconds = 0;
  double seconds() const { return forwardSeconds + backwardSeconds; }
};

// A stage of the exact stage model (synth/stages.h): a collective phase, then the computations up
// to the next collective. A forward stage runs steps [first, end) in order; a backward stage runs
// their backward in reverse.
struct Stage {
  bool backward = false;
  int firstStep = 0, endStep = 0;
  double communicationSeconds = 0;
  std::vector<double> groupComputation;  // per device group
  double computationSeconds = 0;         // the slowest group's
  double seconds() const { return communicationSeconds + computationSeconds; }
};

struct Estimate {
  double iterationSeconds = 0;
  std::vector<double> memoryBytes;  // per rank
  bool fits = true;                 // every rank's memory within its capacity
  double maxMemoryBytes() const {
    double most = 0;
    for (double b : memoryBytes) most = std::max(most, b);
    return most;
  }
};

// A forward argument as planned: the model is re-imported with these shapes (hap simulate, the
// runtime).
struct PlanInput {
  std::string name;
  ir::DType dtype = ir::DType::Float32;
  ir::Shape shape;
  std::optional<int64_t> low, high;  // an integer input's declared range [low, high), if any
};

// A replicated plan (`hap plan --baseline megatron`: tensor parallelism inside each machine, data
// parallelism across machines). The program (steps, segments, lengths, devices) is one machine's:
// every one of `machines` equal-sized machines of the cluster runs it on its own slice of the
// global batch, and after backward every parameter piece's gradient is summed with the same
// piece on the other machines. World rank r is program rank r % k on machine r / k
// (k = Plan::devices.size(); the cluster lists its devices machine by machine).
// Exactness (../shared/DESIGN.md §3) holds because the model is data parallel across machines,
// which the planner proves with the data-parallel rules (plan/replication.h): each machine computes
// the single-device program's values on its rows, random ops draw the global batch's numbers and
// keep the machine's rows, and the global loss is lossWeight × the sum of the machines' losses.
struct Replication {
  int machines = 1;  // 1: not replicated
  // Per plan input (Plan::inputs, shapes at one machine's batch): the dimension the machines split
  // (the batch), or -1 when every machine reads the whole input. The global batch has
  // `machines` × the machine's length there.
  std::vector<int> inputDims;
  // Every random node of the planned graph (dropout, rand_like, ...) with the output dimension
  // the machines split, or -1 when the output has no batch dimension.
  struct RandomCut {
    ir::NodeId node = ir::kNone;
    int dim = -1;
  };
  std::vector<RandomCut> randomCuts;
  // The global loss is lossWeight × Σ over machines of the machine's loss (1/machines for a mean
  // over the batch, 1 for a sum).
  double lossWeight = 1;
  // A class loss's mean counts the targets that are not ignore_index: lossWeight holds when every
  // machine counts as many. `lossTargets` names the input holding the targets ("" for other
  // losses); the runtime weighs each machine's loss by its count instead where the input's range
  // admits ignoreIndex.
  std::string lossTargets;
  int64_t ignoreIndex = -100;
  // Predicted time of the cross-machine gradient sums (part of Estimate::iterationSeconds).
  double allReduceSeconds = 0;
  bool replicated() const { return machines > 1; }
};

struct Plan {
  // Model identity.
  std::string modelPath, modelSha256;
  std::vector<PlanInput> inputs;
  int64_t parameters = 0;
  int nodes = 0;  // of the planned graph: the imported one with reshards (planGraph)
  // Cluster and ratios.
  cost::Cluster cluster;  // the whole inventory: a plan is self-contained
  std::vector<PlanDevice> devices;
  std::vector<Segment> segments;
  std::vector<int> importedNodeSegment;  // the segment of every node of the imported graph
  std::string segmentation;              // how segments were chosen ("layer", "none", "auto:4")
  std::string ratioPolicy;  // "even", "proportional", "lp", "milp", "fixed"
  // What was searched: "hap" (every rule variant), data parallelism only ("dp-ev", "dp-cp",
  // "dp" with other ratios), fully sharded data parallelism ("fsdp"; PlanOptions::strategy), or
  // Megatron's tensor parallelism inside machines, replicated across them ("megatron").
  std::string strategy = "hap";
  // Set when HAP chose a baseline's simpler program over its own cheapest one
  // (PlanOptions::preferSimplerWithin): which, the two prices and collective calls, and why.
  std::string choice;
  // The Q/B alternation (ratio policies "lp" and "milp"): the plan's cost after each step, and
  // why the LP (or the MILP) found no ratios that fit in memory, if it did not.
  struct HistoryEntry {
    std::string step;  // "search", "search from even", "lp" or "milp"
    double seconds = 0;
    bool fits = true;
    std::string note;  // "milp": CBC's outcome (optimal, time limit) and which lengths were kept
  };
  std::vector<HistoryEntry> history;
  std::string balanceNote;
  int lpSolves = 0;
  double lpSeconds = 0;
  int milpSolves = 0;
  double milpSeconds = 0;
  // The program.
  std::vector<PlanStep> steps;
  std::vector<Stage> stages;
  // The gradient buckets the runtime all-reduces replicated parameters' gradients in, in the
  // order it starts them (synth::StageModel::buckets): the replicate-parameter steps each sums
  // and its all-reduce's time. The iteration pays what they leave after the last backward stage.
  struct GradientBucket {
    std::vector<int> steps;
    double seconds = 0;
  };
  std::vector<GradientBucket> gradientBuckets;
  double exposedGradientSeconds = 0;  // as the planner priced it (estimate includes it)
  // The bucket size they were formed with (hap plan --bucket-mb): hap-worker's default.
  double gradientBucketBytes = static_cast<double>(cost::kGradientBucketBytes);
  Estimate estimate;
  Replication replication;  // data parallelism across machines around the program (strategy "megatron")
  // Baselines under the same cost model (plan/baselines.h): "dp-ev", "dp-cp", "fsdp", "megatron".
  struct Baseline {
    std::string name;
    Estimate estimate;
    bool applicable = true;
    std::string note;  // how it was priced, or why it does not apply
  };
  std::vector<Baseline> baselines;
  // Ops without a sharding rule, computed replicated on every device: one entry per op, naming
  // its first node ("no sharding rule for aten::lstm (1 node); planned replicated").
  struct Replicated {
    ir::NodeId node = ir::kNone;
    std::string message;
  };
  std::vector<Replicated> unsharded;
  // The share of the model's forward FLOPs in those ops (0 to 1): computed whole on every device.
  double unshardedFlopsShare = 0;
  // Search statistics. provenOptimal is false when the beam search produced the program, and
  // notOptimal then says why (synth::SearchStats::notOptimal).
  bool provenOptimal = true;
  std::string notOptimal;
  int64_t expanded = 0, generated = 0, stored = 0;
  double searchSeconds = 0;
};

// Every rank the plan runs on: Plan::devices, or for a replicated plan each machine's copy of them
// (rank, machine and host from the cluster; the program rank's predictions).
std::vector<PlanDevice> worldDevices(const Plan& plan);

// The graph a plan's node and value ids refer to: the imported graph with a hap::reshard node
// wherever a value crosses into another segment (ir::insertReshards over importedNodeSegment).
// Throws PlanError (plan_json.h) when the plan was made for a graph with another node count.
ir::Graph planGraph(const ir::Graph& imported, const Plan& plan);

}  // namespace hap::plan
