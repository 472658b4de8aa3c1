#include "runtime/core/gradient_buckets.h"

#include <c10/core/GradMode.h>
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include "engine/cost/bucketed_gradients.h"
#include "runtime/core/fault_injection.h"
#include "runtime/core/runtime_error.h"

namespace hap::runtime {

GradientBuckets::GradientBuckets(std::vector<LocalParameter>& params, const std::vector<int>& indices,
                                 Communicator& comm, int64_t bucketBytes)
    : params_(params), comm_(comm) {
  // The buckets the stage model prices (cost::assignGradientBuckets): reverse parameter order, a
  // new bucket when the current one is full or the dtype changes.
  std::vector<cost::GradientSlot> order;
  for (int i : indices) {
    const at::Tensor& v = params_.at(static_cast<size_t>(i)).value;
    order.push_back({v.numel() * static_cast<int64_t>(v.element_size()), static_cast<int>(v.scalar_type())});
  }
  std::vector<int64_t> sizes;  // elements per bucket
  for (const std::vector<size_t>& positions : cost::assignGradientBuckets(order, bucketBytes)) {
    buckets_.emplace_back();
    sizes.push_back(0);
    for (size_t k : positions) {
      const at::Tensor& v = params_.at(static_cast<size_t>(indices[k])).value;
      Slot s;
      s.parameter = indices[k];
      s.bucket = buckets_.size() - 1;
      s.offset = sizes.back();
      s.numel = v.numel();
      sizes.back() += v.numel();
      buckets_.back().slots.push_back(slots_.size());
      slots_.push_back(s);
    }
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
