// hap::reshard: the identity the planner inserts where a value enters another segment
// (ir/segments.h). Its sharded variant keeps the dimension but not the lengths: the input is cut
// by its own segment's ratios, the output by the reading segment's, so the two dimensions are
// deliberately not linked (synth::Theory skips linking for this op) and the runtime moves the
// elements with an all-to-all (its dual in backward). A partial sum stays a partial sum.
#include "engine/ir/segments.h"
#include "engine/rules/families.h"
#include "engine/rules/variant_util.h"

namespace hap::rules {
namespace {

void reshardRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const int rank = tensorInput(g, n, 0).rank();
  for (int d = 0; d < rank && d < rules::kMaxShardedRank; ++d)
    out.push_back(makeVariant("reshard", {rules::gather(d)}, {rules::gather(d)},
                              "all-to-all from the input segment's lengths to the output segment's"));
  out.push_back(makeVariant("partial", {rules::kReduce}, {rules::kReduce}));
}

const RuleEntry kRules[] = {{ir::kReshardOp, reshardRule}};

}  // namespace

std::span<const RuleEntry> reshardRules() { return kRules; }

}  // namespace hap::rules
