#include "runtime/train/optimizer.h"

#include <c10/core/GradMode.h>
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <unordered_set>

#include "runtime/comm/communicator.h"
#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

constexpr const char* kMomentumBuffer = "momentum_buffer";
constexpr const char* kExpAvg = "exp_avg";
constexpr const char* kExpAvgSq = "exp_avg_sq";

// torch::optim keys its per-parameter state by the parameter's TensorImpl: as the pointer printed
// to a string in LibTorch 1.x, as the pointer itself in 2.x. Derived from the map's key type, so
// both compile without a version switch.
template <class Map>
typename Map::key_type stateKey(const Map&, const at::Tensor& p) {
  using Key = typename Map::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream os;
    os << static_cast<const void*>(p.unsafeGetTensorImpl());
    return os.str();
  } else {
    return static_cast<Key>(static_cast<void*>(p.unsafeGetTensorImpl()));
  }
}

void checkOption(bool ok, const char* name, double value, const char* range) {
  if (!ok)
    throw RuntimeError(fmt::format("optimizer option {} = {} is out of range; it must be {}", name, value, range));
}

void checkOptions(const OptimizerOptions& o) {
  checkOption(std::isfinite(o.lr) && o.lr >= 0, "lr", o.lr, ">= 0");
  checkOption(std::isfinite(o.momentum) && o.momentum >= 0, "momentum", o.momentum, ">= 0");
  checkOption(o.beta1 >= 0 && o.beta1 < 1, "beta1", o.beta1, "in [0, 1)");
  checkOption(o.beta2 >= 0 && o.beta2 < 1, "beta2", o.beta2, "in [0, 1)");
  checkOption(std::isfinite(o.eps) && o.eps >= 0, "eps", o.eps, ">= 0");
  checkOption(std::isfinite(o.weightDecay) && o.weightDecay >= 0, "weight decay", o.weightDecay, ">= 0");
  checkOption(std::isfinite(o.clipNorm) && o.clipNorm >= 0, "clip norm", o.clipNorm, ">= 0 (0: no clipping)");
}

// A copy of `source` with the piece `like`'s shape, dtype, device and layout.
at::Tensor copyLike(const at::Tensor& like, const at::Tensor& source, const std::string& what) {
  if (!source.defined() || source.sizes() != like.sizes())
    throw std::logic_error(fmt::format("optimizer state {}: {} for a piece of shape {}", what,
                                       source.defined() ? ir::formatShape(source.sizes().vec()) : "missing",
                                       ir::formatShape(like.sizes().vec())));
  c10::NoGradGuard noGrad;
  return at::empty_like(like.detach(), at::MemoryFormat::Preserve).copy_(source);
}

}  // namespace

// The LibTorch optimizer over the pieces; null when the rank holds no parameter at all.
struct Optimizer::Impl {
  std::unique_ptr<torch::optim::Optimizer> torch;
};

Optimizer::Optimizer(std::vector<LocalParameter>& params, OptimizerOptions options)
    : params_(&params), options_(options), paramSteps_(params.size(), 0), impl_(std::make_unique<Impl>()) {
  checkOptions(options_);
  std::vector<at::Tensor> tensors;
  std::unordered_set<const void*> seen;
  for (const LocalParameter& p : params) {
    if (!p.value.defined()) throw std::logic_error(fmt::format("Optimizer: parameter '{}' has no value", p.name));
    if (!seen.insert(p.value.unsafeGetTensorImpl()).second)
      throw std::logic_error(fmt::format("Optimizer: parameter '{}' shares its tensor with another", p.name));
    tensors.push_back(p.value);
  }
  if (tensors.empty()) return;
  const OptimizerOptions& o = options_;
  switch (o.kind) {
    case OptimizerOptions::Kind::Sgd:
      impl_->torch = std::make_unique<torch::optim::SGD>(
          tensors, torch::optim::SGDOptions(o.lr).momentum(o.momentum).weight_decay(o.weightDecay));
      break;
    case OptimizerOptions::Kind::Adam:
      impl_->torch = std::make_unique<torch::optim::Adam>(
          tensors, torch::optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weightDecay));
      break;
    case OptimizerOptions::Kind::AdamW:
      impl_->torch = std::make_unique<torch::optim::AdamW>(
          tensors, torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weightDecay));
      break;
  }
}

Optimizer::~Optimizer() = default;

