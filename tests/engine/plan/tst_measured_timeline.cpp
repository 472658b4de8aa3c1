// A run's stage records as a timeline (engine/plan/measured_timeline.h): the predicted stages with
// the measured times (communication the least any rank measured, computation per rank, the
// slowest rank's as the stage's), start times accumulated; missing records; and the error values
// for records that cannot belong to the plan.
#include <QtTest>

#include <cmath>

#include "engine/plan/measured_timeline.h"
#include "engine/plan/simulator.h"

using namespace hap;

namespace {

// Two devices in two groups; three steps: a computation, an all-reduce (synchronising in both
// passes), a computation. Forward stages {0}, {1, 2}; backward {2}, {1, 0}.
plan::Plan tinyPlan(int machines = 1) {
  plan::Plan p;
  for (int j = 0; j < 2; ++j) {
    plan::PlanDevice d;
    d.rank = j;
    d.group = j;
    d.type = j == 0 ? "fast" : "slow";
    d.machine = "m0";
    p.devices.push_back(d);
  }
  p.segments.push_back({"all", {0.5, 0.5}});
  plan::PlanStep a;
  a.kind = plan::PlanStep::Kind::Compute;
  a.node = 0;
  a.forwardByGroup = {1e-3, 2e-3};
  a.backwardByGroup = {2e-3, 4e-3};
  plan::PlanStep ar;
  ar.kind = plan::PlanStep::Kind::Convert;
  ar.instruction = "all-reduce";
  ar.forwardCommunication = 5e-4;
  ar.backwardCommunication = 6e-4;
  ar.forwardSync = ar.backwardSync = true;
  plan::PlanStep b = a;
  b.node = 1;
  b.forwardByGroup = {1e-3, 1e-3};
  b.backwardByGroup = {2e-3, 2e-3};
  p.steps = {a, ar, b};
  p.stages = {{false, 0, 1, 0, {1e-3, 2e-3}, 2e-3},
              {false, 1, 3, 5e-4, {1e-3, 1e-3}, 1e-3},
              {true, 2, 3, 0, {2e-3, 2e-3}, 2e-3},
              {true, 0, 2, 6e-4, {2e-3, 4e-3}, 4e-3}};
  if (machines > 1) {
    p.replication.machines = machines;
    p.replication.allReduceSeconds = 1e-3;
  }
  return p;
}

// Per rank and stage: computation c[j][s] and communication m[j][s].
std::vector<plan::StageMeasurement> records(const std::vector<std::vector<double>>& c,
                                            const std::vector<std::vector<double>>& m) {
  std::vector<plan::StageMeasurement> out;
  for (size_t j = 0; j < c.size(); ++j)
    for (size_t s = 0; s < c[j].size(); ++s) out.push_back({static_cast<int>(j), static_cast<int>(s), c[j][s], m[j][s]});
  return out;
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-12; }

}  // namespace

