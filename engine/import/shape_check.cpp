#include "engine/import/shape_check.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>

#include "engine/base/error.h"
#include "engine/import/model_tensors.h"

namespace hap::import {
namespace {

std::string typed(const ir::Value& v) {
  return fmt::format("{} {}", ir::formatShape(v.shape), ir::dtypeName(v.dtype));
}

ShapeMismatch at(const ir::Graph& g, ir::NodeId id) {
  ShapeMismatch m;
  m.node = id;
  if (id == ir::kNone) return m;
  const ir::Node& n = g.node(id);
  m.op = n.op;
  m.scope = n.scope;
  m.loc = n.loc;
  return m;
}

// The in-place op's out-of-place form ("aten::relu_" -> "aten::relu"), as the runtime runs it.
std::string baseOp(std::string op) {
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') op.pop_back();
  return op;
}

std::shared_ptr<torch::jit::Operator> findOperator(const std::string& op, const std::string& overload) {
  for (const auto& candidate : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(op)))
    if (candidate->schema().overload_name() == overload) return candidate;
  return nullptr;
}

// A folded argument as the schema wants it (runtime/core/step_kernel.cpp's constantValue, on the
// CPU and at the graph's dtypes).
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
          if (type.find("Device") != std::string::npos) return c10::IValue(c10::Device(c10::kCPU));
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

// Ops whose output shape depends on the values of an input the verifier does not have (it runs
// on zeros): a boolean index's count of true elements, repeat_interleave's tensor of repeats,
// one_hot's class count taken from the data, CTC's longest target, embedding_bag's offsets (and
// LibTorch 1.13's kernel writes past its buffers on zero offsets with include_last_offset, while
// without autograd it dispatches to a forward-only kernel whose bag_size is [B + 1] there; the
// importer infers its shapes from the arguments instead). Their shapes are the importer's,
// checked against real data by checkShapes.
bool shapeDependsOnValues(const ir::Graph& g, const ir::Node& n) {
  if (n.op == "aten::embedding_bag" || n.op == "aten::_embedding_bag") return true;
  if (n.op == "aten::index")
    for (ir::ValueId v : n.tensorInputs())
      if (g.value(v).dtype == ir::DType::Bool || g.value(v).dtype == ir::DType::UInt8) return true;
  if (n.op == "aten::repeat_interleave") {
    const ir::Arg* repeats = n.arg("repeats");
    return !repeats || repeats->kind != ir::Arg::Kind::Constant;
  }
  if (n.op == "aten::one_hot") {
    const ir::Arg* classes = n.arg("num_classes");
    const int64_t* c = classes ? std::get_if<int64_t>(&classes->constant) : nullptr;
    return !c || *c < 0;
  }
  return n.op == "aten::_ctc_loss";
}

// Above these, a node's shapes come from meta tensors instead of the CPU kernel: a plan's
// verification (every opened plan, on every rank) stays a matter of milliseconds per node.
constexpr double kCpuFlops = 5e7;

}  // namespace

std::string ShapeMismatch::message() const {
  std::string where = scope.empty() ? "top level" : "scope " + scope;
  if (loc.known()) where += ", " + loc.str();
  std::string out = node == ir::kNone ? std::string("the model") : fmt::format("node {} ({})", op, where);
  if (output < 0) return fmt::format("{}: {}", out, actual);
  return fmt::format("{}: output {} '{}' is inferred {}, LibTorch computes {}", out, output, value, inferred,
                     actual);
}

ShapeCheckResult compareShapes(const ir::Graph& inferred, const ir::Graph& actual) {
  ShapeCheckResult r;
  const size_t common = std::min(inferred.nodes.size(), actual.nodes.size());
  for (size_t i = 0; i < common; ++i) {
    const ir::Node& a = inferred.nodes[i];
    const ir::Node& b = actual.nodes[i];
    if (a.op != b.op || a.outputs.size() != b.outputs.size()) {
      ShapeMismatch m = at(inferred, a.id);
      m.actual = fmt::format("the real run computes {} with {} outputs here, inference {} with {} (the graphs part "
                             "here; nothing after it is compared)",
                             b.op, b.outputs.size(), a.op, a.outputs.size());
      r.mismatches.push_back(std::move(m));
      return r;
    }
    for (size_t k = 0; k < a.outputs.size(); ++k) {
      const ir::Value& x = inferred.value(a.outputs[k]);
      const ir::Value& y = actual.value(b.outputs[k]);
      ++r.values;
      if (x.shape == y.shape && x.dtype == y.dtype) continue;
      ShapeMismatch m = at(inferred, a.id);
      m.output = static_cast<int>(k);
      m.value = x.name;
      m.inferred = typed(x);
      m.actual = typed(y);
      r.mismatches.push_back(std::move(m));
    }
  }
  if (inferred.nodes.size() != actual.nodes.size()) {
    ShapeMismatch m = at(inferred, common < inferred.nodes.size() ? static_cast<ir::NodeId>(common) : ir::kNone);
    m.actual = fmt::format("the real run has {} nodes, inference {}", actual.nodes.size(), inferred.nodes.size());
    r.mismatches.push_back(std::move(m));
  }
  return r;
}

