// Small helpers shared by the shape, matmul, convolution and indexing rule families.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "engine/rules/rule.h"

namespace hap::rules {

// A variant without SFB.
inline Variant makeVariant(std::string name, std::vector<rules::Rel> inputs,
                           std::vector<rules::Rel> outputs, std::string note = {}) {
  Variant v;
  v.name = std::move(name);
  v.inputs = std::move(inputs);
  v.outputs = std::move(outputs);
  v.note = std::move(note);
  return v;
}

// Whether dimension d of v may be sharded: it exists, fits a relation (rules::kMaxShardedRank)
// and has more than one element. A length-1 dimension is never sharded: one device would hold
// it all, and as a broadcast dimension it links to nothing.
inline bool shardable(const ir::Value& v, int d) {
  return d >= 0 && d < std::min(v.rank(), rules::kMaxShardedRank) &&
         v.shape[static_cast<size_t>(d)] > 1;
}

}  // namespace hap::rules
