// `hap plan`'s options as one value, and planning a model file with them: the one path from
// options to a verified plan that the CLI and the app share, so that the same options give the
// same plan, byte for byte in its JSON but for the two wall-clock timings (search.seconds and
// balance.lp_seconds).
//
// Built into hap_import: a Megatron plan re-imports the model at one machine's batch.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/ir/graph.h"
#include "engine/plan/plan.h"
#include "engine/plan/planner.h"
#include "engine/synth/search_events.h"

namespace hap::plan {

// Each field is the `hap plan` option of the same name, with its default.
struct PlanRequest {
  std::string ratios = "lp";         // --ratios: lp | milp | even | proportional | S0,S1,... (HAP's plan only)
  double milpSeconds = 2;            // --milp-seconds: CBC's time limit per solve (--ratios milp)
  bool evenStart = true;             // false: --no-even-start (lp, milp: search from proportional shares only)
  std::string segments;              // --segments: layer | scope:N | auto:K | none; empty: the
                                     // default, "layer" for HAP's plan and "none" for a baseline
  std::string collectives = "auto";  // --collectives: auto | padded | grouped
  std::string baseline;              // --baseline: "" (HAP's plan) | dp-ev | dp-cp | fsdp | megatron
  std::vector<std::string> pins;     // --pin PATTERN=VARIANT, in order (a later pin wins)
  int64_t maxStates = 2'000'000;     // --max-states
  int beamWidth = 2000;              // --beam-width
  bool baselines = true;             // false: --no-baselines
  double preferSimplerWithin = 0.10; // --prefer-simpler-within (PlanOptions::preferSimplerWithin)
  // --bucket-mb: the gradient buckets priced (synth::CostOptions::gradientBucketBytes), recorded
  // in the plan, whose workers use it unless given their own --bucket-mb.
  double bucketMiB = 4;

  std::string effectiveSegments() const { return !segments.empty() ? segments : baseline.empty() ? "layer" : "none"; }
  // The options as `hap plan` arguments (those that differ from the defaults), to show the
  // equivalent command line.
  std::vector<std::string> arguments() const;
  bool operator==(const PlanRequest&) const = default;
};

// The baselines `--baseline` accepts, in the order of `hap compare`'s rows.
const std::vector<std::string>& baselineNames();

// The request as PlanOptions for `cluster`. Throws hap::Error naming the option for a malformed
// value (ratios, segments, collectives, baseline, pins, bounds).
PlanOptions planOptions(const PlanRequest& request, const cost::Cluster& cluster);

// What planning produced: the verified plan and the imported graph its ids refer to (toJson,
// formatExplain, stepLabels take it): the model as given, or for a Megatron plan the model at one
// machine's batch.
struct PlannedModel {
  Plan plan;
  std::shared_ptr<const ir::Graph> graph;
};

// Plans `model` (imported from model->sourceFile with `importOptions`, which a Megatron plan
// and the Megatron baseline reuse at one machine's batch) on `cluster` as `request` says, and
// verifies the plan. HAP's plan with baselines prices all four, as `hap compare` does.
// `listener` and `cancel` reach every search, LP step and re-import. Throws hap::Error: a
// malformed request, synth::SearchError (no program, cancelled), NotReplicable (Megatron does not
// apply), or a plan that fails verification (a bug, said so).
PlannedModel planModel(std::shared_ptr<const ir::Graph> model, const import::ImportOptions& importOptions,
                       const cost::Cluster& cluster, const PlanRequest& request,
                       synth::SearchListener* listener = nullptr, const std::atomic<bool>* cancel = nullptr);

}  // namespace hap::plan
