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
//     and names a valid batch dimension for every input and every random op;
//   - given a shape function (the op's own: LibTorch's kernel, import::localOutputShapes), every
//     compute step that runs its op as it is (Execution::Plain, no SFB) gives, on every rank, the
//     local output shapes its output forms say (the reference shape with each G(d) dimension at the
//     rank's length), from the local input shapes its input forms say. Local shapes follow from
//     the reference shapes through the rules' relations, so this refuses a plan made on shapes the
//     importer inferred wrongly (LibTorch 1.13's _embedding_bag meta kernel) or a rule whose
//     relations do not hold for the op: the worker would stop at its first step. Ranks where an
//     operand is empty are left to the runtime (it builds empty pieces itself).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/plan/plan.h"

namespace hap::plan {

// What the op computes for node n of graph g on tensor inputs of the given shapes (one per
// n.tensorInputs()): each output's shape (lists flattened), or nullopt when it cannot tell. The
// engine links no LibTorch: hap_import's import::localOutputShapes is the one callers pass.
using ShapeFunction = std::function<std::optional<std::vector<ir::Shape>>(
    const ir::Graph& g, const ir::Node& n, const std::vector<ir::Shape>& inputShapes)>;

// The problems found, each naming the step and value; empty when the plan is valid. `imported` is
// the model's imported graph; the plan's ids refer to planGraph(imported, plan). `shapes`, when
// given, checks every plain compute step's local shapes on every rank (see the file's comment).
std::vector<std::string> verifyPlan(const ir::Graph& imported, const Plan& plan,
                                    const ShapeFunction& shapes = {});

// Sets every compute step's execution (what the runtime must do beyond the op) from the rule
// variant verifyPlan matches it to: the plan file does not carry it, the rule library decides it.
// The plan must verify (asserted).
void assignExecutions(const ir::Graph& imported, Plan& plan);

}  // namespace hap::plan
