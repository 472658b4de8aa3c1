// `hap plan --pipeline` as a user runs it (issue 34 item 1): on the tiny BERT over two machines
// joined by a slow link, --pipeline 2 writes a version-3 plan whose stages cover every segment
// once, --explain shows the stages and why, and hap simulate refuses the plan naming what it
// lacks.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "run_hap.h"

class TstPipelineCli : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void pipelineTwoStages() {
    QTemporaryDir dir;
    const QString cluster = dir.filePath("two.yaml");
    {
      QFile f(cluster);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("name: two-machines\n"
              "device_types:\n"
              "  gpu: {flops: {float32: 20G}, memory: 4GiB, memory_bandwidth: 20GB/s}\n"
              "machines:\n"
              "  - {name: a, host: 127.0.0.1, device_type: gpu, count: 2, link: {bandwidth: 50GB/s, latency: 2us}}\n"
              "  - {name: b, host: 127.0.0.1, device_type: gpu, count: 2, link: {bandwidth: 50GB/s, latency: 2us}}\n"
              "network: {bandwidth: 2MB/s, latency: 1ms}\n");
    }
    const QString model = qEnvironmentVariable("HAP_ZOO_DIR") + "/bert-tiny.pt";
    const QString out = dir.filePath("plan.json");
    const HapRun r = runHap({"plan", model, "--cluster", cluster, "--pipeline", "2", "--no-baselines", "--explain",
                             "-q", "-o", out},
                            300'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("Pipeline (predicted by the cost model"), qPrintable(r.out));
    QVERIFY(r.out.contains("stage 1: segments"));
    QVERIFY(r.out.contains("why: SPMD-only plan"));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(doc["version"].toInt(), 3);
    const QJsonObject p = doc["pipeline"].toObject();
    const int segments = p["segments"].toObject()["names"].toArray().size();
    const QJsonArray stages = p["stages"].toArray();
    QCOMPARE(stages.size(), 2);
    int next = 0;
    QSet<int> ranks;
    for (const QJsonValue& s : stages) {
      const QJsonArray range = s.toObject()["segments"].toArray();
      QCOMPARE(range[0].toInt(), next);
      QVERIFY(range[1].toInt() > next);
      next = range[1].toInt();
      for (const QJsonValue& r : s.toObject()["ranks"].toArray()) {
        QVERIFY(!ranks.contains(r.toInt()));
        ranks.insert(r.toInt());
      }
      QCOMPARE(s.toObject()["plan"].toObject()["version"].toInt(), 2);
    }
    QCOMPARE(next, segments);
    QVERIFY(p["micro_batches"].toInt() >= 1);

    // Consumers that cannot run it refuse it, naming what is missing.
    const HapRun sim = runHap({"simulate", out});
    QVERIFY(sim.exitCode != 0);
    QVERIFY2(sim.err.contains("pipeline stages") && sim.err.contains("SPMD plans only"), qPrintable(sim.err));

    // --pipeline off (the default) writes the version-2 plan as before.
    const HapRun off = runHap({"plan", model, "--cluster", cluster, "--no-baselines", "-q", "-o", out}, 300'000);
    QVERIFY2(off.exitCode == 0, qPrintable(off.err));
    QVERIFY(f.seek(0) || true);
    QFile g(out);
    QVERIFY(g.open(QIODevice::ReadOnly));
    QCOMPARE(QJsonDocument::fromJson(g.readAll()).object()["version"].toInt(), 2);
    QVERIFY(runHap({"plan", model, "--cluster", cluster, "--pipeline", "1", "-q"}).exitCode != 0);
  }
};

QTEST_GUILESS_MAIN(TstPipelineCli)
#include "tst_pipeline_cli.moc"
