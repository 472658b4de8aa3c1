// Per-op forward cost. The op table below maps each op to a family; the family's formula gives
// the FLOPs and adjusts the default bytes (distinct tensor inputs read, outputs written).
// docs/op-costs.md documents every family and factor: keep it in step with this file.
#include "engine/ir/op_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace hap::ir {
namespace {

enum class Family : uint8_t {
  View,           // aliases its input: free
  Allocation,     // uninitialised memory: free
  Factory,        // fills its output from constants: writes only
  Copy,           // moves data without arithmetic
  CopyInto,       // copy_: reads src, writes self
  TypeAs,         // a view when the dtype is unchanged, else a copy
  Elementwise,    // factor per output element
  Dropout,        // factor per output element, plus a mask when training
  Reduction,      // factor per input element
  Linear,         // 2·numel(y)·I (+ numel(y) with bias)
  Matmul,         // 2·numel(out)·K
  AddMatmul,      // matmul + numel(out)
  Einsum,         // by index algebra
  Convolution,    // 2·MACs (+ numel(out) with bias)
  Norm,           // factor per input element (2 without batch statistics) + 1 per affine tensor
  Softmax,        // factor per input element
  Pool,           // output elements × kernel elements
  AdaptivePool,   // input elements
  Embedding,      // gathers rows: no FLOPs
  NllLoss,        // numel(target) (+ numel(target) for the mean)
  CrossEntropy,   // factor per input element (log_softmax) + NllLoss
  PointwiseLoss,  // factor per input element
  TopK,           // numel(input)·log2(k)
  Sort,           // numel(input)·log2(length of the sorted dimension)
};

struct OpInfo {
  Family family;
  double factor = 0;  // FLOPs per element, for the families that count per element
};

// Op name without "aten::" and without the in-place "_" → family and factor.
const std::unordered_map<std::string_view, OpInfo>& opTable() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string_view, OpInfo>;
    auto add = [t](Family family, double factor, std::initializer_list<std::string_view> ops) {
      for (std::string_view op : ops) t->emplace(op, OpInfo{family, factor});
    };
    add(Family::View, 0,
        {"view",       "reshape",  "flatten",   "unflatten", "_unsafe_view",     "view_as",
         "reshape_as", "permute",  "transpose", "t",         "numpy_T",          "mT",
         "movedim",    "swapaxes", "swapdims",  "expand",    "expand_as",        "unsqueeze",
         "squeeze",    "select",   "slice",     "narrow",    "diagonal",         "unfold",
         "as_strided", "alias",    "detach",    "split",     "split_with_sizes", "tensor_split",
         "chunk",      "unbind"});
    add(Family::Allocation, 0, {"empty", "empty_like", "empty_strided", "new_empty"});
    add(Family::Factory, 0,
        {"zeros",         "ones",     "full",     "zeros_like", "ones_like", "full_like",
         "new_zeros",     "new_ones", "new_full", "arange",     "linspace",  "eye",
         "scalar_tensor", "rand",     "randn",    "randint",    "rand_like", "randn_like",
         "randint_like",  "fill",     "zero",     "bernoulli",  "uniform",   "normal"});
    add(Family::Copy, 0,
        {"contiguous",
         "clone",
         "to",
         "_to_copy",
         "cat",
         "concat",
         "stack",
         "index_select",
         "gather",
         "scatter",
         "index",
         "index_put",
         "masked_select",
         "take",
         "repeat",
         "tile",
         "repeat_interleave",
         "roll",
         "flip",
         "pad",
         "constant_pad_nd",
         "reflection_pad1d",
         "reflection_pad2d",
         "replication_pad1d",
         "replication_pad2d",
         "one_hot",
         "slice_scatter",
         "select_scatter",
         "upsample_nearest1d",
         "upsample_nearest2d"});
    add(Family::CopyInto, 0, {"copy"});
    add(Family::TypeAs, 0, {"type_as"});
    // Arithmetic, comparison, clamping, masking, logic: one operation per element.
    add(Family::Elementwise, 1,
        {"add",         "sub",         "mul",         "div",          "rsub",        "neg",
         "reciprocal",  "square",      "abs",         "sign",         "floor",       "ceil",
         "round",       "trunc",       "frac",        "floor_divide", "remainder",   "fmod",
         "maximum",     "minimum",     "eq",          "ne",           "lt",          "le",
         "gt",          "ge",          "isnan",       "relu",         "relu6",       "threshold",
         "leaky_relu",  "hardtanh",    "clamp",       "clamp_min",    "clamp_max",   "clip",
         "where",       "masked_fill", "tril",        "triu",         "logical_and", "logical_or",
         "logical_xor", "logical_not", "bitwise_and", "bitwise_or",   "bitwise_xor", "bitwise_not",
         "__and__",     "__or__",      "__xor__",     "__iand__",     "__ior__",     "__ixor__"});
    add(Family::Elementwise, 2, {"addcmul", "addcdiv"});
    add(Family::Elementwise, 3, {"lerp", "hardsigmoid"});
    add(Family::Elementwise, 4,
        {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh",
         "sigmoid", "erf", "erfc", "sin", "cos", "pow", "hardswish"});
    add(Family::Elementwise, 5, {"silu", "elu", "selu", "celu"});
    add(Family::Elementwise, 8, {"gelu", "softplus"});
    add(Family::Elementwise, 13, {"mish"});
    add(Family::Dropout, 2,
        {"dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "native_dropout"});
    add(Family::Reduction, 1,
        {"sum", "nansum", "mean", "amax", "amin", "max", "min", "prod", "norm",
         "linalg_vector_norm", "argmax", "argmin", "cumsum", "cumprod", "all", "any"});
    add(Family::Reduction, 3, {"var", "std", "var_mean", "std_mean", "logsumexp"});
    add(Family::Linear, 0, {"linear"});
    add(Family::Matmul, 0, {"matmul", "mm", "bmm", "mv", "dot"});
    add(Family::AddMatmul, 0, {"addmm", "addmv", "baddbmm", "addbmm"});
    add(Family::Einsum, 0, {"einsum"});
    add(Family::Convolution, 0,
        {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
         "convolution", "_convolution"});
    add(Family::Norm, 5,
        {"layer_norm", "native_layer_norm", "batch_norm", "native_batch_norm",
         "_batch_norm_impl_index", "group_norm", "native_group_norm", "instance_norm"});
    add(Family::Softmax, 5, {"softmax", "log_softmax", "_softmax", "_log_softmax"});
    add(Family::Pool, 0,
        {"max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
         "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
         "avg_pool3d"});
    add(Family::AdaptivePool, 0,
        {"adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
         "_adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
         "adaptive_max_pool3d"});
    add(Family::Embedding, 0, {"embedding"});
    add(Family::NllLoss, 0, {"nll_loss", "nll_loss_nd", "nll_loss2d"});
    add(Family::CrossEntropy, 5, {"cross_entropy_loss"});
    add(Family::PointwiseLoss, 3,
        {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
         "binary_cross_entropy_with_logits"});
    add(Family::TopK, 0, {"topk"});
    add(Family::Sort, 0, {"sort", "argsort"});
    return t;
  }();
  return *table;
}

// The table entry of a qualified op name, nullptr when there is none.
const OpInfo* lookup(std::string_view op) {
  constexpr std::string_view kAten = "aten::";
  if (!op.starts_with(kAten)) return nullptr;
  op.remove_prefix(kAten.size());
  if (op.size() > 1 && op.ends_with('_') && !op.starts_with("__")) op.remove_suffix(1);
  auto it = opTable().find(op);
  return it == opTable().end() ? nullptr : &it->second;
}

// The tensor of argument `name`; nullptr when absent or None.
const Value* tensorArg(const Graph& g, const Node& n, std::string_view name) {
  const Arg* a = n.arg(name);
  if (!a || a->kind != Arg::Kind::Tensor || a->values.empty()) return nullptr;
  return &g.value(a->values.front());
}

// The i-th tensor argument (list elements included); nullptr when there are fewer.
const Value* tensorInput(const Graph& g, const Node& n, size_t i) {
  std::vector<ValueId> ids = n.tensorInputs();
  return i < ids.size() ? &g.value(ids[i]) : nullptr;
}

const Value* firstOutput(const Graph& g, const Node& n) {
  return n.outputs.empty() ? nullptr : &g.value(n.outputs.front());
}

// The folded constant of argument `name` when it holds a T.
template <typename T>
std::optional<T> constantArg(const Node& n, std::string_view name) {
  const Arg* a = n.arg(name);
  if (!a || a->kind != Arg::Kind::Constant) return std::nullopt;
  if (const T* v = std::get_if<T>(&a->constant)) return *v;
  return std::nullopt;
}

int64_t outputElements(const Graph& g, const Node& n) {
  int64_t total = 0;
  for (ValueId v : n.outputs) total += g.value(v).numel();
  return total;
}

// Bytes of every distinct tensor input read and every output written.
NodeCost defaultBytes(const Graph& g, const Node& n) {
  NodeCost c;
  std::vector<ValueId> inputs = n.tensorInputs();
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  for (ValueId v : inputs) c.bytesRead += g.value(v).bytes();
  for (ValueId v : n.outputs) c.bytesWritten += g.value(v).bytes();
  return c;
}

// Labels of one einsum operand term: a letter stands for itself, ellipsis dimension j (counted
// from the right, so that ellipses broadcast) for 256 + j. nullopt when the term does not fit
// a tensor of this rank.
std::optional<std::vector<int>> einsumTerm(std::string_view term, int rank) {
  int letters = 0;
  for (char ch : term) letters += std::isalpha(static_cast<unsigned char>(ch)) ? 1 : 0;
  size_t dots = term.find("...");
  int ellipsis = dots == std::string_view::npos ? 0 : rank - letters;
  if (ellipsis < 0 || (dots == std::string_view::npos && letters != rank)) return std::nullopt;
  std::vector<int> labels;
  for (size_t i = 0; i < term.size();) {
    if (i == dots) {
      for (int j = ellipsis - 1; j >= 0; --j) labels.push_back(256 + j);
      i += 3;
    } else if (std::isalpha(static_cast<unsigned char>(term[i]))) {
      labels.push_back(term[i++]);
    } else {
      return std::nullopt;  // a stray character or a second ellipsis
    }
  }
  return labels;
}

std::optional<double> einsumFlops(std::string_view equation,
                                  const std::vector<const Value*>& operands) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  size_t arrow = eq.find("->");
  std::string_view lhs = std::string_view(eq).substr(0, arrow);

