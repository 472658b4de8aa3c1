// Runs recorded in the profile store (issue 19 item 3): `hap launch --local --db` with the real
// hap-worker on 3 CPU ranks, then the store read back through db::Store: the run, its plan and
// cluster, every rank's every step (loss as printed, times consistent, memory), and every rank's
// per-stage split; a launch whose workers fail is recorded as failed with the rank and its error.
#include <QtTest>

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <signal.h>

#include <cmath>
#include <map>

#include "db/store.h"
#include "tests/runtime/run_process.h"

namespace {

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class TstRunRecording : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString plan_;  // mlp-tiny on local-cpu-3
  QString db_;

  Run launch(const QStringList& more) {
    return runProcess(HAP_CLI_PATH,
                      QStringList{"launch", plan_, "--local", "--worker", HAP_WORKER_PATH, "--timeout", "200", "--db",
                                  db_} +
                          more,
                      240'000);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    plan_ = tmp_.filePath("plan.json");
    db_ = tmp_.filePath("x.db");
    const Run r = planLocal("mlp-tiny.pt", "local-cpu-3.yaml", plan_);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
  }

  void workerNeedsBothOptions() {
    const Run r = runProcess(HAP_WORKER_PATH, {plan_, "--db", db_}, 30'000);
    QCOMPARE(r.exitCode, 2);  // a usage error: --db needs --run-id
    QVERIFY2(r.err.contains("--run-id"), qPrintable(r.err));
  }

  void succeededRunIsRecorded() {
    const Run r = launch({"--steps", "3", "--label", "three steps", "--", "--warmup", "1", "--seed", "7"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.err.contains(QString("hap launch: run 1 recorded in %1").arg(db_)), qPrintable(r.err));

    // The losses rank 0 printed: "[rank 0] step 2/4: loss 2.302585, 1.23 ms".
    QMap<int, double> printed;
    const QRegularExpression step(R"(\[rank 0\] step (\d+)/4: loss ([-0-9.e+]+),)");
    for (auto it = step.globalMatch(r.out); it.hasNext();) {
      const QRegularExpressionMatch m = it.next();
      printed[m.captured(1).toInt()] = m.captured(2).toDouble();
    }
    QCOMPARE(printed.size(), 4);

    hap::db::Store store(db_.toStdString());
    const std::vector<hap::db::RunRecord> runs = store.runs();
    QCOMPARE(runs.size(), size_t{1});
    const hap::db::RunRecord& run = runs[0];
    QCOMPARE(run.status, hap::db::RunStatus::Succeeded);
    QVERIFY2(run.exitReason.empty(), run.exitReason.c_str());
    QCOMPARE(run.ranks, 3);
    QCOMPARE(run.label, std::string("three steps"));
    QVERIFY(!run.startedAt.empty() && !run.endedAt.empty());
    const QJsonObject settings = QJsonDocument::fromJson(QByteArray::fromStdString(run.settingsJson)).object();
    QCOMPARE(settings["ranks"].toInt(), 3);
    QCOMPARE(settings["steps"].toString(), QString("3"));
    QCOMPARE(settings["warmup"].toString(), QString("1"));
    QCOMPARE(settings["seed"].toString(), QString("7"));
    QVERIFY(settings["plan"].toString().endsWith("plan.json"));

    // The plan and its cluster.
    const std::optional<hap::db::PlanRecord> plan = store.plan(run.planId);
    QVERIFY(plan.has_value());
    const QByteArray planText = readAll(plan_);
    QCOMPARE(QByteArray::fromStdString(plan->json), planText);
    QCOMPARE(QString::fromStdString(plan->sha256),
             QString(QCryptographicHash::hash(planText, QCryptographicHash::Sha256).toHex()));
    QCOMPARE(plan->strategy, std::string("hap"));
    QVERIFY(plan->predictedSeconds > 0);
    QCOMPARE(plan->predictedMemoryBytes.size(), size_t{3});
    QCOMPARE(plan->predictedComputeSeconds.size(), size_t{3});
    const std::optional<hap::db::ClusterRecord> cluster = store.cluster(plan->clusterId);
    QVERIFY(cluster.has_value());
    QCOMPARE(cluster->name, std::string("local-cpu-3"));
    QVERIFY(cluster->yaml.find("local-cpu-3") != std::string::npos);

    // 3 ranks × (1 warm-up + 3 measured) steps, by step then rank.
    const std::vector<hap::db::StepRecord> steps = store.steps(run.id);
    QCOMPARE(steps.size(), size_t{12});
    for (size_t i = 0; i < steps.size(); ++i) {
      const hap::db::StepRecord& s = steps[i];
      const QString where = QString("step %1 of rank %2").arg(s.step).arg(s.rank);
      QCOMPARE(s.step, static_cast<int64_t>(i / 3 + 1));
      QCOMPARE(s.rank, static_cast<int>(i % 3));
      QCOMPARE(s.warmup, s.step == 1);
      QVERIFY2(std::abs(s.loss - printed[static_cast<int>(s.step)]) <= 1e-6 + 1e-6 * std::abs(s.loss),
               qPrintable(where + QString(": loss %1, printed %2").arg(s.loss).arg(printed[static_cast<int>(s.step)])));
      QVERIFY2(s.loss == steps[i - i % 3].loss, qPrintable(where + ": the loss differs from rank 0's"));
      QVERIFY2(s.seconds > 0, qPrintable(where));
      QVERIFY2(s.computeSeconds > 0 && s.communicationSeconds >= 0, qPrintable(where));
      QVERIFY2(s.computeSeconds + s.communicationSeconds <= s.seconds * 1.05,
               qPrintable(where + QString(": compute %1 + communication %2 > 1.05 × step %3")
                                      .arg(s.computeSeconds)
                                      .arg(s.communicationSeconds)
                                      .arg(s.seconds)));
      QVERIFY2(s.peakMemoryBytes > 1e6, qPrintable(where));
      QVERIFY2(s.cpuSeconds >= 0, qPrintable(where));
    }

    // Every rank's split over every stage of the plan.
    const QJsonArray predicted =
        QJsonDocument::fromJson(QByteArray::fromStdString(plan->json)).object()["prediction"].toObject()["stages"].toArray();
    const int planStages = static_cast<int>(predicted.size());
    QVERIFY(planStages > 0);
    const std::vector<hap::db::StageRecord> stages = store.stages(run.id);
    QCOMPARE(stages.size(), static_cast<size_t>(3 * planStages));
    for (int rank = 0; rank < 3; ++rank) {
      double total = 0;
      for (int k = 0; k < planStages; ++k) {
        const hap::db::StageRecord& s = stages[static_cast<size_t>(rank * planStages + k)];
        QCOMPARE(s.rank, rank);
        QCOMPARE(s.stage, k);
        QVERIFY(s.computeSeconds >= 0 && s.communicationSeconds >= 0);
        // A forward stage without a collective (none predicted) measures none: the executor's
        // forward spans are attributed to their own steps' stages.
        const QJsonObject p = predicted[k].toObject();
        if (p["pass"].toString() == "forward" && p["communication_seconds"].toDouble() == 0)
          QVERIFY2(s.communicationSeconds == 0, qPrintable(QString("rank %1, stage %2").arg(rank).arg(k)));
        total += s.computeSeconds + s.communicationSeconds;
      }
      QVERIFY2(total > 0, qPrintable(QString("rank %1 has no stage time").arg(rank)));
    }
  }

  void failedRunIsRecorded() {
    const Run r = launch({"--steps", "1", "--", "--data", "tokens", "--data-path", "/nonexistent"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("recorded in " + db_), qPrintable(r.err));
    hap::db::Store store(db_.toStdString());
    const std::vector<hap::db::RunRecord> runs = store.runs();
    QCOMPARE(runs.size(), size_t{2});
    const hap::db::RunRecord& run = runs[0];  // newest first
    QCOMPARE(run.status, hap::db::RunStatus::Failed);
    QVERIFY2(QRegularExpression(R"(^rank \d: exit code 1: hap-worker: error: )")
                 .match(QString::fromStdString(run.exitReason))
                 .hasMatch(),
             run.exitReason.c_str());
    QVERIFY(store.steps(run.id).empty());
    QCOMPARE(store.plan(run.planId)->id, runs[1].planId);  // the same plan, stored once
  }

  // Stopping a run (SIGINT to hap launch, which sends SIGTERM to every rank): each rank finishes
  // the step it is in and writes what it recorded before it exits, so every step rank 0 printed
  // is in the store, and the run is recorded as stopped.
  void stoppedRunKeepsItsSteps() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* v : {"OMP_NUM_THREADS", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "HAP_DB"})
      env.remove(v);
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(HAP_CLI_PATH, QStringList{"launch", plan_, "--local", "--worker", HAP_WORKER_PATH, "--timeout", "200",
                                      "--db", db_, "--steps", "100000"});
    QVERIFY(p.waitForStarted());
    QByteArray out;
    const QRegularExpression step(R"(\[rank 0\] step (\d+)/)");
    QElapsedTimer t;
    t.start();
    int last = 0;
    while (last < 20 && t.elapsed() < 60'000) {
      p.waitForReadyRead(100);
      out += p.readAllStandardOutput();
      for (auto it = step.globalMatch(QString::fromUtf8(out)); it.hasNext();) last = it.next().captured(1).toInt();
    }
    QVERIFY2(last >= 20, out.right(2000).constData());
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(30'000));
    out += p.readAllStandardOutput();
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 130);
    for (auto it = step.globalMatch(QString::fromUtf8(out)); it.hasNext();) last = it.next().captured(1).toInt();

    hap::db::Store store(db_.toStdString(), hap::db::Store::Mode::ReadOnly);
    const hap::db::RunRecord run = store.runs().front();
    QCOMPARE(run.status, hap::db::RunStatus::Stopped);
    int64_t rank0 = 0;
    std::map<int, int64_t> lastOf;
    for (const hap::db::StepRecord& s : store.steps(run.id)) lastOf[s.rank] = std::max(lastOf[s.rank], s.step);
    rank0 = lastOf[0];
    QVERIFY2(rank0 >= last, qPrintable(QString("rank 0 printed step %1, the store has %2; %3").arg(last).arg(rank0).arg(err)));
    QCOMPARE(lastOf.size(), size_t{3});
    for (const auto& [rank, stepOf] : lastOf) QVERIFY2(stepOf >= rank0 - 1, qPrintable(QString("rank %1").arg(rank)));
  }

  // The gradient buckets a plan is priced with are the buckets its workers run (issue 30): a
  // data-parallel plan of bert-tiny priced with 4 KiB buckets (hap plan --bucket-mb, recorded in
  // the plan and the workers' default) lists several; every rank's measured trace has each of
  // them once a step, and the first starts while backward still runs, as the stage model has it.
  void gradientBucketsAsPlanned() {
    const QString plan = tmp_.filePath("buckets.json"), trace = tmp_.filePath("buckets-trace.json");
    Run r = runProcess(HAP_CLI_PATH,
                       {"plan", qEnvironmentVariable("HAP_ZOO_DIR") + "/bert-tiny.pt", "-c",
                        qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/local-cpu-3.yaml", "--baseline",
                        "dp-cp", "--bucket-mb", "0.004", "-o", plan, "-q"},
                       120'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QJsonObject prediction = QJsonDocument::fromJson(readAll(plan)).object()["prediction"].toObject();
    const int buckets = static_cast<int>(prediction["gradient_buckets"].toArray().size());
    QVERIFY2(buckets > 2, qPrintable(QString::number(buckets)));
    QCOMPARE(prediction["gradient_bucket_bytes"].toDouble(), 4194.0);
    QVERIFY(prediction["exposed_gradient_seconds"].toDouble() >= 0);

    r = runProcess(HAP_CLI_PATH,
                   {"launch", plan, "--local", "--worker", HAP_WORKER_PATH, "--timeout", "200", "--steps", "2", "--",
                    "--warmup", "0", "--trace", trace},
                   240'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    const QJsonArray events = QJsonDocument::fromJson(readAll(trace)).object()["traceEvents"].toArray();
    for (int pid = 1; pid <= 3; ++pid) {
      QMap<QString, int> runs;  // "gradient bucket K" -> how many steps ran it
      QList<QJsonObject> backward, first;
      for (const QJsonValue& v : events) {
        const QJsonObject e = v.toObject();
        if (e["ph"].toString() != "X" || e["pid"].toInt() != pid) continue;
        const QString name = e["name"].toString();
        if (name == "backward") backward.append(e);
        if (!name.startsWith("gradient bucket ")) continue;
        const QString bucket = name.section(' ', 0, 2);  // without its "(x MiB)"
        ++runs[bucket];
        if (bucket == "gradient bucket 0") first.append(e);
      }
      const QString where = QString("rank %1").arg(pid - 1);
      QCOMPARE(runs.size(), buckets);
      for (auto it = runs.begin(); it != runs.end(); ++it) QVERIFY2(it.value() == 2, qPrintable(where + ": " + it.key()));
      QCOMPARE(backward.size(), 2);
      QCOMPARE(first.size(), 2);
      for (int step = 0; step < 2; ++step) {
        const double end = backward[step]["ts"].toDouble() + backward[step]["dur"].toDouble();
        QVERIFY2(first[step]["ts"].toDouble() < end, qPrintable(where + ": bucket 0 starts after backward"));
      }
    }
  }
};

QTEST_GUILESS_MAIN(TstRunRecording)
#include "tst_run_recording.moc"
