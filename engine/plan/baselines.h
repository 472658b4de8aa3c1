// The plans engineers would otherwise use, priced under the same cost model as HAP's
// (../shared/DESIGN.md §1: "compare against data-parallel baselines"; issue 4 item 5).
//
//   dp-ev     data parallelism, even batch shares: replicated parameters, inputs split on the
//             batch dimension, gradients all-reduced (the search restricted to those forms).
//   dp-cp     the same with shares proportional to each device's peak FLOP/s.
//   fsdp      fully sharded data parallelism (ZeRO-3): every parameter stored as shards along
//             dimension 0 with its gradient and optimizer state, all-gathered before each use in
//             forward and again in backward, gradients reduce-scattered; proportional shares.
//             The gathered copies are transient: memory holds the two largest at once (the one
//             in use and the prefetched next), not every parameter.
//   megatron  Megatron-style tensor parallelism inside each machine (attention q/k/v and the
//             first MLP projections column-parallel, the attention output and the second MLP
//             projection row-parallel; every other op as the search chooses) and data parallelism
//             across machines (an even batch per machine; each tensor-parallel rank all-reduces
//             its gradient shard with its peers over the network). Applicable when the model has
//             such blocks, found by the graph's structure whatever the modules are called
//             (findMegatronBlocks), and is given at the per-machine batch; the slowest machine
//             type bounds the iteration.
// Each baseline but megatron is a single SPMD program over all devices that the runtime executes
// as it executes HAP's. Megatron cuts tensors two ways at once (batch across machines, features
// inside one): it is priced by composing a per-machine program with the cross-machine gradient
// all-reduce, and executed as a replicated plan (Plan::Replication, planner.h makeMegatronPlan).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/cost/cluster.h"
#include "engine/ir/graph.h"
#include "engine/plan/plan.h"
#include "engine/synth/cost_table.h"
#include "engine/synth/search.h"
#include "engine/synth/theory.h"

