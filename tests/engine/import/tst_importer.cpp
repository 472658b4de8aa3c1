// Importer tests on the exported zoo (tiny presets) and the error-case fixtures.
#include <QtTest>

#include <nlohmann/json.hpp>
#include <set>

#include "engine/base/error.h"
#include "engine/import/importer.h"
#include "engine/ir/graph_json.h"

using namespace hap;

namespace {

QString envDir(const char* name) {
  QString dir = qEnvironmentVariable(name);
  if (dir.isEmpty()) qFatal("%s is not set (run the test through ctest)", name);
  return dir;
}

std::string zooModel(const char* name) {
  return (envDir("HAP_ZOO_DIR") + "/" + name + "-tiny.pt").toStdString();
}

std::string fixture(const char* name) {
  return (envDir("HAP_FIXTURE_DIR") + "/" + name).toStdString();
}

// The message of the hap::Error (of type E) that importing `path` throws, or "" if none.
template <typename E = Error>
QString importError(const std::string& path, const import::ImportOptions& options = {}) {
  try {
    import::importModel(path, options);
  } catch (const E& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

int countOp(const ir::Graph& g, const std::string& op) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(),
                                        [&](const ir::Node& n) { return n.op == op; }));
}

}  // namespace

class TstImporter : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void zooImports_data();
  void zooImports();
  void metaShapesEqualRealShapes_data() { zooImports_data(); }
  void metaShapesEqualRealShapes();
  void metaWeightsGiveTheSameGraph_data() { zooImports_data(); }
  void metaWeightsGiveTheSameGraph();
  void bertStructure();
  void inputOverrideWins();
  void largeMoEShapesWithoutCpuFallback();
  void opsFixture();
  void staticControlFlowIsFolded();
  void randomOpsOnFreshTensors();
  void errors_data();
  void errors();
  void malformedInputOverride();
};

void TstImporter::zooImports_data() {
  QTest::addColumn<QString>("model");
  for (const char* m : {"mlp", "bert", "vit", "vgg19", "bert_moe"}) QTest::newRow(m) << m;
}

// Every tiny preset imports with every value shaped, no diagnostics, and PyTorch's parameter count.
void TstImporter::zooImports() {
  QFETCH(QString, model);
  ir::Graph g = import::importModel(zooModel(model.toUtf8().constData()));
  g.check();
  QVERIFY(!g.nodes.empty());
  for (const ir::Diagnostic& d : g.diagnostics) qWarning("diagnostic: %s", d.message.c_str());
  QCOMPARE(g.diagnostics.size(), size_t{0});

  nlohmann::json info = nlohmann::json::parse(g.modelInfo);
  QCOMPARE(QString::fromStdString(info["name"].get<std::string>()), model);
  QCOMPARE(g.parameterCount(), info["parameters"].get<int64_t>());

  // The spec's declared batch (not the trace batch) shapes the inputs.
  const int64_t traceBatch = info["trace_batch"].get<int64_t>();
  QVERIFY(g.value(g.inputs[0]).shape[0] != traceBatch);
  QCOMPARE(g.value(g.loss).rank(), 0);
  for (const ir::Node& n : g.nodes) {
    QVERIFY2(n.op.rfind("prim::", 0) != 0, n.op.c_str());  // tensor operations only
    for (const ir::Arg& a : n.args)
      if (a.kind == ir::Arg::Kind::Constant)
        QVERIFY2(a.type.find("Tensor") == std::string::npos || a.constant.index() == 0,
                 (n.op + " " + a.name).c_str());
  }
}

// Weights left on the meta device (the app's fast import) change nothing in the graph.
void TstImporter::metaWeightsGiveTheSameGraph() {
  QFETCH(QString, model);
  const std::string path = zooModel(model.toUtf8().constData());
  import::ImportOptions fast;
  fast.metaWeights = true;
  const std::string withData = ir::toJson(import::importModel(path)).dump();
  const std::string withoutData = ir::toJson(import::importModel(path, fast)).dump();
  QVERIFY(withData == withoutData);
}

