// Tests of the IR container: use-def bookkeeping, argument access, describe() and check().
#include <QtTest>

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

using namespace hap::ir;

namespace {

// Builds graphs by hand: values by kind, and nodes from argument lists.
class Builder {
 public:
  Graph g;

  ValueId input(const std::string& name, Shape shape, DType dtype = DType::Float32) {
    ValueId id = g.addValue(ValueKind::Input, name, std::move(shape), dtype);
    g.inputs.push_back(id);
    return id;
  }
  ValueId parameter(const std::string& name, Shape shape) {
    ValueId id = g.addValue(ValueKind::Parameter, name, std::move(shape), DType::Float32);
    g.parameters.push_back(id);
    return id;
  }
  // Appends `op` with `args`; its outputs are fresh activations named and shaped by `outputs`.
  std::vector<ValueId> node(const std::string& op, const std::string& scope, std::vector<Arg> args,
                            std::vector<std::pair<std::string, Shape>> outputs,
                            DType dtype = DType::Float32) {
    Node n;
    n.op = op;
    n.scope = scope;
    n.args = std::move(args);
    for (auto& [name, shape] : outputs)
      n.outputs.push_back(g.addValue(ValueKind::Activation, name, shape, dtype));
    std::vector<ValueId> outs = n.outputs;
    g.addNode(std::move(n));
    return outs;
  }
  ValueId node1(const std::string& op, const std::string& scope, std::vector<Arg> args,
                const std::string& output, Shape shape, DType dtype = DType::Float32) {
    return node(op, scope, std::move(args), {{output, std::move(shape)}}, dtype)[0];
  }
};

Arg tensor(const std::string& name, ValueId v) {
  return Arg{name, "Tensor", Arg::Kind::Tensor, {v}, {}, {}};
}
Arg tensorList(const std::string& name, std::vector<ValueId> vs) {
  return Arg{name, "Tensor[]", Arg::Kind::TensorList, std::move(vs), {}, {}};
}
Arg constant(const std::string& name, const std::string& type, Constant c) {
  return Arg{name, type, Arg::Kind::Constant, {}, std::move(c), {}};
}

// The message of the std::logic_error Graph::check() throws, or "" when it passes.
std::string checkError(const Graph& g) {
  try {
    g.check();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}

// x -> linear (enc.fc) -> h; h * h -> y; cat([h, y]) -> s; chunk(s, 2) -> c0, c1; sum(c1) -> loss.
struct SmallGraph {
  Builder b;
  ValueId x, w, h, y, s, c0, c1, loss;
  NodeId linear = 0, mul = 1, cat = 2, chunk = 3, sum = 4;

  SmallGraph() {
    x = b.input("x", {4, 8});
    w = b.parameter("enc.fc.weight", {16, 8});
    h = b.node1(
        "aten::linear", "enc.fc",
        {tensor("input", x), tensor("weight", w), constant("bias", "Tensor?", std::monostate{})},
        "h", {4, 16});
    b.g.node(linear).loc = SourceLoc{"/src/models/model.py", 12};
    y = b.node1("aten::mul", "enc", {tensor("self", h), tensor("other", h)}, "y", {4, 16});
    s = b.node1("aten::cat", "",
                {tensorList("tensors", {h, y}), constant("dim", "int", int64_t{0})}, "s", {8, 16});
    auto chunks = b.node("aten::chunk", "",
                         {tensor("self", s), constant("chunks", "int", int64_t{2}),
                          constant("dim", "int", int64_t{0})},
                         {{"c0", {4, 16}}, {"c1", {4, 16}}});
    c0 = chunks[0];
    c1 = chunks[1];
    loss = b.node1("aten::sum", "",
                   {tensor("self", c1), constant("dtype", "ScalarType?", std::monostate{})}, "loss",
                   {});
    b.g.loss = loss;
  }
};

}  // namespace

class TestGraph : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void shapes() {
    QCOMPARE(numel({}), int64_t{1});
    QCOMPARE(numel({4, 0, 3}), int64_t{0});
    QCOMPARE(numel({64, 128, 768}), int64_t{64 * 128 * 768});
    QCOMPARE(formatShape({}), std::string("[]"));
    QCOMPARE(formatShape({64, 128, 768}), std::string("[64, 128, 768]"));
    SmallGraph t;
    QCOMPARE(t.b.g.value(t.h).bytes(), int64_t{4 * 16 * 4});
    QCOMPARE(t.b.g.value(t.loss).rank(), 0);
  }

