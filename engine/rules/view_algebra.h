// The dimension algebra of views: how a view (reshape) carries a G dimension from its input to its
// output.
#pragma once

#include <vector>

#include "engine/ir/graph.h"

namespace hap::rules {

// A G(in) → G(out) correspondence of a view.
struct DimLink {
  int in;
  int out;
};

// The dimensions a view from shape `in` to shape `out` (same element count, row-major order kept)
// carries G along. Length-1 dimensions are dropped; the remaining dimensions of both shapes are
// cut into minimal groups of equal products ([B,S,E] → [B·S,E] gives {B,S}→{B·S}, {E}→{E}).
// Within a group only the outermost dimensions link, and only when one length divides the other:
// then every device's contiguous range of the input dimension is a contiguous range of the output
// dimension (with the longer one cut at multiples of the ratio: E → [heads, head size] cuts E at
// multiples of the head size). Any other dimension of a group interleaves with its outer ones
// and cannot be sharded. One link per group, in dimension order; none if a length is 0.
std::vector<DimLink> viewDimLinks(const ir::Shape& in, const ir::Shape& out);

}  // namespace hap::rules
