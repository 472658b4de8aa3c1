// Every sharding rule proven against its op, mechanically (../shared/DESIGN.md §3 "Soundness"): for
// every registered op and every variant its rule yields, random shapes and random uneven lengths
// (zero included) on 1-4 simulated ranks. Each rank runs the runtime's own step kernel
// (step_kernel.h, what hap-worker runs) on the pieces the variant's pre-condition describes, on a
// thread of its own with a real Gloo communicator over loopback, forward and backward; the results
// are compared with the single-device op under the variant's post-condition:
//   output I: every rank holds the output;  G(d): rank j holds its slice;  R: the ranks' partials
//   sum to it. Gradients by the duality (collectives.h): an I output's gradient arrives as
//   partial sums, a G(d) output's as slices, an R output's whole; then an I input's gradients
//   must sum to the input's gradient, a G(d) input's be its slices, an R (or I*: SFB) input's be
//   whole on every rank. Inputs the op writes in place (batch norm's running statistics) must
//   hold the single-device op's values afterwards, piece by piece.
// The kernel is told each variant's declared execution (rules::Execution, as the planner copies
// it into the plan step), and it reads nothing else to adjust the op: a variant that needs an
// adjustment and declares none fails here. Each declaration is also shown needed: the same
// variant run with its execution forced to Plain must fail on some sample (a random op with
// whole forms only is exempt: its draws change only in a replicated plan, which tst_exactness
// runs).
// Computation is in float64, so float rounding cannot hide an error (tolerance 1e-7 of the
// value's scale). What it does not cover: ops without a rule (planned replicated), the planner's
// conversions between forms (tst_collectives checks those), and the whole-program composition
// (tst_exactness and the corpus check).
// HAP_SOUNDNESS_TRIALS (default 3) sets the random trials per sample; HAP_SOUNDNESS_OPS a
// comma-separated list of ops to restrict a run to.
#include <QtTest>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "engine/import/model_tensors.h"
#include "engine/ir/segments.h"
#include "engine/rules/families.h"
#include "engine/rules/rule.h"
#include "engine/synth/dim_classes.h"
#include "engine/rules/relation.h"
#include "runtime/comm/communicator.h"
#include "runtime/core/counter_dropout.h"
#include "runtime/launch/free_port.h"
#include "runtime/core/step_kernel.h"
#include "tests/runtime/soundness/op_samples.h"

using namespace hap;
using rules::Rel;

namespace {

constexpr int kMaxRanks = 4;

// N ranks on threads of this process, each with a Gloo communicator over loopback.
class ThreadWorld {
 public:
  explicit ThreadWorld(int n) : envs_(static_cast<size_t>(n)), comms_(static_cast<size_t>(n)) {
    const int port = n > 1 ? runtime::freeTcpPort() : 0;
    for (int r = 0; r < n; ++r) {
      runtime::WorkerEnv& e = envs_[static_cast<size_t>(r)];
      e.rank = r;
      e.localRank = r;
      e.worldSize = n;
      e.masterPort = port;
      e.timeout = std::chrono::seconds(20);
    }
    run([&](int r, runtime::Communicator*) { comms_[static_cast<size_t>(r)] = runtime::Communicator::connect(envs_[static_cast<size_t>(r)]); },
        /*connected=*/false);
  }
  int size() const { return static_cast<int>(comms_.size()); }
  // Runs fn(rank, communicator) on one thread per rank; rethrows the first exception.
  void run(const std::function<void(int, runtime::Communicator*)>& fn, bool connected = true) {
    std::vector<std::exception_ptr> errors(comms_.size());
    std::vector<std::thread> threads;
    for (int r = 0; r < size(); ++r)
      threads.emplace_back([&, r] {
        try {
          fn(r, connected ? comms_[static_cast<size_t>(r)].get() : nullptr);
        } catch (...) {
          errors[static_cast<size_t>(r)] = std::current_exception();
        }
      });
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }

 private:
  std::vector<runtime::WorkerEnv> envs_;
  std::vector<std::unique_ptr<runtime::Communicator>> comms_;
};

std::string errorText(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const c10::Error& c) {
    return c.what_without_backtrace();
  } catch (const std::exception& x) {
    return x.what();
  }
  return "unknown error";
}

std::shared_ptr<torch::jit::Operator> findOperator(const std::string& op, const std::string& overload) {
  for (const auto& candidate : torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(op)))
    if (candidate->schema().overload_name() == overload) return candidate;
  return nullptr;
}

ir::Constant toConstant(const c10::IValue& v) {
  if (v.isNone()) return std::monostate{};
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return v.toDouble();
  if (v.isString()) return v.toStringRef();
  if (v.isIntList()) return v.toIntVector();
  if (v.isDoubleList()) return v.toDoubleVector();
  if (v.isDevice()) return v.toDevice().str();
  std::ostringstream os;
  os << v;
  return os.str();
}

ir::DType dtypeOf(at::ScalarType t) {
  for (ir::DType d : {ir::DType::Float32, ir::DType::Float64, ir::DType::Float16, ir::DType::BFloat16, ir::DType::Int64,
                      ir::DType::Int32, ir::DType::Int16, ir::DType::Int8, ir::DType::UInt8, ir::DType::Bool})
    if (import::toScalarType(d) == t) return d;
  throw std::runtime_error(fmt::format("unsupported dtype {}", c10::toString(t)));
}