namespace hap::plan {

// The forms data parallelism allows: parameters whole on every device (no parameter shards, no
// SFB), inputs split on the batch dimension only. `base` keeps its collective-method choices.
synth::Restrictions dataParallelRestrictions(synth::Restrictions base = {});
// The forms fully sharded data parallelism allows: every parameter stored as shards along
// dimension 0 and gathered whole for every use (no replicas, no tensor-parallel variants, no
// SFB), inputs split on the batch dimension only. `base` keeps its collective-method choices.
synth::Restrictions fullyShardedRestrictions(synth::Restrictions base = {});

struct BaselineOptions {
  synth::CostOptions cost;
  synth::SearchOptions search;  // cancellation and budgets only; pins are the baseline's own
};

// A program's predicted iteration time (stage model) and memory per device at the table's shares.
Estimate estimateOf(const synth::CostTable& table, const synth::Program& program, const synth::CostOptions& options);

Plan::Baseline dataParallelBaseline(const synth::Theory& theory, const cost::Cluster& cluster,
                                    const std::vector<double>& shares, const std::string& name,
                                    const BaselineOptions& options);
Plan::Baseline fsdpBaseline(const synth::Theory& theory, const cost::Cluster& cluster,
                            const std::vector<double>& shares, const BaselineOptions& options);
// Machine m of `c` alone, as a cluster of its own (ranks renumbered from 0, no network).
cost::Cluster machineCluster(const cost::Cluster& c, int m);
// Bytes of each parameter's gradient piece on one device of a program (sharded ones: 1/k).
std::vector<double> gradientPieceBytes(const synth::CostTable& table, const synth::Program& p,
                                       const synth::CostOptions& options);
// The cross-machine gradient sums of data parallelism over `cluster`'s machines around a
// per-machine program: one ring all-reduce per gradient piece among the machines, the k ranks of
// a machine sharing its NIC.
double crossMachineGradientSeconds(const cost::Cluster& cluster, const std::vector<double>& gradientBytes);

// The projections Megatron splits, found by the graph's structure, not by module names. A
// projection is aten::linear, or matmul/mm/addmm, whose weight is a parameter (or a slice or
// transpose of one, as nn.MultiheadAttention's cross-attention reads its packed in_proj_weight).
//   attention  a softmax whose input is a product (matmul, bmm, baddbmm) of two operands,
//              possibly scaled, masked, biased or viewed, and whose output, possibly after dropout,
//              is the first operand of a second product. Each of the three operands (q, k, v)
//              traces back through views, transposes, permutes, chunk/split/select, scalings and
//              rotary mixing to one projection, and the second product's output through views,
//              transposes and permutes to the input of a projection. The q, k and v projections
//              (one when fused, as nn.MultiheadAttention's in_proj or a qkv linear) go
//              column-parallel, the output projection row-parallel.
//   MLP        a projection whose input is an elementwise chain over the outputs of projections
//              that read one input: at least one activation (gelu, relu, silu, tanh, sigmoid, ...)
//              with dropout, scalings, and products of such chains (SwiGLU: silu(w1 x) * w3 x).
//              It must be a residual sublayer, as in a transformer (its output, after dropout,
//              layer scale or stochastic depth, is added to a value its input derives from), so a
//              classifier's stack of linears is not one. The first projections go column-parallel,
//              the last row-parallel.
// Heads are cut at head granularity by the dimension classes that views into heads give the
// projections' features (balance::executed rounds the shares per class): 12 heads on 8 devices
// run 2 or 1 each. A fused qkv projection's output is cut as one tensor, so its chunks are gathered
// before the heads (the rules split no strided pieces): dearer than Megatron's permuted weight.
struct MegatronBlocks {
  struct Split {
    ir::NodeId node = ir::kNone;
    bool column = true;   // column-parallel; else row-parallel
    std::string variant;  // the rule variant that does it: linear's column/row, matmul's col/inner
    std::string role;     // "attention q", "attention kv", "attention out", "MLP in", "MLP out", ...
  };
  std::vector<Split> splits;  // in node order
  int attention = 0, mlp = 0;
  // Why each candidate that came close was not taken ("the softmax at ... has no output
  // projection"), for the not-applicable message.
  std::vector<std::string> nearMisses;
  // "no attention block (...) and no MLP (...) found" with the near misses: why Megatron does not apply.
  std::string notFound() const;
};
MegatronBlocks findMegatronBlocks(const ir::Graph& g);

// Megatron's per-machine program on one kind of machine (a device type and count), found on the
// first machine of that kind alone.
struct MachineProgram {
  int machine = 0;  // the first machine of its kind
  int deviceType = 0, count = 0;
  std::unique_ptr<cost::Cluster> cluster;  // that machine alone (machineCluster); the table refers to it
  std::unique_ptr<synth::CostTable> table;
  synth::Program program;
  synth::SearchStats stats;
  double seconds = 0;  // its iteration time on that machine
  bool sameKind(const cost::Machine& m) const { return m.deviceType == deviceType && m.count == count; }
};
// One per kind of machine of `cluster`, in machine order, on `theory` (the model at one machine's
// batch). Throws synth::SearchError (MegatronBlocks::notFound) when the model has no such block.
std::vector<MachineProgram> megatronPrograms(const synth::Theory& theory, const cost::Cluster& cluster,
                                             const BaselineOptions& options);
// The megatron baseline of those programs: every machine runs its kind's, the slowest bounds the
// iteration, plus the cross-machine gradient all-reduce.
Plan::Baseline megatronBaseline(const std::vector<MachineProgram>& programs, const cost::Cluster& cluster,
                                const BaselineOptions& options);
// `machineBatch` is the model imported at the global batch divided by the number of machines.
// Not applicable (Baseline::note says which structure was not found, estimate.fits false)
// without such blocks.
Plan::Baseline megatronBaseline(const ir::Graph& machineBatch, const cost::Cluster& cluster,
                                const BaselineOptions& options);

}  // namespace hap::plan
