#include "runtime/core/step_kernel.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <fmt/format.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <optional>

#include "engine/import/model_tensors.h"
#include "engine/rules/families.h"
#include "engine/rules/relation.h"
#include "runtime/comm/collectives.h"
#include "runtime/core/counter_dropout.h"
#include "runtime/core/fault_injection.h"
#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

using rules::Execution;
using rules::Rel;

int64_t offsetOf(const std::vector<int64_t>& lengths, int rank) {
  int64_t offset = 0;
  for (int j = 0; j < rank; ++j) offset += lengths[static_cast<size_t>(j)];
  return offset;
}

// What run() does beyond calling the node's operator with the reference arguments: the step's
// execution (and sfb) as it applies to this step's forms and this run (a random op's draws
// depend on whether its forms are cut and on whether the plan is replicated).
enum class Adjust : uint8_t {
  None,
  Identity,   // WholeCutPiece: the op keeps the cut dimension whole, the piece itself
  Reshape,    // ReshapeToPiece: reshape the input to the local output shape
  Expand,     // ExpandToPiece: expand to the local output shape
  FullPiece,  // FactoryPiece, or RandomDraws without tensor inputs: run full size, keep the piece
  Dropout,    // DropoutMask: the counter-based mask of this rank's piece only (counter_dropout.h)
  RandomPadded,   // RandomDraws with a cut input (or in a replicated plan): run the op on full-size
                  // inputs, this rank's pieces in place and zeros elsewhere, and keep the output's
                  // piece (the op's own draws, exactly; its values elsewhere are discarded)
  MeanSharded,    // MeanOverCut: local sum / global count
  ClassLossMean,  // nll / cross-entropy, mean over cut positions: sum / global target count
  PointwiseLossMean,    // pointwise loss, mean over cut positions: sum / global element count
  ProbabilityLossMean,  // cross-entropy with class probabilities: sum / global position count
  Depthwise,            // DepthwiseGroups: groups = local channels
  VocabEmbedding,       // VocabOffset: look up local ids, zeros elsewhere
  BagSlice,             // BagSlice: this rank's bags of an embedding_bag, their indices sliced out
  ScaledMean,           // ScaledMean: the op's mean over this rank's positions, times local/global
  Reshard,        // hap::reshard: all-to-all between the segments' cuts (G), identity otherwise
  SfbLinear,      // sfb: a linear whose weight gradient is formed by sufficient-factor broadcasting
  SyncBatchNorm,  // SyncStatistics: batch norm whose statistics are all-reduced
};

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
          if (type.find("Device") != std::string::npos)
            return c10::IValue(c10::Device(c));  // Device, Optional[Device]
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

std::shared_ptr<torch::jit::Operator> findOperator(const std::string& op,
                                                   const std::string& overload) {
  for (const auto& candidate : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(op)))
    if (candidate->schema().overload_name() == overload) return candidate;
  return nullptr;
}

// Whether two schemas take the same arguments, by name and type.
bool sameArguments(const c10::FunctionSchema& a, const c10::FunctionSchema& b) {
  const auto& x = a.arguments();
  const auto& y = b.arguments();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].name() != y[i].name() ||
        x[i].type()->annotation_str() != y[i].type()->annotation_str())
      return false;
  return true;
}

bool anyEmpty(const std::vector<at::Tensor>& tensors) {
  return std::any_of(tensors.begin(), tensors.end(),
                     [](const at::Tensor& t) { return t.numel() == 0; });
}

// The index of n's argument `name`, or -1.
int argIndex(const ir::Node& n, std::string_view name) {
  for (size_t i = 0; i < n.args.size(); ++i)
    if (n.args[i].name == name) return static_cast<int>(i);
  return -1;
}

// n's constant integer argument `name`, or `fallback`.
int64_t intConstant(const ir::Node& n, std::string_view name, int64_t fallback) {
  const ir::Arg* a = n.arg(name);
  if (!a || a->kind != ir::Arg::Kind::Constant) return fallback;
  if (const int64_t* i = std::get_if<int64_t>(&a->constant)) return *i;
  return fallback;
}

// n's constant number argument `name` (a float or an int), or nullopt.
std::optional<double> numberConstant(const ir::Node& n, std::string_view name) {
  const ir::Arg* a = n.arg(name);
  if (!a) return std::nullopt;
  if (const double* d = std::get_if<double>(&a->constant)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(&a->constant)) return static_cast<double>(*i);
  return std::nullopt;
}

