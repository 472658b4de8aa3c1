#include "runtime/executor.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/segments.h"
#include "engine/synth/fact.h"
#include "runtime/collectives.h"
#include "runtime/gradient_buckets.h"
#include "runtime/runtime_error.h"

namespace hap::rt {
namespace {

using synth::Rel;
using Clock = std::chrono::steady_clock;

// One key per (value, relation): a value holds each form at most once (its G(d) lengths are the
// plan's, the same wherever the form appears).
uint64_t formKey(ir::ValueId v, Rel r) { return (static_cast<uint64_t>(v) << 8) | static_cast<uint8_t>(r + 16); }

int64_t offsetOf(const std::vector<int64_t>& lengths, int rank) {
  int64_t offset = 0;
  for (int j = 0; j < rank; ++j) offset += lengths[static_cast<size_t>(j)];
  return offset;
}

// How a compute step departs from calling the node's operator with the reference arguments.
enum class Adjust : uint8_t {
  None,
  Reshape,      // view-like op with a sharded output: reshape the input to the local output shape
  Expand,       // expand-like op with a sharded output: expand to the local output shape
  FullPiece,    // no sharded input (a factory or random factory): run full size, keep the piece
  Dropout,      // sharded input: draw the full-size mask, keep this rank's piece of it
  RandomLike,   // random *_like of a sharded input: draw full size, keep the piece
  MeanSharded,  // mean over a sharded dimension: local sum / global count
  ClassLossMean,      // nll / cross-entropy, mean over sharded positions: sum / global target count
  PointwiseLossMean,  // pointwise loss, mean over sharded positions: sum / global element count
  ProbabilityLossMean,  // cross-entropy with class probabilities: sum / global position count
  Depthwise,    // depthwise convolution on a channel cut: groups = local channels
  VocabEmbedding,  // embedding with the table's rows cut: look up local ids, zeros elsewhere
  Reshard,      // hap::reshard: all-to-all between the segments' cuts (G), identity otherwise
  SfbLinear,    // linear whose weight gradient is formed by sufficient-factor broadcasting
};

const std::unordered_set<std::string> kReshapeOps = {
    "aten::view",    "aten::reshape",   "aten::_unsafe_view", "aten::flatten",   "aten::unflatten",
    "aten::squeeze", "aten::unsqueeze", "aten::view_as",      "aten::reshape_as"};
const std::unordered_set<std::string> kExpandOps = {"aten::expand", "aten::broadcast_to", "aten::expand_as"};
const std::unordered_set<std::string> kDropoutOps = {"aten::dropout", "aten::feature_dropout",
                                                     "aten::alpha_dropout", "aten::feature_alpha_dropout",
                                                     "aten::native_dropout"};
const std::unordered_set<std::string> kClassLosses = {"aten::nll_loss", "aten::nll_loss_nd", "aten::nll_loss2d",
                                                      "aten::cross_entropy_loss"};
const std::unordered_set<std::string> kPointwiseLosses = {
    "aten::mse_loss",  "aten::l1_loss", "aten::smooth_l1_loss", "aten::huber_loss", "aten::binary_cross_entropy",
    "aten::binary_cross_entropy_with_logits"};

bool isRandomOp(const std::string& op) {
  static const std::unordered_set<std::string> kRandom = {
      "aten::bernoulli", "aten::rand",       "aten::randn",        "aten::randint", "aten::rand_like",
      "aten::randn_like", "aten::randint_like", "aten::normal",   "aten::uniform", "aten::randperm"};
  return kRandom.count(op) > 0;
}

std::string baseOp(std::string op) {
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') op.pop_back();
  return op;
}

struct Operand {
  ir::ValueId value = ir::kNone;
  Rel rel = synth::kIdentity;
  std::vector<int64_t> lengths;  // G(d)
};

struct CompiledStep {
  const plan::PlanStep* step = nullptr;
  std::string label;
  bool communication = false;
  // Compute steps.
  std::shared_ptr<torch::jit::Operator> op;
  std::vector<c10::IValue> stack;       // the arguments with constants filled in
  std::vector<int> argTensorSlot;       // per argument: first operand index, or -1 (constant)
  std::vector<int> argTensorCount;      // per argument: operands it takes (a list: several)
  std::vector<Operand> inputs, outputs;
  std::vector<std::vector<int64_t>> outputShapes;  // local
  Adjust adjust = Adjust::None;
  int64_t globalCount = 0;   // MeanSharded / PointwiseLossMean / ProbabilityLossMean denominators;
                             // ClassLossMean: the static target count (0: all-reduced per step)
  int64_t vocabOffset = 0;   // VocabEmbedding: first row of this rank
  int reductionArg = -1;     // loss means: the `reduction` argument's index
  int groupsArg = -1;        // Depthwise
  double dropoutP = 0;
  bool dropoutTrain = true;
  std::vector<int64_t> meanDims;  // MeanSharded
  bool keepdim = false;
  int64_t ignoreIndex = -100;  // ClassLossMean
  int inputIndex = -1;         // loads of a forward argument: its place in the batch
  // Random ops of a replicated plan: the output dimension the machines split (-1: none). The op
  // draws the global batch's numbers and keeps this machine's rows.
  int replicaDim = -1;
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
  std::vector<int> bucketed;  // parameters whose gradient is a partial sum (all-reduced in backward())
  std::unique_ptr<GradientBuckets> buckets;  // after `parameters`: its hooks go first
  std::unordered_map<ir::ValueId, at::Tensor> sources;  // buffers and constants, full
  std::unordered_map<uint64_t, at::Tensor> env;
  std::vector<Span> spans;
  Clock::time_point epoch = Clock::now();

