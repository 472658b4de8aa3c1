// Graphviz DOT rendering of a reference graph, grouped by module scope.
#pragma once

#include <string>

#include "engine/ir/graph.h"

namespace hap::ir {

struct DotOptions {
  // Module scopes are truncated to this depth (see truncateScope); < 0 keeps them whole and 0
  // draws no clusters at all.
  int depth = -1;
  // Draw parameters, buffers and constants (and their edges); inputs and the loss always show.
  bool showParameters = true;
  // Label edges with the shape of the tensor they carry. Op nodes always show their output shape.
  bool showShapes = true;
};

// Renders `g` as a DOT digraph (top to bottom). Each module scope becomes a `cluster_<k>`
// subgraph labelled with the scope, nested by scope path; nodes of scopes deeper than
// `opt.depth` go into the cluster of their truncated scope. Op nodes are boxes "n<node id>"
// labelled "op\n[shape]" (aten:: dropped), nodes with a diagnostic outlined in red; inputs, the
// loss, parameters, buffers and constants are small ellipses "v<value id>", parameters and
// buffers inside the cluster of their owner scope. Edges run from producer to consumer, one per
// distinct tensor a node reads. The output depends only on `g` and `opt`.
std::string toDot(const Graph& g, const DotOptions& opt = {});

}  // namespace hap::ir
