#include "runtime/core/gradient_buckets.h"

#include <c10/core/GradMode.h>
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include "runtime/core/fault_injection.h"
#include "runtime/core/runtime_error.h"

namespace hap::runtime {

namespace {
constexpr int64_t kFirstBucketBytes = int64_t{1} << 20;
}

GradientBuckets::GradientBuckets(std::vector<LocalParameter>& params, const std::vector<int>& indices,
                                 Communicator& comm, int64_t bucketBytes)
    : params_(params), comm_(comm) {
  // Reverse parameter order; a new bucket when the current one is full or the dtype changes.
  std::vector<int64_t> sizes;  // elements per bucket
  std::vector<at::ScalarType> types;
  int64_t bytes = 0;
  for (auto it = indices.rbegin(); it != indices.rend(); ++it) {
    const at::Tensor& v = params_.at(static_cast<size_t>(*it)).value;
    const int64_t size = v.numel() * static_cast<int64_t>(v.element_size());
    const int64_t cap = buckets_.size() <= 1 ? std::min(kFirstBucketBytes, bucketBytes) : bucketBytes;
    const bool fresh = buckets_.empty() || types.back() != v.scalar_type() ||
                       (bucketBytes > 0 && bytes > 0 && bytes + size > cap);
    if (fresh) {
      buckets_.emplace_back();
      sizes.push_back(0);
      types.push_back(v.scalar_type());
      bytes = 0;
    }
    Slot s;
    s.parameter = *it;
    s.bucket = buckets_.size() - 1;
    s.offset = sizes.back();
    s.numel = v.numel();
    sizes.back() += v.numel();
    bytes += size;
    buckets_.back().slots.push_back(slots_.size());
    slots_.push_back(s);
  }
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const at::Tensor& like = params_.at(static_cast<size_t>(slots_[buckets_[b].slots.front()].parameter)).value;
    buckets_[b].flat = at::zeros({sizes[b]}, like.options().requires_grad(false));
    buckets_[b].name = fmt::format("gradient bucket {} ({:.2f} MiB)", b,
                                   static_cast<double>(buckets_[b].flat.nbytes()) / (1 << 20));
  }
  for (size_t k = 0; k < slots_.size(); ++k)
    slots_[k].hook = params_[static_cast<size_t>(slots_[k].parameter)].value.register_hook(
        [this, k](const at::Tensor& grad) { onGradient(k, grad); });
}

GradientBuckets::~GradientBuckets() {
  for (const Slot& s : slots_) params_[static_cast<size_t>(s.parameter)].value.remove_hook(s.hook);
}

void GradientBuckets::begin() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Slot& s : slots_) s.filled = false;
  for (Bucket& b : buckets_) {
    b.filled = 0;
    b.pending.reset();
  }
  next_ = 0;
  spans_.clear();
  armed_ = true;
}

void GradientBuckets::onGradient(size_t k, const at::Tensor& grad) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!armed_) return;
  Slot& s = slots_[k];
  const LocalParameter& p = params_[static_cast<size_t>(s.parameter)];
  if (s.filled)
    throw RuntimeError(fmt::format("gradient of '{}' arrived twice in one backward pass (a runtime bug)", p.name));
  c10::NoGradGuard noGrad;
  Bucket& b = buckets_[s.bucket];
  b.flat.narrow(0, s.offset, s.numel).view(p.value.sizes()).copy_(grad.is_sparse() ? grad.to_dense() : grad);
  s.filled = true;
  if (++b.filled == b.slots.size()) startReady();
}

void GradientBuckets::startReady() {
  while (next_ < buckets_.size() && buckets_[next_].filled == buckets_[next_].slots.size()) {
    Bucket& b = buckets_[next_++];
    b.started = Clock::now();
    if (injectedFault() == Fault::DropReduction) continue;  // every rank keeps its partial sum
    b.pending = comm_.allReduceAsync(b.flat);
  }
}

void GradientBuckets::finish() {
  std::unique_lock<std::mutex> lock(mutex_);
  c10::NoGradGuard noGrad;
  for (Slot& s : slots_) {
    if (s.filled) continue;  // unused on this rank in this pass: contributes zeros
    Bucket& b = buckets_[s.bucket];
    b.flat.narrow(0, s.offset, s.numel).zero_();
    s.filled = true;
    ++b.filled;
  }
  startReady();
  armed_ = false;
  lock.unlock();
  for (Bucket& b : buckets_) {
    if (b.pending) b.pending->wait();
    if (injectedFault() == Fault::DoubleAllReduce) comm_.allReduceAsync(b.flat)->wait();
    spans_.push_back({b.name, b.started, Clock::now()});
  }
  for (const Slot& s : slots_) {
    at::Tensor& value = params_[static_cast<size_t>(s.parameter)].value;
    const at::Tensor sum = buckets_[s.bucket].flat.narrow(0, s.offset, s.numel).view(value.sizes());
    if (value.grad().defined()) value.mutable_grad().copy_(sum);
    else value.mutable_grad() = sum.clone();
  }
}

}  // namespace hap::runtime
