#include "runtime/core/step_kernel.h"

#include <c10/core/GradMode.h>
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <unordered_set>

#include "engine/import/model_tensors.h"
#include "engine/ir/segments.h"
#include "engine/rules/families.h"
#include "engine/rules/relation.h"
#include "runtime/comm/collectives.h"
#include "runtime/core/fault_injection.h"
#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

using rules::Rel;

int normalizeDim(int64_t d, int rank) { return static_cast<int>(d < 0 ? d + rank : d); }

int64_t offsetOf(const std::vector<int64_t>& lengths, int rank) {
  int64_t offset = 0;
  for (int j = 0; j < rank; ++j) offset += lengths[static_cast<size_t>(j)];
  return offset;
}

// How a compute step departs from calling the node's operator with the reference arguments.
enum class Adjust : uint8_t {
  None,
  Identity,     // the op keeps the cut dimension whole (a slice of all of it): the piece itself
  Reshape,      // view-like op with a sharded output: reshape the input to the local output shape
  Expand,       // expand-like op with a sharded output: expand to the local output shape
  FullPiece,    // no sharded input (a factory or random factory): run full size, keep the piece
  Dropout,      // sharded input: draw the full-size mask, keep this rank's piece of it
  RandomPadded,  // another random op on a cut input (or in a replicated plan): run it on full-size
                 // inputs, this rank's pieces in place and zeros elsewhere, and keep the output's
                 // piece (the op's own draws, exactly; its values elsewhere are discarded)
  MeanSharded,  // mean over a sharded dimension: local sum / global count
  ClassLossMean,      // nll / cross-entropy, mean over sharded positions: sum / global target count
  PointwiseLossMean,  // pointwise loss, mean over sharded positions: sum / global element count
  ProbabilityLossMean,  // cross-entropy with class probabilities: sum / global position count
  Depthwise,    // depthwise convolution on a channel cut: groups = local channels
  VocabEmbedding,  // embedding with the table's rows cut: look up local ids, zeros elsewhere
  Reshard,      // hap::reshard: all-to-all between the segments' cuts (G), identity otherwise
  SfbLinear,    // linear whose weight gradient is formed by sufficient-factor broadcasting
  SyncBatchNorm,  // batch norm in training on a cut other than the channels: statistics all-reduced
};

const std::unordered_set<std::string> kReshapeOps = {
    "aten::view",    "aten::reshape",   "aten::_unsafe_view", "aten::flatten",   "aten::unflatten",
    "aten::squeeze", "aten::unsqueeze", "aten::view_as",      "aten::reshape_as"};
const std::unordered_set<std::string> kExpandOps = {"aten::expand", "aten::broadcast_to", "aten::expand_as"};
// "aten::relu_" -> "aten::relu" (not "aten::__and__").
std::string baseOp(std::string op) {
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') op.pop_back();
  return op;
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
          if (type.find("Device") != std::string::npos) return c10::IValue(c10::Device(c));  // Device, Optional[Device]
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

bool anyEmpty(const std::vector<at::Tensor>& tensors) {
  return std::any_of(tensors.begin(), tensors.end(), [](const at::Tensor& t) { return t.numel() == 0; });
}

struct Operand {
  ir::ValueId value = ir::kNone;
  Rel rel = rules::kIdentity;
  std::vector<int64_t> lengths;  // G(d)
};

}  // namespace

struct StepKernel::Impl {
  const ir::Graph& g;
  const plan::PlanStep& step;
  KernelContext context;
  std::string label;
  bool communication = false;
  std::shared_ptr<torch::jit::Operator> op;
  std::vector<c10::IValue> stack;       // the arguments with constants filled in
  std::vector<int> argTensorSlot;       // per argument: first operand index, or -1 (constant)
  std::vector<int> argTensorCount;      // per argument: operands it takes (a list: several)
  std::vector<bool> optionalList;       // per argument: a list of optional tensors (Tensor?[])
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
  bool weighted = false;       // ClassLossMean with class weights: the mean divides by their sum
  // Random ops of a replicated plan: the output dimension the machines split (-1: none). The op
  // draws the global batch's numbers and keeps this machine's rows.
  int replicaDim = -1;
  bool inplaceOnCopy = false;  // an in-place op without an out-of-place form: run on a copy
  std::shared_ptr<torch::jit::Operator> inplaceOp;  // the in-place form itself (in-place nodes)
  // SyncBatchNorm: the operands' places among the tensor inputs (-1: absent), the global count
  // of elements per channel, momentum and eps.
  int weightAt = -1, biasAt = -1, runningMeanAt = -1, runningVarAt = -1;
  int64_t perChannel = 0;
  double momentum = 0, eps = 0;

