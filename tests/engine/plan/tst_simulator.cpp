// The simulator cross-checks the planner: replaying a plan's steps device by device gives the
// predicted iteration time, and the timeline, trace and report are consistent with it.
#include <QtTest>

#include <fmt/format.h>

#include <map>
#include <set>

#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "engine/plan/report.h"
#include "engine/cost/collective_cost.h"
#include "engine/plan/simulator.h"
#include "engine/plan/trace_export.h"

using namespace hap;

namespace {

cost::Cluster cluster(const QString& name = "a100-p100-4") {
  return cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() + "/resources/clusters/" +
                           name.toStdString() + ".yaml");
}

ir::Graph zoo(const QString& name) {
  return import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + name.toStdString() + "-tiny.pt");
}

bool close(double a, double b, double scale) { return std::abs(a - b) <= 1e-9 * scale; }

}  // namespace

class TstSimulator : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void replaysThePrediction_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("even");
    QTest::addColumn<QString>("cluster");
    // local-cpu-hetero-3 prices every collective call with its slowest rank's collective_call.
    for (const char* c : {"a100-p100-4", "local-cpu-hetero-3"})
      for (const char* m : {"mlp", "bert", "vgg19"}) {
        QTest::newRow(qPrintable(QString("%1 lp %2").arg(m, c))) << QString(m) << false << QString(c);
        QTest::newRow(qPrintable(QString("%1 even %2").arg(m, c))) << QString(m) << true << QString(c);
      }
  }
  void replaysThePrediction() {
    QFETCH(QString, model);
    QFETCH(bool, even);
    QFETCH(QString, cluster);
    const ir::Graph g = zoo(model);
    plan::PlanOptions options;
    options.baselines = false;
    if (even) options.ratios = plan::PlanOptions::Ratios::Even;
    const plan::Plan p = plan::makePlan(g, ::cluster(cluster), options);
    // Every collective call but the bucketed gradients' (which pay a share of a call) lasts at
    // least the call's fixed cost in the replay.
    const double call = cost::callSeconds(p.cluster);
    QCOMPARE(call > 0, cluster == "local-cpu-hetero-3");
    const plan::Timeline t = plan::simulate(p, plan::stepLabels(p, g));
    const double total = t.totalSeconds;

    // The replay, recomputed from the steps, gives the predicted time and the planner's stages.
    QVERIFY2(close(total, p.estimate.iterationSeconds, p.estimate.iterationSeconds),
             qPrintable(QString("simulated %1 s, predicted %2 s").arg(total, 0, 'g', 17).arg(p.estimate.iterationSeconds, 0, 'g', 17)));
    QVERIFY(plan::matchesPrediction(p, t));
    QVERIFY(close(t.forwardSeconds + t.backwardSeconds, total, total));
    // One more stage where the gradient buckets' all-reduces outlast backward.
    QCOMPARE(t.stages.size(), p.stages.size() + (t.exposedGradientSeconds > 0 ? 1 : 0));
    QVERIFY(close(t.exposedGradientSeconds, p.exposedGradientSeconds, total));
    for (size_t k = 0; k < p.stages.size(); ++k) {
      QCOMPARE(t.stages[k].backward, p.stages[k].backward);
      QVERIFY(close(t.stages[k].seconds(), p.stages[k].seconds(), total));
    }

    QCOMPARE(t.devices.size(), p.devices.size());
    for (const plan::DeviceTimeline& d : t.devices) {
      // Every device accounts for the whole iteration.
      QVERIFY2(close(d.busySeconds() + d.idleSeconds, total, total), qPrintable(QString("rank %1").arg(d.rank)));
      double compute = 0, communication = 0, idle = 0;
      double computationTrackEnd = 0, communicationTrackEnd = 0;
      for (const plan::Event& e : d.events) {
        QVERIFY(e.duration > 0);
        QVERIFY(e.stage >= 0 && static_cast<size_t>(e.stage) < t.stages.size());
        const plan::StageSpan& stage = t.stages[static_cast<size_t>(e.stage)];
        QCOMPARE(e.backward, stage.backward);
        // A stage's events lie within it, hence after the previous stage's end.
        if (e.stage > 0) QVERIFY(e.start >= t.stages[static_cast<size_t>(e.stage) - 1].end() - 1e-12 * total);
        QVERIFY(e.start >= stage.start - 1e-12 * total);
        QVERIFY(e.end() <= stage.end() + 1e-12 * total);
        // Events of one track never overlap (computation and idle share a track).
        double& trackEnd = e.kind == plan::EventKind::Communication ? communicationTrackEnd : computationTrackEnd;
        QVERIFY2(e.start >= trackEnd - 1e-12 * total,
                 qPrintable(QString("rank %1: %2 starts before the previous event ends").arg(d.rank).arg(e.label.c_str())));
        trackEnd = e.end();
        // Communication happens before the stage's computations.
        if (e.kind == plan::EventKind::Communication) {
          QVERIFY(e.end() <= stage.start + stage.communicationSeconds + 1e-12 * total);
          communication += e.duration;
          if (e.step >= 0 && p.steps[static_cast<size_t>(e.step)].instruction != "replicate-parameter")
            QVERIFY2(e.duration >= call * (1 - 1e-9), e.label.c_str());
        } else {
          QVERIFY(e.start >= stage.start + stage.communicationSeconds - 1e-12 * total);
          (e.kind == plan::EventKind::Idle ? idle : compute) += e.duration;
        }
        if (e.kind != plan::EventKind::Idle) QVERIFY(!e.label.empty() && e.label != "idle");
      }
      QVERIFY(close(compute, d.computeSeconds, total));
      QVERIFY(close(communication, d.communicationSeconds, total));
      QVERIFY(close(idle, d.idleSeconds, total));
      // The planner's busy time per device is its computation.
      QVERIFY(close(d.computeSeconds, p.devices[static_cast<size_t>(d.rank)].computeSeconds, total));
    }

    // The trace: one process per rank with both tracks named, events on both tracks.
    const nlohmann::ordered_json trace = plan::traceJson(p, t);
    std::map<int, std::string> processes;
    std::map<int, std::set<int>> namedThreads, usedThreads;
    for (const auto& e : trace["traceEvents"]) {
      const int pid = e["pid"].get<int>();
      if (e["ph"] == "M" && e["name"] == "process_name") processes[pid] = e["args"]["name"].get<std::string>();
      if (e["ph"] == "M" && e["name"] == "thread_name") {
        const int tid = e["tid"].get<int>();
        QCOMPARE(QString::fromStdString(e["args"]["name"].get<std::string>()),
                 QString(tid == 1 ? "computation" : tid == 2 ? "communication" : "gradient buckets"));
        namedThreads[pid].insert(tid);
      }
      if (e["ph"] == "X") {
        usedThreads[pid].insert(e["tid"].get<int>());
        QVERIFY(e["dur"].get<double>() > 0);
        QVERIFY(e["cat"] == "forward" || e["cat"] == "backward");
      }
    }
    QCOMPARE(processes.size(), p.devices.size());
    for (const plan::PlanDevice& d : p.devices) {
      const int pid = d.rank + 1;
      QCOMPARE(QString::fromStdString(processes[pid]),
               QString::fromStdString(fmt::format("rank {}: {} on {}", d.rank, d.type, d.machine)));
      QVERIFY(namedThreads[pid] == (t.buckets.empty() ? std::set<int>{1, 2} : std::set<int>{1, 2, 3}));
      QVERIFY(usedThreads[pid].count(1) == 1);
    }
    bool communicates = false;
    for (const plan::StageSpan& s : t.stages) communicates = communicates || s.communicationSeconds > 0;
    if (communicates) QVERIFY(usedThreads[1].count(2) == 1);

    // The report names every segment and says the totals match.
    const std::string report = plan::formatReport(p, t);
    for (const plan::Segment& s : p.segments)
      QVERIFY2(report.find("| " + s.name + " |") != std::string::npos, s.name.c_str());
    QVERIFY(report.find("the simulation matches it") != std::string::npos);
  }

  // Data parallelism's gradients all-reduce in the runtime's buckets beside backward
  // (synth/stages.h): every replicated gradient in exactly one bucket, buckets started in order
  // after their last gradient's stage, one at a time, and the iteration pays only what they leave
  // after the last backward stage — less than all of it where backward still had work to hide
  // them behind.
  void gradientBucketsOverlapBackward() {
    const ir::Graph g = zoo("bert");
    plan::PlanOptions options;
    options.baselines = false;
    options.strategy = plan::PlanOptions::Strategy::DataParallel;
    options.cost.gradientBucketBytes = 4 << 10;  // bert-tiny's gradients fill several buckets
    const plan::Plan p = plan::makePlan(g, cluster("local-cpu-hetero-3"), options);
    QVERIFY(p.gradientBuckets.size() > 2);
    std::multiset<int> bucketed;
    double gradient = 0;
    for (const plan::Plan::GradientBucket& b : p.gradientBuckets) {
      double sum = 0;
      for (int i : b.steps) bucketed.insert(i), sum += p.steps[static_cast<size_t>(i)].gradientSeconds;
      QVERIFY(close(sum, b.seconds, b.seconds));
      gradient += b.seconds;
    }
    std::multiset<int> replicated;
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const plan::PlanStep& s = p.steps[i];
      if (s.gradientSeconds > 0) replicated.insert(static_cast<int>(i));
      // Asynchronous: neither in the stage's communication nor a stage boundary.
      if (s.instruction == "replicate-parameter") QVERIFY(s.backwardCommunication == 0 && !s.backwardSync);
    }
    QVERIFY(bucketed == replicated);
    QVERIFY(!replicated.empty());

    const plan::Timeline t = plan::simulate(p, plan::stepLabels(p, g));
    QVERIFY(plan::matchesPrediction(p, t));
    QCOMPARE(t.buckets.size(), p.gradientBuckets.size());
    double stagesEnd = 0;
    for (const plan::StageSpan& s : t.stages)
      if (s.what.empty()) stagesEnd = std::max(stagesEnd, s.end());
    double lastEnd = 0;
    for (size_t k = 0; k < t.buckets.size(); ++k) {
      const plan::BucketRun& b = t.buckets[k];
      QVERIFY(b.start >= b.ready);
      if (k > 0) QVERIFY(b.start >= t.buckets[k - 1].end - 1e-15);
      QVERIFY(close(b.end - b.start, p.gradientBuckets[k].seconds, gradient));
      QVERIFY(b.ready > t.forwardSeconds);  // gradients are in only in backward
      lastEnd = b.end;
    }
    QVERIFY(close(t.exposedGradientSeconds, std::max(0.0, lastEnd - stagesEnd), gradient));
    QVERIFY(t.exposedGradientSeconds < gradient * (1 - 1e-6));  // some of it hidden
    QVERIFY(close(t.totalSeconds, stagesEnd + t.exposedGradientSeconds, t.totalSeconds));
    // The trace shows the buckets on a track of their own.
    int bucketEvents = 0;
    const nlohmann::ordered_json trace = plan::traceJson(p, t);
    for (const auto& e : trace["traceEvents"])
      if (e["ph"] == "X" && e["tid"] == 3) ++bucketEvents;
    QCOMPARE(bucketEvents, static_cast<int>(t.buckets.size() * p.devices.size()));
    // The report lists the exposed part as a stage of its own.
    if (t.exposedGradientSeconds > 0) QVERIFY(plan::formatReport(p, t).find("gradient buckets") != std::string::npos);

    // A plan file keeps the buckets, and refuses one naming a step that is not a replicated
    // parameter's.
    nlohmann::json j = nlohmann::json::parse(plan::toJson(p, g).dump());
    const plan::Plan back = plan::planFromJson(j, "plan.json");
    QCOMPARE(back.gradientBuckets.size(), p.gradientBuckets.size());
    QCOMPARE(plan::simulate(back).totalSeconds, plan::simulate(p).totalSeconds);
    nlohmann::json negative = j;
    negative["prediction"]["exposed_gradient_seconds"] = -1;
    try {
      plan::planFromJson(negative, "plan.json");
      QFAIL("a negative exposed time was accepted");
    } catch (const plan::PlanError& e) {
      QVERIFY2(std::string(e.what()).find("/prediction/exposed_gradient_seconds") != std::string::npos, e.what());
    }
    j["prediction"]["gradient_buckets"][0]["steps"][0] = 0;
    if (p.steps[0].instruction != "replicate-parameter") {
      try {
        plan::planFromJson(j, "plan.json");
        QFAIL("a bucket naming a computation step was accepted");
      } catch (const plan::PlanError& e) {
        QVERIFY2(std::string(e.what()).find("/prediction/gradient_buckets/0/steps") != std::string::npos, e.what());
      }
    }
  }

  // A plan read back from its file simulates to the same iteration.
  void roundTripSimulatesTheSame() {
    const ir::Graph g = zoo("bert");
    const plan::Plan p = plan::makePlan(g, cluster(), {});
    const plan::Plan back = plan::planFromJson(nlohmann::json::parse(plan::toJson(p, g).dump()), "plan.json");
    const plan::Timeline before = plan::simulate(p), after = plan::simulate(back);
    QCOMPARE(after.totalSeconds, before.totalSeconds);
    QCOMPARE(after.stages.size(), before.stages.size());
    QVERIFY(plan::matchesPrediction(back, after));
    // Labels name the op and module scope, or the instruction and value.
    const std::vector<std::string> labels = plan::stepLabels(back, g);
    bool scoped = false, converted = false;
    for (size_t i = 0; i < labels.size(); ++i) {
      scoped = scoped || labels[i].rfind("linear layers.0.", 0) == 0;
      if (back.steps[i].kind == plan::PlanStep::Kind::Convert)
        converted = converted || labels[i].rfind(back.steps[i].instruction + " ", 0) == 0;
    }
    QVERIFY(scoped);
    QVERIFY(converted);
  }

  // Large plans list the most expensive stages, then the others' totals.
  void reportListsTheMostExpensiveStages() {
    const ir::Graph g = zoo("bert");
    plan::PlanOptions options;  // every parameter all-gathered where it is used: many stages
    options.strategy = plan::PlanOptions::Strategy::FullySharded;
    const plan::Plan p = plan::makePlan(g, cluster(), options);
    const plan::Timeline t = plan::simulate(p);
    QVERIFY(t.stages.size() > plan::kReportStages);
    const std::string report = plan::formatReport(p, t);
    QVERIFY(report.find(fmt::format("| other {} |", t.stages.size() - plan::kReportStages)) != std::string::npos);
    QVERIFY(report.find("| **total** |") != std::string::npos);
  }

  // An inconsistent plan is refused with the field named.
  void inconsistentPlansAreRefused() {
    const ir::Graph g = zoo("mlp");
    plan::Plan p = plan::makePlan(g, cluster(), {});
    int compute = -1;
    for (size_t i = 0; i < p.steps.size() && compute < 0; ++i)
      if (!p.steps[i].forwardByGroup.empty()) compute = static_cast<int>(i);
    QVERIFY(compute >= 0);
    p.steps[static_cast<size_t>(compute)].forwardByGroup.resize(1);
    QString message;
    try {
      plan::simulate(p);
    } catch (const plan::PlanError& e) {
      message = e.what();
    }
    QVERIFY2(message.startsWith(QString("field 'program[%1].times.forward_by_group' has 1 entries").arg(compute)),
             qPrintable(message));
  }
};

QTEST_GUILESS_MAIN(TstSimulator)
#include "tst_simulator.moc"