class TstMeasuredTimeline : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void theTinyPlanHasTheStagesWeBuilt() {
    const plan::Plan p = tinyPlan();
    const plan::Timeline t = plan::simulate(p);
    QCOMPARE(t.stages.size(), p.stages.size());
    for (size_t s = 0; s < p.stages.size(); ++s) QCOMPARE(t.stages[s].backward, p.stages[s].backward);
  }

  void measuredStagesFollowThePrediction() {
    const plan::Plan p = tinyPlan();
    const plan::Timeline predicted = plan::simulate(p);
    // Rank 0 is faster: it waits for rank 1 inside the next collective (its communication is
    // larger), rank 1 arrives last and measures the collective alone.
    const std::vector<std::vector<double>> c = {{1.1e-3, 0.9e-3, 2.1e-3, 2.0e-3}, {2.3e-3, 1.2e-3, 2.0e-3, 4.4e-3}};
    const std::vector<std::vector<double>> m = {{0, 1.9e-3, 0, 0.8e-3}, {0, 0.7e-3, 0, 0.5e-3}};
    const plan::MeasuredTimeline mt = plan::measuredTimeline(p, predicted, records(c, m));
    QVERIFY2(mt.ok(), mt.error.c_str());
    QVERIFY(mt.ranksWithoutStages.empty());
    QCOMPARE(mt.missingRecords, 0);
    const plan::Timeline& t = mt.timeline;
    QCOMPARE(t.devices.size(), size_t(2));
    QCOMPARE(t.stages.size(), predicted.stages.size());
    double clock = 0, forward = 0, backward = 0;
    for (size_t s = 0; s < t.stages.size(); ++s) {
      const plan::StageSpan& st = t.stages[s];
      QCOMPARE(st.backward, predicted.stages[s].backward);
      QCOMPARE(st.steps, predicted.stages[s].steps);
      QVERIFY(near(st.start, clock));
      QVERIFY(near(st.communicationSeconds, std::min(m[0][s], m[1][s])));  // the least any rank measured
      QVERIFY(near(st.deviceComputation[0], c[0][s]));
      QVERIFY(near(st.deviceComputation[1], c[1][s]));
      QVERIFY(near(st.computationSeconds, std::max(c[0][s], c[1][s])));
      QCOMPARE(st.slowestRank, c[1][s] > c[0][s] ? 1 : 0);
      clock = st.end();
      (st.backward ? backward : forward) += st.seconds();
    }
    QVERIFY(near(t.totalSeconds, clock));
    QVERIFY(near(t.forwardSeconds, forward));
    QVERIFY(near(t.backwardSeconds, backward));
    // Every device's time adds up to the total; events in start order, positive, not overlapping.
    for (const plan::DeviceTimeline& d : t.devices) {
      QVERIFY(near(d.busySeconds() + d.idleSeconds, t.totalSeconds));
      double end = 0;
      for (const plan::Event& e : d.events) {
        QVERIFY(e.duration > 0);
        QVERIFY(e.start >= end - 1e-15);
        QCOMPARE(e.step, -1);
        end = e.end();
      }
    }
    // Stage 2 (index 1): communication 0.7 ms on both, then rank 0 computes 0.9 ms and idles 0.3 ms.
    const plan::DeviceTimeline& r0 = t.devices[0];
    const auto inStage = [&](int stage, plan::EventKind kind) {
      for (const plan::Event& e : r0.events)
        if (e.stage == stage && e.kind == kind) return e;
      return plan::Event{};
    };
    QVERIFY(near(inStage(1, plan::EventKind::Communication).duration, 0.7e-3));
    QVERIFY(near(inStage(1, plan::EventKind::Compute).duration, 0.9e-3));
    QVERIFY(near(inStage(1, plan::EventKind::Idle).duration, 0.3e-3));
    QVERIFY(QString::fromStdString(inStage(1, plan::EventKind::Communication).label).startsWith("measured communication: all-reduce"));
    QCOMPARE(QString::fromStdString(inStage(1, plan::EventKind::Compute).label), QString("measured computation: 2 steps"));
  }

  void missingRecordsAreZeroOrEmptyRows() {
    const plan::Plan p = tinyPlan();
    const plan::Timeline predicted = plan::simulate(p);
    std::vector<plan::StageMeasurement> r = records({{1e-3, 1e-3, 1e-3, 1e-3}, {2e-3, 2e-3, 2e-3, 2e-3}},
                                                    {{0, 1e-3, 0, 1e-3}, {0, 2e-3, 0, 2e-3}});
    r.erase(r.begin() + 5);  // rank 1, stage 2
    plan::MeasuredTimeline mt = plan::measuredTimeline(p, predicted, r);
    QVERIFY2(mt.ok(), mt.error.c_str());
    QCOMPARE(mt.missingRecords, 1);
    QCOMPARE(mt.timeline.stages[1].deviceComputation[1], 0.0);
    QCOMPARE(mt.timeline.stages[1].computationSeconds, 1e-3);
    QCOMPARE(mt.timeline.stages[1].communicationSeconds, 1e-3);  // rank 0's: rank 1 has none there

    // A rank without any record: an empty row.
    r = records({{1e-3, 1e-3, 1e-3, 1e-3}}, {{0, 1e-3, 0, 1e-3}});
    mt = plan::measuredTimeline(p, predicted, r);
    QVERIFY2(mt.ok(), mt.error.c_str());
    QCOMPARE(mt.ranksWithoutStages, std::vector<int>{1});
    QCOMPARE(mt.timeline.devices.size(), size_t(2));
    QVERIFY(mt.timeline.devices[1].events.empty());
    QVERIFY(!mt.timeline.devices[0].events.empty());
    QCOMPARE(mt.timeline.devices[1].busySeconds(), 0.0);
  }

  void recordsOfAnotherPlanAreAnErrorValue_data() {
    QTest::addColumn<int>("rank");
    QTest::addColumn<int>("stage");
    QTest::addColumn<QString>("message");
    QTest::newRow("stage beyond the plan") << 0 << 7 << "rank 0 recorded stage 8, but the plan has 4 stages";
    QTest::newRow("rank beyond the plan") << 5 << 0 << "rank 5 recorded stage times, but the plan runs on 2 ranks";
    QTest::newRow("negative stage") << 1 << -1 << "rank 1 recorded stage 0, but the plan has 4 stages";
  }
  void recordsOfAnotherPlanAreAnErrorValue() {
    QFETCH(int, rank);
    QFETCH(int, stage);
    QFETCH(QString, message);
    const plan::Plan p = tinyPlan();
    std::vector<plan::StageMeasurement> r = records({{1e-3, 1e-3, 1e-3, 1e-3}}, {{0, 0, 0, 0}});
    r.push_back({rank, stage, 1e-3, 0});
    const plan::MeasuredTimeline mt = plan::measuredTimeline(p, plan::simulate(p), r);
    QVERIFY(!mt.ok());
    QVERIFY2(QString::fromStdString(mt.error).contains(message), mt.error.c_str());
    QVERIFY(mt.timeline.stages.empty());
  }

  void fewerStagesOrNoneAreAnErrorValue() {
    const plan::Plan p = tinyPlan();
    const plan::Timeline predicted = plan::simulate(p);
    plan::MeasuredTimeline mt = plan::measuredTimeline(p, predicted, records({{1e-3, 1e-3}, {1e-3, 1e-3}}, {{0, 0}, {0, 0}}));
    QVERIFY(!mt.ok());
    QCOMPARE(QString::fromStdString(mt.error),
             QString("the run recorded 2 stages per rank, but the plan has 4 (a run of another plan?)"));
    mt = plan::measuredTimeline(p, predicted, {});
    QVERIFY(!mt.ok());
    QVERIFY(QString::fromStdString(mt.error).startsWith("the run recorded no per-stage times"));
    // A simulation of another plan.
    plan::Plan other = p;
    other.stages.pop_back();
    mt = plan::measuredTimeline(other, predicted, records({{1e-3, 1e-3, 1e-3}}, {{0, 0, 0}}));
    QVERIFY(!mt.ok());
    QVERIFY2(QString::fromStdString(mt.error).contains("plan lists 3 stages but its simulation has 4"), mt.error.c_str());
  }

  void aReplicatedPlanHasEveryMachinesRanksAndItsLastStage() {
    const plan::Plan p = tinyPlan(2);
    const plan::Timeline predicted = plan::simulate(p);
    QCOMPARE(predicted.stages.size(), p.stages.size() + 1);  // the gradient sums across machines
    const std::vector<double> c = {1e-3, 1e-3, 2e-3, 2e-3}, m = {0, 1e-3, 0, 1e-3};
    const plan::MeasuredTimeline mt = plan::measuredTimeline(p, predicted, records({c, c, c, c}, {m, m, m, m}));
    QVERIFY2(mt.ok(), mt.error.c_str());
    QCOMPARE(mt.timeline.devices.size(), size_t(4));
    QCOMPARE(mt.timeline.stages.size(), predicted.stages.size());
    QCOMPARE(mt.timeline.stages.back().seconds(), 0.0);  // measured inside the last backward stage
    QVERIFY(near(mt.timeline.totalSeconds, 6e-3 + 2e-3));
    QVERIFY(near(mt.timeline.devices[3].computeSeconds, 6e-3));
  }
};

QTEST_GUILESS_MAIN(TstMeasuredTimeline)
#include "tst_measured_timeline.moc"
