// The pipeline planner (docs/pipeline.md "Search"): chooses the number of stages S, the stage
// boundaries (at segment boundaries), each stage's device group (a contiguous run of units:
// whole machines in the cluster's order, or single devices of a one-machine cluster) and the
// micro-batch count m (a divisor of the batch), and plans every stage with today's synthesis.
//
// For every (S, m) tried, a dynamic programme over (segments covered, units used, stages placed)
// finds the partition of least bottleneck (the largest of every stage's per-micro-batch F + B and
// every link's transfer, as the 1F1B recurrence's steady state runs them side by side), ties
// broken by the least sum (F + B and both transfers: what fill and drain pay); stage s must fit its device memory with
// min(S - s, m) micro-batches in flight. Every candidate stage (segment range x group x m) is
// priced by the A* search at shares proportional to peak FLOP/s (PartitionOptions::searchRatios),
// from a cache keyed by the stage graph's structure (identical layers), the group's signature
// (device types per machine) and m. Pruning is sound for that objective: an incumbent (equal
// unit counts, segments split by compute) bounds the bottleneck, and a stage, or the rest of the
// model on the rest of the units, whose roofline lower bound (forward FLOPs over the group's peak
// FLOP/s, forward bytes over its memory bandwidth) exceeds it is not priced. The best partitions
// of all (S, m) are then ranked by the 1F1B recurrence (pipeline_cost.h); the `finalists` best
// (a further one only within 10% of the first) are planned stage by stage with the requested options (plan::makePlan: ratios, MILP, ...), and
// the cheapest of those by the recurrence is the plan. On clusters of more than 16 units the
// group boundaries lie on a grid (PartitionOptions::unitGranularity), so the search is exact over
// that grid only.
#pragma once

#include <functional>
#include <memory>

#include "engine/cost/cluster.h"
#include "engine/ir/graph.h"
#include "engine/pipeline/pipeline_plan.h"
#include "engine/plan/planner.h"

namespace hap::pipeline {

struct PartitionOptions {
  int stages = 0;     // 0: auto, every S in [2, maxStages]; N >= 2: exactly N
  int maxStages = 8;  // auto's bound (also bounded by the segments and the units)
  int microBatches = 0;  // 0: for each S the smallest divisors of the batch >= 2S and >= 4S
  plan::PlanOptions stagePlan;  // how each chosen stage is planned (segments, ratios, cost, search)
  plan::PlanOptions::Ratios searchRatios = plan::PlanOptions::Ratios::Proportional;
  int finalists = 2;
  // Group boundaries: after every unit up to 16 units; beyond, every ceil(U / 16)-th unit and
  // wherever the device type changes (0: so; N: every N-th). A coarser grid prices fewer groups.
  int unitGranularity = 0;
};

// The model imported at 1/m of its batch (micro-batch shapes), with the same nodes in the same
// order. m = 1 may return the model itself.
using MicroBatchGraph = std::function<std::shared_ptr<const ir::Graph>(int microBatches)>;

// Plans `model` as a pipeline on `cluster`. The result's `stages` is empty when no pipeline is
// possible (one segment or one unit, no valid cut, nothing fits), `why` then saying so. The SPMD
// comparison (spmdSeconds, why) is the caller's (planPipelineOrSpmd). Throws hap::Error for a
// micro-batch count that does not divide the batch or a stage count out of range, and
// synth::SearchError when cancelled.
PipelinePlan planPipeline(const ir::Graph& model, const MicroBatchGraph& atMicroBatches, const cost::Cluster& cluster,
                          const PartitionOptions& options);

// The global batch: the largest dimension 0 among the model's inputs (0 when none has one).
int64_t batchOf(const ir::Graph& model);

// Per-micro-batch figures of a stage's SPMD plan: forward and backward stage seconds, exposed
// gradient seconds, and per device fixed bytes, activation bytes and capacity.
StageFigures figuresOf(const plan::Plan& stagePlan);

}  // namespace hap::pipeline
