// Calibration without windows (issue 20, item 4): db::calibrateStore, the library `hap calibrate`
// and the app share, run through CalibrateJob off the GUI thread on a store written by the test
// (calibration_fixture.h: runs whose steps take 1.7x the prediction and whose ranks peak at
// 300 MiB + the predicted bytes): the fit finds both, on fitted and held-out runs, and saves
// bench@2; a dry run saves nothing; what a user can get wrong comes back as a message; the models
// the dialog shows read the result; a run recorded by `hap launch --local --db` is calibrated on
// as the synthetic ones are; and the summary of a calibrated re-plan says what changed.
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <cmath>
#include <map>

#include "app/studio/core/jobs/calibrate_job.h"
#include "app/studio/core/models/calibration_models.h"
#include "app/studio/core/models/plan_comparison.h"
#include "app/studio/core/display/units.h"
#include "tests/studio/calibration_fixture.h"
#include "tests/studio/process_census.h"

using namespace hap;
using namespace hap::studio;

namespace {

constexpr double kSlowdown = 1.7;

bool near(double a, double b, double tolerance) { return std::abs(a - b) <= tolerance; }

// Runs `request` through a CalibrateJob and waits for its one signal.
std::shared_ptr<const db::CalibrationResult> calibrate(const db::CalibrationRequest& request, QString* error = nullptr,
                                                       std::vector<db::SkippedRun>* skipped = nullptr) {
  CalibrateJob job;
  QSignalSpy finished(&job, &CalibrateJob::finished);
  QSignalSpy failed(&job, &CalibrateJob::failed);
  if (!job.start(request)) return nullptr;
  if (job.start(request)) qWarning("a second start while busy was accepted");
  if (!QTest::qWaitFor([&] { return finished.size() + failed.size() > 0; }, 30000)) return nullptr;
  QTest::qWait(20);
  if (finished.size() + failed.size() != 1) qWarning("more than one signal");
  if (!failed.isEmpty()) {
    if (error) *error = failed.first().first().toString();
    if (skipped) *skipped = job.lastSkipped();
    return nullptr;
  }
  return finished.first().first().value<std::shared_ptr<const db::CalibrationResult>>();
}

std::vector<db::CalibrationCandidate> candidates(const QString& path, QString* error = nullptr) {
  CalibrateJob job;
  QSignalSpy loaded(&job, &CalibrateJob::candidatesLoaded);
  QSignalSpy failed(&job, &CalibrateJob::candidatesFailed);
  job.loadCandidates(path);
  if (!QTest::qWaitFor([&] { return loaded.size() + failed.size() > 0; }, 30000)) return {};
  if (!failed.isEmpty()) {
    if (error) *error = failed.first().first().toString();
    return {};
  }
  return loaded.isEmpty() ? std::vector<db::CalibrationCandidate>{}
                          : loaded.first().first().value<std::vector<db::CalibrationCandidate>>();
}

}  // namespace