  void usersAndProducers() {
    SmallGraph t;
    const Graph& g = t.b.g;
    QCOMPARE(g.value(t.x).users, std::vector<NodeId>{t.linear});
    QCOMPARE(g.value(t.w).users, std::vector<NodeId>{t.linear});
    // mul reads h twice and cat reads it once more: each consumer is listed once, in order.
    QCOMPARE(g.value(t.h).users, (std::vector<NodeId>{t.mul, t.cat}));
    QCOMPARE(g.value(t.y).users, std::vector<NodeId>{t.cat});
    QCOMPARE(g.value(t.c0).users, std::vector<NodeId>{});
    QCOMPARE(g.value(t.c1).users, std::vector<NodeId>{t.sum});
    QCOMPARE(g.value(t.loss).users, std::vector<NodeId>{});

    QCOMPARE(g.value(t.x).producer, kNone);
    QCOMPARE(g.value(t.w).producer, kNone);
    QCOMPARE(g.value(t.h).producer, t.linear);
    QCOMPARE(g.value(t.s).producer, t.cat);
    QCOMPARE(g.value(t.c0).producer, t.chunk);
    QCOMPARE(g.value(t.c0).producerOutput, 0);
    QCOMPARE(g.value(t.c1).producer, t.chunk);
    QCOMPARE(g.value(t.c1).producerOutput, 1);
    QCOMPARE(g.value(t.loss).producer, t.sum);
    QCOMPARE(g.node(t.chunk).id, t.chunk);
    QCOMPARE(g.parameterCount(), int64_t{16 * 8});
  }

  void tensorInputsAndArgs() {
    SmallGraph t;
    const Graph& g = t.b.g;
    QCOMPARE(g.node(t.cat).tensorInputs(), (std::vector<ValueId>{t.h, t.y}));
    QCOMPARE(g.node(t.mul).tensorInputs(), (std::vector<ValueId>{t.h, t.h}));
    // An absent optional tensor (bias=None) is a constant, not a tensor input.
    QCOMPARE(g.node(t.linear).tensorInputs(), (std::vector<ValueId>{t.x, t.w}));

    const Arg* dim = g.node(t.cat).arg("dim");
    QVERIFY(dim != nullptr);
    QCOMPARE(dim->kind, Arg::Kind::Constant);
    QCOMPARE(std::get<int64_t>(dim->constant), int64_t{0});
    QCOMPARE(g.node(t.cat).arg("tensors")->kind, Arg::Kind::TensorList);
    QVERIFY(g.node(t.cat).arg("out") == nullptr);

    // Lists contribute all their elements, in argument order.
    Node n;
    n.args = {tensor("self", 7), constant("alpha", "Scalar", 1.5), tensorList("indices", {3, 5}),
              tensorList("empty", {}), tensor("values", 2)};
    QCOMPARE(n.tensorInputs(), (std::vector<ValueId>{7, 3, 5, 2}));
  }

  void describe() {
    SmallGraph t;
    QCOMPARE(t.b.g.describe(t.linear),
             std::string("%h = aten::linear (scope enc.fc, model.py:12)"));
    QCOMPARE(t.b.g.describe(t.sum), std::string("%loss = aten::sum (top level)"));
    QCOMPARE(t.b.g.describe(t.chunk), std::string("%c0 = aten::chunk (top level)"));
  }

  void checkAcceptsGoodGraph() {
    SmallGraph t;
    QCOMPARE(checkError(t.b.g), std::string());
  }

  void checkRejectsUndefinedValue() {
    SmallGraph t;
    ValueId ghost = t.b.g.addValue(ValueKind::Activation, "ghost", {4, 16}, DType::Float32);
    t.b.node1("aten::relu", "enc", {tensor("self", ghost)}, "r", {4, 16});
    QCOMPARE(checkError(t.b.g),
             std::string("ir::Graph::check: node %r = aten::relu (scope enc) reads a value "
                         "before it is defined"));
  }

  void checkRejectsUseBeforeDefinition() {
    Builder b;
    ValueId x = b.input("x", {2});
    ValueId later = b.g.addValue(ValueKind::Activation, "later", {2}, DType::Float32);
    b.node1("aten::add", "", {tensor("self", x), tensor("other", later)}, "early", {2});
    Node producer;
    producer.op = "aten::neg";
    producer.args = {tensor("self", x)};
    producer.outputs = {later};
    b.g.addNode(producer);
    b.g.loss = b.node1("aten::sum", "", {tensor("self", later)}, "loss", {});
    QVERIFY(checkError(b.g).find("%early = aten::add (top level) reads a value before it is "
                                 "defined") != std::string::npos);
  }

  void checkRejectsBadLoss() {
    SmallGraph t;
    t.b.g.loss = t.c1;  // [4, 16]
    QCOMPARE(checkError(t.b.g),
             std::string("ir::Graph::check: the loss is not a floating-point scalar"));

    SmallGraph integer;
    integer.b.g.loss =
        integer.b.node1("aten::argmax", "", {tensor("self", integer.c1)}, "idx", {}, DType::Int64);
    QCOMPARE(checkError(integer.b.g),
             std::string("ir::Graph::check: the loss is not a floating-point scalar"));
  }

  void checkRejectsMissingLoss() {
    SmallGraph t;
    t.b.g.loss = kNone;
    QCOMPARE(checkError(t.b.g), std::string("ir::Graph::check: no loss value"));
  }

  void addNodeRejectsNonFreshOutput() {
    SmallGraph t;
    Node n;
    n.op = "aten::relu";
    n.args = {tensor("self", t.h)};
    n.outputs = {t.y};  // already produced by mul
    QVERIFY_THROWS_EXCEPTION(std::logic_error, t.b.g.addNode(n));
    n.outputs = {t.x};  // an input
    QVERIFY_THROWS_EXCEPTION(std::logic_error, t.b.g.addNode(n));
  }
};

QTEST_GUILESS_MAIN(TestGraph)
#include "tst_graph.moc"
