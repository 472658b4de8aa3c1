#include "engine/import/importer.h"
#include "engine/import/model_tensors.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/script.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "engine/base/error.h"
#include "engine/import/functionalize.h"
#include "engine/import/ivalue_constant.h"
#include "engine/ir/op_cost.h"

namespace hap::import {
namespace {

namespace jit = torch::jit;
using c10::IValue;

constexpr const char* kSpecFile = "hap/inputs.json";
// Tensors computed only from constants are folded (kept as values, not graph nodes) when they
// are at most this many elements: size arithmetic and small index constants.
constexpr int64_t kFoldElements = 4096;
// Upper bound on unrolled loop iterations, against runaway loops in malformed models.
constexpr int64_t kMaxLoopIterations = 1'000'000;

// Ops whose output shape depends on tensor data: the graph cannot be planned statically.
const std::unordered_set<std::string> kDataDependentOps = {
    "aten::nonzero",    "aten::masked_select",       "aten::unique",  "aten::_unique",
    "aten::_unique2",   "aten::unique_consecutive",  "aten::unique_dim",
    "aten::bincount",   "aten::nonzero_numpy",       "aten::argwhere",
};

// Random ops are never folded, so each iteration draws fresh numbers.
bool isRandomOp(const std::string& op) {
  static const std::unordered_set<std::string> kRandom = {
      "dropout",    "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "native_dropout",
      "bernoulli",  "rand",            "randn",         "randint",               "rand_like",
      "randn_like", "randint_like",    "randperm",      "normal",                "uniform",
      "multinomial", "rrelu",          "poisson",       "exponential",           "geometric",
      "cauchy",     "log_normal",      "random"};
  std::string base = op.substr(op.find("::") + 2);
  if (!base.empty() && base.back() == '_') base.pop_back();
  return kRandom.count(base) > 0;
}

// Where a value of the TorchScript graph lives during the walk.
struct Slot {
  enum class Kind { Concrete, Tensor, Aggregate, Object };
  Kind kind = Kind::Concrete;
  // Concrete: the value itself (folded). Tensor: the carrier, a meta (or, in Real mode, CPU)
  // tensor with the value's shape. Object: the module instance.
  IValue iv;
  ir::ValueId id = ir::kNone;  // Tensor: the IR value
  std::vector<Slot> items;     // Aggregate: list or tuple elements, some of them IR tensors
  c10::TypePtr type;           // Aggregate: the TorchScript type of the list/tuple
  std::string path;            // Object: qualified module path ("" = the root module)

