#include "engine/import/functionalize.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <cassert>

#include "engine/base/error.h"
#include "engine/import/ivalue_constant.h"

namespace hap::import {
namespace {

namespace jit = torch::jit;
using c10::IValue;

std::optional<size_t> argIndex(const c10::FunctionSchema& schema, std::string_view name) {
  for (size_t i = 0; i < schema.arguments().size(); ++i)
    if (schema.arguments()[i].name() == name) return i;
  return std::nullopt;
}

// The int argument `name` (None and absent: nullopt).
std::optional<int64_t> intArg(const c10::FunctionSchema& schema, const std::vector<IValue>& args,
                              std::string_view name) {
  auto i = argIndex(schema, name);
  if (!i || *i >= args.size() || !args[*i].isInt()) return std::nullopt;
  return args[*i].toInt();
}

int64_t normalized(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

IValue optionalInt(const std::optional<int64_t>& v) { return v ? IValue(*v) : IValue(); }

std::string shortName(const std::string& op) { return op.substr(op.find("::") + 2); }

bool isAny(const std::string& op, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), op) != names.end();
}

}  // namespace

Functionalizer::Alias& Functionalizer::aliasOf(const Carried& t) {
  auto it = aliases_.find(t.id);
  if (it != aliases_.end()) return it->second;
  storages_.push_back({t, t.id, 0});
  Alias a;
  a.storage = static_cast<int>(storages_.size() - 1);
  a.carrier = t.carrier;
  return aliases_.emplace(t.id, std::move(a)).first->second;
}

std::string Functionalizer::describeChain(ir::ValueId v) const {
  std::vector<std::string> ops;
  for (auto it = aliases_.find(v); it != aliases_.end() && it->second.parent != ir::kNone;
       it = aliases_.find(it->second.parent))
    ops.push_back(steps_[static_cast<size_t>(it->second.step)].op);
  std::reverse(ops.begin(), ops.end());
  std::string out;
  for (const std::string& op : ops) out += (out.empty() ? "" : " -> ") + op;
  return out;
}

