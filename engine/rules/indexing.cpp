// Ops that index along one dimension: topk, sort, argsort, cumulative ops, one_hot, gather,
// index_select, index (index tensors broadcast together), scatter. The indexed dimension is never split (an element's result depends on the
// whole of it, or indices address all of it); the other dimensions are independent lanes.
// Data-dependent shapes (masked_select, nonzero) have no rule: only replication is exact.
#include <algorithm>
#include <string>

#include "engine/rules/families.h"
#include "engine/rules/variant_util.h"

namespace hap::rules {
namespace {

using rules::gather;
using rules::kIdentity;
using rules::kReduce;

std::string dimName(int d) { return "dim" + std::to_string(d); }

// topk(self, k, dim, ...), sort(self, [stable,] dim, descending), argsort(self, dim, ...),
// cumsum/cumprod(self, dim, dtype), cummax/cummin(self, dim): every lane along `dim` is processed
// on its own, so another dimension passes G to all outputs (values and indices alike). cumsum
// is linear (R → R).
template <bool kLinear>
void alongDimRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  if (x.rank() == 0) return;
  const int k = normalizeDim(intArg(n, "dim", -1), x.rank());
  for (int d = 0; d < x.rank(); ++d) {
    if (d == k || !shardable(x, d)) continue;
    out.push_back(
        makeVariant(dimName(d), {gather(d)}, std::vector<rules::Rel>(n.outputs.size(), gather(d))));
  }
  if (kLinear) out.push_back(makeVariant("partial", {kReduce}, {kReduce}));
}

// one_hot(self, num_classes): each index becomes its own row along a new last dimension, which
// is never split. With num_classes = -1 the length comes from the data (the local maximum would
// differ per device): no variant.
void oneHotRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  if (intArg(n, "num_classes", -1) <= 0) return;
  const ir::Value& x = tensorInput(g, n, 0);
  for (int d = 0; d < x.rank(); ++d)
    if (shardable(x, d))
      out.push_back(makeVariant(dimName(d), {gather(d)}, {gather(d)}));
}

// gather(self, dim, index): out[..i..] = self[..index[..i..]..] along `dim`, out shaped as index.
//   dim<d> (d ≠ dim): self and index split alike along d, which needs equal lengths there.
//   index: index (and so out) split along `dim`, each device reading all of self.
//   partial: linear in self.
void gatherRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& index = tensorInput(g, n, 1);
  if (x.rank() == 0 || index.rank() != x.rank()) return;
  const int k = normalizeDim(intArg(n, "dim", 0), x.rank());
  for (int d = 0; d < x.rank(); ++d) {
    const size_t i = static_cast<size_t>(d);
    if (d != k && shardable(x, d) && x.shape[i] == index.shape[i])
      out.push_back(makeVariant(dimName(d), {gather(d), gather(d)}, {gather(d)}));
  }
  if (shardable(index, k))
    out.push_back(makeVariant("index", {kIdentity, gather(k)}, {gather(k)}));
  out.push_back(makeVariant("partial", {kReduce, kIdentity}, {kReduce}));
}

// index_select(self, dim, index): picks the 1-D index's entries along `dim`.
//   dim<d> (d ≠ dim): self split along d, index whole.
//   index: the index (and so out's `dim`) split, each device reading all of self.
//   partial: linear in self.
void indexSelectRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& index = tensorInput(g, n, 1);
  if (x.rank() == 0) return;
  const int k = normalizeDim(intArg(n, "dim", 0), x.rank());
  for (int d = 0; d < x.rank(); ++d)
    if (d != k && shardable(x, d))
      out.push_back(makeVariant(dimName(d), {gather(d), kIdentity}, {gather(d)}));
  if (shardable(index, 0) && shardable(output(g, n), k))
    out.push_back(makeVariant("index", {kIdentity, gather(0)}, {gather(k)}));
  out.push_back(makeVariant("partial", {kReduce, kIdentity}, {kReduce}));
}