// n's constant bool argument `name`, or `fallback`.
bool boolConstant(const ir::Node& n, std::string_view name, bool fallback) {
  if (const ir::Arg* a = n.arg(name))
    if (const bool* b = std::get_if<bool>(&a->constant)) return *b;
  return fallback;
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
  std::vector<Operand> inputs, outputs;
  std::vector<std::vector<int64_t>> outputShapes;  // local

  // The operator and its arguments (findOperators, buildStack).
  std::shared_ptr<torch::jit::Operator> op;
  std::shared_ptr<torch::jit::Operator> inplaceOp;  // the in-place form itself (in-place nodes)
  bool inplaceOnCopy = false;       // an in-place op without an out-of-place form: run on a copy
  std::vector<c10::IValue> stack;   // the arguments with constants filled in
  std::vector<int> argTensorSlot;   // per argument: first operand index, or -1 (constant)
  std::vector<int> argTensorCount;  // per argument: operands it takes (a list: several)
  std::vector<bool> optionalList;   // per argument: a list of optional tensors (Tensor?[])

  // The adjustment and its parameters (chooseAdjustment).
  Adjust adjust = Adjust::None;
  int64_t globalCount = 0;  // MeanSharded / PointwiseLossMean / ProbabilityLossMean denominators;
                            // ClassLossMean: the static target count (0: all-reduced per step)
  int64_t vocabOffset = 0;  // VocabEmbedding: first row of this rank
  // VocabEmbedding and BagSlice of embedding_bag: its arguments' indices (-1: absent).
  int bagIndicesArg = -1, bagOffsetsArg = -1, bagWeightsArg = -1, bagLastArg = -1;
  double meanScale = 1;  // ScaledMean: this rank's count of the cut positions over the global one
  int reductionArg = -1;    // loss means: the `reduction` argument's index
  int groupsArg = -1;       // Depthwise
  double dropoutP = 0;
  bool dropoutTrain = true;
  std::vector<int64_t> meanDims;  // MeanSharded
  bool keepdim = false;
  int64_t ignoreIndex = -100;  // ClassLossMean
  bool weighted = false;       // ClassLossMean with class weights: the mean divides by their sum
  // Random ops of a replicated plan: the output dimension the machines split (-1: none). The op
  // draws the global batch's numbers and keeps this machine's rows.
  int replicaDim = -1;
  // SyncBatchNorm: the operands' places among the tensor inputs (-1: absent), the global count
  // of elements per channel, momentum and eps.
  int weightAt = -1, biasAt = -1, runningMeanAt = -1, runningVarAt = -1;
  int64_t perChannel = 0;
  double momentum = 0, eps = 0;

  Impl(const ir::Graph& graph, const plan::PlanStep& s, const KernelContext& c)
      : g(graph), step(s), context(c) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw RuntimeError(fmt::format("rank {}: {}: {}", context.rank, g.describe(step.node), what));
  }
  bool replicated() const { return context.replication && context.replication->replicated(); }
  // The dtype value v has in this run (KernelContext::floating for floating values).
  at::ScalarType typeOf(ir::ValueId v) const {
    const at::ScalarType type = import::toScalarType(g.value(v).dtype);
    return context.floating != at::ScalarType::Undefined && at::isFloatingType(type)
               ? context.floating
               : type;
  }
  int machines() const { return replicated() ? context.replication->machines : 1; }
  static bool anyCut(const std::vector<Operand>& operands) {
    return std::any_of(operands.begin(), operands.end(),
                       [](const Operand& o) { return rules::isGather(o.rel); });
  }

  ir::Shape localShape(const Operand& o) const {
    ir::Shape shape = g.value(o.value).shape;
    if (rules::isGather(o.rel))
      shape[static_cast<size_t>(o.rel)] = o.lengths[static_cast<size_t>(context.rank)];
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
  at::Tensor fullSize(const at::Tensor& piece, const Operand& o) const;

  // Construction, by concern: the operator, its argument stack, the adjustment and its
  // parameters per execution.
  void compile();
  void findOperators(const ir::Node& n);
  void buildStack(const ir::Node& n);
  void chooseAdjustment(const ir::Node& n);
  void compileRandom(const ir::Node& n);
  void compileMean(const ir::Node& n);
  void compileLossMean(const ir::Node& n);
  void compileClassLoss(const ir::Node& n);
  void compileSyncBatchNorm(const ir::Node& n);

  // A run, by concern: the adjustments that replace the operator, the operator's call (its
  // arguments, then the adjustments of its results), and the check of the outputs.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& in, Communicator& comm);
  std::vector<at::Tensor> compute(const std::vector<at::Tensor>& in, Communicator& comm);
  std::vector<at::Tensor> reshard(const std::vector<at::Tensor>& in, Communicator& comm) const;
  std::vector<at::Tensor> meanOverCut(const std::vector<at::Tensor>& in) const;
  std::vector<at::Tensor> syncBatchNorm(const std::vector<at::Tensor>& in,
                                        Communicator& comm) const;
  std::vector<at::Tensor> dropout(const std::vector<at::Tensor>& in) const;
  std::vector<at::Tensor> vocabEmbedding(const std::vector<at::Tensor>& in) const;
  std::vector<at::Tensor> bagSlice(const std::vector<at::Tensor>& in) const;
  std::vector<at::Tensor> callOperator(const std::vector<at::Tensor>& in, Communicator& comm);
  std::vector<c10::IValue> operatorArgs(const std::vector<at::Tensor>& in) const;
  void adjustResults(std::vector<at::Tensor>& out, const std::vector<at::Tensor>& in,
                     Communicator& comm) const;
  at::Tensor classLossMean(const at::Tensor& sum, const std::vector<at::Tensor>& in,
                           Communicator& comm) const;
  void checkOutputs(std::vector<at::Tensor>& out, const std::vector<at::Tensor>& in) const;

  // Runs the operator on `args` and returns its tensor results (lists flattened).
  std::vector<at::Tensor> call(std::vector<c10::IValue> args) const;
  std::vector<c10::IValue> stackWith(const std::vector<at::Tensor>& in) const;
  bool emptyOutputs() const;
  bool shapesMatch(const std::vector<at::Tensor>& out) const;
  bool unread(size_t k) const;  // output k may differ in shape (see its definition)
  std::vector<at::Tensor> emptyPieces(std::vector<c10::IValue> args,
                                      const std::vector<at::Tensor>& in) const;
  std::vector<at::Tensor> zerosOnGraph(const std::vector<at::Tensor>& in) const;
};