Functionalizer::Step Functionalizer::classify(const std::string& op,
                                              const c10::FunctionSchema& schema,
                                              const std::vector<IValue>& args, size_t selfArg,
                                              const at::Tensor& self, const at::Tensor& out,
                                              size_t outIndex,
                                              const std::vector<Carried>& outputs) const {
  Step s;
  s.op = op;
  const int64_t rank = self.dim();
  const std::string& overload = schema.overload_name();
  const bool sameElements = out.scalar_type() == self.scalar_type() && out.numel() == self.numel();
  auto intOr = [&](std::string_view name, int64_t fallback) {
    return intArg(schema, args, name).value_or(fallback);
  };
  if (outputs.size() > 1 && isAny(op, {"aten::chunk", "aten::split", "aten::split_with_sizes",
                                       "aten::tensor_split", "aten::unbind"})) {
    // Pieces of self along `dim`, in order.
    s.dim = normalized(intOr("dim", 0), rank);
    if (op == "aten::unbind") {
      s.kind = Step::Kind::Select;
      s.index = static_cast<int64_t>(outIndex);
      return s;
    }
    int64_t offset = 0;
    for (size_t j = 0; j < outIndex; ++j) offset += outputs[j].carrier.size(s.dim);
    s.kind = Step::Kind::Slice;
    s.start = offset;
    s.end = offset + out.size(s.dim);
    return s;
  }
  if (outputs.size() == 1) {
    if (op == "aten::slice" && overload == "Tensor") {
      s.kind = Step::Kind::Slice;
      s.dim = normalized(intOr("dim", 0), rank);
      s.start = intArg(schema, args, "start");
      s.end = intArg(schema, args, "end");
      s.step = intOr("step", 1);
      // x[:, 0] traces as x.slice(0, 0, INT64_MAX).select(1, 0): the whole first dimension is the
      // tensor itself (no scatter along the batch).
      if (out.sizes() == self.sizes() && s.step == 1 && s.start.value_or(0) == 0)
        s.kind = Step::Kind::Identity;
      return s;
    }
    if (op == "aten::narrow" && intArg(schema, args, "start")) {
      s.kind = Step::Kind::Slice;
      s.dim = normalized(intOr("dim", 0), rank);
      const int64_t start = normalized(intOr("start", 0), self.size(s.dim));
      s.start = start;
      s.end = start + intOr("length", 0);
      return s;
    }
    if (op == "aten::select" && overload == "int") {
      s.kind = Step::Kind::Select;
      s.dim = normalized(intOr("dim", 0), rank);
      s.index = intOr("index", 0);
      return s;
    }
    if (op == "aten::diagonal" && overload.empty()) {
      s.kind = Step::Kind::Diagonal;
      s.index = intOr("offset", 0);
      s.dim1 = normalized(intOr("dim1", 0), rank);
      s.dim2 = normalized(intOr("dim2", 1), rank);
      return s;
    }
    if (sameElements && ((op == "aten::view" && overload.empty()) ||
                         isAny(op, {"aten::reshape", "aten::_reshape_alias", "aten::view_as",
                                    "aten::reshape_as", "aten::flatten", "aten::unflatten",
                                    "aten::squeeze", "aten::unsqueeze"}))) {
      s.kind = out.sizes() == self.sizes() ? Step::Kind::Identity : Step::Kind::Reshape;
      s.sizes = out.sizes().vec();
      return s;
    }
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) perm[static_cast<size_t>(d)] = d;
    auto swap = [&](int64_t a, int64_t b) {
      std::swap(perm[static_cast<size_t>(normalized(a, rank))],
                perm[static_cast<size_t>(normalized(b, rank))]);
    };
    bool permutes = true;
    if (op == "aten::permute") {
      auto i = argIndex(schema, "dims");
      if (!i || !args[*i].isIntList()) return s;
      perm = args[*i].toIntVector();
      for (int64_t& d : perm) d = normalized(d, rank);
    } else if (isAny(op, {"aten::transpose", "aten::swapaxes", "aten::swapdims"}) &&
               args.size() >= 3 && args[1].isInt() && args[2].isInt()) {
      swap(args[1].toInt(), args[2].toInt());
    } else if (op == "aten::t") {
      if (rank == 2) swap(0, 1);
    } else if (isAny(op, {"aten::mT", "aten::adjoint"}) && rank >= 2) {
      swap(-1, -2);
    } else if (op == "aten::numpy_T") {
      std::reverse(perm.begin(), perm.end());
    } else {
      permutes = false;
    }
    if (permutes && out.scalar_type() == self.scalar_type()) {
      s.kind = Step::Kind::Permute;
      s.sizes = perm;
      return s;
    }
    if (op == "aten::detach") {
      s.kind = Step::Kind::Detach;
      return s;
    }
    if (out.sizes() == self.sizes() && out.strides() == self.strides() &&
        out.scalar_type() == self.scalar_type() && out.storage_offset() == self.storage_offset() &&
        isAny(op, {"aten::contiguous", "aten::to", "aten::type_as", "aten::alias",
                   "aten::expand", "aten::expand_as", "aten::view_as", "aten::reshape_as"})) {
      s.kind = Step::Kind::Identity;  // returned its input (to the same dtype, contiguous, ...)
      return s;
    }
  }
  // Another view (expand, unfold, view as another dtype, ...): replayed as it was made, never
  // written through.
  s.kind = Step::Kind::Other;
  s.overload = overload;
  s.args = args;
  s.selfArg = selfArg;
  s.replayable = outputs.size() == 1 && op != "aten::as_strided";
  for (size_t i = 0; i < args.size(); ++i)
    if (i != selfArg && (args[i].isTensor() || args[i].isTensorList())) s.replayable = false;
  return s;
}

void Functionalizer::view(const Carried& self, size_t selfArg, const std::string& op,
                          const c10::FunctionSchema& schema, const std::vector<IValue>& args,
                          const std::vector<Carried>& outputs, const Site& site) {
  (void)site;
  if (!self.carrier.defined()) return;
  const Alias parent = aliasOf(self);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Carried& out = outputs[k];
    if (!out.carrier.defined() || aliases_.count(out.id) || !out.carrier.is_alias_of(self.carrier))
      continue;
    steps_.push_back(classify(op, schema, args, selfArg, self.carrier, out.carrier, k, outputs));
    Alias a;
    a.storage = parent.storage;
    a.version = parent.version;
    a.parent = self.id;
    a.step = static_cast<int>(steps_.size() - 1);
    a.carrier = out.carrier;
    aliases_.emplace(out.id, std::move(a));
  }
}