  static Slot concrete(IValue v) {
    Slot s;
    s.iv = std::move(v);
    return s;
  }
  // Whether this slot, or an element of it, is an IR tensor.
  bool dependsOnGraph() const {
    if (kind == Kind::Tensor) return true;
    for (const Slot& s : items)
      if (s.dependsOnGraph()) return true;
    return false;
  }
};

// Factories whose first argument gives only a dtype, device or shape (never values).
bool isShapeOnlyFactory(const std::string& op) {
  return op == "aten::new_zeros" || op == "aten::new_ones" || op == "aten::new_full" || op == "aten::zeros_like" ||
         op == "aten::ones_like" || op == "aten::full_like";
}

bool typeHasTensor(const c10::TypePtr& t) {
  if (t->kind() == c10::TypeKind::TensorType) return true;
  for (const auto& c : t->containedTypes())
    if (typeHasTensor(c)) return true;
  return false;
}

at::Tensor toMeta(const at::Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

// The first line of a LibTorch message, cut at its first sentence when long (dispatcher errors
// go on to list every backend).
std::string firstLine(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  auto stop = line.find(". ");
  if (line.size() > 160 && stop != std::string::npos) line.resize(stop + 1);
  return line;
}

std::string errorText(const std::exception& e) {
  if (auto* ce = dynamic_cast<const c10::Error*>(&e)) return firstLine(ce->what_without_backtrace());
  return firstLine(e.what());
}

ir::DType fromScalarType(at::ScalarType t, const std::function<std::string()>& where) {
  switch (t) {
    case at::kFloat: return ir::DType::Float32;
    case at::kDouble: return ir::DType::Float64;
    case at::kHalf: return ir::DType::Float16;
    case at::kBFloat16: return ir::DType::BFloat16;
    case at::kLong: return ir::DType::Int64;
    case at::kInt: return ir::DType::Int32;
    case at::kShort: return ir::DType::Int16;
    case at::kChar: return ir::DType::Int8;
    case at::kByte: return ir::DType::UInt8;
    case at::kBool: return ir::DType::Bool;
    default:
      throw ImportError(fmt::format("{}: unsupported dtype {} (HAP supports {})", where(),
                                    c10::toString(t), ir::dtypeNames()));
  }
}

bool isDeviceType(const c10::TypePtr& t) {
  if (t->kind() == c10::TypeKind::DeviceObjType) return true;
  if (auto opt = t->cast<c10::OptionalType>()) return isDeviceType(opt->getElementType());
  return false;
}

ir::SourceLoc locationOf(const jit::Node* n) {
  ir::SourceLoc loc;
  if (auto flc = n->sourceRange().file_line_col()) {
    loc.file = std::get<0>(*flc);
    loc.line = static_cast<int>(std::get<1>(*flc));
  }
  return loc;
}

// The output shape of a convolution (aten::_convolution, convolution, conv1d/2d/3d with numeric
// padding), which has no meta kernel in LibTorch 1.13 and is too costly to run on large zeros:
//   out = floor((in + 2·pad − dilation·(k − 1) − 1) / stride) + 1, or for a transposed
//   convolution (in − 1)·stride − 2·pad + dilation·(k − 1) + output_padding + 1.
bool isConvolution(const std::string& op) {
  return op == "aten::_convolution" || op == "aten::convolution" || op == "aten::conv1d" ||
         op == "aten::conv2d" || op == "aten::conv3d";
}

std::optional<std::vector<int64_t>> convolutionShapeOf(const std::string& op, const std::vector<IValue>& a) {
  const bool full = op == "aten::_convolution" || op == "aten::convolution";
  if (a.size() < 7 || !a[0].isTensor() || !a[1].isTensor()) return std::nullopt;
  const at::Tensor& x = a[0].toTensor();
  const at::Tensor& w = a[1].toTensor();
  const int64_t spatial = w.dim() - 2;
  if (spatial < 1 || x.dim() != spatial + 2) return std::nullopt;  // unbatched: let LibTorch do it
  auto list = [&](const IValue& v) -> std::optional<std::vector<int64_t>> {
    if (!v.isIntList()) return std::nullopt;
    std::vector<int64_t> l = v.toIntVector();
    if (l.size() == 1) l.assign(static_cast<size_t>(spatial), l[0]);
    if (static_cast<int64_t>(l.size()) != spatial) return std::nullopt;
    return l;
  };
  auto stride = list(a[3]), pad = list(a[4]), dilation = list(a[5]);
  if (!stride || !pad || !dilation) return std::nullopt;
  const bool transposed = full && a[6].isBool() && a[6].toBool();
  std::optional<std::vector<int64_t>> outputPadding;
  int64_t groups = 1;
  if (full) {
    outputPadding = list(a[7]);
    if (!outputPadding || !a[8].isInt()) return std::nullopt;
    groups = a[8].toInt();
  }
  std::vector<int64_t> out{x.size(0), transposed ? w.size(1) * groups : w.size(0)};
  for (int64_t d = 0; d < spatial; ++d) {
    const size_t i = static_cast<size_t>(d);
    const int64_t in = x.size(d + 2), k = w.size(d + 2);
    out.push_back(transposed ? (in - 1) * (*stride)[i] - 2 * (*pad)[i] + (*dilation)[i] * (k - 1) +
                                   (*outputPadding)[i] + 1
                             : (in + 2 * (*pad)[i] - (*dilation)[i] * (k - 1) - 1) / (*stride)[i] + 1);
  }
  return out;
}

class Importer {
 public:
  Importer(std::string path, ImportOptions options, ModelTensors* tensors = nullptr)
      : path_(std::move(path)), options_(std::move(options)), tensors_(tensors) {}

  ir::Graph run();

 private:
  bool real() const { return options_.execution == ImportOptions::Execution::Real; }
  std::string where(const jit::Node* n) const;
  [[noreturn]] void fail(const jit::Node* n, const std::string& what) const;

  void load();
  void bindInputs(const std::shared_ptr<jit::Graph>& graph);
  void walk(jit::Block* block);
  static int countNodes(const jit::Block* block) {
    int n = 0;
    for (const jit::Node* node : block->nodes()) {
      ++n;
      for (const jit::Block* b : node->blocks()) n += countNodes(b);
    }
    return n;
  }
  int walked_ = 0, progressTotal_ = 0;  // for ImportOptions::progress
  void visit(jit::Node* n);
  void visitGetAttr(jit::Node* n);
  void visitIf(jit::Node* n);
  void visitLoop(jit::Node* n);
  void visitAggregate(jit::Node* n);
  void visitCall(jit::Node* n);
  void visitOp(jit::Node* n);
  void emitNode(jit::Node* n, const std::vector<Slot>& given);

  Slot& slot(const jit::Value* v);
  // How tensors are passed to an operator: all on meta (shape inference of tensor ops), graph
  // tensors on meta and folded constants as they are (non-tensor results), or as they are.
  enum class Pass { Meta, GraphOnMeta, AsIs };
  IValue toIValue(const Slot& s, Pass pass) const;
  std::vector<IValue> execute(jit::Node* n, const std::vector<Slot>& in, Pass pass) const;
  std::vector<IValue> executeMetaWithFallback(jit::Node* n, const std::vector<Slot>& in) const;
  std::optional<std::vector<int64_t>> convolutionShape(jit::Node* n, const std::vector<Slot>& in) const {
    std::vector<IValue> args;
    for (const Slot& s : in) args.push_back(toIValue(s, Pass::Meta));
    return convolutionShapeOf(n->kind().toQualString(), args);
  }
  ir::ValueId materialize(const at::Tensor& t, const std::string& name, const jit::Node* n);
  ir::ValueId newValue(ir::ValueKind kind, const std::string& name, const at::Tensor& t,
                       const jit::Node* n);
  ir::Arg makeArg(const c10::Argument& schemaArg, const Slot& s, const jit::Value* v,
                  const jit::Node* n);
  Slot wrapOutput(const IValue& v, const jit::Value* out, jit::Node* n,
                  std::vector<ir::ValueId>& outputs);
  void finish(const std::shared_ptr<jit::Graph>& graph);

  std::string path_;
  ImportOptions options_;
  torch::jit::Module module_;
  ModelSpec spec_;
  ir::Graph g_;
  std::unordered_map<const jit::Value*, Slot> env_;
  std::unordered_map<const jit::Value*, ir::ValueId> materialized_;
  // In-place writes through views and the aliases they touch (functionalize.h).
  Functionalizer fn_{g_};
  Site site(const jit::Node* n) const { return {scope_, locationOf(n), where(n)}; }
  std::unordered_map<const c10::TensorImpl*, ir::ValueId> attrValues_;  // params/buffers by identity
  at::Generator rng_ = at::detail::createCPUGenerator(0);
  // Qualified path of the module whose method is being walked: the scope of the nodes emitted.
  std::string scope_;
  ModelTensors* tensors_ = nullptr;  // where the runtime wants the tensors' data, or null
};

std::string Importer::where(const jit::Node* n) const {
  std::string out = n->outputs().empty() ? "" : "%" + n->outputs()[0]->debugName() + " = ";
  out += n->kind().toQualString();
  std::string ctx = scope_.empty() ? "top level" : "scope " + scope_;
  ir::SourceLoc loc = locationOf(n);
  if (loc.known()) ctx += ", " + loc.str();
  return fmt::format("{}: node {} ({})", path_, out, ctx);
}

void Importer::fail(const jit::Node* n, const std::string& what) const {
  throw ImportError(fmt::format("{}: {}", where(n), what));
}

void Importer::load() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path_, ec))
    throw ImportError(fmt::format("{}: no such file (give the path of a TorchScript .pt file)",
                                  path_));
  if (fs::is_directory(path_, ec))
    throw ImportError(fmt::format("{}: is a directory, not a TorchScript .pt file", path_));
  if (!std::ifstream(path_).good())
    throw ImportError(fmt::format("{}: cannot be read (check its permissions)", path_));

  jit::ExtraFilesMap extra{{kSpecFile, ""}};
  try {
    // Shapes-only imports may leave the weights unread (meta device): a third of the time for a
    // 400 MB model. Real runs and ModelTensors need the data.
    const bool meta = options_.metaWeights && !real() && !tensors_;
    module_ = torch::jit::load(path_, c10::Device(meta ? c10::kMeta : c10::kCPU), extra);
  } catch (const std::exception& e) {
    throw ImportError(fmt::format(
        "{}: not a TorchScript archive (write it with torch.jit.save of a traced or scripted "
        "module): {}",
        path_, errorText(e)));
  }
  const std::string& specText = extra[kSpecFile];
  if (!specText.empty()) spec_ = parseInputsJson(specText, path_ + ":" + kSpecFile);
  applyOverrides(spec_.inputs, options_.inputOverrides);
  g_.sourceFile = path_;
  g_.modelInfo = spec_.modelInfo;
  if (tensors_) tensors_->inputs = spec_.inputs;
}