at::Tensor makeData(const test::TensorSpec& s, std::mt19937_64& gen) {
  const at::ScalarType type = import::toScalarType(s.dtype);
  std::vector<double> values(static_cast<size_t>(ir::numel(s.shape)));
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit;
  for (double& v : values) {
    switch (s.domain) {
      case test::Domain::Normal: v = normal(gen); break;
      case test::Domain::Positive: v = 0.5 + 1.5 * unit(gen); break;
      case test::Domain::Probability: v = 0.05 + 0.9 * unit(gen); break;
      case test::Domain::Index: v = std::floor(unit(gen) * static_cast<double>(s.bound)); break;
      case test::Domain::Targets:
        v = unit(gen) < 0.25 ? static_cast<double>(s.ignore) : std::floor(unit(gen) * static_cast<double>(s.bound));
        break;
      case test::Domain::Mask: v = unit(gen) < 0.5 ? 1 : 0; break;
      case test::Domain::Integer: v = std::floor(unit(gen) * 9) - 4; break;
      case test::Domain::Offsets:
      case test::Domain::OffsetsToEnd: v = std::floor(unit(gen) * static_cast<double>(s.bound + 1)); break;
      case test::Domain::Full: v = static_cast<double>(s.bound); break;
    }
  }
  if ((s.domain == test::Domain::Offsets || s.domain == test::Domain::OffsetsToEnd) && !values.empty()) {
    std::sort(values.begin(), values.end());
    values.front() = 0;
    if (s.domain == test::Domain::OffsetsToEnd) values.back() = static_cast<double>(s.bound);
  }
  return at::tensor(values, at::kDouble).reshape(s.shape).to(type);
}

// The node of one sample, its graph and data, and the single-device results.
struct Case {
  ir::Graph g;
  ir::NodeId node = ir::kNone;
  std::vector<at::Tensor> inputs;      // per tensor input (Node::tensorInputs order), before the op
  std::vector<bool> differentiable;    // per tensor input: a floating input or parameter
  std::vector<at::Tensor> after;       // per tensor input, after the op (in-place writes)
  std::vector<at::Tensor> outputs;     // per output
  std::vector<at::Tensor> outputGrads;  // per output: the seed of backward (undefined: none)
  std::vector<at::Tensor> inputGrads;   // per tensor input (undefined: none)
  bool random = false;
  bool undefinedValues = false;  // empty, empty_like, ...: only the shapes are defined
  bool lowPrecision = false;     // a tensor of the case is not float64: float32 tolerances
  uint64_t seed = 0;
  std::string text;  // the call, for messages
};

// Calls the node's operator on `inputs` (tensor inputs in order, used as given: in-place ops
// write into them); returns the tensor outputs.
std::vector<at::Tensor> callOperator(const ir::Graph& g, const ir::Node& n, const std::vector<at::Tensor>& inputs) {
  // Dropout's single-device op is the counter-based one whose pieces the ranks draw.
  const std::string counter = runtime::counterDropoutOp(n.op);
  std::shared_ptr<torch::jit::Operator> op = counter.empty() ? findOperator(n.op, n.overload) : findOperator(counter, "");
  std::vector<c10::IValue> stack;
  size_t next = 0;
  for (const ir::Arg& a : n.args) {
    if (a.kind == ir::Arg::Kind::Tensor) {
      stack.emplace_back(inputs[next++]);
    } else if (a.kind == ir::Arg::Kind::TensorList) {
      std::vector<at::Tensor> list(inputs.begin() + static_cast<long>(next),
                                   inputs.begin() + static_cast<long>(next + a.values.size()));
      next += a.values.size();
      // Tensor?[] (annotated "List[Optional[Tensor]]"): the Nones where noneAt says.
      if (!a.noneAt.empty() || a.type.find("Optional") != std::string::npos || a.type.find('?') != std::string::npos) {
        c10::List<c10::optional<at::Tensor>> optional;
        size_t k = 0;
        for (size_t at = 0; at < list.size() + a.noneAt.size(); ++at) {
          if (std::find(a.noneAt.begin(), a.noneAt.end(), static_cast<int>(at)) != a.noneAt.end())
            optional.push_back(c10::nullopt);
          else
            optional.push_back(list[k++]);
        }
        stack.emplace_back(optional);
      } else {
        stack.emplace_back(list);
      }
    } else {
      // The kernel's own conversion of constants (step_kernel.cpp) is what is under test; here
      // the schema's types decide.
      std::visit(
          [&](const auto& c) {
            using T = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<T, std::monostate>) stack.emplace_back();
            else if constexpr (std::is_same_v<T, int64_t>) {
              if (a.type.rfind("float", 0) == 0) stack.emplace_back(static_cast<double>(c));
              else stack.emplace_back(c);
            } else if constexpr (std::is_same_v<T, std::vector<double>>) stack.emplace_back(c10::List<double>(c));
            else if constexpr (std::is_same_v<T, std::vector<bool>>) {
              c10::List<bool> l;
              for (bool x : c) l.push_back(x);
              stack.emplace_back(l);
            } else stack.emplace_back(c);
          },
          a.constant);
    }
  }
  op->getOperation()(stack);
  std::vector<at::Tensor> out;
  for (const c10::IValue& v : stack) {
    if (v.isTensor()) out.push_back(v.toTensor());
    else if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
  }
  (void)g;
  return out;
}

std::mutex gRandomMutex;  // random ops draw from the process's one CPU generator: one rank at a time

