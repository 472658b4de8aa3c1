// The verifier's shape check (plan/verifier.h with plan::shapeFunction(), LibTorch's own kernels):
// every zoo plan passes it on every rank, with uneven and zero shares; a plan made on a shape the
// importer inferred wrongly (as LibTorch 1.13's _embedding_bag meta kernel made it) is refused,
// naming the node, the rank and both shapes, before any worker runs it.
#include <QtTest>

#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/plan/open_plan.h"
#include "engine/plan/planner.h"
#include "engine/plan/verifier.h"

using namespace hap;

namespace {

cost::Cluster cluster() {
  return cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                           "/resources/clusters/a100-p100-4.yaml");
}

ir::Graph zoo(const QString& name) {
  return import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + name.toStdString() +
                             "-tiny.pt");
}

// Data parallel at shares 0.5, 0.3, 0.2, 0 (uneven, and one rank with nothing), or HAP's own plan.
plan::Plan makePlan(const ir::Graph& g, bool dataParallel) {
  plan::PlanOptions o;
  o.baselines = false;
  if (dataParallel) {
    o.strategy = plan::PlanOptions::Strategy::DataParallel;
    o.ratios = plan::PlanOptions::Ratios::Fixed;
    o.fixedShares = {0.5, 0.3, 0.2, 0};
  }
  return plan::makePlan(g, cluster(), o);
}

QString joined(const std::vector<std::string>& problems) {
  QString out;
  for (const std::string& p : problems) out += "\n  " + QString::fromStdString(p);
  return out;
}

}  // namespace

class TstPlanShapes : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void zooPlansAgreeWithLibTorch_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("dataParallel");
    for (const char* m : {"mlp", "bert", "vit", "vgg19", "bert_moe"}) {
      QTest::newRow(qPrintable(QString(m) + " hap")) << m << false;
      QTest::newRow(qPrintable(QString(m) + " dp")) << m << true;
    }
  }
  void zooPlansAgreeWithLibTorch() {
    QFETCH(QString, model);
    QFETCH(bool, dataParallel);
    const ir::Graph g = zoo(model);
    const plan::Plan p = makePlan(g, dataParallel);
    const std::vector<std::string> problems = plan::verifyPlan(g, p, plan::shapeFunction());
    QVERIFY2(problems.empty(), qPrintable(joined(problems)));
  }

  // The reference shape of one plain step's output is made wrong (the importer's mistake): the
  // plan's local shapes follow it, LibTorch's do not, and the verifier says so naming the node.
  void wrongInferredShapeIsRefused() {
    ir::Graph g = zoo("mlp");
    const plan::Plan p = makePlan(g, true);
    QVERIFY(plan::verifyPlan(g, p, plan::shapeFunction()).empty());
    const ir::Graph planned = plan::planGraph(g, p);
    const plan::PlanStep* victim = nullptr;
    for (const plan::PlanStep& s : p.steps)
      if (s.kind == plan::PlanStep::Kind::Compute && s.execution == rules::Execution::Plain && !s.sfb &&
          s.outputs.size() == 1 && planned.value(s.outputs[0].value).rank() == 2 && s.outputs[0].rel == 0 &&
          planned.node(s.node).op != "aten::linear") {
        victim = &s;
        break;
      }
    QVERIFY2(victim, "no plain step with a batch-cut 2-d output");
    // The plan's ids are the planned graph's; the imported graph's ids are the same but for
    // reshards, which a single-segment data-parallel plan has none of.
    QCOMPARE(planned.nodes.size(), g.nodes.size());
    ir::Value& out = g.value(victim->outputs[0].value);
    out.shape[1] += 1;  // not the cut dimension: the lengths stay consistent
    const std::vector<std::string> problems = plan::verifyPlan(g, p, plan::shapeFunction());
    QVERIFY2(!problems.empty(), "a wrong inferred shape passed the verifier");
    const QString first = QString::fromStdString(problems.front());
    QVERIFY2(first.contains(QString::fromStdString(g.describe(victim->node))), qPrintable(first));
    QVERIFY2(first.contains("on rank 0") && first.contains("shape function"), qPrintable(first));
    ir::Shape planned0 = out.shape;  // rank 0's local shape as the plan has it
    planned0[0] = victim->outputs[0].lengths[0];
    QVERIFY2(first.contains("the plan says " + QString::fromStdString(ir::formatShape(planned0))), qPrintable(first));
    // Without the shape function the same plan verifies: the engine alone cannot tell.
    QVERIFY2(plan::verifyPlan(g, p).empty(), qPrintable(joined(plan::verifyPlan(g, p))));
  }
};

QTEST_GUILESS_MAIN(TstPlanShapes)
#include "tst_plan_shapes.moc"