void Importer::bindInputs(const std::shared_ptr<jit::Graph>& graph) {
  const auto& args = module_.get_method("forward").function().getSchema().arguments();
  std::vector<std::string> names;
  for (size_t i = 1; i < graph->inputs().size(); ++i)
    names.push_back(i < args.size() ? args[i].name() : graph->inputs()[i]->debugName());
  auto argList = [&] {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  for (const InputSpec& in : spec_.inputs)
    if (std::find(names.begin(), names.end(), in.name) == names.end())
      throw InputSpecError(fmt::format("{}: the input specification names '{}', but forward takes ({})",
                                       path_, in.name, argList()));

  env_[graph->inputs()[0]] = [&] {
    Slot s;
    s.kind = Slot::Kind::Object;
    s.iv = module_._ivalue();
    return s;
  }();
  for (size_t i = 1; i < graph->inputs().size(); ++i) {
    const jit::Value* v = graph->inputs()[i];
    const std::string& name = names[i - 1];
    if (v->type()->kind() != c10::TypeKind::TensorType)
      throw ImportError(fmt::format("{}: forward argument '{}' has type {}; HAP supports tensor "
                                    "arguments only",
                                    path_, name, v->type()->repr_str()));
    auto it = std::find_if(spec_.inputs.begin(), spec_.inputs.end(),
                           [&](const InputSpec& s) { return s.name == name; });
    if (it == spec_.inputs.end())
      throw MissingInputSpecError(fmt::format(
          "{}: no input specification for forward argument '{}' ({}; pass --input "
          "{}=DIMxDIMx...:DTYPE)",
          path_, name,
          spec_.inputs.empty() ? "the file has no hap/inputs.json" : "hap/inputs.json lacks it",
          name));
    // The declared shape at its final dtype, before any tensor of it is made (a c10::Error from
    // at::empty on a negative or overflowing shape must never reach the user).
    checkInputShape(it->shape, it->dtype, fmt::format("{}: input '{}'", path_, name));
    auto opts = at::TensorOptions().dtype(toScalarType(it->dtype));
    at::Tensor t;
    if (!real()) {
      t = at::empty(it->shape, opts.device(at::kMeta));
    } else if (ir::isFloating(it->dtype)) {
      t = at::randn(it->shape, rng_, opts);
    } else if (it->low && it->high) {
      t = at::randint(*it->low, *it->high, it->shape, rng_, opts);
    } else {
      t = at::zeros(it->shape, opts);
    }
    Slot s;
    s.kind = Slot::Kind::Tensor;
    s.iv = t;
    s.id = g_.addValue(ir::ValueKind::Input, name, it->shape, it->dtype);
    g_.value(s.id).low = it->low;
    g_.value(s.id).high = it->high;
    g_.inputs.push_back(s.id);
    env_[v] = std::move(s);
  }
}

Slot& Importer::slot(const jit::Value* v) {
  auto it = env_.find(v);
  if (it != env_.end()) return it->second;
  if (v->node()->kind() == c10::prim::Constant) {
    // Function-typed constants have no value; calls read their type (see visitCall).
    return env_[v] = Slot::concrete(jit::toIValue(v).value_or(IValue()));
  }
  fail(v->node(), fmt::format("value %{} is used before it is defined", v->debugName()));
}

IValue Importer::toIValue(const Slot& s, Pass pass) const {
  const bool meta = pass == Pass::Meta || (pass == Pass::GraphOnMeta && s.kind == Slot::Kind::Tensor);
  switch (s.kind) {
    case Slot::Kind::Object: return s.iv;
    case Slot::Kind::Concrete:
    case Slot::Kind::Tensor:
      if (meta && s.iv.isTensor() && !s.iv.toTensor().is_meta()) return toMeta(s.iv.toTensor());
      if (meta && s.iv.isTensorList()) {
        c10::List<at::Tensor> l;
        for (const at::Tensor& t : s.iv.toTensorVector()) l.push_back(toMeta(t));
        return l;
      }
      return s.iv;
    case Slot::Kind::Aggregate: {
      std::vector<IValue> items;
      for (const Slot& e : s.items) items.push_back(toIValue(e, pass));
      if (auto lt = s.type->cast<c10::ListType>()) {
        c10::impl::GenericList l(lt->getElementType());
        for (auto& e : items) l.push_back(std::move(e));
        return l;
      }
      return c10::ivalue::Tuple::create(std::move(items));
    }
  }
  return {};
}

// Runs n's operator on the slots' values passed as `pass` says. Device arguments are pointed at
// the execution device so that factories never allocate real memory when shapes are inferred.
std::vector<IValue> Importer::execute(jit::Node* n, const std::vector<Slot>& in, Pass pass) const {
  const bool meta = pass == Pass::Meta;
  const auto& schema = n->schema();
  jit::Stack stack;
  bool hasTensorInput = false;
  for (size_t i = 0; i < in.size(); ++i) {
    stack.push_back(toIValue(in[i], pass));
    hasTensorInput = hasTensorInput || stack.back().isTensor();
  }
  for (size_t i = 0; i < in.size() && i < schema.arguments().size(); ++i) {
    if (!isDeviceType(schema.arguments()[i].type())) continue;
    if (!stack[i].isNone() || !hasTensorInput)
      stack[i] = c10::Device(meta ? c10::kMeta : c10::kCPU);
  }
  n->getOperation()(stack);
  return std::vector<IValue>(stack.begin(), stack.end());
}

std::vector<IValue> Importer::executeMetaWithFallback(jit::Node* n,
                                                      const std::vector<Slot>& in) const {
  const std::string op = n->kind().toQualString();
  if (kDataDependentOps.count(op))
    fail(n, fmt::format("{} has an output shape that depends on tensor values; HAP plans static "
                        "graphs only (rewrite the model without it, e.g. with masks)",
                        op));
  // embedding: the output shape is known without the table (which may be large).
  if (op == "aten::embedding") {
    at::Tensor weight = toIValue(in[0], Pass::Meta).toTensor();
    at::Tensor idx = toIValue(in[1], Pass::Meta).toTensor();
    std::vector<int64_t> shape = idx.sizes().vec();
    shape.push_back(weight.size(1));
    return {at::empty(shape, weight.options())};
  }
  // (_)embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
  // include_last_offset[, padding_idx]): no meta kernel in LibTorch 1.13, and its CPU kernel on
  // zeros writes past its buffers when include_last_offset is set (the last offset, 0, is not the
  // index count). The shapes are those of the CPU kernel training runs call (_embedding_bag, the
  // weight requiring grad), in the weight's dtype: output [B, D] with B = offsets - include_last;
  // offset2bag [N], but [0] on the float/half sum path, which skips it; bag_size [B]; max_indices
  // [B, D] in max mode, else [B]; the last three of the indices' dtype. (A float64 run, hap-worker
  // --check, fills offset2bag where the plan says [0]: no node reads it, see step_kernel.cpp.)
  if ((op == "aten::embedding_bag" || op == "aten::_embedding_bag") && in.size() >= 8) {
    at::Tensor weight = toIValue(in[0], Pass::Meta).toTensor();
    at::Tensor idx = toIValue(in[1], Pass::Meta).toTensor();
    at::Tensor offsets = toIValue(in[2], Pass::Meta).toTensor();
    const IValue modeArg = toIValue(in[4], Pass::Meta);
    const IValue lastArg = toIValue(in[7], Pass::Meta);
    const IValue padArg = in.size() > 8 ? toIValue(in[8], Pass::Meta) : IValue();
    if (weight.dim() == 2 && idx.dim() == 1 && offsets.dim() == 1 && modeArg.isInt() &&
        lastArg.isBool()) {
      const int64_t mode = modeArg.toInt();
      const int64_t bags = offsets.size(0) - (lastArg.toBool() ? 1 : 0);
      const bool skipsOffset2bag =
          mode == 0 &&
          (weight.scalar_type() == at::kFloat || weight.scalar_type() == at::kHalf) &&
          !(padArg.isInt() && padArg.toInt() >= 0);
      const at::TensorOptions ints = idx.options();
      return {at::empty({bags, weight.size(1)}, weight.options()),
              at::empty({skipsOffset2bag ? 0 : idx.size(0)}, ints), at::empty({bags}, ints),
              mode == 2 ? at::empty({bags, weight.size(1)}, ints) : at::empty({bags}, ints)};
    }
  }
  // one_hot with a given class count: the indices' shape plus one dimension, int64 (its CPU
  // fallback would allocate that whole result: 16 GiB for a 512-expert MoE at batch 32768).
  if (op == "aten::one_hot" && in.size() == 2) {
    IValue classes = toIValue(in[1], Pass::Meta);
    if (classes.isInt() && classes.toInt() > 0) {
      at::Tensor idx = toIValue(in[0], Pass::Meta).toTensor();
      std::vector<int64_t> shape = idx.sizes().vec();
      shape.push_back(classes.toInt());
      return {at::empty(shape, idx.options().dtype(at::kLong))};
    }
  }
  if (isConvolution(op))
    if (auto shape = convolutionShape(n, in))
      return {at::empty(*shape, toIValue(in[0], Pass::Meta).toTensor().options())};
  // Normalisations and relu have no meta kernel in LibTorch 1.13; they keep their input's shape
  // and dtype.
  if (op == "aten::layer_norm" || op == "aten::batch_norm" || op == "aten::instance_norm" ||
      op == "aten::group_norm" || op == "aten::relu") {
    at::Tensor input = toIValue(in[0], Pass::Meta).toTensor();
    return {at::empty(input.sizes(), input.options())};
  }
  try {
    return execute(n, in, Pass::Meta);
  } catch (const std::exception& metaError) {
    // No meta kernel: run on CPU zeros of the same shapes, then keep only the shapes. The limit
    // is checked before anything is allocated.
    int64_t bytes = 0;
    std::vector<Slot> cpu = in;
    std::function<void(Slot&, bool)> toZeros = [&](Slot& s, bool allocate) {
      if (s.kind == Slot::Kind::Aggregate) {
        for (Slot& e : s.items) toZeros(e, allocate);
      } else if (s.iv.isTensor() && s.iv.toTensor().is_meta()) {
        const at::Tensor& t = s.iv.toTensor();
        if (allocate)
          s.iv = at::zeros(t.sizes(), t.options().device(at::kCPU));
        else
          bytes += t.numel() * static_cast<int64_t>(t.element_size());
      }
    };
    for (Slot& s : cpu) toZeros(s, false);
    if (bytes > options_.cpuFallbackLimitBytes)
      fail(n, fmt::format("{} has no meta kernel and its inputs ({} MiB) exceed the CPU fallback "
                          "limit; reduce the batch for inspection ({})",
                          op, bytes >> 20, errorText(metaError)));
    for (Slot& s : cpu) toZeros(s, true);
    std::vector<IValue> outs;
    try {
      outs = execute(n, cpu, Pass::AsIs);
    } catch (const std::exception& e) {
      fail(n, fmt::format("{} cannot be evaluated for shapes: {}", op, errorText(e)));
    }
    for (IValue& o : outs) {
      if (o.isTensor()) o = toMeta(o.toTensor());
      else if (o.isTensorList()) {
        c10::List<at::Tensor> l;
        for (const at::Tensor& t : o.toTensorVector()) l.push_back(toMeta(t));
        o = l;
      }
    }
    return outs;
  }
}

ir::ValueId Importer::newValue(ir::ValueKind kind, const std::string& name, const at::Tensor& t,
                               const jit::Node* n) {
  auto dtype = fromScalarType(t.scalar_type(), [&] {
    return n ? where(n) : fmt::format("{}: tensor '{}'", path_, name);
  });
  return g_.addValue(kind, name, t.sizes().vec(), dtype);
}

ir::ValueId Importer::materialize(const at::Tensor& t, const std::string& name,
                                  const jit::Node* n) {
  ir::ValueId id = newValue(ir::ValueKind::Constant, name, t, n);
  g_.constants.push_back(id);
  // Folded constants are computed on real tensors (never meta), so their data is at hand.
  if (tensors_) tensors_->values.emplace(id, t.is_meta() ? t : t.detach().clone());
  return id;
}

ir::Arg Importer::makeArg(const c10::Argument& schemaArg, const Slot& s, const jit::Value* v,
                          const jit::Node* n) {
  ir::Arg a;
  a.name = schemaArg.name();
  a.type = schemaArg.type()->annotation_str();
  auto constantTensor = [&](const at::Tensor& t) {
    auto [it, fresh] = materialized_.try_emplace(v, ir::kNone);
    if (fresh) it->second = materialize(t, v->debugName(), n);
    return it->second;
  };
  if (s.kind == Slot::Kind::Tensor) {
    a.kind = ir::Arg::Kind::Tensor;
    a.values = {s.id};
  } else if (s.kind == Slot::Kind::Aggregate) {
    a.kind = ir::Arg::Kind::TensorList;
    for (size_t k = 0; k < s.items.size(); ++k) {
      const Slot& e = s.items[k];
      if (e.kind == Slot::Kind::Tensor) a.values.push_back(e.id);
      else if (e.iv.isTensor()) a.values.push_back(materialize(e.iv.toTensor(), v->debugName(), n));
      else if (e.iv.isNone()) a.noneAt.push_back(static_cast<int>(k));  // its place keeps its meaning
      else fail(n, fmt::format("unsupported element in list argument '{}'", a.name));
    }
  } else if (s.iv.isTensor()) {
    a.kind = ir::Arg::Kind::Tensor;
    a.values = {constantTensor(s.iv.toTensor())};
  } else if (s.iv.isTensorList()) {
    a.kind = ir::Arg::Kind::TensorList;
    for (const at::Tensor& t : s.iv.toTensorVector())
      a.values.push_back(materialize(t, v->debugName(), n));
  } else if (s.iv.isList() && typeHasTensor(schemaArg.type())) {
    // A folded list of optional tensors (x[idx] with a constant idx: Tensor?[] indices).
    a.kind = ir::Arg::Kind::TensorList;
    const c10::List<IValue> items = s.iv.toList();
    for (size_t k = 0; k < items.size(); ++k) {
      const IValue e = items.get(k);
      if (e.isTensor()) a.values.push_back(materialize(e.toTensor(), v->debugName(), n));
      else if (e.isNone()) a.noneAt.push_back(static_cast<int>(k));
      else fail(n, fmt::format("unsupported element in list argument '{}'", a.name));
    }
  } else {
    a.constant = toConstant(s.iv);
  }
  return a;
}

Slot Importer::wrapOutput(const IValue& v, const jit::Value* out, jit::Node* n,
                          std::vector<ir::ValueId>& outputs) {
  if (v.isTensor()) {
    Slot s;
    s.kind = Slot::Kind::Tensor;
    s.iv = v;
    s.id = newValue(ir::ValueKind::Activation, out->debugName(), v.toTensor(), n);
    outputs.push_back(s.id);
    return s;
  }
  if (v.isTensorList()) {
    Slot s;
    s.kind = Slot::Kind::Aggregate;
    s.type = out->type();
    auto list = v.toTensorVector();
    for (size_t i = 0; i < list.size(); ++i) {
      Slot e;
      e.kind = Slot::Kind::Tensor;
      e.iv = list[i];
      e.id = newValue(ir::ValueKind::Activation, fmt::format("{}.{}", out->debugName(), i),
                      list[i], n);
      outputs.push_back(e.id);
      s.items.push_back(std::move(e));
    }
    return s;
  }
  if (typeHasTensor(out->type()) && !v.isNone())
    fail(n, fmt::format("unsupported output type {}", out->type()->repr_str()));
  return Slot::concrete(v);
}

void Importer::walk(jit::Block* block) {
  for (jit::Node* n : block->nodes()) {
    if (options_.cancel && options_.cancel->load(std::memory_order_relaxed))
      throw ImportCancelled(fmt::format("{}: import cancelled", path_));
    if (options_.progress && progressTotal_ > 0 && (++walked_ & 63) == 0)
      options_.progress(std::min(walked_, progressTotal_), progressTotal_);
    visit(n);
  }
}

void Importer::visit(jit::Node* n) {
  const c10::Symbol k = n->kind();
  if (k == c10::prim::Constant) {
    slot(n->output());
  } else if (k == c10::prim::GetAttr) {
    visitGetAttr(n);
  } else if (k == c10::prim::If) {
    visitIf(n);
  } else if (k == c10::prim::Loop) {
    visitLoop(n);
  } else if (k == c10::prim::ListConstruct || k == c10::prim::TupleConstruct ||
             k == c10::prim::ListUnpack || k == c10::prim::TupleUnpack ||
             k == c10::prim::TupleIndex || k == c10::aten::__getitem__ || k == c10::aten::len) {
    visitAggregate(n);
  } else if (k == c10::prim::unchecked_cast) {
    env_[n->output()] = slot(n->input());
  } else if (k == c10::prim::RaiseException) {
    fail(n, "the model raises an exception on this path (an assertion failed for the declared "
            "input shapes)");
  } else if (k == c10::prim::CallMethod || k == c10::prim::CallFunction) {
    visitCall(n);
  } else if (k == c10::prim::PythonOp) {
    fail(n, "a Python function that TorchScript could not compile (prim::PythonOp)");
  } else if (n->maybeOperator()) {
    visitOp(n);
  } else {
    fail(n, fmt::format("unsupported TorchScript construct {}", k.toQualString()));
  }
}

// Method and function calls are walked in place (instead of inlining the graph first) so that each
// node's scope is the exact qualified path of the module instance, taken from the prim::GetAttr
// chain: "layers.3.attn.q", including ModuleList and Sequential indices.
void Importer::visitCall(jit::Node* n) {
  std::shared_ptr<jit::Graph> callee;
  std::vector<const jit::Value*> args(n->inputs().begin(), n->inputs().end());
  std::string calleeScope = scope_;
  if (n->kind() == c10::prim::CallMethod) {
    const Slot& self = slot(n->input(0));
    if (self.kind != Slot::Kind::Object) fail(n, "a method call on a value that is not a module");
    const std::string& name = n->s(c10::attr::name);
    callee = jit::toGraphFunction(self.iv.toObject()->type()->getMethod(name)).graph();
    calleeScope = self.path;
  } else {
    auto fnType = n->input(0)->type()->cast<c10::FunctionType>();
    if (!fnType) fail(n, "a call of a value that is not a TorchScript function");
    callee = jit::toGraphFunction(*fnType->function()).graph();
    args.erase(args.begin());  // the function constant itself
  }
  if (callee->inputs().size() != args.size())
    fail(n, "call with an argument count that differs from the callee's");
  std::vector<Slot> in;
  for (const jit::Value* a : args) in.push_back(slot(a));
  for (size_t i = 0; i < in.size(); ++i) env_[callee->inputs()[i]] = in[i];
  std::swap(scope_, calleeScope);
  walk(callee->block());
  std::swap(scope_, calleeScope);
  for (size_t i = 0; i < n->outputs().size(); ++i)
    env_[n->outputs()[i]] = slot(callee->outputs()[i]);
}

void Importer::visitGetAttr(jit::Node* n) {
  const Slot& owner = slot(n->input());
  if (owner.kind != Slot::Kind::Object)
    fail(n, "attribute access on a value that is not a module");
  const std::string& name = n->s(c10::attr::name);
  auto obj = owner.iv.toObject();
  IValue attr = obj->getAttr(name);
  std::string qualified = owner.path.empty() ? name : owner.path + "." + name;
  if (attr.isObject()) {
    Slot s;
    s.kind = Slot::Kind::Object;
    s.iv = attr;
    s.path = qualified;
    env_[n->output()] = std::move(s);
    return;
  }
  if (!attr.isTensor()) {
    env_[n->output()] = Slot::concrete(attr);
    return;
  }
  const at::Tensor& t = attr.toTensor();
  auto [it, fresh] = attrValues_.try_emplace(t.unsafeGetTensorImpl(), ir::kNone);
  if (fresh) {
    const auto& type = obj->type();
    size_t slotIndex = type->getAttributeSlot(name);
    bool isParam = type->is_parameter(slotIndex);
    it->second = newValue(isParam ? ir::ValueKind::Parameter : ir::ValueKind::Buffer, qualified,
                          t, n);
    (isParam ? g_.parameters : g_.buffers).push_back(it->second);
    if (tensors_) tensors_->values.emplace(it->second, t.detach());
  }
  Slot s;
  s.kind = Slot::Kind::Tensor;
  s.id = it->second;
  s.iv = real() ? t : toMeta(t);
  env_[n->output()] = std::move(s);
}

void Importer::visitIf(jit::Node* n) {
  const Slot& cond = slot(n->input());
  if (cond.kind != Slot::Kind::Concrete || !cond.iv.isBool())
    fail(n, "control flow that depends on tensor values (an `if` whose condition is computed from "
            "tensor data); HAP needs a straight-line forward: express it with torch.where or "
            "masks");
  jit::Block* taken = n->blocks()[cond.iv.toBool() ? 0 : 1];
  walk(taken);
  for (size_t i = 0; i < n->outputs().size(); ++i)
    env_[n->outputs()[i]] = slot(taken->outputs()[i]);
}

void Importer::visitLoop(jit::Node* n) {
  // prim::Loop(max_trip_count, initial_condition, carried...) with a body block whose inputs are
  // (iteration, carried...) and outputs (condition, carried...).
  const Slot& trips = slot(n->inputs()[0]);
  const Slot& cond0 = slot(n->inputs()[1]);
  auto dataDependent = [&] {
    fail(n, "a loop whose trip count or condition depends on tensor values; HAP needs a "
            "straight-line forward (loops over constants are unrolled)");
  };
  if (trips.kind != Slot::Kind::Concrete || !trips.iv.isInt()) dataDependent();
  if (cond0.kind != Slot::Kind::Concrete || !cond0.iv.isBool()) dataDependent();
  int64_t maxTrips = trips.iv.toInt();
  bool cond = cond0.iv.toBool();
  std::vector<Slot> carried;
  for (size_t i = 2; i < n->inputs().size(); ++i) carried.push_back(slot(n->inputs()[i]));
  jit::Block* body = n->blocks()[0];
  for (int64_t it = 0; cond && it < maxTrips; ++it) {
    if (it >= kMaxLoopIterations) fail(n, "a loop of more than a million iterations");
    env_[body->inputs()[0]] = Slot::concrete(it);
    for (size_t i = 0; i < carried.size(); ++i) env_[body->inputs()[i + 1]] = carried[i];
    walk(body);
    const Slot& c = slot(body->outputs()[0]);
    if (c.kind != Slot::Kind::Concrete || !c.iv.isBool()) dataDependent();
    cond = c.iv.toBool();
    for (size_t i = 0; i < carried.size(); ++i) carried[i] = slot(body->outputs()[i + 1]);
  }
  for (size_t i = 0; i < n->outputs().size(); ++i) env_[n->outputs()[i]] = carried[i];
}

// Lists and tuples: concrete ones are folded; those holding graph tensors are tracked element by
// element so that ops taking Tensor[] (cat, stack) see the individual values.
void Importer::visitAggregate(jit::Node* n) {
  const c10::Symbol k = n->kind();
  std::vector<Slot> in;
  for (const jit::Value* v : n->inputs()) in.push_back(slot(v));
  bool graphDependent = false;
  for (const Slot& s : in) graphDependent = graphDependent || s.dependsOnGraph();

  if (k == c10::prim::ListConstruct || k == c10::prim::TupleConstruct) {
    Slot s;
    s.kind = Slot::Kind::Aggregate;
    s.type = n->output()->type();
    s.items = std::move(in);
    env_[n->output()] = graphDependent ? std::move(s) : Slot::concrete(toIValue(s, Pass::AsIs));
    return;
  }
  if (k == c10::prim::ListUnpack || k == c10::prim::TupleUnpack) {
    const Slot& src = in[0];
    std::vector<Slot> items;
    if (src.kind == Slot::Kind::Aggregate) {
      items = src.items;
    } else if (src.iv.isList()) {
      for (const IValue& e : src.iv.toListRef()) items.push_back(Slot::concrete(e));
    } else if (src.iv.isTuple()) {
      for (const IValue& e : src.iv.toTupleRef().elements()) items.push_back(Slot::concrete(e));
    } else {
      fail(n, "unpacking a value that is not a list or tuple");
    }
    if (items.size() != n->outputs().size())
      fail(n, fmt::format("unpacks {} values from a sequence of {}", n->outputs().size(),
                          items.size()));
    for (size_t i = 0; i < items.size(); ++i) env_[n->outputs()[i]] = items[i];
    return;
  }
  // Indexing (prim::TupleIndex, aten::__getitem__) and aten::len on a sequence of graph tensors.
  if (in[0].kind == Slot::Kind::Aggregate) {
    const auto& items = in[0].items;
    if (k == c10::aten::len) {
      env_[n->output()] = Slot::concrete(static_cast<int64_t>(items.size()));
      return;
    }
    if (in[1].kind != Slot::Kind::Concrete || !in[1].iv.isInt())
      fail(n, "indexing a sequence with an index computed from tensor values");
    int64_t i = in[1].iv.toInt();
    if (i < 0) i += static_cast<int64_t>(items.size());
    if (i < 0 || i >= static_cast<int64_t>(items.size()))
      fail(n, fmt::format("index {} is out of range for a sequence of {}", in[1].iv.toInt(),
                          items.size()));
    env_[n->output()] = items[static_cast<size_t>(i)];
    return;
  }
  if (k == c10::prim::TupleIndex) {
    if (!in[0].iv.isTuple() || !in[1].iv.isInt()) fail(n, "tuple index on a non-tuple");
    env_[n->output()] = Slot::concrete(in[0].iv.toTupleRef().elements().at(in[1].iv.toInt()));
    return;
  }
  visitOp(n);  // __getitem__ / len on a concrete container: fold through the operator
}

void Importer::visitOp(jit::Node* n) {
  std::vector<Slot> in;
  for (const jit::Value* v : n->inputs()) in.push_back(slot(v));
  bool producesTensor = false;
  for (const jit::Value* o : n->outputs()) producesTensor = producesTensor || typeHasTensor(o->type());
  bool graphDependent = false;
  for (const Slot& s : in) graphDependent = graphDependent || s.dependsOnGraph();

  if (!producesTensor) {
    // Shape arithmetic and other non-tensor results: evaluated now, on meta tensors, so a read of
    // tensor data (aten::Int on an activation, .item()) fails the same way in every mode.
    std::vector<IValue> outs;
    try {
      outs = execute(n, in, Pass::GraphOnMeta);
    } catch (const std::exception& e) {
      if (!graphDependent) fail(n, fmt::format("cannot be evaluated: {}", errorText(e)));
      bool decidesControlFlow = false;
      for (const jit::Value* o : n->outputs())
        for (const jit::Use& u : o->uses())
          decidesControlFlow = decidesControlFlow || u.user->kind() == c10::prim::If ||
                               u.user->kind() == c10::prim::Loop;
      fail(n, fmt::format("reads the value of a tensor computed by the model{}; HAP plans "
                          "straight-line programs whose shapes and control flow do not depend "
                          "on tensor values (use torch.where or masks instead)",
                          decidesControlFlow ? " to decide control flow (an `if` or a loop)" : ""));
    }
    for (size_t i = 0; i < n->outputs().size(); ++i) env_[n->outputs()[i]] = Slot::concrete(outs[i]);
    return;
  }
  const std::string op = n->kind().toQualString();
  // new_zeros(x, size), zeros_like(x), ...: x gives only its dtype (and shape) to a result whose
  // values are constants; such a factory folds like one made from constants (Swin's attention
  // mask, built from x.new_zeros and written slice by slice, becomes one constant).
  if (graphDependent && isShapeOnlyFactory(op) && in[0].kind == Slot::Kind::Tensor) {
    bool rest = false;
    for (size_t i = 1; i < in.size(); ++i) rest = rest || in[i].dependsOnGraph();
    if (!rest) {
      std::vector<Slot> folded = in;
      const at::Tensor carrier = in[0].iv.toTensor();
      folded[0] = Slot::concrete(at::zeros(carrier.sizes(), carrier.options().device(at::kCPU)));
      std::vector<IValue> shapes = executeMetaWithFallback(n, folded);
      if (shapes.size() == 1 && shapes[0].isTensor() && shapes[0].toTensor().numel() <= kFoldElements) {
        std::vector<IValue> outs = execute(n, folded, Pass::AsIs);
        env_[n->outputs()[0]] = Slot::concrete(outs[0]);
        return;
      }
    }
  }
  if (!graphDependent && !isRandomOp(op)) {
    // Computed from constants only: fold small results (size arithmetic, index constants); large
    // ones (e.g. zeros of an activation's shape) stay in the graph as factory nodes.
    std::vector<IValue> shapes = executeMetaWithFallback(n, in);
    bool small = true;
    for (const IValue& v : shapes) {
      if (v.isTensor()) small = small && v.toTensor().numel() <= kFoldElements;
      else if (v.isTensorList())
        for (const at::Tensor& t : v.toTensorVector()) small = small && t.numel() <= kFoldElements;
    }
    if (small) {
      std::vector<IValue> outs;
      try {
        outs = execute(n, in, Pass::AsIs);
      } catch (const std::exception& e) {
        fail(n, fmt::format("cannot evaluate {} on constants: {}", op, errorText(e)));
      }
      for (size_t i = 0; i < n->outputs().size(); ++i)
        env_[n->outputs()[i]] = Slot::concrete(outs[i]);
      return;
    }
  }
  emitNode(n, in);
}

void Importer::emitNode(jit::Node* n, const std::vector<Slot>& given) {
  const auto& schema = n->schema();
  std::vector<Slot> in = given;
  // An in-place op on a tensor folded at import time (a fresh torch.empty(...) or new_empty that
  // stochastic depth fills with bernoulli_): the tensor becomes a graph constant, a copy of the
  // folded value, which the op then writes.
  const c10::AliasInfo* target = schema.arguments().empty() ? nullptr : schema.arguments()[0].alias_info();
  if (target && target->isWrite() && !in.empty() && in[0].kind == Slot::Kind::Concrete && in[0].iv.isTensor()) {
    const at::Tensor folded = in[0].iv.toTensor().clone();
    Slot promoted;
    promoted.kind = Slot::Kind::Tensor;
    promoted.iv = real() ? folded : at::empty_like(folded, folded.options().device(at::kMeta));
    promoted.id = materialize(folded, n->inputs()[0]->debugName(), n);
    in[0] = std::move(promoted);
  }
  // Every tensor read at its current value: a view or base written in place since it was made is
  // derived again from the new content (functionalize.h).
  const Site here = site(n);
  std::function<void(Slot&)> current = [&](Slot& s) {
    if (s.kind == Slot::Kind::Aggregate)
      for (Slot& e : s.items) current(e);
    if (s.kind != Slot::Kind::Tensor) return;
    const Carried c = fn_.read({s.id, s.iv.isTensor() ? s.iv.toTensor() : at::Tensor()}, here);
    s.id = c.id;
    s.iv = c.carrier;
  };
  for (Slot& s : in) current(s);
  ir::Node node;
  node.op = n->kind().toQualString();
  node.overload = schema.overload_name();
  node.scope = scope_;
  node.loc = locationOf(n);
  const auto& args = schema.arguments();
  if (args.size() != in.size()) fail(n, "argument count differs from the operator's schema");
  for (size_t i = 0; i < in.size(); ++i) {
    const c10::AliasInfo* alias = args[i].alias_info();
    if (alias && alias->isWrite()) {
      if (i != 0) fail(n, fmt::format("writes to its argument '{}' (out= variants are not supported)",
                                      args[i].name()));
      if (in[0].kind != Slot::Kind::Tensor)
        fail(n, "an in-place op on a value that is not a graph tensor");
      fn_.checkWrite({in[0].id, in[0].iv.toTensor()}, n->kind().toQualString(), here);
      node.inplace = true;
    }
    node.args.push_back(makeArg(args[i], in[i], n->inputs()[i], n));
  }

  std::vector<IValue> outs;
  if (real()) {
    try {
      outs = execute(n, in, Pass::AsIs);
    } catch (const std::exception& e) {
      fail(n, fmt::format("failed on real tensors: {}", errorText(e)));
    }
  } else {
    outs = executeMetaWithFallback(n, in);
  }
  if (outs.size() != n->outputs().size()) fail(n, "operator returned an unexpected number of values");

  std::vector<Carried> results;  // the tensor outputs with their carriers, flattened
  for (size_t i = 0; i < outs.size(); ++i) {
    const Slot& s = env_[n->outputs()[i]] = wrapOutput(outs[i], n->outputs()[i], n, node.outputs);
    if (s.kind == Slot::Kind::Tensor) results.push_back({s.id, s.iv.toTensor()});
    for (const Slot& e : s.items) results.push_back({e.id, e.iv.toTensor()});
  }

  // Views: outputs sharing the storage of an argument the schema says they may alias (view,
  // slice, select, transpose, chunk, ...; contiguous and to when they return their input).
  if (!node.inplace) {
    std::vector<IValue> argValues;
    for (size_t i = 0; i < args.size() && i < in.size(); ++i) {
      const c10::AliasInfo* a = args[i].alias_info();
      if (!a || a->isWrite() || in[i].kind != Slot::Kind::Tensor || !in[i].iv.isTensor()) continue;
      if (argValues.empty())
        for (const Slot& s : in) argValues.push_back(toIValue(s, Pass::AsIs));
      fn_.view({in[i].id, in[i].iv.toTensor()}, i, node.op, schema, argValues, results, here);
    }
  }
  if (node.inplace) {
    if (node.outputs.empty()) fail(n, "an in-place op without a tensor result");
    const Carried old{in[0].id, in[0].iv.toTensor()};
    g_.value(node.outputs[0]).aliasOf = old.id;
    g_.addNode(std::move(node));
    // The write's new content goes back into the storage it wrote (scatters into the base), and
    // later readers of the overwritten TorchScript value see the new version.
    fn_.write(old, results.at(0), here);
    env_[n->inputs()[0]] = env_[n->outputs()[0]];
    return;
  }
  g_.addNode(std::move(node));
}

void Importer::finish(const std::shared_ptr<jit::Graph>& graph) {
  if (graph->outputs().size() != 1)
    throw ImportError(fmt::format("{}: forward must return a scalar loss", path_));
  const jit::Value* out = graph->outputs()[0];
  const Slot& s = slot(out);
  auto origin = [&] {
    if (s.kind == Slot::Kind::Tensor && g_.value(s.id).producer != ir::kNone)
      return fmt::format("{}: node {}", path_, g_.describe(g_.value(s.id).producer));
    return path_ + ": forward";
  };
  if (s.kind == Slot::Kind::Aggregate || s.iv.isTuple() || s.iv.isList())
    throw ImportError(fmt::format(
        "{}: forward returns a tuple or list of {} values; HAP needs forward to return the scalar "
        "loss only",
        origin(), s.kind == Slot::Kind::Aggregate ? s.items.size() : size_t{0}));
  if (s.kind != Slot::Kind::Tensor)
    throw ImportError(fmt::format("{}: forward returns a value that depends on no input or "
                                  "parameter; it must return the loss",
                                  origin()));
  const ir::Value& loss = g_.value(s.id);
  if (!loss.shape.empty())
    throw ImportError(fmt::format("{}: forward returns a tensor of shape {}; HAP needs a scalar "
                                  "loss (reduce it, e.g. with .mean() or .sum())",
                                  origin(), ir::formatShape(loss.shape)));
  if (!ir::isFloating(loss.dtype))
    throw ImportError(fmt::format("{}: forward returns a {} scalar; the loss must be floating point",
                                  origin(), ir::dtypeName(loss.dtype)));
  if (loss.kind != ir::ValueKind::Activation)
    throw ImportError(fmt::format("{}: forward returns {} '{}' unchanged; it must compute a loss",
                                  path_, ir::valueKindName(loss.kind), loss.name));
  g_.loss = s.id;

  // Parameters forward never reads still count toward the model's size: report them.
  int64_t unused = 0;
  std::vector<std::string> names;
  std::unordered_set<const c10::TensorImpl*> seen;
  for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
    const c10::TensorImpl* impl = p.value.unsafeGetTensorImpl();
    if (!seen.insert(impl).second || attrValues_.count(impl)) continue;
    unused += p.value.numel();
    if (names.size() < 5) names.push_back(p.name);
  }
  if (unused > 0)
    g_.diagnostics.push_back(
        {ir::Diagnostic::Severity::Warning, ir::kNone,
         fmt::format("{} parameter elements are never used by forward (e.g. {})", unused,
                     fmt::join(names, ", "))});
}