  std::map<int, int64_t> size;  // label → size, broadcast over the operands
  std::map<int, int> uses;      // label → occurrences on the left-hand side
  size_t operand = 0;
  for (size_t begin = 0; begin <= lhs.size(); ++operand) {
    size_t end = std::min(lhs.find(',', begin), lhs.size());
    if (operand >= operands.size()) return std::nullopt;
    const Value& v = *operands[operand];
    auto labels = einsumTerm(lhs.substr(begin, end - begin), v.rank());
    if (!labels) return std::nullopt;
    for (size_t d = 0; d < labels->size(); ++d) {
      auto [it, fresh] = size.try_emplace((*labels)[d], v.shape[d]);
      if (!fresh) it->second = std::max(it->second, v.shape[d]);
      ++uses[(*labels)[d]];
    }
    begin = end + 1;
  }
  if (operand != operands.size()) return std::nullopt;
  if (operands.size() == 1) return static_cast<double>(operands[0]->numel());

  std::set<int> out;
  if (arrow != std::string::npos) {
    std::string_view rhs = std::string_view(eq).substr(arrow + 2);
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (rhs.substr(i, 3) == "...") {
        for (const auto& [label, s] : size)
          if (label >= 256) out.insert(label);
        i += 2;
      } else {
        out.insert(rhs[i]);
      }
    }
  } else {  // implicit output: the ellipsis and every letter used once
    for (const auto& [label, count] : uses)
      if (label >= 256 || count == 1) out.insert(label);
  }

  double product = 1;
  bool contracted = false;
  for (const auto& [label, s] : size) {
    product *= static_cast<double>(s);
    contracted = contracted || !out.contains(label);
  }
  return contracted ? 2 * product : product * static_cast<double>(operands.size() - 1);
}

