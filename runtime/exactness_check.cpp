#include "runtime/exactness_check.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <map>

#include "runtime/communicator.h"
#include "runtime/module_device.h"
#include "runtime/runtime_error.h"

namespace hap::rt {
namespace {

// The single-device program: the module (in `dtype`: float64 for the shadow of exact values),
// its parameters and buffers by qualified name, and LibTorch's own optimizer over the parameters.
class Reference {
 public:
  Reference(const std::string& modelPath, const OptimizerOptions& o, c10::Device device, at::ScalarType dtype)
      : module_(loadModuleOn(modelPath, device)), device_(device), dtype_(dtype), clipNorm_(o.clipNorm) {
    if (dtype != at::kFloat) module_.to(dtype);
    // The graph executor's optimisations (profiling, fusion) may reorder random draws from the
    // second call on: the reference runs the module's graph as written.
    torch::jit::setGraphExecutorOptimize(false);
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      p.value.set_requires_grad(true);
      params_.emplace(p.name, p.value);
      list_.push_back(p.value);
    }
    for (const auto& b : module_.named_buffers(/*recurse=*/true)) buffers_.emplace(b.name, b.value);
    switch (o.kind) {
      case OptimizerOptions::Kind::Sgd:
        optimizer_ = std::make_unique<torch::optim::SGD>(
            list_, torch::optim::SGDOptions(o.lr).momentum(o.momentum).weight_decay(o.weightDecay));
        break;
      case OptimizerOptions::Kind::Adam:
        optimizer_ = std::make_unique<torch::optim::Adam>(
            list_, torch::optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weightDecay));
        break;
      case OptimizerOptions::Kind::AdamW:
        optimizer_ = std::make_unique<torch::optim::AdamW>(
            list_, torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weightDecay));
        break;
    }
  }
  // Forward and backward on the whole batch, then clipping as the run clips; returns the loss.
  double forwardBackward(const std::vector<at::Tensor>& batch) {
    optimizer_->zero_grad();
    std::vector<c10::IValue> inputs;
    for (const at::Tensor& t : batch) inputs.emplace_back(t.is_floating_point() ? t.to(device_, dtype_) : t.to(device_));
    at::Tensor loss = module_.forward(inputs).toTensor();
    loss.backward();
    if (clipNorm_ > 0) torch::nn::utils::clip_grad_norm_(list_, clipNorm_);
    return loss.item<double>();
  }
  void step() { optimizer_->step(); }
  const at::Tensor& parameter(const std::string& name) const { return find(params_, name, "parameter"); }
  const at::Tensor& buffer(const std::string& name) const { return find(buffers_, name, "buffer"); }

 private:
  static const at::Tensor& find(const std::map<std::string, at::Tensor>& map, const std::string& name, const char* what) {
    auto it = map.find(name);
    if (it == map.end()) throw RuntimeError(fmt::format("check: the module has no {} '{}'", what, name));
    return it->second;
  }
  torch::jit::Module module_;
  c10::Device device_;
  at::ScalarType dtype_;
  double clipNorm_ = 0;
  std::map<std::string, at::Tensor> params_, buffers_;
  std::vector<at::Tensor> list_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

// The worst comparison of one kind so far: the largest error relative to its bound (over 1 fails).
struct Worst {
  double relative = 0;  // ‖a − b‖₂ / ‖b‖₂ of the worst tensor (for the report)
  double ratio = 0;     // ‖a − b‖₂ / (atol·√n + rtol·‖b‖₂); > 1 fails
  std::string name;
  int64_t step = 0;
  void note(double diff, double ref, double bound, const std::string& tensor, int64_t at) {
    const double r = bound > 0 ? diff / bound : (diff > 0 ? INFINITY : 0);
    if (r <= ratio) return;
    ratio = r;
    relative = diff / std::max(ref, 1e-30);
    name = tensor;
    step = at;
  }
};

}  // namespace

struct ExactnessCheck::Impl {
  Reference reference;  // the single-device program as the model file has it (float32)
  Reference exact;      // the same in float64: the values both programs approximate
  bool shadowed = true;  // the float64 shadow draws what the float32 program draws (see compareGradients)
  CheckTolerance tolerance;
  int programRank;
  Communicator& program;
  Communicator& world;
  Worst loss, gradients, parameters, buffers;