// Shape inference on meta tensors agrees with a real run of the same graph, value by value.
void TstImporter::metaShapesEqualRealShapes() {
  QFETCH(QString, model);
  const std::string path = zooModel(model.toUtf8().constData());
  ir::Graph meta = import::importModel(path);
  import::ImportOptions realRun;
  realRun.execution = import::ImportOptions::Execution::Real;
  ir::Graph real = import::importModel(path, realRun);
  QCOMPARE(meta.values.size(), real.values.size());
  QCOMPARE(meta.nodes.size(), real.nodes.size());
  for (size_t i = 0; i < meta.values.size(); ++i) {
    const ir::Value& a = meta.values[i];
    const ir::Value& b = real.values[i];
    QCOMPARE(a.name, b.name);
    QVERIFY2(a.shape == b.shape, (a.name + ": " + ir::formatShape(a.shape) + " vs " +
                                  ir::formatShape(b.shape))
                                     .c_str());
    QCOMPARE(a.dtype, b.dtype);
  }
}

void TstImporter::bertStructure() {
  ir::Graph g = import::importModel(zooModel("bert"));
  nlohmann::json config = nlohmann::json::parse(g.modelInfo)["config"];
  const int64_t layers = config["layers"].get<int64_t>();
  // Scopes are full qualified module paths, ModuleList indices included.
  std::set<std::string> scopes;
  for (const ir::Node& n : g.nodes) scopes.insert(n.scope);
  for (int64_t l = 0; l < layers; ++l) {
    bool found = false;
    for (const std::string& s : scopes) found = found || s.rfind("layers." + std::to_string(l) + ".", 0) == 0;
    QVERIFY2(found, ("no scope under layers." + std::to_string(l)).c_str());
  }
  // Parameters carry qualified names and buffers are told apart from parameters.
  bool qualified = false;
  for (ir::ValueId p : g.parameters) qualified = qualified || g.value(p).name.rfind("layers.0.", 0) == 0;
  QVERIFY(qualified);
  QCOMPARE(g.buffers.size(), size_t{1});
  QCOMPARE(countOp(g, "aten::cross_entropy_loss"), 1);
  QCOMPARE(countOp(g, "aten::embedding"), 2);
  // Linear layers carry their cost: every linear has 2·rows·in·out (+ bias) FLOPs.
  for (const ir::Node& n : g.nodes) {
    if (n.op != "aten::linear") continue;
    const ir::Value& x = g.value(n.args[0].values[0]);
    const ir::Value& w = g.value(n.args[1].values[0]);
    const double rows = static_cast<double>(x.numel() / x.shape.back());
    const double expected = 2 * rows * w.shape[1] * w.shape[0] + rows * w.shape[0];
    QCOMPARE(n.cost.flops, expected);
  }
  // Source locations are kept.
  QVERIFY(std::any_of(g.nodes.begin(), g.nodes.end(),
                      [](const ir::Node& n) { return n.loc.known(); }));
}

void TstImporter::inputOverrideWins() {
  import::ImportOptions options;
  options.inputOverrides = {import::parseInputArg("x=7x16"), import::parseInputArg("y=7x16")};
  ir::Graph g = import::importModel(zooModel("bert"), options);
  QCOMPARE(g.value(g.inputs[0]).shape, (ir::Shape{7, 16}));
  QCOMPARE(g.value(g.inputs[0]).dtype, ir::DType::Int64);  // no dtype given: the file's stays
  // The batch flows through the whole graph: the logits have 7·16 rows.
  bool found = false;
  for (const ir::Node& n : g.nodes)
    if (n.op == "aten::cross_entropy_loss") found = g.value(n.args[0].values[0]).shape[0] == 7 * 16;
  QVERIFY(found);
}