// Product of a pooling kernel's sizes; a single size applies to every spatial dimension, whose
// number is the digit after "pool" in the op name.
std::optional<int64_t> kernelElements(const Node& n) {
  std::vector<int64_t> kernel;
  if (auto v = constantArg<std::vector<int64_t>>(n, "kernel_size"))
    kernel = *v;
  else if (auto k = constantArg<int64_t>(n, "kernel_size"))
    kernel = {*k};
  if (kernel.empty()) return std::nullopt;
  if (kernel.size() == 1) {
    size_t pool = n.op.find("pool");
    int dims = pool != std::string::npos && pool + 4 < n.op.size() ? n.op[pool + 4] - '0' : 0;
    if (dims < 1 || dims > 3) return std::nullopt;
    kernel.assign(static_cast<size_t>(dims), kernel[0]);
  }
  return numel(kernel);
}

// nll_loss's FLOPs; it reads the target and one input element per target element.
std::optional<double> nllLoss(const Graph& g, const Node& n, NodeCost& c) {
  const Value* input = tensorArg(g, n, "self");
  const Value* target = tensorArg(g, n, "target");
  if (!input || !target) return std::nullopt;
  const Value* weight = tensorArg(g, n, "weight");
  c.bytesRead =
      target->bytes() + target->numel() * dtypeSize(input->dtype) + (weight ? weight->bytes() : 0);
  constexpr int64_t kMean = 1;  // at::Reduction::Mean
  bool mean = constantArg<int64_t>(n, "reduction").value_or(kMean) == kMean;
  return static_cast<double>(target->numel() * (mean ? 2 : 1));
}

