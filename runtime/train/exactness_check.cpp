#include "runtime/train/exactness_check.h"

#include <c10/core/GradMode.h>
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include "runtime/comm/communicator.h"
#include "runtime/core/counter_dropout.h"
#include "runtime/core/module_device.h"
#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

// Makes every floating dtype argument of `block`'s ops (to(x, float32), zeros(..., dtype=float32))
// name `dtype`, as the executor does for a run in that dtype (ExecutorOptions::floating).
void rewriteDtypes(torch::jit::Block* block, torch::jit::Graph& graph, at::ScalarType dtype) {
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) rewriteDtypes(inner, graph, dtype);
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (!schema) continue;
    for (size_t i = 0; i < node->inputs().size() && i < schema->arguments().size(); ++i) {
      if (schema->arguments()[i].name() != "dtype") continue;
      const c10::optional<c10::IValue> value = torch::jit::toIValue(node->inputs()[i]);
      if (!value || !value->isInt() || !at::isFloatingType(static_cast<at::ScalarType>(value->toInt()))) continue;
      torch::jit::WithInsertPoint at(node);
      node->replaceInput(i, graph.insertConstant(static_cast<int64_t>(dtype)));
    }
  }
}

// The single-device program: the module (in `dtype`: float64 for the shadow of exact values),
// its parameters and buffers by qualified name, and LibTorch's own optimizer over the parameters.
class Reference {
 public:
  Reference(const std::string& modelPath, const OptimizerOptions& o, c10::Device device, at::ScalarType dtype)
      : module_(loadModuleOn(modelPath, device)), device_(device), dtype_(dtype), clipNorm_(o.clipNorm) {
    // Module::to(dtype) would convert integer buffers too (an index table): floating ones only.
    // The graphs' floating dtype constants name `dtype` too (with the default dtype the caller
    // sets, factories without one make it).
    if (dtype != at::kFloat) {
      c10::NoGradGuard noGrad;
      for (const auto& p : module_.named_parameters(/*recurse=*/true))
        if (p.value.is_floating_point()) p.value.set_data(p.value.to(dtype));
      for (const auto& b : module_.named_buffers(/*recurse=*/true))
        if (b.value.is_floating_point()) b.value.set_data(b.value.to(dtype));
      for (const torch::jit::Module& m : module_.modules())
        for (const torch::jit::Method& method : m.get_methods())
          rewriteDtypes(method.graph()->block(), *method.graph(), dtype);
    }
    // The graph executor's optimisations (profiling, fusion) may reorder random draws from the
    // second call on: the reference runs the module's graph as written.
    torch::jit::setGraphExecutorOptimize(false);
    // Dropout draws the counter-based masks whose pieces the ranks draw (counter_dropout.h).
    useCounterDropout(module_);
    // A tied parameter (nanoGPT's wte.weight is lm_head.weight) is listed under each of its names
    // but optimized and clipped once, as torch.nn.Module.parameters() yields it once.
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      p.value.set_requires_grad(true);
      params_.emplace(p.name, p.value);
      auto same = [&](const at::Tensor& t) { return t.is_same(p.value); };
      if (std::none_of(list_.begin(), list_.end(), same)) list_.push_back(p.value);
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
  double relative = 0;  // ‖a − b‖₂ / (‖b‖₂ + atol·√n) of the worst tensor (for the report)
  double ratio = 0;     // ‖a − b‖₂ over its bound; > 1 fails
  std::string name;
  int64_t step = 0;
  void note(double diff, double scale, double bound, const std::string& tensor, int64_t at) {
    const double r = bound > 0 ? diff / bound : (diff > 0 ? INFINITY : 0);
    if (r <= ratio) return;
    ratio = r;
    relative = diff / std::max(scale, 1e-30);
    name = tensor;
    step = at;
  }
};

}  // namespace

struct ExactnessCheck::Impl {
  // The single-device program in the run's dtype; in float32, also its float64 shadow (the values
  // both float32 programs approximate). World rank 0 alone holds them and judges; the other ranks
  // take part in the gathers.
  std::unique_ptr<Reference> reference;
  std::unique_ptr<Reference> shadow;
  bool lead = false;
  bool float32 = false;
  bool shadowed = false;  // the shadow draws what the float32 program draws (compareGradients)
  CheckTolerance tolerance;
  int programRank;
  Communicator& program;
  Communicator& world;
  Worst loss, gradients, parameters, buffers;