// `piece` (this rank's piece of operand o) embedded in zeros of the operand's full size: the
// machine's shape, and in a replicated plan the global batch's along the dimension aligned with
// the output's cut across machines.
at::Tensor StepKernel::Impl::fullSize(const at::Tensor& piece, const Operand& o) const {
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
    full = embed(full, o.rel, before,
                 v.shape[static_cast<size_t>(o.rel)] - before - piece.size(o.rel));
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

void StepKernel::Impl::compile() {
  const ir::Node& n = g.node(step.node);
  label = n.op.substr(n.op.find("::") + 2);
  for (const plan::Form& f : step.inputs) inputs.push_back({f.value, f.rel, f.lengths});
  for (const plan::Form& f : step.outputs) outputs.push_back({f.value, f.rel, f.lengths});
  for (const Operand& o : outputs) outputShapes.push_back(localShape(o));
  if (step.execution == Execution::Reshard) {  // no operator: a collective, or the value itself
    adjust = Adjust::Reshard;
    communication = true;
    label = "reshard";
    return;
  }
  if (inputs.size() != n.tensorInputs().size() || outputs.size() != n.outputs.size())
    fail(
        "the plan's step lists other inputs or outputs than the model's node (was the plan made "
        "for this model?)");
  findOperators(n);
  buildStack(n);
  chooseAdjustment(n);
}

// In-place ops run out of place, where the op has an out-of-place form with the same overload
// that returns the target's dtype: the importer rebinds later readers to the op's output, so the
// old value is never read again, and autograd keeps what it saved. Otherwise (transpose_.int,
// bernoulli_.float, pow_.Scalar; eq_ and logical_and_ on floats, whose out-of-place forms return
// bools) the in-place op runs on a copy of its target, so that values and gradients are the
// single-device op's.
void StepKernel::Impl::findOperators(const ir::Node& n) {
  op = findOperator(n.inplace ? baseOp(n.op) : n.op, n.overload);
  if (n.inplace) inplaceOp = findOperator(n.op, n.overload);
  // The same overload name may be another signature (pow_.Scalar(Tensor self, Scalar exponent)
  // against pow.Scalar(Scalar self, Tensor exponent)): the arguments must match by name and type.
  if (op && n.inplace && inplaceOp && !sameArguments(op->schema(), inplaceOp->schema()))
    op = nullptr;
  if (!op) {
    op = inplaceOp ? inplaceOp : findOperator(n.op, n.overload);
    inplaceOnCopy = n.inplace;
  }
  if (!op) fail(fmt::format("no operator {}.{} in this LibTorch", n.op, n.overload));
}

// The argument stack with constants filled in, and where the operands go.
void StepKernel::Impl::buildStack(const ir::Node& n) {
  int next = 0;
  optionalList.assign(n.args.size(), false);
  for (const ir::Arg& a : n.args) {
    if (a.kind == ir::Arg::Kind::Constant) {
      // Off the CPU, a device argument (a traced "cpu", a factory's None) names this device.
      const bool deviceArg =
          a.type.find("Device") != std::string::npos;  // Device, Optional[Device]
      stack.push_back(deviceArg && !context.device.is_cpu() ? c10::IValue(context.device)
                                                            : constantValue(a));
      // A floating dtype argument (to(x, float32), zeros(..., dtype=float32)) names the run's.
      if (context.floating != at::ScalarType::Undefined && a.name == "dtype")
        if (const int64_t* code = std::get_if<int64_t>(&a.constant);
            code && at::isFloatingType(static_cast<at::ScalarType>(*code)))
          stack.back() = static_cast<int64_t>(context.floating);
      argTensorSlot.push_back(-1);
      argTensorCount.push_back(0);
    } else {
      stack.emplace_back();
      optionalList[stack.size() - 1] =
          a.kind == ir::Arg::Kind::TensorList &&
          (a.type.find("Optional") != std::string::npos || a.type.find('?') != std::string::npos);
      argTensorSlot.push_back(next);
      argTensorCount.push_back(
          a.kind == ir::Arg::Kind::TensorList ? static_cast<int>(a.values.size()) : -1);
      next += static_cast<int>(a.values.size());
    }
  }
}

// The adjustment is the one the rule declared for the variant (plan::PlanStep::execution, and
// sfb); the kernel compares no op or variant name. Its parameters come from the node's arguments
// and the step's forms.
void StepKernel::Impl::chooseAdjustment(const ir::Node& n) {
  if (step.sfb) {
    // Only linear(input, weight, bias?) has SFB variants (rules/matmul.cpp): the weight is I*.
    if (inputs.size() < 2 || inputs.size() > 3 || inputs[1].rel != rules::kIdentitySfb)
      fail("sufficient-factor broadcasting is implemented for linear only");
    adjust = Adjust::SfbLinear;
    return;
  }
  switch (step.execution) {
    case Execution::Plain:    // (a non-random *_like of a piece is already the output's piece)
    case Execution::Reshard:  // (compile() took it)
      return;
    case Execution::WholeCutPiece:
      adjust = Adjust::Identity;
      return;
    case Execution::ReshapeToPiece:
      adjust = Adjust::Reshape;
      return;
    case Execution::ExpandToPiece:
      adjust = Adjust::Expand;
      return;
    case Execution::FactoryPiece:  // new_*: self gives the dtype only
      adjust = Adjust::FullPiece;
      return;
    case Execution::RandomDraws:
    case Execution::DropoutMask:
      return compileRandom(n);
    case Execution::MeanOverCut:
      return compileMean(n);
    case Execution::ClassLossMean:
    case Execution::PointwiseLossMean:
    case Execution::ProbabilityLossMean:
      return compileLossMean(n);
    case Execution::SyncStatistics:
      return compileSyncBatchNorm(n);
    case Execution::DepthwiseGroups:
      adjust = Adjust::Depthwise;
      groupsArg = argIndex(n, "groups");
      if (groupsArg < 0) fail("a depthwise convolution without a groups argument");
      return;
    case Execution::VocabOffset:
      adjust = Adjust::VocabEmbedding;
      vocabOffset = offsetOf(inputs[0].lengths, context.rank);
      bagWeightsArg = argIndex(n, "per_sample_weights");  // embedding_bag
      return;
    case Execution::BagSlice:
      adjust = Adjust::BagSlice;
      bagIndicesArg = argIndex(n, "indices");
      bagOffsetsArg = argIndex(n, "offsets");
      bagWeightsArg = argIndex(n, "per_sample_weights");
      bagLastArg = argIndex(n, "include_last_offset");
      if (bagIndicesArg < 0 || bagOffsetsArg < 0 || bagWeightsArg < 0 || bagLastArg < 0 ||
          outputs.size() != 4 || !rules::isGather(outputs[0].rel))
        fail("bag-slice execution is implemented for embedding_bag with its bags cut only");
      return;
    case Execution::ScaledMean: {
      adjust = Adjust::ScaledMean;
      const auto cut = std::find_if(inputs.begin(), inputs.end(),
                                    [](const Operand& o) { return rules::isGather(o.rel); });
      if (cut == inputs.end()) fail("a scaled mean without a cut input");
      const int64_t global = offsetOf(cut->lengths, static_cast<int>(cut->lengths.size()));
      meanScale = global == 0 ? 0
                              : static_cast<double>(cut->lengths[static_cast<size_t>(context.rank)]) /
                                    static_cast<double>(global);
      return;
    }
  }
}

// Every rank draws the single-device op's numbers: full size (the global batch's in a replicated
// plan), keeping its piece. Where no input is cut and the plan is not replicated, the op itself
// does that (a partial's pieces share the draws, so dropout of a partial sum is the partial of
// the dropout). Dropout instead draws its counter-based mask in every run (the single-device
// reference draws it too, through useCounterDropout): of this rank's piece only.
void StepKernel::Impl::compileRandom(const ir::Node& n) {
  replicaDim = replicated() ? randomCut() : -1;
  if (context.microBatches > 1 && step.execution != Execution::DropoutMask)
    fail(fmt::format("{} draws random numbers, which a pipeline's micro-batches cannot draw as the "
                     "single-device program draws them (only dropout can); plan without --pipeline",
                     baseOp(n.op)));
  if (n.tensorInputs().empty()) {
    if (replicaDim >= 0)
      fail(
          fmt::format("{} draws batch-sized numbers from constant sizes, which a replicated plan "
                      "does not support; plan the model with hap plan instead",
                      baseOp(n.op)));
    adjust = anyCut(outputs) ? Adjust::FullPiece : Adjust::None;
    return;
  }
  if (step.execution == Execution::DropoutMask) {
    adjust = Adjust::Dropout;
    dropoutP = numberConstant(n, "p").value_or(0);
    dropoutTrain = boolConstant(n, "train", true);  // native_dropout's is optional: None trains
    return;
  }
  if (!anyCut(inputs) && replicaDim < 0) return;
  adjust = Adjust::RandomPadded;
}

// The local sum over the global count of the reduced dimensions (the rule declares it where the
// cut dimension is among them).
void StepKernel::Impl::compileMean(const ir::Node& n) {
  adjust = Adjust::MeanSharded;
  const ir::Value& x = g.value(inputs[0].value);
  const ir::Arg* dim = n.arg("dim");
  if (dim && dim->kind == ir::Arg::Kind::Constant) {
    if (const auto* l = std::get_if<std::vector<int64_t>>(&dim->constant))
      meanDims = *l;
    else if (const int64_t* i = std::get_if<int64_t>(&dim->constant))
      meanDims = {*i};
  }
  if (meanDims.empty())
    for (int d = 0; d < x.rank(); ++d) meanDims.push_back(d);
  globalCount = 1;
  for (int64_t d : meanDims) globalCount *= x.shape[static_cast<size_t>(d < 0 ? d + x.rank() : d)];
  keepdim = boolConstant(n, "keepdim", false);
}

// A loss's mean over cut positions: the op sums, and run() divides by the global denominator.
void StepKernel::Impl::compileLossMean(const ir::Node& n) {
  reductionArg = argIndex(n, "reduction");
  if (reductionArg < 0) fail("a mean loss without a reduction argument");
  const ir::Value& self = g.value(inputs[0].value);
  if (step.execution == Execution::PointwiseLossMean) {
    adjust = Adjust::PointwiseLossMean;
    globalCount = self.numel();
  } else if (step.execution == Execution::ProbabilityLossMean) {
    adjust = Adjust::ProbabilityLossMean;  // class probabilities: every position counts
    globalCount = self.numel() / self.shape[1];
  } else {
    compileClassLoss(n);
  }
}

// When the targets are a model input (or a view of one) whose declared range excludes
// ignore_index, every target counts: the global count is static, and the loss needs no all-reduce
// (a synchronisation point in the middle of forward). run() asserts the range on every piece.
void StepKernel::Impl::compileClassLoss(const ir::Node& n) {
  adjust = Adjust::ClassLossMean;
  ignoreIndex = intConstant(n, "ignore_index", -100);
  weighted = n.tensorInputs().size() > 2;
  ir::ValueId t = inputs[1].value;
  while (g.value(t).kind == ir::ValueKind::Activation && g.value(t).producer != ir::kNone) {
    const ir::Node& producer = g.node(g.value(t).producer);
    if (!rules::isViewOp(baseOp(producer.op)) || producer.tensorInputs().empty()) break;
    t = producer.tensorInputs().front();
  }
  const ir::Value& targets = g.value(t);
  if (!weighted && targets.kind == ir::ValueKind::Input && targets.low && targets.high &&
      (ignoreIndex < *targets.low || ignoreIndex >= *targets.high))
    globalCount = g.value(inputs[1].value).numel();
}

// Batch norm with the statistics summed over the ranks: where its operands are, the global count
// per channel, momentum and eps.
void StepKernel::Impl::compileSyncBatchNorm(const ir::Node& n) {
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
    if (std::optional<double> v = numberConstant(n, argName)) return *v;
    fail(fmt::format("batch norm without a constant '{}'", argName));
  };
  momentum = number("momentum");
  eps = number("eps");
}

