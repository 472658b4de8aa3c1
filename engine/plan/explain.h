// Human-readable reports of a plan: the summary table `hap plan` prints, and the stage-by-stage
// program of `hap plan --explain`.
#pragma once

#include <string>

#include "engine/ir/graph.h"
#include "engine/plan/plan.h"

namespace hap::plan {

// Predicted iteration time and memory of HAP's plan and each baseline side by side (with the
// speedup of HAP over each), then time and memory per device type.
std::string formatSummary(const Plan& p);

// The program stage by stage: each collective with its tensor, forms and cost, each computation
// with its variant and the sharding of its inputs and outputs.
std::string formatExplain(const ir::Graph& g, const Plan& p);

}  // namespace hap::plan
