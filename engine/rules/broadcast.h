// Helpers shared by the rule families whose ops work element by element over broadcast inputs
// (elementwise, random, reduction, normalization, softmax, loss, embedding, factory); defined in
// elementwise.cpp.
#pragma once

#include <string_view>
#include <vector>

#include "engine/rules/rule.h"
#include "engine/rules/variant_util.h"  // makeVariant, shardable

namespace hap::rules {

// The relation of each tensor input of n when a result of shape `shape` is sharded along its
// dimension d and the inputs broadcast against it (NumPy rules, right-aligned): an input whose
// aligned dimension has the result's length is sharded along that dimension of its own (the two
// are linked: equal lengths); an input broadcast along d (length 1, or too few dimensions, as a
// 0-dim tensor) is replicated.
std::vector<rules::Rel> broadcastInputs(const ir::Graph& g, const ir::Node& n,
                                        const ir::Shape& shape, int d);

// Appends, for every shardable dimension d of the node's first output, the variant with the inputs
// as broadcastInputs(d) and every output G(d): exact for any op that computes each output element
// from the input elements at the same (broadcast) position. All outputs must have the first
// output's shape. A node without tensor inputs gets Execution::FactoryPiece on each.
void appendPointwiseShards(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out,
                           std::string_view note = {});

// The rule of the elementwise ops that are not linear in any argument: appendPointwiseShards.
void pointwiseRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out);

}  // namespace hap::rules
