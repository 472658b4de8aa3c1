// A distributed program: the search's result, in execution order (../shared/DESIGN.md §3).
//
// For every reference node, in order: the conversions that give its inputs the forms its chosen
// variant needs (loads of sources, collectives, local slices), then the node itself under that
// variant. Every value is computed exactly once; a value may gain several forms.
#pragma once

#include <vector>

#include "engine/synth/cost_table.h"

namespace hap::synth {

struct Step {
  enum class Kind : uint8_t { Convert, Compute };
  Kind kind = Kind::Compute;
  ir::NodeId node = ir::kNone;    // Compute: the node; Convert: the consumer it prepares
  int variant = -1;               // Compute
  ir::ValueId value = ir::kNone;  // Convert
  Conversion conversion;          // Convert
  double seconds = 0;             // forward + backward cost
};

struct Program {
  std::vector<Step> steps;
  std::vector<int> variantOf;  // per node: the chosen variant
  double seconds = 0;          // predicted iteration time: the sum of the steps' costs
};

// Builds the program for a choice of variant per node: replays the conversions the choice needs
// (the cheapest conversion from the forms a value already holds, as the search does). Throws
// std::logic_error when a needed form cannot be obtained (the search never returns such a
// choice).
Program buildProgram(const CostTable& table, const std::vector<int>& variantOf);

}  // namespace hap::synth