  Impl(const ir::Graph& graph, const plan::PlanStep& s, const KernelContext& c) : g(graph), step(s), context(c) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw RuntimeError(fmt::format("rank {}: {}: {}", context.rank, g.describe(step.node), what));
  }
  bool replicated() const { return context.replication && context.replication->replicated(); }
  // The dtype value v has in this run (KernelContext::floating for floating values).
  at::ScalarType typeOf(ir::ValueId v) const {
    const at::ScalarType type = import::toScalarType(g.value(v).dtype);
    return context.floating != at::ScalarType::Undefined && at::isFloatingType(type) ? context.floating : type;
  }
  int machines() const { return replicated() ? context.replication->machines : 1; }

  ir::Shape localShape(const Operand& o) const {
    ir::Shape shape = g.value(o.value).shape;
    if (rules::isGather(o.rel)) shape[static_cast<size_t>(o.rel)] = o.lengths[static_cast<size_t>(context.rank)];
    return shape;
  }
  // A replicated plan's cut of this random node's output across machines (RuntimeError when the
  // plan lists none).
  int randomCut() const {
    for (const plan::Replication::RandomCut& c : context.replication->randomCuts)
      if (c.node == step.node) return c.dim;
    fail("the replicated plan gives this random op no cut across machines; re-plan with hap plan");
  }
  // The full (machine-level) shape of a random op's draw as the global batch's: the machines'
  // dimension `dim` times their count.
  std::vector<int64_t> globalShape(std::vector<int64_t> shape, int dim) const {
    if (dim >= 0) shape[static_cast<size_t>(dim)] *= machines();
    return shape;
  }
  // This machine's rows of a global draw (`full` itself when dim < 0).
  at::Tensor machineRows(const at::Tensor& full, int dim) const {
    if (dim < 0) return full;
    const int64_t rows = full.size(dim) / machines();
    return full.narrow(dim, context.machine * rows, rows);
  }

  // `piece` (this rank's piece of operand o) embedded in zeros of the operand's full size: the
  // machine's shape, and in a replicated plan the global batch's along the dimension aligned with
  // the output's cut across machines.
  at::Tensor fullSize(const at::Tensor& piece, const Operand& o) const {
    auto embed = [](const at::Tensor& t, int64_t d, int64_t before, int64_t after) {
      if (before == 0 && after == 0) return t;
      std::vector<int64_t> shape = t.sizes().vec();
      std::vector<at::Tensor> parts;
      shape[static_cast<size_t>(d)] = before;
      if (before > 0) parts.push_back(at::zeros(shape, t.options().requires_grad(false)));
      parts.push_back(t);
      shape[static_cast<size_t>(d)] = after;
      if (after > 0) parts.push_back(at::zeros(shape, t.options().requires_grad(false)));
      return at::cat(parts, d);
    };
    const ir::Value& v = g.value(o.value);
    at::Tensor full = piece;
    if (rules::isGather(o.rel)) {
      const int64_t before = offsetOf(o.lengths, context.rank);
      full = embed(full, o.rel, before, v.shape[static_cast<size_t>(o.rel)] - before - piece.size(o.rel));
    }
    if (replicaDim >= 0) {
      const ir::Value& out = g.value(outputs[0].value);
      const int64_t d = replicaDim - (out.rank() - v.rank());
      if (d >= 0 && v.shape[static_cast<size_t>(d)] == out.shape[static_cast<size_t>(replicaDim)]) {
        const int64_t rows = v.shape[static_cast<size_t>(d)];
        full = embed(full, d, context.machine * rows, (machines() - 1 - context.machine) * rows);
      }
    }
    return full;
  }

  void compile();
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& in, Communicator& comm);
  bool emptyOutputs() const;
  // Runs the operator on `args` and returns its tensor results (lists flattened).
  std::vector<at::Tensor> call(std::vector<c10::IValue> args) const {
    op->getOperation()(args);
    std::vector<at::Tensor> result;
    for (const c10::IValue& v : args) {
      if (v.isTensor()) result.push_back(v.toTensor());
      else if (v.isTensorList())
        for (const at::Tensor& t : v.toTensorVector()) result.push_back(t);
    }
    return result;
  }
  // The argument stack with the operands filled in. A list of optional tensors (aten::index's
  // indices) keeps its Nones in their places.
  std::vector<c10::IValue> stackWith(const std::vector<at::Tensor>& in) const {
    std::vector<c10::IValue> args = stack;
    const ir::Node& n = g.node(step.node);  // (its args only where a list keeps Nones)
    for (size_t a = 0; a < args.size(); ++a) {
      const int slot = argTensorSlot[a];
      if (slot < 0) continue;
      if (argTensorCount[a] < 0) {
        args[a] = in[static_cast<size_t>(slot)];
        continue;
      }
      const ir::Arg& arg = n.args[a];
      if (!optionalList[a]) {
        c10::List<at::Tensor> list;
        for (int k = 0; k < argTensorCount[a]; ++k) list.push_back(in[static_cast<size_t>(slot + k)]);
        args[a] = list;
        continue;
      }
      c10::List<c10::optional<at::Tensor>> list;
      int next = 0;
      const int size = argTensorCount[a] + static_cast<int>(arg.noneAt.size());
      for (int k = 0; k < size; ++k) {
        if (std::find(arg.noneAt.begin(), arg.noneAt.end(), k) != arg.noneAt.end()) list.push_back(c10::nullopt);
        else list.push_back(in[static_cast<size_t>(slot + next++)]);
      }
      args[a] = list;
    }
    return args;
  }
  bool shapesMatch(const std::vector<at::Tensor>& out) const {
    if (out.size() != outputShapes.size()) return false;
    for (size_t k = 0; k < out.size(); ++k)
      if (!out[k].sizes().equals(outputShapes[k])) return false;
    return true;
  }
  // The result of a step some of whose pieces are empty, where the kernel cannot take them. A
  // piece empty along a dimension the op sums over (a convolution's input channels, a matmul's
  // inner dimension) contributes nothing but the rest of the op (a partial bias): the op runs
  // with such pieces as one zero slice, still on the autograd graph. Where that does not give
  // the local shapes, the contribution is zeros.
  std::vector<at::Tensor> emptyPieces(std::vector<c10::IValue> args, const std::vector<at::Tensor>& in) const {
    for (size_t a = 0; a < args.size(); ++a) {
      const int slot = argTensorSlot[a];
      if (slot < 0 || argTensorCount[a] >= 0) continue;
      const at::Tensor& t = in[static_cast<size_t>(slot)];
      const Rel r = inputs[static_cast<size_t>(slot)].rel;
      if (!rules::isGather(r) || t.size(r) != 0) continue;
      std::vector<int64_t> shape = t.sizes().vec();
      shape[static_cast<size_t>(r)] = 1;
      args[a] = at::cat({t, at::zeros(shape, t.options().requires_grad(false))}, r);
    }
    try {
      std::vector<at::Tensor> out = call(std::move(args));
      if (shapesMatch(out)) return out;
    } catch (const c10::Error&) {
    }
    return zerosOnGraph(in);
  }
  at::Tensor classLossMean(const at::Tensor& sum, const std::vector<at::Tensor>& in, Communicator& comm);
  std::vector<at::Tensor> zerosOnGraph(const std::vector<at::Tensor>& in) const;
};

