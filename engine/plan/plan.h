// A plan: the distributed program with exact shard lengths, its predicted cost and memory, the
// baselines and search statistics (DESIGN.md §4 "Plan file"). Self-contained: with the model
// file, a worker needs nothing else. Serialised as JSON by plan_json.h; checked by verifier.h.
#pragma once

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
  double computeSeconds = 0;    // predicted busy time per iteration (forward + backward)
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
  double forwardSeconds = 0, backwardSeconds = 0;
  double seconds() const { return forwardSeconds + backwardSeconds; }
};

struct Stage {  // a collective phase, then the computations up to the next collective
  int firstStep = 0, endStep = 0;  // [first, end) in Plan::steps
  double communicationSeconds = 0;
  double computationSeconds = 0;   // sum over its nodes of the slowest device's time
};

struct Estimate {
  double iterationSeconds = 0;
  std::vector<double> memoryBytes;  // per rank
  bool fits = true;                 // every rank's memory within its capacity
};

struct Plan {
  // Model identity.
  std::string modelPath, modelSha256;
  std::vector<std::string> inputs;  // "x int64 [64, 128]"
  int64_t parameters = 0;
  int nodes = 0;
  // Cluster and ratios (one segment until segments arrive).
  cost::Cluster cluster;  // the whole inventory: a plan is self-contained
  std::vector<PlanDevice> devices;
  std::vector<double> ratios;
  std::string ratioPolicy;  // "even", "proportional", "lp"
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
  // Baselines under the same cost model, by name ("dp-ev", "dp-cp").
  struct Baseline {
    std::string name;
    Estimate estimate;
  };
  std::vector<Baseline> baselines;
  // Search statistics. provenOptimal is false when the beam search produced the program.
  bool provenOptimal = true;
  int64_t expanded = 0, generated = 0, stored = 0;
  double searchSeconds = 0;
};

}  // namespace hap::plan
