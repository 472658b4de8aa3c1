// embedding(weight [V, D], indices [...]) -> [..., D]: one weight row per index.
// embedding_bag(weight [V, D], indices [N], offsets [B (+1)], ..., per_sample_weights [N]?) ->
// (output [B, D], offset2bag, bag_size, max_indices): the rows of each bag reduced (sum, mean,
// max). nn.EmbeddingBag's 2-D input arrives flattened, with offsets arange(0, N, L).
#include <variant>

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

// Tensor inputs in order: weight, indices, offsets, per_sample_weights (when given). Outputs:
// output [B, D], offset2bag ([N], or [0] where LibTorch's float sum skips it), bag_size [B],
// max_indices ([B, D] in max mode, else [B]). No variant with sparse gradients.
void embeddingBagRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& weight = tensorInput(g, n, 0);
  const ir::Value& result = output(g, n);
  const size_t inputs = n.tensorInputs().size();
  if (n.outputs.size() != 4 || weight.rank() != 2 || result.rank() != 2 || intArg(n, "sparse", 0))
    return;
  const int64_t mode = intArg(n, "mode", 0);  // 0 sum, 1 mean, 2 max
  const bool scaled = intArg(n, "scale_grad_by_freq", 0) != 0;
  const ir::Arg* padding = n.arg("padding_idx");
  const bool padded = padding && std::holds_alternative<int64_t>(padding->constant) &&
                      std::get<int64_t>(padding->constant) >= 0;
  auto with = [&](Rel table, Rel others, std::vector<Rel> outputs) {
    std::vector<Rel> in(inputs, others);
    in[0] = table;
    return std::pair(std::move(in), std::move(outputs));
  };
  // Columns: each rank reduces its columns of every bag (max per column, so max_indices too).
  if (shardable(weight, 1) && shardable(result, 1)) {
    auto [in, outs] = with(rules::gather(1), rules::kIdentity,
                           {rules::gather(1), rules::kIdentity, rules::kIdentity,
                            mode == 2 ? rules::gather(1) : rules::kIdentity});
    out.push_back(makeVariant("column", in, outs));
  }
  // Bags: each rank reduces its bags, the indices of those bags sliced out of the whole ones (a
  // cut of the indices along static lengths would not follow the offsets). offset2bag comes back
  // at full length with this rank's entries only: partials. scale_grad_by_freq would count
  // frequencies in the rank's slice only.
  if (!scaled && shardable(result, 0)) {
    auto [in, outs] = with(rules::kIdentity, rules::kIdentity,
                           {rules::gather(0), rules::kReduce, rules::gather(0), rules::gather(0)});
    Variant& v = out.emplace_back(makeVariant(
        "bags", in, outs,
        "this rank's bags: their indices and per-sample weights sliced out by the offsets, which "
        "are rebased to 0; offset2bag returned as global bag numbers, zeros elsewhere"));
    v.execution = Execution::BagSlice;
  }
  // Vocabulary parallel (sum): each rank looks up the ids of its row range, the others weigh
  // zero (per-sample weights), so the outputs add up. A mean would divide by the local count and
  // a max is not a sum; padding_idx would have to be translated into the local range.
  if (mode == 0 && !padded && !scaled && shardable(weight, 0)) {
    auto [in, outs] = with(rules::gather(0), rules::kIdentity,
                           {rules::kReduce, rules::kIdentity, rules::kIdentity, rules::kIdentity});
    Variant& v = out.emplace_back(makeVariant(
        "vocab", in, outs,
        "vocabulary parallel: ids in this rank's row range (shifted to local rows), the others "
        "given per-sample weight zero; the output is a partial sum"));
    v.execution = Execution::VocabOffset;
  }
  // Linear in the table for sum and mean.
  if (mode != 2) {
    auto [in, outs] = with(rules::kReduce, rules::kIdentity,
                           {rules::kReduce, rules::kIdentity, rules::kIdentity, rules::kIdentity});
    out.push_back(makeVariant("partial", in, outs));
  }
}

constexpr RuleEntry kRules[] = {{"aten::embedding", embeddingRule},
                                {"aten::embedding_bag", embeddingBagRule},
                                {"aten::_embedding_bag", embeddingBagRule}};

}  // namespace

std::span<const RuleEntry> embeddingRules() {
  return kRules;
}

}  // namespace hap::rules
