// "Colour by": op families of known ops, legends that list what is present, the numeric ramp,
// collapsed-scope aggregates, the plan hooks fed from outside, and the plan modes (sharding form,
// rule variant, segment, device cost) of a real plan.
#include <QtTest>

#include <cmath>
#include <memory>
#include <set>

#include "app/studio/core/graph/colouring.h"
#include "app/studio/core/graph/graph_layout.h"
#include "app/studio/core/graph/plan_overlay.h"
#include "app/studio/core/graph/scope_tree.h"
#include "engine/import/importer.h"
#include "tests/studio/plan_fixture.h"

using namespace hap;
using namespace hap::studio;

namespace {

// x → a.fc (linear, 100 FLOPs) → a.act (relu, 10) → b.fc (linear, 1000) → sum (top level, 1).
ir::Graph smallGraph() {
  ir::Graph g;
  ir::ValueId x = g.addValue(ir::ValueKind::Input, "x", {4, 8}, ir::DType::Float32);
  g.inputs.push_back(x);
  auto op = [&](const char* name, const char* scope, ir::ValueId in, ir::Shape shape,
                double flops) {
    ir::Node n;
    n.op = name;
    n.scope = scope;
    ir::Arg a;
    a.name = "input";
    a.type = "Tensor";
    a.kind = ir::Arg::Kind::Tensor;
    a.values = {in};
    n.args.push_back(a);
    ir::ValueId out = g.addValue(ir::ValueKind::Activation, std::string("v") + scope, shape,
                                 ir::DType::Float32);
    n.outputs = {out};
    n.cost.flops = flops;
    n.cost.bytesWritten = ir::numel(shape) * 4;
    g.addNode(std::move(n));
    return out;
  };
  ir::ValueId h = op("aten::linear", "a.fc", x, {4, 8}, 100);
  h = op("aten::relu", "a.act", h, {4, 8}, 10);
  h = op("aten::linear", "b.fc", h, {4, 8}, 1000);
  g.loss = op("aten::sum", "", h, {}, 1);
  return g;
}

double luminance(const QColor& c) {
  return 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF();
}

std::vector<QString> labels(const ColourLegend& l) {
  std::vector<QString> out;
  for (const auto& e : l.entries) out.push_back(e.first);
  return out;
}

}  // namespace

