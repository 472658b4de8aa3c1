#include "engine/synth/memory.h"

#include <algorithm>

#include "engine/cost/profile.h"

namespace hap::synth {

std::vector<MemoryTerm> memoryTerms(const CostTable& table, const Program& p, const CostOptions& options) {
  const Theory& t = table.theory();
  const ir::Graph& g = t.graph();
  std::vector<FormMask> forms(g.values.size(), 0);
  auto add = [&](ir::ValueId x, Rel r) { forms[static_cast<size_t>(x)] |= bit(r); };
  for (const Step& s : p.steps) {
    if (s.kind == Step::Kind::Convert) {
      add(s.value, s.conversion.to);
      if (isGather(s.conversion.from)) add(s.value, s.conversion.from);  // e.g. a stored shard
    } else {
      const auto& v = t.variants(s.node)[static_cast<size_t>(s.variant)];
      const ir::Node& node = g.node(s.node);
      for (size_t o = 0; o < node.outputs.size(); ++o) add(node.outputs[o], v.outputs[o]);
    }
  }
  std::vector<MemoryTerm> terms;
  for (const ir::Value& v : g.values) {
    const FormMask m = forms[static_cast<size_t>(v.id)];
    if (!m) continue;
    const bool param = v.kind == ir::ValueKind::Parameter;
    if (!param && v.kind == ir::ValueKind::Activation && !t.requiresGrad(v.id)) continue;
    const double full = static_cast<double>(v.bytes());
    Affine bytes;
    bool sharded = false;  // a parameter keeps its smallest form between steps: G when it has one
    Rel cut = kIdentity;
    for (int b = 0; b < 16; ++b) {
      if (!(m & (1u << b))) continue;
      if (isGather(relOfBit(b))) {
        bytes.perShare += full;
        if (!sharded) cut = relOfBit(b);
        sharded = true;
      } else {
        bytes.constant += full;
      }
    }
    Affine state;
    if (param) {
      // Gradient + optimizer state, in the parameter's persistent form.
      (sharded ? state.perShare : state.constant) = full * (1 + options.optimizerStateFactor);
      bytes.constant += state.constant;
      bytes.perShare += state.perShare;
    }
    terms.push_back({v.id, t.valueSegment(v.id), cut, bytes, state});
  }
  std::stable_sort(terms.begin(), terms.end(), [&](const MemoryTerm& a, const MemoryTerm& b) {
    return a.bytes.at(1) > b.bytes.at(1);
  });
  return terms;
}

Affine total(const std::vector<MemoryTerm>& terms) {
  Affine sum;
  for (const MemoryTerm& t : terms) {
    sum.constant += t.bytes.constant;
    sum.perShare += t.bytes.perShare;
  }
  return sum;
}

std::vector<double> deviceMemory(const CostTable& table, const Program& p, const CostOptions& options) {
  std::vector<double> bytes(static_cast<size_t>(table.cluster().size()), 0.0);
  for (const MemoryTerm& t : memoryTerms(table, p, options)) {
    const std::vector<double>& shares = table.formShares(t.value, t.cut);
    for (size_t j = 0; j < bytes.size(); ++j) bytes[j] += t.bytes.at(shares[j]);
  }
  const cost::Cluster& c = table.cluster();
  for (size_t j = 0; j < bytes.size(); ++j) bytes[j] = cost::memoryCalibration(c, c.devices[j].type).at(bytes[j]);
  return bytes;
}

std::vector<MemoryBreakdown> deviceMemoryBreakdown(const CostTable& table, const Program& p,
                                                   const CostOptions& options) {
  const ir::Graph& g = table.theory().graph();
  std::vector<MemoryBreakdown> out(static_cast<size_t>(table.cluster().size()));
  const double gradientPart = 1 / (1 + options.optimizerStateFactor);
  for (const MemoryTerm& t : memoryTerms(table, p, options)) {
    const std::vector<double>& shares = table.formShares(t.value, t.cut);
    const ir::ValueKind kind = g.value(t.value).kind;
    for (size_t j = 0; j < out.size(); ++j) {
      const double bytes = t.bytes.at(shares[j]), state = t.state.at(shares[j]);
      MemoryBreakdown& m = out[j];
      if (kind == ir::ValueKind::Parameter) {
        m.parameters += bytes - state;
        m.gradients += state * gradientPart;
        m.optimizer += state * (1 - gradientPart);
      } else if (kind == ir::ValueKind::Activation) {
        m.activations += bytes;
      } else {
        m.other += bytes;
      }
    }
  }
  // A calibrated runtime's own memory and the allocator's rounding count as "other", so that the
  // kinds still sum to deviceMemory's figure.
  const cost::Cluster& c = table.cluster();
  for (size_t j = 0; j < out.size(); ++j) {
    const double model = out[j].total();
    out[j].other += cost::memoryCalibration(c, c.devices[j].type).at(model) - model;
  }
  return out;
}

}  // namespace hap::synth
