// compare() and ComparisonModel on real plans of bert-tiny on the heterogeneous a100-p100-4 cluster:
// the default plan against one with the FFN's first linears pinned to the row variant (variants
// change) and one with even ratios (segments move). Every difference reported is checked against
// the plans' steps and segments, and nothing else differs; a plan against itself has none; plans
// of different models compare only their totals.
#include <QAbstractItemModelTester>
#include <QtTest>

#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "app/studio/core/models/plan_comparison.h"
#include "app/studio/core/models/plan_comparison_model.h"
#include "tests/studio/plan_fixture.h"

using namespace hap;
using namespace hap::studio;

namespace {

// Per imported node: the variant of its Compute step, found from the steps directly.
std::map<ir::NodeId, std::string> variants(const PlanDocument& d) {
  std::map<ir::NodeId, std::string> out;
  for (size_t n = 0; n < d.imported->nodes.size(); ++n)
    for (int s : d.stepsOfNode(ir::NodeId(n)))
      if (d.p().steps[size_t(s)].kind == plan::PlanStep::Kind::Compute) out[ir::NodeId(n)] = d.p().steps[size_t(s)].variant;
  return out;
}

const plan::Segment* segment(const plan::Plan& p, const std::string& name) {
  for (const plan::Segment& s : p.segments)
    if (s.name == name) return &s;
  return nullptr;
}

// Checks `c` against the plans themselves: the changed nodes are exactly those whose variants
// differ, the moved segments exactly those whose ratios differ by more than the tolerance.
void checkAgainstPlans(const PlanComparison& c, const PlanDocument& a, const PlanDocument& b) {
  QCOMPARE(c.a.iterationSeconds, a.p().estimate.iterationSeconds);
  QCOMPARE(c.b.iterationSeconds, b.p().estimate.iterationSeconds);
  QCOMPARE(c.speedup, a.p().estimate.iterationSeconds / b.p().estimate.iterationSeconds);
  QCOMPARE(c.a.maxMemoryBytes, a.p().estimate.maxMemoryBytes());
  QCOMPARE(c.b.maxMemoryBytes, b.p().estimate.maxMemoryBytes());
  QCOMPARE(c.a.fits, a.p().estimate.fits);
  QCOMPARE(c.b.fits, b.p().estimate.fits);
  QVERIFY(c.sameGraph);
  QVERIFY(c.sameDevices);

  const auto va = variants(a), vb = variants(b);
  std::set<ir::NodeId> expected;
  for (const auto& [node, variant] : va)
    if (vb.count(node) && vb.at(node) != variant) expected.insert(node);
  std::set<ir::NodeId> reported;
  for (const PlanComparison::NodeChange& n : c.nodes) {
    reported.insert(n.node);
    QCOMPARE(n.variantA, va.at(n.node));
    QCOMPARE(n.variantB, vb.at(n.node));
    const ir::Node& node = a.imported->node(n.node);
    QCOMPARE(n.scope, node.scope);
    QCOMPARE("aten::" + n.op, node.op);
    double secondsA = 0, secondsB = 0;
    for (int s : a.stepsOfNode(n.node)) secondsA += a.p().steps[size_t(s)].seconds();
    for (int s : b.stepsOfNode(n.node)) secondsB += b.p().steps[size_t(s)].seconds();
    QCOMPARE(n.secondsA, secondsA);
    QCOMPARE(n.secondsB, secondsB);
  }
  QCOMPARE(reported, expected);
  QCOMPARE(c.changedNodes().size(), c.nodes.size());

  std::set<std::string> moved;
  for (const PlanComparison::SegmentChange& s : c.segments) {
    moved.insert(s.name);
    const plan::Segment* sa = segment(a.p(), s.name);
    const plan::Segment* sb = segment(b.p(), s.name);
    QVERIFY(sa && sb);
    QCOMPARE(s.ratiosA, sa->ratios);
    QCOMPARE(s.ratiosB, sb->ratios);
    double largest = 0;
    for (size_t r = 0; r < sa->ratios.size(); ++r) {
      QCOMPARE(s.shifts[r], sb->ratios[r] - sa->ratios[r]);
      largest = std::max(largest, std::abs(sb->ratios[r] - sa->ratios[r]));
    }
    QCOMPARE(std::abs(s.largestShift), largest);
    QCOMPARE(s.largestShift, s.shifts[size_t(s.rank)]);
    QVERIFY(largest > PlanComparison::kRatioTolerance);
  }
  for (const plan::Segment& sa : a.p().segments) {
    const plan::Segment* sb = segment(b.p(), sa.name);
    if (!sb || moved.count(sa.name)) continue;
    for (size_t r = 0; r < sa.ratios.size(); ++r) QVERIFY(std::abs(sb->ratios[r] - sa.ratios[r]) <= PlanComparison::kRatioTolerance);
  }
}

}  // namespace

