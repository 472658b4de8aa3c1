#include "engine/ir/graph_json.h"

#include <nlohmann/json.hpp>
#include <type_traits>
#include <variant>

namespace hap::ir {
namespace {

using nlohmann::json;

json idOrNull(int32_t id) {
  return id == kNone ? json(nullptr) : json(id);
}

json constantJson(const Constant& c) {
  return std::visit(
      [](const auto& v) -> json {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>)
          return nullptr;
        else
          return v;
      },
      c);
}

std::string_view argKindName(Arg::Kind k) {
  switch (k) {
    case Arg::Kind::Tensor:
      return "tensor";
    case Arg::Kind::TensorList:
      return "tensorList";
    case Arg::Kind::Constant:
      return "constant";
  }
  return "?";
}

json valueJson(const Value& v) {
  json j = {
      {"id", v.id},       {"kind", valueKindName(v.kind)}, {"name", v.name},
      {"shape", v.shape}, {"dtype", dtypeName(v.dtype)},   {"producer", idOrNull(v.producer)}};
  if (v.aliasOf != kNone) j["aliasOf"] = v.aliasOf;
  return j;
}

json nodeJson(const Node& n) {
  json args = json::array();
  for (const Arg& a : n.args) {
    json arg = {{"name", a.name}, {"type", a.type}, {"kind", argKindName(a.kind)}};
    if (a.kind == Arg::Kind::Constant)
      arg["constant"] = constantJson(a.constant);
    else
      arg["values"] = a.values;
    args.push_back(std::move(arg));
  }
  json j = {{"id", n.id},
            {"op", n.op},
            {"overload", n.overload},
            {"scope", n.scope},
            {"inplace", n.inplace},
            {"args", std::move(args)},
            {"outputs", n.outputs},
            {"cost",
             {{"flops", n.cost.flops},
              {"bytesRead", n.cost.bytesRead},
              {"bytesWritten", n.cost.bytesWritten}}}};
  if (n.loc.known()) j["loc"] = {{"file", n.loc.file}, {"line", n.loc.line}};
  return j;
}

json scopeJson(const ScopeSummary& s) {
  return {{"scope", s.scope},
          {"parameters", s.parameters},
          {"parameterBytes", s.parameterBytes},
          {"flops", s.flops},
          {"activationBytes", s.activationBytes},
          {"nodes", s.nodes},
          {"opCounts", s.opCounts}};
}

}  // namespace

json toJson(const Graph& g) {
  json model = nullptr;
  if (!g.modelInfo.empty()) {
    model = json::parse(g.modelInfo, nullptr, /*allow_exceptions=*/false);
    if (model.is_discarded()) model = g.modelInfo;
  }
  json values = json::array();
  for (const Value& v : g.values) values.push_back(valueJson(v));
  json nodes = json::array();
  for (const Node& n : g.nodes) nodes.push_back(nodeJson(n));
  json diagnostics = json::array();
  for (const Diagnostic& d : g.diagnostics)
    diagnostics.push_back(
        {{"severity", d.severity == Diagnostic::Severity::Error ? "error" : "warning"},
         {"node", idOrNull(d.node)},
         {"message", d.message}});
  return {{"format", "hap-graph"},     {"version", 1},
          {"source", g.sourceFile},    {"model", std::move(model)},
          {"inputs", g.inputs},        {"parameters", g.parameters},
          {"buffers", g.buffers},      {"constants", g.constants},
          {"loss", idOrNull(g.loss)},  {"values", std::move(values)},
          {"nodes", std::move(nodes)}, {"diagnostics", std::move(diagnostics)}};
}

json toJson(const GraphSummary& s) {
  json scopes = json::array();
  for (const ScopeSummary& scope : s.scopes) scopes.push_back(scopeJson(scope));
  return {{"depth", s.depth},
          {"scopes", std::move(scopes)},
          {"total", scopeJson(s.total)},
          {"values",
           {{"inputs", s.inputs},
            {"inputBytes", s.inputBytes},
            {"parameterTensors", s.parameterTensors},
            {"buffers", s.buffers},
            {"bufferBytes", s.bufferBytes},
            {"constants", s.constants},
            {"activations", s.activations}}},
          {"diagnostics", {{"warnings", s.warnings}, {"errors", s.errors}}}};
}

}  // namespace hap::ir
