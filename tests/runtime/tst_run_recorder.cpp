// The pure time-splitting of run recording (runtime/train/run_recorder.h) on made-up intervals and a
// hand-made plan of 2 forward and 2 backward stages: communication wins where it overlaps
// computation, forward spans go whole to their step's stage, backward is laid out over the
// backward stages in proportion to the rank's device group's predicted times (bucket
// all-reduces counted where they fall, the part after backward in the last stage), and the
// per-stage records average the measured iterations only.
#include <QtTest>

#include <vector>

#include "runtime/train/run_recorder.h"

using namespace hap;
using namespace hap::runtime;

namespace {

// Steps: 0 compute, 1 all-reduce, 2 compute, 3 load-shard (no span). Forward stages 0 = [0, 2),
// 1 = [2, 4); backward stages 2 (of stage 1, run first) and 3. Group 0 predicts backward stage 2
// at 1 s and 3 at 3 s, group 1 the reverse; stages without a group's figure use the slowest's.
plan::Plan tinyPlan() {
  plan::Plan p;
  p.steps.resize(4);
  p.steps[1].kind = plan::PlanStep::Kind::Convert;
  p.steps[1].instruction = "all-reduce";
  p.steps[3].kind = plan::PlanStep::Kind::Convert;
  p.steps[3].instruction = "load-shard";
  auto stage = [](bool backward, int first, int end, double communication, std::vector<double> groups) {
    plan::Stage s;
    s.backward = backward;
    s.firstStep = first;
    s.endStep = end;
    s.communicationSeconds = communication;
    s.groupComputation = std::move(groups);
    s.computationSeconds = 3;
    return s;
  };
  p.stages = {stage(false, 0, 2, 0.5, {1, 1}), stage(false, 2, 4, 0, {1, 1}), stage(true, 2, 4, 0, {1, 3}),
              stage(true, 0, 2, 0, {3, 1})};
  return p;
}

// One iteration as the executor spans it: the three spanned forward steps, backward as a whole
// over [3, 7), and a gradient bucket's all-reduce over [6, 8) that outlasts it.
std::vector<TimedSpan> iteration(double shift = 0) {
  return {{"aten::linear", false, 0 + shift, 1 + shift},
          {"all-reduce", true, 1 + shift, 1.5 + shift},
          {"aten::relu", false, 1.5 + shift, 2.5 + shift},
          {"backward", false, 3 + shift, 7 + shift},
          {"gradient bucket 0", true, 6 + shift, 8 + shift}};
}

void compareSplit(const TimeSplit& t, double compute, double communication) {
  QCOMPARE(t.compute, compute);
  QCOMPARE(t.communication, communication);
}

}  // namespace