  Impl(const plan::Plan& p, const ir::Graph& planned, Communicator& c, const ExecutorOptions& o)
      : plan(p), g(planned), comm(c), options(o) {}

  double now() const { return std::chrono::duration<double>(Clock::now() - epoch).count(); }

  [[noreturn]] void fail(const plan::PlanStep& s, const std::string& what) const {
    throw RuntimeError(fmt::format("rank {}: {}: {}", rank, g.describe(s.node), what));
  }

  ir::Shape localShape(const Operand& o) const {
    ir::Shape shape = g.value(o.value).shape;
    if (synth::isGather(o.rel)) shape[static_cast<size_t>(o.rel)] = o.lengths[static_cast<size_t>(rank)];
    return shape;
  }

  static Operand operand(const plan::Form& f) { return {f.value, f.rel, f.lengths}; }

  void plant(const std::vector<plan::PlanStep>& planSteps, const ts::ModelTensors& tensors);
  void setUpParameters(const std::vector<plan::PlanStep>& planSteps, const ts::ModelTensors& tensors);
  void setUpInputs(const std::vector<plan::PlanStep>& planSteps, const std::vector<ts::InputSpec>& specs);
  CompiledStep compileCompute(const plan::PlanStep& s) const;
  // A replicated plan's cut of random node s.node's output across machines (RuntimeError when the
  // plan lists none).
  int replicaDim(const plan::PlanStep& s) const {
    for (const plan::Replication::RandomCut& c : plan.replication.randomCuts)
      if (c.node == s.node) return c.dim;
    fail(s, "the replicated plan gives this random op no cut across machines; re-plan with hap plan");
  }
  // The full (machine-level) shape of a random op's draw as the global batch's: the machines'
  // dimension `dim` times their count.
  std::vector<int64_t> globalShape(std::vector<int64_t> shape, int dim) const {
    if (dim >= 0) shape[static_cast<size_t>(dim)] *= plan.replication.machines;
    return shape;
  }
  // This machine's rows of a global draw (`full` itself when dim < 0).
  at::Tensor machineRows(const at::Tensor& full, int dim) const {
    if (dim < 0) return full;
    const int64_t rows = full.size(dim) / plan.replication.machines;
    return full.narrow(dim, options.machine * rows, rows);
  }

