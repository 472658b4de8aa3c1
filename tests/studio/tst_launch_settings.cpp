// The Run dock's settings as hap-worker's arguments (the flags of app/worker/main.cpp), their
// validation, and where runs go (run folders).
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "app/studio/core/documents/launch_settings.h"

using namespace hap::studio;

class TstLaunchSettings : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void defaultsGiveTheWorkersDefaults() {
    const LaunchSettings s;
    QCOMPARE(workerArguments(s), (QStringList{"--steps", "20", "--warmup", "2", "--seed", "0", "--data", "synthetic",
                                              "--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9"}));
    QCOMPARE(s.totalSteps(), 22);
    QCOMPARE(validate(s, 3), QString());
  }

  void everyOptionHasItsFlag() {
    LaunchSettings s;
    s.modelPath = "/zoo/bert tiny.pt";
    s.steps = 7;
    s.warmup = 1;
    s.seed = 42;
    s.data = LaunchSettings::Data::Tokens;
    s.dataPath = "/data/tokens.bin";
    s.tokenDtype = "int32";
    s.optimizer = LaunchSettings::Optimizer::AdamW;
    s.lr = 3e-4;
    s.momentum = 0.5;  // not SGD: not passed
    s.weightDecay = 0.01;
    s.clipNorm = 1.5;
    s.checkpointDir = "/runs/a/checkpoints";
    s.checkpointEvery = 5;
    s.resumePath = "/runs/b/checkpoints/step-4.pt";
    s.exportPath = "/runs/a/trained.pt";
    s.threads = 2;
    QCOMPARE(workerArguments(s),
             (QStringList{"--model", "/zoo/bert tiny.pt", "--steps", "7", "--warmup", "1", "--seed", "42", "--data",
                          "tokens", "--data-path", "/data/tokens.bin", "--token-dtype", "int32", "--optimizer", "adamw",
                          "--lr", "3e-04", "--weight-decay", "0.01", "--clip-norm", "1.5", "--checkpoint-dir",
                          "/runs/a/checkpoints", "--checkpoint-every", "5", "--resume", "/runs/b/checkpoints/step-4.pt",
                          "--export", "/runs/a/trained.pt", "--threads", "2"}));
    // CIFAR: a file, no token dtype; every-N without a folder means nothing.
    s.data = LaunchSettings::Data::Cifar;
    s.checkpointDir.clear();
    s.optimizer = LaunchSettings::Optimizer::Adam;
    const QStringList a = workerArguments(s);
    QVERIFY(a.contains("cifar"));
    QVERIFY(!a.contains("--token-dtype"));
    QVERIFY(!a.contains("--checkpoint-every"));
    QCOMPARE(a.at(a.indexOf("--optimizer") + 1), QStringLiteral("adam"));
    // Shortest exact numbers.
    s.lr = 0.1 + 0.2;
    const QStringList b = workerArguments(s);
    QCOMPARE(b.at(b.indexOf("--lr") + 1).toDouble(), 0.1 + 0.2);
    QCOMPARE(toStdStrings({"a b", ""}), (std::vector<std::string>{"a b", ""}));
  }

  void validationNamesTheField() {
    QTemporaryDir dir;
    const QString file = dir.filePath("tokens.bin");
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("abcd");
    f.close();

    LaunchSettings s;
    s.steps = 0;
    s.warmup = 0;
    QVERIFY(validate(s, 2).startsWith("Steps"));
    s.steps = 3;
    s.data = LaunchSettings::Data::Tokens;
    QVERIFY2(validate(s, 2).contains("Data file"), qPrintable(validate(s, 2)));
    s.dataPath = dir.filePath("missing.bin");
    QVERIFY(validate(s, 2).contains("no such file"));
    s.dataPath = file;
    QCOMPARE(validate(s, 2), QString());
    s.tokenDtype = "int8";
    QVERIFY(validate(s, 2).contains("uint16 or int32"));
    s.tokenDtype = "uint16";
    s.lr = -1;
    QVERIFY(validate(s, 2).startsWith("Learning rate"));
    s.lr = 0.1;
    s.momentum = 1;
    QVERIFY(validate(s, 2).startsWith("Momentum"));
    s.momentum = 0.9;
    s.resumePath = dir.filePath("step-9.pt");
    QVERIFY(validate(s, 2).startsWith("Resume from"));
    s.resumePath.clear();
    s.cpuShares = {1, 0.5, 0.25};
    QVERIFY(validate(s, 2).contains("3 values for 2 ranks"));
    QCOMPARE(validate(s, 3), QString());
    s.cpuShares = {1, 0, 0.25};
    QVERIFY(validate(s, 3).contains("rank 1"));
    s.cpuShares = {1, 1.5, 0.25};
    QVERIFY(validate(s, 3).contains("rank 1"));
  }

  void runFolders() {
    QTemporaryDir dir;
    const QString runs = dir.filePath("runs");  // made when missing
    const QDateTime at(QDate(2026, 11, 26), QTime(9, 5, 7));
    QString error;
    const QString first = makeRunFolder(runs, "/zoo/bert-tiny.pt", at, &error);
    QCOMPARE(first, runs + "/20261126-090507-bert-tiny");
    QVERIFY(QFileInfo(first).isDir());
    QCOMPARE(makeRunFolder(runs, "/zoo/bert-tiny.pt", at), runs + "/20261126-090507-bert-tiny-2");
    QCOMPARE(makeRunFolder(runs, "", at), runs + "/20261126-090507-run");
    // A folder that cannot be made.
    QFile blocker(dir.filePath("file"));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    QCOMPARE(makeRunFolder(dir.filePath("file/runs"), "m.pt", at, &error), QString());
    QVERIFY(error.contains("HAP_RUNS_DIR"));

    // $HAP_RUNS_DIR, else beside the store ($HAP_DB).
    qputenv("HAP_RUNS_DIR", runs.toUtf8());
    QCOMPARE(runsDirectory(), runs);
    qunsetenv("HAP_RUNS_DIR");
    qputenv("HAP_DB", dir.filePath("store/profiles.db").toUtf8());
    QCOMPARE(runsDirectory(), dir.filePath("store/runs"));
    qunsetenv("HAP_DB");
  }
};

QTEST_GUILESS_MAIN(TstLaunchSettings)
#include "tst_launch_settings.moc"