  Impl(const std::string& modelPath, const OptimizerOptions& o, c10::Device device, CheckTolerance t, int rank,
       Communicator& p, Communicator& w)
      : reference(modelPath, o, device, at::kFloat),
        exact(modelPath, o, device, at::kDouble),
        tolerance(t),
        programRank(rank),
        program(p),
        world(w) {}

  // Compares every tensor of `local` (this rank's pieces, as `like` cuts them) with the matching
  // pieces of the float64 values `exactFull(i)`, against the float32 single-device program's own
  // distance from them (`singleFull(i)`): the squared norms, summed over the ranks for cut
  // tensors, give the norm-wise verdict of each whole tensor (the header's tolerance).
  template <class Exact, class Single>
  void compare(const std::vector<LocalParameter>& like, const std::vector<at::Tensor>& local, Exact exactFull,
               Single singleFull, Worst& worst, int64_t step) {
    if (like.empty()) return;
    at::Tensor sums = at::zeros({static_cast<int64_t>(like.size()), 4}, at::kDouble);
    for (size_t i = 0; i < like.size(); ++i) {
      const LocalParameter& p = like[i];
      // A replicated tensor is counted once (rank 0's), a cut one on every rank (its piece).
      if (p.replicated() && programRank != 0) continue;
      const at::Tensor ref = pieceOf(p, exactFull(i), programRank).to(at::kCPU, at::kDouble);
      const at::Tensor single = pieceOf(p, singleFull(i), programRank).to(at::kCPU, at::kDouble);
      const at::Tensor got = local[i].detach().to(at::kCPU, at::kDouble);
      const int64_t row = static_cast<int64_t>(i);
      sums[row][0] = (got - ref).pow(2).sum().item<double>();
      sums[row][1] = ref.pow(2).sum().item<double>();
      sums[row][2] = (single - ref).pow(2).sum().item<double>();
      sums[row][3] = static_cast<double>(ref.numel());
    }
    program.allReduce(sums);
    for (size_t i = 0; i < like.size(); ++i) {
      const int64_t row = static_cast<int64_t>(i);
      const double diff = std::sqrt(sums[row][0].item<double>());
      const double ref = std::sqrt(sums[row][1].item<double>());
      const double single = shadowed ? std::sqrt(sums[row][2].item<double>()) : 0;
      const double n = sums[row][3].item<double>();
      const bool integral = !local[i].is_floating_point();
      worst.note(diff, ref, integral ? 0 : bound(ref, single, n), like[i].name, step);
    }
  }
  double bound(double ref, double single, double n) const {
    return std::max(tolerance.noise * single, tolerance.rtol * ref) + tolerance.atol * std::sqrt(n);
  }
};

ExactnessCheck::ExactnessCheck(const std::string& modelPath, const OptimizerOptions& optimizer, c10::Device device,
                               CheckTolerance tolerance, int programRank, Communicator& program, Communicator& world)
    : impl_(std::make_unique<Impl>(modelPath, optimizer, device, tolerance, programRank, program, world)) {}

ExactnessCheck::~ExactnessCheck() = default;

void ExactnessCheck::compareGradients(int64_t step, uint64_t seed, const std::vector<at::Tensor>& wholeBatch,
                                      const at::Tensor& partialLoss, const std::vector<LocalParameter>& params) {
  Impl& m = *impl_;
  at::manual_seed(seed);
  const double single = m.reference.forwardBackward(wholeBatch);
  at::manual_seed(seed);
  const double exact = m.exact.forwardBackward(wholeBatch);
  // The shadow stands for the exact values only if it draws the same random numbers (the same
  // dropout masks): its loss then lies within float32 rounding of the float32 program's. Where it
  // does not, the check falls back to fixed tolerances, and says so.
  if (std::abs(single - exact) > 1e-3 * std::max(std::abs(exact), 1.0)) m.shadowed = false;
  at::Tensor global = partialLoss.detach().to(at::kCPU, at::kDouble).reshape({1}).clone();
  m.world.allReduce(global);
  const double reference = m.shadowed ? exact : single;
  m.loss.note(std::abs(global.item<double>() - reference), std::abs(reference),
              m.bound(std::abs(reference), m.shadowed ? std::abs(single - exact) : 0, 1), "loss", step);
  std::vector<at::Tensor> grads;
  for (const LocalParameter& p : params)
    grads.push_back(p.value.grad().defined() ? p.value.grad() : at::zeros_like(p.value));
  auto gradientOf = [&](Reference& r) {
    return [&](size_t i) {
      const at::Tensor& g = r.parameter(params[i].name).grad();
      return g.defined() ? g : at::zeros(params[i].fullShape, params[i].value.options());
    };
  };
  m.compare(params, grads, m.shadowed ? gradientOf(m.exact) : gradientOf(m.reference), gradientOf(m.reference),
            m.gradients, step);
}