  at::Tensor& held(ir::ValueId v, Rel r, const plan::PlanStep& s) {
    auto it = env.find(formKey(v, r));
    if (it == env.end())
      fail(s, fmt::format("value '{}' is not held as {} here (the plan was verified: a runtime bug)",
                          g.value(v).name, synth::formatRel(r)));
    return it->second;
  }
  // The input of a compute step in the form its variant reads, deriving local forms (a slice or
  // a partial) from a replica where the plan lists no conversion for them.
  at::Tensor operandTensor(const Operand& o, const plan::PlanStep& s);
  void runConvert(const CompiledStep& c, const std::vector<at::Tensor>& batch);
  void runCompute(CompiledStep& c);
  bool emptyOutputs(const CompiledStep& c) const;
  std::vector<at::Tensor> zerosOnGraph(const CompiledStep& c, const std::vector<at::Tensor>& in) const;
};

void Executor::Impl::setUpInputs(const std::vector<plan::PlanStep>& planSteps,
                                 const std::vector<ts::InputSpec>& specs) {
  // An input is read whole when any step loads it whole; else as the piece of its one cut.
  std::unordered_map<ir::ValueId, const plan::Form*> cut;
  std::unordered_set<ir::ValueId> whole;
  for (const plan::PlanStep& s : planSteps) {
    if (s.kind != plan::PlanStep::Kind::Convert || g.value(s.to.value).kind != ir::ValueKind::Input) continue;
    if (s.instruction == "load") whole.insert(s.to.value);
    else if (s.instruction == "load-shard") {
      auto [it, fresh] = cut.emplace(s.to.value, &s.to);
      if (!fresh && (it->second->rel != s.to.rel || it->second->lengths != s.to.lengths)) whole.insert(s.to.value);
    }
  }
  for (ir::ValueId v : g.inputs) {
    const ir::Value& value = g.value(v);
    InputPiece piece;
    piece.name = value.name;
    piece.dtype = value.dtype;
    piece.shape = value.shape;
    for (const ts::InputSpec& spec : specs)
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
    inputPieces.push_back(std::move(piece));
    inputValues.push_back(v);
  }
}

void Executor::Impl::setUpParameters(const std::vector<plan::PlanStep>& planSteps, const ts::ModelTensors& tensors) {
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
    if (s.kind != plan::PlanStep::Kind::Convert || g.value(s.to.value).kind != ir::ValueKind::Parameter) continue;
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
    }
    p.value = full.to(options.device, /*non_blocking=*/false, /*copy=*/true).contiguous().set_requires_grad(true);
    if (p.replicated() && !u.sfb) bucketed.push_back(static_cast<int>(parameters.size()));
    parameterIndex.emplace(v, static_cast<int>(parameters.size()));
    parameters.push_back(std::move(p));
  }
  for (ir::ValueId v : g.buffers) {
    auto found = tensors.values.find(v);
    if (found == tensors.values.end())
      throw RuntimeError(fmt::format("rank {}: the model file has no data for buffer '{}'", rank, g.value(v).name));
    sources.emplace(v, found->second.detach().to(options.device));
  }
  for (ir::ValueId v : g.constants) {
    auto found = tensors.values.find(v);
    if (found == tensors.values.end())
      throw RuntimeError(fmt::format("rank {}: no data for constant '{}' of the model", rank, g.value(v).name));
    sources.emplace(v, found->second.detach().to(options.device));
  }
}

// The IValue of a folded argument, typed as the schema wants it.
c10::IValue constantValue(const ir::Arg& a) {
  const std::string& type = a.type;
  return std::visit(
      [&](const auto& c) -> c10::IValue {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return c10::IValue();
        } else if constexpr (std::is_same_v<T, bool>) {
          return c10::IValue(c);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          if (type.rfind("float", 0) == 0) return c10::IValue(static_cast<double>(c));
          if (type.rfind("bool", 0) == 0) return c10::IValue(c != 0);
          return c10::IValue(c);
        } else if constexpr (std::is_same_v<T, double>) {
          return c10::IValue(c);
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (type.rfind("Device", 0) == 0) return c10::IValue(c10::Device(c));
          return c10::IValue(c);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return c10::IValue(c);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          return c10::IValue(c10::List<double>(c));
        } else {
          c10::List<bool> l;
          for (bool b : c) l.push_back(b);
          return c10::IValue(l);
        }
      },
      a.constant);
}

std::shared_ptr<torch::jit::Operator> findOperator(const std::string& op, const std::string& overload) {
  for (const auto& candidate : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(op)))
    if (candidate->schema().overload_name() == overload) return candidate;
  return nullptr;
}

