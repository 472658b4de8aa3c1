// Segments (ir/segments.h): per repeated block from scopes, by scope depth, by METIS; reshards
// inserted where a value crosses a boundary; plans with segments verify and price reshards.
#include <QtTest>

#include <numeric>
#include <set>

#include "engine/cost/cluster.h"
#include "engine/cost/collective_cost.h"
#include "engine/import/importer.h"
#include "engine/ir/segments.h"
#include "engine/plan/planner.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/verifier.h"
#include "engine/synth/cost_table.h"

using namespace hap;

namespace {

ir::Graph zoo(const char* model) {
  return import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + model + "-tiny.pt");
}

cost::Cluster cluster() {
  return cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() + "/resources/clusters/a100-p100-4.yaml");
}

}  // namespace

class TstSegments : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void onePerLayer() {
    const ir::Graph g = zoo("bert");
    const ir::Segmentation s = ir::segmentGraph(g, {});
    QCOMPARE(s.names, (std::vector<std::string>{"prologue", "layers.0", "layers.1", "epilogue"}));
    for (const ir::Node& n : g.nodes) {
      const std::string& name = s.names[static_cast<size_t>(s.nodeSegment[static_cast<size_t>(n.id)])];
      if (n.scope.rfind("layers.", 0) == 0) QCOMPARE(n.scope.substr(0, name.size()), name);
    }
    // Segments follow the node order: prologue, the layers, epilogue.
    QVERIFY(std::is_sorted(s.nodeSegment.begin(), s.nodeSegment.end()));
  }

  void singleNodeBlocksGiveOneSegment() {
    const ir::Graph g = zoo("vgg19");  // features.N holds one op each
    QCOMPARE(ir::segmentGraph(g, {}).count(), 1);
    QVERIFY(ir::segmentGraph(g, ir::parseSegmentOptions("scope:1")).count() > 1);
    QCOMPARE(ir::segmentGraph(g, ir::parseSegmentOptions("none")).count(), 1);
  }

  void metisPartsAreDeterministic() {
    const ir::Graph g = zoo("bert");
    const ir::Segmentation a = ir::segmentGraph(g, ir::parseSegmentOptions("auto:3"));
    QCOMPARE(a.count(), 3);
    QCOMPARE(a.nodeSegment, ir::segmentGraph(g, ir::parseSegmentOptions("auto:3")).nodeSegment);
    QCOMPARE(a.nodeSegment[0], 0);
  }

  void badOptionsAreErrors() {
    for (const char* bad : {"layers", "scope:0", "auto:", "auto:x", "scope:-1"}) {
      bool threw = false;
      try {
        ir::parseSegmentOptions(bad);
      } catch (const Error& e) {
        threw = QString(e.what()).contains("--segments");
      }
      QVERIFY2(threw, bad);
    }
  }

  // Every value is read in its own segment, except by the reshard that carries it into another;
  // one reshard per (value, reading segment).
  void reshardsAtBoundaries() {
    const ir::Graph g = zoo("bert");
    ir::Segmentation s = ir::segmentGraph(g, {});
    std::set<std::pair<ir::ValueId, int>> crossings;
    for (const ir::Node& n : g.nodes)
      for (ir::ValueId x : n.tensorInputs())
        if (ir::valueSegment(g, s, x) != s.nodeSegment[static_cast<size_t>(n.id)])
          crossings.insert({x, s.nodeSegment[static_cast<size_t>(n.id)]});
    QVERIFY(!crossings.empty());
    const ir::Graph r = ir::insertReshards(g, s);
    r.check();
    QCOMPARE(r.nodes.size(), g.nodes.size() + crossings.size());
    QCOMPARE(s.nodeSegment.size(), r.nodes.size());
    for (const ir::Node& n : r.nodes) {
      const int here = s.nodeSegment[static_cast<size_t>(n.id)];
      for (ir::ValueId x : n.tensorInputs()) {
        const int home = ir::valueSegment(r, s, x);
        QVERIFY(n.op == ir::kReshardOp ? home != here : home == here);
      }
    }
  }

  // A plan with per-layer segments verifies, survives JSON, and prices each reshard that moves
  // data as the all-to-all of cost::reshardSeconds.
  void plansCarryPerSegmentRatios() {
    const ir::Graph g = zoo("vit");  // its plan carries a G(0) across the last boundary
    const cost::Cluster c = cluster();
    plan::PlanOptions o;
    o.baselines = false;
    const plan::Plan p = plan::makePlan(g, c, o);
    QCOMPARE(p.segments.size(), size_t{4});
    QVERIFY(plan::verifyPlan(g, p).empty());
    const plan::Plan back = plan::planFromJson(nlohmann::json::parse(plan::toJson(p, g).dump()), "p.json");
    QCOMPARE(back.segments.size(), p.segments.size());
    QCOMPARE(back.importedNodeSegment, p.importedNodeSegment);
    QVERIFY(plan::verifyPlan(g, back).empty());
    const ir::Graph pg = plan::planGraph(g, p);
    int reshards = 0, checked = 0;
    for (const plan::PlanStep& st : p.steps) {
      if (st.kind != plan::PlanStep::Kind::Compute || pg.node(st.node).op != ir::kReshardOp) continue;
      ++reshards;
      if (!rules::isGather(st.outputs[0].rel)) {
        QCOMPARE(st.forwardCommunication, 0.0);
        continue;
      }
      const ir::ValueId in = st.inputs[0].value;
      QCOMPARE(std::accumulate(st.inputs[0].lengths.begin(), st.inputs[0].lengths.end(), int64_t{0}),
               pg.value(in).shape[static_cast<size_t>(st.inputs[0].rel)]);
      QVERIFY(st.forwardSync);
      // The input is cut by its producer's segment's lengths, the output by this segment's: the
      // plan prices the whole lengths it executes, whose shares may differ from the segment's
      // fractional ratios by rounding.
      const auto sharesOf = [](const std::vector<int64_t>& lengths) {
        const double total = static_cast<double>(std::accumulate(lengths.begin(), lengths.end(), int64_t{0}));
        std::vector<double> out;
        for (int64_t l : lengths) out.push_back(static_cast<double>(l) / total);
        return out;
      };
      for (const plan::PlanStep& producer : p.steps) {
        if (producer.kind != plan::PlanStep::Kind::Compute || producer.outputs.empty() || producer.outputs[0].value != in)
          continue;
        QCOMPARE(producer.outputs[0].lengths, st.inputs[0].lengths);
        const double expected = cost::reshardSeconds(c, static_cast<double>(pg.value(in).bytes()),
                                                     sharesOf(st.inputs[0].lengths), sharesOf(st.outputs[0].lengths));
        QVERIFY2(std::abs(st.forwardCommunication - expected) <= 1e-12 * std::max(expected, 1e-12),
                 qPrintable(QString("%1: priced %2 s, reshardSeconds %3 s")
                                .arg(QString::fromStdString(pg.describe(st.node)))
                                .arg(st.forwardCommunication, 0, 'g', 12)
                                .arg(expected, 0, 'g', 12)));
        ++checked;
      }
    }
    QVERIFY(reshards > 0);
    QVERIFY(checked > 0);
  }

  // With different shares per segment, a reshard's G(d) variant costs the all-to-all between the
  // two cuts, and nothing where they agree.
  void reshardPricedBetweenSegments() {
    const ir::Graph g = zoo("vit");
    ir::Segmentation s = ir::segmentGraph(g, {});
    const ir::Graph r = ir::insertReshards(g, s);
    synth::Theory t(r, s.nodeSegment);
    const cost::Cluster c = cluster();
    synth::Shares shares(static_cast<size_t>(s.count()), std::vector<double>{0.25, 0.25, 0.25, 0.25});
    shares.back() = {0.4, 0.4, 0.1, 0.1};
    synth::CostTable table(t, c, shares);
    int priced = 0;
    for (const ir::Node& n : r.nodes) {
      if (n.op != ir::kReshardOp) continue;
      const auto& variants = t.variants(n.id);
      for (size_t v = 0; v < variants.size(); ++v) {
        if (!table.isReshard(n.id, static_cast<int>(v))) continue;
        const ir::ValueId in = n.tensorInputs()[0];
        const double expected = cost::reshardSeconds(c, static_cast<double>(r.value(in).bytes()),
                                                     table.valueShares(in), table.valueShares(n.outputs[0]));
        QCOMPARE(table.nodeCommunication(n.id, static_cast<int>(v)).forward, expected);
        priced += expected > 0;
      }
    }
    QVERIFY(priced > 0);  // into the last segment, whose cuts differ
  }

  void reshardCost() {
    const cost::Cluster c = cluster();  // 4 devices, 2 machines
    const std::vector<double> even{0.25, 0.25, 0.25, 0.25}, skew{0.4, 0.4, 0.1, 0.1};
    QCOMPARE(cost::reshardSeconds(c, 1e6, even, even), 0.0);
    // Prefix displacements 0.15, 0.30, 0.15: the largest is 0.30.
    const cost::Link l = cost::collectiveLink(c, cost::Collective::AllToAll);
    const double expected = 3 * l.latency + 2 * 1e6 * 0.30 / l.bandwidth;
    QVERIFY(std::abs(cost::reshardSeconds(c, 1e6, even, skew) - expected) <= 1e-12 * expected);
    QCOMPARE(cost::reshardSeconds(c, 1e6, even, skew), cost::reshardSeconds(c, 1e6, skew, even));
  }
};

QTEST_GUILESS_MAIN(TstSegments)
#include "tst_segments.moc"