void StepKernel::Impl::compile() {
  const ir::Node& n = g.node(step.node);
  const plan::PlanStep& s = step;
  label = n.op.substr(n.op.find("::") + 2);
  for (const plan::Form& f : s.inputs) inputs.push_back({f.value, f.rel, f.lengths});
  for (const plan::Form& f : s.outputs) outputs.push_back({f.value, f.rel, f.lengths});
  for (const Operand& o : outputs) outputShapes.push_back(localShape(o));
  if (n.op == ir::kReshardOp) {
    adjust = Adjust::Reshard;
    communication = true;
    label = "reshard";
    return;
  }
  if (inputs.size() != n.tensorInputs().size() || outputs.size() != n.outputs.size())
    fail("the plan's step lists other inputs or outputs than the model's node (was the plan made for this model?)");
  // In-place ops run out of place, where the op has an out-of-place form with the same overload
  // that returns the target's dtype: the importer rebinds later readers to the op's output, so the
  // old value is never read again, and autograd keeps what it saved. Otherwise (transpose_.int,
  // bernoulli_.float, pow_.Scalar; eq_ and logical_and_ on floats, whose out-of-place forms
  // return bools) the in-place op runs on a copy of its target, so that values and gradients are
  // the single-device op's.
  const std::string name = n.inplace ? baseOp(n.op) : n.op;
  op = findOperator(name, n.overload);
  if (n.inplace) inplaceOp = findOperator(n.op, n.overload);
  if (op && n.inplace) {
    // The same overload name may be another signature (pow_.Scalar(Tensor self, Scalar exponent)
    // against pow.Scalar(Scalar self, Tensor exponent)): the arguments must match by name and type.
    const auto& a = op->schema().arguments();
    const auto& b = inplaceOp ? inplaceOp->schema().arguments() : a;
    bool same = a.size() == b.size();
    for (size_t i = 0; same && i < a.size(); ++i)
      same = a[i].name() == b[i].name() && a[i].type()->annotation_str() == b[i].type()->annotation_str();
    if (!same) op = nullptr;
  }
  if (!op) {
    op = inplaceOp ? inplaceOp : findOperator(n.op, n.overload);
    inplaceOnCopy = n.inplace;
  }
  if (!op) fail(fmt::format("no operator {}.{} in this LibTorch", n.op, n.overload));
  // The argument stack with constants filled in, and where the operands go.
  int next = 0;
  optionalList.assign(n.args.size(), false);
  for (const ir::Arg& a : n.args) {
    if (a.kind == ir::Arg::Kind::Constant) {
      // Off the CPU, a device argument (a traced "cpu", a factory's None) names this device.
      const bool deviceArg = a.type.find("Device") != std::string::npos;  // Device, Optional[Device]
      stack.push_back(deviceArg && !context.device.is_cpu() ? c10::IValue(context.device) : constantValue(a));
      // A floating dtype argument (to(x, float32), zeros(..., dtype=float32)) names the run's.
      if (context.floating != at::ScalarType::Undefined && a.name == "dtype")
        if (const int64_t* code = std::get_if<int64_t>(&a.constant);
            code && at::isFloatingType(static_cast<at::ScalarType>(*code)))
          stack.back() = static_cast<int64_t>(context.floating);
      argTensorSlot.push_back(-1);
      argTensorCount.push_back(0);
    } else {
      stack.emplace_back();
      optionalList[stack.size() - 1] = a.kind == ir::Arg::Kind::TensorList && (a.type.find("Optional") != std::string::npos ||
                                                                               a.type.find('?') != std::string::npos);
      argTensorSlot.push_back(next);
      argTensorCount.push_back(a.kind == ir::Arg::Kind::TensorList ? static_cast<int>(a.values.size()) : -1);
      next += static_cast<int>(a.values.size());
    }
  }
  auto argIndex = [&](std::string_view argName) {
    for (size_t i = 0; i < n.args.size(); ++i)
      if (n.args[i].name == argName) return static_cast<int>(i);
    return -1;
  };
  auto intConstant = [&](std::string_view argName, int64_t fallback) {
    const ir::Arg* a = n.arg(argName);
    if (!a || a->kind != ir::Arg::Kind::Constant) return fallback;
    if (const int64_t* i = std::get_if<int64_t>(&a->constant)) return *i;
    return fallback;
  };
  bool shardedIn = false, shardedOut = false;
  for (const Operand& o : inputs) shardedIn = shardedIn || rules::isGather(o.rel);
  for (const Operand& o : outputs) shardedOut = shardedOut || rules::isGather(o.rel);
  const std::string base = baseOp(n.op);

  if (s.sfb) {
    if (base != "aten::linear") fail("sufficient-factor broadcasting is implemented for linear only");
    adjust = Adjust::SfbLinear;
  } else if ((base == "aten::batch_norm" || base == "aten::native_batch_norm") && s.variant == "sync") {
    adjust = Adjust::SyncBatchNorm;
    int at = 0;
    for (const ir::Arg& a : n.args) {
      if (a.kind == ir::Arg::Kind::Constant) continue;
      if (a.name == "weight") weightAt = at;
      if (a.name == "bias") biasAt = at;
      if (a.name == "running_mean") runningMeanAt = at;
      if (a.name == "running_var") runningVarAt = at;
      at += static_cast<int>(a.values.size());
    }
    const ir::Value& x = g.value(inputs[0].value);
    perChannel = x.numel() / std::max<int64_t>(x.shape[1], 1);
    auto number = [&](std::string_view argName) {
      const ir::Arg* a = n.arg(argName);
      if (a)
        if (const double* d = std::get_if<double>(&a->constant)) return *d;
      if (a)
        if (const int64_t* i = std::get_if<int64_t>(&a->constant)) return static_cast<double>(*i);
      fail(fmt::format("batch norm without a constant '{}'", argName));
    };
    momentum = number("momentum");
    eps = number("eps");
  } else if (rules::isRandomOp(n.op)) {
    // Every rank draws the single-device op's numbers: full size (the global batch's in a
    // replicated plan), keeping its piece. Where no input is cut and the plan is not replicated,
    // the op itself does that (a partial's pieces share the draws, so dropout of a partial sum is
    // the partial of the dropout).
    replicaDim = replicated() ? randomCut() : -1;
    if (n.tensorInputs().empty()) {
      if (replicaDim >= 0)
        fail(fmt::format("{} draws batch-sized numbers from constant sizes, which a replicated plan does not "
                         "support; plan the model with hap plan instead",
                         base));
      adjust = shardedOut ? Adjust::FullPiece : Adjust::None;
    } else if (shardedIn || replicaDim >= 0) {
      adjust = base == "aten::dropout" || base == "aten::native_dropout" ? Adjust::Dropout : Adjust::RandomPadded;
      const ir::Arg* p = n.arg("p");
      if (p) {
        if (const double* d = std::get_if<double>(&p->constant)) dropoutP = *d;
        else if (const int64_t* i = std::get_if<int64_t>(&p->constant)) dropoutP = static_cast<double>(*i);
      }
      // native_dropout's train is optional: None means training.
      if (const ir::Arg* train = n.arg("train"))
        if (const bool* b = std::get_if<bool>(&train->constant)) dropoutTrain = *b;
    }
  } else if ((base == "aten::slice" || base == "aten::narrow") && shardedIn &&
             normalizeDim(intConstant("dim", 0), g.value(inputs[0].value).rank()) == inputs[0].rel) {
    adjust = Adjust::Identity;  // the rule cuts the sliced dimension only where the slice keeps it whole
  } else if (kReshapeOps.count(base)) {
    if (shardedOut) adjust = Adjust::Reshape;
  } else if (kExpandOps.count(base)) {
    if (shardedOut) adjust = Adjust::Expand;
  } else if (base == "aten::mean" && shardedIn) {
    const ir::Value& x = g.value(inputs[0].value);
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
      cutReduced = cutReduced || nd == inputs[0].rel;
    }
    if (cutReduced) {
      adjust = Adjust::MeanSharded;
      globalCount = count;
      meanDims = dims;
      if (const ir::Arg* keep = n.arg("keepdim"))
        if (const bool* b = std::get_if<bool>(&keep->constant)) keepdim = *b;
    }
  } else if (rules::lossKind(base) != rules::LossKind::None && shardedIn &&
             intConstant("reduction", 1) == 1) {
    reductionArg = argIndex("reduction");
    if (reductionArg < 0) fail("a mean loss without a reduction argument");
    const ir::Value& self = g.value(inputs[0].value);
    if (rules::lossKind(base) == rules::LossKind::Pointwise) {
      adjust = Adjust::PointwiseLossMean;
      globalCount = self.numel();
    } else if (g.value(inputs[1].value).rank() == self.rank()) {
      adjust = Adjust::ProbabilityLossMean;  // class probabilities: every position counts
      globalCount = self.numel() / self.shape[1];
    } else {
      adjust = Adjust::ClassLossMean;
      ignoreIndex = intConstant("ignore_index", -100);
      weighted = n.tensorInputs().size() > 2;
      // When the targets are a model input (or a view of one) whose declared range excludes
      // ignore_index, every target counts: the global count is static, and the loss needs no
      // all-reduce (a synchronisation point in the middle of forward). run() asserts the range
      // on every piece.
      ir::ValueId t = inputs[1].value;
      while (g.value(t).kind == ir::ValueKind::Activation && g.value(t).producer != ir::kNone) {
        const ir::Node& producer = g.node(g.value(t).producer);
        if (!kReshapeOps.count(baseOp(producer.op)) || producer.tensorInputs().empty()) break;
        t = producer.tensorInputs().front();
      }
      const ir::Value& targets = g.value(t);
      if (!weighted && targets.kind == ir::ValueKind::Input && targets.low && targets.high &&
          (ignoreIndex < *targets.low || ignoreIndex >= *targets.high))
        globalCount = g.value(inputs[1].value).numel();
    }
  } else if ((base == "aten::_convolution" || base == "aten::convolution" || base.starts_with("aten::conv")) &&
             s.variant == "depthwise") {
    adjust = Adjust::Depthwise;
    groupsArg = argIndex("groups");
    if (groupsArg < 0) fail("a depthwise convolution without a groups argument");
  } else if (base == "aten::embedding" && s.variant == "vocab") {
    adjust = Adjust::VocabEmbedding;
    vocabOffset = offsetOf(inputs[0].lengths, context.rank);
  } else if (shardedOut && (n.tensorInputs().empty() || base.rfind("aten::new_", 0) == 0)) {
    adjust = Adjust::FullPiece;  // a factory (new_*: self gives the dtype only): made full size, piece kept
  }
  // (A non-random *_like of a piece is already the piece of the output.)
}