// The single-device op on full tensors, forward and backward with random output gradients; on
// first use also adds the node's outputs to the graph.
void runReference(Case& c, const std::vector<at::Tensor>& data) {
  ir::Node& n = c.g.node(c.node);
  // Leaves for the differentiable inputs, every input cloned so that an in-place op writes into
  // the clone.
  std::vector<at::Tensor> leaves, work;
  for (size_t k = 0; k < data.size(); ++k) {
    at::Tensor leaf = data[k].clone();
    if (c.differentiable[k]) leaf.set_requires_grad(true);
    leaves.push_back(leaf);
    work.push_back(c.differentiable[k] ? leaf.clone() : leaf);
  }
  {
    std::lock_guard lock(gRandomMutex);
    at::manual_seed(c.seed);
    c.outputs = callOperator(c.g, n, work);
  }
  c.after.clear();
  for (size_t k = 0; k < work.size(); ++k) c.after.push_back(work[k].detach().clone());
  for (const at::Tensor& t : c.outputs) c.lowPrecision = c.lowPrecision || (t.is_floating_point() && t.scalar_type() != at::kDouble);
  if (n.outputs.empty()) {
    for (size_t o = 0; o < c.outputs.size(); ++o) {
      const ir::ValueId id = c.g.addValue(ir::ValueKind::Activation, fmt::format("out{}", o), c.outputs[o].sizes().vec(),
                                          dtypeOf(c.outputs[o].scalar_type()));
      c.g.value(id).producer = c.node;
      c.g.value(id).producerOutput = static_cast<int32_t>(o);
      c.g.node(c.node).outputs.push_back(id);
    }
  }

  // Backward with random output gradients.
  c.outputGrads.clear();
  c.inputGrads.clear();
  std::vector<at::Tensor> roots, seeds, wrt;
  for (const at::Tensor& out : c.outputs) {
    at::Tensor seed;
    if (out.requires_grad()) {
      seed = at::randn(out.sizes(), at::TensorOptions().dtype(at::kDouble)).to(out.scalar_type());
      roots.push_back(out);
      seeds.push_back(seed);
    }
    c.outputGrads.push_back(seed);
  }
  for (size_t k = 0; k < leaves.size(); ++k)
    if (c.differentiable[k]) wrt.push_back(leaves[k]);
  std::vector<at::Tensor> grads;
  if (!roots.empty() && !wrt.empty())
    grads = torch::autograd::grad(roots, wrt, seeds, /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
  size_t next = 0;
  for (size_t k = 0; k < leaves.size(); ++k) {
    at::Tensor g;
    if (c.differentiable[k] && next < grads.size()) g = grads[next];
    if (c.differentiable[k]) ++next;
    c.inputGrads.push_back(g);
  }
  for (at::Tensor& o : c.outputs) o = o.detach();
}

// Builds the sample's node (arguments in schema order, defaults filled in) and runs the op on
// full tensors, forward and backward.
Case buildCase(const test::OpSample& sample, std::mt19937_64& gen) {
  Case c;
  c.seed = gen();
  std::shared_ptr<torch::jit::Operator> op = findOperator(sample.op, sample.overload);
  if (!op) throw std::runtime_error(fmt::format("no operator {}.{}", sample.op, sample.overload));
  const c10::FunctionSchema& schema = op->schema();
  ir::Node n;
  n.op = sample.op;
  n.overload = sample.overload;
  std::vector<at::Tensor> data;
  std::map<std::string, const test::ArgValue*> given;
  for (const auto& [name, value] : sample.args) given[name] = &value;
  std::ostringstream text;
  text << sample.op << (sample.overload.empty() ? "" : "." + sample.overload) << "(";
  auto addTensor = [&](const test::TensorSpec& s, const std::string& name) {
    const ir::ValueId id = c.g.addValue(s.kind, name, s.shape, s.dtype);
    if (s.kind == ir::ValueKind::Input) c.g.inputs.push_back(id);
    if (s.kind == ir::ValueKind::Parameter) c.g.parameters.push_back(id);
    if (s.kind == ir::ValueKind::Buffer) c.g.buffers.push_back(id);
    data.push_back(makeData(s, gen));
    c.differentiable.push_back(ir::isFloating(s.dtype) && s.kind != ir::ValueKind::Buffer);
    text << name << ir::formatShape(s.shape) << (s.dtype == ir::DType::Float64 ? std::string() : ":" + std::string(ir::dtypeName(s.dtype)));
    return id;
  };
  for (size_t i = 0; i < schema.arguments().size(); ++i) {
    const c10::Argument& arg = schema.arguments()[i];
    ir::Arg a;
    a.name = arg.name();
    a.type = arg.type()->annotation_str();
    if (i > 0) text << ", ";
    if (arg.alias_info() && arg.alias_info()->isWrite() && i == 0) n.inplace = true;
    auto it = given.find(arg.name());
    if (it != given.end()) {
      given.erase(it);
      const test::ArgValue& v = *it->second;
      if (const auto* tensor = std::get_if<test::TensorSpec>(&v)) {
        a.kind = ir::Arg::Kind::Tensor;
        a.values = {addTensor(*tensor, arg.name())};
      } else if (const auto* list = std::get_if<std::vector<test::TensorSpec>>(&v)) {
        a.kind = ir::Arg::Kind::TensorList;
        text << "[";
        for (size_t k = 0; k < list->size(); ++k) {
          if ((*list)[k].absent) {
            a.noneAt.push_back(static_cast<int>(k));
            text << (k > 0 ? ", " : "") << "None";
            continue;
          }
          a.values.push_back(addTensor((*list)[k], fmt::format("{}{}", arg.name(), k)));
        }
        text << "]";
      } else {
        a.constant = std::get<ir::Constant>(v);
        text << arg.name() << "=" << ir::formatConstant(a.constant);
      }
    } else if (arg.default_value()) {
      a.constant = toConstant(*arg.default_value());
      text << arg.name() << "=" << ir::formatConstant(a.constant);
    } else if (arg.type()->kind() == c10::TypeKind::OptionalType) {
      a.constant = std::monostate{};
      text << arg.name() << "=None";
    } else {
      throw std::runtime_error(fmt::format("the sample of {} does not set argument '{}'", sample.op, arg.name()));
    }
    n.args.push_back(std::move(a));
  }
  if (!given.empty())
    throw std::runtime_error(fmt::format("the sample of {} sets '{}', which the schema lacks", sample.op, given.begin()->first));
  text << ")";
  c.text = text.str();
  c.random = rules::isRandomOp(sample.op);
  c.undefinedValues = sample.op.find("empty") != std::string::npos;
  for (const at::Tensor& t : data) c.lowPrecision = c.lowPrecision || (t.is_floating_point() && t.scalar_type() != at::kDouble);
  c.inputs = data;

  c.node = c.g.addNode(std::move(n));
  try {
    runReference(c, data);
  } catch (const std::exception& e) {
    // An op without a derivative (floor_divide, randint_like): compare it without gradients.
    const std::string what = e.what();
    if (what.find("not implemented") == std::string::npos && what.find("not differentiable") == std::string::npos)
      throw;
    c.differentiable.assign(c.differentiable.size(), false);
    runReference(c, data);
  }
  for (at::Tensor& o : c.outputs) o = o.detach();
  return c;
}

// hap::reshard (the planner's identity at segment boundaries, no JIT operator): its input in, the
// same values out.
Case reshardCase(test::Rand& r, std::mt19937_64& gen) {
  Case c;
  c.seed = gen();
  const ir::Shape shape = r.shape(static_cast<int>(r.range(1, 3)));
  const ir::ValueId x = c.g.addValue(ir::ValueKind::Input, "input", shape, ir::DType::Float64);
  c.g.inputs.push_back(x);
  ir::Node n;
  n.op = ir::kReshardOp;
  ir::Arg a;
  a.name = "input";
  a.type = "Tensor";
  a.kind = ir::Arg::Kind::Tensor;
  a.values = {x};
  n.args.push_back(a);
  n.outputs.push_back(c.g.addValue(ir::ValueKind::Activation, "out0", shape, ir::DType::Float64));
  c.node = c.g.addNode(std::move(n));
  c.inputs = {makeData({shape}, gen)};
  c.differentiable = {true};
  c.after = c.inputs;
  c.outputs = c.inputs;
  c.outputGrads = {at::randn(shape, at::kDouble)};
  c.inputGrads = c.outputGrads;
  c.text = fmt::format("hap::reshard(input{})", ir::formatShape(shape));
  return c;
}

// Random lengths for every G fact of variant v: linked dimensions share one class (as the
// planner's theory links them; a reshard's input and output are cut independently), whose units
// are split among n ranks at random, zero pieces included (unless `emptyPieces` is false: then
// only where a class has fewer units than ranks). Empty when the facts cannot be linked (the
// planner drops such variants).
std::optional<std::map<std::pair<ir::ValueId, int>, std::vector<int64_t>>> randomLengths(
    const ir::Graph& g, const ir::Node& n, const rules::Variant& v, int ranks, std::mt19937_64& gen,
    bool emptyPieces = true) {
  std::vector<synth::DimRef> dims;
  const std::vector<ir::ValueId> ins = n.tensorInputs();
  for (size_t i = 0; i < v.inputs.size(); ++i)
    if (rules::isGather(v.inputs[i])) dims.push_back({ins[i], v.inputs[i]});
  for (size_t o = 0; o < v.outputs.size(); ++o)
    if (rules::isGather(v.outputs[o])) dims.push_back({n.outputs[o], v.outputs[o]});
  synth::DimClasses classes(g);
  if (n.op != ir::kReshardOp) {
    for (size_t i = 1; i < dims.size(); ++i)
      if (!classes.compatible(dims[0], dims[i])) return std::nullopt;
    for (size_t i = 1; i < dims.size(); ++i) classes.link(dims[0], dims[i]);
  }
  std::map<int, std::vector<int64_t>> unitsOfClass;
  std::map<std::pair<ir::ValueId, int>, std::vector<int64_t>> lengths;
  for (const synth::DimRef& d : dims) {
    const int cls = classes.classOf(d);
    auto [it, fresh] = unitsOfClass.try_emplace(cls);
    if (fresh) {
      // A random split of the class's units: each rank a random weight, some of them zero.
      std::vector<double> shares(static_cast<size_t>(ranks));
      std::uniform_real_distribution<double> unit;
      for (double& s : shares) s = !emptyPieces ? 0.2 + unit(gen) : unit(gen) < 0.2 ? 0 : unit(gen);
      double total = std::accumulate(shares.begin(), shares.end(), 0.0);
      if (total == 0) shares[gen() % shares.size()] = total = 1;
      for (double& s : shares) s /= total;
      it->second = synth::DimClasses::roundUnits(classes.units(cls), shares);
    }
    std::vector<int64_t> l = it->second;
    for (int64_t& x : l) x *= classes.unitSize(d);
    lengths[{d.value, d.dim}] = l;
  }
  return lengths;
}

at::Tensor pieceOf(const at::Tensor& full, Rel rel, const std::vector<int64_t>& lengths, int rank) {
  if (!rules::isGather(rel)) return full;
  return runtime::localPiece(full, rel, lengths, rank);
}

// Random partials of `full` for n ranks (their sum is `full`).
std::vector<at::Tensor> partials(const at::Tensor& full, int n) {
  std::vector<at::Tensor> out;
  at::Tensor rest = full.clone();
  for (int r = 0; r + 1 < n; ++r) {
    at::Tensor p = full.is_floating_point() ? at::randn_like(full.to(at::kDouble)).to(full.scalar_type())
                                            : at::randint(-3, 4, full.sizes(), full.options());
    out.push_back(p);
    rest = rest - p;
  }
  out.push_back(rest);
  return out;
}

// Whether `got` matches `want`: exactly for integers and bools, else within 1e-7 of the scale
// of `want` (float64 throughout; a float32 result 1e-5). A rule's error is of the order of the
// values; float64 rounding, even through an op's less stable in-place backward, stays far below.
std::optional<std::string> mismatch(const at::Tensor& got, const at::Tensor& want, bool lowPrecision = false) {
  if (!got.defined() || !want.defined()) return std::string("missing");
  if (!got.sizes().equals(want.sizes()))
    return fmt::format("shape {} instead of {}", ir::formatShape(got.sizes().vec()), ir::formatShape(want.sizes().vec()));
  if (want.numel() == 0) return std::nullopt;
  if (!want.is_floating_point()) {
    if (at::equal(got.to(want.scalar_type()), want)) return std::nullopt;
    return fmt::format("differs in {} of {} elements", (got.to(want.scalar_type()) != want).sum().item<int64_t>(),
                       want.numel());
  }
  const at::Tensor a = got.detach().to(at::kDouble), w = want.detach().to(at::kDouble);
  lowPrecision = lowPrecision || want.scalar_type() != at::kDouble;
  const double scale = std::max(1.0, w.abs().nan_to_num(0, 0, 0).max().item<double>());
  const double tol = (lowPrecision ? 1e-5 : 1e-7) * scale;
  const at::Tensor nanMismatch = a.isnan() != w.isnan();
  const at::Tensor diff = (a - w).abs().nan_to_num(0, 0, 0);
  const double worst = diff.max().item<double>();
  if (worst <= tol && !nanMismatch.any().item<bool>()) return std::nullopt;
  return fmt::format("max error {:.3g} (tolerance {:.3g}){}", worst, tol,
                     nanMismatch.any().item<bool>() ? ", NaN where the op has none" : "");
}

std::string formatLengths(const std::map<std::pair<ir::ValueId, int>, std::vector<int64_t>>& lengths, const ir::Graph& g) {
  std::string s;
  for (const auto& [key, l] : lengths) {
    s += fmt::format("{}{}[{}]: ", s.empty() ? "" : "; ", g.value(key.first).name, key.second);
    for (size_t i = 0; i < l.size(); ++i) s += fmt::format("{}{}", i ? "," : "", l[i]);
  }
  return s;
}

// Whether each declared execution (rules::Execution, what the step kernel does beyond the op) is
// needed: per op and execution, whether one of the op's variants that declare it, run with the
// execution forced to Plain, failed the comparison. The step kernel reads nothing but the
// declaration, so a rule that dropped it would compute the forced run's values and fail as it
// does.
struct Necessity {
  struct Declared {
    std::set<std::string> variants;
    bool shown = false;  // a forced Plain run failed
  };
  std::map<std::pair<std::string, rules::Execution>, Declared> declared;

  // Declarations the comparison cannot show needed, with why: the plain op gives every piece's
  // values too (the adjustment is the one every op of its kind gets).
  static std::optional<std::string_view> notShown(const std::string& op, rules::Execution e) {
    using E = rules::Execution;
    static const std::map<std::pair<std::string_view, E>, std::string_view> kNotShown = {
        {{"aten::slice", E::WholeCutPiece}, "slice clamps its end to the piece (narrow does not)"},
        {{"aten::flatten", E::ReshapeToPiece}, "no size argument"},
        {{"aten::unsqueeze", E::ReshapeToPiece}, "no size argument"},
        {{"aten::unsqueeze_", E::ReshapeToPiece}, "no size argument"},
        {{"aten::view_as", E::ReshapeToPiece}, "`other` holds the output's cut: the local shape"},
        {{"aten::reshape_as", E::ReshapeToPiece}, "`other` holds the output's cut: the local shape"},
        {{"aten::expand_as", E::ExpandToPiece}, "`other` holds the output's cut: the local shape"},
    };
    auto it = kNotShown.find({op, e});
    return it == kNotShown.end() ? std::nullopt : std::optional(it->second);
  }
  // A random op's variant with whole forms only: its draws differ from the op's own only in a
  // replicated plan (the global batch's numbers), which this test does not run (tst_exactness
  // does).
  static bool replicatedOnly(const rules::Variant& v) {
    const bool random = v.execution == rules::Execution::RandomDraws ||
                        v.execution == rules::Execution::DropoutMask;
    auto cut = [](const std::vector<Rel>& rels) { return std::any_of(rels.begin(), rels.end(), rules::isGather); };
    return random && !cut(v.inputs) && !cut(v.outputs);
  }
  // The record of v's declaration, or null when there is nothing to show.
  Declared* of(const ir::Node& n, const rules::Variant& v) {
    if (v.execution == rules::Execution::Plain || replicatedOnly(v) || notShown(n.op, v.execution)) return nullptr;
    Declared& d = declared[{n.op, v.execution}];
    d.variants.insert(v.name);
    return &d;
  }
  // One failure per declaration that no forced run showed needed.
  void report(std::vector<std::string>& failures) const {
    const auto shown = std::count_if(declared.begin(), declared.end(), [](const auto& d) { return d.second.shown; });
    qInfo("%zd of %zu declared executions (op, execution) shown needed by a run forced to plain", shown,
          declared.size());
    for (const auto& [key, d] : declared) {
      if (d.shown) continue;
      std::string variants;
      for (const std::string& v : d.variants) variants += (variants.empty() ? "'" : ", '") + v + "'";
      failures.push_back(fmt::format("{} under {} declares execution {}, but with it forced to plain the step kernel "
                                     "still computes the single-device op's values on every sample: the declaration "
                                     "is not needed, or no sample needs it",
                                     key.first, variants, rules::executionName(key.second)));
    }
  }
};

bool anyEmptyPiece(const std::map<std::pair<ir::ValueId, int>, std::vector<int64_t>>& lengths) {
  for (const auto& [key, l] : lengths)
    if (std::find(l.begin(), l.end(), 0) != l.end()) return true;
  return false;
}

class Checker {
 public:
  Checker() {
    for (int n = 1; n <= kMaxRanks; ++n) worlds_.push_back(std::make_unique<ThreadWorld>(n));
  }

  // Checks every variant of one case on 1-4 ranks; appends failures. A variant that declares an
  // execution other than Plain is also run with Plain, until a run shows the declaration needed
  // (`necessity`).
  void check(const Case& c, std::mt19937_64& gen, std::vector<std::string>& failures, std::set<std::string>& variantsSeen,
             Necessity& necessity) {
    const ir::Node& n = c.g.node(c.node);
    for (const rules::Variant& v : rules::variantsFor(c.g, n)) {
      variantsSeen.insert(v.name);
      bool sound = true;
      for (int ranks = 1; ranks <= kMaxRanks && sound; ++ranks) {
        auto lengths = randomLengths(c.g, n, v, ranks, gen);
        if (!lengths) break;  // not linkable: the planner never uses it
        if (auto problem = runVariant(c, v, v.execution, ranks, *lengths)) {
          failures.push_back(fmt::format("{} under {} on {} rank{} ({}): {}", c.text, rules::formatVariant(v), ranks,
                                         ranks == 1 ? "" : "s", formatLengths(*lengths, c.g), *problem));
          sound = false;  // one failure per variant is enough
        }
      }
      Necessity::Declared* declared = necessity.of(n, v);
      if (sound && declared && !declared->shown) declared->shown = failsPlain(c, v);
    }
  }

 private:
  struct RankResult {
    std::vector<at::Tensor> outputs, inputGrads, inputsAfter;
  };

  // Whether variant v of the case, its execution forced to Plain, fails on 2-4 ranks with random
  // lengths. No piece is empty there: an op the kernel does not adjust may crash on one (batch
  // norm of no elements divides by zero).
  std::optional<std::string> failsPlainOn(const Case& c, const rules::Variant& v, int ranks, std::mt19937_64& gen) {
    auto lengths = randomLengths(c.g, c.g.node(c.node), v, ranks, gen, /*emptyPieces=*/false);
    if (!lengths || anyEmptyPiece(*lengths)) return std::nullopt;
    return runVariant(c, v, rules::Execution::Plain, ranks, *lengths);
  }
  bool failsPlain(const Case& c, const rules::Variant& v) {
    std::mt19937_64 gen(c.seed + 1);  // (the case's own stream stays as it was)
    for (int ranks = 2; ranks <= kMaxRanks; ++ranks)
      if (failsPlainOn(c, v, ranks, gen)) return true;
    return false;
  }

  // Runs variant v of the case on `ranks` ranks with the given lengths, the step kernel told
  // `execution` (the variant's own, as the planner and plan::openPlan set it, or Plain to show it
  // needed); returns the first difference from the single-device op.
  std::optional<std::string> runVariant(const Case& c, const rules::Variant& v, rules::Execution execution, int ranks,
                                        const std::map<std::pair<ir::ValueId, int>, std::vector<int64_t>>& lengths) {
    const ir::Node& n = c.g.node(c.node);
    const std::vector<ir::ValueId> ins = n.tensorInputs();
    plan::PlanStep step;
    step.kind = plan::PlanStep::Kind::Compute;
    step.node = c.node;
    step.variant = v.name;
    step.sfb = v.sfb;
    step.execution = execution;
    auto form = [&](ir::ValueId id, Rel r) {
      plan::Form f{id, r, {}};
      if (rules::isGather(r)) f.lengths = lengths.at({id, r});
      return f;
    };
    for (size_t i = 0; i < ins.size(); ++i) step.inputs.push_back(form(ins[i], v.inputs[i]));
    for (size_t o = 0; o < n.outputs.size(); ++o) step.outputs.push_back(form(n.outputs[o], v.outputs[o]));

    // Each rank's inputs: I whole, G(d) its piece, R a random partial.
    std::vector<std::vector<at::Tensor>> local(static_cast<size_t>(ranks));
    for (size_t i = 0; i < ins.size(); ++i) {
      const Rel r = v.inputs[i];
      if (r == rules::kReduce && c.inputs[i].scalar_type() == at::kBool)
        return fmt::format("input {} is bool, which has no partial sums", i);
      std::vector<at::Tensor> parts = r == rules::kReduce ? partials(c.inputs[i], ranks) : std::vector<at::Tensor>{};
      for (int j = 0; j < ranks; ++j) {
        at::Tensor x = r == rules::kReduce ? parts[static_cast<size_t>(j)]
                                          : pieceOf(c.inputs[i], r, step.inputs[i].lengths, j).clone();
        if (c.differentiable[i]) x.set_requires_grad(true);
        local[static_cast<size_t>(j)].push_back(x);
      }
    }
    // Each rank's output gradients, by the duality: I partial, G(d) its piece, R whole.
    std::vector<std::vector<at::Tensor>> seeds(static_cast<size_t>(ranks));
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const at::Tensor& dy = c.outputGrads[o];
      std::vector<at::Tensor> parts =
          dy.defined() && v.outputs[o] == rules::kIdentity ? partials(dy, ranks) : std::vector<at::Tensor>{};
      for (int j = 0; j < ranks; ++j) {
        at::Tensor s;
        if (dy.defined())
          s = v.outputs[o] == rules::kIdentity ? parts[static_cast<size_t>(j)]
                                               : pieceOf(dy, v.outputs[o], step.outputs[o].lengths, j).contiguous();
        seeds[static_cast<size_t>(j)].push_back(s);
      }
    }

    std::vector<RankResult> results(static_cast<size_t>(ranks));
    ThreadWorld& world = *worlds_[static_cast<size_t>(ranks - 1)];
    try {
      world.run([&](int r, runtime::Communicator* comm) {
        runtime::KernelContext context;
        context.rank = r;
        runtime::StepKernel kernel(c.g, step, context);
        RankResult& res = results[static_cast<size_t>(r)];
        const std::vector<at::Tensor>& x = local[static_cast<size_t>(r)];
        if (c.random) {
          std::lock_guard lock(gRandomMutex);
          at::manual_seed(c.seed);
          res.outputs = kernel.run(x, *comm);
        } else {
          res.outputs = kernel.run(x, *comm);
        }
        std::vector<at::Tensor> roots, grads, wrt;
        for (size_t o = 0; o < res.outputs.size() && o < seeds[static_cast<size_t>(r)].size(); ++o) {
          const at::Tensor& s = seeds[static_cast<size_t>(r)][o];
          // An output off the autograd graph passes no gradient (an in-place comparison's, whose
          // reference gradient is zero); the input gradients are compared below all the same.
          if (!s.defined() || !res.outputs[o].requires_grad()) continue;
          roots.push_back(res.outputs[o]);
          grads.push_back(s);
        }
        for (size_t i = 0; i < x.size(); ++i)
          if (c.differentiable[i]) wrt.push_back(x[i]);
        std::vector<at::Tensor> g;
        if (!roots.empty() && !wrt.empty())
          g = torch::autograd::grad(roots, wrt, grads, false, false, /*allow_unused=*/true);
        size_t next = 0;
        for (size_t i = 0; i < x.size(); ++i) {
          res.inputGrads.push_back(c.differentiable[i] && next < g.size() ? g[next] : at::Tensor());
          if (c.differentiable[i]) ++next;
          res.inputsAfter.push_back(x[i].detach());
        }
        for (at::Tensor& o : res.outputs) o = o.detach();
      });
    } catch (...) {
      // A rank may have failed inside a collective: the others timed out. Start afresh.
      const std::string what = errorText(std::current_exception());
      worlds_[static_cast<size_t>(ranks - 1)] = std::make_unique<ThreadWorld>(ranks);
      return "the runtime failed: " + what;
    }

    // Forward: the post-condition of every output.
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const Rel r = v.outputs[o];
      if (r == rules::kReduce) {
        at::Tensor sum = results[0].outputs[o].to(at::kDouble);
        for (int j = 1; j < ranks; ++j) sum = sum + results[static_cast<size_t>(j)].outputs[o].to(at::kDouble);
        if (!c.outputs[o].is_floating_point()) sum = sum.to(c.outputs[o].scalar_type());
        if (auto m = mismatch(sum, c.outputs[o], c.lowPrecision)) return fmt::format("output {} (partials summed): {}", o, *m);
        continue;
      }
      for (int j = 0; j < ranks; ++j) {
        const at::Tensor want = pieceOf(c.outputs[o], r, step.outputs[o].lengths, j);
        const at::Tensor& got = results[static_cast<size_t>(j)].outputs[o];
        if (c.undefinedValues) {
          if (!got.sizes().equals(want.sizes()))
            return fmt::format("output {} on rank {}: shape {} instead of {}", o, j, ir::formatShape(got.sizes().vec()),
                               ir::formatShape(want.sizes().vec()));
          continue;
        }
        if (auto m = mismatch(got, want, c.lowPrecision))
          return fmt::format("output {} on rank {}: {}", o, j, *m);
      }
    }
    // In-place writes into inputs other than an in-place op's target.
    for (size_t i = n.inplace ? 1 : 0; i < ins.size(); ++i) {
      if (v.inputs[i] == rules::kReduce || at::equal(c.after[i], c.inputs[i])) continue;
      for (int j = 0; j < ranks; ++j) {
        const at::Tensor want = pieceOf(c.after[i], v.inputs[i], step.inputs[i].lengths, j);
        if (auto m = mismatch(results[static_cast<size_t>(j)].inputsAfter[i], want, c.lowPrecision))
          return fmt::format("input {} as written by the op, on rank {}: {}", i, j, *m);
      }
    }
    // Backward: the gradient of every differentiable input.
    for (size_t i = 0; i < ins.size(); ++i) {
      if (!c.differentiable[i]) continue;
      const at::Tensor want = c.inputGrads[i].defined() ? c.inputGrads[i] : at::zeros_like(c.inputs[i]);
      auto grad = [&](int j) {
        const at::Tensor& got = results[static_cast<size_t>(j)].inputGrads[i];
        return got.defined() ? got : at::zeros_like(local_shape(c, step, i, j));
      };
      const Rel r = v.inputs[i];
      if (r == rules::kIdentity) {
        at::Tensor sum = grad(0);
        for (int j = 1; j < ranks; ++j) sum = sum + grad(j);
        if (auto m = mismatch(sum, want, c.lowPrecision)) return fmt::format("gradient of input {} (partials summed): {}", i, *m);
      } else {
        for (int j = 0; j < ranks; ++j) {
          const at::Tensor piece = r == rules::kReduce || r == rules::kIdentitySfb
                                       ? want
                                       : pieceOf(want, r, step.inputs[i].lengths, j);
          if (auto m = mismatch(grad(j), piece, c.lowPrecision)) return fmt::format("gradient of input {} on rank {}: {}", i, j, *m);
        }
      }
    }
    return std::nullopt;
  }

  static at::Tensor local_shape(const Case& c, const plan::PlanStep& step, size_t i, int rank) {
    return pieceOf(c.inputs[i], step.inputs[i].rel, step.inputs[i].lengths, rank);
  }

  std::vector<std::unique_ptr<ThreadWorld>> worlds_;
};

