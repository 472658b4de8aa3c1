// Builds small reference graphs by hand for rule golden tests, and formats a node's variants.
#pragma once

#include <QString>
#include <QStringList>

#include "engine/ir/graph.h"
#include "engine/rules/rule.h"

namespace hap::test {

class GraphBuilder {
 public:
  ir::Graph g;

  ir::ValueId input(const std::string& name, ir::Shape shape, ir::DType t = ir::DType::Float32) {
    ir::ValueId id = g.addValue(ir::ValueKind::Input, name, std::move(shape), t);
    g.inputs.push_back(id);
    return id;
  }
  ir::ValueId param(const std::string& name, ir::Shape shape) {
    ir::ValueId id = g.addValue(ir::ValueKind::Parameter, name, std::move(shape), ir::DType::Float32);
    g.parameters.push_back(id);
    return id;
  }

  // Arguments in schema order: tensor(name, id), list(name, {ids}), constant(name, value).
  static ir::Arg tensor(const std::string& name, ir::ValueId id) {
    ir::Arg a;
    a.name = name;
    a.type = "Tensor";
    a.kind = ir::Arg::Kind::Tensor;
    a.values = {id};
    return a;
  }
  static ir::Arg list(const std::string& name, std::vector<ir::ValueId> ids) {
    ir::Arg a;
    a.name = name;
    a.type = "Tensor[]";
    a.kind = ir::Arg::Kind::TensorList;
    a.values = std::move(ids);
    return a;
  }
  static ir::Arg constant(const std::string& name, ir::Constant c) {
    ir::Arg a;
    a.name = name;
    a.kind = ir::Arg::Kind::Constant;
    a.constant = std::move(c);
    return a;
  }

  // Appends node `op` with the given arguments and output shapes; returns its id.
  ir::NodeId op(const std::string& op, std::vector<ir::Arg> args, std::vector<ir::Shape> outs,
                ir::DType t = ir::DType::Float32) {
    ir::Node n;
    n.op = op;
    n.args = std::move(args);
    for (size_t i = 0; i < outs.size(); ++i)
      n.outputs.push_back(g.addValue(ir::ValueKind::Activation,
                                     "v" + std::to_string(g.values.size()), outs[i], t));
    return g.addNode(std::move(n));
  }
  ir::ValueId out(ir::NodeId n, size_t i = 0) const { return g.node(n).outputs.at(i); }
};

// The node's variants as formatted lines ("column: I G(0) G(0) -> G(2)"), replicate first.
inline QStringList variantLines(const ir::Graph& g, ir::NodeId n) {
  QStringList lines;
  for (const rules::Variant& v : rules::variantsFor(g, g.node(n)))
    lines << QString::fromStdString(rules::formatVariant(v));
  return lines;
}

// The node's variants' executions (rules::executionName: "plain", "mean-over-cut", ...), in the
// order of variantLines().
inline QStringList executionNames(const ir::Graph& g, ir::NodeId n) {
  QStringList names;
  for (const rules::Variant& v : rules::variantsFor(g, g.node(n)))
    names << QString::fromUtf8(rules::executionName(v.execution).data(),
                               static_cast<int>(rules::executionName(v.execution).size()));
  return names;
}

}  // namespace hap::test