// A class loss's mean over cut positions: this rank's sum over the global denominator. The
// single-device mean divides the (class-weighted) sum of the losses, label smoothing's terms
// included, by the number of targets that are not ignore_index (weighted: the sum of their
// classes' weights).
at::Tensor StepKernel::Impl::classLossMean(const at::Tensor& sum, const std::vector<at::Tensor>& in,
                                           Communicator& comm) {
  const at::Tensor& targets = in[1];
  const at::Tensor valid = targets.ne(ignoreIndex);
  double denominator = static_cast<double>(globalCount);
  if (globalCount > 0) {
    // Every target counts (compile()): the static global count, the range asserted.
    const at::Tensor all = valid.all();
    if (context.device.is_cpu()) {
      if (!all.item<bool>())
        fail(fmt::format("a target equals ignore_index {}, outside the range the model file declares for its input; "
                         "fix the data, or re-export the model with the range it has",
                         ignoreIndex));
    } else {
      at::_assert_async(all);  // no host synchronisation on a GPU
    }
  } else {
    // The global count (or class-weight sum) of the targets that are not ignored: one scalar
    // all-reduce.
    at::Tensor count;
    if (weighted) {
      const at::Tensor safe = at::where(valid, targets, at::zeros_like(targets));
      const at::Tensor w = in[2].detach().to(at::kDouble).index_select(0, safe.reshape({-1})).view(targets.sizes());
      count = at::where(valid, w, at::zeros_like(w)).sum();
    } else {
      count = valid.sum().to(at::kDouble);
    }
    count = count.to(at::kCPU).reshape({1});
    comm.allReduce(count);
    denominator = count.item<double>();
  }
  return sum / denominator;
}