int trials() {
  const char* t = std::getenv("HAP_SOUNDNESS_TRIALS");
  return t ? std::max(1, std::atoi(t)) : 3;
}

std::set<std::string> restriction() {
  std::set<std::string> ops;
  if (const char* only = std::getenv("HAP_SOUNDNESS_OPS")) {
    std::stringstream in(only);
    for (std::string op; std::getline(in, op, ',');) ops.insert(op.rfind("aten::", 0) == 0 || op.rfind("hap::", 0) == 0 ? op : "aten::" + op);
  }
  return ops;
}

using Family = std::vector<test::SampleEntry> (*)();

const std::vector<std::pair<const char*, Family>>& families() {
  static const std::vector<std::pair<const char*, Family>> list = {
      {"elementwise", test::elementwiseSamples},     {"random", test::randomSamples},
      {"reduction", test::reductionSamples},         {"normalization", test::normalizationSamples},
      {"softmax", test::softmaxSamples},             {"loss", test::lossSamples},
      {"embedding", test::embeddingSamples},         {"factory", test::factorySamples},
      {"shape", test::shapeSamples},                 {"matmul", test::matmulSamples},
      {"convolution", test::convolutionSamples},     {"indexing", test::indexingSamples},
      {"resampling", test::resamplingSamples},       {"activation", test::activationSamples},
      {"recurrent", test::recurrentSamples},         {"scatter", test::scatterSamples},
  };
  return list;
}

}  // namespace