// FLOPs of node n of family info.family; adjusts c (preset to defaultBytes) where the family
// reads or writes otherwise. nullopt when the arguments do not fit the formula.
std::optional<double> familyFlops(const Graph& g, const Node& n, const OpInfo& info, NodeCost& c) {
  const Value* out = firstOutput(g, n);
  const Value* first = tensorInput(g, n, 0);
  switch (info.family) {
    case Family::View:
    case Family::Allocation:
      c = {};
      return 0;
    case Family::Factory:
      c.bytesRead = 0;
      return 0;
    case Family::Copy:
      return 0;
    case Family::CopyInto: {
      const Value* src = tensorArg(g, n, "src");
      if (!src) return std::nullopt;
      c.bytesRead = src->bytes();
      return 0;
    }
    case Family::TypeAs:
      if (!first || !out) return std::nullopt;
      if (first->dtype == out->dtype) c = {};
      return 0;
    case Family::Elementwise:
      return info.factor * static_cast<double>(outputElements(g, n));
    case Family::Dropout: {
      if (!out) return std::nullopt;
      bool train = constantArg<bool>(n, "train").value_or(true);
      if (!train || constantArg<double>(n, "p") == 0.0) {  // returns its input
        c = {};
        return 0;
      }
      if (n.outputs.size() == 1) c.bytesWritten += out->numel();  // the mask, not an output
      return info.factor * static_cast<double>(out->numel());
    }
    case Family::Reduction: {
      const Arg* other = n.arg("other");  // max(self, other), min(self, other): elementwise
      if (other && other->kind == Arg::Kind::Tensor)
        return static_cast<double>(outputElements(g, n));
      if (!first) return std::nullopt;
      return info.factor * static_cast<double>(first->numel());
    }
    case Family::Linear: {
      const Value* weight = tensorArg(g, n, "weight");
      if (!weight || weight->rank() < 1 || !out) return std::nullopt;
      double y = static_cast<double>(out->numel());
      return 2 * y * static_cast<double>(weight->shape.back()) + (tensorArg(g, n, "bias") ? y : 0);
    }
    case Family::Matmul: {
      if (!first || first->rank() < 1 || !tensorInput(g, n, 1) || !out) return std::nullopt;
      return 2 * static_cast<double>(out->numel()) * static_cast<double>(first->shape.back());
    }
    case Family::AddMatmul: {
      const Value* a = tensorInput(g, n, 1);
      const Value* b = tensorInput(g, n, 2);
      if (!a || !b || b->rank() < 1 || !out) return std::nullopt;
      double columns = b->rank() >= 2 ? static_cast<double>(b->shape.back()) : 1;
      return 2 * static_cast<double>(a->numel()) * columns + static_cast<double>(out->numel());
    }
    case Family::Einsum: {
      auto equation = constantArg<std::string>(n, "equation");
      const Arg* tensors = n.arg("tensors");
      if (!equation || !tensors || tensors->kind != Arg::Kind::TensorList) return std::nullopt;
      std::vector<const Value*> operands;
      for (ValueId v : tensors->values) operands.push_back(&g.value(v));
      return einsumFlops(*equation, operands);
    }
    case Family::Convolution: {
      const Value* input = tensorArg(g, n, "input");
      const Value* weight = tensorArg(g, n, "weight");
      if (!input || !weight || weight->rank() < 2 || weight->shape[0] == 0 || !out)
        return std::nullopt;
      // The weight is [C_out, C_in/groups, k...], transposed [C_in, C_out/groups, k...]: the
      // MACs per output (transposed: per input) element are numel(weight)/weight[0].
      bool transposed = n.op.starts_with("aten::conv_transpose") ||
                        constantArg<bool>(n, "transposed").value_or(false);
      double perElement = static_cast<double>(weight->numel() / weight->shape[0]);
      double elements = static_cast<double>(transposed ? input->numel() : out->numel());
      return 2 * elements * perElement +
             (tensorArg(g, n, "bias") ? static_cast<double>(out->numel()) : 0);
    }
    case Family::Norm: {
      const Value* input = tensorArg(g, n, "input");
      if (!input) return std::nullopt;
      // Batch and instance norm with running statistics only normalise.
      bool statistics = constantArg<bool>(n, "training")
                            .value_or(constantArg<bool>(n, "use_input_stats").value_or(true));
      constexpr double kNormaliseOnly = 2;
      double perElement = (statistics ? info.factor : kNormaliseOnly) +
                          (tensorArg(g, n, "weight") ? 1 : 0) + (tensorArg(g, n, "bias") ? 1 : 0);
      return perElement * static_cast<double>(input->numel());
    }
    case Family::Softmax:
      if (!first) return std::nullopt;
      return info.factor * static_cast<double>(first->numel());
    case Family::Pool: {
      auto kernel = kernelElements(n);
      if (!kernel || !out) return std::nullopt;
      return static_cast<double>(out->numel() * *kernel);
    }
    case Family::AdaptivePool:
      if (!first) return std::nullopt;
      return static_cast<double>(first->numel());
    case Family::Embedding: {
      const Value* weight = tensorArg(g, n, "weight");
      const Value* indices = tensorArg(g, n, "indices");
      if (!weight || !indices || !out) return std::nullopt;
      c.bytesRead = indices->bytes() + out->numel() * dtypeSize(weight->dtype);
      return 0;
    }
    case Family::NllLoss:
      return nllLoss(g, n, c);
    case Family::CrossEntropy: {
      const Value* input = tensorArg(g, n, "self");
      NodeCost nll;  // cross entropy reads the whole input: keep the default bytes
      auto flops = nllLoss(g, n, nll);
      if (!input || !flops) return std::nullopt;
      return info.factor * static_cast<double>(input->numel()) + *flops;
    }
    case Family::PointwiseLoss: {
      const Value* input = tensorArg(g, n, "self");
      if (!input) return std::nullopt;
      return info.factor * static_cast<double>(input->numel());
    }
    case Family::TopK: {
      auto k = constantArg<int64_t>(n, "k");
      if (!first || !k || *k < 1) return std::nullopt;
      return static_cast<double>(first->numel()) *
             std::max(1.0, std::log2(static_cast<double>(*k)));
    }
    case Family::Sort: {
      if (!first) return std::nullopt;
      if (first->rank() == 0) return 0;
      int64_t dim = constantArg<int64_t>(n, "dim").value_or(-1);
      if (dim < 0) dim += first->rank();
      if (dim < 0 || dim >= first->rank()) return std::nullopt;
      double length = static_cast<double>(first->shape[static_cast<size_t>(dim)]);
      return length < 2 ? 0 : static_cast<double>(first->numel()) * std::log2(length);
    }
  }
  return std::nullopt;
}

}  // namespace

