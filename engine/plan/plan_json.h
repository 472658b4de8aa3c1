// The plan file: JSON with "format": "hap-plan", "version": 2 (docs/formats.md "Plan file").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/plan/plan.h"

namespace hap::plan {

// A plan file that cannot be read (malformed JSON, wrong format or version, missing field).
class PlanError : public Error {
 public:
  using Error::Error;
};

inline constexpr int kPlanVersion = 2;

// `imported` is the model's imported graph (names come from planGraph(imported, plan)).
nlohmann::ordered_json toJson(const Plan& plan, const ir::Graph& imported);
// Reads a plan; `origin` names the file in messages. Throws PlanError naming the field.
Plan planFromJson(const nlohmann::json& doc, const std::string& origin);

void writePlan(const Plan& plan, const ir::Graph& imported, const std::string& path);
Plan readPlan(const std::string& path);

// "I", "R", "I*", "G(2)" back to a relation; throws PlanError naming `where`.
rules::Rel parseRel(const std::string& text, const std::string& where);

}  // namespace hap::plan
