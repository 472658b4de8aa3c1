// Factories: tensors made from constants (arange, zeros, ones, full, empty, eye, linspace), from
// the shape of another tensor (zeros_like, ones_like, full_like, empty_like) or from its dtype
// only (new_zeros, new_ones, new_full, new_empty). Random factories are in random.cpp.
#include "engine/rules/broadcast.h"
#include "engine/rules/families.h"

namespace hap::rules {
namespace {

constexpr char kLocalNote[] = "created locally: this rank's piece (local shape, offset)";

// Each rank creates its piece of the output along any dimension; the inputs (none, or new_*'s
// `self`, which gives only the dtype) are replicated.
void factoryRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  std::vector<rules::Rel> ins(n.tensorInputs().size(), rules::kIdentity);
  const ir::Value& result = output(g, n);
  for (int d = 0; d < result.rank(); ++d)
    if (shardable(result, d)) {
      // Made full size from the reference's arguments, this rank's piece kept.
      out.push_back(makeVariant("local", ins, {rules::gather(d)}, kLocalNote));
      out.back().execution = Execution::FactoryPiece;
    }
}

// *_like(self) uses only the shape (and dtype) of self: a sharded self gives the piece of the
// output; a full-size one, replicated or partial, gives the full output on every rank. (Zeros as
// a partial sum need no variant: a replicated value is one, kept on one rank.)
void likeRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  appendPointwiseShards(g, n, out);
  out.push_back(makeVariant("like", {rules::kReduce}, {rules::kIdentity}));
}

constexpr RuleEntry kRules[] = {
    {"aten::arange", factoryRule},        {"aten::linspace", factoryRule},
    {"aten::eye", factoryRule},           {"aten::zeros", factoryRule},
    {"aten::ones", factoryRule},          {"aten::full", factoryRule},
    {"aten::empty", factoryRule},         {"aten::empty_strided", factoryRule},
    {"aten::scalar_tensor", factoryRule}, {"aten::new_zeros", factoryRule},
    {"aten::new_ones", factoryRule},      {"aten::new_full", factoryRule},
    {"aten::new_empty", factoryRule},     {"aten::zeros_like", likeRule},
    {"aten::ones_like", likeRule},        {"aten::full_like", likeRule},
    {"aten::empty_like", likeRule},
};

}  // namespace

std::span<const RuleEntry> factoryRules() {
  return kRules;
}

}  // namespace hap::rules
