// Pipeline stages (issue 34 item 1, docs/pipeline.md): the 1F1B cost model's arithmetic, the
// stage sub-problem, the partition search against brute force and on the two telling clusters
// (a slow link between machines: pipeline; one machine with fast links: SPMD), and the plan file.
#include <QtTest>

#include <memory>
#include <set>

#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/import/input_spec.h"
#include "engine/ir/segments.h"
#include "engine/pipeline/device_group.h"
#include "engine/pipeline/pipeline_cost.h"
#include "engine/pipeline/pipeline_explain.h"
#include "engine/pipeline/pipeline_json.h"
#include "engine/pipeline/stage_graph.h"
#include "engine/pipeline/stage_partition.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"

using namespace hap;
using namespace hap::pipeline;

namespace {

std::string zooPath(const char* name) {
  return qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + name + "-tiny.pt";
}

std::shared_ptr<const ir::Graph> importZoo(const char* name) {
  import::ImportOptions o;
  o.metaWeights = true;
  return std::make_shared<const ir::Graph>(import::importModel(zooPath(name), o));
}

MicroBatchGraph microBatches(std::shared_ptr<const ir::Graph> global) {
  return [global](int m) -> std::shared_ptr<const ir::Graph> {
    if (m == 1) return global;
    import::ImportOptions o;
    o.metaWeights = true;
    o.inputOverrides = import::dividedBatch(*global, m);
    return std::make_shared<const ir::Graph>(import::importModel(global->sourceFile, o));
  };
}

// Two machines of two slow devices each, joined by a slow network: every collective of an SPMD
// program over both machines crosses it, a pipeline sends one activation per micro-batch.
cost::Cluster slowNetwork() {
  return cost::parseCluster(
      "name: two-machines-slow-link\n"
      "device_types:\n"
      "  gpu: {flops: {float32: 20G}, memory: 4GiB, memory_bandwidth: 20GB/s}\n"
      "machines:\n"
      "  - {name: a, device_type: gpu, count: 2, link: {bandwidth: 50GB/s, latency: 2us}}\n"
      "  - {name: b, device_type: gpu, count: 2, link: {bandwidth: 50GB/s, latency: 2us}}\n"
      "network: {bandwidth: 2MB/s, latency: 1ms}\n",
      "two-machines-slow-link");
}

// One machine of four devices on fast links: nothing for a pipeline to save.
cost::Cluster oneFastMachine() {
  return cost::parseCluster(
      "name: one-fast-machine\n"
      "device_types:\n"
      "  gpu: {flops: {float32: 20G}, memory: 4GiB, memory_bandwidth: 20GB/s}\n"
      "machines:\n"
      "  - {name: a, device_type: gpu, count: 4, link: {bandwidth: 100GB/s, latency: 1us}}\n",
      "one-fast-machine");
}

PartitionOptions options(int stages, int m) {
  PartitionOptions o;
  o.stages = stages;
  o.microBatches = m;
  o.stagePlan.ratios = plan::PlanOptions::Ratios::Proportional;
  o.stagePlan.baselines = false;
  return o;
}

double bottleneckOf(const PipelinePlan& p) {
  double most = 0;
  for (size_t s = 0; s < p.stages.size(); ++s) {
    const StageFigures& f = p.stages[s].figures;
    double t = f.forwardSeconds + f.backwardSeconds;
    if (s > 0) t = std::max(t, p.links[s - 1].forwardSeconds);
    most = std::max(most, t);
  }
  return most;
}

}  // namespace

