// The plans engineers would otherwise use, priced under the same cost model as HAP's
// (DESIGN.md §1: "compare against data-parallel baselines"; issue 4 item 5).
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
//             first FFN linear column-parallel, the attention output and the second FFN linear
//             row-parallel; every other op as the search chooses) and data parallelism across
//             machines (an even batch per machine; each tensor-parallel rank all-reduces its
//             gradient shard with its peers over the network). Applicable when the model has
//             such linears (module scopes *.attn.{q,k,v,out}, *.ffn.{fc1,fc2}) and is given at
//             the per-machine batch; the slowest machine type bounds the iteration.
// Each baseline but megatron is a single SPMD program over all devices that the runtime can
// execute as it executes HAP's. Megatron cuts tensors two ways at once (batch across machines,
// features inside one), which a plan's one cut per tensor cannot express; it is priced by
// composing a per-machine plan with the cross-machine all-reduce (the communicator's per-machine
// and per-local-index groups are what running it would use).
#pragma once

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
// `machineBatch` is the model imported at the global batch divided by the number of machines.
// Not applicable (Baseline::note says why, estimate.fits false) without such linears.
Plan::Baseline megatronBaseline(const ir::Graph& machineBatch, const cost::Cluster& cluster,
                                const BaselineOptions& options);

}  // namespace hap::plan
