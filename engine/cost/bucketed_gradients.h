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

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/cost/cluster.h"

namespace hap::cost {

// The runtime's bucket size (ExecutorOptions::bucketBytes and hap-worker's --bucket-bytes default).
inline constexpr int64_t kGradientBucketBytes = int64_t{4} << 20;
// The first bucket holds at most this much, so that communication starts early in backward.
inline constexpr int64_t kFirstGradientBucketBytes = int64_t{1} << 20;

// One replicated parameter's gradient, as bucketing sees it.
struct GradientSlot {
  int64_t bytes = 0;
  int dtype = 0;  // any id; a bucket holds one dtype
};

// The buckets the runtime all-reduces, in the order it starts them: each lists positions in
// `inParameterOrder` (the replicated parameters in the model's parameter order), in fill order.
// Reverse parameter order (about the order backward reaches them); a new bucket when the dtype
// changes or the next gradient would overfill it (the first holds at most
// kFirstGradientBucketBytes); a gradient larger than a bucket has one of its own. bucketBytes <= 0:
// one bucket per dtype run. The runtime (runtime/core/gradient_buckets.h) and the stage model
// (synth/stages.h) both call this, so the buckets priced are the buckets run.
std::vector<std::vector<size_t>> assignGradientBuckets(const std::vector<GradientSlot>& inParameterOrder,
                                                       int64_t bucketBytes);

// When each bucket's all-reduce runs: bucket k is started once its gradients are in (`ready[k]`,
// seconds from the start of the iteration) and buckets 0..k-1 have started, and runs after
// bucket k-1 on one communication channel for `seconds[k]`. Returns the [start, end) of each.
// The last end is max_k (ready[k] + seconds[k] + ... + seconds[last]) for non-decreasing starts.
struct BucketSpan {
  double start = 0, end = 0;
};
std::vector<BucketSpan> scheduleBuckets(const std::vector<double>& ready, const std::vector<double>& seconds);

// The step time of the all-reduce of a replicated parameter's gradient of `bytes`, bucketed:
//   allReduceSeconds(bytes) − call + call · min(1, bytes / bucketBytes),
// where call = allReduceSeconds(cluster, 0), the all-reduce's fixed cost. bucketBytes <= 0: one
// call per parameter (allReduceSeconds(bytes)). 0 on a one-device cluster.
double bucketedGradientSeconds(const Cluster& cluster, double bytes,
                               double bucketBytes = static_cast<double>(kGradientBucketBytes));

}  // namespace hap::cost