  Impl(const std::string& modelPath, const OptimizerOptions& o, c10::Device device, at::ScalarType dtype,
       CheckTolerance t, int rank, Communicator& p, Communicator& w)
      : lead(w.rank() == 0), float32(dtype == at::kFloat), tolerance(t), programRank(rank), program(p), world(w) {
    if (!lead) return;
    reference = std::make_unique<Reference>(modelPath, o, device, dtype);
    if (float32) {
      shadow = std::make_unique<Reference>(modelPath, o, device, at::kDouble);
      shadowed = true;
    }
  }

  // The values the run is compared with: the float64 shadow's where it stands for them, else
  // the reference's.
  Reference& truth() { return shadowed ? *shadow : *reference; }

  // Compares every tensor of `local` (this rank's pieces, as `like` cuts them), consolidated,
  // with `truthFull(i)`, and (with a shadow) the float32 reference's `singleFull(i)`'s own
  // distance from it, under the header's tolerance. Every rank reaches the same verdicts (the
  // pieces are all-gathered, in `like`'s order on every rank).
  template <class Truth, class Single>
  void compare(const std::vector<LocalParameter>& like, const std::vector<at::Tensor>& local, Truth truthFull,
               Single singleFull, Worst& worst, int64_t step) {
    for (size_t i = 0; i < like.size(); ++i) {
      const at::Tensor whole = gatherFull(program, like[i], local[i].detach());
      if (!lead) continue;
      const at::Tensor got = whole.to(at::kCPU, at::kDouble);
      const at::Tensor ref = truthFull(i).detach().to(at::kCPU, at::kDouble);
      if (!local[i].is_floating_point()) {
        worst.note(at::equal(got, ref) ? 0 : 1, 1, 0, like[i].name, step);
        continue;
      }
      // Equal elements differ by nothing, infinities and NaNs included (a mask buffer of -inf).
      const at::Tensor same = got.eq(ref).logical_or(got.isnan().logical_and(ref.isnan()));
      const double diff = at::where(same, at::zeros_like(ref), got - ref).norm().item<double>();
      const double norm = ref.nan_to_num(0, 0, 0).norm().item<double>();
      double own = 0;
      if (shadowed) {
        const at::Tensor single = singleFull(i).detach().to(at::kCPU, at::kDouble);
        own = (single - ref).nan_to_num(0, 0, 0).norm().item<double>();
      }
      const double limit = bound(norm, own, static_cast<double>(ref.numel()));
      if (std::getenv("HAP_DEBUG_CHECK") && diff > limit)
        std::cerr << fmt::format("check: {} at step {}: error {:.3g} over its bound {:.3g} (norm {:.3g}{})\n",
                                 like[i].name, step + 1, diff, limit, norm,
                                 shadowed ? fmt::format(", float32's own error {:.3g}", own) : "");
      worst.note(diff, norm + tolerance.atol * std::sqrt(static_cast<double>(ref.numel())), limit, like[i].name, step);
    }
  }
  double bound(double norm, double own, double n) const {
    return std::max(tolerance.noise * own, tolerance.rtol * norm) + tolerance.atol * std::sqrt(n);
  }
};

ExactnessCheck::ExactnessCheck(const std::string& modelPath, const OptimizerOptions& optimizer, c10::Device device,
                               at::ScalarType dtype, CheckTolerance tolerance, int programRank, Communicator& program,
                               Communicator& world)
    : impl_(std::make_unique<Impl>(modelPath, optimizer, device, dtype, tolerance, programRank, program, world)) {}

ExactnessCheck::~ExactnessCheck() = default;

CheckTolerance CheckTolerance::forDtype(at::ScalarType dtype) {
  if (dtype == at::kDouble) return {0, 1e-7, 1e-7};
  return {10, 1e-5, 1e-6};
}