NodeCost nodeCost(const Graph& g, const Node& n, bool* known) {
  NodeCost estimate = defaultBytes(g, n);
  NodeCost c = estimate;
  const OpInfo* info = lookup(n.op);
  std::optional<double> flops = info ? familyFlops(g, n, *info, c) : std::nullopt;
  if (known) *known = flops.has_value();
  if (!flops) {
    estimate.flops = static_cast<double>(outputElements(g, n));
    return estimate;
  }
  c.flops = *flops;
  return c;
}

void annotateCosts(Graph& g) {
  struct Estimated {
    std::string op;
    NodeId first = kNone;
    int count = 0;
  };
  std::vector<Estimated> estimated;  // in order of first node
  for (Node& n : g.nodes) {
    bool known = true;
    n.cost = nodeCost(g, n, &known);
    if (known) continue;
    auto it = std::find_if(estimated.begin(), estimated.end(),
                           [&](const Estimated& e) { return e.op == n.op; });
    if (it == estimated.end()) it = estimated.insert(it, {n.op, n.id, 0});
    ++it->count;
  }
  for (const Estimated& e : estimated) {
    std::string what = lookup(e.op)
                           ? fmt::format("cost formula for {} does not fit its arguments", e.op)
                           : fmt::format("no cost formula for {}", e.op);
    g.diagnostics.push_back({Diagnostic::Severity::Warning, e.first,
                             fmt::format("{} ({} node{}); estimated as elementwise", what, e.count,
                                         e.count == 1 ? "" : "s")});
  }
}

DType computeType(const Graph& g, const Node& n) {
  for (ValueId o : n.outputs)
    if (isFloating(g.value(o).dtype)) return g.value(o).dtype;
  for (ValueId i : n.tensorInputs())
    if (isFloating(g.value(i).dtype)) return g.value(i).dtype;
  return DType::Float32;
}

}  // namespace hap::ir
