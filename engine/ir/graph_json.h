// Machine-readable JSON for a reference graph and its summary (`hap inspect --json`, tools).
//
// Include <nlohmann/json.hpp> to use the results; this header only declares them.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "engine/ir/graph.h"
#include "engine/ir/summary.h"

namespace hap::ir {

// The whole graph, ids as in the IR:
//   {"format": "hap-graph", "version": 1, "source": file, "model": object or null,
//    "inputs": [id], "parameters": [id], "buffers": [id], "constants": [id], "loss": id or null,
//    "values": [{"id", "kind", "name", "shape", "dtype", "producer": node or null,
//                "aliasOf"?: id}],
//    "nodes": [{"id", "op", "overload", "scope", "loc"?: {"file", "line"}, "inplace",
//               "args": [{"name", "type", "kind": "tensor"|"tensorList"|"constant",
//                         "values": [id] | "constant": value}],
//               "outputs": [id], "cost": {"flops", "bytesRead", "bytesWritten"}}],
//    "diagnostics": [{"severity": "warning"|"error", "node": id or null, "message"}]}
// Constants are natural JSON values (None -> null, lists -> arrays). "model" is g.modelInfo
// parsed, null when empty, and the raw string when it is not valid JSON.
nlohmann::json toJson(const Graph& g);

// {"depth", "scopes": [scope], "total": scope, "values": {"inputs", "inputBytes",
//  "parameterTensors", "buffers", "bufferBytes", "constants", "activations"},
//  "diagnostics": {"warnings", "errors"}}, each scope being {"scope", "parameters",
//  "parameterBytes", "flops", "activationBytes", "nodes", "opCounts": {op: count}}.
nlohmann::json toJson(const GraphSummary& s);

}  // namespace hap::ir
