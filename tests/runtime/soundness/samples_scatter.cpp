// Samples of the scatter family (engine/rules/scatter.cpp): slice_scatter, select_scatter and
// diagonal_scatter as the importer's functionalization emits them (negative dims and indices,
// None and out-of-range slice ends, steps above one, offsets on both sides of the diagonal), and
// diagonal, the view diagonal_scatter writes back.
#include <algorithm>

#include "tests/runtime/soundness/op_samples.h"

namespace hap::test {
namespace {

SampleEntry entry(std::string op, SampleFn make) { return {std::move(op), std::move(make)}; }

// The length of x[start:end:step] along a dimension of `size` (Python's slice rules).
int64_t sliceLength(int64_t size, int64_t start, int64_t end, int64_t step) {
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + size : v, int64_t{0}, size); };
  const int64_t s = clamp(start), e = clamp(end);
  return e > s ? (e - s + step - 1) / step : 0;
}

}  // namespace

std::vector<SampleEntry> scatterSamples() {
  std::vector<SampleEntry> s;
  s.push_back(entry("aten::slice_scatter", [](Rand& r) {
    const int rank = static_cast<int>(r.range(1, 4));
    ir::Shape self = r.shape(rank, 1, 6);
    const int dim = static_cast<int>(r.range(0, rank - 1));
    const int64_t size = self[static_cast<size_t>(dim)];
    const int64_t start = r.range(-size, size - 1);
    const bool open = r.coin(0.3);  // end None, or past the end as traces write it
    const int64_t end = open ? size : r.range(-size, size + 1);
    const int64_t step = r.range(1, 3);
    ir::Shape src = self;
    src[static_cast<size_t>(dim)] = sliceLength(size, start, end, step);
    return OpSample{"aten::slice_scatter", "",
                    {{"self", t(self)}, {"src", t(src)},
                     {"dim", i(r.coin() ? dim : dim - rank)},
                     {"start", i(start)},
                     {"end", open ? (r.coin() ? none() : i(INT64_MAX)) : i(end)},
                     {"step", i(step)}}};
  }));
  s.push_back(entry("aten::select_scatter", [](Rand& r) {
    const int rank = static_cast<int>(r.range(1, 4));
    ir::Shape self = r.shape(rank, 1, 6);
    const int dim = static_cast<int>(r.range(0, rank - 1));
    const int64_t size = self[static_cast<size_t>(dim)];
    ir::Shape src = self;
    src.erase(src.begin() + dim);
    return OpSample{"aten::select_scatter", "",
                    {{"self", t(self)}, {"src", t(src)},
                     {"dim", i(r.coin() ? dim : dim - rank)},
                     {"index", i(r.range(-size, size - 1))}}};
  }));
  s.push_back(entry("aten::diagonal_scatter", [](Rand& r) {
    const int rank = static_cast<int>(r.range(2, 4));
    ir::Shape self = r.shape(rank, 1, 6);
    int d1 = static_cast<int>(r.range(0, rank - 1));
    int d2 = static_cast<int>(r.range(0, rank - 2));
    if (d2 >= d1) ++d2;
    const int64_t n1 = self[static_cast<size_t>(d1)], n2 = self[static_cast<size_t>(d2)];
    const int64_t offset = r.range(-(n1 - 1), n2 - 1);
    const int64_t length = std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2));
    ir::Shape src;
    for (int d = 0; d < rank; ++d)
      if (d != d1 && d != d2) src.push_back(self[static_cast<size_t>(d)]);
    src.push_back(length);
    return OpSample{"aten::diagonal_scatter", "",
                    {{"self", t(self)}, {"src", t(src)}, {"offset", i(offset)},
                     {"dim1", i(r.coin() ? d1 : d1 - rank)}, {"dim2", i(d2)}}};
  }));
  s.push_back(entry("aten::diagonal", [](Rand& r) {
    const int rank = static_cast<int>(r.range(2, 4));
    ir::Shape self = r.shape(rank, 1, 6);
    int d1 = static_cast<int>(r.range(0, rank - 1));
    int d2 = static_cast<int>(r.range(0, rank - 2));
    if (d2 >= d1) ++d2;
    const int64_t n1 = self[static_cast<size_t>(d1)], n2 = self[static_cast<size_t>(d2)];
    return OpSample{"aten::diagonal", "",
                    {{"self", t(self)}, {"offset", i(r.range(-(n1 - 1), n2 - 1))},
                     {"dim1", i(d1)}, {"dim2", i(r.coin() ? d2 : d2 - rank)}}};
  }));
  return s;
}

}  // namespace hap::test