class TestPlanComparison : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    m_default = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    plan::PlanRequest pinned;
    pinned.pins = {"layers.*.ffn.fc1=row"};
    m_pinned = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml", pinned);
    plan::PlanRequest even;
    even.ratios = "even";
    m_even = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml", even);
    m_mlp = testing::planZoo("mlp-tiny.pt", "a100-p100-4.yaml");
  }

  void pinnedVariants() {
    const PlanComparison c = compare(*m_default, *m_pinned);
    checkAgainstPlans(c, *m_default, *m_pinned);
    // The pin's nodes are among the changes: both FFN fc1 linears are row in B, column in A.
    int fc1 = 0;
    for (const PlanComparison::NodeChange& n : c.nodes)
      if (n.scope.find("ffn.fc1") != std::string::npos) {
        ++fc1;
        QCOMPARE(n.variantB, std::string("row"));
        QCOMPARE(n.op, std::string("linear"));
      }
    QCOMPARE(fc1, 2);
    QVERIFY(c.b.iterationSeconds > c.a.iterationSeconds);  // the cost model's optimum is the default
    QVERIFY(c.speedup < 1);
    QVERIFY(c.note.empty());
  }

  void evenRatios() {
    const PlanComparison c = compare(*m_default, *m_even);
    checkAgainstPlans(c, *m_default, *m_even);
    // The LP gives the A100s most of each layer; even ratios give every device a quarter.
    QVERIFY(!c.segments.empty());
    for (const PlanComparison::SegmentChange& s : c.segments)
      for (double r : s.ratiosB) QCOMPARE(r, 0.25);
    // And backwards: the shifts change sign.
    const PlanComparison back = compare(*m_even, *m_default);
    checkAgainstPlans(back, *m_even, *m_default);
    QCOMPARE(back.segments.size(), c.segments.size());
    for (size_t i = 0; i < c.segments.size(); ++i) QCOMPARE(back.segments[i].largestShift, -c.segments[i].largestShift);
  }

  void itselfHasNoDifferences() {
    const PlanComparison c = compare(*m_default, *m_default);
    QVERIFY(c.identical());
    QVERIFY(c.nodes.empty());
    QVERIFY(c.segments.empty());
    QCOMPARE(c.speedup, 1.0);
    QVERIFY(c.note.empty());
    // A second plan made with the same options: the same program and ratios.
    const auto again = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    QVERIFY(compare(*m_default, *again).identical());
  }

  void differentModels() {
    const PlanComparison c = compare(*m_default, *m_mlp);
    QVERIFY(!c.sameGraph);
    QVERIFY(c.nodes.empty());
    QVERIFY(c.segments.empty());
    QVERIFY(QString::fromStdString(c.note).contains(QStringLiteral("different models")));
    QCOMPARE(c.b.iterationSeconds, m_mlp->p().estimate.iterationSeconds);
    QCOMPARE(c.speedup, m_default->p().estimate.iterationSeconds / m_mlp->p().estimate.iterationSeconds);
  }

  void model() {
    ComparisonModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    model.setPlans(m_default, m_pinned);
    const PlanComparison& c = model.comparison();
    QVERIFY(!c.nodes.empty());
    QCOMPARE(model.rowCount(), int(c.nodes.size() + c.segments.size()));
    for (int r = 0; r < int(c.nodes.size()); ++r) {
      const PlanComparison::NodeChange& n = c.nodes[size_t(r)];
      QCOMPARE(model.index(r, 0).data(ComparisonModel::RowKindRole).toInt(), int(ComparisonModel::NodeRow));
      QCOMPARE(model.index(r, 0).data(ComparisonModel::NodeRole).toInt(), n.node);
      QCOMPARE(model.index(r, ComparisonModel::AColumn).data().toString(), QString::fromStdString(n.variantA));
      QCOMPARE(model.index(r, ComparisonModel::BColumn).data().toString(), QString::fromStdString(n.variantB));
      QCOMPARE(model.index(r, ComparisonModel::DeltaColumn).data(ComparisonModel::SortRole).toDouble(), n.secondsB - n.secondsA);
    }
    model.setPlans(m_default, m_even);
    const PlanComparison& e = model.comparison();
    QCOMPARE(model.rowCount(), int(e.nodes.size() + e.segments.size()));
    const int first = int(e.nodes.size());
    QVERIFY(first < model.rowCount());
    QCOMPARE(model.index(first, 0).data(ComparisonModel::RowKindRole).toInt(), int(ComparisonModel::SegmentRow));
    QCOMPARE(model.index(first, ComparisonModel::ItemColumn).data().toString(), QString::fromStdString(e.segments[0].name));
    QCOMPARE(model.index(first, 0).data(ComparisonModel::NodeRole).toInt(), ir::kNone);
    // Even ratios: every device type holds 25%.
    QCOMPARE(model.index(first, ComparisonModel::BColumn).data().toString(),
             QStringLiteral("A100-SXM4-40GB 25.00%, P100-PCIE-16GB 25.00%"));
    model.setPlans(m_default, m_default);
    QCOMPARE(model.rowCount(), 0);
    model.setPlans(nullptr, m_default);
    QCOMPARE(model.rowCount(), 0);
  }

 private:
  std::shared_ptr<const PlanDocument> m_default, m_pinned, m_even, m_mlp;
};

QTEST_MAIN(TestPlanComparison)
#include "tst_plan_comparison.moc"