ir::Graph Importer::run() {
  load();
  std::shared_ptr<jit::Graph> graph;
  try {
    graph = module_.get_method("forward").graph();
  } catch (const std::exception& e) {
    throw ImportError(fmt::format("{}: the module has no forward method: {}", path_, errorText(e)));
  }
  bindInputs(graph);
  if (options_.progress) {
    // The progress total: the nodes of forward with every call inlined (what walk() visits).
    std::shared_ptr<jit::Graph> inlined = graph->copy();
    jit::Inline(*inlined);
    progressTotal_ = std::max(1, countNodes(inlined->block()));
    options_.progress(0, progressTotal_);
  }
  walk(graph->block());
  if (options_.progress) options_.progress(progressTotal_, progressTotal_);
  finish(graph);
  ir::annotateCosts(g_);
  g_.check();
  return std::move(g_);
}

}  // namespace

at::ScalarType toScalarType(ir::DType t) {
  switch (t) {
    case ir::DType::Float32: return at::kFloat;
    case ir::DType::Float64: return at::kDouble;
    case ir::DType::Float16: return at::kHalf;
    case ir::DType::BFloat16: return at::kBFloat16;
    case ir::DType::Int64: return at::kLong;
    case ir::DType::Int32: return at::kInt;
    case ir::DType::Int16: return at::kShort;
    case ir::DType::Int8: return at::kChar;
    case ir::DType::UInt8: return at::kByte;
    case ir::DType::Bool: return at::kBool;
  }
  return at::kFloat;
}