CompiledStep Executor::Impl::compileCompute(const plan::PlanStep& s) const {
  const ir::Node& n = g.node(s.node);
  CompiledStep c;
  c.step = &s;
  c.label = n.op.substr(n.op.find("::") + 2);
  for (const plan::Form& f : s.inputs) c.inputs.push_back(operand(f));
  for (const plan::Form& f : s.outputs) c.outputs.push_back(operand(f));
  for (const Operand& o : c.outputs) c.outputShapes.push_back(localShape(o));
  if (n.op == ir::kReshardOp) {
    c.adjust = Adjust::Reshard;
    c.communication = true;
    c.label = "reshard";
    return c;
  }
  if (c.inputs.size() != n.tensorInputs().size() || c.outputs.size() != n.outputs.size())
    fail(s, "the plan's step lists other inputs or outputs than the model's node (was the plan made for this model?)");
  // In-place ops run out of place: the importer rebinds later readers to the op's output, so the
  // old value is never read again, and autograd keeps what it saved.
  std::string op = n.inplace ? baseOp(n.op) : n.op;
  c.op = findOperator(op, n.overload);
  if (!c.op) c.op = findOperator(n.op, n.overload);
  if (!c.op) fail(s, fmt::format("no operator {}.{} in this LibTorch", op, n.overload));
  // The argument stack with constants filled in, and where the operands go.
  int next = 0;
  for (const ir::Arg& a : n.args) {
    if (a.kind == ir::Arg::Kind::Constant) {
      // Off the CPU, a device argument (a traced "cpu", a factory's None) names this device.
      const bool deviceArg = a.type.rfind("Device", 0) == 0;
      c.stack.push_back(deviceArg && !options.device.is_cpu() ? c10::IValue(options.device) : constantValue(a));
      c.argTensorSlot.push_back(-1);
      c.argTensorCount.push_back(0);
    } else {
      c.stack.emplace_back();
      c.argTensorSlot.push_back(next);
      c.argTensorCount.push_back(a.kind == ir::Arg::Kind::TensorList ? static_cast<int>(a.values.size()) : -1);
      next += static_cast<int>(a.values.size());
    }
  }
  auto argIndex = [&](std::string_view name) {
    for (size_t i = 0; i < n.args.size(); ++i)
      if (n.args[i].name == name) return static_cast<int>(i);
    return -1;
  };
  auto intConstant = [&](std::string_view name, int64_t fallback) {
    const ir::Arg* a = n.arg(name);
    if (!a || a->kind != ir::Arg::Kind::Constant) return fallback;
    if (const int64_t* i = std::get_if<int64_t>(&a->constant)) return *i;
    return fallback;
  };
  bool shardedIn = false, shardedOut = false;
  for (const Operand& o : c.inputs) shardedIn = shardedIn || synth::isGather(o.rel);
  for (const Operand& o : c.outputs) shardedOut = shardedOut || synth::isGather(o.rel);
  const std::string base = baseOp(n.op);

  if (s.sfb) {
    if (base != "aten::linear") fail(s, "sufficient-factor broadcasting is implemented for linear only");
    c.adjust = Adjust::SfbLinear;
  } else if (kDropoutOps.count(base)) {
    // A whole or partial input: the op itself draws the single-device op's mask on any device
    // (every rank the same; a partial's pieces share it, so their sum is the dropped sum) --
    // unless the plan is replicated, where the mask is the global batch's.
    if (!shardedIn && !plan.replication.replicated()) return c;
    c.adjust = Adjust::Dropout;
    c.replicaDim = plan.replication.replicated() ? replicaDim(s) : -1;
    const ir::Arg* p = n.arg("p");
    if (p) {
      if (const double* d = std::get_if<double>(&p->constant)) c.dropoutP = *d;
      else if (const int64_t* i = std::get_if<int64_t>(&p->constant)) c.dropoutP = static_cast<double>(*i);
    }
    // native_dropout's train is optional: None means training.
    if (const ir::Arg* train = n.arg("train"))
      if (const bool* b = std::get_if<bool>(&train->constant)) c.dropoutTrain = *b;
    if (base != "aten::dropout" && base != "aten::native_dropout")
      fail(s, fmt::format("{} is not supported by the runtime yet (only dropout and native_dropout)", base));
  } else if (isRandomOp(base)) {
    c.replicaDim = plan.replication.replicated() ? replicaDim(s) : -1;
    if (base.ends_with("_like") && (shardedIn || c.replicaDim >= 0)) c.adjust = Adjust::RandomLike;
    else if (c.replicaDim >= 0)
      fail(s, fmt::format("{} draws batch-sized numbers, which a replicated plan supports for dropout and *_like ops "
                          "only; plan the model with hap plan instead",
                          base));
    else if (n.tensorInputs().empty()) c.adjust = shardedOut ? Adjust::FullPiece : Adjust::None;
    else if (!base.ends_with("_like") && shardedIn)
      fail(s, fmt::format("{} on a sharded input is not supported by the runtime yet", base));
  } else if (kReshapeOps.count(base)) {
    if (shardedOut) c.adjust = Adjust::Reshape;
  } else if (kExpandOps.count(base)) {
    if (shardedOut) c.adjust = Adjust::Expand;
  } else if (base == "aten::mean" && shardedIn) {
    const ir::Value& x = g.value(c.inputs[0].value);
    std::vector<int64_t> dims;
    const ir::Arg* dim = n.arg("dim");
    if (dim && dim->kind == ir::Arg::Kind::Constant) {
      if (const auto* l = std::get_if<std::vector<int64_t>>(&dim->constant)) dims = *l;
      else if (const int64_t* i = std::get_if<int64_t>(&dim->constant)) dims = {*i};
    }
    if (dims.empty())
      for (int d = 0; d < x.rank(); ++d) dims.push_back(d);
    bool cutReduced = false;
    int64_t count = 1;
    for (int64_t d : dims) {
      const int64_t nd = d < 0 ? d + x.rank() : d;
      count *= x.shape[static_cast<size_t>(nd)];
      cutReduced = cutReduced || nd == c.inputs[0].rel;
    }
    if (cutReduced) {
      c.adjust = Adjust::MeanSharded;
      c.globalCount = count;
      c.meanDims = dims;
      if (const ir::Arg* keep = n.arg("keepdim"))
        if (const bool* b = std::get_if<bool>(&keep->constant)) c.keepdim = *b;
    }
  } else if ((kClassLosses.count(base) || kPointwiseLosses.count(base)) && shardedIn &&
             intConstant("reduction", 1) == 1) {
    c.reductionArg = argIndex("reduction");
    if (c.reductionArg < 0) fail(s, "a mean loss without a reduction argument");
    const ir::Value& self = g.value(c.inputs[0].value);
    if (kPointwiseLosses.count(base)) {
      c.adjust = Adjust::PointwiseLossMean;
      c.globalCount = self.numel();
    } else if (g.value(c.inputs[1].value).rank() == self.rank()) {
      c.adjust = Adjust::ProbabilityLossMean;  // class probabilities: every position counts
      c.globalCount = self.numel() / self.shape[1];
    } else {
      c.adjust = Adjust::ClassLossMean;
      c.ignoreIndex = intConstant("ignore_index", -100);
      if (n.tensorInputs().size() > 2)
        fail(s, "a class-weighted mean loss over sharded positions is not supported by the runtime yet");
      // When the targets are a model input (or a view of one) whose declared range excludes
      // ignore_index, every target counts: the global count is static, and the loss needs no
      // all-reduce (a synchronisation point in the middle of forward). forward() asserts the
      // range on every piece.
      ir::ValueId t = c.inputs[1].value;
      while (g.value(t).kind == ir::ValueKind::Activation && g.value(t).producer != ir::kNone) {
        const ir::Node& producer = g.node(g.value(t).producer);
        if (!kReshapeOps.count(baseOp(producer.op)) || producer.tensorInputs().empty()) break;
        t = producer.tensorInputs().front();
      }
      const ir::Value& targets = g.value(t);
      for (const InputPiece& piece : inputPieces)
        if (targets.kind == ir::ValueKind::Input && piece.name == targets.name && piece.low && piece.high &&
            (c.ignoreIndex < *piece.low || c.ignoreIndex >= *piece.high))
          c.globalCount = g.value(c.inputs[1].value).numel();
    }
  } else if ((base == "aten::_convolution" || base == "aten::conv2d" || base == "aten::conv1d" ||
              base == "aten::conv3d" || base == "aten::convolution") &&
             s.variant == "depthwise") {
    c.adjust = Adjust::Depthwise;
    c.groupsArg = argIndex("groups");
    if (c.groupsArg < 0) fail(s, "a depthwise convolution without a groups argument");
  } else if (base == "aten::embedding" && s.variant == "vocab") {
    c.adjust = Adjust::VocabEmbedding;
    c.vocabOffset = offsetOf(c.inputs[0].lengths, rank);
  } else if (n.tensorInputs().empty() && shardedOut) {
    c.adjust = Adjust::FullPiece;  // a factory: made full size (cheap constants), piece kept
  }
  // (A non-random *_like of a piece is already the piece of the output.)
  return c;
}