std::vector<at::Tensor> StepKernel::Impl::run(const std::vector<at::Tensor>& in,
                                              Communicator& comm) {
  std::vector<at::Tensor> out = compute(in, comm);
  checkOutputs(out, in);
  return out;
}

// The adjustments that replace the operator's call, else the call.
std::vector<at::Tensor> StepKernel::Impl::compute(const std::vector<at::Tensor>& in,
                                                  Communicator& comm) {
  switch (adjust) {
    case Adjust::Reshard:
      return reshard(in, comm);
    case Adjust::Identity:
      return {in[0].alias()};
    case Adjust::Reshape:
      return {in[0].reshape(outputShapes[0])};
    case Adjust::Expand:
      return {in[0].expand(outputShapes[0])};
    case Adjust::MeanSharded:
      return meanOverCut(in);
    case Adjust::SfbLinear:
      return {collective::sfbLinear(comm, in[0], in[1], in.size() > 2 ? in[2] : at::Tensor(),
                                    inputs[0].rel, inputs[0].lengths)};
    case Adjust::SyncBatchNorm:
      return syncBatchNorm(in, comm);
    case Adjust::Dropout:
      return dropout(in);
    case Adjust::VocabEmbedding:
      return vocabEmbedding(in);
    case Adjust::BagSlice:
      return bagSlice(in);
    case Adjust::ScaledMean: {  // an empty piece's mean is NaN: its share is zero
      if (meanScale == 0) return zerosOnGraph(in);
      std::vector<at::Tensor> out = callOperator(in, comm);
      out[0] = out[0] * meanScale;
      return out;
    }
    case Adjust::None:
    case Adjust::FullPiece:
    case Adjust::RandomPadded:
    case Adjust::ClassLossMean:
    case Adjust::PointwiseLossMean:
    case Adjust::ProbabilityLossMean:
    case Adjust::Depthwise:
      break;
  }
  return callOperator(in, comm);
}

