// A plan: the distributed program with exact shard lengths, its predicted cost and memory, the
// baselines and search statistics (DESIGN.md §4 "Plan file"). Self-contained: with the model
// file, a worker needs nothing else. Serialised as JSON by plan_json.h; checked by verifier.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/cost/cluster.h"
#include "engine/ir/graph.h"
#include "engine/synth/fact.h"

namespace hap::plan {

struct PlanDevice {
  int rank = 0;
  std::string machine, host, type;
  double capacityBytes = 0;     // device memory
  double memoryBytes = 0;       // predicted use (memory.h)
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
  synth::Rel rel = synth::kIdentity;
  std::vector<int64_t> lengths;  // G(d) only: one per rank, summing to the dimension's size
};

struct PlanStep {
  enum class Kind : uint8_t { Convert, Compute };
  Kind kind = Kind::Compute;
  ir::NodeId node = ir::kNone;  // Compute: the node; Convert: the consumer it prepares
  // Compute: the rule variant's name, and its input and output forms in the variant's order.
  std::string variant;
  bool sfb = false;
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
  std::string ratioPolicy;  // "even", "proportional", "lp", "fixed"
  // What was searched: "hap" (every rule variant), data parallelism only ("dp-ev", "dp-cp",
  // "dp" with other ratios), or fully sharded data parallelism ("fsdp"; PlanOptions::strategy).
  std::string strategy = "hap";
  // The Q/B alternation (ratio policy "lp"): the plan's cost after each step, and why the LP
  // found no ratios that fit in memory, if it did not.
  struct HistoryEntry {
    std::string step;  // "search" or "lp"
    double seconds = 0;
    bool fits = true;
  };
  std::vector<HistoryEntry> history;
  std::string balanceNote;
  int lpSolves = 0;
  double lpSeconds = 0;
  // The program.
  std::vector<PlanStep> steps;
  std::vector<Stage> stages;
  Estimate estimate;
  // Baselines under the same cost model (plan/baselines.h): "dp-ev", "dp-cp", "fsdp", "megatron".
  struct Baseline {
    std::string name;
    Estimate estimate;
    bool applicable = true;
    std::string note;  // how it was priced, or why it does not apply
  };
  std::vector<Baseline> baselines;
  // Search statistics. provenOptimal is false when the beam search produced the program.
  bool provenOptimal = true;
  int64_t expanded = 0, generated = 0, stored = 0;
  double searchSeconds = 0;
};

// The graph a plan's node and value ids refer to: the imported graph with a hap::reshard node
// wherever a value crosses into another segment (ir::insertReshards over importedNodeSegment).
// Throws PlanError (plan_json.h) when the plan was made for a graph with another node count.
ir::Graph planGraph(const ir::Graph& imported, const Plan& plan);

}  // namespace hap::plan
