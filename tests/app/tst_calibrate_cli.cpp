// A profiled inventory and `hap calibrate`, run as a user runs them: `hap plan` on an inventory
// that names a profile and on the same inventory with --no-profile, the difference explained by
// --explain's Pricing block; a profile the store lacks; and calibration of recorded runs whose
// measurements follow known parameters, with held-out runs reported apart.
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "run_hap.h"

#include <fstream>

#include "db/store.h"
#include "engine/cost/profile.h"
#include "engine/plan/plan.h"
#include "engine/plan/plan_json.h"

using namespace hap;

namespace {

QString zoo(const char* model) { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + model + "-tiny.pt"; }

// local-cpu-4.yaml with a `profile:` line.
QString writeCluster(const QTemporaryDir& dir, const QString& profile) {
  QFile in(qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/local-cpu-4.yaml");
  if (!in.open(QIODevice::ReadOnly)) qFatal("cannot read local-cpu-4.yaml");
  QString text = QString::fromUtf8(in.readAll());
  text.replace("name: local-cpu-4", "name: local-cpu-4-profiled\nprofile: " + profile);
  const QString path = dir.filePath("cluster.yaml");
  QFile out(path);
  if (!out.open(QIODevice::WriteOnly)) qFatal("cannot write the cluster");
  out.write(text.toUtf8());
  return path;
}

// A profile of cpu-core: matmul 4x slower than the inventory's 50 GFLOP/s with a 50 us floor, and a
// fitted ring all-reduce.
cost::Profile slowMatmulProfile() {
  cost::Profile p;
  p.name = "bench";
  p.host = "test";
  p.note = "made by the test";
  cost::DeviceProfile d;
  d.deviceType = "cpu-core";
  d.description = "synthetic";
  d.threads = 1;
  d.ops.push_back({cost::OpFamily::MatMul, ir::DType::Float32, {{1e4, 50e-6}, {1e6, 80e-6}, {1e9, 80e-3}}});
  p.devices.push_back(d);
  p.collectives.push_back({.collective = cost::Collective::AllReduce, .algorithm = "ring",
                           .linkClass = cost::LinkClass::Intra, .link = {2e8, 200e-6}, .ranks = 2, .samples = 5,
                           .relativeResidual = 0.02});
  return p;
}

double predicted(const QString& planPath) { return plan::readPlan(planPath.toStdString()).estimate.iterationSeconds; }

}  // namespace

class TstCalibrateCli : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void profiledPlanIsExplained() {
    QTemporaryDir dir;
    const QString db = dir.filePath("p.db");
    {
      db::Store store(db.toStdString());
      QCOMPARE(store.saveProfile(slowMatmulProfile()), 1);
    }
    const QString cluster = writeCluster(dir, "bench");
    const HapRun with = runHap({"plan", zoo("mlp"), "-c", cluster, "--db", db, "--explain", "-q", "--no-baselines", "-o",
                          dir.filePath("with.json")});
    QVERIFY2(with.exitCode == 0, qPrintable(with.err));
    const HapRun without = runHap({"plan", zoo("mlp"), "-c", cluster, "--db", db, "--explain", "-q", "--no-baselines",
                             "--no-profile", "-o", dir.filePath("without.json")});
    QVERIFY2(without.exitCode == 0, qPrintable(without.err));
    // The profiled plan records the version it was priced under, and prices matmuls by it.
    QVERIFY2(with.out.contains("profile bench v1 (made by the test, measured on test)"), qPrintable(with.out));
    QVERIFY2(with.out.contains(QRegularExpression("matmul float32 +\\d+ nodes +measured, 3 sizes")), qPrintable(with.out));
    QVERIFY2(with.out.contains(QRegularExpression("all_reduce ring \\(intra\\) +profile fit: latency 200 us")),
             qPrintable(with.out));
    QVERIFY2(with.out.contains(QRegularExpression("all_gather padded \\(intra\\) +inventory")), qPrintable(with.out));
    QVERIFY2(without.out.contains("no profile: every op by the inventory's roofline"), qPrintable(without.out));
    // Only the plan priced without a measured profile says its figures are unmeasured.
    QVERIFY2(!with.out.contains("no measured profile") && without.out.contains("no measured profile"),
             qPrintable(with.out + without.out));
    QCOMPARE(QString::fromStdString(plan::readPlan(dir.filePath("with.json").toStdString()).cluster.profile),
             QString("bench@1"));
    // Matmuls at a quarter of the inventory's speed (with a launch floor): the profiled prediction is slower.
    QVERIFY2(predicted(dir.filePath("with.json")) > 1.2 * predicted(dir.filePath("without.json")),
             qPrintable(QString("%1 vs %2").arg(predicted(dir.filePath("with.json"))).arg(predicted(dir.filePath("without.json")))));

    // A profile the store does not hold: one line naming the cluster file, the store and what it holds.
    const HapRun missing = runHap({"plan", zoo("mlp"), "-c", writeCluster(dir, "lab@7"), "--db", db, "-q"});
    QCOMPARE(missing.exitCode, 1);
    QVERIFY2(missing.err.contains("cluster.yaml: profile: the profile store") && missing.err.contains("no profile 'lab' version 7") &&
                 missing.err.contains("it holds: bench@1"),
             qPrintable(missing.err));
    QCOMPARE(missing.err.trimmed().count('\n'), 0);
  }