double Optimizer::clipGradients(Communicator& comm) {
  // One float64 scalar: this rank's sharded pieces, plus on rank 0 only the replicated parameters
  // (whose gradients are identical everywhere, so they count once). Its all-reduce is the global
  // squared norm, bit-identical on every rank by the communicator's contract, even where ranks'
  // devices would round a local sum differently.
  at::Device device = params_->empty() ? at::Device(at::kCPU) : params_->front().value.device();
  at::Tensor squares = at::zeros({1}, at::TensorOptions().dtype(at::kDouble).device(device));
  {
    c10::NoGradGuard noGrad;
    for (const LocalParameter& p : *params_) {
      const at::Tensor& g = p.value.grad();
      if (!g.defined() || (p.replicated() && comm.rank() != 0)) continue;
      // Per tensor in its own dtype, as clip_grad_norm_ does: one pass, no float64 copy of it.
      squares.add_(g.detach().norm().to(at::kDouble).square());
    }
  }
  comm.allReduce(squares);
  const double norm = std::sqrt(squares.item<double>());
  if (options_.clipNorm > 0) {
    const double coefficient = options_.clipNorm / (norm + 1e-6);
    if (!(coefficient >= 1.0)) {  // a NaN norm scales by NaN, as PyTorch does
      c10::NoGradGuard noGrad;
      for (const LocalParameter& p : *params_)
        if (p.value.grad().defined()) p.value.mutable_grad().mul_(coefficient);
    }
  }
  return norm;
}

void Optimizer::step() {
  for (size_t i = 0; i < params_->size(); ++i)
    if ((*params_)[i].value.grad().defined()) ++paramSteps_[i];
  if (impl_->torch) impl_->torch->step();
  ++steps_;
}

void Optimizer::zeroGrad() {
  for (LocalParameter& p : *params_) p.value.mutable_grad() = at::Tensor();
}

void Optimizer::setLearningRate(double lr) {
  checkOption(std::isfinite(lr) && lr >= 0, "lr", lr, ">= 0");
  options_.lr = lr;
  if (impl_->torch)
    for (auto& group : impl_->torch->param_groups()) group.options().set_lr(lr);
}

std::vector<std::string> Optimizer::stateNames() const {
  switch (options_.kind) {
    case OptimizerOptions::Kind::Sgd:
      if (options_.momentum == 0) return {};
      return {kMomentumBuffer};
    case OptimizerOptions::Kind::Adam:
    case OptimizerOptions::Kind::AdamW: return {kExpAvg, kExpAvgSq};
  }
  return {};
}

ParameterState Optimizer::state(size_t i) const {
  const at::Tensor& p = params_->at(i).value;
  ParameterState out;
  out.step = paramSteps_[i];
  torch::optim::OptimizerParamState* raw = nullptr;
  if (impl_->torch) {
    auto& map = impl_->torch->state();
    auto it = map.find(stateKey(map, p));
    if (it != map.end()) raw = it->second.get();
  }
  c10::NoGradGuard noGrad;
  auto copyOrZeros = [&](const at::Tensor& t) {
    return t.defined() ? t.detach().clone() : at::zeros_like(p.detach(), at::MemoryFormat::Preserve);
  };
  switch (options_.kind) {
    case OptimizerOptions::Kind::Sgd: {
      if (options_.momentum == 0) break;
      auto* s = static_cast<torch::optim::SGDParamState*>(raw);
      out.tensors[kMomentumBuffer] = copyOrZeros(s ? s->momentum_buffer() : at::Tensor());
      break;
    }
    case OptimizerOptions::Kind::Adam: {
      auto* s = static_cast<torch::optim::AdamParamState*>(raw);
      out.tensors[kExpAvg] = copyOrZeros(s ? s->exp_avg() : at::Tensor());
      out.tensors[kExpAvgSq] = copyOrZeros(s ? s->exp_avg_sq() : at::Tensor());
      break;
    }
    case OptimizerOptions::Kind::AdamW: {
      auto* s = static_cast<torch::optim::AdamWParamState*>(raw);
      out.tensors[kExpAvg] = copyOrZeros(s ? s->exp_avg() : at::Tensor());
      out.tensors[kExpAvgSq] = copyOrZeros(s ? s->exp_avg_sq() : at::Tensor());
      break;
    }
  }
  return out;
}

void Optimizer::setState(size_t i, const ParameterState& state) {
  const LocalParameter& param = params_->at(i);
  const at::Tensor& p = param.value;
  paramSteps_[i] = state.step;
  if (!impl_->torch) return;
  auto& map = impl_->torch->state();
  const auto key = stateKey(map, p);
  map.erase(key);
  if (state.step == 0) return;  // no state equals zero-filled state
  auto tensor = [&](const char* name) {
    auto it = state.tensors.find(name);
    return copyLike(p, it == state.tensors.end() ? at::Tensor() : it->second, param.name + "." + name);
  };
  // Adam and AdamW keep the same state in distinct LibTorch types.
  auto restoreAdam = [&](auto s) {
    s->step(state.step);
    s->exp_avg(tensor(kExpAvg));
    s->exp_avg_sq(tensor(kExpAvgSq));
    map[key] = std::move(s);
  };
  switch (options_.kind) {
    case OptimizerOptions::Kind::Sgd: {
      if (options_.momentum == 0) return;
      auto s = std::make_unique<torch::optim::SGDParamState>();
      s->momentum_buffer(tensor(kMomentumBuffer));
      map[key] = std::move(s);
      return;
    }
    case OptimizerOptions::Kind::Adam:
      return restoreAdam(std::make_unique<torch::optim::AdamParamState>());
    case OptimizerOptions::Kind::AdamW:
      return restoreAdam(std::make_unique<torch::optim::AdamWParamState>());
  }
}

}  // namespace hap::runtime