ShapeCheckResult checkShapes(const std::string& path, const ImportOptions& options) {
  ImportOptions meta = options;
  meta.execution = ImportOptions::Execution::Meta;
  meta.metaWeights = false;  // the same weights as the real run (a weight's values may fold)
  const ir::Graph inferred = importModel(path, meta);
  ImportOptions real = options;
  real.execution = ImportOptions::Execution::Real;
  ir::Graph actual;
  try {
    actual = importModel(path, real);
  } catch (const ImportCancelled&) {
    throw;
  } catch (const Error& e) {
    // Inference went through and LibTorch's kernels stop: the worker would stop there too.
    ShapeCheckResult r;
    ShapeMismatch m;
    m.actual = fmt::format("inference went through, but running it on real tensors fails: {}", e.what());
    r.mismatches.push_back(std::move(m));
    return r;
  }
  return compareShapes(inferred, actual);
}

std::optional<std::vector<ir::Shape>> localOutputShapes(const ir::Graph& g, const ir::Node& n,
                                                        const std::vector<ir::Shape>& inputShapes,
                                                        int64_t cpuLimitBytes) {
  if (n.op.rfind("aten::", 0) != 0 || shapeDependsOnValues(g, n)) return std::nullopt;
  std::shared_ptr<torch::jit::Operator> op;
  if (n.inplace) op = findOperator(baseOp(n.op), n.overload);
  if (!op) op = findOperator(n.op, n.overload);
  if (!op) return std::nullopt;
  const std::vector<ir::ValueId> ins = n.tensorInputs();
  if (ins.size() != inputShapes.size()) return std::nullopt;
  int64_t bytes = 0;
  for (size_t i = 0; i < ins.size(); ++i)
    bytes += ir::numel(inputShapes[i]) * static_cast<int64_t>(ir::dtypeSize(g.value(ins[i]).dtype));
  const bool cpu = bytes <= cpuLimitBytes && n.cost.flops <= kCpuFlops;
  at::NoGradGuard noGrad;
  try {
    std::vector<at::Tensor> tensors;
    for (size_t i = 0; i < ins.size(); ++i) {
      const auto options = at::TensorOptions().dtype(toScalarType(g.value(ins[i]).dtype));
      tensors.push_back(cpu ? at::zeros(inputShapes[i], options) : at::empty(inputShapes[i], options.device(at::kMeta)));
    }
    torch::jit::Stack stack;
    size_t next = 0;
    for (const ir::Arg& a : n.args) {
      if (a.kind == ir::Arg::Kind::Constant) {
        stack.push_back(constantValue(a));
        if (!cpu && a.type.find("Device") != std::string::npos) stack.back() = c10::Device(c10::kMeta);
      } else if (a.kind == ir::Arg::Kind::Tensor) {
        stack.push_back(tensors.at(next++));
      } else if (a.type.find("Optional") != std::string::npos || a.type.find('?') != std::string::npos) {
        c10::List<c10::optional<at::Tensor>> list;
        const size_t size = a.values.size() + a.noneAt.size();
        for (size_t k = 0; k < size; ++k) {
          if (std::find(a.noneAt.begin(), a.noneAt.end(), static_cast<int>(k)) != a.noneAt.end())
            list.push_back(c10::nullopt);
          else
            list.push_back(tensors.at(next++));
        }
        stack.push_back(list);
      } else {
        c10::List<at::Tensor> list;
        for (size_t k = 0; k < a.values.size(); ++k) list.push_back(tensors.at(next++));
        stack.push_back(list);
      }
    }
    if (stack.size() != op->schema().arguments().size()) return std::nullopt;
    op->getOperation()(stack);
    std::vector<ir::Shape> out;
    for (const c10::IValue& v : stack) {
      if (v.isTensor())
        out.push_back(v.toTensor().sizes().vec());
      else if (v.isTensorList())
        for (const at::Tensor& t : v.toTensorVector()) out.push_back(t.sizes().vec());
    }
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace hap::import
