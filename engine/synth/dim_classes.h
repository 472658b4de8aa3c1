// Dimension classes: which tensor dimensions must be split identically (../shared/DESIGN.md §3
// "Ratios").
//
// Rule variants link the dimensions their G facts name (a linear's G(x,0) and G(y,0), a view's
// E and heads dimensions). Linked dimensions form a class. A class has U units, the gcd of its
// members' lengths; a member of length L is split in units of L/U elements. Integer shard
// lengths are derived per class from the ratios (roundUnits), so every member of a class is cut
// at the same relative positions — which is what makes views exact (a hidden dimension viewed as
// heads is only cut at multiples of the head size) and keeps linked tensors' local shapes equal.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/ir/graph.h"

namespace hap::synth {

struct DimRef {
  ir::ValueId value;
  int dim;
};

class DimClasses {
 public:
  explicit DimClasses(const ir::Graph& g);

  // Links two dimensions. Refused (returns false, nothing changes) unless one length divides the
  // other: only equal dimensions and views' merged/split dimensions may be linked.
  bool link(DimRef a, DimRef b);
  // Whether a and b may be linked (see link()).
  bool compatible(DimRef a, DimRef b) const;

  int classOf(DimRef d) const;
  int64_t units(int cls) const;       // U: the gcd of the member lengths
  int64_t unitSize(DimRef d) const;   // elements per unit of d: length / U

  // Splits U units by `shares` (non-negative, summing to 1): floor of each share, the remainder
  // given one unit at a time by largest fractional part (ties to the lower index). Preserves the
  // total and is deterministic; zero-length pieces are allowed.
  static std::vector<int64_t> roundUnits(int64_t units, std::span<const double> shares);
  // The exact per-device lengths of dimension d under `shares`.
  std::vector<int64_t> lengths(DimRef d, std::span<const double> shares) const;

 private:
  int index(DimRef d) const { return offset_[static_cast<size_t>(d.value)] + d.dim; }
  int find(int i) const;

  const ir::Graph& g_;
  std::vector<int> offset_;            // per value: index of its dim 0
  std::vector<int64_t> length_;        // per dim index
  mutable std::vector<int> parent_;    // union-find
  std::vector<int64_t> gcd_;           // per root
};

}  // namespace hap::synth