void ExactnessCheck::compareGradients(int64_t step, uint64_t seed, const std::vector<at::Tensor>& wholeBatch,
                                      const at::Tensor& partialLoss, const std::vector<LocalParameter>& params) {
  Impl& m = *impl_;
  at::Tensor global = partialLoss.detach().to(at::kCPU, at::kDouble).reshape({1}).clone();
  m.world.allReduce(global);
  if (m.lead) {
    at::manual_seed(seed);
    const double single = m.reference->forwardBackward(wholeBatch);
    double exact = single;
    if (m.shadow) {
      at::manual_seed(seed);
      exact = m.shadow->forwardBackward(wholeBatch);
      // The shadow stands for the exact values only if it draws the same random numbers (the same
      // dropout masks): its loss then lies within float32 rounding of the float32 program's. Where
      // it does not, the check compares with the float32 program under rtol and atol, and says so.
      if (std::abs(single - exact) > 1e-3 * std::max(std::abs(exact), 1.0)) m.shadowed = false;
    }
    const double truth = m.shadowed ? exact : single;
    m.loss.note(std::abs(global.item<double>() - truth), std::abs(truth) + m.tolerance.atol,
                m.bound(std::abs(truth), m.shadowed ? std::abs(single - exact) : 0, 1), "loss", step);
  }
  std::vector<at::Tensor> grads;
  for (const LocalParameter& p : params)
    grads.push_back(p.value.grad().defined() ? p.value.grad() : at::zeros_like(p.value));
  auto gradientOf = [&](Reference* r) {
    return [r, &params](size_t i) {
      const at::Tensor& g = r->parameter(params[i].name).grad();
      return g.defined() ? g : at::zeros(params[i].fullShape, params[i].value.options());
    };
  };
  m.compare(params, grads, gradientOf(m.lead ? &m.truth() : nullptr), gradientOf(m.reference.get()), m.gradients,
            step);
}

void ExactnessCheck::compareState(int64_t step, const std::vector<LocalParameter>& params,
                                  const std::vector<LocalBuffer>& buffers) {
  Impl& m = *impl_;
  std::vector<Reference*> references;
  if (m.reference) references.push_back(m.reference.get());
  if (m.shadow) references.push_back(m.shadow.get());
  for (Reference* r : references) r->step();
  Reference* truth = m.lead ? &m.truth() : nullptr;
  Reference* single = m.reference.get();
  std::vector<at::Tensor> values;
  for (const LocalParameter& p : params) values.push_back(p.value);
  m.compare(params, values, [&](size_t i) { return truth->parameter(params[i].name).detach(); },
            [&](size_t i) { return single->parameter(params[i].name).detach(); }, m.parameters, step);
  std::vector<at::Tensor> bufferValues;
  for (const LocalBuffer& b : buffers) bufferValues.push_back(b.value);
  m.compare(buffers, bufferValues, [&](size_t i) { return truth->buffer(buffers[i].name); },
            [&](size_t i) { return single->buffer(buffers[i].name); }, m.buffers, step);
  // The next step starts from the run's state on every side.
  c10::NoGradGuard noGrad;
  for (const LocalParameter& p : params) {
    const at::Tensor full = gatherFull(m.program, p, p.value.detach());
    for (Reference* r : references) r->parameter(p.name).detach().copy_(full);
  }
  for (const LocalBuffer& b : buffers) {
    const at::Tensor full = gatherFull(m.program, b, b.value);
    for (Reference* r : references) {
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
  std::cout << fmt::format("check {}: {}, {}, {}, {} after {} steps ({}, each from the same state; tolerance {}), "
                           "replicas {}; {}\n",
                           who, part("loss", 0), part("gradient", 1), part("parameter", 2), part("buffer", 3), steps,
                           m.float32 ? "float32 against float64" : "in float64 on both sides",
                           m.shadowed ? fmt::format("{:g}x float32's own error, rtol {:g}, atol {:g}", m.tolerance.noise,
                                                    m.tolerance.rtol, m.tolerance.atol)
                           : m.float32 ? fmt::format("rtol {:g}, atol {:g}: the float64 shadow drew other random numbers",
                                                    m.tolerance.rtol, m.tolerance.atol)
                                      : fmt::format("rtol {:g}, atol {:g}", m.tolerance.rtol, m.tolerance.atol),
                           all[8] == 0 ? "bit-identical" : "DIFFER", ok ? "PASS" : "FAIL")
            << std::flush;
  return ok;
}

}  // namespace hap::runtime