std::vector<at::Tensor> StepKernel::Impl::reshard(const std::vector<at::Tensor>& in,
                                                  Communicator& comm) const {
  const Operand& from = inputs[0];
  const Operand& to = outputs[0];
  if (!rules::isGather(to.rel)) return {in[0]};
  return {collective::allToAll(comm, in[0], from.rel, from.lengths, to.rel, to.lengths)};
}

// The local sum over the global count (an empty piece gives zeros, still on the autograd graph,
// so every rank runs the same backward collectives).
std::vector<at::Tensor> StepKernel::Impl::meanOverCut(const std::vector<at::Tensor>& in) const {
  return {in[0].to(typeOf(outputs[0].value)).sum(meanDims, keepdim) /
          static_cast<double>(globalCount)};
}

// Per channel, the sums of this rank's values and squares (in float64) are all-reduced: the
// global mean and biased variance normalise every piece; autograd differentiates through the
// all-reduce (its dual sums the statistics' gradients), so the gradients are exact.
std::vector<at::Tensor> StepKernel::Impl::syncBatchNorm(const std::vector<at::Tensor>& in,
                                                        Communicator& comm) const {
  const at::Tensor& x = in[0];
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != 1) dims.push_back(d);
  const at::Tensor x64 = x.to(at::kDouble);
  at::Tensor sums = at::stack({x64.sum(dims), (x64 * x64).sum(dims)});
  const bool local = injectedFault() == Fault::LocalBatchStatistics;
  if (!local) sums = collective::allReduce(comm, sums);
  const double count = local ? static_cast<double>(x.numel() / std::max<int64_t>(x.size(1), 1))
                             : static_cast<double>(perChannel);
  const at::Tensor mean = sums[0] / count;
  const at::Tensor var = (sums[1] / count - mean * mean).clamp_min(0);
  const at::Tensor invstd = (var + eps).rsqrt();
  const at::Tensor scale =
      weightAt >= 0 ? invstd * in[static_cast<size_t>(weightAt)].to(at::kDouble) : invstd;
  at::Tensor shift = -mean * scale;
  if (biasAt >= 0) shift = shift + in[static_cast<size_t>(biasAt)].to(at::kDouble);
  std::vector<int64_t> perChannelShape(static_cast<size_t>(x.dim()), 1);
  perChannelShape[1] = x.size(1);
  std::vector<at::Tensor> out = {x * scale.to(x.scalar_type()).view(perChannelShape) +
                                 shift.to(x.scalar_type()).view(perChannelShape)};
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
  return out;
}

