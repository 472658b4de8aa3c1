// The plan file: JSON with "format": "hap-plan", "version": 2 (docs/formats.md "Plan file").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/plan/plan.h"

namespace hap::plan {

// A plan file that cannot be read (malformed JSON, wrong format or version, a missing field, a
// field of the wrong type or out of range, a string that is not UTF-8), or a plan that cannot be
// written (a name that is not UTF-8).
class PlanError : public Error {
 public:
  using Error::Error;
};

inline constexpr int kPlanVersion = 2;

// The most elements a plan's input may have (2^40), and the longest shard length: checked where
// the plan is read, before anything is imported or allocated.
inline constexpr int64_t kMaxPlanInputElements = int64_t{1} << 40;

// `imported` is the model's imported graph (names come from planGraph(imported, plan)). Throws
// PlanError naming the field when a string the plan records (a cluster's or machine's name, a
// model path) is not UTF-8.
nlohmann::ordered_json toJson(const Plan& plan, const ir::Graph& imported);
// Reads a plan; `origin` names the file in messages. Every field is read with a checked type and
// range: a missing key, a wrong type, a number out of range (indices and lengths as 64-bit
// integers, a fraction refused, never truncated; times and sizes finite), a string that is not
// UTF-8 or an input shape with more than kMaxPlanInputElements elements throws PlanError
// "ORIGIN: field 'POINTER' is VALUE; expected WHAT", POINTER a JSON pointer (/program/3/node).
// Nothing else escapes (no nlohmann exception). The program itself is checked by verifyPlan.
Plan planFromJson(const nlohmann::json& doc, const std::string& origin);

// Throws PlanError naming `path` (toJson's, or the file not written).
void writePlan(const Plan& plan, const ir::Graph& imported, const std::string& path);
// planFromJson() of the file at `path`; a folder, an unreadable file or text that is not JSON
// (naming the field the parser was in) is a PlanError too.
Plan readPlan(const std::string& path);

// "I", "R", "I*", "G(2)" back to a relation; throws PlanError naming `where`.
rules::Rel parseRel(const std::string& text, const std::string& where);

}  // namespace hap::plan
