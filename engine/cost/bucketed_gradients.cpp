#include "engine/cost/bucketed_gradients.h"

#include <algorithm>

#include "engine/cost/collective_cost.h"

namespace hap::cost {

double bucketedGradientSeconds(const Cluster& cluster, double bytes, double bucketBytes) {
  const double whole = allReduceSeconds(cluster, bytes);
  if (bucketBytes <= 0) return whole;
  const double call = allReduceSeconds(cluster, 0);
  return whole - call + call * std::min(1.0, bytes / bucketBytes);
}

}  // namespace hap::cost
