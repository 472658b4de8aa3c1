// Per-module-scope summary of a reference graph: where the parameters, FLOPs and activation
// memory are. Used by `hap inspect` and the app's model overview.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/graph.h"

namespace hap::ir {

// Totals over the nodes and parameters of one (truncated) module scope.
struct ScopeSummary {
  std::string scope;       // truncated scope; "" = top level (displayed as "(top)")
  int64_t parameters = 0;  // parameter elements owned by the scope (see ownerScope)
  int64_t parameterBytes = 0;
  double flops = 0;             // forward FLOPs of its nodes (sum of Node::cost.flops)
  int64_t activationBytes = 0;  // bytes written by its nodes (sum of Node::cost.bytesWritten)
  int nodes = 0;
  std::map<std::string, int> opCounts;  // op name without the "aten::" prefix -> count
};

struct GraphSummary {
  int depth = -1;                    // the depth passed to summarize()
  std::vector<ScopeSummary> scopes;  // in order of first appearance: nodes first, then parameters
  ScopeSummary total;                // sums over all scopes; total.scope is ""
  // Values by kind. Buffers and inputs are not attributed to scopes.
  int inputs = 0;
  int64_t inputBytes = 0;
  int parameterTensors = 0;
  int buffers = 0;
  int64_t bufferBytes = 0;
  int constants = 0;
  int activations = 0;
  // Graph::diagnostics by severity.
  int warnings = 0;
  int errors = 0;
};

// Truncates a module scope to its first `depth` components; depth < 0 keeps the full scope and
// depth 0 maps every scope to "" (one row for the whole model).
//
// A numeric component (the index of a ModuleList or Sequential child) stays with its parent and
// does not count toward the depth, so repeated blocks remain distinct rows: at depth 2,
// "encoder.layers.3.self_attn" -> "encoder.layers.3", and at depth 1 -> "encoder". A numeric
// component at the top level (the children of a top-level Sequential: "0.fc") has no parent to
// join and counts as a component of its own: at depth 1, "0.fc" -> "0".
std::string truncateScope(std::string_view scope, int depth);

// The module scope owning a parameter or buffer: its qualified name minus the last component
// ("encoder.layers.0.fc1.weight" -> "encoder.layers.0.fc1", "scale" -> "").
std::string_view ownerScope(std::string_view qualifiedName);

// Summarises `g` per module scope truncated to `depth` (see truncateScope). Node costs must
// already be filled in (Node::cost).
GraphSummary summarize(const Graph& g, int depth);

// A fixed-width text table for terminals: a header with the model, its inputs and the loss; one
// row per scope (scope, parameters, parameter bytes, FLOPs, activation bytes, nodes, the most
// frequent op kinds as "linear×4 gelu×1 …"); a totals row; value counts; then the graph's
// diagnostics, each naming its node by Graph::describe. Ends with a newline.
std::string formatSummaryTable(const Graph& g, const GraphSummary& s);

// Human-readable magnitudes with three significant digits: formatCount(1234567) == "1.23M"
// (K, M, G, T, P, E; values below 1000 print as they are), formatBytes(1536) == "1.50 KiB"
// (B, KiB, MiB, GiB, TiB, PiB, EiB).
std::string formatCount(double n);
std::string formatBytes(int64_t b);

}  // namespace hap::ir
