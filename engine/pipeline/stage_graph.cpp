#include "engine/pipeline/stage_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "engine/ir/op_cost.h"

namespace hap::pipeline {
namespace {

int producerSegment(const ir::Graph& g, const std::vector<int>& nodeSegment, ir::ValueId v) {
  const ir::Value& x = g.value(v);
  return x.producer == ir::kNone ? -1 : nodeSegment[static_cast<size_t>(x.producer)];
}

}  // namespace

double StageGraph::receivedBytes() const {
  double b = 0;
  for (ir::ValueId v : boundaryInputs) b += static_cast<double>(graph.value(v).bytes());
  return b;
}

double StageGraph::sentBytes(const ir::Graph& model) const {
  double b = 0;
  for (ir::ValueId v : outputs) b += static_cast<double>(model.value(v).bytes());
  return b;
}

std::vector<bool> validCuts(const ir::Graph& model, const std::vector<int>& nodeSegment, int segments) {
  assert(nodeSegment.size() == model.nodes.size());
  std::vector<bool> valid(static_cast<size_t>(segments) + 1, true);
  for (const ir::Node& n : model.nodes) {
    const int reader = nodeSegment[static_cast<size_t>(n.id)];
    for (ir::ValueId v : n.tensorInputs()) {
      const int home = producerSegment(model, nodeSegment, v);
      // A value of segment `home` read in an earlier segment: no cut between them.
      for (int k = reader + 1; k <= home; ++k) valid[static_cast<size_t>(k)] = false;
    }
  }
  valid.front() = valid.back() = true;
  return valid;
}

StageGraph stageGraph(const ir::Graph& model, const std::vector<int>& nodeSegment, int first, int end) {
  assert(nodeSegment.size() == model.nodes.size() && first < end);
  StageGraph st;
  st.firstSegment = first;
  st.endSegment = end;
  ir::Graph& g = st.graph;
  g.sourceFile = model.sourceFile;
  g.modelInfo = model.modelInfo;
  auto inRange = [&](int seg) { return seg >= first && seg < end; };

  // Which model values the stage reads, and which of its values later stages read.
  std::vector<bool> read(model.values.size(), false), readLater(model.values.size(), false),
      readElsewhere(model.values.size(), false);
  for (const ir::Node& n : model.nodes) {
    const int seg = nodeSegment[static_cast<size_t>(n.id)];
    for (ir::ValueId v : n.tensorInputs()) {
      const int home = producerSegment(model, nodeSegment, v);
      if (inRange(seg)) {
        read[static_cast<size_t>(v)] = true;
        if (home >= end)
          throw StageError(fmt::format("segment {} reads {}, produced in the later segment {}: the model cannot be "
                                       "cut between them",
                                       seg, model.value(v).name, home));
      } else {
        readElsewhere[static_cast<size_t>(v)] = true;
        if (seg >= end && inRange(home)) readLater[static_cast<size_t>(v)] = true;
      }
    }
  }
  st.holdsLoss = model.loss != ir::kNone && inRange(producerSegment(model, nodeSegment, model.loss));

  std::vector<ir::ValueId> local(model.values.size(), ir::kNone);
  auto copySource = [&](ir::ValueId v, ir::ValueKind kind, std::string name) {
    const ir::Value& x = model.value(v);
    const ir::ValueId id = g.addValue(kind, std::move(name), x.shape, x.dtype);
    g.value(id).low = x.low;
    g.value(id).high = x.high;
    local[static_cast<size_t>(v)] = id;
    return id;
  };
  // Sources in the model's lists' order, then boundary inputs in value order.
  for (ir::ValueId v : model.inputs)
    if (read[static_cast<size_t>(v)]) g.inputs.push_back(copySource(v, ir::ValueKind::Input, model.value(v).name));
  for (const ir::Value& x : model.values) {
    if (!read[static_cast<size_t>(x.id)] || x.kind != ir::ValueKind::Activation) continue;
    const int home = producerSegment(model, nodeSegment, x.id);
    if (home >= first) continue;
    st.inputsFrom.push_back(x.id);
    const ir::ValueId id = copySource(x.id, ir::ValueKind::Input, "boundary." + x.name);
    g.inputs.push_back(id);
    st.boundaryInputs.push_back(id);
  }
  for (ir::ValueId v : model.parameters)
    if (read[static_cast<size_t>(v)]) {
      g.parameters.push_back(copySource(v, ir::ValueKind::Parameter, model.value(v).name));
      if (readElsewhere[static_cast<size_t>(v)]) st.sharedParameters.push_back(v);
    }
  for (ir::ValueId v : model.buffers)
    if (read[static_cast<size_t>(v)]) g.buffers.push_back(copySource(v, ir::ValueKind::Buffer, model.value(v).name));
  for (ir::ValueId v : model.constants)
    if (read[static_cast<size_t>(v)]) g.constants.push_back(copySource(v, ir::ValueKind::Constant, model.value(v).name));

  // The stage's nodes, in model order.
  for (const ir::Node& n : model.nodes) {
    const int seg = nodeSegment[static_cast<size_t>(n.id)];
    if (!inRange(seg)) continue;
    ir::Node c = n;
    c.id = ir::kNone;
    for (ir::Arg& a : c.args)
      for (ir::ValueId& x : a.values) {
        assert(local[static_cast<size_t>(x)] != ir::kNone);
        x = local[static_cast<size_t>(x)];
      }
    c.outputs.clear();
    for (ir::ValueId o : n.outputs) {
      const ir::Value& x = model.value(o);
      const ir::ValueId id = g.addValue(ir::ValueKind::Activation, x.name, x.shape, x.dtype);
      if (x.aliasOf != ir::kNone && local[static_cast<size_t>(x.aliasOf)] != ir::kNone)
        g.value(id).aliasOf = local[static_cast<size_t>(x.aliasOf)];
      local[static_cast<size_t>(o)] = id;
      c.outputs.push_back(id);
    }
    g.addNode(std::move(c));
    st.nodeSegment.push_back(seg - first);
    st.originalNode.push_back(n.id);
  }
  for (const ir::Value& x : model.values)
    if (readLater[static_cast<size_t>(x.id)]) st.outputs.push_back(x.id);

  if (st.holdsLoss) {
    g.loss = local[static_cast<size_t>(model.loss)];
  } else {
    // Markers: sum(output) per floating-point output; the last is the loss.
    for (ir::ValueId v : st.outputs) {
      const ir::Value& x = model.value(v);
      if (!ir::isFloating(x.dtype)) continue;
      ir::Node m;
      m.op = "aten::sum";
      m.scope = "pipeline.marker";
      ir::Arg self;
      self.name = "self";
      self.type = "Tensor";
      self.kind = ir::Arg::Kind::Tensor;
      self.values = {local[static_cast<size_t>(v)]};
      ir::Arg dtype;
      dtype.name = "dtype";
      dtype.type = "ScalarType?";
      m.args = {self, dtype};
      m.outputs = {g.addValue(ir::ValueKind::Activation, "pipeline.marker." + x.name, {}, x.dtype)};
      m.cost = ir::nodeCost(g, m);
      g.loss = m.outputs[0];
      g.addNode(std::move(m));
      st.nodeSegment.push_back(end - 1 - first);
      st.originalNode.push_back(ir::kNone);
    }
    if (g.loss == ir::kNone)
      throw StageError(fmt::format("segments {}..{} hold no loss and send no floating-point value to a later stage: "
                                   "no gradient would reach them",
                                   first, end - 1));
  }
  g.check();
  return st;
}

std::string structuralKey(const StageGraph& stage) {
  const ir::Graph& g = stage.graph;
  std::string key;
  key.reserve(g.values.size() * 24 + g.nodes.size() * 48);
  for (const ir::Value& v : g.values)
    key += fmt::format("v{}:{}:{}:{}:{}:{};", static_cast<int>(v.kind), ir::formatShape(v.shape),
                       static_cast<int>(v.dtype), v.low.value_or(-1), v.high.value_or(-1), v.aliasOf);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    key += fmt::format("n{}.{}@{}:", n.op, n.overload, stage.nodeSegment[i]);
    for (const ir::Arg& a : n.args) {
      key += a.name + "=";
      if (a.kind == ir::Arg::Kind::Constant)
        key += ir::formatConstant(a.constant);
      else
        for (ir::ValueId x : a.values) key += fmt::format("%{},", x);
      key += ";";
    }
    for (ir::ValueId o : n.outputs) key += fmt::format(">{}", o);
    key += "|";
  }
  key += fmt::format("loss{}", g.loss);
  return key;
}

}  // namespace hap::pipeline
