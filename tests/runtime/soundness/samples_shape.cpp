// Samples of the shape family (engine/rules/shape.cpp): views that merge and split dimensions
// (-1 included), squeezes, permutations, expands and repeats, select/slice/narrow with offsets
// and steps, cat/stack, and the splits.
#include <algorithm>
#include <numeric>

#include "tests/runtime/soundness/op_samples.h"

namespace hap::test {
namespace {

ir::Shape anyShape(Rand& r, int lo, int hi) { return r.shape(static_cast<int>(r.range(lo, hi))); }
int64_t oneDim(Rand& r, int rank) { return r.range(-rank, rank - 1); }

SampleEntry entry(std::string op, SampleFn make) { return {std::move(op), std::move(make)}; }

// A view of `x`: some adjacent dimensions merged, some split into two factors, length-1 dims
// inserted.
ir::Shape viewOf(Rand& r, const ir::Shape& x) {
  ir::Shape y;
  for (size_t k = 0; k < x.size(); ++k) {
    int64_t d = x[k];
    if (k + 1 < x.size() && r.coin(0.3)) d *= x[++k];  // merge with the next
    int64_t factor = 0;
    for (int64_t f = 2; f < d; ++f)
      if (d % f == 0 && r.coin(0.5)) factor = f;
    if (factor && r.coin(0.5)) {
      y.push_back(factor);
      y.push_back(d / factor);
    } else {
      y.push_back(d);
    }
    if (r.coin(0.1)) y.push_back(1);
  }
  return y;
}

// x's shape with a composite dimension, so that views split it.
ir::Shape viewable(Rand& r) {
  ir::Shape x = anyShape(r, 1, 3);
  x[static_cast<size_t>(r.range(0, static_cast<int64_t>(x.size()) - 1))] *= r.dim(2, 4);
  return x;
}

std::vector<int64_t> withMinusOne(Rand& r, ir::Shape y) {
  if (r.coin(0.3)) y[static_cast<size_t>(r.range(0, static_cast<int64_t>(y.size()) - 1))] = -1;
  return y;
}

std::vector<int64_t> permutation(Rand& r, int rank) {
  std::vector<int64_t> p(static_cast<size_t>(rank));
  std::iota(p.begin(), p.end(), 0);
  std::shuffle(p.begin(), p.end(), r.generator());
  return p;
}

}  // namespace

std::vector<SampleEntry> shapeSamples() {
  std::vector<SampleEntry> s;
  for (const char* op : {"aten::view", "aten::_unsafe_view"})
    s.push_back(entry(op, [](Rand& r) {
      const ir::Shape x = viewable(r);
      return OpSample{"", "", {{"self", t(x)}, {"size", ints(withMinusOne(r, viewOf(r, x)))}}};
    }));
  s.push_back(entry("aten::reshape", [](Rand& r) {
    const ir::Shape x = viewable(r);
    return OpSample{"", "", {{"self", t(x)}, {"shape", ints(withMinusOne(r, viewOf(r, x)))}}};
  }));
  for (const char* op : {"aten::view_as", "aten::reshape_as"})
    s.push_back(entry(op, [](Rand& r) {
      const ir::Shape x = viewable(r);
      return OpSample{"", "", {{"self", t(x)}, {"other", t(viewOf(r, x))}}};
    }));
  s.push_back(entry("aten::flatten", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const int rank = static_cast<int>(x.size());
    const int64_t a = r.range(0, rank - 1), z = r.range(a, rank - 1);
    return OpSample{"", "using_ints", {{"self", t(x)}, {"start_dim", i(a)}, {"end_dim", i(z == rank - 1 && r.coin() ? -1 : z)}}};
  }));
  s.push_back(entry("aten::unflatten", [](Rand& r) {
    ir::Shape x = anyShape(r, 1, 3);
    const int64_t d = r.range(0, static_cast<int64_t>(x.size()) - 1);
    const int64_t a = r.dim(1, 4), c = r.dim(1, 4);
    x[static_cast<size_t>(d)] = a * c;
    return OpSample{"", "int", {{"self", t(x)}, {"dim", i(d)}, {"sizes", ints({a, r.coin() ? -1 : c})}}};
  }));
  for (const char* op : {"aten::squeeze", "aten::squeeze_"}) {
    s.push_back(entry(op, [](Rand& r) {
      ir::Shape x = anyShape(r, 1, 4);
      x.insert(x.begin() + r.range(0, static_cast<int64_t>(x.size())), 1);
      return OpSample{"", "", {{"self", t(x)}}};
    }));
    s.push_back(entry(op, [](Rand& r) {
      ir::Shape x = anyShape(r, 1, 4);
      const int64_t at = r.range(0, static_cast<int64_t>(x.size()));
      x.insert(x.begin() + at, 1);
      return OpSample{"", "dim", {{"self", t(x)}, {"dim", i(r.coin(0.8) ? at : oneDim(r, static_cast<int>(x.size())))}}};
    }));
  }
  for (const char* op : {"aten::unsqueeze", "aten::unsqueeze_"})
    s.push_back(entry(op, [](Rand& r) {
      const ir::Shape x = anyShape(r, 1, 3);
      return OpSample{"", "", {{"self", t(x)}, {"dim", i(r.range(-static_cast<int64_t>(x.size()) - 1, static_cast<int64_t>(x.size())))}}};
    }));
  s.push_back(entry("aten::permute", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    return OpSample{"", "", {{"self", t(x)}, {"dims", ints(permutation(r, static_cast<int>(x.size())))}}};
  }));
  for (const char* op : {"aten::transpose", "aten::transpose_", "aten::swapdims"})
    s.push_back(entry(op, [op](Rand& r) {
      const ir::Shape x = anyShape(r, 1, 4);
      const int rank = static_cast<int>(x.size());
      return OpSample{"", std::string(op) == "aten::transpose" ? "int" : "",
                      {{"self", t(x)}, {"dim0", i(oneDim(r, rank))}, {"dim1", i(oneDim(r, rank))}}};
    }));
  s.push_back(entry("aten::swapaxes", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const int rank = static_cast<int>(x.size());
    return OpSample{"", "", {{"self", t(x)}, {"axis0", i(oneDim(r, rank))}, {"axis1", i(oneDim(r, rank))}}};
  }));
  for (const char* op : {"aten::t", "aten::t_"})
    s.push_back(entry(op, [](Rand& r) { return OpSample{"", "", {{"self", t(anyShape(r, 1, 2))}}}; }));
  s.push_back(entry("aten::movedim", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const int rank = static_cast<int>(x.size());
    return OpSample{"", "int", {{"self", t(x)}, {"source", i(oneDim(r, rank))}, {"destination", i(oneDim(r, rank))}}};
  }));
  s.push_back(entry("aten::movedim", [](Rand& r) {
    const ir::Shape x = anyShape(r, 2, 4);
    const int rank = static_cast<int>(x.size());
    std::vector<int64_t> from = permutation(r, rank), to = permutation(r, rank);
    from.resize(2);
    to.resize(2);
    return OpSample{"", "intlist", {{"self", t(x)}, {"source", ints(from)}, {"destination", ints(to)}}};
  }));
  // expand: length-1 dimensions grow and new leading dimensions appear; -1 keeps a length.
  auto expanded = [](Rand& r, ir::Shape& x, std::vector<int64_t>& size) {
    x = anyShape(r, 1, 3);
    for (int64_t& d : x)
      if (r.coin(0.4)) d = 1;
    size.assign(x.begin(), x.end());
    for (size_t k = 0; k < x.size(); ++k) {
      if (x[k] == 1 && r.coin(0.7)) size[k] = r.dim(2, 5);
      else if (r.coin(0.3)) size[k] = -1;
    }
    if (r.coin(0.4)) size.insert(size.begin(), r.dim(2, 4));
  };
  s.push_back(entry("aten::expand", [expanded](Rand& r) {
    ir::Shape x;
    std::vector<int64_t> size;
    expanded(r, x, size);
    return OpSample{"", "", {{"self", t(x)}, {"size", ints(size)}}};
  }));
  s.push_back(entry("aten::broadcast_to", [expanded](Rand& r) {
    ir::Shape x;
    std::vector<int64_t> size;
    expanded(r, x, size);
    for (size_t k = 0; k < size.size(); ++k)
      if (size[k] == -1) size[k] = x[k - (size.size() - x.size())];
    return OpSample{"", "", {{"self", t(x)}, {"size", ints(size)}}};
  }));
  s.push_back(entry("aten::expand_as", [expanded](Rand& r) {
    ir::Shape x;
    std::vector<int64_t> size;
    expanded(r, x, size);
    for (size_t k = 0; k < size.size(); ++k)
      if (size[k] == -1) size[k] = x[k - (size.size() - x.size())];
    return OpSample{"", "", {{"self", t(x)}, {"other", t(size)}}};
  }));
  s.push_back(entry("aten::broadcast_tensors", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    std::vector<TensorSpec> parts{t(x)};
    for (int64_t k = 0, n = r.range(1, 2); k < n; ++k) parts.push_back(t(r.broadcastable(x)));
    std::shuffle(parts.begin(), parts.end(), r.generator());
    return OpSample{"", "", {{"tensors", parts}}};
  }));
  s.push_back(entry("aten::repeat", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 3);
    std::vector<int64_t> repeats;
    if (r.coin(0.3)) repeats.push_back(r.dim(2, 3));
    for (size_t k = 0; k < x.size(); ++k) repeats.push_back(r.coin(0.6) ? 1 : r.dim(2, 3));
    return OpSample{"", "", {{"self", t(x)}, {"repeats", ints(repeats)}}};
  }));
  s.push_back(entry("aten::repeat_interleave", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    OpSample sample{"", "self_int", {{"self", t(x)}, {"repeats", i(r.range(1, 3))}}};
    if (r.coin(0.85)) sample.args.emplace_back("dim", i(oneDim(r, static_cast<int>(x.size()))));
    return sample;
  }));
  for (const char* op : {"aten::contiguous", "aten::clone"})
    s.push_back(entry(op, [](Rand& r) { return OpSample{"", "", {{"self", t(anyShape(r, 1, 4))}}}; }));
  s.push_back(entry("aten::select", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const int rank = static_cast<int>(x.size());
    const int64_t d = oneDim(r, rank);
    const int64_t len = x[static_cast<size_t>(d < 0 ? d + rank : d)];
    return OpSample{"", "int", {{"self", t(x)}, {"dim", i(d)}, {"index", i(r.range(-len, len - 1))}}};
  }));
  s.push_back(entry("aten::slice", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const int rank = static_cast<int>(x.size());
    const int64_t d = oneDim(r, rank);
    const int64_t len = x[static_cast<size_t>(d < 0 ? d + rank : d)];
    const bool whole = r.coin(0.4);
    return OpSample{"", "Tensor", {{"self", t(x)}, {"dim", i(d)},
                                   {"start", whole ? none() : i(r.range(0, len - 1))},
                                   {"end", whole ? i(INT64_MAX) : i(r.range(1, len + 2))},
                                   {"step", i(whole ? 1 : r.range(1, 2))}}};
  }));
  s.push_back(entry("aten::narrow", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const int64_t d = r.range(0, static_cast<int64_t>(x.size()) - 1);
    const int64_t start = r.range(0, x[static_cast<size_t>(d)] - 1);
    return OpSample{"", "", {{"self", t(x)}, {"dim", i(d)}, {"start", i(start)},
                             {"length", i(r.range(0, x[static_cast<size_t>(d)] - start))}}};
  }));
  for (const char* op : {"aten::cat", "aten::concat", "aten::concatenate"})
    s.push_back(entry(op, [](Rand& r) {
      const ir::Shape x = anyShape(r, 1, 3);
      const int rank = static_cast<int>(x.size());
      const int64_t d = oneDim(r, rank);
      std::vector<TensorSpec> parts;
      for (int64_t k = 0, n = r.range(1, 3); k < n; ++k) {
        ir::Shape p = x;
        p[static_cast<size_t>(d < 0 ? d + rank : d)] = r.dim(1, 4);
        parts.push_back(t(p));
      }
      return OpSample{"", "", {{"tensors", parts}, {"dim", i(d)}}};
    }));
  s.push_back(entry("aten::stack", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 3);
    std::vector<TensorSpec> parts(static_cast<size_t>(r.range(1, 3)), t(x));
    return OpSample{"", "", {{"tensors", parts}, {"dim", i(r.range(-static_cast<int64_t>(x.size()) - 1, static_cast<int64_t>(x.size())))}}};
  }));
  s.push_back(entry("aten::chunk", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    return OpSample{"", "", {{"self", t(x)}, {"chunks", i(r.dim(1, 3))}, {"dim", i(oneDim(r, static_cast<int>(x.size())))}}};
  }));
  s.push_back(entry("aten::split", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    return OpSample{"", "Tensor", {{"self", t(x)}, {"split_size", i(r.dim(1, 3))}, {"dim", i(oneDim(r, static_cast<int>(x.size())))}}};
  }));
  s.push_back(entry("aten::split_with_sizes", [](Rand& r) {
    ir::Shape x = anyShape(r, 1, 4);
    const int64_t d = r.range(0, static_cast<int64_t>(x.size()) - 1);
    std::vector<int64_t> sizes{r.dim(1, 3), r.dim(0, 3)};
    x[static_cast<size_t>(d)] = sizes[0] + sizes[1];
    return OpSample{"", "", {{"self", t(x)}, {"split_sizes", ints(sizes)}, {"dim", i(d)}}};
  }));
  // tensor_split by int indices (MViT's class token: indices=(1,)) or by a number of sections.
  s.push_back(entry("aten::tensor_split", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const int64_t d = oneDim(r, static_cast<int>(x.size()));
    if (r.coin()) return OpSample{"", "sections", {{"self", t(x)}, {"sections", i(r.dim(1, 3))}, {"dim", i(d)}}};
    std::vector<int64_t> cuts{r.range(0, 3)};
    if (r.coin()) cuts.push_back(cuts[0] + r.range(0, 3));
    return OpSample{"", "indices", {{"self", t(x)}, {"indices", ints(cuts)}, {"dim", i(d)}}};
  }));
  s.push_back(entry("aten::unbind", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    return OpSample{"", "int", {{"self", t(x)}, {"dim", i(oneDim(r, static_cast<int>(x.size())))}}};
  }));
  return s;
}

}  // namespace hap::test