class TstPipelinePlan : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // S = 2, m = 4, F = 1, B = 2, free links: 1F1B takes (m + S - 1)(F + B) = 15; steady 4 x 3.
  void oneFOneBArithmetic() {
    std::vector<StageFigures> st(2);
    for (StageFigures& f : st) {
      f.forwardSeconds = 1;
      f.backwardSeconds = 2;
      f.fixedBytes = {10};
      f.activationBytes = {5};
      f.capacityBytes = {20};
    }
    st[0].gradientSeconds = 0.5;
    PipelineCost c = pipelineCost(st, {{0, 0}}, 4);
    QCOMPARE(c.pipelineSeconds, 15.0);
    QCOMPARE(c.closedFormSeconds, 15.0);
    QCOMPARE(c.stepSeconds, 15.5);  // stage 0 ends last, then its all-reduce
    QCOMPARE(c.steadySeconds, 12.0);
    QCOMPARE(c.bubbleSeconds, 3.0);
    QCOMPARE(c.inFlight, (std::vector<int>{2, 1}));
    QCOMPARE(c.memoryBytes, (std::vector<double>{20, 15}));
    QVERIFY(c.fits);
    st[0].capacityBytes = {19.5};
    QVERIFY(!pipelineCost(st, {{0, 0}}, 4).fits);
    // One micro-batch over a link of 0.5 s each way: F0 [0,1], arrives 1.5, F1 [1.5,2.5],
    // B1 [2.5,3.5], arrives 4, B0 [4,5].
    std::vector<StageFigures> one(2);
    for (StageFigures& f : one) f.forwardSeconds = f.backwardSeconds = 1;
    QCOMPARE(pipelineCost(one, {{0.5, 0.5}}, 1).pipelineSeconds, 5.0);
    // Unequal stages: the recurrence, not the closed form. S = 2, m = 3, stage 0 F=1 B=1, stage 1
    // F=2 B=2: stage 1 is the bottleneck, 3 x 4 = 12 steady, plus stage 0's F before and B after.
    std::vector<StageFigures> uneven(2);
    uneven[0].forwardSeconds = uneven[0].backwardSeconds = 1;
    uneven[1].forwardSeconds = uneven[1].backwardSeconds = 2;
    const PipelineCost u = pipelineCost(uneven, {{0, 0}}, 3);
    QCOMPARE(u.pipelineSeconds, 14.0);
    QCOMPARE(u.closedFormSeconds, 16.0);
    QCOMPARE(u.bottleneck, 1);
    QCOMPARE(oneFOneBOrder(0, 2, 4), (std::vector<int>{0, 1, -1, 2, -2, 3, -3, -4}));
    QCOMPARE(oneFOneBOrder(1, 2, 4), (std::vector<int>{0, -1, 1, -2, 2, -3, 3, -4}));
  }

  // Cutting BERT at every valid segment boundary: the two stages hold every node once, the
  // boundary values are the first stage's outputs, only the last holds the loss.
  void stageGraphsCoverTheModel() {
    const auto g = importZoo("bert");
    const ir::Segmentation seg = ir::segmentGraph(*g, ir::parseSegmentOptions("layer"));
    QVERIFY(seg.count() >= 3);
    const std::vector<bool> cuts = validCuts(*g, seg.nodeSegment, seg.count());
    int tried = 0;
    for (int k = 1; k < seg.count(); ++k) {
      if (!cuts[static_cast<size_t>(k)]) continue;
      ++tried;
      const StageGraph a = stageGraph(*g, seg.nodeSegment, 0, k);
      const StageGraph b = stageGraph(*g, seg.nodeSegment, k, seg.count());
      QVERIFY(!a.holdsLoss);
      QVERIFY(b.holdsLoss);
      QVERIFY(!a.outputs.empty());
      std::multiset<ir::NodeId> nodes;
      for (const StageGraph* st : {&a, &b})
        for (ir::NodeId n : st->originalNode)
          if (n != ir::kNone) nodes.insert(n);
      QCOMPARE(nodes.size(), g->nodes.size());
      QCOMPARE(std::set<ir::NodeId>(nodes.begin(), nodes.end()).size(), g->nodes.size());
      // Every value b receives from earlier stages is one a sends.
      for (ir::ValueId v : b.inputsFrom)
        QVERIFY(std::find(a.outputs.begin(), a.outputs.end(), v) != a.outputs.end());
      QCOMPARE(a.graph.value(a.graph.loss).name.rfind("pipeline.marker.", 0), size_t{0});
    }
    QVERIFY(tried >= 2);
    // Identical layers give identical stage structures.
    if (seg.count() >= 4 && cuts[1] && cuts[2] && cuts[3])
      QCOMPARE(structuralKey(stageGraph(*g, seg.nodeSegment, 1, 2)),
               structuralKey(stageGraph(*g, seg.nodeSegment, 2, 3)));
  }

  // The search's partition of two stages has the least bottleneck over every cut and group split
  // (brute force with the same stage plans).
  void searchFindsTheBruteForceOptimum() {
    const auto g = importZoo("bert");
    const cost::Cluster cluster = slowNetwork();
    const int m = 2;
    const PartitionOptions o = options(2, m);
    const PipelinePlan p = planPipeline(*g, microBatches(g), cluster, o);
    QCOMPARE(p.stages.size(), size_t{2});
    const auto micro = microBatches(g)(m);
    const int L = static_cast<int>(p.segmentNames.size());
    const std::vector<bool> cuts = validCuts(*micro, p.nodeSegment, L);
    const std::vector<std::vector<int>> units = groupUnits(cluster);
    double best = 1e300;
    for (int k = 1; k < L; ++k) {
      if (!cuts[static_cast<size_t>(k)]) continue;
      StageFigures f[2];
      double received = 0;
      for (int s = 0; s < 2; ++s) {
        const StageGraph st = stageGraph(*micro, p.nodeSegment, s ? k : 0, s ? L : k);
        plan::PlanOptions po = o.stagePlan;
        f[s] = figuresOf(plan::makePlan(st.graph, subCluster(cluster, units[static_cast<size_t>(s)]), po));
        if (s) received = st.receivedBytes();
      }
      const double link = transferSeconds(cluster, units[0], units[1], received);
      best = std::min(best, std::max({f[0].forwardSeconds + f[0].backwardSeconds,
                                      f[1].forwardSeconds + f[1].backwardSeconds, link}));
    }
    QVERIFY2(bottleneckOf(p) <= best * (1 + 1e-9),
             qPrintable(QString("search %1 s, brute force %2 s").arg(bottleneckOf(p)).arg(best)));
    // Planned with the search's own ratio policy, the chosen stages cost what the search priced.
    QCOMPARE(p.candidates.size(), size_t{1});
    QVERIFY(qFuzzyCompare(p.candidates[0].stepSeconds, p.cost.stepSeconds));
  }

  // Two machines behind a slow link: a pipeline beats the SPMD-only plan. One machine with fast
  // links: it does not.
  void slowLinkPipelinesFastMachineDoesNot() {
    const auto g = importZoo("bert");
    plan::PlanOptions spmdOptions;
    spmdOptions.ratios = plan::PlanOptions::Ratios::Proportional;
    spmdOptions.baselines = false;
    {
      const cost::Cluster c = slowNetwork();
      const plan::Plan spmd = plan::makePlan(*g, c, spmdOptions);
      PipelinePlan p = planPipeline(*g, microBatches(g), c, options(0, 0));
      p.spmdSeconds = spmd.estimate.iterationSeconds;
      qInfo("%s", formatPipelineExplain(p).c_str());
      QVERIFY(!p.stages.empty());
      QVERIFY2(p.cost.stepSeconds < spmd.estimate.iterationSeconds,
               qPrintable(QString("pipeline %1 s, SPMD %2 s").arg(p.cost.stepSeconds).arg(spmd.estimate.iterationSeconds)));
    }
    {
      const cost::Cluster c = oneFastMachine();
      const plan::Plan spmd = plan::makePlan(*g, c, spmdOptions);
      PipelinePlan p = planPipeline(*g, microBatches(g), c, options(0, 0));
      p.spmdSeconds = spmd.estimate.iterationSeconds;
      qInfo("%s", formatPipelineExplain(p).c_str());
      QVERIFY(!p.stages.empty());  // devices of one machine are the units
      QVERIFY2(p.cost.stepSeconds >= spmd.estimate.iterationSeconds,
               qPrintable(QString("pipeline %1 s, SPMD %2 s").arg(p.cost.stepSeconds).arg(spmd.estimate.iterationSeconds)));
    }
  }

  // The plan file: written and read back; a reader that cannot run it refuses it by type.
  void planFileRoundTrips() {
    const auto g = importZoo("bert");
    const cost::Cluster c = slowNetwork();
    plan::PlanOptions spmdOptions;
    spmdOptions.ratios = plan::PlanOptions::Ratios::Proportional;
    spmdOptions.baselines = false;
    const plan::Plan spmd = plan::makePlan(*g, c, spmdOptions);
    PipelinePlan p = planPipeline(*g, microBatches(g), c, options(2, 2));
    p.spmdSeconds = spmd.estimate.iterationSeconds;
    p.why = "test";
    const nlohmann::json doc = nlohmann::json::parse(pipelineToJson(spmd, *g, p).dump());
    QCOMPARE(doc["version"].get<int>(), kPipelinePlanVersion);
    plan::Plan top;
    const PipelinePlan back = pipelineFromJson(doc, "test.json", &top);
    QCOMPARE(top.estimate.iterationSeconds, spmd.estimate.iterationSeconds);
    QCOMPARE(back.microBatches, 2);
    QCOMPARE(back.stages.size(), p.stages.size());
    QCOMPARE(back.nodeSegment, p.nodeSegment);
    QCOMPARE(back.cost.stepSeconds, p.cost.stepSeconds);
    QCOMPARE(back.cost.inFlight, p.cost.inFlight);
    for (size_t s = 0; s < p.stages.size(); ++s) {
      QCOMPARE(back.stages[s].firstSegment, p.stages[s].firstSegment);
      QCOMPARE(back.stages[s].endSegment, p.stages[s].endSegment);
      QCOMPARE(back.stages[s].ranks, p.stages[s].ranks);
      QCOMPARE(back.stages[s].plan.steps.size(), p.stages[s].plan.steps.size());
      QCOMPARE(back.stages[s].figures.forwardSeconds, p.stages[s].figures.forwardSeconds);
    }
    QVERIFY_THROWS_EXCEPTION(PipelinePlanRefused, plan::planFromJson(doc, "test.json"));
    try {
      plan::planFromJson(doc, "test.json");
    } catch (const plan::PlanError& e) {
      QVERIFY(std::string(e.what()).find("pipeline stages") != std::string::npos);
    }
    // A plain plan still reads (version 2).
    const nlohmann::json plain = nlohmann::json::parse(plan::toJson(spmd, *g).dump());
    QCOMPARE(plan::planFromJson(plain, "plain.json").steps.size(), spmd.steps.size());
  }
};

QTEST_GUILESS_MAIN(TstPipelinePlan)
#include "tst_pipeline_plan.moc"
