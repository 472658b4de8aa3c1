// RunMonitor over a store written by the test: a finished run read once (the fixture's), and a run
// followed while the test writes its steps as ranks do (batches of steps, then finishRun), with
// the figures the Run dock shows (steps done, last step, mean step time, throughput, time left).
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "app/studio/core/jobs/run_monitor.h"
#include "tests/studio/profile_store_fixture.h"

using namespace hap;
using namespace hap::studio;

namespace {

db::StepRecord step(int rank, int64_t n, bool warmup, double seconds, double loss, double cpu) {
  db::StepRecord r;
  r.rank = rank;
  r.step = n;
  r.warmup = warmup;
  r.seconds = seconds;
  r.loss = loss;
  r.cpuSeconds = cpu;
  return r;
}

}  // namespace

class TstRunMonitor : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;

 private Q_SLOTS:
  void globalBatch() {
    plan::Plan p;
    QCOMPARE(globalBatchSize(p), 0);
    plan::PlanInput x;
    x.shape = {8, 16};
    p.inputs = {x, x};
    QCOMPARE(globalBatchSize(p), 8);
    // Replicated over 3 machines along dimension 1 of the first input.
    p.replication.machines = 3;
    p.replication.inputDims = {1, 1};
    QCOMPARE(globalBatchSize(p), 48);
    p.replication.inputDims = {-1, 0};  // the first input is read whole by every machine
    QCOMPARE(globalBatchSize(p), 24);
  }

  void aFinishedRunReadOnce() {
    const QString path = m_dir.filePath("fixture.db");
    const testing::StoreFixture f = testing::fillStore(path);
    RunMonitor m;
    QSignalSpy updated(&m, &RunMonitor::updated);
    m.follow(path, f.firstRun, 10);
    QCOMPARE(updated.count(), 1);
    QVERIFY2(m.error().isEmpty(), qPrintable(m.error()));
    QVERIFY(!m.polling());  // the run has ended: read once
    QVERIFY(m.record());
    QCOMPARE(m.record()->status, db::RunStatus::Succeeded);
    QCOMPARE(m.ranks(), 2);
    QCOMPARE(m.stepsDone(), 4);
    QCOMPARE(m.lastStep(), 22);  // no settings: the worker's defaults, 2 + 20 (the run ended early)
    QCOMPARE(m.loss().size(), 4);
    QCOMPARE(m.loss().at(2), QPointF(3, testing::fixtureLoss(3)));
    QCOMPARE(m.stepSeconds(1).size(), 4);
    QCOMPARE(m.stepSeconds(1).at(0).y(), testing::fixtureStepSeconds(1, 1));
    QCOMPARE(m.stepSeconds(2).size(), 0);
    // Rank 0's measured steps 2..4.
    const double mean = (testing::fixtureStepSeconds(0, 2) + testing::fixtureStepSeconds(0, 3) +
                         testing::fixtureStepSeconds(0, 4)) / 3;
    QCOMPARE(m.meanStepSeconds(), mean);
    QCOMPARE(m.samplesPerSecond(), 10 / mean);
    QCOMPARE(m.secondsLeft(), 0.0);
    QCOMPARE(m.lastLoss(), testing::fixtureLoss(4));

    // The failed run: rank 2 missing at step 2; its plan unknown, so no throughput.
    m.follow(path, f.secondRun);
    QCOMPARE(m.record()->status, db::RunStatus::Failed);
    QCOMPARE(m.ranks(), 3);
    QCOMPARE(m.stepSeconds(2).size(), 1);
    QVERIFY(std::isnan(m.samplesPerSecond()));
    QCOMPARE(m.meanStepSeconds(), 0.02);  // only measured steps; none is warm-up here

    // A run that is not there, a store that is not there.
    m.follow(path, 999);
    QVERIFY(m.error().contains("999"));
    QVERIFY(!m.polling());
    m.follow(m_dir.filePath("none/missing.db"), 1);
    QVERIFY(!m.error().isEmpty());
    m.clear();
    QCOMPARE(m.runId(), 0);
    QCOMPARE(m.ranks(), 0);
  }

  void aRunFollowedWhileItIsWritten() {
    const QString path = m_dir.filePath("live.db");
    db::Store writer(path.toStdString());
    db::RunRecord r;
    r.ranks = 2;
    r.settingsJson = R"({"ranks": 2, "steps": "6", "warmup": "1", "seed": null})";
    const int64_t run = writer.beginRun(r);

    RunMonitor m;
    m.setInterval(20);
    QSignalSpy updated(&m, &RunMonitor::updated);
    m.follow(path, run, 4);
    QVERIFY(m.polling());
    QVERIFY(m.running());
    QCOMPARE(m.lastStep(), 7);
    QCOMPARE(m.stepsDone(), 0);
    QVERIFY(std::isnan(m.secondsLeft()));
    QVERIFY(std::isnan(m.meanStepSeconds()));

    // The warm-up step: the mean is over it while nothing else is in.
    writer.recordSteps(run, {step(0, 1, true, 0.5, 3.0, 0.4), step(1, 1, true, 0.6, 3.0, 0.3)});
    QTRY_COMPARE_WITH_TIMEOUT(m.stepsDone(), 1, 5000);
    QCOMPARE(m.meanStepSeconds(), 0.5);
    QCOMPARE(m.secondsLeft(), 0.5 * 6);

    // Two measured steps from rank 0; rank 1 writes its batch later.
    const int before = updated.count();
    writer.recordSteps(run, {step(0, 2, false, 0.1, 2.5, 0.09), step(0, 3, false, 0.3, 2.0, 0.2)});
    QTRY_COMPARE_WITH_TIMEOUT(m.stepsDone(), 3, 5000);
    QVERIFY(updated.count() > before);
    QCOMPARE(m.meanStepSeconds(), 0.2);
    QCOMPARE(m.samplesPerSecond(), 4 / 0.2);
    QCOMPARE(m.secondsLeft(), 0.2 * 4);
    QCOMPARE(m.loss().size(), 3);
    QCOMPARE(m.loss().back(), QPointF(3, 2.0));
    QCOMPARE(m.cpuSeconds(0).at(1), QPointF(2, 0.09));
    QCOMPARE(m.stepSeconds(1).size(), 1);

    // Nothing new: no update.
    const int quiet = updated.count();
    QTest::qWait(120);
    QCOMPARE(updated.count(), quiet);

    writer.recordSteps(run, {step(1, 2, false, 0.1, 2.5, 0.1), step(1, 3, false, 0.3, 2.0, 0.2)});
    writer.finishRun(run, db::RunStatus::Stopped, "interrupted (SIGTERM)");
    QTRY_VERIFY_WITH_TIMEOUT(!m.polling(), 5000);
    QCOMPARE(m.record()->status, db::RunStatus::Stopped);
    QCOMPARE(m.stepSeconds(1).size(), 3);
    QCOMPARE(m.secondsLeft(), 0.0);
    QCOMPARE(m.stepsDone(), 3);
  }

  void aResumedRunCountsFromItsFirstStep() {
    const QString path = m_dir.filePath("resumed.db");
    db::Store writer(path.toStdString());
    db::RunRecord r;
    r.ranks = 1;
    r.settingsJson = R"({"steps": "5", "warmup": "0"})";
    const int64_t run = writer.beginRun(r);
    writer.recordSteps(run, {step(0, 11, false, 0.1, 1.0, 0.1), step(0, 12, false, 0.1, 0.9, 0.1)});
    RunMonitor m;
    m.follow(path, run, 1);
    QCOMPARE(m.stepsDone(), 12);
    QCOMPARE(m.lastStep(), 15);  // resumed at step 10, 5 more
    QCOMPARE(m.secondsLeft(), 0.1 * 3);
    m.stop();
    QVERIFY(!m.polling());
  }
};

QTEST_GUILESS_MAIN(TstRunMonitor)
#include "tst_run_monitor.moc"
