// Activations that are not elementwise over one tensor: PReLU (a learned slope per channel, or
// one for all) and GLU (one half of a dimension gating the other).
//
// prelu(x, w): w holds one slope, or one per channel (x's dimension 1; a 1-D x has one slope).
// A cut of x along any dimension passes through with w whole, and along the channels also with w
// cut the same way when it holds one slope per channel. Not linear in x.
// glu(x, dim): out = a · sigmoid(b), a and b the halves of x along `dim`; a cut along any other
// dimension passes through. The halved dimension is not cut (a rank's piece would need rows of
// both halves).
#include "engine/rules/families.h"
#include "engine/rules/variant_util.h"

namespace hap::rules {
namespace {

void preluRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& w = tensorInput(g, n, 1);
  const int channel = x.rank() >= 2 ? 1 : -1;  // a 1-D input has no channels (one slope)
  const bool perChannel = w.rank() >= 1 && w.shape[0] > 1;
  for (int d = 0; d < x.rank(); ++d) {
    if (!shardable(x, d)) continue;
    if (d == channel && perChannel) {
      out.push_back(makeVariant("channel", {gather(d), gather(0)}, {gather(d)}, "each rank its channels' slopes"));
      continue;
    }
    out.push_back(makeVariant(d == 0 ? "batch" : "shard", {gather(d), kIdentity}, {gather(d)}));
  }
}

void gluRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const int halved = normalizeDim(intArg(n, "dim", -1), x.rank());
  for (int d = 0; d < x.rank(); ++d)
    if (d != halved && shardable(x, d)) out.push_back(makeVariant(d == 0 ? "batch" : "shard", {gather(d)}, {gather(d)}));
}

constexpr RuleEntry kRules[] = {
    {"aten::prelu", preluRule},
    {"aten::glu", gluRule},
};

}  // namespace

std::span<const RuleEntry> activationRules() { return kRules; }

}  // namespace hap::rules
