// Tests of the per-scope summary, its text table, and the DOT and JSON renderings of a graph.
#include <QtTest>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ir/graph_dot.h"
#include "engine/ir/graph_json.h"
#include "engine/ir/summary.h"

using namespace hap::ir;
using nlohmann::json;

namespace {

Arg tensor(const std::string& name, ValueId v) {
  return Arg{name, "Tensor", Arg::Kind::Tensor, {v}, {}, {}};
}
Arg constant(const std::string& name, const std::string& type, Constant c) {
  return Arg{name, type, Arg::Kind::Constant, {}, std::move(c), {}};
}

// Builds graphs by hand, with the costs op_cost would have filled in given explicitly.
class Builder {
 public:
  Graph g;

  ValueId input(const std::string& name, Shape shape) {
    ValueId id = g.addValue(ValueKind::Input, name, std::move(shape), DType::Float32);
    g.inputs.push_back(id);
    return id;
  }
  ValueId parameter(const std::string& name, Shape shape) {
    ValueId id = g.addValue(ValueKind::Parameter, name, std::move(shape), DType::Float32);
    g.parameters.push_back(id);
    return id;
  }
  // Appends `op` in `scope` with one fresh float32 output.
  ValueId node(const std::string& op, const std::string& scope, std::vector<Arg> args,
               const std::string& output, Shape shape, NodeCost cost) {
    Node n;
    n.op = op;
    n.scope = scope;
    n.args = std::move(args);
    n.cost = cost;
    n.outputs = {g.addValue(ValueKind::Activation, output, std::move(shape), DType::Float32)};
    g.addNode(std::move(n));
    return g.nodes.back().outputs[0];
  }
};

// A two-layer MLP with an output scale:
//   n0 layers.0.fc  linear(x, W0[16,8], b0[16]) -> [4,16]
//   n1 layers.0     relu                         -> [4,16]
//   n2 layers.1.fc  linear(., W1[4,16], b1[4])   -> [4,4]
//   n3 layers.1     relu_ (in place)             -> [4,4]
//   n4 (top)        mul(., out.scale[4])         -> [4,4]   (scope "out" only owns the parameter)
//   n5 (top)        mean(dim=[0, 1], dtype=None) -> loss []
Graph twoLayerGraph() {
  Builder b;
  ValueId x = b.input("x", {4, 8});
  ValueId w0 = b.parameter("layers.0.fc.weight", {16, 8});
  ValueId b0 = b.parameter("layers.0.fc.bias", {16});
  ValueId h0 = b.node("aten::linear", "layers.0.fc",
                      {tensor("input", x), tensor("weight", w0), tensor("bias", b0)}, "h0", {4, 16},
                      {1088, 1152, 256});
  ValueId a0 =
      b.node("aten::relu", "layers.0", {tensor("self", h0)}, "a0", {4, 16}, {64, 256, 256});
  ValueId w1 = b.parameter("layers.1.fc.weight", {4, 16});
  ValueId b1 = b.parameter("layers.1.fc.bias", {4});
  ValueId h1 = b.node("aten::linear", "layers.1.fc",
                      {tensor("input", a0), tensor("weight", w1), tensor("bias", b1)}, "h1", {4, 4},
                      {528, 528, 64});
  ValueId a1 = b.node("aten::relu_", "layers.1", {tensor("self", h1)}, "a1", {4, 4}, {16, 64, 64});
  b.g.nodes.back().inplace = true;
  b.g.value(a1).aliasOf = h1;
  ValueId scale = b.parameter("out.scale", {4});
  ValueId m = b.node("aten::mul", "", {tensor("self", a1), tensor("other", scale)}, "m", {4, 4},
                     {16, 80, 64});
  b.g.loss = b.node(
      "aten::mean", "",
      {tensor("self", m), constant("dim", "int[1]?", std::vector<int64_t>{0, 1}),
       constant("keepdim", "bool", false), constant("dtype", "ScalarType?", std::monostate{})},
      "loss", {}, {16, 64, 4});
  b.g.nodes[5].overload = "dim";
  b.g.nodes[0].loc = SourceLoc{"/src/mlp.py", 21};
  b.g.sourceFile = "/models/mlp.pt";
  b.g.modelInfo = R"({"name": "mlp", "preset": "tiny", "parameters": 216})";
  b.g.diagnostics.push_back(
      {Diagnostic::Severity::Warning, 4, "no sharding rule for aten::mul; it is replicated"});
  b.g.diagnostics.push_back({Diagnostic::Severity::Error, kNone, "the cluster has no devices"});
  b.g.check();
  return b.g;
}

// Nesting depth of braces before the first occurrence of `needle` (-1 when absent).
int braceDepthAt(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  if (at == std::string::npos) return -1;
  return static_cast<int>(std::count(text.begin(), text.begin() + at, '{') -
                          std::count(text.begin(), text.begin() + at, '}'));
}

int occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

void compareScope(const ScopeSummary& s, const std::string& scope, int64_t parameters, double flops,
                  int64_t activationBytes, int nodes, const std::map<std::string, int>& ops) {
  QCOMPARE(s.scope, scope);
  QCOMPARE(s.parameters, parameters);
  QCOMPARE(s.parameterBytes, parameters * 4);
  QCOMPARE(s.flops, flops);
  QCOMPARE(s.activationBytes, activationBytes);
  QCOMPARE(s.nodes, nodes);
  QCOMPARE(s.opCounts, ops);
}

}  // namespace

