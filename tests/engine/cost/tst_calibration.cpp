// Fitting the cost model to recorded runs (engine/cost/calibration.h): runs made up from known
// parameters are fitted back, held-out runs are predicted by the fit, and the accuracy figures are
// what their definitions say.
#include <QtTest>

#include <cmath>

#include "engine/cost/calibration.h"

using namespace hap;

namespace {

// A run of two stages on devices of the given types: stage 1 communicates `comm` and computes
// comp[type]; stage 2 computes half of that.
cost::RunObservation makeRun(long long id, std::map<std::string, double> comp, double comm, double gradient = 0) {
  cost::RunObservation r;
  r.run = id;
  r.plan = id;
  r.stages.push_back({comm, 0, comp});
  if (gradient > 0) r.stages.push_back({gradient, gradient, {}});  // a backward stage of gradient all-reduces
  for (auto& [t, s] : comp) s /= 2;
  r.stages.push_back({0, 0, comp});
  r.measuredSteps = 5;
  for (const auto& [t, s] : comp) r.memory.push_back({t, 1e8 * (1 + s), 0});
  return r;
}

// What the machine "measures" under the true parameters.
void measure(cost::RunObservation& r, const cost::Calibration& truth) {
  r.measuredStepSeconds = cost::predictStep(r, truth);
  for (cost::MemoryObservation& m : r.memory) m.measuredPeakBytes = cost::predictMemory(m, truth);
}

cost::Calibration truth() {
  cost::Calibration c;
  c.types["fast"] = {.computeScale = 1.4, .collectiveSlowdown = 1.0, .baseMemoryBytes = 3e8, .memoryScale = 1.1};
  c.types["slow"] = {.computeScale = 2.5, .collectiveSlowdown = 1.8, .baseMemoryBytes = 2e8, .memoryScale = 1.0};
  c.gradientExposure = 0.4;
  return c;
}

}  // namespace

