// PropertiesModel: what the properties panel shows for a node, a value and a scope of mlp-tiny,
// with links to producers, consumers and scopes; with a plan (bert-tiny on 2 A100 + 2 P100) the
// node's variant, its input and output forms with every rank's exact lengths, its segment and its
// predicted time per device, and a value's forms and collectives.
#include <QAbstractItemModelTester>
#include <QtTest>

#include <memory>

#include <QDir>
#include <QTreeView>

#include "app/studio/core/graph/plan_overlay.h"
#include "app/studio/core/models/properties_model.h"
#include "app/studio/core/display/units.h"
#include "app/studio/widgets/properties_panel.h"
#include "engine/import/importer.h"
#include "engine/ir/summary.h"
#include "tests/studio/plan_fixture.h"

using namespace hap;
using hap::studio::formatDuration;
using hap::studio::PlanDocument;
using hap::studio::PropertiesModel;
using hap::studio::PropertiesPanel;
using hap::studio::ScopeTree;
using hap::studio::Selection;

namespace {

std::shared_ptr<const ir::Graph> loadZoo(const char* file) {
  const QByteArray dir = qgetenv("HAP_ZOO_DIR");
  return std::make_shared<const ir::Graph>(import::importModel(dir.toStdString() + "/" + file));
}

// The row named `name` under `parent` (column 0), or an invalid index.
QModelIndex row(const QAbstractItemModel& m, const QString& name, const QModelIndex& parent = {}) {
  for (int r = 0; r < m.rowCount(parent); ++r)
    if (m.index(r, 0, parent).data().toString() == name) return m.index(r, 0, parent);
  return {};
}

QString valueOf(const QModelIndex& nameIndex) {
  return nameIndex.siblingAtColumn(PropertiesModel::ValueColumn).data().toString();
}

// "G(0) lengths 3, 3, 2, 0", "I (replicated)", from the plan's own numbers (not formText).
QString expectedForm(const hap::plan::Form& f) {
  if (hap::rules::isGather(f.rel)) {
    QStringList lengths;
    for (int64_t l : f.lengths) lengths << QString::number(l);
    return QStringLiteral("G(%1) lengths %2").arg(f.rel).arg(lengths.join(QStringLiteral(", ")));
  }
  return f.rel == hap::rules::kReduce ? QStringLiteral("R (partial sum)")
                                      : QStringLiteral("I (replicated)");
}

}  // namespace

class TestPropertiesModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    m_graph = loadZoo("mlp-tiny.pt");
    m_scopes = std::make_shared<const ScopeTree>(*m_graph);
  }

  void init() {
    m_model = std::make_unique<PropertiesModel>();
    m_tester = std::make_unique<QAbstractItemModelTester>(
        m_model.get(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    m_model->setGraph(m_graph, m_scopes);
  }
  void cleanup() {
    m_tester.reset();
    m_model.reset();
  }

  void emptySelections() {
    QCOMPARE(m_model->rowCount(), 0);
    QCOMPARE(m_model->columnCount(), 2);
    m_model->setSelection(Selection::node(9999));
    QCOMPARE(m_model->rowCount(), 0);
    m_model->setSelection(Selection::value(-3));
    QCOMPARE(m_model->rowCount(), 0);
    m_model->setSelection(Selection::scope(9999));
    QCOMPARE(m_model->rowCount(), 0);
    QVERIFY(m_model->title().isEmpty());
    m_model->setGraph(nullptr, nullptr);
    m_model->setSelection(Selection::node(0));
    QCOMPARE(m_model->rowCount(), 0);
  }

  void node() {
    const ir::Graph& g = *m_graph;
    const ir::Node& n = g.node(0);  // hidden.0: aten::linear(x, hidden.0.weight, hidden.0.bias)
    m_model->setSelection(Selection::node(0));
    QCOMPARE(m_model->title(), QStringLiteral("Node #0  aten::linear"));
    const PropertiesModel& m = *m_model;

    QCOMPARE(valueOf(row(m, QStringLiteral("op"))), QStringLiteral("aten::linear"));
    const QString signature = valueOf(row(m, QStringLiteral("signature")));
    QVERIFY2(signature.startsWith(QStringLiteral("aten::linear(Tensor input=x, Tensor weight=hidden.0.weight, ")),
             qPrintable(signature));
    QVERIFY2(signature.endsWith(QStringLiteral("bias=hidden.0.bias) -> Tensor")), qPrintable(signature));

    const QModelIndex scope = row(m, QStringLiteral("scope"));
    QCOMPARE(valueOf(scope), QStringLiteral("hidden.0"));
    QCOMPARE(PropertiesModel::link(scope), Selection::scope(m_scopes->find("hidden.0")));
    QVERIFY(m_scopes->find("hidden.0") > 0);

    const QString source = valueOf(row(m, QStringLiteral("source")));
    QCOMPARE(source, QString::fromStdString(n.loc.str()));
    QCOMPARE(source, QStringLiteral("linear.py:12"));

    // Inputs: x (an input), then the weight and bias parameters, with shapes and kinds.
    const QModelIndex inputs = row(m, QStringLiteral("Inputs"));
    QVERIFY(inputs.isValid());
    QCOMPARE(m.rowCount(inputs), 3);
    QCOMPARE(valueOf(m.index(0, 0, inputs)), QStringLiteral("x · float32 [4, 16] · input"));
    const QModelIndex weight = row(m, QStringLiteral("weight"), inputs);
    QCOMPARE(valueOf(weight), QStringLiteral("hidden.0.weight · float32 [32, 16] · parameter"));
    QCOMPARE(PropertiesModel::link(weight), Selection::value(n.arg("weight")->values.front()));
    QCOMPARE(PropertiesModel::link(weight.siblingAtColumn(1)), PropertiesModel::link(weight));

    const QModelIndex outputs = row(m, QStringLiteral("Outputs"));
    QCOMPARE(m.rowCount(outputs), 1);
    const ir::Value& out = g.value(n.outputs.front());
    QCOMPARE(valueOf(m.index(0, 0, outputs)),
             QStringLiteral("%%1 · float32 [4, 32]").arg(QString::fromStdString(out.name)));
    QCOMPARE(PropertiesModel::link(m.index(0, 0, outputs)), Selection::value(out.id));

    const QModelIndex cost = row(m, QStringLiteral("Cost"));
    QCOMPARE(valueOf(row(m, QStringLiteral("FLOPs"), cost)),
             QString::fromStdString(ir::formatCount(n.cost.flops)));
    QCOMPARE(valueOf(row(m, QStringLiteral("bytes written"), cost)),
             QString::fromStdString(ir::formatBytes(n.cost.bytesWritten)));
    QVERIFY(row(m, QStringLiteral("bytes read"), cost).isValid());

    const QModelIndex params = row(m, QStringLiteral("Parameters"));
    QCOMPARE(valueOf(params), QStringLiteral("2 tensors, 544 elements (2.12 KiB)"));
    QCOMPARE(m.rowCount(params), 2);
    QVERIFY(params.data(PropertiesModel::IsGroupRole).toBool());
    QVERIFY(!row(m, QStringLiteral("op")).data(PropertiesModel::IsGroupRole).toBool());
    QVERIFY(PropertiesModel::link(row(m, QStringLiteral("op"))).empty());
  }

  void nodeAttributes() {
    // log_softmax(self, dim=-1, dtype=None)
    int id = -1;
    for (const ir::Node& n : m_graph->nodes)
      if (n.op == "aten::log_softmax") id = n.id;
    QVERIFY(id >= 0);
    m_model->setSelection(Selection::node(id));
    const QModelIndex attributes = row(*m_model, QStringLiteral("Attributes"));
    QCOMPARE(m_model->rowCount(attributes), 2);
    QCOMPARE(valueOf(row(*m_model, QStringLiteral("dim"), attributes)), QStringLiteral("-1"));
    QCOMPARE(valueOf(row(*m_model, QStringLiteral("dtype"), attributes)), QStringLiteral("None"));
    QVERIFY(valueOf(row(*m_model, QStringLiteral("signature"))).contains(QStringLiteral("int dim=-1")));
  }

  void activationValue() {
    const ir::Graph& g = *m_graph;
    const ir::ValueId v = g.node(0).outputs.front();  // hidden.0's output, read by relu (node 1)
    m_model->setSelection(Selection::value(v));
    const PropertiesModel& m = *m_model;
    QCOMPARE(valueOf(row(m, QStringLiteral("kind"))), QStringLiteral("activation"));
    QCOMPARE(valueOf(row(m, QStringLiteral("shape"))), QStringLiteral("[4, 32]"));
    QCOMPARE(valueOf(row(m, QStringLiteral("dtype"))), QStringLiteral("float32"));
    QCOMPARE(valueOf(row(m, QStringLiteral("bytes"))), QStringLiteral("512 B"));
    const QModelIndex producer = row(m, QStringLiteral("producer"));
    QCOMPARE(valueOf(producer), QStringLiteral("aten::linear #0 · hidden.0"));
    QCOMPARE(PropertiesModel::link(producer), Selection::node(0));
    const QModelIndex consumers = row(m, QStringLiteral("Consumers"));
    QCOMPARE(m.rowCount(consumers), 1);
    QCOMPARE(PropertiesModel::link(m.index(0, 1, consumers)), Selection::node(1));
    QCOMPARE(valueOf(m.index(0, 0, consumers)), QStringLiteral("aten::relu #1 · (top)"));
  }

  void parameterValue() {
    const ir::Graph& g = *m_graph;
    const ir::ValueId w = g.node(2).arg("weight")->values.front();  // hidden.1.weight
    m_model->setSelection(Selection::value(w));
    const PropertiesModel& m = *m_model;
    QCOMPARE(m.title(), QStringLiteral("Parameter hidden.1.weight"));
    QCOMPARE(valueOf(row(m, QStringLiteral("kind"))), QStringLiteral("parameter"));
    QCOMPARE(valueOf(row(m, QStringLiteral("elements"))), QStringLiteral("1.02K"));
    QVERIFY(!row(m, QStringLiteral("producer")).isValid());
    const QModelIndex owner = row(m, QStringLiteral("owner scope"));
    QCOMPARE(valueOf(owner), QStringLiteral("hidden.1"));
    QCOMPARE(PropertiesModel::link(owner), Selection::scope(m_scopes->find("hidden.1")));
    const QModelIndex consumers = row(m, QStringLiteral("Consumers"));
    QCOMPARE(m.rowCount(consumers), 1);
    QCOMPARE(PropertiesModel::link(m.index(0, 0, consumers)), Selection::node(2));
  }

  void scope() {
    const studio::ScopeId s = m_scopes->find("hidden.0");
    m_model->setSelection(Selection::scope(s));
    const PropertiesModel& m = *m_model;
    QCOMPARE(m.title(), QStringLiteral("Scope hidden.0"));
    QCOMPARE(valueOf(row(m, QStringLiteral("path"))), QStringLiteral("hidden.0"));
    QCOMPARE(valueOf(row(m, QStringLiteral("ops"))), QStringLiteral("1"));
    QCOMPARE(valueOf(row(m, QStringLiteral("parameters"))), QStringLiteral("544"));
    QCOMPARE(valueOf(row(m, QStringLiteral("FLOPs"))), QStringLiteral("4.22K"));
    QCOMPARE(valueOf(row(m, QStringLiteral("activations"))), QStringLiteral("512 B"));
    const QModelIndex ops = row(m, QStringLiteral("Op counts"));
    QCOMPARE(m.rowCount(ops), 1);
    QCOMPARE(valueOf(row(m, QStringLiteral("linear"), ops)), QStringLiteral("1"));
    const QModelIndex parent = row(m, QStringLiteral("parent"));
    QCOMPARE(PropertiesModel::link(parent), Selection::scope(studio::kRootScope));

    // The root covers the whole model: every op, every parameter.
    m_model->setSelection(Selection::scope(studio::kRootScope));
    QCOMPARE(valueOf(row(m, QStringLiteral("path"))), QStringLiteral("(top)"));
    QCOMPARE(valueOf(row(m, QStringLiteral("ops"))), QString::number(m_graph->nodes.size()));
    QCOMPARE(valueOf(row(m, QStringLiteral("parameters"))),
             QString::fromStdString(ir::formatCount(double(m_graph->parameterCount()))));
    const QModelIndex rootOps = row(m, QStringLiteral("Op counts"));
    QCOMPARE(valueOf(row(m, QStringLiteral("linear"), rootOps)), QStringLiteral("3"));
    QCOMPARE(valueOf(row(m, QStringLiteral("relu"), rootOps)), QStringLiteral("2"));
    const QModelIndex children = row(m, QStringLiteral("Sub-scopes"));
    QVERIFY(m.rowCount(children) >= 3);
    for (int r = 0; r < m.rowCount(children); ++r)
      QCOMPARE(PropertiesModel::link(m.index(r, 0, children)).kind, Selection::Kind::Scope);
  }

  // Every node, value and scope of the larger zoo models shows without a problem the model
  // tester sees, and every link points at something that exists.
  void everySelection_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<bool>("withPlan");
    QTest::newRow("bert-tiny") << QStringLiteral("bert-tiny.pt") << false;
    QTest::newRow("bert_moe-tiny") << QStringLiteral("bert_moe-tiny.pt") << false;
    QTest::newRow("vgg19-tiny") << QStringLiteral("vgg19-tiny.pt") << false;
    QTest::newRow("bert-tiny with a plan") << QStringLiteral("bert-tiny.pt") << true;
  }
  void everySelection() {
    QFETCH(QString, file);
    QFETCH(bool, withPlan);
    std::shared_ptr<const PlanDocument> doc;
    if (withPlan)
      doc = hap::studio::testing::planZoo(file.toUtf8().constData(), "a100-p100-4.yaml");
    auto g = doc ? doc->imported : loadZoo(file.toUtf8().constData());
    auto scopes = std::make_shared<const ScopeTree>(*g);
    m_model->setGraph(g, scopes);
    m_model->setPlan(doc);
    std::vector<Selection> all;
    for (const ir::Node& n : g->nodes) all.push_back(Selection::node(n.id));
    for (const ir::Value& v : g->values) all.push_back(Selection::value(v.id));
    for (const studio::Scope& s : scopes->scopes()) all.push_back(Selection::scope(s.id));
    for (Selection s : all) {
      m_model->setSelection(s);
      QVERIFY(m_model->rowCount() > 0);
      QVERIFY(!m_model->title().isEmpty());
      std::vector<QModelIndex> stack = {QModelIndex()};
      while (!stack.empty()) {
        QModelIndex parent = stack.back();
        stack.pop_back();
        for (int r = 0; r < m_model->rowCount(parent); ++r) {
          QModelIndex i = m_model->index(r, 0, parent);
          Selection link = PropertiesModel::link(i);
          if (link.kind == Selection::Kind::Node) QVERIFY(link.id < int(g->nodes.size()));
          if (link.kind == Selection::Kind::Value) QVERIFY(link.id < int(g->values.size()));
          if (link.kind == Selection::Kind::Scope) QVERIFY(link.id < scopes->size());
          QVERIFY(link.id >= -1);
          stack.push_back(i);
        }
      }
      if (withPlan) QVERIFY(row(*m_model, QStringLiteral("Plan")).isValid());
    }
  }

  // ---- with a plan ----

  // A column-parallel linear: its variant, segment, every input's and output's form with each
  // rank's exact length, and its time per device, all equal to its Compute step's.
  void planRowsOfANode() {
    const auto doc = hap::studio::testing::planWithCollectives();
    const ir::Graph& g = *doc->imported;
    const hap::plan::Plan& p = doc->p();
    auto scopes = std::make_shared<const ScopeTree>(g);
    m_model->setGraph(doc->imported, scopes);
    ir::NodeId linear = ir::kNone;
    for (const ir::Node& n : g.nodes) {
      const int step = [&] {
        for (int s : doc->stepsOfNode(n.id))
          if (p.steps[static_cast<size_t>(s)].kind == hap::plan::PlanStep::Kind::Compute) return s;
        return -1;
      }();
      if (n.op == "aten::linear" && p.steps[static_cast<size_t>(step)].variant == "column") {
        linear = n.id;
        break;
      }
    }
    QVERIFY(linear != ir::kNone);
    m_model->setSelection(Selection::node(linear));
    QVERIFY(!row(*m_model, QStringLiteral("Plan")).isValid());
    m_model->setPlan(doc);
    QCOMPARE(m_model->selection(), Selection::node(linear));  // kept
    const QModelIndex plan = row(*m_model, QStringLiteral("Plan"));
    QVERIFY(plan.isValid());
    const hap::plan::PlanStep* step = nullptr;
    for (int s : doc->stepsOfNode(linear))
      if (p.steps[static_cast<size_t>(s)].kind == hap::plan::PlanStep::Kind::Compute)
        step = &p.steps[static_cast<size_t>(s)];
    QVERIFY(step);
    QCOMPARE(valueOf(row(*m_model, QStringLiteral("variant"), plan)), QStringLiteral("column"));
    const int segment = p.importedNodeSegment[static_cast<size_t>(linear)];
    QCOMPARE(valueOf(row(*m_model, QStringLiteral("segment"), plan)),
             QString::fromStdString(p.segments[static_cast<size_t>(segment)].name));

    // Inputs in argument order (input, weight, bias), each with its exact per-rank lengths.
    const QModelIndex inputs = row(*m_model, QStringLiteral("Input forms"), plan);
    QVERIFY(inputs.isValid());
    QCOMPARE(m_model->rowCount(inputs), static_cast<int>(step->inputs.size()));
    int sharded = 0;
    for (int r = 0; r < m_model->rowCount(inputs); ++r) {
      const hap::plan::Form& f = step->inputs[static_cast<size_t>(r)];
      const QString text = valueOf(m_model->index(r, 0, inputs));
      QVERIFY2(text.contains(expectedForm(f)),
               qPrintable(text + QStringLiteral(" / ") + expectedForm(f)));
      // The imported value (a resharded copy, f.value past the imported values, stands for it).
      QCOMPARE(PropertiesModel::link(m_model->index(r, 0, inputs)),
               Selection::value(g.node(linear).tensorInputs()[static_cast<size_t>(r)]));
      sharded += hap::rules::isGather(f.rel);
    }
    QVERIFY(sharded >= 1);  // the weight's rows
    const QModelIndex outputs = row(*m_model, QStringLiteral("Output forms"), plan);
    QCOMPARE(m_model->rowCount(outputs), static_cast<int>(step->outputs.size()));
    const QString out = valueOf(m_model->index(0, 0, outputs));
    QVERIFY2(out.contains(expectedForm(step->outputs.front())), qPrintable(out));
    QVERIFY(hap::rules::isGather(step->outputs.front().rel));
    // Uneven devices: the lengths are not all equal somewhere.
    qInfo("column linear #%d output: %s", linear, qPrintable(out));

    // Time per device: forward and backward at each device's group.
    const QModelIndex time = row(*m_model, QStringLiteral("Predicted time"), plan);
    QCOMPARE(m_model->rowCount(time), static_cast<int>(p.devices.size()));
    for (int r = 0; r < m_model->rowCount(time); ++r) {
      const size_t group = static_cast<size_t>(p.devices[static_cast<size_t>(r)].group);
      const double fwd = step->forwardByGroup[group], bwd = step->backwardByGroup[group];
      QVERIFY(m_model->index(r, 0, time)
                  .data()
                  .toString()
                  .startsWith(QStringLiteral("rank %1").arg(r)));
      QCOMPARE(valueOf(m_model->index(r, 0, time)),
               QStringLiteral("%1 (fwd %2, bwd %3)")
                   .arg(formatDuration(fwd + bwd), formatDuration(fwd), formatDuration(bwd)));
    }
    m_model->setPlan(nullptr);
    QVERIFY(!row(*m_model, QStringLiteral("Plan")).isValid());
    QCOMPARE(m_model->selection(), Selection::node(linear));
  }

  // A value read after an all-reduce: its form, its reads and the collective.
  void planRowsOfAValue() {
    const auto doc = hap::studio::testing::planWithCollectives();
    const hap::plan::Plan& p = doc->p();
    auto scopes = std::make_shared<const ScopeTree>(*doc->imported);
    m_model->setGraph(doc->imported, scopes);
    m_model->setPlan(doc);
    const hap::plan::PlanStep* allReduce = nullptr;
    for (const hap::plan::PlanStep& s : p.steps)
      if (s.kind == hap::plan::PlanStep::Kind::Convert && s.instruction == "all-reduce") {
        allReduce = &s;
        break;
      }
    QVERIFY(allReduce);
    const ir::ValueId v = allReduce->to.value;
    m_model->setSelection(Selection::value(v));
    const QModelIndex plan = row(*m_model, QStringLiteral("Plan"));
    QVERIFY(plan.isValid());
    QCOMPARE(valueOf(row(*m_model, QStringLiteral("form"), plan)),
             QStringLiteral("R (partial sum)"));
    const QModelIndex reads = row(*m_model, QStringLiteral("Reads"), plan);
    QCOMPARE(m_model->rowCount(reads), static_cast<int>(doc->imported->value(v).users.size()));
    const QModelIndex conversions = row(*m_model, QStringLiteral("Conversions"), plan);
    QVERIFY(conversions.isValid());
    const QModelIndex ar = row(*m_model, QStringLiteral("all-reduce"), conversions);
    QVERIFY(ar.isValid());
    QVERIFY2(valueOf(ar).startsWith(
                 QStringLiteral("R → I · %1").arg(formatDuration(allReduce->seconds()))),
             qPrintable(valueOf(ar)));
    // The consumer it prepares.
    QCOMPARE(PropertiesModel::link(ar),
             Selection::node(doc->stepNode(static_cast<int>(allReduce - p.steps.data()))));
  }

  // The panel with a plan, for the screenshots.
  void panelWithAPlan() {
    const auto doc = hap::studio::testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    auto scopes = std::make_shared<const ScopeTree>(*doc->imported);
    PropertiesPanel panel;
    panel.resize(560, 760);
    panel.setGraph(doc->imported, scopes);
    ir::NodeId linear = ir::kNone, norm = ir::kNone;
    for (const ir::Node& n : doc->imported->nodes) {
      if (n.op == "aten::linear" && linear == ir::kNone &&
          doc->p().steps[static_cast<size_t>(doc->stepsOfNode(n.id).back())].variant == "column")
        linear = n.id;
      if (n.op == "aten::layer_norm" && norm == ir::kNone && !n.scope.empty() && n.scope != "norm")
        norm = n.id;
    }
    panel.showSelection(Selection::node(linear));
    panel.setPlan(doc);
    QCOMPARE(panel.selection(), Selection::node(linear));
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QDir().mkpath(QStringLiteral("/tmp/shots"));
    panel.view()->scrollToBottom();
    QVERIFY(panel.grab().save(QStringLiteral("/tmp/shots/overlay_properties_node.png")));
    panel.showSelection(Selection::node(norm));
    panel.view()->scrollToBottom();
    QVERIFY(panel.grab().save(QStringLiteral("/tmp/shots/overlay_properties_norm.png")));
    const ir::ValueId v = doc->imported->node(norm).tensorInputs().front();
    panel.showSelection(Selection::value(v));
    QVERIFY(panel.grab().save(QStringLiteral("/tmp/shots/overlay_properties_value.png")));
    panel.showSelection(Selection::scope(scopes->find("layers.0")));
    panel.view()->scrollToBottom();
    QVERIFY(panel.grab().save(QStringLiteral("/tmp/shots/overlay_properties_scope.png")));
  }

 private:
  std::shared_ptr<const ir::Graph> m_graph;
  std::shared_ptr<const ScopeTree> m_scopes;
  std::unique_ptr<PropertiesModel> m_model;
  std::unique_ptr<QAbstractItemModelTester> m_tester;
};

QTEST_MAIN(TestPropertiesModel)
#include "tst_properties_model.moc"