class TestSummary : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void truncateScopes() {
    const std::string attn = "encoder.layers.3.self_attn";
    QCOMPARE(truncateScope(attn, -1), attn);
    QCOMPARE(truncateScope(attn, 0), std::string());
    QCOMPARE(truncateScope(attn, 1), std::string("encoder"));
    QCOMPARE(truncateScope(attn, 2), std::string("encoder.layers.3"));
    QCOMPARE(truncateScope(attn, 3), attn);
    QCOMPARE(truncateScope(attn, 9), attn);
    QCOMPARE(truncateScope("", -1), std::string());
    QCOMPARE(truncateScope("", 0), std::string());
    QCOMPARE(truncateScope("", 2), std::string());
    // Nested lists keep all their indices; a top-level index counts as a component.
    QCOMPARE(truncateScope("layers.0.1.mlp", 1), std::string("layers.0.1"));
    QCOMPARE(truncateScope("blocks.12", 1), std::string("blocks.12"));
    QCOMPARE(truncateScope("0.fc", 0), std::string());
    QCOMPARE(truncateScope("0.fc", 1), std::string("0"));
    QCOMPARE(truncateScope("0.fc", 2), std::string("0.fc"));
    QCOMPARE(truncateScope("0.1.fc", 1), std::string("0.1"));
    // Only all-digit components are indices.
    QCOMPARE(truncateScope("a.b1.c", 1), std::string("a"));
    QCOMPARE(truncateScope("a.b1.c", 2), std::string("a.b1"));

