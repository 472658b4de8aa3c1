#include "engine/ir/graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>

namespace hap::ir {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string formatShape(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string_view valueKindName(ValueKind k) {
  switch (k) {
    case ValueKind::Input: return "input";
    case ValueKind::Parameter: return "parameter";
    case ValueKind::Buffer: return "buffer";
    case ValueKind::Constant: return "constant";
    case ValueKind::Activation: return "activation";
  }
  return "?";
}

std::string formatConstant(const Constant& c) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) return "None";
        else if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
        else if constexpr (std::is_same_v<T, std::string>) return fmt::format("\"{}\"", v);
        else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          std::string s = "[";
          for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::string(v[i] ? "True" : "False");
          return s + "]";
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                             std::is_same_v<T, std::vector<double>>)
          return fmt::format("[{}]", fmt::join(v, ", "));
        else return fmt::format("{}", v);
      },
      c);
}

std::string SourceLoc::str() const {
  if (!known()) return "";
  auto slash = file.find_last_of('/');
  return fmt::format("{}:{}", slash == std::string::npos ? file : file.substr(slash + 1), line);
}

std::vector<ValueId> Node::tensorInputs() const {
  std::vector<ValueId> ids;
  for (const Arg& a : args)
    if (a.kind != Arg::Kind::Constant) ids.insert(ids.end(), a.values.begin(), a.values.end());
  return ids;
}

const Arg* Node::arg(std::string_view name) const {
  for (const Arg& a : args)
    if (a.name == name) return &a;
  return nullptr;
}

ValueId Graph::addValue(ValueKind kind, std::string name, Shape shape, DType dtype) {
  Value v;
  v.id = static_cast<ValueId>(values.size());
  v.kind = kind;
  v.name = std::move(name);
  v.shape = std::move(shape);
  v.dtype = dtype;
  values.push_back(std::move(v));
  return values.back().id;
}

NodeId Graph::addNode(Node node) {
  node.id = static_cast<NodeId>(nodes.size());
  for (ValueId o : node.outputs) {
    const Value& out = value(o);
    if (out.kind != ValueKind::Activation || out.producer != kNone)
      throw std::logic_error(fmt::format("addNode: output {} is not a fresh activation", out.name));
  }
  for (ValueId in : node.tensorInputs()) {
    auto& users = value(in).users;
    if (users.empty() || users.back() != node.id) users.push_back(node.id);
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Value& out = value(node.outputs[i]);
    out.producer = node.id;
    out.producerOutput = static_cast<int32_t>(i);
  }
  nodes.push_back(std::move(node));
  return nodes.back().id;
}

int64_t Graph::parameterCount() const {
  int64_t n = 0;
  for (ValueId p : parameters) n += value(p).numel();
  return n;
}

std::string Graph::describe(NodeId id) const {
  const Node& n = node(id);
  std::string out = n.outputs.empty() ? "" : "%" + value(n.outputs[0]).name + " = ";
  out += n.op;
  std::string where = n.scope.empty() ? "top level" : "scope " + n.scope;
  if (n.loc.known()) where += ", " + n.loc.str();
  return fmt::format("{} ({})", out, where);
}

void Graph::check() const {
  auto fail = [](const std::string& what) { throw std::logic_error("ir::Graph::check: " + what); };
  std::vector<bool> defined(values.size(), false);
  for (const Value& v : values) {
    if (v.id < 0 || static_cast<size_t>(v.id) >= values.size() || &value(v.id) != &v)
      fail("value ids are not their indices");
    for (int64_t d : v.shape)
      if (d < 0) fail(fmt::format("value {} has a negative dimension", v.name));
    if (v.kind != ValueKind::Activation) defined[static_cast<size_t>(v.id)] = true;
  }
  for (const Node& n : nodes) {
    if (&node(n.id) != &n) fail("node ids are not their indices");
    for (ValueId in : n.tensorInputs()) {
      if (in < 0 || static_cast<size_t>(in) >= values.size() || !defined[static_cast<size_t>(in)])
        fail(fmt::format("node {} reads a value before it is defined", describe(n.id)));
      const auto& users = value(in).users;
      if (std::find(users.begin(), users.end(), n.id) == users.end())
        fail(fmt::format("node {} is missing from the users of {}", describe(n.id), value(in).name));
    }
    for (ValueId out : n.outputs) {
      if (value(out).producer != n.id) fail(fmt::format("output of {} has another producer", describe(n.id)));
      defined[static_cast<size_t>(out)] = true;
    }
  }
  if (loss == kNone) fail("no loss value");
  const Value& l = value(loss);
  if (!l.shape.empty() || !isFloating(l.dtype)) fail("the loss is not a floating-point scalar");
}

}  // namespace hap::ir
