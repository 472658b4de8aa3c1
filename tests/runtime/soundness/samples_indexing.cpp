// Samples of the indexing family (engine/rules/indexing.cpp): topk/sort/argsort, cumulative ops,
// one_hot, gather, index_select, scatter (unique indices: scatter with duplicates has no defined
// winner) and scatter_add (duplicates summed).
#include <algorithm>
#include <numeric>

#include "tests/runtime/soundness/op_samples.h"

namespace hap::test {
namespace {

ir::Shape anyShape(Rand& r, int lo, int hi) { return r.shape(static_cast<int>(r.range(lo, hi))); }
int64_t oneDim(Rand& r, int rank) { return r.range(-rank, rank - 1); }

SampleEntry entry(std::string op, SampleFn make) { return {std::move(op), std::move(make)}; }

SampleEntry alongDim(const std::string& op, const std::string& overload, std::vector<std::pair<std::string, ArgValue>> extra = {}) {
  return entry(op, [=](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    OpSample s{"", overload, {{"self", t(x)}, {"dim", i(oneDim(r, static_cast<int>(x.size())))}}};
    s.args.insert(s.args.end(), extra.begin(), extra.end());
    return s;
  });
}

}  // namespace

std::vector<SampleEntry> indexingSamples() {
  std::vector<SampleEntry> s;
  s.push_back(entry("aten::topk", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const int rank = static_cast<int>(x.size());
    const int64_t d = oneDim(r, rank);
    return OpSample{"", "", {{"self", t(x)}, {"k", i(r.range(1, x[static_cast<size_t>(d < 0 ? d + rank : d)]))}, {"dim", i(d)},
                             {"largest", b(r.coin())}}};
  }));
  s.push_back(alongDim("aten::sort", "", {{"descending", b(true)}}));
  s.push_back(alongDim("aten::argsort", ""));
  for (const char* op : {"aten::cumsum", "aten::cumsum_", "aten::cumprod", "aten::cumprod_", "aten::cummax", "aten::cummin"})
    s.push_back(alongDim(op, ""));
  s.push_back(entry("aten::one_hot", [](Rand& r) {
    const int64_t classes = r.dim(2, 6);
    return OpSample{"", "", {{"self", index(anyShape(r, 1, 3), classes)}, {"num_classes", i(classes)}}};
  }));
  s.push_back(entry("aten::gather", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const int rank = static_cast<int>(x.size());
    const int64_t d = r.range(0, rank - 1);
    ir::Shape idx = x;
    for (size_t k = 0; k < idx.size(); ++k)
      if (static_cast<int64_t>(k) == d) idx[k] = r.dim(1, 6);
      else if (r.coin(0.3)) idx[k] = r.dim(1, idx[k]);
    return OpSample{"", "", {{"self", t(x)}, {"dim", i(d)}, {"index", index(idx, x[static_cast<size_t>(d)])}}};
  }));
  // x[..., idx, ...]: one index tensor (1-2 dimensions, negative entries too) at position p of the
  // list, Nones before it and sometimes after it.
  s.push_back(entry("aten::index", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const int rank = static_cast<int>(x.size());
    const int64_t p = r.range(0, rank - 1);
    std::vector<TensorSpec> indices(static_cast<size_t>(p), absentTensor());
    ir::Shape idx{r.dim(1, 5)};
    if (r.coin(0.3)) idx.push_back(r.dim(1, 3));
    TensorSpec spec = index(idx, x[static_cast<size_t>(p)]);
    if (r.coin(0.3)) spec.domain = Domain::Integer;  // in [-4, 5): negative entries count from the end
    if (spec.domain == Domain::Integer && x[static_cast<size_t>(p)] < 5) spec = index(idx, x[static_cast<size_t>(p)]);
    indices.push_back(spec);
    for (int64_t k = p + 1; k < rank; ++k)
      if (r.coin(0.3)) indices.push_back(absentTensor());
      else break;
    return OpSample{"", "Tensor", {{"self", t(x)}, {"indices", indices}}};
  }));
  // x[i0, :, i2] or x[:, i1, i2]: two or three index tensors broadcast together (shapes of up to
  // two dimensions, some of length 1 or missing), adjacent or apart (then their dimensions lead
  // the result).
  s.push_back(entry("aten::index", [](Rand& r) {
    const ir::Shape x = anyShape(r, 2, 4);
    const int rank = static_cast<int>(x.size());
    ir::Shape common{r.dim(1, 5)};
    if (r.coin(0.4)) common.push_back(r.dim(1, 3));
    std::vector<TensorSpec> indices;
    int tensors = 0;
    for (int p = 0; p < rank; ++p) {
      const bool take = tensors < 2 ? r.coin(0.6) || rank - p <= 2 - tensors : r.coin(0.3);
      if (!take) {
        indices.push_back(absentTensor());
        continue;
      }
      ir::Shape shape = r.broadcastable(common);
      if (tensors == 0) shape = common;  // one of them has the whole shape
      indices.push_back(index(shape, x[static_cast<size_t>(p)]));
      ++tensors;
    }
    while (!indices.empty() && indices.back().absent) indices.pop_back();
    return OpSample{"", "Tensor", {{"self", t(x)}, {"indices", indices}}};
  }));
  s.push_back(entry("aten::index_select", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const int rank = static_cast<int>(x.size());
    const int64_t d = oneDim(r, rank);
    return OpSample{"", "", {{"self", t(x)}, {"dim", i(d)}, {"index", index({r.dim(1, 6)}, x[static_cast<size_t>(d < 0 ? d + rank : d)])}}};
  }));
  // scatter writes src along `dim` at index; unique positions per lane (a random permutation's
  // head), so that no two sources meet.
  auto scatterArgs = [](Rand& r, bool add, bool value) {
    const ir::Shape x = anyShape(r, 1, 3);
    const int rank = static_cast<int>(x.size());
    const int64_t d = r.range(0, rank - 1);
    ir::Shape idx = x;
    idx[static_cast<size_t>(d)] = r.range(1, x[static_cast<size_t>(d)]);
    TensorSpec index = test::index(idx, x[static_cast<size_t>(d)]);
    OpSample s{"", value ? "value" : "src", {{"self", t(x)}, {"dim", i(d)}, {"index", index}}};
    if (value) s.args.push_back({"value", f(2.5)});
    else s.args.push_back({"src", t(idx)});
    if (add) s.overload = "";
    return s;
  };
  for (const char* op : {"aten::scatter", "aten::scatter_"}) {
    s.push_back(entry(op, [scatterArgs](Rand& r) { return scatterArgs(r, false, false); }));
    s.push_back(entry(op, [scatterArgs](Rand& r) { return scatterArgs(r, false, true); }));
  }
  for (const char* op : {"aten::scatter_add", "aten::scatter_add_"})
    s.push_back(entry(op, [scatterArgs](Rand& r) { return scatterArgs(r, true, false); }));
  return s;
}

}  // namespace hap::test
