// `hap runs` on a store filled through the Store API: the list, `show`, --json (values checked)
// and --csv, and the one-line errors for a missing store and an unknown run.
#include <QtTest>

#include "../app/run_hap.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include "db/store.h"

using hap::db::RunRecord;
using hap::db::RunStatus;
using hap::db::StepRecord;
using hap::db::Store;

namespace {

// Step `step` of rank `rank`: rank r takes (r + 1) × 10 ms + step × 1 ms; step 1 is warm-up.
StepRecord step(int rank, int64_t step) {
  StepRecord s;
  s.rank = rank;
  s.step = step;
  s.warmup = step == 1;
  s.seconds = 0.010 * (rank + 1) + 0.001 * static_cast<double>(step);
  s.computeSeconds = 0.008 * (rank + 1);
  s.communicationSeconds = 0.001 * (rank + 1);
  s.loss = 4.0 / static_cast<double>(step);
  s.peakMemoryBytes = 1048576.0 * (rank + 1) * static_cast<double>(step);
  s.cpuSeconds = 0.01;
  return s;
}

}  // namespace

class TstRunsCli : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString db_;
  int64_t done_ = 0, failed_ = 0;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = dir_.path() + "/store/profiles.db";
    Store s(db_.toStdString());
    hap::db::PlanRecord plan;
    plan.modelPath = "/somewhere/zoo/bert-tiny.pt";
    plan.modelSha256 = std::string(64, 'b');
    plan.strategy = "hap";
    plan.clusterId = s.saveCluster("cpu-hetero", "name: cpu-hetero\n");
    plan.predictedSeconds = 0.0125;
    plan.predictedMemoryBytes = {1e6, 2e6};
    plan.predictedComputeSeconds = {0.01, 0.02};
    plan.json = R"({"format": "hap-plan"})";
    RunRecord r;
    r.planId = s.savePlan(plan);
    r.label = "two ranks, 4 steps";
    r.settingsJson = R"({"steps": 4, "warmup": 1, "optimizer": "sgd"})";
    r.ranks = 2;
    r.cpuShares = {1, 0.5};
    done_ = s.beginRun(r);
    for (int64_t k = 1; k <= 4; ++k) s.recordSteps(done_, {step(0, k), step(1, k)});
    s.recordStages(done_, {{0, 0, 0.008, 0.001}, {1, 0, 0.016, 0.002}});
    s.finishRun(done_, RunStatus::Succeeded);

    RunRecord f;
    f.label = "broken, with a comma";
    f.ranks = 1;
    failed_ = s.beginRun(f);
    s.finishRun(failed_, RunStatus::Failed, "rank 0: exit code 1: boom");
  }

  void list() {
    const HapRun r = runHap({"runs", "--db", db_});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QStringList lines = r.out.split('\n');
    QVERIFY2(lines.size() > 3, qPrintable(r.out));
    QVERIFY(lines[0].contains("status") && lines[0].contains("predicted"));
    // Newest first; the succeeded run with its plan's figures. Rank 0's mean over steps 2-4:
    // 10 ms + 3 ms = 13.000 ms.
    QVERIFY2(lines[1].contains("failed"), qPrintable(r.out));
    QVERIFY2(lines[2].contains("succeeded") && lines[2].contains("bert-tiny.pt") && lines[2].contains("hap") &&
                 lines[2].contains("13.000 ms") && lines[2].contains("12.500 ms") && lines[2].endsWith(" 1"),
             qPrintable(lines[2]));
  }

  void listJson() {
    const HapRun r = runHap({"runs", "--db", db_, "--json"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(r.out.toUtf8(), &error);
    QCOMPARE(error.error, QJsonParseError::NoError);
    const QJsonArray runs = doc.array();
    QCOMPARE(runs.size(), 2);
    QCOMPARE(runs[0].toObject()["id"].toInteger(), failed_);
    QCOMPARE(runs[0].toObject()["status"].toString(), QString("failed"));
    QCOMPARE(runs[0].toObject()["exit_reason"].toString(), QString("rank 0: exit code 1: boom"));
    QVERIFY(runs[0].toObject()["mean_step_seconds"].isNull());
    QVERIFY(runs[0].toObject()["strategy"].isNull());
    const QJsonObject ok = runs[1].toObject();
    QCOMPARE(ok["id"].toInteger(), done_);
    QCOMPARE(ok["status"].toString(), QString("succeeded"));
    QCOMPARE(ok["ranks"].toInt(), 2);
    QCOMPARE(ok["strategy"].toString(), QString("hap"));
    QCOMPARE(ok["model"].toString(), QString("bert-tiny.pt"));
    QCOMPARE(ok["steps"].toInt(), 4);
    QCOMPARE(ok["mean_step_seconds"].toDouble(), 0.013);
    QCOMPARE(ok["predicted_step_seconds"].toDouble(), 0.0125);
    QCOMPARE(ok["final_loss"].toDouble(), 1.0);
    QVERIFY(!ok["started_at"].toString().isEmpty());
    QVERIFY(!ok["ended_at"].toString().isEmpty());
  }

  void listCsv() {
    const HapRun r = runHap({"runs", "--csv", "--db", db_});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QStringList lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 3);
    QVERIFY(lines[0].startsWith("id,status,started_at,"));
    QVERIFY2(lines[1].endsWith(",\"broken, with a comma\""), qPrintable(lines[1]));
    QVERIFY2(lines[2].endsWith(",\"two ranks, 4 steps\""), qPrintable(lines[2]));
    const QStringList fields = lines[2].section(",\"", 0, 0).split(',');  // the fields before the label
    QCOMPARE(fields.size(), 11);
    QCOMPARE(fields[0].toLongLong(), done_);
    QCOMPARE(fields[6], QString("bert-tiny.pt"));
    QCOMPARE(fields[7], QString("4"));
    QCOMPARE(fields[8].toDouble(), 0.013);
    QCOMPARE(fields[9].toDouble(), 0.0125);
  }

  void show() {
    const HapRun r = runHap({"runs", "show", QString::number(done_), "--db", db_});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.out.startsWith(QString("run %1: succeeded").arg(done_)), qPrintable(r.out));
    QVERIFY(r.out.contains("\"optimizer\":\"sgd\""));
    QVERIFY(r.out.contains("cpu shares 1, 0.5"));
    QVERIFY(r.out.contains("rank 0") && r.out.contains("rank 1"));
    // Step 3: loss 4/3, rank 0 13 ms, rank 1 23 ms.
    QVERIFY2(QRegularExpression("\\n\\s+3\\s+1\\.33333\\s+13\\.000 ms\\s+23\\.000 ms\\n").match(r.out).hasMatch(),
             qPrintable(r.out));
    QVERIFY(QRegularExpression("\\n\\s+w 1\\s+4\\s+11\\.000 ms\\s+21\\.000 ms\\n").match(r.out).hasMatch());
    // Rank 1's means over steps 2-4: step 23 ms, compute 16 ms, communication 2 ms; peak 8 MiB.
    QVERIFY2(QRegularExpression("\\n\\s+1\\s+3\\s+23\\.000 ms\\s+16\\.000 ms\\s+2\\.000 ms\\s+8\\.00 MiB\\n")
                 .match(r.out)
                 .hasMatch(),
             qPrintable(r.out));
  }

  void showJson() {
    const HapRun r = runHap({"runs", "--db", db_, "show", QString::number(done_), "--json"});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QJsonParseError error;
    const QJsonObject doc = QJsonDocument::fromJson(r.out.toUtf8(), &error).object();
    QCOMPARE(error.error, QJsonParseError::NoError);
    const QJsonObject run = doc["run"].toObject();
    QCOMPARE(run["id"].toInteger(), done_);
    QCOMPARE(run["label"].toString(), QString("two ranks, 4 steps"));
    QCOMPARE(run["settings"].toObject()["optimizer"].toString(), QString("sgd"));
    QCOMPARE(run["cpu_shares"].toArray().size(), 2);
    QCOMPARE(doc["plan"].toObject()["strategy"].toString(), QString("hap"));
    QCOMPARE(doc["plan"].toObject()["predicted_step_seconds"].toDouble(), 0.0125);
    const QJsonArray steps = doc["steps"].toArray();
    QCOMPARE(steps.size(), 4);
    QCOMPARE(steps[0].toObject()["warmup"].toBool(), true);
    QCOMPARE(steps[3].toObject()["step"].toInt(), 4);
    QCOMPARE(steps[3].toObject()["loss"].toDouble(), 1.0);
    QCOMPARE(steps[3].toObject()["seconds"].toArray()[1].toDouble(), 0.024);
    const QJsonArray ranks = doc["ranks"].toArray();
    QCOMPARE(ranks.size(), 2);
    QCOMPARE(ranks[0].toObject()["steps"].toInt(), 3);
    QCOMPARE(ranks[0].toObject()["mean_step_seconds"].toDouble(), 0.013);
    QCOMPARE(ranks[1].toObject()["mean_compute_seconds"].toDouble(), 0.016);
    QCOMPARE(ranks[1].toObject()["peak_memory_bytes"].toDouble(), 8 * 1048576.0);
    QCOMPARE(doc["stages"].toArray().size(), 2);
  }

  void showCsv() {
    const HapRun r = runHap({"runs", "show", QString::number(done_), "--csv", "--db", db_});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const QStringList lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 1 + 4 * 2);
    QCOMPARE(lines[0], QString("step,rank,warmup,seconds,compute_seconds,communication_seconds,loss,"
                               "peak_memory_bytes,cpu_seconds"));
    QVERIFY2(lines[1].startsWith("1,0,1,0.011,"), qPrintable(lines[1]));
    QVERIFY2(lines[8].startsWith("4,1,0,0.024,"), qPrintable(lines[8]));
  }

  void errors() {
    const QString missing = dir_.path() + "/nowhere/profiles.db";
    HapRun r = runHap({"runs", "--db", missing});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains(missing) && r.err.trimmed().count('\n') == 0, qPrintable(r.err));
    QVERIFY(!QFile::exists(missing));
    r = runHap({"runs", "show", "9999", "--db", db_});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("no run 9999") && r.err.trimmed().count('\n') == 0, qPrintable(r.err));
    const QString text = dir_.path() + "/notes.txt";
    QFile f(text);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("just some notes\n");
    f.close();
    r = runHap({"runs", "--db", text});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("not a SQLite database") && r.err.contains(text), qPrintable(r.err));
    // The default location comes from HAP_DB.
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("HAP_DB", db_);
    p.setProcessEnvironment(env);
    p.start(HAP_CLI_PATH, {"runs", "--json"});
    QVERIFY(p.waitForFinished(60'000));
    QCOMPARE(p.exitCode(), 0);
    QCOMPARE(QJsonDocument::fromJson(p.readAllStandardOutput()).array().size(), 2);
  }
};

QTEST_GUILESS_MAIN(TstRunsCli)
#include "tst_runs_cli.moc"
