// Plans a model on a cluster: theory, cost table, A* search, baselines, and the Plan with exact
// lengths, stages and memory (../shared/DESIGN.md §2 data flow, steps 2-4 with fixed ratios).
#pragma once

#include <atomic>
#include <string>

#include "engine/balance/alternation.h"
#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/ir/graph.h"
#include "engine/ir/segments.h"
#include "engine/plan/plan.h"
#include "engine/synth/search.h"

namespace hap::plan {

struct PlanOptions {
  enum class Ratios { Even, Proportional, Optimised, WholeLengths, Fixed };
  // Shares of the devices: equal; proportional to each device's peak FLOP/s for the model's
  // dtype; optimised ("lp"): proportional first (and even too, where that differs and
  // `evenStart`: the better start wins), then alternating the search and the LP over the shares
  // (balance/alternation.h) until neither improves the plan, the lengths then rounded from the
  // shares; whole lengths ("milp"): the same, then whole lengths per dimension class by MILP
  // alternating with the search (AlternationOptions::wholeLengths), priced exactly; or fixed:
  // `fixedShares`, in every segment (tests and experiments; zero shares allowed).
  Ratios ratios = Ratios::Optimised;
  bool evenStart = true;             // Optimised / WholeLengths: also search from even shares
  balance::ShareMilpOptions milp;    // WholeLengths: CBC's time limit per solve
  std::vector<double> fixedShares;  // Fixed: one per device, non-negative, summing to 1
  int maxRounds = 10;  // alternation rounds (Optimised)
  // Segments, each with its own ratios (ir/segments.h); `segmentText` records the choice in the
  // plan ("layer", "none", "scope:2", "auto:8").
  ir::SegmentOptions segments;
  std::string segmentText = "layer";
  // What to search: HAP's whole space, or a baseline's forms only (plan/baselines.h), to run and
  // measure beside HAP's plan (`hap plan --baseline`). DataParallel with Even or Proportional
  // ratios is the DP-EV or DP-CP baseline; FullySharded the FSDP baseline's program, executed as
  // the runtime executes any plan (autograd keeps each gathered parameter until its backward, so
  // it does not re-gather as ZeRO-3 does: faster and larger than the FSDP row of `hap compare`).
  enum class Strategy { Hap, DataParallel, FullySharded };
  Strategy strategy = Strategy::Hap;
  synth::CostOptions cost;
  synth::SearchOptions search;  // listener, cancellation, memory bound
  bool baselines = true;        // also price DP-EV, DP-CP and FSDP (plan/baselines.h)
  // Strategy Hap with baselines: where the better data-parallel baseline (DP-CP or DP-EV) is
  // priced within this fraction of HAP's own program and makes fewer collective calls, the plan
  // is that baseline's program (Plan::choice says so). The cost model's ranking of close plans
  // is not to be trusted further than its error: after calibration, 11.8% held-out step error
  // (docs/benchmarks.md, cost-model accuracy); a program of fewer calls loses less when the
  // model is off. The baseline's program is taken as well where it is priced below HAP's
  // search result outright (the search adds gradient all-reduces whole; the stage model overlaps
  // them with backward). 0: always the search's program. Not applied with pins or fixed shares.
  double preferSimplerWithin = 0.10;
  // The model imported at the global batch divided by the cluster's machine count, for the
  // Megatron baseline (nullptr: no Megatron baseline).
  const ir::Graph* machineBatchGraph = nullptr;
};

// The model file's identity: path and SHA-256 of its bytes.
// `cancel` (may be null) stops it between megabytes with synth::SearchError("... cancelled").
std::string sha256File(const std::string& path, const std::atomic<bool>* cancel = nullptr);

// Plans `g` (imported from g.sourceFile) on `cluster`: segments it, inserts reshards at the
// boundaries (planGraph), searches and balances. Throws synth::SearchError.
Plan makePlan(const ir::Graph& g, const cost::Cluster& cluster, const PlanOptions& options);

// Megatron's plan, executable (`hap plan --baseline megatron`): on every machine of `cluster` the
// tensor-parallel program of megatronBaseline (plan/baselines.h) at even shares, found for the
// slowest machine type, replicated across the machines with data parallelism (Plan::Replication).
// `global` is the model at the global batch, `machineBatch` at 1/machines of it
// (import::dividedBatch). Only options.cost, options.search (budgets, cancellation) and
// options.baselines (also price the megatron baseline) are used. Throws NotReplicable
// (plan/replication.h) when the machines differ in device count, the model has no Megatron linears
// or is not data parallel across machines.
Plan makeMegatronPlan(const ir::Graph& global, const ir::Graph& machineBatch, const cost::Cluster& cluster,
                      const PlanOptions& options);

// How to re-import a plan's model as planned (hap simulate, the runtime): the plan's input shapes,
// keeping the file's dtype and value ranges (token ids, labels) where it lists the input.
import::ImportOptions importOptionsFor(const Plan& plan);

// The further starts of the Optimised policy besides proportional shares
// (balance::AlternationOptions::moreStarts): even shares, where they differ.
std::vector<balance::Start> furtherStarts(const ir::Graph& g, const cost::Cluster& cluster);

// The shares `policy` gives the cluster's devices.
std::vector<double> ratiosFor(const ir::Graph& g, const cost::Cluster& cluster,
                              PlanOptions::Ratios policy);

}  // namespace hap::plan