class TstRuleSoundness : public QObject {
  Q_OBJECT

  std::unique_ptr<Checker> checker_;

  void checkFamily(Family family) {
    const std::set<std::string> only = restriction();
    std::vector<std::string> failures;
    std::map<std::string, std::set<std::string>> variantsByOp;
    Necessity necessity;
    int cases = 0;
    uint64_t seed = 1;
    for (const test::SampleEntry& e : family()) {
      if (!only.empty() && !only.count(e.op)) continue;
      for (int t = 0; t < trials(); ++t) {
        test::Rand rand(seed * 7919 + static_cast<uint64_t>(t));
        std::mt19937_64 gen(seed++ * 104729 + static_cast<uint64_t>(t));
        test::OpSample sample = e.make(rand);
        sample.op = e.op;
        Case c;
        try {
          c = buildCase(sample, gen);
        } catch (const std::exception& x) {
          failures.push_back(fmt::format("{}: the sample does not run on one device: {}", e.op, x.what()));
          break;
        }
        ++cases;
        checker_->check(c, gen, failures, variantsByOp[e.op], necessity);
      }
    }
    // A sample must exercise its rule: some variant besides replicate (scalar_tensor's output is
    // 0-dim by definition).
    for (const auto& [op, variants] : variantsByOp)
      if (variants.size() < 2 && op != "aten::scalar_tensor")
        failures.push_back(fmt::format("{}: its samples yield no variant but replicate; give it a sample its rule "
                                       "shards",
                                       op));
    necessity.report(failures);
    qInfo("%d cases, %zu failures", cases, failures.size());
    if (std::getenv("HAP_SOUNDNESS_VARIANTS"))  // which variants the samples reached, per op
      for (const auto& [op, variants] : variantsByOp)
        qInfo("%s: %s", op.c_str(), fmt::format("{}", fmt::join(variants, ", ")).c_str());
    const size_t shown = std::getenv("HAP_SOUNDNESS_ALL") ? failures.size() : 40;
    for (size_t k = 0; k < failures.size() && k < shown; ++k) std::printf("  %s\n", failures[k].c_str());
    if (failures.size() > shown)
      std::printf("  ... and %zu more (HAP_SOUNDNESS_ALL=1 shows all)\n", failures.size() - shown);
    std::fflush(stdout);
    QVERIFY2(failures.empty(), qPrintable(QString("%1 unsound cases (listed above)").arg(failures.size())));
  }