void Executor::Impl::plant(const std::vector<plan::PlanStep>& planSteps, const ts::ModelTensors& tensors) {
  rank = comm.rank();
  if (comm.size() != static_cast<int>(plan.devices.size()))
    throw RuntimeError(fmt::format("the plan is for {} ranks, but WORLD_SIZE is {}; start one worker per plan device",
                                   plan.devices.size(), comm.size()));
  setUpInputs(planSteps, tensors.inputs);
  setUpParameters(planSteps, tensors);
  if (comm.size() > 1 && !bucketed.empty())  // a world of one has nothing to sum
    buckets = std::make_unique<GradientBuckets>(parameters, bucketed, comm, options.bucketBytes);
  for (const plan::PlanStep& s : planSteps) {
    if (s.kind == plan::PlanStep::Kind::Compute) {
      steps.push_back(compileCompute(s));
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
  auto whole = env.find(formKey(o.value, synth::kIdentity));
  if (whole == env.end()) whole = env.find(formKey(o.value, synth::kIdentitySfb));
  if (whole != env.end()) {
    at::Tensor derived;
    if (synth::isGather(o.rel)) derived = collective::slice(comm, whole->second, o.rel, o.lengths);
    else if (o.rel == synth::kReduce) derived = collective::replicaToPartial(comm, whole->second);
    else if (o.rel == synth::kIdentity) derived = whole->second;
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
    result = collective::reduceScatter(comm, held(v, synth::kReduce, s), s.to.rel, s.to.lengths, method);
  } else if (in == "all-reduce") {
    result = collective::allReduce(comm, held(v, synth::kReduce, s));
  } else if (in == "all-to-all") {
    result = collective::allToAll(comm, held(v, s.from.rel, s), s.from.rel, s.from.lengths, s.to.rel, s.to.lengths);
  } else if (in == "slice") {
    result = collective::slice(comm, held(v, synth::kIdentity, s), s.to.rel, s.to.lengths);
  } else if (in == "replica-to-partial") {
    result = collective::replicaToPartial(comm, held(v, synth::kIdentity, s));
  }
  env[formKey(v, s.to.rel)] = result;
}

namespace {

bool anyEmpty(const std::vector<at::Tensor>& tensors) {
  return std::any_of(tensors.begin(), tensors.end(), [](const at::Tensor& t) { return t.numel() == 0; });
}

}  // namespace

bool Executor::Impl::emptyOutputs(const CompiledStep& c) const {
  for (const ir::Shape& shape : c.outputShapes)
    if (ir::numel(shape) != 0) return false;
  return !c.outputShapes.empty();
}

std::vector<at::Tensor> Executor::Impl::zerosOnGraph(const CompiledStep& c, const std::vector<at::Tensor>& in) const {
  // Zeros of the local output shapes that still depend on every differentiable input (with
  // gradient zero), so that this rank runs the same backward, collectives included, as the
  // others.
  at::Tensor anchor;
  for (const at::Tensor& t : in)
    if (t.defined() && t.is_floating_point() && t.requires_grad()) {
      at::Tensor term = t.sum() * 0;
      anchor = anchor.defined() ? anchor + term : term;
    }
  std::vector<at::Tensor> out;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const at::ScalarType type = ts::toScalarType(g.value(c.outputs[k].value).dtype);
    at::Tensor z = at::zeros(c.outputShapes[k], at::TensorOptions().dtype(type).device(options.device));
    if (anchor.defined() && at::isFloatingType(type)) z = z + anchor.to(type);
    out.push_back(z);
  }
  return out;
}

void Executor::Impl::runCompute(CompiledStep& c) {
  const plan::PlanStep& s = *c.step;
  std::vector<at::Tensor> in;
  in.reserve(c.inputs.size());
  for (const Operand& o : c.inputs) in.push_back(operandTensor(o, s));
  std::vector<at::Tensor> out;
  switch (c.adjust) {
    case Adjust::Reshard: {
      const Operand& from = c.inputs[0];
      const Operand& to = c.outputs[0];
      out.push_back(synth::isGather(to.rel) ? collective::allToAll(comm, in[0], from.rel, from.lengths, to.rel, to.lengths)
                                            : in[0]);
      break;
    }
    case Adjust::Reshape:
      out.push_back(in[0].reshape(c.outputShapes[0]));
      break;
    case Adjust::Expand:
      out.push_back(in[0].expand(c.outputShapes[0]));
      break;
    case Adjust::MeanSharded: {
      // The local sum over the global count (an empty piece gives zeros, still on the autograd
      // graph, so every rank runs the same backward collectives).
      const at::ScalarType type = ts::toScalarType(g.value(c.outputs[0].value).dtype);
      out.push_back(in[0].to(type).sum(c.meanDims, c.keepdim) / static_cast<double>(c.globalCount));
      break;
    }
    case Adjust::SfbLinear: {
      const Operand& x = c.inputs[0];
      out.push_back(collective::sfbLinear(comm, in[0], in[1], in.size() > 2 ? in[2] : at::Tensor(), x.rel, x.lengths));
      break;
    }
    case Adjust::Dropout: {
      // Every rank draws the full-size mask in program order (the single-device op's draws), and
      // keeps the piece of it that multiplies its piece of the input.
      const Operand& x = c.inputs[0];
      const ir::Value& xv = g.value(x.value);
      at::Tensor y;
      if (!c.dropoutTrain || c.dropoutP == 0) {
        y = in[0].clone();
        out.push_back(y);
        if (c.outputs.size() > 1) out.push_back(at::ones_like(in[0], at::kBool));
        break;
      }
      // The single-device op's mask: on a GPU the fused kernel's draws (native_dropout's mask
      // depends on the shape and the generator, not the values), on the CPU bernoulli_'s.
      at::Tensor mask;
      const std::vector<int64_t> drawn = globalShape(xv.shape, c.replicaDim);
      if (options.device.is_cpu()) {
        mask = at::empty(drawn, in[0].options().requires_grad(false)).bernoulli_(1 - c.dropoutP);
      } else {
        at::NoGradGuard noGrad;
        mask = std::get<1>(at::native_dropout(at::empty(drawn, in[0].options().requires_grad(false)),
                                              c.dropoutP, true))
                   .to(in[0].scalar_type());
      }
      mask = machineRows(mask, c.replicaDim);
      if (synth::isGather(x.rel)) mask = localPiece(mask, x.rel, x.lengths, rank);
      if (c.outputs.size() > 1) {  // native_dropout: (input · mask · scale, mask)
        y = in[0] * mask * (1 / (1 - c.dropoutP));
        out.push_back(y);
        out.push_back(mask.to(at::kBool));
      } else {
        out.push_back(in[0] * mask.div_(1 - c.dropoutP));
      }
      break;
    }
    default: {
      std::vector<c10::IValue> stack = c.stack;
      for (size_t a = 0; a < stack.size(); ++a) {
        const int slot = c.argTensorSlot[a];
        if (slot < 0) continue;
        if (c.argTensorCount[a] < 0) {
          stack[a] = in[static_cast<size_t>(slot)];
        } else {
          c10::List<at::Tensor> list;
          for (int k = 0; k < c.argTensorCount[a]; ++k) list.push_back(in[static_cast<size_t>(slot + k)]);
          stack[a] = list;
        }
      }
      if (c.adjust == Adjust::Depthwise) stack[static_cast<size_t>(c.groupsArg)] = in[0].size(1);
      if (c.adjust == Adjust::RandomLike)
        stack[0] = at::empty(globalShape(g.value(c.inputs[0].value).shape, c.replicaDim), in[0].options());
      if (c.adjust == Adjust::VocabEmbedding) {
        // Ids in this rank's row range, shifted to local rows; the others look up row 0 and are
        // zeroed. An empty range contributes zeros.
        const at::Tensor& weight = in[0];
        const at::Tensor& ids = in[1];
        const int64_t rows = weight.size(0);
        if (rows == 0) {
          out = zerosOnGraph(c, in);
          break;
        }
        at::Tensor local = ids - c.vocabOffset;
        at::Tensor mine = (local >= 0).logical_and(local < rows);
        stack[1] = at::where(mine, local, at::zeros_like(local));
        c.op->getOperation()(stack);
        out.push_back(stack.back().toTensor() * mine.unsqueeze(-1).to(weight.scalar_type()));
        break;
      }
      const bool mean = c.adjust == Adjust::ClassLossMean || c.adjust == Adjust::PointwiseLossMean ||
                        c.adjust == Adjust::ProbabilityLossMean;
      if (mean) stack[static_cast<size_t>(c.reductionArg)] = int64_t{2};  // sum
      if (emptyOutputs(c)) {
        out = zerosOnGraph(c, in);
        break;
      }
      try {
        c.op->getOperation()(stack);
      } catch (const c10::Error&) {
        // Some kernels reject an empty operand (a convolution over zero input channels): the
        // piece's contribution is then zeros, the sum over an empty range.
        if (!anyEmpty(in)) throw;
        out = zerosOnGraph(c, in);
        break;
      }
      for (const c10::IValue& v : stack) {
        if (v.isTensor()) out.push_back(v.toTensor());
        else if (v.isTensorList())
          for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
      }
      if (c.adjust == Adjust::PointwiseLossMean || c.adjust == Adjust::ProbabilityLossMean) {
        out[0] = out[0] / static_cast<double>(c.globalCount);
      } else if (c.adjust == Adjust::ClassLossMean && c.globalCount > 0) {
        // Every target counts (compileCompute): the static global count, the range asserted.
        const at::Tensor valid = in[1].ne(c.ignoreIndex).all();
        if (options.device.is_cpu()) {
          if (!valid.item<bool>())
            fail(s, fmt::format("a target equals ignore_index {}, outside the range the model file declares for "
                                "its input; fix the data, or re-export the model with the range it has",
                                c.ignoreIndex));
        } else {
          at::_assert_async(valid);  // no host synchronisation on a GPU
        }
        out[0] = out[0] / static_cast<double>(c.globalCount);
      } else if (c.adjust == Adjust::ClassLossMean) {
        // The global number of targets that are not ignored: one scalar all-reduce.
        at::Tensor count = in[1].ne(c.ignoreIndex).sum().to(at::kDouble).reshape({1});
        comm.allReduce(count);
        out[0] = out[0] / count.item<double>();
      } else if (c.adjust == Adjust::FullPiece || c.adjust == Adjust::RandomLike) {
        for (size_t k = 0; k < out.size(); ++k) {
          out[k] = machineRows(out[k], c.replicaDim);
          const Operand& o = c.outputs[k];
          if (synth::isGather(o.rel)) out[k] = localPiece(out[k], o.rel, o.lengths, rank).contiguous();
        }
      }
      break;
    }
  }
  if (out.size() != c.outputs.size())
    fail(s, fmt::format("the operator returned {} tensors, the plan expects {}", out.size(), c.outputs.size()));
  // Kernels given an empty operand may also return a wrongly shaped result (a convolution over
  // zero input channels gives zero output channels): the piece's contribution is zeros.
  bool misshapen = false;
  for (size_t k = 0; k < out.size(); ++k) misshapen = misshapen || !out[k].sizes().equals(c.outputShapes[k]);
  if (misshapen && anyEmpty(in)) out = zerosOnGraph(c, in);
  for (size_t k = 0; k < out.size(); ++k) {
    if (!out[k].sizes().equals(c.outputShapes[k]))
      fail(s, fmt::format("output {} has local shape {} here, the plan says {}", k, ir::formatShape(out[k].sizes().vec()),
                          ir::formatShape(c.outputShapes[k])));
    env[formKey(c.outputs[k].value, c.outputs[k].rel)] = out[k];
  }
}

Executor::Executor(const plan::Plan& plan, const ir::Graph& planned, const ts::ModelTensors& tensors, Communicator& comm,
                   const ExecutorOptions& options)
    : impl_(std::make_unique<Impl>(plan, planned, comm, options)) {
  impl_->plant(plan.steps, tensors);
}

Executor::~Executor() = default;

const std::vector<InputPiece>& Executor::inputPieces() const { return impl_->inputPieces; }
std::vector<LocalParameter>& Executor::parameters() { return impl_->parameters; }
const std::vector<Executor::Span>& Executor::spans() const { return impl_->spans; }
double Executor::now() const { return impl_->now(); }

at::Tensor Executor::forward(const std::vector<at::Tensor>& batch) {
  Impl& m = *impl_;
  if (batch.size() != m.inputPieces.size())
    throw RuntimeError(fmt::format("rank {}: {} batch tensors for {} model inputs", m.rank, batch.size(),
                                   m.inputPieces.size()));
  m.env.clear();
  m.spans.clear();
  std::vector<at::Tensor> onDevice;
  const std::vector<at::Tensor>* pieces = &batch;
  if (!m.options.device.is_cpu()) {
    for (const at::Tensor& t : batch) onDevice.push_back(t.to(m.options.device));
    pieces = &onDevice;
  }
  for (CompiledStep& c : m.steps) {
    const double start = m.now();
    if (c.step->kind == plan::PlanStep::Kind::Convert) m.runConvert(c, *pieces);
    else m.runCompute(c);
    const double end = m.now();
    if (c.communication || c.step->kind == plan::PlanStep::Kind::Compute) m.spans.push_back({c.label, c.communication, start, end});
  }
  const ir::ValueId loss = m.g.loss;
  auto partial = m.env.find(formKey(loss, synth::kReduce));
  if (partial != m.env.end()) return partial->second;
  auto whole = m.env.find(formKey(loss, synth::kIdentity));
  if (whole == m.env.end())
    throw RuntimeError(fmt::format("rank {}: the program did not compute the loss (a runtime bug)", m.rank));
  return collective::replicaToPartial(m.comm, whole->second);
}

void Executor::backward(const at::Tensor& partialLoss) {
  Impl& m = *impl_;
  const double start = m.now();
  if (m.buckets) m.buckets->begin();
  partialLoss.backward();
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

}  // namespace hap::rt