// The counter-based mask of this rank's piece of the full tensor (the machine's, or in a
// replicated plan the global batch's): the piece starts at the machine's rows, then at the rank's
// offset along the cut. Every rank draws the op's key, an empty piece's too.
std::vector<at::Tensor> StepKernel::Impl::dropout(const std::vector<at::Tensor>& in) const {
  const Operand& x = inputs[0];
  const std::vector<int64_t>& shape = g.value(x.value).shape;
  std::vector<int64_t> start(shape.size(), 0);
  if (replicaDim >= 0) {
    const auto d = static_cast<size_t>(replicaDim);
    start[d] = context.machine * shape[d];
  }
  if (rules::isGather(x.rel))
    start[static_cast<size_t>(x.rel)] += offsetOf(x.lengths, context.rank);
  std::vector<int64_t> full = globalShape(shape, replicaDim);
  if (context.microBatches > 1 && !full.empty()) {
    // A pipeline's micro-batch: its rows of the global batch's mask (dimension 0, batch-major).
    start[0] += *context.microBatch * full[0];
    full[0] *= context.microBatches;
  }
  return counterDropout(in[0], dropoutP, dropoutTrain, full, start, outputs.size() > 1);
}

// Ids in this rank's row range, shifted to local rows; the others look up row 0 and are zeroed.
// An empty range contributes zeros.
std::vector<at::Tensor> StepKernel::Impl::vocabEmbedding(const std::vector<at::Tensor>& in) const {
  const at::Tensor& weight = in[0];
  const at::Tensor& ids = in[1];
  const int64_t rows = weight.size(0);
  if (rows == 0 && bagWeightsArg < 0) return zerosOnGraph(in);
  std::vector<c10::IValue> args = stackWith(in);
  // embedding_bag's other outputs (offset2bag, bag sizes) do not depend on the rows: an empty
  // range looks up a zero row, weighing zero.
  if (rows == 0)
    args[0] = at::cat({weight, at::zeros({1, weight.size(1)}, weight.options().requires_grad(false))});
  const at::Tensor local = ids - vocabOffset;
  const at::Tensor mine = (local >= 0).logical_and(local < rows);
  args[1] = at::where(mine, local, at::zeros_like(local));
  if (bagWeightsArg >= 0) {  // embedding_bag (sum): the other ids weigh zero in their bags
    const size_t w = static_cast<size_t>(bagWeightsArg);
    at::Tensor weights = mine.to(weight.scalar_type());
    if (!args[w].isNone()) weights = args[w].toTensor() * weights;
    args[w] = weights;
    return call(std::move(args));
  }
  op->getOperation()(args);
  return {args.back().toTensor() * mine.unsqueeze(-1).to(weight.scalar_type())};
}

// embedding_bag with its bags (output rows) cut and indices, offsets and per-sample weights whole:
// this rank's bags [b0, b1) are indices [offsets[b0], offsets[b1]) (the index count past the
// last bag), run with offsets rebased to 0. offset2bag, where the kernel fills it, comes back at
// full length: this rank's entries as global bag numbers, zeros elsewhere (partials of the op's).
std::vector<at::Tensor> StepKernel::Impl::bagSlice(const std::vector<at::Tensor>& in) const {
  const int64_t first = offsetOf(outputs[0].lengths, context.rank);
  const int64_t bags = outputs[0].lengths[static_cast<size_t>(context.rank)];
  if (bags == 0) return zerosOnGraph(in);
  std::vector<c10::IValue> args = stackWith(in);
  const at::Tensor indices = args[static_cast<size_t>(bagIndicesArg)].toTensor();
  const at::Tensor offsets = args[static_cast<size_t>(bagOffsetsArg)].toTensor();
  const int64_t count = indices.size(0);
  const at::Tensor host = offsets.to(at::kCPU, at::kLong);
  auto start = [&](int64_t bag) {
    return bag < host.size(0) ? std::min(host[bag].item<int64_t>(), count) : count;
  };
  const int64_t begin = start(first), end = std::max(begin, start(first + bags));
  args[static_cast<size_t>(bagIndicesArg)] = indices.slice(0, begin, end);
  args[static_cast<size_t>(bagOffsetsArg)] = offsets.slice(0, first, first + bags) - begin;
  c10::IValue& weights = args[static_cast<size_t>(bagWeightsArg)];
  if (!weights.isNone()) weights = weights.toTensor().slice(0, begin, end);
  args[static_cast<size_t>(bagLastArg)] = false;
  std::vector<at::Tensor> out = call(std::move(args));
  const bool filled = out.size() == 4 && out[1].numel() == end - begin &&
                      (end > begin || outputShapes[1] == std::vector<int64_t>{count});
  if (filled) {
    at::Tensor full = at::zeros({count}, out[1].options());
    full.slice(0, begin, end).copy_(out[1] + first);
    out[1] = full;
  }
  return out;
}