// relu and one_hot (no meta kernels in LibTorch 1.13) are shaped without running them on CPU
// zeros: at a batch of 2^20 the tiny MoE's relu input is 6 GiB and its one_hot results 512 MiB,
// yet the import passes with a CPU fallback limit of zero bytes.
void TstImporter::largeMoEShapesWithoutCpuFallback() {
  import::ImportOptions options;
  options.inputOverrides = {import::parseInputArg("x=1048576x16"), import::parseInputArg("y=1048576x16")};
  options.cpuFallbackLimitBytes = 0;
  ir::Graph g = import::importModel(zooModel("bert_moe"), options);
  const nlohmann::json config = nlohmann::json::parse(g.modelInfo)["config"];
  const int64_t experts = config["devices"].get<int64_t>() * config["experts_per_device"].get<int64_t>();
  int relus = 0, expertMasks = 0, slotMasks = 0;
  for (const ir::Node& n : g.nodes) {
    if (n.op != "aten::relu" && n.op != "aten::one_hot") continue;
    const ir::Value& in = g.value(n.args[0].values[0]);
    const ir::Value& out = g.value(n.outputs[0]);
    QCOMPARE(out.shape[0], int64_t{1048576});
    if (n.op == "aten::relu") {
      ++relus;
      QCOMPARE(out.shape, in.shape);
      QCOMPARE(out.dtype, in.dtype);
      continue;
    }
    QCOMPARE(out.dtype, ir::DType::Int64);
    QCOMPARE(ir::Shape(out.shape.begin(), out.shape.end() - 1), in.shape);
    ++(out.shape.back() == experts ? expertMasks : slotMasks);
  }
  QVERIFY(relus > 0);
  QCOMPARE(expertMasks, 2 * relus);  // per MoE layer: first and second choices
  QCOMPARE(slotMasks, 2 * relus);
}

void TstImporter::opsFixture() {
  ir::Graph g = import::importModel(fixture("ops.pt"));
  g.check();
  // In-place ops are recorded with the value they overwrite.
  int inplace = 0;
  for (const ir::Node& n : g.nodes) {
    if (!n.inplace) continue;
    ++inplace;
    const ir::Value& out = g.value(n.outputs[0]);
    QCOMPARE(out.aliasOf, n.args[0].values[0]);
    QCOMPARE(out.shape, g.value(out.aliasOf).shape);
  }
  QVERIFY(inplace >= 2);
  // A list-returning op (chunk) yields one output per element; cat takes them as a list.
  for (const ir::Node& n : g.nodes) {
    if (n.op == "aten::chunk") QVERIFY(n.outputs.size() >= 2);
    if (n.op == "aten::cat") QCOMPARE(n.args[0].kind, ir::Arg::Kind::TensorList);
    if (n.op == "aten::max") QCOMPARE(n.outputs.size(), size_t{2});
  }
  QCOMPARE(countOp(g, "aten::chunk"), 1);
  QCOMPARE(countOp(g, "aten::max"), 1);
  // Bias-free linear: the bias argument is the constant None.
  bool biasFree = false;
  for (const ir::Node& n : g.nodes)
    if (n.op == "aten::linear" && n.arg("bias")->kind == ir::Arg::Kind::Constant)
      biasFree = n.arg("bias")->constant.index() == 0;
  QVERIFY(biasFree);
  // Size arithmetic (aten::size, NumToTensor, integer mul/div, aten::Int) is folded away.
  for (const char* folded : {"aten::size", "prim::NumToTensor", "aten::Int", "aten::floor_divide"})
    QCOMPARE(countOp(g, folded), 0);
}

void TstImporter::staticControlFlowIsFolded() {
  ir::Graph g = import::importModel(fixture("static_if.pt"));
  g.check();
  // The constant-trip loop calling fc three times is unrolled into three linear nodes in scope fc.
  int fc = 0, head = 0;
  for (const ir::Node& n : g.nodes) {
    if (n.op != "aten::linear") continue;
    fc += n.scope == "fc";
    head += n.scope == "head";
  }
  QCOMPARE(fc, 3);
  QCOMPARE(head, 1);
  QCOMPARE(countOp(g, "aten::relu"), 1);  // the `x.dim() == 2` branch was taken
  QCOMPARE(countOp(g, "aten::flatten"), 0);
}

