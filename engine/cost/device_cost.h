// Computation time of one op on one device: a roofline plus a per-op launch overhead
// (../shared/DESIGN.md §3 "Stages and cost"; derivation in docs/cost-model.md).
#pragma once

#include "engine/cost/cluster.h"
#include "engine/ir/dtype.h"
#include "engine/ir/graph.h"

namespace hap::cost {

// Seconds for an op that performs `flops` floating-point operations in `dtype` arithmetic and
// moves `bytes` to and from device memory, on one device of type t:
//
//   max(flops / t.flops(dtype), bytes / t.memoryBandwidth) + t.opOverheadSeconds
//
// An op with no work (flops = 0 and bytes = 0: a view) launches no kernel and costs 0.
// Bytes are bytes, never elements: a float16 tensor moves half the bytes of a float32 one.
double computeSeconds(const DeviceType& t, double flops, double bytes, ir::DType dtype);

// The same for an ir::NodeCost (bytes = read + written).
double computeSeconds(const DeviceType& t, const ir::NodeCost& cost, ir::DType dtype);

}  // namespace hap::cost