// The operator on this rank's operands (with the adjustment's arguments), then the adjustment of
// its results.
std::vector<at::Tensor> StepKernel::Impl::callOperator(const std::vector<at::Tensor>& in,
                                                       Communicator& comm) {
  std::vector<c10::IValue> args = operatorArgs(in);
  if (emptyOutputs()) return zerosOnGraph(in);
  std::vector<at::Tensor> out;
  try {
    out = call(args);
  } catch (const c10::Error&) {
    // Some kernels reject an empty operand (a convolution over zero input channels).
    if (!anyEmpty(in)) throw;
    return emptyPieces(args, in);
  }
  if (inplaceOp && !inplaceOnCopy && !out.empty() &&
      out[0].scalar_type() != typeOf(outputs[0].value)) {
    // The out-of-place form changes the dtype (eq_ on floats): in place on a copy from now on.
    inplaceOnCopy = true;
    op = inplaceOp;
    args[0] = args[0].toTensor().clone();
    out = call(args);
  }
  adjustResults(out, in, comm);
  return out;
}

// The argument stack with this rank's operands and what the adjustment changes in it.
std::vector<c10::IValue> StepKernel::Impl::operatorArgs(const std::vector<at::Tensor>& in) const {
  std::vector<c10::IValue> args = stackWith(in);
  switch (adjust) {
    case Adjust::Depthwise:  // the local channels
      args[static_cast<size_t>(groupsArg)] = in[0].size(inputs[0].rel);
      break;
    case Adjust::RandomPadded:
      for (size_t a = 0; a < args.size(); ++a)
        if (argTensorSlot[a] >= 0 && argTensorCount[a] < 0) {
          const size_t k = static_cast<size_t>(argTensorSlot[a]);
          args[a] = fullSize(in[k], inputs[k]);
        }
      break;
    case Adjust::ClassLossMean:
    case Adjust::PointwiseLossMean:
    case Adjust::ProbabilityLossMean:  // the sum; adjustResults() divides
      args[static_cast<size_t>(reductionArg)] = int64_t{2};
      break;
    default:
      break;
  }
  if (inplaceOnCopy) args[0] = args[0].toTensor().clone();
  return args;
}

// The operator's results as the step's outputs: a loss's sum over the global denominator, a
// full-size result's piece.
void StepKernel::Impl::adjustResults(std::vector<at::Tensor>& out,
                                     const std::vector<at::Tensor>& in, Communicator& comm) const {
  switch (adjust) {
    case Adjust::PointwiseLossMean:
    case Adjust::ProbabilityLossMean:
      out[0] = out[0] / static_cast<double>(globalCount);
      break;
    case Adjust::ClassLossMean:
      out[0] = classLossMean(out[0], in, comm);
      break;
    case Adjust::FullPiece:
    case Adjust::RandomPadded:
      for (size_t k = 0; k < out.size(); ++k) {
        out[k] = machineRows(out[k], replicaDim);
        const Operand& o = outputs[k];
        if (rules::isGather(o.rel))
          out[k] = localPiece(out[k], o.rel, o.lengths, context.rank).contiguous();
      }
      break;
    default:
      break;
  }
}

