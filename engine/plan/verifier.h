// An independent check of a plan against its reference graph (../shared/DESIGN.md §4: every plan is
// verified before it is written, and by every worker before it runs).
//
// First the program's structure, which the replay and the runtime index by: a non-empty program,
// device groups that exist, every step's segment and per-group times, stages within the program,
// gradient buckets of replicate-parameter steps, finite non-negative times. Then the program
// itself. The verifier shares no state with the search: it re-derives the facts the program
// establishes step by step from the rule library and the conversion semantics, and checks that
//   - every node is computed exactly once, in order, under one of its rules' variants, with each
//     input holding the form the variant needs;
//   - every conversion is a valid instruction for the forms it connects, from a form held;
//   - every G(d) form has one length per rank, non-negative, summing to the dimension's size, the
//     same wherever the form appears, and split at the same relative positions as the other G
//     forms of its compute step (linked dimensions);
//   - every segment's ratios are non-negative and sum to 1;
//   - the loss ends as a partial sum R (or I, from which R is local): R(loss) is derived;
//   - a replicated plan (Plan::Replication) fits its cluster (machines of the program's ranks)
//     and names a valid batch dimension for every input and every random op.
#pragma once

#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/plan/plan.h"

namespace hap::plan {

// The problems found, each naming the step and value; empty when the plan is valid. `imported` is
// the model's imported graph; the plan's ids refer to planGraph(imported, plan).
std::vector<std::string> verifyPlan(const ir::Graph& imported, const Plan& plan);

// Sets every compute step's execution (what the runtime must do beyond the op) from the rule
// variant verifyPlan matches it to: the plan file does not carry it, the rule library decides it.
// The plan must verify (asserted).
void assignExecutions(const ir::Graph& imported, Plan& plan);

}  // namespace hap::plan
