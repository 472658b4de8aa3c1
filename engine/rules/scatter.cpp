// Scatters: the out-of-place forms of in-place writes into views, which the importer's
// functionalization emits (engine/import/functionalize.h).
//
// slice_scatter(self, src, dim, start, end, step), select_scatter(self, src, dim, index) and
// diagonal_scatter(self, src, offset, dim1, dim2) return self with the view's elements replaced by
// src. A dimension of self other than the scattered one(s) corresponds to one dimension of src of
// the same length (select drops `dim`, diagonal moves its two dimensions to src's last); self and
// src cut alike along it scatter piece by piece (the arguments name positions along the other
// dimensions only). Every scatter is linear in (self, src) jointly: both partial sums give a
// partial sum. The scattered dimensions are not cut (a rank's piece of self would need another
// range of src).
//
// diagonal(self, offset, dim1, dim2), the view diagonal_scatter writes back, maps the dimensions
// the same way: a cut along any other dimension passes through, and it is linear.
#include "engine/rules/families.h"
#include "engine/rules/variant_util.h"

namespace hap::rules {
namespace {

// Appends, for every dimension d of self that is not scattered, the cut of self along d, of src
// along srcDim(d), of the result along d; then the partial variant.
template <typename SrcDim>
void appendScatterVariants(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out,
                           SrcDim srcDim) {
  const ir::Value& self = tensorInput(g, n, 0);
  const ir::Value& src = tensorInput(g, n, 1);
  for (int d = 0; d < self.rank(); ++d) {
    const int s = srcDim(d);
    if (s < 0 || !shardable(self, d) || !shardable(src, s) ||
        src.shape[static_cast<size_t>(s)] != self.shape[static_cast<size_t>(d)])
      continue;
    out.push_back(makeVariant(d == 0 ? "batch" : "shard", {gather(d), gather(s)}, {gather(d)},
                              "self and src cut alike along a dimension that is not scattered"));
  }
  if (self.dtype != ir::DType::Bool && src.dtype != ir::DType::Bool)
    out.push_back(makeVariant("partial", {kReduce, kReduce}, {kReduce}));
}

void sliceScatterRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const int rank = tensorInput(g, n, 0).rank();
  if (rank == 0) return;
  const int k = normalizeDim(intArg(n, "dim", 0), rank);
  appendScatterVariants(g, n, out, [&](int d) { return d == k ? -1 : d; });
}

void selectScatterRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const int rank = tensorInput(g, n, 0).rank();
  if (rank == 0) return;
  const int k = normalizeDim(intArg(n, "dim", 0), rank);
  appendScatterVariants(g, n, out, [&](int d) { return d == k ? -1 : d < k ? d : d - 1; });
}

void diagonalScatterRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const int rank = tensorInput(g, n, 0).rank();
  if (rank < 2) return;
  const int d1 = normalizeDim(intArg(n, "dim1", 0), rank);
  const int d2 = normalizeDim(intArg(n, "dim2", 1), rank);
  appendScatterVariants(g, n, out, [&](int d) {
    if (d == d1 || d == d2) return -1;
    return d - (d > d1 ? 1 : 0) - (d > d2 ? 1 : 0);
  });
}

void diagonalRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& self = tensorInput(g, n, 0);
  const ir::Value& y = output(g, n);
  if (self.rank() < 2) return;
  const int d1 = normalizeDim(intArg(n, "dim1", 0), self.rank());
  const int d2 = normalizeDim(intArg(n, "dim2", 1), self.rank());
  for (int d = 0; d < self.rank(); ++d) {
    if (d == d1 || d == d2) continue;
    const int o = d - (d > d1 ? 1 : 0) - (d > d2 ? 1 : 0);
    if (shardable(self, d) && shardable(y, o))
      out.push_back(makeVariant(d == 0 ? "batch" : "shard", {gather(d)}, {gather(o)}));
  }
  out.push_back(makeVariant("partial", {kReduce}, {kReduce}));
}

constexpr RuleEntry kRules[] = {
    {"aten::diagonal", diagonalRule},
    {"aten::slice_scatter", sliceScatterRule},
    {"aten::select_scatter", selectScatterRule},
    {"aten::diagonal_scatter", diagonalScatterRule},
};

}  // namespace

std::span<const RuleEntry> scatterRules() { return kRules; }

}  // namespace hap::rules
