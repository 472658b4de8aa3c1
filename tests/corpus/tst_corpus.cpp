// The CI subset of the corpus of real architectures (resources/corpus/export.py: torchvision's
// and torch.nn's own constructors, traced with a loss and saved with a plain torch.jit.save):
// each model is planned with its --input arguments on 3 CPU ranks with uneven shares and on the
// 4-GPU cluster, and trained 3 steps with hap-worker --check on 1, 2 and 3 ranks, by the same
// runner as scripts/corpus.sh (resources/corpus/run.py). Every model must pass on every count.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

class TstCorpus : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void models_data() {
    QTest::addColumn<QString>("model");
    QFile file(QStringLiteral(HAP_CORPUS_DIR) + "/corpus.json");
    QVERIFY2(file.open(QIODevice::ReadOnly), "run the corpus fixture (export_corpus_ci) first");
    const QJsonArray models = QJsonDocument::fromJson(file.readAll()).object()["models"].toArray();
    for (const QJsonValue& m : models) {
      const QString name = m.toObject()["name"].toString();
      QTest::newRow(qPrintable(name)) << name;
    }
  }

  void models() {
    QFETCH(QString, model);
    QTemporaryDir dir;
    const QString results = dir.filePath("results.json");
    QProcess runner;
    runner.setProcessChannelMode(QProcess::MergedChannels);
    runner.start(HAP_PYTHON_PATH, {qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/corpus/run.py", "--corpus",
                                   HAP_CORPUS_DIR, "--hap", HAP_CLI_PATH, "--model", model, "--json", results});
    if (!runner.waitForFinished(900'000)) {
      runner.kill();
      runner.waitForFinished(5000);
      QFAIL("the corpus runner did not finish within 15 minutes");
    }
    const QString output = QString::fromUtf8(runner.readAll());
    QFile file(results);
    QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable("the runner wrote no results:\n" + output));
    const QJsonObject r = QJsonDocument::fromJson(file.readAll()).array().at(0).toObject();
    QVERIFY2(!r.contains("error"), qPrintable(r["error"].toString() + "\n" + output));
    // A plan on the GPU cluster and a speedup over DP-CP on both clusters.
    QVERIFY2(r["speedup_cpu3"].toDouble() > 0 && r["speedup_gpu4"].toDouble() > 0, qPrintable(output));
    const QJsonObject checks = r["checks"].toObject();
    for (const char* ranks : {"1", "2", "3"}) {
      const QJsonObject c = checks[ranks].toObject();
      QVERIFY2(c["ok"].toBool(), qPrintable(QString("%1 rank(s): %2\n%3").arg(ranks, c["why"].toString(), output)));
    }
    QCOMPARE(runner.exitCode(), 0);
  }
};

QTEST_GUILESS_MAIN(TstCorpus)
#include "tst_corpus.moc"
