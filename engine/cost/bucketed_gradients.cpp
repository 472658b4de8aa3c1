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

std::vector<std::vector<size_t>> assignGradientBuckets(const std::vector<GradientSlot>& inParameterOrder,
                                                       int64_t bucketBytes) {
  std::vector<std::vector<size_t>> buckets;
  int dtype = 0;
  int64_t filled = 0;
  for (size_t k = inParameterOrder.size(); k-- > 0;) {
    const GradientSlot& s = inParameterOrder[k];
    const int64_t cap = buckets.size() <= 1 ? std::min(kFirstGradientBucketBytes, bucketBytes) : bucketBytes;
    const bool fresh = buckets.empty() || dtype != s.dtype || (bucketBytes > 0 && filled > 0 && filled + s.bytes > cap);
    if (fresh) {
      buckets.emplace_back();
      dtype = s.dtype;
      filled = 0;
    }
    buckets.back().push_back(k);
    filled += s.bytes;
  }
  return buckets;
}

std::vector<BucketSpan> scheduleBuckets(const std::vector<double>& ready, const std::vector<double>& seconds) {
  std::vector<BucketSpan> spans(ready.size());
  double started = 0, free = 0;  // the last start; when the channel is free
  for (size_t k = 0; k < ready.size(); ++k) {
    started = std::max(ready[k], started);
    spans[k].start = std::max(started, free);
    spans[k].end = free = spans[k].start + seconds[k];
  }
  return spans;
}

}  // namespace hap::cost
