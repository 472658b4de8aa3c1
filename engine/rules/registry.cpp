#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <unordered_map>

#include "engine/ir/segments.h"
#include "engine/rules/families.h"

namespace hap::rules {
namespace {

// The one explicit list of rule families.
const std::unordered_map<std::string_view, RuleFn>& registry() {
  static const auto table = [] {
    std::unordered_map<std::string_view, RuleFn> map;
    for (std::span<const RuleEntry> family :
         {elementwiseRules(), randomRules(), reductionRules(), normalizationRules(),
          softmaxRules(), lossRules(), embeddingRules(), factoryRules(), shapeRules(),
          matmulRules(), convolutionRules(), indexingRules(), resamplingRules(), activationRules(),
          recurrentRules(), scatterRules(), reshardRules()}) {
      for (const RuleEntry& e : family) {
        [[maybe_unused]] bool fresh = map.emplace(e.op, e.rule).second;
        assert(fresh && "an op is registered by two rule families");
      }
    }
    return map;
  }();
  return table;
}

}  // namespace

RuleFn findRule(std::string_view op) {
  auto it = registry().find(op);
  return it == registry().end() ? nullptr : it->second;
}

std::vector<std::string_view> registeredOps() {
  std::vector<std::string_view> ops;
  for (const auto& [op, rule] : registry()) ops.push_back(op);
  std::sort(ops.begin(), ops.end());
  return ops;
}

std::vector<Variant> variantsFor(const ir::Graph& g, const ir::Node& n, bool* hasRule) {
  std::vector<Variant> out;
  Variant replicate;
  replicate.name = "replicate";
  replicate.inputs.assign(n.tensorInputs().size(), rules::kIdentity);
  replicate.outputs.assign(n.outputs.size(), rules::kIdentity);
  // Whole forms need no adjustment, but for two ops: a random op draws as its other variants do
  // (in a replicated plan, the global batch's numbers), and hap::reshard is no JIT operator.
  if (isRandomOp(n.op)) replicate.execution = randomExecution(n.op);
  if (n.op == ir::kReshardOp) replicate.execution = Execution::Reshard;
  out.push_back(std::move(replicate));
  RuleFn rule = findRule(n.op);
  if (hasRule) *hasRule = rule != nullptr;
  if (rule) rule(g, n, out);
  // Drop duplicates (same relations), keeping the first name.
  std::vector<Variant> unique;
  for (Variant& v : out) {
    assert(v.inputs.size() == n.tensorInputs().size() && v.outputs.size() == n.outputs.size());
    bool seen = std::any_of(unique.begin(), unique.end(), [&](const Variant& u) {
      return u.inputs == v.inputs && u.outputs == v.outputs && u.sfb == v.sfb;
    });
    if (!seen) unique.push_back(std::move(v));
  }
  return unique;
}

std::string_view executionName(Execution e) {
  switch (e) {
    case Execution::Plain: return "plain";
    case Execution::WholeCutPiece: return "whole-cut-piece";
    case Execution::ReshapeToPiece: return "reshape-to-piece";
    case Execution::ExpandToPiece: return "expand-to-piece";
    case Execution::FactoryPiece: return "factory-piece";
    case Execution::DropoutMask: return "dropout-mask";
    case Execution::RandomDraws: return "random-draws";
    case Execution::MeanOverCut: return "mean-over-cut";
    case Execution::ClassLossMean: return "class-loss-mean";
    case Execution::PointwiseLossMean: return "pointwise-loss-mean";
    case Execution::ProbabilityLossMean: return "probability-loss-mean";
    case Execution::SyncStatistics: return "sync-statistics";
    case Execution::DepthwiseGroups: return "depthwise-groups";
    case Execution::VocabOffset: return "vocab-offset";
    case Execution::BagSlice: return "bag-slice";
    case Execution::ScaledMean: return "scaled-mean";
    case Execution::Reshard: return "reshard";
  }
  return "?";
}

std::string formatVariant(const Variant& v) {
  std::string s = v.name + ":";
  for (rules::Rel r : v.inputs) s += " " + rules::formatRel(r);
  s += " ->";
  for (rules::Rel r : v.outputs) s += " " + rules::formatRel(r);
  if (v.sfb) s += " [sfb]";
  return s;
}

int normalizeDim(int64_t dim, int rank) {
  int d = static_cast<int>(dim < 0 ? dim + rank : dim);
  assert(d >= 0 && d < std::max(rank, 1));
  return d;
}

int64_t intArg(const ir::Node& n, std::string_view name, int64_t fallback) {
  const ir::Arg* a = n.arg(name);
  if (!a || a->kind != ir::Arg::Kind::Constant) return fallback;
  if (auto* v = std::get_if<int64_t>(&a->constant)) return *v;
  if (auto* b = std::get_if<bool>(&a->constant)) return *b;
  return fallback;
}

std::vector<int64_t> intListArg(const ir::Node& n, std::string_view name) {
  const ir::Arg* a = n.arg(name);
  if (!a || a->kind != ir::Arg::Kind::Constant) return {};
  if (auto* v = std::get_if<std::vector<int64_t>>(&a->constant)) return *v;
  if (auto* i = std::get_if<int64_t>(&a->constant)) return {*i};
  return {};
}

const ir::Value& tensorInput(const ir::Graph& g, const ir::Node& n, size_t i) {
  return g.value(n.tensorInputs().at(i));
}

const ir::Value& output(const ir::Graph& g, const ir::Node& n, size_t i) {
  return g.value(n.outputs.at(i));
}

}  // namespace hap::rules
