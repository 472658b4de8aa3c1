#include "engine/rules/view_algebra.h"

#include <cstdint>

namespace hap::rules {

std::vector<DimLink> viewDimLinks(const ir::Shape& in, const ir::Shape& out) {
  if (ir::numel(in) == 0 || ir::numel(out) == 0 || ir::numel(in) != ir::numel(out)) return {};
  auto nonUnit = [](const ir::Shape& s) {
    std::vector<int> dims;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] != 1) dims.push_back(static_cast<int>(d));
    return dims;
  };
  const std::vector<int> a = nonUnit(in);
  const std::vector<int> b = nonUnit(out);
  std::vector<DimLink> links;
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    // One group: a[i..] and b[j..] up to the first equal products.
    const int64_t outerIn = in[static_cast<size_t>(a[i])];
    const int64_t outerOut = out[static_cast<size_t>(b[j])];
    if (outerIn % outerOut == 0 || outerOut % outerIn == 0) links.push_back({a[i], b[j]});
    int64_t prodIn = outerIn;
    int64_t prodOut = outerOut;
    ++i;
    ++j;
    while (prodIn != prodOut) {
      if (prodIn < prodOut)
        prodIn *= in[static_cast<size_t>(a[i++])];
      else
        prodOut *= out[static_cast<size_t>(b[j++])];
    }
  }
  return links;
}

}  // namespace hap::rules
