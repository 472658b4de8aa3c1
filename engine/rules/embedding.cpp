// embedding(weight [V, D], indices [...]) -> [..., D]: one weight row per index.
#include "engine/rules/broadcast.h"
#include "engine/rules/families.h"

namespace hap::rules {
namespace {

// Tensor inputs in order: weight, indices.
void embeddingRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& weight = tensorInput(g, n, 0);
  const ir::Value& indices = tensorInput(g, n, 1);
  int indexRank = indices.rank();
  // Sharded indices look up their rows in the replicated table. scale_grad_by_freq scales the
  // weight gradient by each index's frequency in the batch, which a shard would count locally.
  if (intArg(n, "scale_grad_by_freq", 0) == 0) {
    for (int d = 0; d < indexRank; ++d) {
      if (!shardable(indices, d)) continue;
      out.push_back(makeVariant("shard", {rules::kIdentity, rules::gather(d)}, {rules::gather(d)}));
    }
  }
  // Embedding-dimension parallel: each rank holds some columns of every row.
  if (shardable(weight, 1) && shardable(output(g, n), indexRank)) {
    out.push_back(
        makeVariant("column", {rules::gather(1), rules::kIdentity}, {rules::gather(indexRank)}));
  }
  // Vocabulary parallel: each rank holds a range of rows, looks up the indices in its range and
  // gives zero rows for the others, so the outputs add up to the lookup. A padding_idx would have
  // to be translated into the local range, and scale_grad_by_freq would count the other ranks'
  // ids as lookups of local row 0: only without either.
  if (intArg(n, "padding_idx", -1) < 0 && intArg(n, "scale_grad_by_freq", 0) == 0 && shardable(weight, 0)) {
    Variant& v = out.emplace_back(makeVariant(
        "vocab", {rules::gather(0), rules::kIdentity}, {rules::kReduce},
        "vocabulary parallel: look up only the ids in this rank's row range (shifted to local "
        "rows); other ids give zero rows; the output is a partial sum"));
    v.execution = Execution::VocabOffset;
  }
}

constexpr RuleEntry kRules[] = {{"aten::embedding", embeddingRule}};

}  // namespace

std::span<const RuleEntry> embeddingRules() {
  return kRules;
}

}  // namespace hap::rules