 private Q_SLOTS:
  void initTestCase() {
    at::set_num_threads(1);
    checker_ = std::make_unique<Checker>();
  }

  // Every registered op has samples (a rule without a test is not registered), and every sample
  // names a registered op.
  void everyRegisteredOpHasSamples() {
    std::set<std::string> sampled;
    for (const auto& [name, family] : families())
      for (const test::SampleEntry& e : family()) sampled.insert(e.op);
    QStringList missing, stale;
    for (std::string_view op : rules::registeredOps())
      if (op != ir::kReshardOp && !sampled.count(std::string(op))) missing << QString::fromUtf8(op.data(), static_cast<int>(op.size()));
    for (const std::string& op : sampled)
      if (!rules::findRule(op)) stale << QString::fromStdString(op);
    QVERIFY2(missing.isEmpty(), qPrintable("ops with a rule but no sample: " + missing.join(", ")));
    QVERIFY2(stale.isEmpty(), qPrintable("samples of ops without a rule: " + stale.join(", ")));
  }

  // The reshard between segments: an all-to-all from the input's lengths to the output's.
  void reshard() {
    std::vector<std::string> failures;
    std::set<std::string> variants;
    Necessity necessity;
    for (int t = 0; t < 4 * trials(); ++t) {
      test::Rand rand(31 + static_cast<uint64_t>(t));
      std::mt19937_64 gen(97 + static_cast<uint64_t>(t));
      checker_->check(reshardCase(rand, gen), gen, failures, variants, necessity);
    }
    necessity.report(failures);
    for (const std::string& f : failures) std::printf("  %s\n", f.c_str());
    QVERIFY2(failures.empty(), qPrintable(QString("%1 unsound cases (listed above)").arg(failures.size())));
    QVERIFY(variants.count("reshard") && variants.count("partial"));
  }

  void elementwise() { checkFamily(test::elementwiseSamples); }
  void random() { checkFamily(test::randomSamples); }
  void reduction() { checkFamily(test::reductionSamples); }
  void normalization() { checkFamily(test::normalizationSamples); }
  void softmax() { checkFamily(test::softmaxSamples); }
  void loss() { checkFamily(test::lossSamples); }
  void embedding() { checkFamily(test::embeddingSamples); }
  void factory() { checkFamily(test::factorySamples); }
  void shape() { checkFamily(test::shapeSamples); }
  void matmul() { checkFamily(test::matmulSamples); }
  void convolution() { checkFamily(test::convolutionSamples); }
  void indexing() { checkFamily(test::indexingSamples); }
  void resampling() { checkFamily(test::resamplingSamples); }
  void activation() { checkFamily(test::activationSamples); }
  void recurrent() { checkFamily(test::recurrentSamples); }
  void scatter() { checkFamily(test::scatterSamples); }
};

QTEST_GUILESS_MAIN(TstRuleSoundness)
#include "tst_rule_soundness.moc"
