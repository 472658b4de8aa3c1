// What one replicated parameter's gradient all-reduce costs a training step in our runtime
// (../shared/DESIGN.md §3 "The cost model is a model of our runtime"). The runtime does not
// all-reduce each gradient on its own: runtime/core/gradient_buckets.h packs the replicated
// parameters' gradients into buckets of about kGradientBucketBytes and all-reduces one bucket per
// call. So a parameter pays the bandwidth term of its own bytes and only its part of a call's
// fixed cost (the all-reduce's latency steps), in proportion to the share of a bucket it fills;
// a parameter larger than a bucket fills buckets of its own and pays a whole call.
//
// This keeps the price additive over parameters (the search adds it per parameter), and prices
// data parallelism's many small gradients as the few calls the runtime makes, instead of one call
// each: priced per parameter, a plan that shards a parameter instead of replicating it saved a
// whole call's latency, and plans with many small sharded collectives looked faster than data
// parallelism while they ran slower.
#pragma once

#include <cstdint>

#include "engine/cost/cluster.h"

namespace hap::cost {

// The runtime's bucket size (ExecutorOptions::bucketBytes and hap-worker's --bucket-bytes default).
inline constexpr int64_t kGradientBucketBytes = int64_t{4} << 20;

// The step time of the all-reduce of a replicated parameter's gradient of `bytes`, bucketed:
//   allReduceSeconds(bytes) − call + call · min(1, bytes / bucketBytes),
// where call = allReduceSeconds(cluster, 0), the all-reduce's fixed cost. bucketBytes <= 0: one
// call per parameter (allReduceSeconds(bytes)). 0 on a one-device cluster.
double bucketedGradientSeconds(const Cluster& cluster, double bytes,
                               double bucketBytes = static_cast<double>(kGradientBucketBytes));

}  // namespace hap::cost