void TstImporter::errors_data() {
  QTest::addColumn<QString>("file");
  QTest::addColumn<QStringList>("expected");  // fragments of the message, in order
  QTest::newRow("missing file") << "does_not_exist.pt" << QStringList{"does_not_exist.pt", "no such file"};
  QTest::newRow("not an archive")
      << "not_archive.pt" << QStringList{"not_archive.pt", "not a TorchScript archive"};
  QTest::newRow("no input spec")
      << "no_spec.pt"
      << QStringList{"no_spec.pt", "no input specification for forward argument 'x'",
                     "the file has no hap/inputs.json", "--input x="};
  QTest::newRow("control flow")
      << "control_flow.pt"
      << QStringList{"control_flow.pt: node", "aten::Bool", ".py:", "to decide control flow"};
  QTest::newRow("non-scalar forward")
      << "non_scalar.pt"
      << QStringList{"non_scalar.pt: node", "aten::linear", "shape [", "HAP needs a scalar loss"};
  QTest::newRow("tuple forward") << "tuple_out.pt"
                                 << QStringList{"tuple_out.pt", "returns a tuple or list of 2"};
  QTest::newRow("unknown dtype")
      << "bad_dtype.pt"
      << QStringList{"bad_dtype.pt:hap/inputs.json", "inputs[0].dtype", "unknown dtype 'complex999'"};
}

// Stochastic depth (torchvision) and drop path (timm) fill a fresh tensor in place with
// bernoulli_: torch.empty of constant sizes becomes a graph constant (x.new_empty a factory
// node), and the random fill a node of the graph writing it.
void TstImporter::randomOpsOnFreshTensors() {
  const ir::Graph g = import::importModel(fixture("stochastic_depth.pt"));
  QStringList targets;
  for (const ir::Node& n : g.nodes) {
    if (n.op != "aten::bernoulli_") continue;
    QVERIFY(n.inplace);
    const ir::Value& target = g.value(n.tensorInputs()[0]);
    QCOMPARE(target.shape, (ir::Shape{4, 1}));
    QCOMPARE(g.value(n.outputs[0]).aliasOf, target.id);
    targets << (target.kind == ir::ValueKind::Constant ? "constant" : QString::fromStdString(g.node(target.producer).op));
  }
  QCOMPARE(targets, (QStringList{"constant", "aten::new_empty"}));
  // The random fill has a cost formula (bytes written, as a factory): no "no cost formula" warning.
  for (const ir::Diagnostic& d : g.diagnostics) QVERIFY2(d.message.find("bernoulli") == std::string::npos, d.message.c_str());
}

void TstImporter::errors() {
  QFETCH(QString, file);
  QFETCH(QStringList, expected);
  QString message = importError(fixture(file.toUtf8().constData()));
  QVERIFY2(!message.isEmpty(), "no error thrown");
  qsizetype at = 0;
  for (const QString& fragment : expected) {
    qsizetype found = message.indexOf(fragment, at);
    QVERIFY2(found >= 0, qPrintable(QString("'%1' not in: %2").arg(fragment, message)));
    at = found + fragment.size();
  }
}

void TstImporter::malformedInputOverride() {
  // An override naming no forward argument is refused with the argument list.
  import::ImportOptions options;
  options.inputOverrides = {import::parseInputArg("z=4x4:float32")};
  QString message = importError<InputSpecError>(zooModel("mlp"), options);
  QVERIFY2(message.contains("names 'z', but forward takes (x, y)"), qPrintable(message));
}

QTEST_GUILESS_MAIN(TstImporter)
#include "tst_importer.moc"