std::vector<ForwardArgument> forwardArguments(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ImportError(fmt::format("{}: no such file (give the path of a TorchScript .pt file)", path));
  jit::ExtraFilesMap extra{{kSpecFile, ""}};
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, c10::Device(c10::kCPU), extra);
  } catch (const std::exception& e) {
    throw ImportError(fmt::format("{}: not a TorchScript archive (write it with torch.jit.save of a traced or "
                                  "scripted module): {}",
                                  path, errorText(e)));
  }
  ModelSpec spec;
  if (!extra[kSpecFile].empty()) spec = parseInputsJson(extra[kSpecFile], path + ":" + kSpecFile);
  std::vector<ForwardArgument> out;
  try {
    const auto& args = module.get_method("forward").function().getSchema().arguments();
    for (size_t i = 1; i < args.size(); ++i) {
      ForwardArgument a;
      a.name = args[i].name();
      a.type = args[i].type()->annotation_str();
      for (const InputSpec& in : spec.inputs)
        if (in.name == a.name) a.spec = in;
      out.push_back(std::move(a));
    }
  } catch (const std::exception& e) {
    throw ImportError(fmt::format("{}: the module has no forward method: {}", path, errorText(e)));
  }
  return out;
}

ir::Graph importModel(const std::string& path, const ImportOptions& options) {
  at::NoGradGuard noGrad;
  if (!options.metaWeights || options.execution == ImportOptions::Execution::Real) return Importer(path, options).run();
  try {
    return Importer(path, options).run();
  } catch (const ImportCancelled&) {
    throw;
  } catch (const InputSpecError&) {
    throw;
  } catch (const std::exception&) {
    // Weights on the meta device are best effort: loading some archives, or folding a computation
    // that reads a weight's values (DenseNet's), needs the data. Import again with it; a model that
    // fails for its own reasons fails the same way again, with its own message.
  }
  ImportOptions withData = options;
  withData.metaWeights = false;
  return Importer(path, withData).run();
}

ir::Graph importModel(const std::string& path, const ImportOptions& options, ModelTensors& tensors) {
  at::NoGradGuard noGrad;
  tensors.values.clear();
  ir::Graph g = Importer(path, options, &tensors).run();
  for (const auto& [id, t] : tensors.values)
    if (t.is_meta())
      throw ImportError(fmt::format("{}: the data of constant '{}' was not kept by the import (an internal "
                                    "limit); please report this model", path, g.value(id).name));
  return g;
}

}  // namespace hap::import
