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

// Every variant is Execution::Reshard: the op is no JIT operator, the runtime moves the elements
// (G) or passes the value on (R; the replicate variant, registry.cpp, too).
void reshardRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const int rank = tensorInput(g, n, 0).rank();
  for (int d = 0; d < rank && d < rules::kMaxShardedRank; ++d) {
    Variant& v = out.emplace_back(
        makeVariant("reshard", {rules::gather(d)}, {rules::gather(d)},
                    "all-to-all from the input segment's lengths to the output segment's"));
    v.execution = Execution::Reshard;
  }
  out.push_back(makeVariant("partial", {rules::kReduce}, {rules::kReduce}));
  out.back().execution = Execution::Reshard;
}

const RuleEntry kRules[] = {{ir::kReshardOp, reshardRule}};

}  // namespace

std::span<const RuleEntry> reshardRules() { return kRules; }

}  // namespace hap::rules
