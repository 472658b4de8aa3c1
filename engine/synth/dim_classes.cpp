#include "engine/synth/dim_classes.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

namespace hap::synth {

DimClasses::DimClasses(const ir::Graph& g) : g_(g) {
  offset_.reserve(g.values.size());
  for (const ir::Value& v : g.values) {
    offset_.push_back(static_cast<int>(length_.size()));
    for (int64_t len : v.shape) length_.push_back(len);
  }
  parent_.resize(length_.size());
  std::iota(parent_.begin(), parent_.end(), 0);
  gcd_ = length_;
}

int DimClasses::find(int i) const {
  while (parent_[static_cast<size_t>(i)] != i) {
    int& p = parent_[static_cast<size_t>(i)];
    p = parent_[static_cast<size_t>(p)];
    i = p;
  }
  return i;
}

bool DimClasses::compatible(DimRef a, DimRef b) const {
  int64_t la = length_[static_cast<size_t>(index(a))], lb = length_[static_cast<size_t>(index(b))];
  if (la == 0 || lb == 0) return la == lb;
  return la % lb == 0 || lb % la == 0;
}

bool DimClasses::link(DimRef a, DimRef b) {
  if (!compatible(a, b)) return false;
  int ra = find(index(a)), rb = find(index(b));
  if (ra == rb) return true;
  parent_[static_cast<size_t>(rb)] = ra;
  gcd_[static_cast<size_t>(ra)] = std::gcd(gcd_[static_cast<size_t>(ra)], gcd_[static_cast<size_t>(rb)]);
  return true;
}

int DimClasses::classOf(DimRef d) const { return find(index(d)); }

int64_t DimClasses::units(int cls) const { return gcd_[static_cast<size_t>(find(cls))]; }

int64_t DimClasses::unitSize(DimRef d) const {
  int64_t u = units(classOf(d));
  return u == 0 ? 0 : length_[static_cast<size_t>(index(d))] / u;
}

std::vector<int64_t> DimClasses::roundUnits(int64_t units, std::span<const double> shares) {
  assert(!shares.empty());
  std::vector<int64_t> out(shares.size());
  std::vector<double> frac(shares.size());
  int64_t assigned = 0;
  for (size_t j = 0; j < shares.size(); ++j) {
    double exact = shares[j] * static_cast<double>(units);
    out[j] = std::min<int64_t>(units, static_cast<int64_t>(std::floor(exact + 1e-9)));
    frac[j] = exact - static_cast<double>(out[j]);
    assigned += out[j];
  }
  // Shares summing to slightly more than 1 could overshoot: take back from the smallest fractions.
  std::vector<size_t> order(shares.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return frac[a] > frac[b]; });
  for (size_t i = 0; assigned < units; i = (i + 1) % order.size(), ++assigned) ++out[order[i]];
  for (size_t i = order.size(); assigned > units; ) {
    i = i == 0 ? order.size() - 1 : i - 1;
    if (out[order[i]] > 0) { --out[order[i]]; --assigned; }
  }
  return out;
}

std::vector<int64_t> DimClasses::lengths(DimRef d, std::span<const double> shares) const {
  std::vector<int64_t> out = roundUnits(units(classOf(d)), shares);
  const int64_t size = unitSize(d);
  for (int64_t& x : out) x *= size;
  return out;
}

}  // namespace hap::synth
