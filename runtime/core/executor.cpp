#include "runtime/core/executor.h"

#include <ATen/ATen.h>
#include <ATen/SequenceNumber.h>
#include <c10/core/GradMode.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/segments.h"
#include "engine/rules/relation.h"
#include "runtime/comm/collectives.h"
#include "runtime/core/fault_injection.h"
#include "runtime/core/gradient_buckets.h"
#include "runtime/core/runtime_error.h"
#include "runtime/core/step_kernel.h"

namespace hap::runtime {
namespace {

using rules::Rel;
using Clock = std::chrono::steady_clock;

// One key per (value, relation): a value holds each form at most once (its G(d) lengths are the
// plan's, the same wherever the form appears).
uint64_t formKey(ir::ValueId v, Rel r) { return (static_cast<uint64_t>(v) << 8) | static_cast<uint8_t>(r + 16); }

int64_t offsetOf(const std::vector<int64_t>& lengths, int rank) {
  int64_t offset = 0;
  for (int j = 0; j < rank; ++j) offset += lengths[static_cast<size_t>(j)];
  return offset;
}

struct Operand {
  ir::ValueId value = ir::kNone;
  Rel rel = rules::kIdentity;
  std::vector<int64_t> lengths;  // G(d)
};

// ExecutorOptions::slowdown: the time the rank owes, paid by sleeping (its contract in
// executor.h). Forward steps and backward hooks may run on different threads: a mutex guards it.
class Slowdown {
 public:
  explicit Slowdown(double factor) : factor_(factor) {}
  // An op that ran from `start` to now: owe (factor - 1) times its time; pay at 100 us.
  void stretch(Clock::time_point start) {
    std::lock_guard<std::mutex> lock(mutex_);
    owed_ += std::chrono::duration<double>(Clock::now() - start) * (factor_ - 1);
    if (owed_ >= std::chrono::microseconds(100)) payLocked();
  }
  void pay() {
    std::lock_guard<std::mutex> lock(mutex_);
    payLocked();
  }

 private:
  void payLocked() {
    if (owed_.count() <= 0) return;
    // Sleeps end within microseconds of their time, not the default 50 us of timer slack.
    thread_local const bool tight = prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == 0;
    (void)tight;
    const Clock::time_point start = Clock::now();
    std::this_thread::sleep_for(owed_);
    owed_ -= Clock::now() - start;  // an overshoot is paid ahead
  }

  const double factor_;
  std::chrono::duration<double> owed_{0};
  std::mutex mutex_;
};

// The backward of one autograd node stretched: the pre-hook takes the time the node starts, the
// post-hook (on the same thread, right after the node) waits.
struct StretchStart : torch::autograd::FunctionPreHook {
  std::shared_ptr<Clock::time_point> start;
  explicit StretchStart(std::shared_ptr<Clock::time_point> s) : start(std::move(s)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& grads) override {
    *start = Clock::now();
    return grads;
  }
};
struct StretchEnd : torch::autograd::FunctionPostHook {
  std::shared_ptr<Clock::time_point> start;
  Slowdown* slowdown;
  StretchEnd(std::shared_ptr<Clock::time_point> s, Slowdown* d) : start(std::move(s)), slowdown(d) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    slowdown->stretch(*start);
    return outputs;
  }
};

struct CompiledStep {
  const plan::PlanStep* step = nullptr;
  std::string label;
  bool communication = false;
  std::optional<StepKernel> kernel;  // compute steps
  std::vector<Operand> inputs, outputs;  // compute steps: the forms the variant reads and writes
  int inputIndex = -1;  // loads of a forward argument: its place in the batch
  int writesBuffer = -1;  // an in-place op on a buffer: the buffer its result is written back into
};

}  // namespace