void ExactnessCheck::compareState(int64_t step, const std::vector<LocalParameter>& params,
                                  const std::vector<LocalBuffer>& buffers) {
  Impl& m = *impl_;
  m.reference.step();
  m.exact.step();
  Reference& truth = m.shadowed ? m.exact : m.reference;
  std::vector<at::Tensor> values;
  for (const LocalParameter& p : params) values.push_back(p.value);
  m.compare(params, values, [&](size_t i) { return truth.parameter(params[i].name).detach(); },
            [&](size_t i) { return m.reference.parameter(params[i].name).detach(); }, m.parameters, step);
  std::vector<at::Tensor> bufferValues;
  for (const LocalBuffer& b : buffers) bufferValues.push_back(b.value);
  m.compare(buffers, bufferValues, [&](size_t i) { return truth.buffer(buffers[i].name); },
            [&](size_t i) { return m.reference.buffer(buffers[i].name); }, m.buffers, step);
  // The next step starts from the run's state on every side.
  at::NoGradGuard noGrad;
  for (const LocalParameter& p : params) {
    const at::Tensor full = gatherFull(m.program, p, p.value.detach());
    m.reference.parameter(p.name).detach().copy_(full);
    m.exact.parameter(p.name).detach().copy_(full);
  }
  for (const LocalBuffer& b : buffers) {
    const at::Tensor full = gatherFull(m.program, b, b.value);
    for (Reference* r : {&m.reference, &m.exact}) {
      at::Tensor target = r->buffer(b.name);
      target.copy_(full);
    }
  }
}

bool ExactnessCheck::finish(const std::string& who, int64_t steps, const std::vector<LocalParameter>& params,
                            Communicator* peers) {
  Impl& m = *impl_;
  // Replicas bit-identical across the program's ranks and across machines.
  int64_t mismatches = 0;
  for (const LocalParameter& p : params) {
    if (p.replicated()) {
      at::Tensor first = p.value.detach().clone();
      m.program.broadcast(first, 0);
      if (!at::equal(first, p.value.detach())) ++mismatches;
    }
    if (peers) {
      at::Tensor first = p.value.detach().clone();
      peers->broadcast(first, 0);
      if (!at::equal(first, p.value.detach())) ++mismatches;
    }
  }
  const std::vector<Worst*> kinds = {&m.loss, &m.gradients, &m.parameters, &m.buffers};
  std::vector<double> local;
  for (const Worst* w : kinds) local.push_back(w->ratio);
  for (const Worst* w : kinds) local.push_back(w->relative);
  local.push_back(static_cast<double>(mismatches));
  at::Tensor worst = at::tensor(local, at::kDouble);
  m.world.allReduceMax(worst);
  const double* all = worst.data_ptr<double>();
  bool ok = all[8] == 0;
  for (size_t k = 0; k < kinds.size(); ++k) ok = ok && all[k] <= 1;
  auto part = [&](const char* what, size_t k) {
    const Worst& here = *kinds[k];
    std::string s = fmt::format("{} error {:.3g}", what, all[k + 4]);
    if (here.ratio > 0)
      s += k == 0 ? fmt::format(" (here: step {})", here.step + 1)
                  : fmt::format(" (here: {}, step {})", here.name, here.step + 1);
    if (all[k] > 1) s += fmt::format(", {:.3g}x the tolerance", all[k]);
    return s;
  };
  std::cout << fmt::format("check {}: {}, {}, {}, {} after {} steps (each from the same state, against float64; "
                           "tolerance {}), replicas {}; {}\n",
                           who, part("loss", 0), part("gradient", 1), part("parameter", 2), part("buffer", 3), steps,
                           m.shadowed ? fmt::format("{:g}x float32's own error, rtol {:g}, atol {:g}", m.tolerance.noise,
                                                    m.tolerance.rtol, m.tolerance.atol)
                                      : fmt::format("rtol {:g}, atol {:g}: the float64 program drew other random numbers",
                                                    m.tolerance.rtol, m.tolerance.atol),
                           all[8] == 0 ? "bit-identical" : "DIFFER", ok ? "PASS" : "FAIL")
            << std::flush;
  return ok;
}

}  // namespace hap::rt