bool StepKernel::Impl::emptyOutputs() const {
  for (const ir::Shape& shape : outputShapes)
    if (ir::numel(shape) != 0) return false;
  return !outputShapes.empty();
}

std::vector<at::Tensor> StepKernel::Impl::zerosOnGraph(const std::vector<at::Tensor>& in) const {
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
  for (size_t k = 0; k < outputs.size(); ++k) {
    const at::ScalarType type = typeOf(outputs[k].value);
    at::Tensor z = at::zeros(outputShapes[k], at::TensorOptions().dtype(type).device(context.device));
    if (anchor.defined() && at::isFloatingType(type)) z = z + anchor.to(type);
    out.push_back(z);
  }
  return out;
}

std::vector<at::Tensor> StepKernel::Impl::run(const std::vector<at::Tensor>& in, Communicator& comm) {
  const int rank = context.rank;
  std::vector<at::Tensor> out;
  switch (adjust) {
    case Adjust::Reshard: {
      const Operand& from = inputs[0];
      const Operand& to = outputs[0];
      out.push_back(rules::isGather(to.rel) ? collective::allToAll(comm, in[0], from.rel, from.lengths, to.rel, to.lengths)
                                            : in[0]);
      break;
    }
    case Adjust::Identity:
      out.push_back(in[0].alias());
      break;
    case Adjust::Reshape:
      out.push_back(in[0].reshape(outputShapes[0]));
      break;
    case Adjust::Expand:
      out.push_back(in[0].expand(outputShapes[0]));
      break;
    case Adjust::MeanSharded: {
      // The local sum over the global count (an empty piece gives zeros, still on the autograd
      // graph, so every rank runs the same backward collectives).
      out.push_back(in[0].to(typeOf(outputs[0].value)).sum(meanDims, keepdim) / static_cast<double>(globalCount));
      break;
    }
    case Adjust::SfbLinear: {
      const Operand& x = inputs[0];
      out.push_back(collective::sfbLinear(comm, in[0], in[1], in.size() > 2 ? in[2] : at::Tensor(), x.rel, x.lengths));
      break;
    }
    case Adjust::SyncBatchNorm: {
      // Per channel, the sums of this rank's values and squares (in float64) are all-reduced: the
      // global mean and biased variance normalise every piece; autograd differentiates through
      // the all-reduce (its dual sums the statistics' gradients), so the gradients are exact.
      const at::Tensor& x = in[0];
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < x.dim(); ++d)
        if (d != 1) dims.push_back(d);
      const at::Tensor x64 = x.to(at::kDouble);
      at::Tensor sums = at::stack({x64.sum(dims), (x64 * x64).sum(dims)});
      const bool local = injectedFault() == Fault::LocalBatchStatistics;
      if (!local) sums = collective::allReduce(comm, sums);
      const double count = local ? static_cast<double>(x.numel() / std::max<int64_t>(x.size(1), 1)) : static_cast<double>(perChannel);
      const at::Tensor mean = sums[0] / count;
      const at::Tensor var = (sums[1] / count - mean * mean).clamp_min(0);
      const at::Tensor invstd = (var + eps).rsqrt();
      at::Tensor scale = weightAt >= 0 ? invstd * in[static_cast<size_t>(weightAt)].to(at::kDouble) : invstd;
      at::Tensor shift = -mean * scale;
      if (biasAt >= 0) shift = shift + in[static_cast<size_t>(biasAt)].to(at::kDouble);
      std::vector<int64_t> perChannelShape(static_cast<size_t>(x.dim()), 1);
      perChannelShape[1] = x.size(1);
      out.push_back(x * scale.to(x.scalar_type()).view(perChannelShape) + shift.to(x.scalar_type()).view(perChannelShape));
      if (outputs.size() > 1) {  // native_batch_norm: the saved mean and inverse std
        out.push_back(mean.to(x.scalar_type()));
        out.push_back(invstd.to(x.scalar_type()));
      }
      c10::NoGradGuard noGrad;  // the running statistics, as the single-device op updates them
      if (runningMeanAt >= 0) {
        at::Tensor running = in[static_cast<size_t>(runningMeanAt)];  // the buffer itself
        running.copy_(running.to(at::kDouble) * (1 - momentum) + mean.detach() * momentum);
      }
      if (runningVarAt >= 0) {
        at::Tensor running = in[static_cast<size_t>(runningVarAt)];
        const double unbiased = count > 1 ? count / (count - 1) : 1;
        running.copy_(running.to(at::kDouble) * (1 - momentum) + var.detach() * (unbiased * momentum));
      }
      break;
    }
    case Adjust::Dropout: {
      // Every rank draws the full-size mask in program order (the single-device op's draws), and
      // keeps the piece of it that multiplies its piece of the input.
      const Operand& x = inputs[0];
      const ir::Value& xv = g.value(x.value);
      if (!dropoutTrain || dropoutP == 0) {
        out.push_back(in[0].clone());
        if (outputs.size() > 1) out.push_back(at::ones_like(in[0], at::kBool));
        break;
      }
      // The single-device op's mask: on a GPU the fused kernel's draws (native_dropout's mask
      // depends on the shape and the generator, not the values), on the CPU bernoulli_'s.
      at::Tensor mask;
      const std::vector<int64_t> drawn = globalShape(xv.shape, replicaDim);
      if (context.device.is_cpu()) {
        mask = at::empty(drawn, in[0].options().requires_grad(false)).bernoulli_(1 - dropoutP);
      } else {
        c10::NoGradGuard noGrad;
        mask = std::get<1>(at::native_dropout(at::empty(drawn, in[0].options().requires_grad(false)), dropoutP, true))
                   .to(in[0].scalar_type());
      }
      mask = machineRows(mask, replicaDim);
      if (rules::isGather(x.rel)) mask = localPiece(mask, x.rel, x.lengths, rank);
      if (outputs.size() > 1) {  // native_dropout: (input · mask · scale, mask)
        out.push_back(in[0] * mask * (1 / (1 - dropoutP)));
        out.push_back(mask.to(at::kBool));
      } else {
        out.push_back(in[0] * mask.div_(1 - dropoutP));
      }
      break;
    }
    default: {
      std::vector<c10::IValue> args = stackWith(in);
      if (adjust == Adjust::Depthwise) args[static_cast<size_t>(groupsArg)] = in[0].size(inputs[0].rel);  // the channels
      if (adjust == Adjust::RandomPadded)
        for (size_t a = 0; a < args.size(); ++a)
          if (argTensorSlot[a] >= 0 && argTensorCount[a] < 0) {
            const size_t k = static_cast<size_t>(argTensorSlot[a]);
            args[a] = fullSize(in[k], inputs[k]);
          }
      if (adjust == Adjust::VocabEmbedding) {
        // Ids in this rank's row range, shifted to local rows; the others look up row 0 and are
        // zeroed. An empty range contributes zeros.
        const at::Tensor& weight = in[0];
        const at::Tensor& ids = in[1];
        const int64_t rows = weight.size(0);
        if (rows == 0) {
          out = zerosOnGraph(in);
          break;
        }
        at::Tensor local = ids - vocabOffset;
        at::Tensor mine = (local >= 0).logical_and(local < rows);
        args[1] = at::where(mine, local, at::zeros_like(local));
        op->getOperation()(args);
        out.push_back(args.back().toTensor() * mine.unsqueeze(-1).to(weight.scalar_type()));
        break;
      }
      if (inplaceOnCopy) args[0] = args[0].toTensor().clone();
      const bool mean = adjust == Adjust::ClassLossMean || adjust == Adjust::PointwiseLossMean ||
                        adjust == Adjust::ProbabilityLossMean;
      if (mean) args[static_cast<size_t>(reductionArg)] = int64_t{2};  // sum
      if (emptyOutputs()) {
        out = zerosOnGraph(in);
        break;
      }
      try {
        out = call(args);
      } catch (const c10::Error&) {
        // Some kernels reject an empty operand (a convolution over zero input channels).
        if (!anyEmpty(in)) throw;
        out = emptyPieces(args, in);
        break;
      }
      if (inplaceOp && !inplaceOnCopy && !out.empty() &&
          out[0].scalar_type() != typeOf(outputs[0].value)) {
        // The out-of-place form changes the dtype (eq_ on floats): in place on a copy from now on.
        inplaceOnCopy = true;
        op = inplaceOp;
        args[0] = args[0].toTensor().clone();
        out = call(args);
      }
      if (adjust == Adjust::PointwiseLossMean || adjust == Adjust::ProbabilityLossMean) {
        out[0] = out[0] / static_cast<double>(globalCount);
      } else if (adjust == Adjust::ClassLossMean) {
        out[0] = classLossMean(out[0], in, comm);
      } else if (adjust == Adjust::FullPiece || adjust == Adjust::RandomPadded) {
        for (size_t k = 0; k < out.size(); ++k) {
          out[k] = machineRows(out[k], replicaDim);
          const Operand& o = outputs[k];
          if (rules::isGather(o.rel)) out[k] = localPiece(out[k], o.rel, o.lengths, rank).contiguous();
        }
      }
      break;
    }
  }
  if (out.size() != outputs.size())
    fail(fmt::format("the operator returned {} tensors, the plan expects {}", out.size(), outputs.size()));
  // Kernels given an empty operand may also return a wrongly shaped result (a transposed
  // convolution over zero input channels gives zero output channels).
  if (!shapesMatch(out) && anyEmpty(in)) out = emptyPieces(stackWith(in), in);
  for (size_t k = 0; k < out.size(); ++k)
    if (!out[k].sizes().equals(outputShapes[k]))
      fail(fmt::format("output {} has local shape {} here, the plan says {}", k, ir::formatShape(out[k].sizes().vec()),
                       ir::formatShape(outputShapes[k])));
  return out;
}

StepKernel::StepKernel(const ir::Graph& g, const plan::PlanStep& step, const KernelContext& context)
    : impl_(std::make_unique<Impl>(g, step, context)) {
  impl_->compile();
}

StepKernel::~StepKernel() = default;
StepKernel::StepKernel(StepKernel&&) noexcept = default;
StepKernel& StepKernel::operator=(StepKernel&&) noexcept = default;

std::vector<at::Tensor> StepKernel::run(const std::vector<at::Tensor>& inputs, Communicator& comm) {
  return impl_->run(inputs, comm);
}

const std::string& StepKernel::label() const { return impl_->label; }
bool StepKernel::communication() const { return impl_->communication; }

}  // namespace hap::runtime