// index(self, indices): x[..., i0, i1, ...] with index tensors at some positions of the list, the
// other entries None (slices), as traces of x[:, idx] and x[rows, cols] write them. The index
// tensors broadcast together to a shape S; out = x's dimensions before the first indexed one, S,
// x's dimensions after the last, when the indexed positions are adjacent; else S first, then
// every dimension of x not indexed.
//   dim<d>: self split along a dimension d it is not indexed on, the indices whole; out split
//     along d's place.
//   index: out split along a dimension k of S, each index tensor split along its dimension
//     aligned with k (whole where it broadcasts there), self whole.
//   partial: linear in self.
// Boolean masks (data-dependent shapes) have no rule.
void indexRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Arg* list = n.arg("indices");
  if (!list || list->kind != ir::Arg::Kind::TensorList || list->values.empty()) return;
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& result = output(g, n);
  std::vector<int> places;  // the indexed dimensions of x, in list order
  const int entries = static_cast<int>(list->values.size() + list->noneAt.size());
  for (int p = 0; p < entries; ++p)
    if (std::find(list->noneAt.begin(), list->noneAt.end(), p) == list->noneAt.end()) places.push_back(p);
  if (places.size() != list->values.size() || places.back() >= x.rank()) return;
  // The broadcast shape S of the index tensors (right-aligned).
  ir::Shape common;
  for (ir::ValueId id : list->values) {
    const ir::Value& index = g.value(id);
    if (index.dtype == ir::DType::Bool || index.dtype == ir::DType::UInt8) return;
    if (index.rank() > static_cast<int>(common.size())) common.insert(common.begin(), index.rank() - common.size(), 1);
    for (int k = 0; k < index.rank(); ++k) {
      int64_t& c = common[common.size() - static_cast<size_t>(index.rank() - k)];
      const int64_t len = index.shape[static_cast<size_t>(k)];
      if (c == 1) c = len;
      else if (len != 1 && len != c) return;
    }
  }
  const int indexed = static_cast<int>(places.size()), sRank = static_cast<int>(common.size());
  if (result.rank() != x.rank() - indexed + sRank) return;
  const bool adjacent = places.back() - places.front() + 1 == indexed;
  const int front = adjacent ? places.front() : 0;  // where S stands in out
  const std::vector<Rel> whole(list->values.size(), kIdentity);
  int kept = 0;  // dimensions of x not indexed, before d
  for (int d = 0; d < x.rank(); ++d) {
    if (std::find(places.begin(), places.end(), d) != places.end()) continue;
    const int at = adjacent ? (d < front ? d : d - indexed + sRank) : sRank + kept;
    ++kept;
    if (!shardable(x, d) || !shardable(result, at)) continue;
    Variant v = makeVariant(dimName(d), {gather(d)}, {gather(at)});
    v.inputs.insert(v.inputs.end(), whole.begin(), whole.end());
    out.push_back(std::move(v));
  }
  for (int k = 0; k < sRank; ++k) {
    if (!shardable(result, front + k)) continue;
    Variant v = makeVariant("index", {kIdentity}, {gather(front + k)});
    for (ir::ValueId id : list->values) {
      const ir::Value& index = g.value(id);
      const int aligned = k - (sRank - index.rank());
      v.inputs.push_back(aligned >= 0 && index.shape[static_cast<size_t>(aligned)] == common[static_cast<size_t>(k)]
                             ? gather(aligned)
                             : kIdentity);
    }
    out.push_back(std::move(v));
  }
  Variant partial = makeVariant("partial", {kReduce}, {kReduce});
  partial.inputs.insert(partial.inputs.end(), whole.begin(), whole.end());
  out.push_back(std::move(partial));
}

// scatter(self, dim, index, src | value [, reduce]), scatter_add(self, dim, index, src): writes
// src[..i..] to out[..index[..i..]..] along `dim`. Another dimension d passes G when every tensor
// has the same length there (index and src may be shorter than self, which would misalign the
// pieces). scatter_add is linear in (self, src) together.
template <bool kLinear>
void scatterRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  if (x.rank() == 0) return;
  const std::vector<ir::ValueId> inputs = n.tensorInputs();
  const int k = normalizeDim(intArg(n, "dim", 0), x.rank());
  for (int d = 0; d < x.rank(); ++d) {
    const bool split = d != k && std::all_of(inputs.begin(), inputs.end(), [&](ir::ValueId id) {
      const ir::Value& v = g.value(id);
      return v.rank() == x.rank() && shardable(v, d) &&
             v.shape[static_cast<size_t>(d)] == x.shape[static_cast<size_t>(d)];
    });
    if (!split) continue;
    out.push_back(makeVariant(dimName(d), std::vector<rules::Rel>(inputs.size(), gather(d)),
                              {gather(d)}));
  }
  if (kLinear && inputs.size() == 3)
    out.push_back(makeVariant("partial", {kReduce, kIdentity, kReduce}, {kReduce}));
}

constexpr RuleEntry kRules[] = {
    {"aten::topk", alongDimRule<false>},
    {"aten::sort", alongDimRule<false>},
    {"aten::argsort", alongDimRule<false>},
    {"aten::cumsum", alongDimRule<true>},
    {"aten::cumsum_", alongDimRule<true>},
    {"aten::cumprod", alongDimRule<false>},
    {"aten::cumprod_", alongDimRule<false>},
    {"aten::cummax", alongDimRule<false>},
    {"aten::cummin", alongDimRule<false>},
    {"aten::one_hot", oneHotRule},
    {"aten::gather", gatherRule},
    {"aten::index_select", indexSelectRule},
    {"aten::index", indexRule},
    {"aten::scatter", scatterRule<false>},
    {"aten::scatter_", scatterRule<false>},
    {"aten::scatter_add", scatterRule<true>},
    {"aten::scatter_add_", scatterRule<true>},
};

}  // namespace

std::span<const RuleEntry> indexingRules() { return kRules; }

}  // namespace hap::rules
