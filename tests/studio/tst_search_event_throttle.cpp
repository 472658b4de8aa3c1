// SearchEventThrottle on its own: a flood of progress reports from a planning thread reaches the
// GUI side as a bounded number of snapshots, every rare event exactly once and in order, the newest
// progress always; waiting samples stay bounded when nobody takes them.
#include <QtTest>

#include <atomic>
#include <thread>

#include "app/studio/core/jobs/search_event_throttle.h"
#include "engine/synth/search.h"
#include "engine/synth/theory.h"

using namespace hap;
using namespace hap::studio;

class TstSearchEventThrottle : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void floodIsThrottledAndNothingRareIsLost() {
    SearchEventThrottle throttle;
    constexpr int kReports = 200'000, kSteps = 20;
    std::atomic<bool> done{false};
    std::thread planner([&] {
      for (int i = 1; i <= kReports; ++i) {
        if (i % (kReports / kSteps) == 0)
          throttle.onPlanningStep({synth::PlanningStep::Kind::Started, "step " + std::to_string(i / (kReports / kSteps))});
        synth::SearchProgress p;
        p.expanded = i;
        p.boundSeconds = i * 1e-9;
        throttle.onProgress(p);
      }
      done.store(true);
    });
    // The GUI side takes every 20 ms, as PlanJob's timer does (at 100 ms by default).
    std::vector<std::string> steps;
    int takes = 0;
    int64_t lastExpanded = 0;
    size_t samples = 0;
    while (true) {
      const bool finished = done.load();
      SearchSnapshot s = throttle.take();
      ++takes;
      for (const PlanningEvent& e : s.events) steps.push_back(e.name);
      samples += s.samples.size();
      if (s.latest) {
        QVERIFY(s.latest->expanded >= lastExpanded);  // the newest, never an older one
        lastExpanded = s.latest->expanded;
      }
      if (finished) break;
      QThread::msleep(20);
    }
    planner.join();
    QCOMPARE(lastExpanded, int64_t{kReports});  // the last report arrived
    QCOMPARE(static_cast<int>(steps.size()), kSteps);
    for (int i = 0; i < kSteps; ++i) QCOMPARE(steps[static_cast<size_t>(i)], "step " + std::to_string(i + 1));
    QCOMPARE(throttle.samplesRecorded(), int64_t{kReports});
    QVERIFY(samples <= static_cast<size_t>(kReports));
    QVERIFY(throttle.take().empty());  // delivered once
  }

  void waitingSamplesAreBounded() {
    SearchEventThrottle::Options options;
    options.maxPending = 64;
    SearchEventThrottle throttle(options);
    for (int i = 1; i <= 10'000; ++i) {
      synth::SearchProgress p;
      p.expanded = i;
      throttle.onProgress(p);
    }
    const SearchSnapshot s = throttle.take();
    QVERIFY(s.samples.size() <= 64);
    QVERIFY(s.samples.size() >= 32);
    QCOMPARE(s.samples.back().expanded, int64_t{10'000});  // the newest is kept
    for (size_t i = 1; i < s.samples.size(); ++i) QVERIFY(s.samples[i].expanded > s.samples[i - 1].expanded);
  }

  void reportingCostsTheSearchLittle() {
    // The planning thread's cost per report: a mutex and a copy. 200,000 reports (far more than
    // the engine sends: one per 50-100 ms) in well under a second even on a loaded CI machine.
    SearchEventThrottle throttle;
    QElapsedTimer t;
    t.start();
    for (int i = 1; i <= 200'000; ++i) {
      synth::SearchProgress p;
      p.expanded = i;
      throttle.onProgress(p);
    }
    QVERIFY2(t.elapsed() < 2000, qPrintable(QStringLiteral("%1 ms").arg(t.elapsed())));
  }

  void openStatesAreSampledAtTheirOwnRate() {
    SearchEventThrottle::Options options;
    options.openStatesSeconds = 0.2;
    SearchEventThrottle throttle(options);
    QCOMPARE(throttle.openStatesWanted(), options.openStates);  // the first report carries them
    synth::SearchProgress p;
    p.open = {{0.1, 0.2, 1, {0}}};
    throttle.onProgress(p);
    QCOMPARE(throttle.openStatesWanted(), 0);  // not again within the interval
    QTest::qWait(250);
    QCOMPARE(throttle.openStatesWanted(), options.openStates);
    throttle.onProgress(p);
    QCOMPARE(throttle.openStatesWanted(), 0);
    // A new search's first report carries its open states, however soon it comes.
    ir::Graph g;
    synth::Theory theory(g);
    throttle.onSearchStarted(theory);
    QCOMPARE(throttle.openStatesWanted(), options.openStates);
    QVERIFY(throttle.progressIntervalSeconds() > 0 && throttle.progressIntervalSeconds() <= 0.05);
  }

  void planningStepsCarryTheirCosts() {
    SearchEventThrottle throttle;
    throttle.onPlanningStep({synth::PlanningStep::Kind::Started, "lp"});
    throttle.onPlanningStep({synth::PlanningStep::Kind::Finished, "lp", 0.0042, false, true});
    synth::BeamFallback f;
    f.maxStates = 100;
    f.beamWidth = 7;
    throttle.onBeamFallback(f);
    const SearchSnapshot s = throttle.take();
    QCOMPARE(s.events.size(), size_t{3});
    QCOMPARE(s.events[1].kind, PlanningEvent::Kind::StepFinished);
    QCOMPARE(s.events[1].cost, 0.0042);
    QCOMPARE(s.events[1].fits, false);
    QCOMPARE(s.events[1].adopted, true);
    QCOMPARE(s.events[2].kind, PlanningEvent::Kind::BeamFallback);
    QCOMPARE(s.events[2].name, std::string("lp"));  // during the step that was running
    QVERIFY(s.events[2].text.find("width 7") != std::string::npos);
  }
};

QTEST_MAIN(TstSearchEventThrottle)
#include "tst_search_event_throttle.moc"