class TestColouring : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void familiesOfKnownOps_data() {
    QTest::addColumn<QString>("op");
    QTest::addColumn<int>("family");
    auto row = [](const char* op, OpFamily f) {
      QTest::newRow(op) << QString::fromLatin1(op) << static_cast<int>(f);
    };
    row("aten::linear", OpFamily::MatMul);
    row("aten::matmul", OpFamily::MatMul);
    row("aten::bmm", OpFamily::MatMul);
    row("aten::addmm", OpFamily::MatMul);
    row("aten::einsum", OpFamily::MatMul);
    row("aten::conv2d", OpFamily::Convolution);
    row("aten::_convolution", OpFamily::Convolution);
    row("aten::max_pool2d", OpFamily::Convolution);
    row("aten::adaptive_avg_pool2d", OpFamily::Convolution);
    row("aten::layer_norm", OpFamily::Normalisation);
    row("aten::native_batch_norm", OpFamily::Normalisation);
    row("aten::group_norm", OpFamily::Normalisation);
    row("aten::gelu", OpFamily::Activation);
    row("aten::relu_", OpFamily::Activation);
    row("aten::silu", OpFamily::Activation);
    row("aten::add", OpFamily::Elementwise);
    row("aten::mul_", OpFamily::Elementwise);
    row("aten::dropout", OpFamily::Elementwise);
    row("aten::masked_fill", OpFamily::Elementwise);
    row("aten::sum", OpFamily::Reduction);
    row("aten::mean", OpFamily::Reduction);
    row("aten::linalg_vector_norm", OpFamily::Reduction);
    row("aten::view", OpFamily::Shape);
    row("aten::_unsafe_view", OpFamily::Shape);
    row("aten::transpose", OpFamily::Shape);
    row("aten::cat", OpFamily::Shape);
    row("aten::embedding", OpFamily::Embedding);
    row("aten::cross_entropy_loss", OpFamily::Loss);
    row("aten::nll_loss_nd", OpFamily::Loss);
    row("aten::mse_loss", OpFamily::Loss);
    row("aten::softmax", OpFamily::Attention);
    row("aten::_log_softmax", OpFamily::Attention);
    row("aten::scaled_dot_product_attention", OpFamily::Attention);
    row("aten::arange", OpFamily::Other);
    row("aten::topk", OpFamily::Other);
    row("prim::Unknown", OpFamily::Other);
    row("", OpFamily::Other);
  }

  void familiesOfKnownOps() {
    QFETCH(QString, op);
    QFETCH(int, family);
    QCOMPARE(static_cast<int>(opFamily(op.toStdString())), family);
  }

  void familyColoursAreDistinct() {
    std::set<QRgb> seen;
    for (int f = 0; f < kOpFamilyCount; ++f) {
      const QColor c = opFamilyColour(static_cast<OpFamily>(f));
      QVERIFY2(seen.insert(c.rgb()).second, qPrintable(opFamilyName(static_cast<OpFamily>(f))));
      QVERIFY(!opFamilyName(static_cast<OpFamily>(f)).isEmpty());
      // Light fills: dark text stays readable on every one.
      QCOMPARE(NodeColouring::textColourOn(c), QColor(0x202124));
    }
  }

  void everyBertOpHasAFamily() {
    const ir::Graph g = import::importModel(qgetenv("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
    for (const ir::Node& n : g.nodes)
      QVERIFY2(opFamily(n.op) != OpFamily::Other, n.op.c_str());
    // An attention block holds more transposes and views than matmuls, yet reads as matmul:
    // shape ops decide a collapsed scope's family only where nothing else is.
    const ScopeTree tree(g);
    const ScopeId attn = tree.find("layers.0.attn");
    QVERIFY(attn > 0);
    const NodeColouring c(g, tree, ColourBy::OpFamily);
    QCOMPARE(c.scopeCategory(attn), static_cast<int>(OpFamily::MatMul));
  }

  void legendListsWhatIsPresent() {
    const ir::Graph g = smallGraph();
    const ScopeTree tree(g);
    const NodeColouring c(g, tree, ColourBy::OpFamily);
    const ColourLegend whole = c.legend();
    QCOMPARE(whole.title, QStringLiteral("Op family"));
    QVERIFY(!whole.numeric);
    const std::vector<QString> expected = {opFamilyName(OpFamily::MatMul),
                                           opFamilyName(OpFamily::Activation),
                                           opFamilyName(OpFamily::Reduction)};
    QCOMPARE(labels(whole), expected);
    QCOMPARE(whole.entries[0].second, opFamilyColour(OpFamily::MatMul));

    // Collapsed: "a" (linear + relu, a tie: the lower family wins) and "b" are matmul boxes.
    const Layout collapsed = layoutGraph(g, tree, CollapseState(tree));
    QVERIFY(!collapsed.boxes.empty());
    const std::vector<QString> drawn = {opFamilyName(OpFamily::MatMul),
                                        opFamilyName(OpFamily::Reduction)};
    QCOMPARE(labels(c.legend(collapsed)), drawn);
  }

  void rampIsMonotonic() {
    double previous = 2;
    for (int i = 0; i <= 100; ++i) {
      const double l = luminance(NodeColouring::rampColour(i / 100.0));
      QVERIFY2(l < previous, qPrintable(QString::number(i)));
      previous = l;
    }
    QCOMPARE(NodeColouring::rampColour(-1), NodeColouring::rampColour(0));
    QCOMPARE(NodeColouring::rampColour(2), NodeColouring::rampColour(1));

    const ir::Graph g = smallGraph();
    const ScopeTree tree(g);
    const NodeColouring c(g, tree, ColourBy::Flops);
    QVERIFY(c.numeric());
    // More FLOPs, darker: sum (1) < relu (10) < linear (100) < linear (1000).
    const std::vector<ir::NodeId> byFlops = {3, 1, 0, 2};
    for (size_t i = 1; i < byFlops.size(); ++i)
      QVERIFY(luminance(c.nodeColour(byFlops[i])) < luminance(c.nodeColour(byFlops[i - 1])));
    const ColourLegend legend = c.legend();
    QVERIFY(legend.numeric);
    QVERIFY(legend.logScale);
    QCOMPARE(legend.min, 1.0);
    QCOMPARE(legend.max, 1000.0);  // b's subtree and its node are the largest
    QCOMPARE(legend.maxLabel, QStringLiteral("1.00K"));
  }

  void collapsedScopesAggregate() {
    const ir::Graph g = smallGraph();
    const ScopeTree tree(g);
    const ScopeId a = tree.find("a"), b = tree.find("b");
    QVERIFY(a > 0 && b > 0);

    NodeColouring flops(g, tree, ColourBy::Flops);
    QCOMPARE(flops.scopeValue(a), 110.0);
    QCOMPARE(flops.scopeValue(b), 1000.0);
    QCOMPARE(flops.scopeValue(kRootScope), 1111.0);
    // fitRange spans the drawn boxes: collapsed a (110), b (1000), sum (1).
    const Layout collapsed = layoutGraph(g, tree, CollapseState(tree));
    flops.fitRange(collapsed);
    QCOMPARE(flops.legend(collapsed).min, 1.0);
    QCOMPARE(flops.legend(collapsed).max, 1000.0);
    QCOMPARE(flops.scopeColour(b), NodeColouring::rampColour(1));
    QVERIFY(luminance(flops.scopeColour(a)) > luminance(flops.scopeColour(b)));

    const NodeColouring bytes(g, tree, ColourBy::Bytes);
    QCOMPARE(bytes.scopeValue(a), 2.0 * 4 * 8 * 4);
    QVERIFY(bytes.legend().maxLabel.endsWith(QStringLiteral("B")));

    const NodeColouring family(g, tree, ColourBy::OpFamily);
    QCOMPARE(family.scopeCategory(b), static_cast<int>(OpFamily::MatMul));
    QCOMPARE(family.scopeColour(b), opFamilyColour(OpFamily::MatMul));
    QCOMPARE(family.scopeCategory(tree.find("a.act")), static_cast<int>(OpFamily::Activation));

    // Scope mode: a top-level scope's nodes and its collapsed box share one colour.
    const NodeColouring scope(g, tree, ColourBy::Scope);
    QCOMPARE(scope.nodeColour(0), scope.nodeColour(1));
    QCOMPARE(scope.scopeColour(a), scope.nodeColour(0));
    QCOMPARE(scope.scopeColour(tree.find("a.fc")), scope.nodeColour(0));
    QVERIFY(scope.nodeColour(0) != scope.nodeColour(2));
    // "b" runs no op of its own and holds only "b.fc": one scope, named by the chain.
    QCOMPARE(labels(scope.legend()),
             (std::vector<QString>{QStringLiteral("(top)"), QStringLiteral("a"),
                                   QStringLiteral("b/fc")}));
  }

  void planModesAreFedFromOutside() {
    const ir::Graph g = smallGraph();
    const ScopeTree tree(g);
    QVERIFY(colourByNeedsPlan(ColourBy::ShardingForm));
    QVERIFY(!colourByNeedsPlan(ColourBy::Flops));

    const NodeColouring empty(g, tree, ColourBy::Segment);
    QCOMPARE(empty.nodeColour(0), empty.neutralColour());
    QCOMPARE(empty.legend().entries.size(), size_t{1});  // "open a plan to colour by this"

    const NodeColouring forms = NodeColouring::fromCategories(
        g, tree, ColourBy::ShardingForm, QStringLiteral("Sharding"),
        {QStringLiteral("G(0)"), QStringLiteral("I"), QStringLiteral("R")}, {0, 2, 2, -1});
    QCOMPARE(forms.mode(), ColourBy::ShardingForm);
    QCOMPARE(forms.nodeCategory(1), 2);
    QCOMPARE(forms.nodeColour(3), forms.neutralColour());
    QCOMPARE(forms.scopeCategory(tree.find("a")), 0);  // tie G(0)/R: the lower category
    QCOMPARE(forms.scopeCategory(kRootScope), 2);      // R on two of three
    QCOMPARE(labels(forms.legend()),
             (std::vector<QString>{QStringLiteral("G(0)"), QStringLiteral("R")}));

    const NodeColouring cost = NodeColouring::fromValues(
        g, tree, ColourBy::DeviceCost, QStringLiteral("Device time"), {1e-3, 2e-3, 4e-3, NAN},
        /*logScale=*/false);
    QCOMPARE(cost.scopeValue(tree.find("a")), 3e-3);
    QVERIFY(std::isnan(cost.nodeValue(3)));
    QCOMPARE(cost.nodeColour(2), NodeColouring::rampColour(1));
    QCOMPARE(cost.legend().title, QStringLiteral("Device time"));
  }

  void names() {
    std::set<QString> seen;
    for (int m = 0; m < kColourByCount; ++m)
      QVERIFY(seen.insert(colourByName(static_cast<ColourBy>(m))).second);
    QCOMPARE(colourByName(ColourBy::Variant), QStringLiteral("Rule variant"));
    // Variant sits next to ShardingForm; all four plan modes need a plan.
    QCOMPARE(static_cast<int>(ColourBy::Variant), static_cast<int>(ColourBy::ShardingForm) + 1);
    for (ColourBy m :
         {ColourBy::ShardingForm, ColourBy::Variant, ColourBy::Segment, ColourBy::DeviceCost})
      QVERIFY(colourByNeedsPlan(m));
  }

  // The plan modes of bert-tiny planned on 2 A100 + 2 P100: categories and legends.
  void planModesOfARealPlan() {
    const auto doc = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    const PlanOverlay overlay(doc);
    const ir::Graph& g = *doc->imported;
    const ScopeTree tree(g);
    const plan::Plan& p = doc->p();

    // Sharding form: "replicated", "sharded dim 0", ..., "partial sum", in that order.
    const int maxDim = overlay.maxShardedDim();
    QVERIFY(maxDim >= 0);
    std::vector<QString> expected{QStringLiteral("replicated")};
    for (int d = 0; d <= maxDim; ++d) expected.push_back(QStringLiteral("sharded dim %1").arg(d));
    expected.push_back(QStringLiteral("partial sum"));
    QCOMPARE(formCategoryLabels(maxDim), expected);
    const NodeColouring forms = planColouring(overlay, g, tree, ColourBy::ShardingForm);
    std::vector<int> counts(expected.size(), 0);
    for (const ir::Node& n : g.nodes) {
      const plan::PlanStep& s = p.steps[static_cast<size_t>(overlay.node(n.id).computeStep)];
      const rules::Rel r = s.outputs.front().rel;
      const int c = forms.nodeCategory(n.id);
      QCOMPARE(expected[static_cast<size_t>(c)], formCategoryName(r));
      ++counts[static_cast<size_t>(c)];
    }
    // The legend lists exactly the forms present, in category order.
    std::vector<QString> present;
    for (size_t c = 0; c < counts.size(); ++c)
      if (counts[c] > 0) present.push_back(expected[c]);
    QCOMPARE(labels(forms.legend()), present);
    QVERIFY(present.size() >= 2);
    // A collapsed layer: its most frequent form.
    const ScopeId layer = tree.find("layers.0");
    std::vector<int> inLayer(expected.size(), 0);
    for (const ir::Node& n : g.nodes)
      if (tree.contains(layer, tree.scopeOfNode(n.id)))
        ++inLayer[static_cast<size_t>(forms.nodeCategory(n.id))];
    QCOMPARE(forms.scopeCategory(layer),
             static_cast<int>(std::max_element(inLayer.begin(), inLayer.end()) - inLayer.begin()));

    // Variant: one legend entry per variant the plan uses, each in its fixed colour.
    const NodeColouring variants = planColouring(overlay, g, tree, ColourBy::Variant);
    QCOMPARE(variants.mode(), ColourBy::Variant);
    std::set<std::string> used;
    for (const plan::PlanStep& s : p.steps)
      if (s.kind == plan::PlanStep::Kind::Compute &&
          doc->planned->node(s.node).op != ir::kReshardOp)
        used.insert(s.variant);
    QCOMPARE(variants.legend().entries.size(), used.size());
    for (const auto& [label, colour] : variants.legend().entries) {
      QVERIFY(used.count(label.toStdString()));
      QCOMPARE(colour, variantColour(label.toStdString()));
    }
    for (const ir::Node& n : g.nodes)
      QCOMPARE(variants.nodeColour(n.id), variantColour(overlay.node(n.id).variant));

    // Segment: the plan's segment names, every one present.
    const NodeColouring segments = planColouring(overlay, g, tree, ColourBy::Segment);
    std::vector<QString> names;
    for (const plan::Segment& s : p.segments) names.push_back(QString::fromStdString(s.name));
    QCOMPARE(labels(segments.legend()), names);
    QVERIFY(names.size() >= 2);

    // Device cost: seconds on a log ramp, the bottleneck by default, a chosen rank on request.
    const int bottleneck = plan::bottleneckRank(doc->timeline);
    const NodeColouring cost = planColouring(overlay, g, tree, ColourBy::DeviceCost);
    const ColourLegend legend = cost.legend();
    QVERIFY(legend.numeric);
    QVERIFY(legend.logScale);
    QVERIFY2(legend.title.contains(QStringLiteral("rank %1").arg(bottleneck)),
             qPrintable(legend.title));
    QVERIFY2(legend.minLabel.endsWith(QStringLiteral("s")) &&
                 legend.maxLabel.endsWith(QStringLiteral("s")),
             qPrintable(legend.minLabel + QStringLiteral(" / ") + legend.maxLabel));
    // The ramp spans what could be drawn: every node's time and every collapsed scope's sum.
    double most = 0;
    for (const ir::Node& n : g.nodes) {
      most = std::max(most, overlay.nodeSeconds(n.id, bottleneck));
      QCOMPARE(cost.nodeValue(n.id), overlay.nodeSeconds(n.id, bottleneck));
    }
    for (ScopeId s = 1; s < tree.size(); ++s) most = std::max(most, cost.scopeValue(s));
    QCOMPARE(legend.max, most);
    const int other = bottleneck == 0 ? 3 : 0;
    const NodeColouring costOther = planColouring(overlay, g, tree, ColourBy::DeviceCost, other);
    QVERIFY(costOther.legend().title.contains(QStringLiteral("rank %1").arg(other)));
    // A collapsed scope: the sum of its nodes' times.
    double sum = 0;
    for (const ir::Node& n : g.nodes)
      if (tree.contains(layer, tree.scopeOfNode(n.id)))
        sum += overlay.nodeSeconds(n.id, bottleneck);
    QVERIFY(std::abs(cost.scopeValue(layer) - sum) <= 1e-12 * sum);
  }

  // Segments: 12+ colours that stay apart, dark text readable on all.
  void segmentPaletteCycles() {
    std::set<QRgb> seen;
    for (int i = 0; i < 36; ++i) {
      const QColor c = segmentColour(i);
      QVERIFY2(seen.insert(c.rgb()).second, qPrintable(QString::number(i)));
      if (i > 0) QVERIFY(c != segmentColour(i - 1));
      QVERIFY(luminance(c) > 0.3);
    }
  }
};

QTEST_GUILESS_MAIN(TestColouring)
#include "tst_colouring.moc"