    QCOMPARE(ownerScope("encoder.layers.0.fc1.weight"), std::string_view("encoder.layers.0.fc1"));
    QCOMPARE(ownerScope("scale"), std::string_view());
  }

  void summarizeFullDepth() {
    GraphSummary s = summarize(twoLayerGraph(), -1);
    QCOMPARE(s.depth, -1);
    QCOMPARE(s.scopes.size(), size_t{6});
    compareScope(s.scopes[0], "layers.0.fc", 144, 1088, 256, 1, {{"linear", 1}});
    compareScope(s.scopes[1], "layers.0", 0, 64, 256, 1, {{"relu", 1}});
    compareScope(s.scopes[2], "layers.1.fc", 68, 528, 64, 1, {{"linear", 1}});
    compareScope(s.scopes[3], "layers.1", 0, 16, 64, 1, {{"relu_", 1}});
    compareScope(s.scopes[4], "", 0, 32, 68, 2, {{"mean", 1}, {"mul", 1}});
    compareScope(s.scopes[5], "out", 4, 0, 0, 0, {});
    compareScope(s.total, "", 216, 1728, 708, 6,
                 {{"linear", 2}, {"relu", 1}, {"relu_", 1}, {"mean", 1}, {"mul", 1}});
    QCOMPARE(s.inputs, 1);
    QCOMPARE(s.inputBytes, int64_t{128});
    QCOMPARE(s.parameterTensors, 5);
    QCOMPARE(s.buffers, 0);
    QCOMPARE(s.constants, 0);
    QCOMPARE(s.activations, 6);
    QCOMPARE(s.warnings, 1);
    QCOMPARE(s.errors, 1);
  }

  void summarizeTruncated() {
    Graph g = twoLayerGraph();
    GraphSummary s = summarize(g, 1);
    QCOMPARE(s.scopes.size(), size_t{4});
    compareScope(s.scopes[0], "layers.0", 144, 1152, 512, 2, {{"linear", 1}, {"relu", 1}});
    compareScope(s.scopes[1], "layers.1", 68, 544, 128, 2, {{"linear", 1}, {"relu_", 1}});
    compareScope(s.scopes[2], "", 0, 32, 68, 2, {{"mean", 1}, {"mul", 1}});
    compareScope(s.scopes[3], "out", 4, 0, 0, 0, {});
    compareScope(s.total, "", 216, 1728, 708, 6,
                 {{"linear", 2}, {"relu", 1}, {"relu_", 1}, {"mean", 1}, {"mul", 1}});

    GraphSummary one = summarize(g, 0);
    QCOMPARE(one.scopes.size(), size_t{1});
    compareScope(one.scopes[0], "", 216, 1728, 708, 6,
                 {{"linear", 2}, {"relu", 1}, {"relu_", 1}, {"mean", 1}, {"mul", 1}});
  }

  void humanUnits() {
    QCOMPARE(formatCount(0), std::string("0"));
    QCOMPARE(formatCount(999), std::string("999"));
    QCOMPARE(formatCount(1.5), std::string("1.50"));
    QCOMPARE(formatCount(1000), std::string("1.00K"));
    QCOMPARE(formatCount(12345), std::string("12.3K"));
    QCOMPARE(formatCount(1234567), std::string("1.23M"));
    QCOMPARE(formatCount(123456789), std::string("123M"));
    QCOMPARE(formatCount(999960), std::string("1.00M"));
    QCOMPARE(formatCount(2.5e12), std::string("2.50T"));
    QCOMPARE(formatCount(3.1e15), std::string("3.10P"));
    QCOMPARE(formatCount(-1500), std::string("-1.50K"));

    QCOMPARE(formatBytes(0), std::string("0 B"));
    QCOMPARE(formatBytes(1023), std::string("1023 B"));
    QCOMPARE(formatBytes(1024), std::string("1.00 KiB"));
    QCOMPARE(formatBytes(1536), std::string("1.50 KiB"));
    QCOMPARE(formatBytes(1048575), std::string("1.00 MiB"));
    QCOMPARE(formatBytes(int64_t{100} << 20), std::string("100 MiB"));
    QCOMPARE(formatBytes(int64_t{3} << 30), std::string("3.00 GiB"));
    QCOMPARE(formatBytes(int64_t{5} << 40), std::string("5.00 TiB"));
  }

  void table() {
    Graph g = twoLayerGraph();
    const std::string expected =
        "Model:  mlp (preset tiny), /models/mlp.pt\n"
        "Inputs: x: float32 [4, 8]\n"
        "Loss:   float32 [], produced by %loss = aten::mean (top level)\n"
        "Scopes: depth 1\n"
        "\n"
        "scope     params  param bytes  FLOPs  activations  nodes  ops\n"
        "--------  ------  -----------  -----  -----------  -----  ------------------------------\n"
        "layers.0     144        576 B  1.15K        512 B      2  linear×1 relu×1\n"
        "layers.1      68        272 B    544        128 B      2  linear×1 relu_×1\n"
        "(top)          0          0 B     32         68 B      2  mean×1 mul×1\n"
        "out            4         16 B      0          0 B      0\n"
        "--------  ------  -----------  -----  -----------  -----  ------------------------------\n"
        "total        216        864 B  1.73K        708 B      6  linear×2 mean×1 mul×1 relu×1 …\n"
        "\n"
        "Values: 1 input (128 B), 5 parameter tensors, 0 buffers (0 B), 0 constants, 6 "
        "activations\n"
        "Diagnostics: 1 error, 1 warning\n"
        "  warning: %m = aten::mul (top level): no sharding rule for aten::mul; it is replicated\n"
        "  error: the cluster has no devices\n";
    QCOMPARE(formatSummaryTable(g, summarize(g, 1)), expected);

    // Every scope of the full summary has a row, then the totals.
    std::string full = formatSummaryTable(g, summarize(g, -1));
    QVERIFY(full.find("Scopes: full depth\n") != std::string::npos);
    for (const char* row : {"\nlayers.0.fc ", "\nlayers.0 ", "\nlayers.1.fc ", "\nlayers.1 ",
                            "\n(top) ", "\nout ", "\ntotal "})
      QVERIFY2(occurrences(full, row) == 1, row);
    QVERIFY(full.find("\nout ") < full.find("\ntotal "));
  }

  void dotClustersAndNodes() {
    Graph g = twoLayerGraph();
    std::string dot = toDot(g);
    QCOMPARE(dot, toDot(g));  // deterministic
    QVERIFY(dot.starts_with("digraph hap {\n  rankdir=TB;\n"));
    QVERIFY(dot.ends_with("}\n"));
    QCOMPARE(occurrences(dot, "{"), occurrences(dot, "}"));
    QCOMPARE(braceDepthAt(dot, "\n}\n"), 1);  // the closing brace ends the digraph

    // One cluster per scope, nested by scope path.
    QCOMPARE(occurrences(dot, "subgraph cluster_"), 5);
    for (auto [scope, depth] : std::vector<std::pair<std::string, int>>{{"layers.0", 2},
                                                                        {"layers.0.fc", 3},
                                                                        {"layers.1", 2},
                                                                        {"layers.1.fc", 3},
                                                                        {"out", 2}}) {
      std::string label = "label=\"" + scope + "\"; style=rounded";
      QVERIFY2(occurrences(dot, label) == 1, scope.c_str());
      QCOMPARE(braceDepthAt(dot, label), depth);
    }
    // Every op node, in the cluster of its scope.
    for (auto [id, depth] : std::vector<std::pair<std::string, int>>{
             {"n0", 3}, {"n1", 2}, {"n2", 3}, {"n3", 2}, {"n4", 1}, {"n5", 1}})
      QCOMPARE(braceDepthAt(dot, "  " + id + " [label="), depth);
    QVERIFY(dot.find("n0 [label=\"linear\\n[4, 16]\", tooltip=\"%h0 = aten::linear (scope "
                     "layers.0.fc, mlp.py:21)\"];") != std::string::npos);
    QVERIFY(dot.find("n3 [label=\"relu_\\n[4, 4]\"") != std::string::npos);
    QVERIFY(dot.find("n4 [label=\"mul\\n[4, 4]\", tooltip=\"%m = aten::mul (top level)\", "
                     "color=red") != std::string::npos);

    // Inputs, parameters (in their owner's cluster, named relative to it) and the loss.
    QCOMPARE(braceDepthAt(dot, "v0 [shape=ellipse, label=\"x\\n[4, 8]\""), 1);
    QCOMPARE(braceDepthAt(dot, "v1 [shape=ellipse, label=\"weight\\n[16, 8]\""), 3);
    QCOMPARE(braceDepthAt(dot, "v9 [shape=ellipse, label=\"scale\\n[4]\""), 2);
    QCOMPARE(braceDepthAt(dot, "v11 [shape=ellipse, label=\"loss\\n[]\""), 1);

    // Edges from producers, labelled with shapes; mean reads m once.
    for (const char* edge :
         {"  v0 -> n0 [label=\"[4, 8]\"];\n", "  v1 -> n0 [label=\"[16, 8]\"];\n",
          "  n0 -> n1 [label=\"[4, 16]\"];\n", "  n2 -> n3 [label=\"[4, 4]\"];\n",
          "  n3 -> n4 [label=\"[4, 4]\"];\n", "  v9 -> n4 [label=\"[4]\"];\n",
          "  n4 -> n5 [label=\"[4, 4]\"];\n", "  n5 -> v11 [label=\"[]\"];\n"})
      QVERIFY2(occurrences(dot, edge) == 1, edge);
    QCOMPARE(occurrences(dot, " -> "), 12);
  }

  void dotOptions() {
    Graph g = twoLayerGraph();
    std::string noParams = toDot(g, {.depth = -1, .showParameters = false, .showShapes = false});
    QCOMPARE(occurrences(noParams, "subgraph cluster_"), 4);  // "out" only held a parameter
    QCOMPARE(occurrences(noParams, " -> "), 7);
    QVERIFY(noParams.find("v1 ") == std::string::npos);
    QVERIFY(noParams.find("  n0 -> n1;\n") != std::string::npos);
    QVERIFY(noParams.find("  v0 -> n0;\n") != std::string::npos);

    std::string shallow = toDot(g, {.depth = 1});
    QCOMPARE(occurrences(shallow, "subgraph cluster_"), 3);
    QCOMPARE(braceDepthAt(shallow, "  n0 [label="), 2);
    QCOMPARE(braceDepthAt(shallow, "v1 [shape=ellipse, label=\"fc.weight\\n[16, 8]\""), 2);

    std::string flat = toDot(g, {.depth = 0});
    QCOMPARE(occurrences(flat, "subgraph"), 0);
    QCOMPARE(braceDepthAt(flat, "v1 [shape=ellipse, label=\"layers.0.fc.weight\\n[16, 8]\""), 1);
  }

  void dotEscapes() {
    Builder b;
    ValueId x = b.input("x\\in", {2});
    ValueId w = b.parameter("we\"ird\\scope.w", {2});
    b.g.loss = b.node("aten::dot", "we\"ird\\scope", {tensor("self", x), tensor("tensor", w)},
                      "l\"oss", {}, {});
    b.g.sourceFile = "C:\\models\\m.pt";
    std::string dot = toDot(b.g);
    QVERIFY(dot.find("label=\"we\\\"ird\\\\scope\"; style=rounded") != std::string::npos);
    QVERIFY(dot.find("v0 [shape=ellipse, label=\"x\\\\in\\n[2]\"") != std::string::npos);
    QVERIFY(dot.find("tooltip=\"%l\\\"oss = aten::dot (scope we\\\"ird\\\\scope)\"") !=
            std::string::npos);
    QVERIFY(dot.find("label=\"C:\\\\models\\\\m.pt\"") != std::string::npos);
    QCOMPARE(occurrences(dot, "{"), occurrences(dot, "}"));
  }

  void graphJson() {
    Graph g = twoLayerGraph();
    json j = json::parse(toJson(g).dump());
    QCOMPARE(j["format"].get<std::string>(), std::string("hap-graph"));
    QCOMPARE(j["version"].get<int>(), 1);
    QCOMPARE(j["source"].get<std::string>(), std::string("/models/mlp.pt"));
    QCOMPARE(j["model"]["name"].get<std::string>(), std::string("mlp"));
    QCOMPARE(j["model"]["parameters"].get<int>(), 216);
    QCOMPARE(j["inputs"].get<std::vector<int>>(), std::vector<int>{0});
    QCOMPARE(j["parameters"].get<std::vector<int>>(), (std::vector<int>{1, 2, 5, 6, 9}));
    QCOMPARE(j["loss"].get<int>(), 11);

    QCOMPARE(j["values"].size(), size_t{12});
    const json& x = j["values"][0];
    QCOMPARE(x["kind"].get<std::string>(), std::string("input"));
    QCOMPARE(x["name"].get<std::string>(), std::string("x"));
    QCOMPARE(x["shape"].get<std::vector<int64_t>>(), (std::vector<int64_t>{4, 8}));
    QCOMPARE(x["dtype"].get<std::string>(), std::string("float32"));
    QVERIFY(x["producer"].is_null());
    QVERIFY(!x.contains("aliasOf"));
    QCOMPARE(j["values"][8]["producer"].get<int>(), 3);
    QCOMPARE(j["values"][8]["aliasOf"].get<int>(), 7);

    std::vector<std::string> ops;
    for (const json& n : j["nodes"]) ops.push_back(n["op"].get<std::string>());
    QCOMPARE(ops, (std::vector<std::string>{"aten::linear", "aten::relu", "aten::linear",
                                            "aten::relu_", "aten::mul", "aten::mean"}));
    const json& linear = j["nodes"][0];
    QCOMPARE(linear["scope"].get<std::string>(), std::string("layers.0.fc"));
    QCOMPARE(linear["loc"]["file"].get<std::string>(), std::string("/src/mlp.py"));
    QCOMPARE(linear["loc"]["line"].get<int>(), 21);
    QCOMPARE(linear["args"][1]["kind"].get<std::string>(), std::string("tensor"));
    QCOMPARE(linear["args"][1]["values"].get<std::vector<int>>(), std::vector<int>{1});
    QCOMPARE(linear["outputs"].get<std::vector<int>>(), std::vector<int>{3});
    QCOMPARE(linear["cost"]["flops"].get<double>(), 1088.0);
    QCOMPARE(linear["cost"]["bytesRead"].get<int64_t>(), int64_t{1152});
    QCOMPARE(linear["cost"]["bytesWritten"].get<int64_t>(), int64_t{256});
    QVERIFY(!j["nodes"][1].contains("loc"));
    QCOMPARE(j["nodes"][3]["inplace"].get<bool>(), true);
    QCOMPARE(j["nodes"][2]["inplace"].get<bool>(), false);

    const json& mean = j["nodes"][5];
    QCOMPARE(mean["overload"].get<std::string>(), std::string("dim"));
    QCOMPARE(mean["args"][1]["name"].get<std::string>(), std::string("dim"));
    QCOMPARE(mean["args"][1]["type"].get<std::string>(), std::string("int[1]?"));
    QCOMPARE(mean["args"][1]["kind"].get<std::string>(), std::string("constant"));
    QCOMPARE(mean["args"][1]["constant"], json::parse("[0, 1]"));
    QCOMPARE(mean["args"][2]["constant"], json(false));
    QVERIFY(mean["args"][3]["constant"].is_null());
    QVERIFY(mean["args"][3].contains("constant"));
    QVERIFY(!mean["args"][3].contains("values"));

    QCOMPARE(j["diagnostics"], json::parse(R"([
        {"severity": "warning", "node": 4,
         "message": "no sharding rule for aten::mul; it is replicated"},
        {"severity": "error", "node": null, "message": "the cluster has no devices"}])"));
  }

  void graphJsonConstantsAndModel() {
    Builder b;
    ValueId x = b.input("x", {2});
    std::vector<Arg> args = {tensor("self", x)};
    for (Constant c : std::vector<Constant>{
             std::monostate{}, true, int64_t{-3}, 2.5, std::string("cpu"),
             std::vector<int64_t>{1, 2}, std::vector<double>{0.5}, std::vector<bool>{true, false}})
      args.push_back(constant("c", "Any", c));
    b.g.loss = b.node("hap::test", "", std::move(args), "loss", {}, {});
    json nodes = json::parse(toJson(b.g).dump())["nodes"];
    json constants = json::array();
    for (size_t i = 1; i < nodes[0]["args"].size(); ++i)
      constants.push_back(nodes[0]["args"][i]["constant"]);
    QCOMPARE(constants,
             json::parse(R"([null, true, -3, 2.5, "cpu", [1, 2], [0.5], [true, false]])"));
    QVERIFY(constants[2].is_number_integer());
    QVERIFY(constants[3].is_number_float());

    QVERIFY(toJson(b.g)["model"].is_null());
    b.g.modelInfo = "not json";
    QCOMPARE(toJson(b.g)["model"], json("not json"));
  }

  void summaryJson() {
    json j = json::parse(toJson(summarize(twoLayerGraph(), 1)).dump());
    QCOMPARE(j["depth"].get<int>(), 1);
    QCOMPARE(j["scopes"].size(), size_t{4});
    QCOMPARE(j["scopes"][0], json::parse(R"({"scope": "layers.0", "parameters": 144,
        "parameterBytes": 576, "flops": 1152.0, "activationBytes": 512, "nodes": 2,
        "opCounts": {"linear": 1, "relu": 1}})"));
    QCOMPARE(j["scopes"][2]["scope"].get<std::string>(), std::string(""));
    QCOMPARE(j["total"]["parameters"].get<int64_t>(), int64_t{216});
    QCOMPARE(j["total"]["flops"].get<double>(), 1728.0);
    QCOMPARE(j["total"]["activationBytes"].get<int64_t>(), int64_t{708});
    QCOMPARE(j["total"]["opCounts"]["linear"].get<int>(), 2);
    QCOMPARE(j["values"]["parameterTensors"].get<int>(), 5);
    QCOMPARE(j["values"]["inputBytes"].get<int64_t>(), int64_t{128});
    QCOMPARE(j["diagnostics"], json::parse(R"({"warnings": 1, "errors": 1})"));
  }
};

QTEST_GUILESS_MAIN(TestSummary)
#include "tst_summary.moc"