struct Executor::Impl {
  const plan::Plan& plan;
  const ir::Graph& g;
  Communicator& comm;
  const ExecutorOptions options;
  int rank = 0;
  std::vector<CompiledStep> steps;
  std::vector<InputPiece> inputPieces;
  std::vector<ir::ValueId> inputValues;
  std::vector<LocalParameter> parameters;
  std::unordered_map<ir::ValueId, int> parameterIndex;
  std::vector<LocalBuffer> buffers;
  std::unordered_map<ir::ValueId, int> bufferIndex;
  std::vector<int> bucketed;  // parameters whose gradient is a partial sum (all-reduced in backward())
  std::unique_ptr<GradientBuckets> buckets;  // after `parameters`: its hooks go first
  std::unordered_map<ir::ValueId, at::Tensor> sources;  // constants, full
  std::unordered_map<uint64_t, at::Tensor> env;
  std::vector<Span> spans;
  Clock::time_point epoch = Clock::now();
  // ExecutorOptions::slowdown > 1: the autograd sequence numbers [first, end) of the nodes each
  // stretched compute step made in the last forward(), in step order (so ascending).
  std::vector<std::pair<uint64_t, uint64_t>> stretchedNodes;
  Slowdown slowdown{options.slowdown};
  int microBatch = 0;  // ExecutorOptions::microBatches: the one the next forward() runs

  Impl(const plan::Plan& p, const ir::Graph& planned, Communicator& c, const ExecutorOptions& o)
      : plan(p), g(planned), comm(c), options(o) {}

  double now() const { return std::chrono::duration<double>(Clock::now() - epoch).count(); }
  // A tensor as this run computes it: on the device, floating ones in ExecutorOptions::floating.
  at::Tensor computed(const at::Tensor& t) const {
    const bool cast = options.floating != at::ScalarType::Undefined && t.is_floating_point();
    return t.to(options.device, cast ? options.floating : t.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
  }

  [[noreturn]] void fail(const plan::PlanStep& s, const std::string& what) const {
    throw RuntimeError(fmt::format("rank {}: {}: {}", rank, g.describe(s.node), what));
  }

  static Operand operand(const plan::Form& f) { return {f.value, f.rel, f.lengths}; }

  void plant(const std::vector<plan::PlanStep>& planSteps, const import::ModelTensors& tensors);
  void setUpParameters(const std::vector<plan::PlanStep>& planSteps, const import::ModelTensors& tensors);
  at::Tensor& held(ir::ValueId v, Rel r, const plan::PlanStep& s) {
    auto it = env.find(formKey(v, r));
    if (it == env.end())
      fail(s, fmt::format("value '{}' is not held as {} here (the plan was verified: a runtime bug)",
                          g.value(v).name, rules::formatRel(r)));
    return it->second;
  }
  // The input of a compute step in the form its variant reads, deriving local forms (a slice or
  // a partial) from a replica where the plan lists no conversion for them.
  at::Tensor operandTensor(const Operand& o, const plan::PlanStep& s);
  void runConvert(const CompiledStep& c, const std::vector<at::Tensor>& batch);
  void runCompute(CompiledStep& c);
  // ExecutorOptions::slowdown: hooks on the nodes of `loss`'s graph that stretched steps made.
  void stretchBackward(const at::Tensor& loss);
};

void Executor::Impl::stretchBackward(const at::Tensor& loss) {
  using torch::autograd::Node;
  auto made = [this](uint64_t sequence) {
    auto it = std::upper_bound(stretchedNodes.begin(), stretchedNodes.end(), sequence,
                               [](uint64_t v, const std::pair<uint64_t, uint64_t>& r) { return v < r.first; });
    return it != stretchedNodes.begin() && sequence < std::prev(it)->second;
  };
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  if (Node* root = loss.grad_fn().get()) stack.push_back(root);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    for (const torch::autograd::Edge& e : n->next_edges())
      if (e.function) stack.push_back(e.function.get());
    // The collectives' duals (collectives.h: hap::runtime::collective's functions) run at full speed.
    if (!made(n->sequence_nr()) || n->name().find("collective::") != std::string::npos) continue;
    auto start = std::make_shared<Clock::time_point>();
    n->add_pre_hook(std::make_unique<StretchStart>(start));
    n->add_post_hook(std::make_unique<StretchEnd>(start, &slowdown));
  }
}

