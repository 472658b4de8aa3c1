#include "engine/cost/device_cost.h"

#include <algorithm>

namespace hap::cost {

double computeSeconds(const DeviceType& t, double flops, double bytes, ir::DType dtype) {
  if (flops <= 0 && bytes <= 0) return 0;
  double compute = flops > 0 ? flops / t.flops(dtype) : 0;
  double memory = bytes > 0 ? bytes / t.memoryBandwidth : 0;
  return std::max(compute, memory) + t.opOverheadSeconds;
}

double computeSeconds(const DeviceType& t, const ir::NodeCost& cost, ir::DType dtype) {
  return computeSeconds(
      t, cost.flops, static_cast<double>(cost.bytesRead) + static_cast<double>(cost.bytesWritten),
      dtype);
}

}  // namespace hap::cost
