// A cluster inventory as JSON, in the YAML file's schema with every quantity in base units
// (FLOP/s, bytes, bytes/s, seconds): plans embed it, so a plan is self-contained
// (../shared/DESIGN.md §4).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/cost/cluster.h"

namespace hap::cost {

nlohmann::ordered_json clusterToJson(const Cluster& cluster);

// Reads it back through the YAML parser (JSON is YAML), so the same checks apply; `origin` names
// where it came from in messages (e.g. "plan.json: cluster.inventory"). Throws ClusterError.
Cluster clusterFromJson(const nlohmann::json& inventory, const std::string& origin);

}  // namespace hap::cost