std::vector<InputPiece> planInputPieces(const plan::Plan& plan, const ir::Graph& planned,
                                        const std::vector<import::InputSpec>& specs, int rank) {
  const ir::Graph& g = planned;
  // An input is read whole when any step loads it whole; else as the piece of its one cut.
  std::unordered_map<ir::ValueId, const plan::Form*> cut;
  std::unordered_set<ir::ValueId> whole;
  for (const plan::PlanStep& s : plan.steps) {
    if (s.kind != plan::PlanStep::Kind::Convert || g.value(s.to.value).kind != ir::ValueKind::Input) continue;
    if (s.instruction == "load") whole.insert(s.to.value);
    else if (s.instruction == "load-shard") {
      auto [it, fresh] = cut.emplace(s.to.value, &s.to);
      if (!fresh && (it->second->rel != s.to.rel || it->second->lengths != s.to.lengths)) whole.insert(s.to.value);
    }
  }
  std::vector<InputPiece> pieces;
  for (ir::ValueId v : g.inputs) {
    const ir::Value& value = g.value(v);
    InputPiece piece;
    piece.name = value.name;
    piece.dtype = value.dtype;
    piece.shape = value.shape;
    for (const import::InputSpec& spec : specs)
      if (spec.name == value.name) {
        piece.low = spec.low;
        piece.high = spec.high;
      }
    if (!whole.count(v) && cut.count(v)) {
      const plan::Form& f = *cut.at(v);
      piece.dim = f.rel;
      piece.offset = offsetOf(f.lengths, rank);
      piece.length = f.lengths[static_cast<size_t>(rank)];
    }
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

void Executor::Impl::setUpParameters(const std::vector<plan::PlanStep>& planSteps, const import::ModelTensors& tensors) {
  // How each parameter is held: as the piece of its one cut when every use loads that piece
  // (its gradient is then the piece's gradient), else whole (replicated). A replicated
  // parameter's gradient is a partial sum, all-reduced after backward, unless its only use is
  // an SFB variant, which forms the whole gradient on every rank.
  struct Uses {
    const plan::Form* cut = nullptr;
    bool whole = false, sfb = false, other = false, mixedCuts = false;
  };
  std::unordered_map<ir::ValueId, Uses> uses;
  for (const plan::PlanStep& s : planSteps) {
    if (s.kind != plan::PlanStep::Kind::Convert) continue;
    const ir::ValueKind kind = g.value(s.to.value).kind;
    if (kind != ir::ValueKind::Parameter && kind != ir::ValueKind::Buffer) continue;
    Uses& u = uses[s.to.value];
    if (s.instruction == "load-shard") {
      if (u.cut && (u.cut->rel != s.to.rel || u.cut->lengths != s.to.lengths)) u.mixedCuts = true;
      if (!u.cut) u.cut = &s.to;
      u.other = true;
    } else if (s.instruction == "replicate-parameter-sfb") {
      u.whole = u.sfb = true;
    } else if (s.instruction == "replicate-parameter" || s.instruction == "load") {
      u.whole = u.other = true;
    }
  }
  for (ir::ValueId v : g.parameters) {
    const ir::Value& value = g.value(v);
    auto found = tensors.values.find(v);
    if (found == tensors.values.end())
      throw RuntimeError(fmt::format("rank {}: the model file has no data for parameter '{}'", rank, value.name));
    const Uses& u = uses[v];
    if (u.sfb && u.other)
      throw RuntimeError(fmt::format(
          "rank {}: parameter '{}' is used both by a sufficient-factor-broadcasting variant and otherwise; the "
          "runtime cannot combine a whole and a partial gradient for it. Re-plan with the SFB variant pinned off",
          rank, value.name));
    LocalParameter p;
    p.name = value.name;
    p.fullShape = value.shape;
    at::Tensor full = found->second.detach();
    if (u.cut && !u.whole && !u.mixedCuts) {
      p.dim = u.cut->rel;
      p.lengths = u.cut->lengths;
      full = localPiece(full, p.dim, p.lengths, rank);
      if (injectedFault() == Fault::WrongSlice) {  // the range one row off
        const at::Tensor whole = found->second.detach();
        const int64_t length = full.size(p.dim), size = whole.size(p.dim);
        const int64_t offset = pieceOffset(p, rank);
        const int64_t shifted = offset + length < size ? offset + 1 : std::max<int64_t>(offset - 1, 0);
        full = whole.narrow(p.dim, shifted, length);
      }
    }
    p.value = computed(full).contiguous().set_requires_grad(true);
    if (p.replicated() && !u.sfb) bucketed.push_back(static_cast<int>(parameters.size()));
    parameterIndex.emplace(v, static_cast<int>(parameters.size()));
    parameters.push_back(std::move(p));
  }
  // Buffers are state the program may write in place (batch norm's running statistics): held like
  // parameters, as this rank's piece where every use loads the same piece, else whole.
  for (ir::ValueId v : g.buffers) {
    const ir::Value& value = g.value(v);
    auto found = tensors.values.find(v);
    if (found == tensors.values.end())
      throw RuntimeError(fmt::format("rank {}: the model file has no data for buffer '{}'", rank, value.name));
    const Uses& u = uses[v];
    LocalBuffer b;
    b.name = value.name;
    b.fullShape = value.shape;
    at::Tensor full = found->second.detach();
    if (u.cut && !u.whole && !u.mixedCuts) {
      b.dim = u.cut->rel;
      b.lengths = u.cut->lengths;
      full = localPiece(full, b.dim, b.lengths, rank);
    }
    b.value = computed(full).contiguous();
    bufferIndex.emplace(v, static_cast<int>(buffers.size()));
    buffers.push_back(std::move(b));
  }
  for (ir::ValueId v : g.constants) {
    auto found = tensors.values.find(v);
    if (found == tensors.values.end())
      throw RuntimeError(fmt::format("rank {}: no data for constant '{}' of the model", rank, g.value(v).name));
    sources.emplace(v, computed(found->second.detach()));
  }
}

void Executor::Impl::plant(const std::vector<plan::PlanStep>& planSteps, const import::ModelTensors& tensors) {
  rank = comm.rank();
  const KernelContext kernelContext{rank,
                                    options.device,
                                    &plan.replication,
                                    options.machine,
                                    options.floating,
                                    options.microBatches,
                                    options.microBatches > 1 ? &microBatch : nullptr};
  if (comm.size() != static_cast<int>(plan.devices.size()))
    throw RuntimeError(fmt::format("the plan is for {} ranks, but WORLD_SIZE is {}; start one worker per plan device",
                                   plan.devices.size(), comm.size()));
  inputPieces = planInputPieces(plan, g, tensors.inputs, rank);
  inputValues = g.inputs;
  setUpParameters(planSteps, tensors);
  if (comm.size() > 1 && !bucketed.empty())  // a world of one has nothing to sum
    buckets = std::make_unique<GradientBuckets>(parameters, bucketed, comm, options.bucketBytes);
  for (const plan::PlanStep& s : planSteps) {
    if (s.kind == plan::PlanStep::Kind::Compute) {
      CompiledStep c;
      c.step = &s;
      c.kernel.emplace(g, s, kernelContext);  // s.execution: the rule's (planner, plan::openPlan)
      c.label = c.kernel->label();
      c.communication = c.kernel->communication();
      for (const plan::Form& f : s.inputs) c.inputs.push_back(operand(f));
      for (const plan::Form& f : s.outputs) c.outputs.push_back(operand(f));
      const ir::Node& n = g.node(s.node);
      if (n.inplace && !n.outputs.empty()) {
        ir::ValueId root = n.outputs[0];
        while (g.value(root).aliasOf != ir::kNone) root = g.value(root).aliasOf;
        if (g.value(root).kind == ir::ValueKind::Buffer) {
          c.writesBuffer = bufferIndex.at(root);
          const LocalBuffer& b = buffers[static_cast<size_t>(c.writesBuffer)];
          const rules::Rel r = c.outputs[0].rel;
          if (r == rules::kReduce || r == rules::kIdentitySfb || (!b.replicated() && r != b.dim))
            fail(s, fmt::format("writes buffer '{}' as {}, which the runtime cannot keep; re-plan with the node "
                                "pinned to replicate",
                                b.name, rules::formatRel(r)));
        }
      }
      steps.push_back(std::move(c));
      continue;
    }
    CompiledStep c;
    c.step = &s;
    c.label = fmt::format("{} {}", s.instruction, g.value(s.to.value).name);
    if (g.value(s.to.value).kind == ir::ValueKind::Input)
      c.inputIndex = static_cast<int>(std::find(inputValues.begin(), inputValues.end(), s.to.value) - inputValues.begin());
    static const std::unordered_set<std::string> kCollectives = {"all-gather", "reduce-scatter", "all-reduce",
                                                                 "all-to-all"};
    c.communication = kCollectives.count(s.instruction) > 0;
    static const std::unordered_set<std::string> kKnown = {
        "load", "load-shard", "replicate-parameter", "replicate-parameter-sfb", "all-gather", "reduce-scatter",
        "all-reduce", "all-to-all", "slice", "replica-to-partial"};
    if (!kKnown.count(s.instruction)) fail(s, fmt::format("unknown instruction '{}' in the plan", s.instruction));
    steps.push_back(std::move(c));
  }
}

at::Tensor Executor::Impl::operandTensor(const Operand& o, const plan::PlanStep& s) {
  auto it = env.find(formKey(o.value, o.rel));
  if (it != env.end()) return it->second;
  auto whole = env.find(formKey(o.value, rules::kIdentity));
  if (whole == env.end()) whole = env.find(formKey(o.value, rules::kIdentitySfb));
  if (whole != env.end()) {
    at::Tensor derived;
    if (rules::isGather(o.rel) && g.value(o.value).kind == ir::ValueKind::Buffer)
      derived = localPiece(whole->second, o.rel, o.lengths, rank);  // a view: in-place writes stay
    else if (rules::isGather(o.rel)) derived = collective::slice(comm, whole->second, o.rel, o.lengths);
    else if (o.rel == rules::kReduce) derived = collective::replicaToPartial(comm, whole->second);
    else if (o.rel == rules::kIdentity) derived = whole->second;
    if (derived.defined()) {
      env.emplace(formKey(o.value, o.rel), derived);
      return derived;
    }
  }
  return held(o.value, o.rel, s);
}

void Executor::Impl::runConvert(const CompiledStep& c, const std::vector<at::Tensor>& batch) {
  const plan::PlanStep& s = *c.step;
  const ir::ValueId v = s.to.value;
  const ir::Value& value = g.value(v);
  const std::string& in = s.instruction;
  const CommMethod method = s.method == "grouped" ? CommMethod::Grouped : CommMethod::Padded;
  at::Tensor result;
  if (in == "load" || in == "load-shard") {
    at::Tensor full;
    if (value.kind == ir::ValueKind::Input) {
      const size_t i = static_cast<size_t>(c.inputIndex);
      const InputPiece& piece = inputPieces[i];
      const at::Tensor& t = batch.at(i);
      if (in == "load" || piece.dim < 0) {
        full = t;  // whole; a shard is sliced from it below
      } else {
        env[formKey(v, s.to.rel)] = t;  // the data source gave exactly this rank's piece
        return;
      }
    } else if (value.kind == ir::ValueKind::Parameter) {
      const LocalParameter& p = parameters[static_cast<size_t>(parameterIndex.at(v))];
      if (!p.replicated()) {
        env[formKey(v, s.to.rel)] = p.value;
        return;
      }
      full = p.value;
    } else if (value.kind == ir::ValueKind::Buffer) {
      // The held tensor itself (or a view of it), so that the op's in-place writes stay.
      const LocalBuffer& b = buffers[static_cast<size_t>(bufferIndex.at(v))];
      env[formKey(v, s.to.rel)] =
          in == "load" || !b.replicated() ? b.value : localPiece(b.value, s.to.rel, s.to.lengths, rank);
      return;
    } else {
      full = sources.at(v);
    }
    result = in == "load" ? full : collective::slice(comm, full, s.to.rel, s.to.lengths);
  } else if (in == "replicate-parameter" || in == "replicate-parameter-sfb") {
    // The gradient of a replicated parameter is all-reduced once, after backward (backward()).
    result = parameters[static_cast<size_t>(parameterIndex.at(v))].value;
  } else if (in == "all-gather") {
    result = collective::allGather(comm, held(v, s.from.rel, s), s.from.rel, s.from.lengths, method);
  } else if (in == "reduce-scatter") {
    result = collective::reduceScatter(comm, held(v, rules::kReduce, s), s.to.rel, s.to.lengths, method);
  } else if (in == "all-reduce") {
    result = collective::allReduce(comm, held(v, rules::kReduce, s));
  } else if (in == "all-to-all") {
    result = collective::allToAll(comm, held(v, s.from.rel, s), s.from.rel, s.from.lengths, s.to.rel, s.to.lengths);
  } else if (in == "slice") {
    result = collective::slice(comm, held(v, rules::kIdentity, s), s.to.rel, s.to.lengths);
  } else if (in == "replica-to-partial") {
    result = collective::replicaToPartial(comm, held(v, rules::kIdentity, s));
  }
  env[formKey(v, s.to.rel)] = result;
}

void Executor::Impl::runCompute(CompiledStep& c) {
  std::vector<at::Tensor> in;
  in.reserve(c.inputs.size());
  for (const Operand& o : c.inputs) in.push_back(operandTensor(o, *c.step));
  std::vector<at::Tensor> out = c.kernel->run(in, comm);
  // An in-place op on a buffer (num_batches_tracked.add_(1)) runs out of place like every in-place
  // op; its result is written back, as the single-device op writes it.
  if (c.writesBuffer >= 0) {
    const LocalBuffer& b = buffers[static_cast<size_t>(c.writesBuffer)];
    const Operand& o = c.outputs[0];
    c10::NoGradGuard noGrad;
    at::Tensor target = b.replicated() && rules::isGather(o.rel) ? localPiece(b.value, o.rel, o.lengths, rank) : b.value;
    target.copy_(out[0]);
  }
  for (size_t k = 0; k < out.size(); ++k) env[formKey(c.outputs[k].value, c.outputs[k].rel)] = std::move(out[k]);
}

Executor::Executor(const plan::Plan& plan, const ir::Graph& planned, const import::ModelTensors& tensors, Communicator& comm,
                   const ExecutorOptions& options)
    : impl_(std::make_unique<Impl>(plan, planned, comm, options)) {
  impl_->plant(plan.steps, tensors);
}

Executor::~Executor() = default;

const std::vector<InputPiece>& Executor::inputPieces() const { return impl_->inputPieces; }
std::vector<LocalParameter>& Executor::parameters() { return impl_->parameters; }
std::vector<LocalBuffer>& Executor::buffers() { return impl_->buffers; }
const std::vector<Executor::Span>& Executor::spans() const { return impl_->spans; }
double Executor::now() const { return impl_->now(); }

at::Tensor Executor::forward(const std::vector<at::Tensor>& batch) {
  Impl& m = *impl_;
  if (batch.size() != m.inputPieces.size())
    throw RuntimeError(fmt::format("rank {}: {} batch tensors for {} model inputs", m.rank, batch.size(),
                                   m.inputPieces.size()));
  m.env.clear();
  m.spans.clear();
  m.stretchedNodes.clear();
  const bool slowed = m.options.slowdown > 1;
  std::vector<at::Tensor> onDevice;
  const std::vector<at::Tensor>* pieces = &batch;
  if (!m.options.device.is_cpu() || m.options.floating != at::ScalarType::Undefined) {
    for (const at::Tensor& t : batch) onDevice.push_back(m.computed(t));
    pieces = &onDevice;
  }
  for (CompiledStep& c : m.steps) {
    if (slowed && (c.communication || c.step->kind == plan::PlanStep::Kind::Convert)) m.slowdown.pay();
    const double start = m.now();
    if (c.step->kind == plan::PlanStep::Kind::Convert) {
      m.runConvert(c, *pieces);
    } else if (slowed && !c.communication) {
      const uint64_t firstNode = at::sequence_number::peek();
      const Clock::time_point began = Clock::now();
      m.runCompute(c);
      m.stretchedNodes.emplace_back(firstNode, at::sequence_number::peek());
      m.slowdown.stretch(began);
    } else {
      m.runCompute(c);
    }
    const double end = m.now();
    if (c.communication || c.step->kind == plan::PlanStep::Kind::Compute) m.spans.push_back({c.label, c.communication, start, end});
  }
  const ir::ValueId loss = m.g.loss;
  auto partial = m.env.find(formKey(loss, rules::kReduce));
  if (partial != m.env.end()) return partial->second;
  auto whole = m.env.find(formKey(loss, rules::kIdentity));
  if (whole == m.env.end())
    throw RuntimeError(fmt::format("rank {}: the program did not compute the loss (a runtime bug)", m.rank));
  return collective::replicaToPartial(m.comm, whole->second);
}

void Executor::backward(const at::Tensor& partialLoss) {
  Impl& m = *impl_;
  const double start = m.now();
  if (m.options.slowdown > 1) m.stretchBackward(partialLoss);
  if (m.buckets) m.buckets->begin();
  partialLoss.backward();
  if (m.options.slowdown > 1) m.slowdown.pay();
  const double computed = m.now();
  if (m.buckets) m.buckets->finish();
  for (LocalParameter& p : m.parameters)
    if (!p.value.grad().defined()) p.value.mutable_grad() = at::zeros_like(p.value);
  m.spans.push_back({"backward", false, start, computed});
  if (m.buckets)
    for (const GradientBuckets::Span& s : m.buckets->spans())
      m.spans.push_back({s.name, true, std::chrono::duration<double>(s.start - m.epoch).count(),
                         std::chrono::duration<double>(s.end - m.epoch).count()});
}

void Executor::setMicroBatch(int index) {
  if (index < 0 || index >= std::max(impl_->options.microBatches, 1))
    throw RuntimeError(fmt::format("rank {}: micro-batch {} of {} (a runtime bug)", impl_->rank, index,
                                   impl_->options.microBatches));
  impl_->microBatch = index;
}

std::vector<Executor::HeldForm> Executor::held(ir::ValueId v) const {
  const Impl& m = *impl_;
  std::vector<HeldForm> out;
  std::vector<Rel> rels = {rules::kIdentity, rules::kIdentitySfb, rules::kReduce};
  for (int d = 0; d < m.g.value(v).rank(); ++d) rels.push_back(static_cast<Rel>(d));
  for (Rel r : rels) {
    auto it = m.env.find(formKey(v, r));
    if (it == m.env.end()) continue;
    HeldForm f;
    f.rel = r;
    f.tensor = it->second;
    if (rules::isGather(r)) {
      // The plan's lengths of this form (the same wherever it appears).
      for (const plan::PlanStep& s : m.plan.steps) {
        auto match = [&](const plan::Form& x) { return x.value == v && x.rel == r; };
        if (s.kind == plan::PlanStep::Kind::Convert && match(s.to)) f.lengths = s.to.lengths;
        for (const plan::Form& x : s.outputs)
          if (match(x)) f.lengths = x.lengths;
        if (!f.lengths.empty()) break;
      }
      if (f.lengths.empty()) continue;
    }
    out.push_back(std::move(f));
  }
  return out;
}

void Executor::backwardSeeded(const std::vector<at::Tensor>& roots, const std::vector<at::Tensor>& seeds) {
  Impl& m = *impl_;
  const double start = m.now();
  std::vector<at::Tensor> outputs, grads;
  for (size_t k = 0; k < roots.size(); ++k)
    if (roots[k].defined() && roots[k].requires_grad()) {
      outputs.push_back(roots[k]);
      grads.push_back(seeds[k]);
    }
  if (!outputs.empty()) torch::autograd::backward(outputs, grads);
  if (m.options.slowdown > 1) m.slowdown.pay();
  m.spans.push_back({"backward", false, start, m.now()});
}

void Executor::sumGradients() {
  Impl& m = *impl_;
  for (LocalParameter& p : m.parameters)
    if (!p.value.grad().defined()) p.value.mutable_grad() = at::zeros_like(p.value);
  if (m.comm.size() == 1 || m.bucketed.empty()) return;
  const double start = m.now();
  // One all-reduce per dtype over the replicated parameters' gradients, in parameter order.
  std::map<at::ScalarType, std::vector<at::Tensor>> groups;
  for (int i : m.bucketed) {
    at::Tensor g = m.parameters[static_cast<size_t>(i)].value.grad();
    groups[g.scalar_type()].push_back(g);
  }
  c10::NoGradGuard noGrad;
  for (auto& [dtype, grads] : groups) {
    std::vector<at::Tensor> flat;
    for (const at::Tensor& g : grads) flat.push_back(g.reshape({-1}));
    at::Tensor buffer = at::cat(flat);
    m.comm.allReduce(buffer);
    int64_t offset = 0;
    for (at::Tensor& g : grads) {
      g.copy_(buffer.narrow(0, offset, g.numel()).view_as(g));
      offset += g.numel();
    }
  }
  m.spans.push_back({"gradient all-reduce", true, start, m.now()});
}

}  // namespace hap::runtime
