// `hap tune` end to end, as a user runs it: real hap-worker processes on loopback, 3 ranks held to
// 1, 0.5 and 0.25 of a CPU, the tiny MLP, a few steps per run. (a) From an empty store: the loop
// profiles the device types, tunes, and returns the plan measured fastest, never slower than a
// baseline it ran. (b) From a deliberately mis-priced profile (the full rank's computation 10x too
// slow, every collective 10x too fast): the calibration between rounds corrects it, the prediction
// error of the last round is below the first's, and the chosen plan is the measured best.
// (c) Errors: no model, no --local, --emit without --run-with or with emulation, a rank that
// fails. (e) Through launch scripts (--emit torchrun --run-with CMD): rank 0's records read back,
// whole, and `hap runs import` of one adds it once. (d) The calibration's re-expression of a plan
// priced under one profile version in another version's terms equals pricing it there.
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "run_hap.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "app/cli/tune_loop.h"
#include "db/store.h"
#include "engine/cost/calibration.h"
#include "engine/cost/cluster.h"
#include "engine/cost/profile.h"
#include "engine/plan/plan_json.h"
#include "runtime/launch/free_port.h"

using namespace hap;

namespace {

QString zoo(const char* model) {
  return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + model + "-tiny.pt";
}
QString heteroCluster() {
  return qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/local-cpu-hetero-3.yaml";
}

struct Row {
  int round = 0;
  QString plan, profile;
  double predicted = 0, measured = 0;
  bool reused = false;
};

struct Table {
  std::vector<Row> rows;
  std::map<int, double> error;  // round -> prediction error, %
  QString chosen;
  int chosenRound = 0;
  double chosenMeasured = 0;
};

Table parse(const QString& out) {
  Table t;
  const QRegularExpression row(
      R"(^\s+(\d+)  (\S+)\s+(\S+)\s+([\d.]+) ms\s+([\d.]+) ± ([\d.]+) ms\s*(.*)$)");
  const QRegularExpression error(R"(^\s+round (\d+): prediction error ([\d.]+)%)");
  const QRegularExpression chosen(R"(^chosen: (\S+) \(round (\d+)\), measured ([\d.]+) ms)");
  for (const QString& line : out.split('\n')) {
    if (const QRegularExpressionMatch m = row.match(line); m.hasMatch())
      t.rows.push_back({m.captured(1).toInt(), m.captured(2), m.captured(3),
                        m.captured(4).toDouble(), m.captured(5).toDouble(),
                        m.captured(7).startsWith("(=")});
    else if (const QRegularExpressionMatch e = error.match(line); e.hasMatch())
      t.error[e.captured(1).toInt()] = e.captured(2).toDouble();
    else if (const QRegularExpressionMatch c = chosen.match(line); c.hasMatch()) {
      t.chosen = c.captured(1);
      t.chosenRound = c.captured(2).toInt();
      t.chosenMeasured = c.captured(3).toDouble();
    }
  }
  return t;
}

// The plan file's strategy of a row's plan ("hap-given" is HAP's plan priced otherwise).
QString planStrategy(const QString& row) { return row == "hap-given" ? QString("hap") : row; }

// The chosen plan is the lowest measured step of every row, and at or below every baseline's.
void checkChosenIsMeasuredBest(const Table& t, const QString& out) {
  QVERIFY2(!t.rows.empty() && !t.chosen.isEmpty(), qPrintable(out));
  double lowest = 1e300;
  bool baselineRan = false;
  for (const Row& r : t.rows) {
    lowest = std::min(lowest, r.measured);
    if (r.plan != "hap") {
      baselineRan = true;
      QVERIFY2(t.chosenMeasured <= r.measured, qPrintable(out));
    }
  }
  QVERIFY2(baselineRan, qPrintable(out));
  QCOMPARE(t.chosenMeasured, lowest);
}

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class TstTuneCli : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString store_;  // (a)'s store: the profile it measured, then (c) reuses it
  std::optional<cost::Profile> profiled_;

