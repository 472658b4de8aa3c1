// Forward cost of the reference graph's nodes: FLOPs and bytes moved, per op family, from static
// shapes and folded constants. The cost model turns them into time with a roofline
// (../shared/DESIGN.md §3). Every convention and formula is documented in docs/op-costs.md.
#pragma once

#include "engine/ir/graph.h"

namespace hap::ir {

// Forward cost of node n of g. In-place variants ("aten::relu_") cost what their base op costs.
// When `known` is given it is set to whether a formula applied; when none did (an op without a
// formula, or arguments the formula cannot read), the cost is an elementwise estimate: one FLOP
// per element written, bytes as for any op.
NodeCost nodeCost(const Graph& g, const Node& n, bool* known = nullptr);

// The dtype node n computes in, which the cost model prices its arithmetic by: its first
// floating-point output's, else its first floating-point input's, else float32.
DType computeType(const Graph& g, const Node& n);

// Sets Node::cost for every node of g and appends one Warning diagnostic per distinct op whose
// cost was estimated, attached to that op's first node and counting its nodes.
void annotateCosts(Graph& g);

}  // namespace hap::ir