class TestRunRecorder : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void mergedSortsJoinsAndDropsEmpty() {
    const Intervals m = merged({{3, 5}, {1, 2}, {4, 4.5}, {2, 2.5}, {6, 6}, {7, 6.5}});
    QVERIFY(m == (Intervals{{1, 2.5}, {3, 5}}));
  }

  void communicationWinsWhereItOverlaps() {
    // Compute [0, 4) overlapped by communication [1, 2) and [3, 5), in [0, 6): 3 s of
    // communication, the 2 s of compute nothing overlaps, 1 s of neither.
    const Intervals compute = merged({{0, 4}});
    const Intervals communication = merged({{3, 5}, {1, 2}});
    compareSplit(splitTime(compute, communication, 0, 6), 2, 3);
    // A window cuts both: [1.5, 3.5) holds 1 s of each.
    compareSplit(splitTime(compute, communication, 1.5, 3.5), 1, 1);
    // Nothing outside the window counts, and an empty window is empty.
    compareSplit(splitTime(compute, communication, 5, 6), 0, 0);
    compareSplit(splitTime(compute, communication, 2, 2), 0, 0);
    // Overlapping computation spans are merged first: counted once.
    compareSplit(splitTime(merged({{0, 2}, {1, 3}}), {}, 0, 3), 3, 0);
  }

  void spannedStepsAreComputeAndCollectives() {
    QVERIFY(spannedSteps(tinyPlan()) == (std::vector<int>{0, 1, 2}));
  }

  void layOutIsProportionalToTheGroupsPrediction() {
    const plan::Plan p = tinyPlan();
    // Group 0: stage 2 gets 1/4 of [0, 8), stage 3 3/4; communication [-1, 0) before the start
    // counts in the first stage, [7, 9) in the last (the part after the end too).
    std::vector<TimeSplit> out(p.stages.size());
    layOut(p, 0, {2, 3}, merged({{0, 8}}), merged({{-1, 0}, {7, 9}}), 0, 8, out);
    compareSplit(out[2], 2, 1);
    compareSplit(out[3], 5, 2);
    compareSplit(out[0], 0, 0);
    // Group 1: the reverse proportions.
    out.assign(p.stages.size(), {});
    layOut(p, 1, {2, 3}, merged({{0, 8}}), {}, 0, 8, out);
    compareSplit(out[2], 6, 0);
    compareSplit(out[3], 2, 0);
    // A group without figures uses the slowest group's (equal here).
    out.assign(p.stages.size(), {});
    layOut(p, 7, {2, 3}, merged({{0, 8}}), {}, 0, 8, out);
    compareSplit(out[2], 4, 0);
    compareSplit(out[3], 4, 0);
  }

  void stageSplitAttributesForwardAndBackward() {
    const plan::Plan p = tinyPlan();
    const std::vector<int> spanned = spannedSteps(p);
    // Group 0: forward spans whole to their stages; backward [3, 7) as [3, 4) + [4, 7), the
    // bucket's [6, 7) communication in stage 3 and its [7, 8) after backward too.
    std::vector<TimeSplit> s = stageSplit(p, 0, spanned, iteration());
    QCOMPARE(s.size(), size_t{4});
    compareSplit(s[0], 1, 0.5);
    compareSplit(s[1], 1, 0);
    compareSplit(s[2], 1, 0);
    compareSplit(s[3], 2, 2);
    // Group 1: [3, 6) + [6, 7).
    s = stageSplit(p, 1, spanned, iteration());
    compareSplit(s[2], 3, 0);
    compareSplit(s[3], 0, 2);
  }

  void stageSplitLaysOutForwardWhenSpansDoNotMatch() {
    // Without the all-reduce's span there are two forward spans for three spanned steps: the
    // forward [0, 2.5) is laid out over stages 0 and 1 by their predictions (1.5 : 1).
    const plan::Plan p = tinyPlan();
    std::vector<TimedSpan> spans = iteration();
    spans.erase(spans.begin() + 1);
    const std::vector<TimeSplit> s = stageSplit(p, 0, spannedSteps(p), spans);
    compareSplit(s[0], 1, 0);
    compareSplit(s[1], 1, 0);
    compareSplit(s[2], 1, 0);
    compareSplit(s[3], 2, 2);
  }

  void stageRecordsAverageTheMeasuredIterations() {
    const plan::Plan p = tinyPlan();
    const std::vector<int> spanned = spannedSteps(p);
    // A warm-up iteration twice as long is left out while measured ones exist.
    std::vector<TimedSpan> slow = iteration();
    for (TimedSpan& t : slow) {
      t.start *= 2;
      t.end *= 2;
    }
    std::vector<db::StageRecord> r = stageRecords(p, 3, 0, spanned, {slow, iteration(), iteration(10)}, {true, false, false});
    QCOMPARE(r.size(), size_t{4});
    for (size_t s = 0; s < r.size(); ++s) {
      QCOMPARE(r[s].rank, 3);
      QCOMPARE(r[s].stage, static_cast<int>(s));
    }
    QCOMPARE(r[0].computeSeconds, 1.0);
    QCOMPARE(r[0].communicationSeconds, 0.5);
    QCOMPARE(r[3].computeSeconds, 2.0);
    QCOMPARE(r[3].communicationSeconds, 2.0);
    // Only warm-up iterations: they are used.
    r = stageRecords(p, 0, 0, spanned, {slow}, {true});
    QCOMPARE(r[0].computeSeconds, 2.0);
    QCOMPARE(r[0].communicationSeconds, 1.0);
    // No iteration: no record.
    QVERIFY(stageRecords(p, 0, 0, spanned, {}, {}).empty());
  }

  void disabledRecorderRecordsNothing() {
    RunRecorder off("", 0, 0);
    QVERIFY(!off.enabled());
    off.step({});
    off.finish({});
    QVERIFY_THROWS_EXCEPTION(std::exception, RunRecorder("x.db", 0, 1));
  }
};

QTEST_GUILESS_MAIN(TestRunRecorder)
#include "tst_run_recorder.moc"