Carried Functionalizer::read(const Carried& t, const Site& site) {
  auto it = aliases_.find(t.id);
  if (it == aliases_.end()) return t;
  const Alias a = it->second;
  const Storage& s = storages_[static_cast<size_t>(a.storage)];
  if (a.version == s.version) return t;
  if (a.parent == ir::kNone) return s.base;
  const int version = s.version;
  auto done = replayed_.find({t.id, version});
  if (done != replayed_.end()) return done->second;
  const Step step = steps_[static_cast<size_t>(a.step)];
  if (step.kind == Step::Kind::Other && !step.replayable)
    throw ImportError(fmt::format(
        "{}: reads '{}', a view made by {}, after an in-place write into the tensor it views; HAP "
        "cannot derive that view from the new content: write the in-place op out of place",
        site.where, g_.value(t.id).name, step.op));
  const Carried parent = read({a.parent, aliases_.at(a.parent).carrier}, site);
  Carried r = replay(step, parent, site);
  if (r.id != parent.id) {
    Alias fresh;
    fresh.storage = a.storage;
    fresh.version = version;
    fresh.parent = parent.id;
    fresh.step = a.step;
    fresh.carrier = r.carrier;
    aliases_[r.id] = std::move(fresh);
  }
  replayed_[{t.id, version}] = r;
  return r;
}

void Functionalizer::checkWrite(const Carried& target, const std::string& op,
                                const Site& site) const {
  auto it = aliases_.find(target.id);
  const ir::ValueId origin =
      it == aliases_.end() ? target.id : storages_[static_cast<size_t>(it->second.storage)].origin;
  const bool through = it != aliases_.end() && it->second.parent != ir::kNone;
  const ir::Value& o = g_.value(origin);
  const std::string chain = through ? fmt::format(" through a view of it ({})", describeChain(target.id)) : "";
  if (o.kind == ir::ValueKind::Parameter || o.kind == ir::ValueKind::Input)
    throw ImportError(fmt::format(
        "{}: {} writes in place into {} '{}'{} during forward; HAP plans forward as a function "
        "that leaves its inputs and parameters unchanged: write that op out of place (e.g. "
        "torch.relu(x) for x.relu_()) or write into a clone",
        site.where, op, ir::valueKindName(o.kind), o.name, chain));
  if (o.kind == ir::ValueKind::Buffer && through)
    throw ImportError(fmt::format(
        "{}: {} writes in place into buffer '{}'{}; the runtime writes back whole buffers only: "
        "compute the buffer's new value out of place and write it whole (e.g. "
        "buf.copy_(torch.cat(...)))",
        site.where, op, o.name, chain));
  for (auto a = it; a != aliases_.end() && a->second.parent != ir::kNone;
       a = aliases_.find(a->second.parent)) {
    const Step& s = steps_[static_cast<size_t>(a->second.step)];
    if (s.kind == Step::Kind::Other)
      throw ImportError(fmt::format(
          "{}: {} writes in place through a view made by {} ({}), which has no out-of-place "
          "scatter form (slices, select, narrow, diagonal, view/reshape and transpose/permute "
          "views do): write that op out of place",
          site.where, op, s.op, describeChain(target.id)));
  }
}

void Functionalizer::write(const Carried& target, const Carried& result, const Site& site) {
  const int storage = aliasOf(target).storage;
  // The chain from the target up to the base: (value, step that derives it from its parent).
  std::vector<std::pair<ir::ValueId, int>> chain;
  for (ir::ValueId v = target.id; aliases_.at(v).parent != ir::kNone; v = aliases_.at(v).parent)
    chain.emplace_back(v, aliases_.at(v).step);
  // New contents, from the target's (the op's result) up to the new base.
  std::vector<Carried> updated{result};
  for (const auto& [v, step] : chain) {
    const ir::ValueId p = aliases_.at(v).parent;
    updated.push_back(scatter(steps_[static_cast<size_t>(step)], {p, aliases_.at(p).carrier},
                              updated.back(), site));
  }
  Storage& s = storages_[static_cast<size_t>(storage)];
  ++s.version;
  s.base = updated.back();
  for (size_t k = updated.size(); k-- > 0;) {
    const Carried& c = updated[k];
    if (k + 1 < updated.size() && c.id == updated[k + 1].id) continue;  // an identity step
    Alias a;
    a.storage = storage;
    a.version = s.version;
    if (k + 1 < updated.size()) {
      a.parent = updated[k + 1].id;
      a.step = chain[k].second;
    }
    a.carrier = c.carrier;
    aliases_[c.id] = std::move(a);
  }
}

Carried Functionalizer::replay(const Step& s, const Carried& parent, const Site& site) {
  switch (s.kind) {
    case Step::Kind::Slice:
      return emit("aten::slice", "Tensor",
                  {parent, IValue(s.dim), optionalInt(s.start), optionalInt(s.end), IValue(s.step)},
                  site);
    case Step::Kind::Select:
      return emit("aten::select", "int", {parent, IValue(s.dim), IValue(s.index)}, site);
    case Step::Kind::Diagonal:
      return emit("aten::diagonal", "",
                  {parent, IValue(s.index), IValue(s.dim1), IValue(s.dim2)}, site);
    case Step::Kind::Reshape:
      return emit("aten::reshape", "", {parent, IValue(s.sizes)}, site);
    case Step::Kind::Permute:
      return emit("aten::permute", "", {parent, IValue(s.sizes)}, site);
    case Step::Kind::Identity:
      return parent;
    case Step::Kind::Detach:
      return emit("aten::detach", "", {parent}, site);
    case Step::Kind::Other: {
      std::vector<Operand> args;
      for (size_t i = 0; i < s.args.size(); ++i)
        args.push_back(i == s.selfArg ? Operand(parent) : Operand(s.args[i]));
      return emit(s.op, s.overload, args, site);
    }
  }
  return parent;
}

