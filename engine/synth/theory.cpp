#include "engine/synth/theory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <map>

#include "engine/ir/segments.h"

namespace hap::synth {
namespace {

// Ops through which no gradient flows even with floating-point inputs and outputs.
bool blocksGradient(const std::string& op) {
  return op == "aten::detach" || op == "aten::zeros_like" || op == "aten::ones_like" ||
         op == "aten::empty_like" || op == "aten::full_like";
}

}  // namespace

Theory::Theory(const ir::Graph& g, std::vector<int> nodeSegment)
    : g_(g), classes_(g), nodeSegment_(std::move(nodeSegment)) {
  const size_t nodes = g.nodes.size();
  if (nodeSegment_.empty()) nodeSegment_.assign(nodes, 0);
  assert(nodeSegment_.size() == nodes);
  for (int s : nodeSegment_) segments_ = std::max(segments_, s + 1);
  valueSegment_.assign(g.values.size(), 0);
  for (const ir::Value& v : g.values) {
    const ir::NodeId at = v.producer != ir::kNone ? v.producer : v.users.empty() ? ir::kNone : v.users.front();
    if (at != ir::kNone) valueSegment_[static_cast<size_t>(v.id)] = nodeSegment_[static_cast<size_t>(at)];
  }
  variants_.resize(nodes);
  hasRule_.resize(nodes);
  std::map<std::string, std::pair<ir::NodeId, int>> unruled;  // op -> (first node, count)
  for (const ir::Node& n : g.nodes) {
    bool has = false;
    std::vector<rules::Variant> all = rules::variantsFor(g, n, &has);
    hasRule_[static_cast<size_t>(n.id)] = has;
    if (!has) {
      auto [it, fresh] = unruled.try_emplace(n.op, n.id, 0);
      ++it->second.second;
    }
    // Keep the variants whose G facts can be linked into one class; link them.
    const std::vector<ir::ValueId> ins = n.tensorInputs();
    for (rules::Variant& v : all) {
      std::vector<DimRef> dims;
      for (size_t i = 0; i < v.inputs.size(); ++i)
        if (isGather(v.inputs[i])) dims.push_back({ins[i], v.inputs[i]});
      for (size_t o = 0; o < v.outputs.size(); ++o)
        if (isGather(v.outputs[o])) dims.push_back({n.outputs[o], v.outputs[o]});
      // A reshard's input and output lie in different segments: they are cut independently.
      if (n.op == ir::kReshardOp) dims.clear();
      bool ok = true;
      for (size_t i = 1; i < dims.size() && ok; ++i) ok = classes_.compatible(dims[0], dims[i]);
      if (!ok) continue;
      for (size_t i = 1; i < dims.size(); ++i) classes_.link(dims[0], dims[i]);
      variants_[static_cast<size_t>(n.id)].push_back(std::move(v));
    }
  }
  for (const auto& [op, first] : unruled)
    diagnostics_.push_back(
        {ir::Diagnostic::Severity::Warning, first.first,
         fmt::format("no sharding rule for {} ({} node{}); planned replicated", op, first.second,
                     first.second == 1 ? "" : "s")});

  requiresGrad_.assign(g.values.size(), false);
  for (ir::ValueId p : g.parameters)
    requiresGrad_[static_cast<size_t>(p)] = ir::isFloating(g.value(p).dtype);
  for (const ir::Node& n : g.nodes) {
    bool in = false;
    for (ir::ValueId v : n.tensorInputs()) in = in || requiresGrad_[static_cast<size_t>(v)];
    if (!in || blocksGradient(n.op)) continue;
    for (ir::ValueId o : n.outputs)
      requiresGrad_[static_cast<size_t>(o)] = ir::isFloating(g.value(o).dtype);
  }

  lastUse_.assign(g.values.size(), ir::kNone);
  for (const ir::Value& v : g.values)
    if (!v.users.empty()) lastUse_[static_cast<size_t>(v.id)] = v.users.back();
  if (g.loss != ir::kNone) lastUse_[static_cast<size_t>(g.loss)] = static_cast<ir::NodeId>(nodes);
}

int Theory::cutClass(ir::NodeId n, int v) const {
  const rules::Variant& var = variants(n)[static_cast<size_t>(v)];
  const ir::Node& node = g_.node(n);
  auto classOf = [&](ir::ValueId x, Rel r) {
    const int c = classes_.classOf({x, r});
    return classes_.units(c) > 0 ? c : -1;
  };
  for (size_t i = 0; i < var.outputs.size(); ++i)
    if (isGather(var.outputs[i])) return classOf(node.outputs[i], var.outputs[i]);
  const std::vector<ir::ValueId> in = node.tensorInputs();
  for (size_t i = 0; i < var.inputs.size() && i < in.size(); ++i)
    if (isGather(var.inputs[i])) return classOf(in[i], var.inputs[i]);
  return -1;
}

}  // namespace hap::synth