// A class loss's mean over cut positions: this rank's sum over the global denominator. The
// single-device mean divides the (class-weighted) sum of the losses, label smoothing's terms
// included, by the number of targets that are not ignore_index (weighted: the sum of their
// classes' weights).
at::Tensor StepKernel::Impl::classLossMean(const at::Tensor& sum, const std::vector<at::Tensor>& in,
                                           Communicator& comm) const {
  const at::Tensor& targets = in[1];
  const at::Tensor valid = targets.ne(ignoreIndex);
  double denominator = static_cast<double>(globalCount);
  if (globalCount > 0) {
    // Every target counts (compileClassLoss()): the static global count, the range asserted.
    const at::Tensor all = valid.all();
    if (context.device.is_cpu()) {
      if (!all.item<bool>())
        fail(
            fmt::format("a target equals ignore_index {}, outside the range the model file "
                        "declares for its input; fix the data, or re-export the model with the "
                        "range it has",
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
      const at::Tensor w =
          in[2].detach().to(at::kDouble).index_select(0, safe.reshape({-1})).view(targets.sizes());
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

// Whether output k is a secondary output (k > 0) that no node reads and that is not the loss.
// Such an output (embedding_bag's offset2bag, which autograd keeps for itself) may have another
// shape in another dtype: the float32 sum skips it ([0], as the importer infers), where a float64
// run (hap-worker --check) fills it ([N]). An op's first output is always held to its shape (a
// convolution over zero input channels must still give the plan's piece, even where nothing
// reads it, as in the rule soundness test).
bool StepKernel::Impl::unread(size_t k) const {
  const ir::ValueId v = outputs[k].value;
  return k > 0 && g.value(v).users.empty() && v != g.loss;
}

// The outputs the plan expects, in number and local shape (an unread output: in number).
void StepKernel::Impl::checkOutputs(std::vector<at::Tensor>& out,
                                    const std::vector<at::Tensor>& in) const {
  if (out.size() != outputs.size())
    fail(fmt::format("the operator returned {} tensors, the plan expects {}", out.size(),
                     outputs.size()));
  // Kernels given an empty operand may also return a wrongly shaped result (a transposed
  // convolution over zero input channels gives zero output channels).
  if (!shapesMatch(out) && anyEmpty(in)) out = emptyPieces(stackWith(in), in);
  for (size_t k = 0; k < out.size(); ++k)
    if (!out[k].sizes().equals(outputShapes[k]) && !unread(k))
      fail(fmt::format("output {} has local shape {} here, the plan says {}", k,
                       ir::formatShape(out[k].sizes().vec()), ir::formatShape(outputShapes[k])));
}

std::vector<at::Tensor> StepKernel::Impl::call(std::vector<c10::IValue> args) const {
  op->getOperation()(args);
  std::vector<at::Tensor> result;
  for (const c10::IValue& v : args) {
    if (v.isTensor())
      result.push_back(v.toTensor());
    else if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorVector()) result.push_back(t);
  }
  return result;
}

// The argument stack with the operands filled in. A list of optional tensors (aten::index's
// indices) keeps its Nones in their places.
std::vector<c10::IValue> StepKernel::Impl::stackWith(const std::vector<at::Tensor>& in) const {
  std::vector<c10::IValue> args = stack;
  const ir::Node& n = g.node(step.node);  // (its args only where a list keeps Nones)
  for (size_t a = 0; a < args.size(); ++a) {
    const int slot = argTensorSlot[a];
    if (slot < 0) continue;
    if (argTensorCount[a] < 0) {
      args[a] = in[static_cast<size_t>(slot)];
      continue;
    }
    if (!optionalList[a]) {
      c10::List<at::Tensor> list;
      for (int k = 0; k < argTensorCount[a]; ++k) list.push_back(in[static_cast<size_t>(slot + k)]);
      args[a] = list;
      continue;
    }
    const ir::Arg& arg = n.args[a];
    c10::List<c10::optional<at::Tensor>> list;
    int next = 0;
    const int size = argTensorCount[a] + static_cast<int>(arg.noneAt.size());
    for (int k = 0; k < size; ++k) {
      if (std::find(arg.noneAt.begin(), arg.noneAt.end(), k) != arg.noneAt.end())
        list.push_back(c10::nullopt);
      else
        list.push_back(in[static_cast<size_t>(slot + next++)]);
    }
    args[a] = list;
  }
  return args;
}

bool StepKernel::Impl::emptyOutputs() const {
  for (const ir::Shape& shape : outputShapes)
    if (ir::numel(shape) != 0) return false;
  return !outputShapes.empty();
}

bool StepKernel::Impl::shapesMatch(const std::vector<at::Tensor>& out) const {
  if (out.size() != outputShapes.size()) return false;
  for (size_t k = 0; k < out.size(); ++k)
    if (!out[k].sizes().equals(outputShapes[k]) && !unread(k)) return false;
  return true;
}

// The result of a step some of whose pieces are empty, where the kernel cannot take them. A piece
// empty along a dimension the op sums over (a convolution's input channels, a matmul's inner
// dimension) contributes nothing but the rest of the op (a partial bias): the op runs with such
// pieces as one zero slice, still on the autograd graph. Where that does not give the local
// shapes, the contribution is zeros.
std::vector<at::Tensor> StepKernel::Impl::emptyPieces(std::vector<c10::IValue> args,
                                                      const std::vector<at::Tensor>& in) const {
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

// Zeros of the local output shapes that still depend on every differentiable input (with
// gradient zero), so that this rank runs the same backward, collectives included, as the others.
std::vector<at::Tensor> StepKernel::Impl::zerosOnGraph(const std::vector<at::Tensor>& in) const {
  at::Tensor anchor;
  for (const at::Tensor& t : in)
    if (t.defined() && t.is_floating_point() && t.requires_grad()) {
      at::Tensor term = t.sum() * 0;
      anchor = anchor.defined() ? anchor + term : term;
    }
  std::vector<at::Tensor> out;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const at::ScalarType type = typeOf(outputs[k].value);
    at::Tensor z =
        at::zeros(outputShapes[k], at::TensorOptions().dtype(type).device(context.device));
    if (anchor.defined() && at::isFloatingType(type)) z = z + anchor.to(type);
    out.push_back(z);
  }
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

const std::string& StepKernel::label() const {
  return impl_->label;
}
bool StepKernel::communication() const {
  return impl_->communication;
}

}  // namespace hap::runtime