Carried Functionalizer::scatter(const Step& s, const Carried& parent, const Carried& updated,
                                const Site& site) {
  switch (s.kind) {
    case Step::Kind::Slice:
      return emit("aten::slice_scatter", "",
                  {parent, updated, IValue(s.dim), optionalInt(s.start), optionalInt(s.end),
                   IValue(s.step)},
                  site);
    case Step::Kind::Select:
      return emit("aten::select_scatter", "",
                  {parent, updated, IValue(s.dim), IValue(s.index)}, site);
    case Step::Kind::Diagonal:
      return emit("aten::diagonal_scatter", "",
                  {parent, updated, IValue(s.index), IValue(s.dim1), IValue(s.dim2)}, site);
    case Step::Kind::Reshape:
      return emit("aten::reshape", "", {updated, IValue(parent.carrier.sizes().vec())}, site);
    case Step::Kind::Permute: {
      std::vector<int64_t> inverse(s.sizes.size());
      for (size_t i = 0; i < s.sizes.size(); ++i) inverse[static_cast<size_t>(s.sizes[i])] = static_cast<int64_t>(i);
      return emit("aten::permute", "", {updated, IValue(inverse)}, site);
    }
    case Step::Kind::Identity:
    case Step::Kind::Detach:
      return updated;
    case Step::Kind::Other:
      break;
  }
  // checkWrite() refuses writes through other views before the op runs.
  throw std::logic_error("functionalize: a write through a view without a scatter form");
}

Carried Functionalizer::emit(const std::string& op, const std::string& overload,
                             const std::vector<Operand>& args, const Site& site) {
  std::shared_ptr<jit::Operator> found;
  for (const auto& o : jit::getAllOperatorsFor(c10::Symbol::fromQualString(op)))
    if (o->schema().overload_name() == overload) found = o;
  if (!found)
    throw ImportError(fmt::format("{}: needs {}.{} to express an in-place write out of place, "
                                  "and this LibTorch has no such operator",
                                  site.where, op, overload));
  const c10::FunctionSchema& schema = found->schema();
  assert(schema.arguments().size() == args.size());
  ir::Node node;
  node.op = op;
  node.overload = overload;
  node.scope = site.scope;
  node.loc = site.loc;
  jit::Stack stack;
  std::string name;
  ir::DType dtype = ir::DType::Float32;
  for (size_t i = 0; i < args.size(); ++i) {
    ir::Arg a;
    a.name = schema.arguments()[i].name();
    a.type = schema.arguments()[i].type()->annotation_str();
    if (const Carried* c = std::get_if<Carried>(&args[i])) {
      a.kind = ir::Arg::Kind::Tensor;
      a.values = {c->id};
      stack.push_back(c->carrier);
      if (name.empty()) {
        // "h.1.slice_scatter", not "h.1.slice_scatter.reshape.slice_scatter" after a few writes.
        std::string base = g_.value(c->id).name;
        for (const char* suffix : {".slice_scatter", ".select_scatter", ".diagonal_scatter",
                                   ".slice", ".select", ".diagonal", ".reshape", ".permute",
                                   ".detach"})
          if (auto at = base.find(suffix); at != std::string::npos) base.resize(at);
        name = fmt::format("{}.{}", base, shortName(op));
        dtype = g_.value(c->id).dtype;
      }
    } else {
      const IValue& v = std::get<IValue>(args[i]);
      a.constant = toConstant(v);
      stack.push_back(v);
    }
    node.args.push_back(std::move(a));
  }
  try {
    found->getOperation()(stack);
  } catch (const std::exception& e) {
    throw ImportError(fmt::format("{}: {} (expressing an in-place write out of place) failed: {}",
                                  site.where, op, e.what()));
  }
  at::Tensor out = stack.at(0).toTensor();
  const ir::ValueId id =
      g_.addValue(ir::ValueKind::Activation, name, out.sizes().vec(), dtype);
  node.outputs = {id};
  g_.addNode(std::move(node));
  return {id, out};
}

}  // namespace hap::import