 private Q_SLOTS:
  void tunesFromAnEmptyStore() {
    store_ = dir_.filePath("a.db");
    const QString out = dir_.filePath("a-plan.json");
    const HapRun r =
        runHap({"tune", zoo("mlp"), "-c", heteroCluster(), "--local", "--cpu-share", "1,0.5,0.25",
                "--steps", "3", "--warmup", "1", "--db", store_, "-o", out},
               170'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    qInfo().noquote() << r.out;  // the rounds, for the log (ctest -V)
    // Step 0: the store had no profile, so the loop measured one for every device type.
    const QRegularExpression profiled(R"(Profiled first: local-cpu-hetero-3@(\d+)\.)");
    const QRegularExpressionMatch m = profiled.match(r.out);
    QVERIFY2(m.hasMatch(), qPrintable(r.out));
    {
      db::Store store(store_.toStdString(), db::Store::Mode::ReadOnly);
      profiled_ = store.loadProfile("local-cpu-hetero-3", m.captured(1).toInt());
      QVERIFY(profiled_);
      for (const char* type : {"cpu-full", "cpu-half", "cpu-quarter"})
        QVERIFY2(profiled_->device(type), type);
      QVERIFY(!profiled_->collectives.empty());
      // Every plan that ran is recorded, succeeded.
      int succeeded = 0;
      for (const db::RunRecord& run : store.runs())
        succeeded += run.status == db::RunStatus::Succeeded;
      QVERIFY2(succeeded >= 2, qPrintable(r.out));
    }
    const Table t = parse(r.out);
    checkChosenIsMeasuredBest(t, r.out);
    QVERIFY2(t.rows.front().plan == "hap" && t.rows.front().round == 1, qPrintable(r.out));
    // The plan written is the chosen one.
    QVERIFY2(readText(out).contains(QString("\"strategy\": \"%1\"").arg(planStrategy(t.chosen))),
             qPrintable(r.out));
  }

  void correctsAMisPricedProfile() {
    QVERIFY2(profiled_, "needs the profile tunesFromAnEmptyStore measured");
    // The measured profile with the full rank's computation priced 10x too slow and every
    // collective 10x too fast, both within what the calibration can take back (compute scales in
    // [0.05, 20], collective slowdowns in [1, 20]). It is meant to mislead the first plan; on
    // mlp-tiny (a batch of 4) the programs may come out the same, so what is checked is that the
    // predictions are corrected between rounds and that the plan returned is the one measured
    // fastest.
    cost::Profile wrong = *profiled_;
    wrong.name = "mispriced";
    wrong.version = 0;
    wrong.note = "mis-priced by tst_tune_cli";
    for (cost::DeviceProfile& d : wrong.devices)
      if (d.deviceType == "cpu-full") d.computeScale *= 10;
    for (cost::CollectiveFit& f : wrong.collectives) {
      f.link.latency /= 10;
      f.link.bandwidth *= 10;
    }
    const QString db = dir_.filePath("b.db");
    {
      db::Store store(db.toStdString());
      QCOMPARE(store.saveProfile(wrong), 1);
    }
    const HapRun r = runHap({"tune", zoo("mlp"), "-c", heteroCluster(), "--local", "--cpu-share",
                             "1,0.5,0.25", "--steps", "3", "--warmup", "1", "--db", db, "--profile",
                             "mispriced", "-o", dir_.filePath("b-plan.json")},
                            170'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    qInfo().noquote() << r.out;  // the rounds, for the log (ctest -V)
    QVERIFY2(!r.out.contains("Profiled first"), qPrintable(r.out));
    const Table t = parse(r.out);
    checkChosenIsMeasuredBest(t, r.out);
    // At least one calibration, and the rounds after it predict closer to what was measured.
    QVERIFY2(r.out.contains("calibrated: mispriced@2"), qPrintable(r.out));
    QVERIFY2(t.error.size() >= 2, qPrintable(r.out));
    QVERIFY2(t.error.rbegin()->second < t.error.begin()->second, qPrintable(r.out));
    db::Store store(db.toStdString(), db::Store::Mode::ReadOnly);
    const std::optional<cost::Profile> calibrated = store.loadProfile("mispriced", 2);
    QVERIFY(calibrated && calibrated->device("cpu-full"));
  }

  void errorsSayWhatToDo() {
    const HapRun noModel =
        runHap({"tune", dir_.filePath("missing.pt"), "-c", heteroCluster(), "--local", "--db",
                dir_.filePath("e.db"), "-o", dir_.filePath("e.json")});
    QCOMPARE(noModel.exitCode, 1);
    QVERIFY2(noModel.err.contains("missing.pt: no such file"), qPrintable(noModel.err));

    const HapRun notLocal =
        runHap({"tune", zoo("mlp"), "-c", heteroCluster(), "--db", dir_.filePath("e.db")});
    QCOMPARE(notLocal.exitCode, 2);
    QVERIFY2(notLocal.err.contains("give --local"), qPrintable(notLocal.err));

    // --emit without a command to run the folders, or with emulation options: said, nothing run.
    const HapRun noCommand = runHap({"tune", zoo("mlp"), "-c", heteroCluster(), "--emit", "torchrun", "--db",
                                     dir_.filePath("e.db"), "-o", dir_.filePath("e.json")});
    QCOMPARE(noCommand.exitCode, 1);
    QVERIFY2(noCommand.err.contains("--run-with"), qPrintable(noCommand.err));
    const HapRun emulated =
        runHap({"tune", zoo("mlp"), "-c", heteroCluster(), "--emit", "torchrun", "--run-with", "true",
                "--cpu-share", "1,0.5,0.25", "--db", dir_.filePath("e.db"), "-o", dir_.filePath("e.json")});
    QCOMPARE(emulated.exitCode, 1);
    QVERIFY2(emulated.err.contains("own speeds"), qPrintable(emulated.err));

    // A rank that fails: named, with what to run to see why.
    QVERIFY2(profiled_, "needs the profile tunesFromAnEmptyStore measured");
    const HapRun failing =
        runHap({"tune", zoo("mlp"), "-c", heteroCluster(), "--local", "--db", store_, "--worker",
                "/bin/false", "-o", dir_.filePath("f.json")});
    QCOMPARE(failing.exitCode, 1);
    QVERIFY2(failing.err.contains("hap tune round 1 hap: rank") && failing.err.contains("failed") &&
                 failing.err.contains("hap launch"),
             qPrintable(failing.err));
  }

  // (e) On a cluster through launch scripts: every plan's folder is written as `hap launch --emit
  // torchrun DIR --record run.db` writes it, run by the user's command (here: every machine's
  // run-*.sh started on this machine, as the hosts would each start theirs), rank 0's record of
  // the run read back into the store. The runs are whole (every rank's steps and stages) and the
  // chosen plan is the measured best, as with --local. Then `hap runs import` of one record into
  // another store adds it once.
  void tunesThroughEmittedScripts() {
    QVERIFY2(profiled_, "needs the profile tunesFromAnEmptyStore measured");
    const QString runWith =
        QString("export MASTER_ADDR=127.0.0.1 MASTER_PORT=%1 HAP_WORKER=%2; pids=; "
                "for f in {dir}/run-*.sh; do sh \"$f\" & pids=\"$pids $!\"; done; "
                "s=0; for p in $pids; do wait $p || s=1; done; exit $s")
            .arg(runtime::freeTcpPort())
            .arg(QString(HAP_WORKER_PATH));
    const QString out = dir_.filePath("emit-plan.json");
    const HapRun r = runHap({"tune", zoo("mlp"), "-c", heteroCluster(), "--emit", "torchrun", "--run-with", runWith,
                             "--rounds", "1", "--steps", "3", "--warmup", "1", "--db", store_, "-o", out},
                            170'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    qInfo().noquote() << r.out;
    const Table t = parse(r.out);
    QVERIFY2(t.rows.size() >= 2, qPrintable(r.out));
    checkChosenIsMeasuredBest(t, r.out);
    QVERIFY2(readText(out).contains(QString("\"strategy\": \"%1\"").arg(planStrategy(t.chosen))),
             qPrintable(r.out));

    // Every run of the round came from a record rank 0 wrote: 3 ranks' steps (1 + 3 each) and
    // stages, succeeded.
    db::Store store(store_.toStdString(), db::Store::Mode::ReadOnly);
    int recorded = 0;
    for (const db::RunRecord& run : store.runs()) {
      if (run.label != "recorded by rank 0 (hap-worker --record)") continue;
      ++recorded;
      QCOMPARE(run.status, db::RunStatus::Succeeded);
      QCOMPARE(run.ranks, 3);
      const std::vector<db::StepRecord> steps = store.steps(run.id);
      QCOMPARE(static_cast<int>(steps.size()), 3 * 4);
      std::set<int> ranks;
      for (const db::StepRecord& s : steps) {
        ranks.insert(s.rank);
        QVERIFY(s.seconds > 0 && std::isfinite(s.loss));
      }
      QCOMPARE(static_cast<int>(ranks.size()), 3);
      QVERIFY(!store.stages(run.id).empty());
    }
    QVERIFY2(recorded == static_cast<int>(std::count_if(t.rows.begin(), t.rows.end(),
                                                          [](const Row& row) { return !row.reused; })),
             qPrintable(r.out));

    // A record imported by hand into another store: once.
    const QDir rounds(dir_.filePath("emit-plan-rounds"));
    const QStringList folders = rounds.entryList({"*-torchrun"}, QDir::Dirs);
    QVERIFY2(!folders.isEmpty(), qPrintable(rounds.path()));
    const QString record = rounds.filePath(folders.front() + "/run.db");
    QVERIFY2(QFile::exists(record), qPrintable(record));
    const QString other = dir_.filePath("imported.db");
    const HapRun first = runHap({"runs", "import", record, "--db", other});
    QVERIFY2(first.exitCode == 0 && first.out.contains("1 run imported"), qPrintable(first.out + first.err));
    const HapRun again = runHap({"runs", "import", record, "--db", other});
    QVERIFY2(again.exitCode == 0 && again.out.contains("0 runs imported, 1 already there"),
             qPrintable(again.out + again.err));
    db::Store imported(other.toStdString(), db::Store::Mode::ReadOnly);
    QCOMPARE(static_cast<int>(imported.runs().size()), 1);
    QCOMPARE(static_cast<int>(imported.steps(imported.runs().front().id).size()), 3 * 4);
  }

  // (d) One program (DP-CP's) priced under version 1 and under version 2 of a profile that differs
  // by calibration terms only: version 2's prices re-expressed under version 1 are version 1's.
  // The inventory's collective_call is left out: it is a per-call constant the calibration's
  // collective slowdown does not scale in pricing (what the fit assumes of it is approximate).
  void reexpressesPricesUnderAnotherVersion() {
    QTemporaryDir dir;
    const QString db = dir.filePath("r.db");
    cost::Profile v1;
    v1.name = "re";
    v1.host = "test";
    for (const char* type : {"cpu-full", "cpu-half", "cpu-quarter"}) {
      cost::DeviceProfile d;
      d.deviceType = type;
      d.ops.push_back(
          {cost::OpFamily::MatMul, ir::DType::Float32, {{1e4, 30e-6}, {1e6, 60e-6}, {1e9, 50e-3}}});
      v1.devices.push_back(d);
    }
    for (cost::LinkClass k : {cost::LinkClass::Intra, cost::LinkClass::Inter})
      v1.collectives.push_back({.collective = cost::Collective::AllReduce,
                                .algorithm = "ring",
                                .linkClass = k,
                                .link = {5e8, 150e-6},
                                .ranks = 3,
                                .samples = 5,
                                .relativeResidual = 0.02});
    cost::Profile v2 = v1;
    const std::map<std::string, double> scale{
        {"cpu-full", 2.5}, {"cpu-half", 0.5}, {"cpu-quarter", 4}};
    for (cost::DeviceProfile& d : v2.devices) {
      d.computeScale = scale.at(d.deviceType);
      d.collectiveSlowdown = d.deviceType == "cpu-half" ? 3 : 1;
      d.baseMemoryBytes = 100.0 * (1 << 20);
      d.memoryScale = 1.5;
    }
    v2.gradientExposure = 0.4;
    {
      db::Store store(db.toStdString());
      QCOMPARE(store.saveProfile(v1), 1);
      QCOMPARE(store.saveProfile(v2), 2);
      v1 = *store.loadProfile("re", 1);
      v2 = *store.loadProfile("re", 2);
    }
    QString yaml = readText(heteroCluster());
    yaml.remove(QRegularExpression("\\n +collective_call: [^\\n]*"));
    QVERIFY(!yaml.contains("collective_call: "));
    std::vector<plan::Plan> plans;
    for (int version : {1, 2}) {
      const QString cluster = dir.filePath(QString("c%1.yaml").arg(version));
      QFile f(cluster);
      QVERIFY(f.open(QIODevice::WriteOnly));
      const QString named = QString("name: local-cpu-hetero-3\nprofile: re@%1").arg(version);
      f.write(QString(yaml).replace("name: local-cpu-hetero-3", named).toUtf8());
      f.close();
      const QString out = dir.filePath(QString("p%1.json").arg(version));
      const HapRun r = runHap(
          {"plan", zoo("mlp"), "-c", cluster, "--db", db, "--baseline", "dp-cp", "-q", "-o", out});
      QVERIFY2(r.exitCode == 0, qPrintable(r.err));
      plans.push_back(plan::readPlan(out.toStdString()));
    }
    QCOMPARE(tune::programKey(plans[0]), tune::programKey(plans[1]));
    const cost::Cluster cluster = cost::loadCluster(dir.filePath("c1.yaml").toStdString());
    const cost::RunObservation same = tune::pricedObservation(plans[0], v1, v1, cluster);
    const cost::RunObservation moved = tune::pricedObservation(plans[1], v2, v1, cluster);
    // Version 2 prices the program differently: the re-expression has something to undo.
    QVERIFY(std::abs(plans[1].estimate.iterationSeconds / plans[0].estimate.iterationSeconds - 1) >
            0.2);
    // Under its own version, the stages sum to the plan's prediction.
    QVERIFY(std::abs(cost::predictStep(same, {}) / plans[0].estimate.iterationSeconds - 1) < 1e-9);
    QVERIFY(std::abs(cost::predictStep(moved, {}) / plans[0].estimate.iterationSeconds - 1) < 1e-6);
    const auto close = [](double a, double b) {
      return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b)) + 1e-15;
    };
    QCOMPARE(moved.stages.size(), same.stages.size());
    double gradient = 0;
    for (size_t i = 0; i < same.stages.size(); ++i) {
      const cost::StageObservation &a = same.stages[i], &b = moved.stages[i];
      QVERIFY2(close(a.communicationSeconds, b.communicationSeconds),
               qPrintable(QString("stage %1: %2 vs %3")
                              .arg(i)
                              .arg(a.communicationSeconds)
                              .arg(b.communicationSeconds)));
      QVERIFY(close(a.gradientSeconds, b.gradientSeconds));
      gradient += a.gradientSeconds;
      for (const auto& [type, seconds] : a.computeByType)
        QVERIFY2(close(seconds, b.computeByType.at(type)), type.c_str());
    }
    // DP-CP all-reduces its gradients, in buckets beside backward (synth/stages.h): what they
    // leave exposed is re-expressed like the stages' communication.
    QVERIFY(!plans[0].gradientBuckets.empty());
    QVERIFY2(close(same.exposedGradientSeconds, moved.exposedGradientSeconds),
             qPrintable(QString("%1 vs %2").arg(same.exposedGradientSeconds).arg(moved.exposedGradientSeconds)));
    QCOMPARE(gradient, 0.0);  // no longer in any stage
    QCOMPARE(moved.memory.size(), same.memory.size());
    for (size_t i = 0; i < same.memory.size(); ++i)
      QVERIFY(close(same.memory[i].predictedBytes, moved.memory[i].predictedBytes));
  }
};

QTEST_GUILESS_MAIN(TstTuneCli)
#include "tst_tune_cli.moc"