class TestCalibrateJob : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    hap::test::markChildren();  // every process this test starts, checked in cleanupTestCase
    QVERIFY(m_dir.isValid());
  }

  void cleanupTestCase() {
    // No process this test started outlives it (checked by the process list).
    const QStringList left = hap::test::survivors();
    QVERIFY2(left.isEmpty(), qPrintable(left.join(QStringLiteral("; "))));
  }

  void fitsTheRecordedRunsAndSavesTheNextVersion() {
    QTemporaryDir dir;
    const testing::CalibrationStore s = testing::makeCalibrationStore(dir.path(), kSlowdown);

    // The runs as the calibration sees them: three usable, the failed one not, with why.
    const std::vector<db::CalibrationCandidate> runs = candidates(s.path);
    QCOMPARE(runs.size(), size_t{4});
    for (size_t i = 0; i < 3; ++i) {
      QVERIFY2(runs[i].usable(), runs[i].why.c_str());
      QCOMPARE(runs[i].run.id, s.runs[i]);
      QCOMPARE(QString::fromStdString(runs[i].base), QStringLiteral("bench@1"));
      QCOMPARE(runs[i].measuredSteps, 3);
      QCOMPARE(QString::fromStdString(runs[i].clusterName), QStringLiteral("local-cpu-3"));
    }
    QCOMPARE(runs[3].run.id, s.failedRun);
    QCOMPARE(QString::fromStdString(runs[3].why), QStringLiteral("status failed"));

    db::CalibrationRequest request;
    request.storePath = s.path.toStdString();
    const auto r = calibrate(request);
    QVERIFY(r);
    QCOMPARE(QString::fromStdString(r->base), QStringLiteral("bench@1"));
    QVERIFY(r->skipped.empty());  // a failed run is no candidate when every run is taken
    QCOMPARE(r->runs.size(), size_t{3});
    QCOMPARE(r->plans, 3);
    QCOMPARE(r->heldOutPlans, 1);  // every second plan by id
    QCOMPARE(r->fittedRuns(), 2);
    QCOMPARE(r->heldOutRuns(), 1);
    QVERIFY(r->runs[1].observation.heldOut && !r->runs[0].observation.heldOut && !r->runs[2].observation.heldOut);
    // Before: every prediction is 1/1.7 of the measurement (41.2% off); after, near exact.
    for (const db::CalibratedRun& c : r->runs) {
      QVERIFY2(near(c.beforeError(), 1 / kSlowdown - 1, 0.005), qPrintable(QString::number(c.beforeError())));
      QVERIFY2(std::abs(c.afterError()) < 0.02, qPrintable(QString::number(c.afterError())));
      QVERIFY(c.memoryErrorAfter < 1e-3 && c.memoryErrorBefore > 0.5);
      QCOMPARE(c.observation.measuredSteps, 3);
    }
    for (const db::AccuracyChange* a : {&r->fit, &r->heldOut}) {
      QVERIFY2(near(a->before.stepMape, 1 - 1 / kSlowdown, 0.005), qPrintable(QString::number(a->before.stepMape)));
      QVERIFY2(a->after.stepMape < 0.02, qPrintable(QString::number(a->after.stepMape)));
      QVERIFY(a->after.memoryMape < 1e-3);
    }
    const cost::TypeParameters& t = r->calibration.types.at("cpu-core");
    QVERIFY(near(t.baseMemoryBytes / testing::kRuntimeMemoryBytes, 1, 1e-6));
    QVERIFY(t.computeScale > 1);
    // Saved as bench@2, the base's measurements kept and the fit composed with them.
    QCOMPARE(QString::fromStdString(r->saved), QStringLiteral("bench@2"));
    QCOMPARE(r->profile.version, 2);
    QVERIFY(!r->profile.createdAt.empty());
    QVERIFY(QString::fromStdString(r->profile.note).startsWith("hap calibrate: 2 runs of 2 plans fitted, 1 held out"));
    db::Store store(s.path.toStdString(), db::Store::Mode::ReadOnly);
    const std::optional<cost::Profile> v2 = store.loadProfile("bench", 2);
    QVERIFY(v2);
    QCOMPARE(v2->device("cpu-core")->computeScale, t.computeScale);
    QCOMPARE(v2->device("cpu-core")->ops.size(), size_t{1});
    QCOMPARE(v2->collectives.size(), size_t{1});

    // The models the dialog shows.
    CalibrationResultModel model;
    model.setResult(r);
    QCOMPARE(model.rowCount(), 3);
    for (int row = 0; row < 3; ++row) {
      const db::CalibratedRun& c = r->runs[size_t(row)];
      auto text = [&](int column) { return model.data(model.index(row, column)).toString(); };
      QCOMPARE(text(CalibrationResultModel::RunColumn), QString::number(c.observation.run));
      QCOMPARE(text(CalibrationResultModel::SetColumn), c.observation.heldOut ? QStringLiteral("held-out") : QStringLiteral("fit"));
      QCOMPARE(text(CalibrationResultModel::MeasuredColumn), formatMilliseconds(c.observation.measuredStepSeconds));
      QCOMPARE(text(CalibrationResultModel::BeforeColumn), formatMilliseconds(c.beforeSeconds));
      QCOMPARE(text(CalibrationResultModel::AfterColumn), formatMilliseconds(c.afterSeconds));
      QCOMPARE(text(CalibrationResultModel::BeforeErrorColumn), QStringLiteral("−41.2%"));
      QCOMPARE(model.data(model.index(row, CalibrationResultModel::AfterErrorColumn), CalibrationResultModel::ValueRole).toDouble(),
               c.afterError());
    }
    CalibrationTermsModel terms;
    terms.setResult(r);
    QCOMPARE(terms.rowCount(), 1);
    QCOMPARE(terms.data(terms.index(0, CalibrationTermsModel::TypeColumn)).toString(), QStringLiteral("cpu-core"));
    QCOMPARE(terms.data(terms.index(0, CalibrationTermsModel::ComputeColumn)).toString(),
             QStringLiteral("× %1").arg(t.computeScale, 0, 'f', 3));
    QCOMPARE(terms.data(terms.index(0, CalibrationTermsModel::BaseMemoryColumn)).toString(), QStringLiteral("300.0 MiB"));

    CalibrationRunsModel choose;
    choose.setCandidates(runs);
    QCOMPARE(choose.checkedRuns(), (std::vector<int64_t>{s.runs[0], s.runs[1], s.runs[2]}));
    QVERIFY(!choose.setData(choose.index(3, 0), Qt::Checked, Qt::CheckStateRole));  // the failed run
    QVERIFY(!(choose.flags(choose.index(3, 0)) & Qt::ItemIsUserCheckable));
    QCOMPARE(choose.data(choose.index(3, CalibrationRunsModel::StatusColumn)).toString(), QStringLiteral("status failed"));
    choose.setChecked(1, false);
    QCOMPARE(choose.checkedRuns(), (std::vector<int64_t>{s.runs[0], s.runs[2]}));
    QCOMPARE(choose.checkBase("bench"), 3);
    QCOMPARE(choose.checkedRuns().size(), size_t{3});
    QCOMPARE(choose.checkBase("other"), 3);  // no run of it: every usable run
    QCOMPARE(choose.data(choose.index(0, CalibrationRunsModel::ProfileColumn)).toString(), QStringLiteral("bench@1"));

    // Again on the same runs: the calibration of bench@1's runs gives bench@3, the same figures.
    const auto again = calibrate(request);
    QVERIFY(again);
    QCOMPARE(QString::fromStdString(again->saved), QStringLiteral("bench@3"));
    QCOMPARE(again->fit.after.stepMape, r->fit.after.stepMape);
  }

  void dryRunsAndNamedRuns() {
    QTemporaryDir dir;
    const testing::CalibrationStore s = testing::makeCalibrationStore(dir.path(), kSlowdown);
    db::CalibrationRequest request;
    request.storePath = s.path.toStdString();
    request.runs = {s.runs[0], s.runs[2], s.failedRun};
    request.split = db::CalibrationRequest::Split::None;
    request.dryRun = true;
    request.name = "lab";
    const auto r = calibrate(request);
    QVERIFY(r);
    // A run asked for by id that cannot be used is said, with why.
    QCOMPARE(r->skipped.size(), size_t{1});
    QCOMPARE(r->skipped[0].run, s.failedRun);
    QCOMPARE(QString::fromStdString(r->skipped[0].why), QStringLiteral("status failed"));
    QCOMPARE(r->fittedRuns(), 2);
    QCOMPARE(r->heldOutRuns(), 0);
    QCOMPARE(r->heldOut.after.runs, 0);
    QVERIFY(r->saved.empty());
    QCOMPARE(QString::fromStdString(r->profile.name), QStringLiteral("lab"));
    QCOMPARE(r->profile.version, 0);
    db::Store store(s.path.toStdString(), db::Store::Mode::ReadOnly);
    QCOMPARE(store.profiles().size(), size_t{1});  // bench@1 only
  }

  void mistakesAreMessages() {
    QTemporaryDir dir;
    const testing::CalibrationStore s = testing::makeCalibrationStore(dir.path(), kSlowdown);
    QString error;
    std::vector<db::SkippedRun> skipped;
    db::CalibrationRequest request;
    request.storePath = s.path.toStdString();

    request.runs = {s.failedRun};
    QVERIFY(!calibrate(request, &error, &skipped));
    QVERIFY2(error.contains("no succeeded run with measured steps") && error.contains(s.path), qPrintable(error));
    QCOMPARE(skipped.size(), size_t{1});
    QCOMPARE(skipped[0].run, s.failedRun);

    request.runs = {99};
    QVERIFY(!calibrate(request, &error));
    QVERIFY2(error.contains("no run 99"), qPrintable(error));

    request.runs = {s.runs[0]};
    request.holdOut = {s.plans[0]};
    QVERIFY(!calibrate(request, &error));
    QVERIFY2(error.contains("every run is held out"), qPrintable(error));

    // A run planned without a profile beside runs planned under bench@1.
    {
      db::Store store(s.path.toStdString());
      const cost::Cluster inventory = cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                                                        "/resources/clusters/local-cpu-3.yaml");
      plan::Plan p;
      const int64_t plan = testing::storePlan(store, inventory, store.saveCluster("local-cpu-3", "name: local-cpu-3\n"), "", &p);
      testing::recordRun(store, plan, p, kSlowdown);
    }
    request = {};
    request.storePath = s.path.toStdString();
    QVERIFY(!calibrate(request, &error));
    QVERIFY2(error.contains("were planned under different profiles ('bench@1' and 'none')"), qPrintable(error));

    const QString missing = dir.filePath("missing.db");
    QVERIFY(candidates(missing, &error).empty());
    QVERIFY2(error.contains(missing), qPrintable(error));
    QVERIFY(!QFile::exists(missing));  // reading candidates creates nothing
  }

  // A run recorded by `hap launch --local --db` on a plan made by `hap plan` under bench@1: its
  // measured step (each step's slowest rank, averaged over the steps after warm-up) is what the
  // store's steps say, and it calibrates beside the others.
  void calibratesARunRecordedByHapLaunch() {
    QTemporaryDir dir;
    const testing::CalibrationStore s = testing::makeCalibrationStore(dir.path(), kSlowdown);
    const QString planPath = dir.filePath("launched.json");
    QProcess hap;
    hap.start(HAP_CLI_PATH, {"plan", qEnvironmentVariable("HAP_ZOO_DIR") + "/mlp-tiny.pt", "-c", s.cluster, "--db", s.path,
                             "-q", "--no-baselines", "--baseline", "fsdp", "-o", planPath});
    QVERIFY(hap.waitForFinished(60000));
    QVERIFY2(hap.exitCode() == 0, hap.readAllStandardError().constData());
    hap.start(HAP_CLI_PATH, {"launch", "--local", planPath, "--db", s.path, "--steps", "5", "--timeout", "60"});
    QVERIFY(hap.waitForFinished(90000));
    QVERIFY2(hap.exitCode() == 0, (hap.readAllStandardOutput() + hap.readAllStandardError()).constData());

    const std::vector<db::CalibrationCandidate> runs = candidates(s.path);
    QCOMPARE(runs.size(), size_t{5});
    const db::CalibrationCandidate& launched = runs.back();
    QVERIFY2(launched.usable(), launched.why.c_str());
    QCOMPARE(QString::fromStdString(launched.base), QStringLiteral("bench@1"));
    QCOMPARE(QString::fromStdString(launched.strategy), QStringLiteral("fsdp"));
    std::map<int64_t, double> slowest;
    {
      db::Store store(s.path.toStdString(), db::Store::Mode::ReadOnly);
      for (const db::StepRecord& st : store.steps(launched.run.id))
        if (!st.warmup) slowest[st.step] = std::max(slowest[st.step], st.seconds);
    }
    QVERIFY(!slowest.empty());
    double mean = 0;
    for (const auto& [step, seconds] : slowest) mean += seconds / double(slowest.size());
    QCOMPARE(launched.measuredSteps, int(slowest.size()));
    QVERIFY(near(launched.measuredStepSeconds, mean, 1e-12));

    db::CalibrationRequest request;
    request.storePath = s.path.toStdString();
    request.runs = {s.runs[0], launched.run.id};
    request.split = db::CalibrationRequest::Split::None;
    request.dryRun = true;
    const auto r = calibrate(request);
    QVERIFY(r);
    QCOMPARE(r->runs.size(), size_t{2});
    const db::CalibratedRun& c = r->runs[1];
    QCOMPARE(c.observation.run, launched.run.id);
    QVERIFY(near(c.observation.measuredStepSeconds, mean, 1e-12));
    QCOMPARE(int(c.observation.memory.size()), 3);  // every rank's peak
    for (const cost::MemoryObservation& m : c.observation.memory) QVERIFY(m.measuredPeakBytes > 1e6);
  }

  // What a calibrated re-plan changed, in one line.
  void summarisesTheReplan() {
    QTemporaryDir dir;
    const testing::CalibrationStore s = testing::makeCalibrationStore(dir.path(), kSlowdown);
    db::CalibrationRequest request;
    request.storePath = s.path.toStdString();
    QVERIFY(calibrate(request));

    import::ImportOptions options;
    options.metaWeights = true;
    auto graph = std::make_shared<const ir::Graph>(
        import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/mlp-tiny.pt", options));
    auto planUnder = [&](const QString& profile, const std::string& baseline = "") {
      cost::Cluster cluster = cost::loadCluster(testing::writeBenchCluster(dir.path(), profile).toStdString());
      db::attachProfile(cluster, s.path.toStdString());
      plan::PlanRequest r;
      r.baseline = baseline;
      plan::PlannedModel planned = plan::planModel(graph, options, cluster, r);
      return makePlanDocument(std::move(planned.plan), planned.graph, "", "plan", r);
    };
    const auto before = planUnder("bench@1"), after = planUnder("bench@2");
    const PlanComparison c = compare(*before, *after);
    const QString text = calibratedPlanChange(*before, *after, c);
    qInfo().noquote() << text;
    const double ratio = after->p().estimate.iterationSeconds / before->p().estimate.iterationSeconds;
    QVERIFY2(ratio > 1.3 && ratio < 1.8, qPrintable(QString::number(ratio)));
    QVERIFY2(text.startsWith(QStringLiteral("Re-planned under bench@2 (was bench@1): predicted %1 → %2 per iteration (%3× slower)")
                                 .arg(formatMilliseconds(before->p().estimate.iterationSeconds),
                                      formatMilliseconds(after->p().estimate.iterationSeconds))
                                 .arg(ratio, 0, 'f', 2)),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("; peak memory ")) && text.contains(QStringLiteral("; strategy hap;")), qPrintable(text));
    QVERIFY2(text.contains(c.identical() ? QStringLiteral("same program") : QStringLiteral("changed variant")) ||
                 text.contains(QStringLiteral("ratios moved")),
             qPrintable(text));
    // A baseline against HAP's plan: the strategy change is said.
    const auto dp = planUnder("bench@1", "dp-ev");
    const QString changed = calibratedPlanChange(*dp, *after, compare(*dp, *after));
    qInfo().noquote() << changed;
    QVERIFY2(changed.contains(QStringLiteral("strategy %1 → hap").arg(QString::fromStdString(dp->p().strategy))),
             qPrintable(changed));
  }

 private:
  QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestCalibrateJob)
#include "tst_calibrate_job.moc"
