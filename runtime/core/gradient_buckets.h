// The replicated parameters' gradients summed over ranks while backward still runs (the dual of
// `replicate-parameter`, ../shared/DESIGN.md §5), as DistributedDataParallel does it:
// - The parameters go into buckets of about `bucketBytes` (the first at most 1 MiB, so that
//   communication starts early), in reverse parameter order, which is about the order backward
//   reaches them, and one dtype per bucket. The assignment is the same on every rank.
// - A hook on each parameter copies its gradient into its bucket's flat buffer. The hook fires
//   once per backward with the sum over the parameter's uses (autograd runs a leaf's
//   accumulation once).
// - Bucket k starts its all-reduce (Communicator::allReduceAsync, a process group of its own)
//   when its gradients are in and buckets 0..k-1 have started. So every rank starts them in the
//   same order, whatever order its backward produces gradients in (ranks holding empty pieces
//   run slightly different graphs).
// - finish() runs after backward: a parameter that got no gradient contributes zeros, the
//   remaining buckets start in order, all are waited for, and each gradient becomes the sum.
//   Replicas stay bit-identical (every rank receives the same sum).
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/train/parameters.h"

namespace hap::runtime {

class GradientBuckets {
 public:
  using Clock = std::chrono::steady_clock;

  // `params[i]` for every i in `indices` (replicated parameters whose gradient is a partial
  // sum). `params` must outlive this object and keep its tensors. bucketBytes <= 0 gives one
  // bucket, which starts when the last gradient is in (no overlap).
  GradientBuckets(std::vector<LocalParameter>& params, const std::vector<int>& indices, Communicator& comm,
                  int64_t bucketBytes);
  ~GradientBuckets();  // removes the hooks
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Call right before backward: arms the hooks for one pass. Outside begin()..finish(), the
  // hooks leave gradients alone.
  void begin();
  // Call after backward (see the file comment). Throws RuntimeError when an all-reduce fails.
  void finish();

  // The last pass's all-reduces: bucket, size, start and return from wait().
  struct Span {
    std::string name;
    Clock::time_point start, end;
  };
  const std::vector<Span>& spans() const { return spans_; }
  size_t bucketCount() const { return buckets_.size(); }

 private:
  struct Slot {
    int parameter = 0;  // index into params_
    size_t bucket = 0;
    int64_t offset = 0, numel = 0;
    bool filled = false;
    unsigned hook = 0;
  };
  struct Bucket {
    at::Tensor flat;
    std::string name;  // for spans: "gradient bucket k (x MiB)"
    std::vector<size_t> slots;
    size_t filled = 0;
    std::unique_ptr<Communicator::Pending> pending;
    Clock::time_point started;
  };
  void onGradient(size_t slot, const at::Tensor& grad);
  void startReady();  // starts buckets in order while the next one is complete; mutex_ held

  std::vector<LocalParameter>& params_;
  Communicator& comm_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  size_t next_ = 0;  // the first bucket not started
  bool armed_ = false;
  std::mutex mutex_;  // hooks may run on autograd's device threads
  std::vector<Span> spans_;
};

}  // namespace hap::runtime