class TestCalibration : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void predictionFollowsTheStageModel() {
    const cost::RunObservation r = makeRun(1, {{"fast", 0.010}, {"slow", 0.008}}, 0.004);
    // Identity: Σ stages (comm + slowest) = (0.004 + 0.010) + 0.005.
    QVERIFY(std::abs(cost::predictStep(r, {}) - 0.019) < 1e-15);
    // Slow computes 2.5x: 0.020 then 0.010 are the slowest; its slowdown 1.8 scales the 4 ms.
    QVERIFY(std::abs(cost::predictStep(r, truth()) - (1.8 * 0.004 + 0.020 + 0.010)) < 1e-15);
    // Gradient all-reduces: all of them uncalibrated, 40% (slowed down 1.8x) under the truth.
    const cost::RunObservation dp = makeRun(2, {{"fast", 0.010}, {"slow", 0.008}}, 0.004, 0.010);
    QVERIFY(std::abs(cost::predictStep(dp, {}) - 0.029) < 1e-15);
    QVERIFY(std::abs(cost::predictStep(dp, truth()) - (1.8 * 0.004 + 1.8 * 0.4 * 0.010 + 0.020 + 0.010)) < 1e-15);
  }

  void fitRecoversTheParameters() {
    std::vector<cost::RunObservation> runs;
    const cost::Calibration t = truth();
    long long id = 0;
    // Mixed plans: some bound by the fast type, some by the slow one, some only fast devices.
    for (double comm : {0.0, 0.002, 0.010})
      for (double fast : {0.004, 0.012, 0.030}) {
        runs.push_back(makeRun(++id, {{"fast", fast}, {"slow", fast / 3}}, comm));
        runs.push_back(makeRun(++id, {{"fast", fast}, {"slow", fast}}, comm));
        runs.push_back(makeRun(++id, {{"fast", fast}}, comm));
        runs.push_back(makeRun(++id, {{"fast", fast}, {"slow", fast / 2}}, comm, 0.02));  // data parallel
      }
    for (cost::RunObservation& r : runs) measure(r, t);
    const cost::Calibration c = cost::fit(runs);
    QCOMPARE(c.types.size(), size_t{2});
    for (const char* type : {"fast", "slow"}) {
      const cost::TypeParameters &got = c.types.at(type), &want = t.types.at(type);
      QVERIFY2(std::abs(got.computeScale / want.computeScale - 1) < 1e-3, type);
      QVERIFY2(std::abs(got.memoryScale / want.memoryScale - 1) < 1e-6, type);
      QVERIFY2(std::abs(got.baseMemoryBytes / want.baseMemoryBytes - 1) < 1e-6, type);
    }
    QVERIFY(std::abs(c.types.at("slow").collectiveSlowdown / 1.8 - 1) < 1e-3);
    QVERIFY2(std::abs(c.gradientExposure / 0.4 - 1) < 1e-3, qPrintable(QString::number(c.gradientExposure)));
    const cost::Accuracy a = cost::accuracy(runs, c);
    QVERIFY(a.stepMape < 1e-3);
    QVERIFY(a.stepPearson > 0.9999);
    QVERIFY(a.memoryMape < 1e-6);
  }

  // Held-out runs take no part in the fit, but the fit predicts them.
  void heldOutRunsArePredictedNotFitted() {
    std::vector<cost::RunObservation> runs;
    long long id = 0;
    for (double fast : {0.004, 0.012, 0.030, 0.050}) {
      runs.push_back(makeRun(++id, {{"fast", fast}, {"slow", fast / 2}}, 0.002));
      runs.push_back(makeRun(++id, {{"fast", fast / 4}, {"slow", fast}}, 0.004));
    }
    for (cost::RunObservation& r : runs) measure(r, truth());
    for (size_t i = 0; i < runs.size(); ++i) runs[i].heldOut = (i / 2) % 2 == 1;  // both kinds of plan
    // Corrupt every held-out measurement: a fit that used them would be thrown off.
    std::vector<cost::RunObservation> corrupted = runs;
    for (cost::RunObservation& r : corrupted)
      if (r.heldOut) r.measuredStepSeconds *= 5;
    const cost::Calibration a = cost::fit(runs), b = cost::fit(corrupted);
    QCOMPARE(a.types.at("slow").computeScale, b.types.at("slow").computeScale);
    std::vector<cost::RunObservation> held;
    for (const cost::RunObservation& r : runs)
      if (r.heldOut) held.push_back(r);
    QVERIFY(cost::accuracy(held, a).stepMape < 0.01);
    QVERIFY(cost::accuracy(held, {}).stepMape > 0.3);  // the uncalibrated model is far off
  }

  void accuracyFigures() {
    std::vector<cost::RunObservation> runs{makeRun(1, {{"fast", 0.010}}, 0), makeRun(2, {{"fast", 0.020}}, 0),
                                           makeRun(3, {{"fast", 0.040}}, 0)};
    runs[0].measuredStepSeconds = 0.015 * 1.1;   // predicted 0.015: -9.09%
    runs[1].measuredStepSeconds = 0.030 * 0.8;   // predicted 0.030: +25%
    runs[2].measuredStepSeconds = 0.060;         // exact
    const cost::Accuracy a = cost::accuracy(runs, {}, {"m", "m", "other"});
    QCOMPARE(a.runs, 3);
    QVERIFY(std::abs(a.stepMape - (1 / 1.1 * 0.1 + 0.25 + 0) / 3) < 1e-12);
    QCOMPARE(a.rankingPairs, 1);  // only runs 1 and 2 compete
    QCOMPARE(a.rankingRight, 1);
    QVERIFY(std::abs(cost::pearson({1, 2, 3}, {2, 4, 6}) - 1) < 1e-15);
    QVERIFY(std::abs(cost::pearson({1, 2, 3}, {3, 2, 1}) + 1) < 1e-15);
    QCOMPARE(cost::pearson({1, 1, 1}, {1, 2, 3}), 0.0);
  }
};

QTEST_GUILESS_MAIN(TestCalibration)
#include "tst_calibration.moc"
