// Where the cost model's figures come from, for `hap plan --explain`: per device type and op
// family, whether the measured profile (profile.h) or the inventory's roofline prices the graph's
// ops, and per collective whether a fitted link or the inventory's link prices it. Two plans of
// one model on one inventory, with and without a profile, differ exactly where these say
// "profile".
#pragma once

#include <string>

#include "engine/cost/cluster.h"
#include "engine/ir/graph.h"

namespace hap::cost {

// A text table, one block per device type of `cluster`, then the collectives; ops with no work
// (views) are left out.
std::string formatPricing(const ir::Graph& g, const Cluster& cluster);

}  // namespace hap::cost
