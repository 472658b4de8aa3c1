// softmax and log_softmax: each slice along the normalised dimension is normalised on its own,
// so every other dimension shards (the normalised one would need a global max and sum).
#include "engine/rules/broadcast.h"
#include "engine/rules/families.h"

namespace hap::rules {
namespace {

void softmaxRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  int normalised = normalizeDim(intArg(n, "dim", -1), x.rank());
  for (int d = 0; d < x.rank(); ++d) {
    if (d != normalised && shardable(x, d))
      out.push_back(makeVariant("shard", {rules::gather(d)}, {rules::gather(d)}));
  }
}

constexpr RuleEntry kRules[] = {
    {"aten::softmax", softmaxRule},
    {"aten::log_softmax", softmaxRule},
    {"aten::_softmax", softmaxRule},
    {"aten::_log_softmax", softmaxRule},
};

}  // namespace

std::span<const RuleEntry> softmaxRules() {
  return kRules;
}

}  // namespace hap::rules