  // Runs whose measured steps are exactly 1.7x the prediction (on the only device type) and whose
  // peak memory is 300 MiB + the predicted bytes: the calibration finds both, on fitted and
  // held-out runs alike, and saves them as the next version.
  void calibrateFitsRecordedRuns() {
    QTemporaryDir dir;
    const QString db = dir.filePath("c.db");
    {
      db::Store store(db.toStdString());
      store.saveProfile(slowMatmulProfile());
    }
    const QString cluster = writeCluster(dir, "bench");
    std::vector<QString> plans;
    for (const char* model : {"mlp", "bert"})
      for (const char* baseline : {"", "dp-ev", "fsdp"}) {
        const QString out = dir.filePath(QString("%1-%2.json").arg(model, *baseline ? baseline : "hap"));
        QStringList args{"plan", zoo(model), "-c", cluster, "--db", db, "-q", "--no-baselines", "-o", out};
        if (*baseline) args << "--baseline" << baseline;
        const HapRun r = runHap(args);
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        plans.push_back(out);
      }
    {
      db::Store store(db.toStdString());
      const int64_t clusterId = store.saveCluster("local-cpu-4-profiled", "name: local-cpu-4-profiled\n");
      for (const QString& path : plans) {
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const std::string json = f.readAll().toStdString();
        const plan::Plan p = plan::readPlan(path.toStdString());
        db::PlanRecord rec;
        rec.sha256 = std::to_string(std::hash<std::string>{}(json));
        rec.modelSha256 = p.modelSha256;
        rec.modelPath = p.modelPath;
        rec.strategy = QFileInfo(path).baseName().section('-', 1).toStdString();
        rec.clusterId = clusterId;
        rec.predictedSeconds = p.estimate.iterationSeconds;
        rec.json = json;
        const int64_t planId = store.savePlan(rec);
        db::RunRecord run;
        run.planId = planId;
        run.ranks = 4;
        const int64_t runId = store.beginRun(run);
        std::vector<db::StepRecord> steps;
        for (int step = 1; step <= 4; ++step)
          for (const plan::PlanDevice& d : p.devices)
            steps.push_back({.rank = d.rank, .step = step, .warmup = step == 1,
                             .seconds = (step == 1 ? 3 : 1.7) * p.estimate.iterationSeconds,
                             .peakMemoryBytes = 300.0 * (1 << 20) + d.memoryBytes});
        store.recordSteps(runId, steps);
        store.finishRun(runId, db::RunStatus::Succeeded);
      }
    }
    const HapRun r = runHap({"calibrate", "--db", db});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    // Every second plan is held out, and reported apart.
    QVERIFY2(r.out.contains("Fit runs (3 runs)") && r.out.contains("Held-out runs (3 runs)"), qPrintable(r.out));
    const QRegularExpression heldOut(
        "Held-out runs \\(3 runs\\):\\n  step time +MAPE +41\\.2% -> +0\\.\\d%.*\\n  peak memory +MAPE +[\\d.]+% -> +0\\.0%");
    QVERIFY2(r.out.contains(heldOut), qPrintable(r.out));
    QVERIFY2(r.out.contains("profile bench v2 saved to"), qPrintable(r.out));
    db::Store store(db.toStdString(), db::Store::Mode::ReadOnly);
    const std::optional<cost::Profile> v2 = store.loadProfile("bench");
    QVERIFY(v2 && v2->version == 2);
    const cost::DeviceProfile* d = v2->device("cpu-core");
    QVERIFY(d);
    // One device type whose compute and communication are both 1.7x: compute scale, slowdown and
    // gradient exposure trade off against each other, so the figures are not unique; what they
    // predict is (the held-out MAPE above, the re-planned prediction below).
    QVERIFY(d->computeScale > 1 && d->collectiveSlowdown >= 1);
    QVERIFY2(std::abs(d->baseMemoryBytes / (300.0 * (1 << 20)) - 1) < 1e-6, qPrintable(QString::number(d->baseMemoryBytes)));
    QVERIFY(d->ops.size() == 1);  // the base's measurements are kept
    QCOMPARE(v2->collectives.size(), size_t{1});

    // Planned under v2, the same plan now predicts the measured time.
    const HapRun again = runHap({"plan", zoo("mlp"), "-c", cluster, "--db", db, "-q", "--no-baselines", "-o",
                           dir.filePath("again.json")});
    QVERIFY2(again.exitCode == 0, qPrintable(again.err));
    const double ratio = predicted(dir.filePath("again.json")) / predicted(plans[0]);
    QVERIFY2(std::abs(ratio - 1.7) < 0.05, qPrintable(QString::number(ratio)));
  }

  void calibrateRefusesMixedBasesAndEmptyStores() {
    QTemporaryDir dir;
    const QString db = dir.filePath("e.db");
    { db::Store store(db.toStdString()); }
    const HapRun r = runHap({"calibrate", "--db", db});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("no succeeded run with measured steps") && r.err.contains(db), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TstCalibrateCli)
#include "tst_calibrate_cli.moc"
