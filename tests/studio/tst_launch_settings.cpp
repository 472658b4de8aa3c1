// The Run dock's settings as the workers' options (runtime::WorkerOptions, what the worker is given
// of them, and its arguments), their validation, and where runs go (run folders).
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

#include "app/studio/core/documents/launch_requests.h"
#include "app/studio/core/documents/launch_settings.h"
#include "tests/studio/plan_fixture.h"

using namespace hap;
using namespace hap::studio;

class TstLaunchSettings : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void defaultsGiveTheWorkersDefaults() {
    const LaunchSettings s;
    QVERIFY(launchedOptions(s) == runtime::WorkerOptions{});
    QCOMPARE(runtime::workerArguments(launchedOptions(s)), std::vector<std::string>{});
    QCOMPARE(s.totalSteps(), 22);
    QCOMPARE(validate(s, 3), QString());
  }

  void everyOptionHasItsFlag() {
    LaunchSettings s;
    runtime::WorkerOptions& w = s.worker;
    w.modelPath = "/zoo/bert tiny.pt";
    w.steps = 7;
    w.warmup = 1;
    w.seed = 42;
    w.data.kind = "tokens";
    w.data.path = "/data/tokens.bin";
    w.data.tokenDtype = "int32";
    w.optimizer.kind = runtime::OptimizerOptions::Kind::AdamW;
    w.optimizer.lr = 3e-4;
    w.optimizer.momentum = 0.5;  // not SGD: not passed
    w.optimizer.weightDecay = 0.01;
    w.optimizer.clipNorm = 1.5;
    w.checkpointDir = "/runs/a/checkpoints";
    w.checkpointEvery = 5;
    w.resumePath = "/runs/b/checkpoints/step-4.pt";
    w.exportPath = "/runs/a/trained.pt";
    w.threads = 2;
    using Args = std::vector<std::string>;
    QCOMPARE(runtime::workerArguments(launchedOptions(s)),
             (Args{"--model", "/zoo/bert tiny.pt", "--steps", "7", "--warmup", "1", "--seed", "42", "--data", "tokens",
                   "--data-path", "/data/tokens.bin", "--token-dtype", "int32", "--optimizer", "adamw", "--lr",
                   "0.0003", "--weight-decay", "0.01", "--clip-norm", "1.5", "--checkpoint-dir",
                   "/runs/a/checkpoints", "--checkpoint-every", "5", "--resume", "/runs/b/checkpoints/step-4.pt",
                   "--export", "/runs/a/trained.pt", "--threads", "2"}));
    // CIFAR: a file, no token dtype; every-N without a folder means nothing.
    w.data.kind = "cifar";
    w.checkpointDir.clear();
    w.optimizer.kind = runtime::OptimizerOptions::Kind::Adam;
    const runtime::WorkerOptions cifar = launchedOptions(s);
    QCOMPARE(cifar.data.path, std::string("/data/tokens.bin"));
    QCOMPARE(cifar.data.tokenDtype, std::string("uint16"));
    QCOMPARE(cifar.checkpointEvery, int64_t{0});
    QCOMPARE(cifar.optimizer.momentum, 0.9);
    const Args a = runtime::workerArguments(cifar);
    QVERIFY(std::find(a.begin(), a.end(), "--token-dtype") == a.end());
    QVERIFY(std::find(a.begin(), a.end(), "--checkpoint-every") == a.end());
    QCOMPARE(*(std::find(a.begin(), a.end(), "--optimizer") + 1), std::string("adam"));
    // Synthetic data reads no file.
    w.data.kind = "synthetic";
    QCOMPARE(launchedOptions(s).data.path, std::string());
    // Shortest exact numbers, read back by the worker's own command line.
    w.optimizer.lr = 0.1 + 0.2;
    QCOMPARE(runtime::parseWorkerArguments(runtime::workerArguments(launchedOptions(s))).optimizer.lr, 0.1 + 0.2);
    // The optimizer box's names.
    for (auto k : {runtime::OptimizerOptions::Kind::Sgd, runtime::OptimizerOptions::Kind::Adam,
                   runtime::OptimizerOptions::Kind::AdamW})
      QCOMPARE(optimizerKind(optimizerName(k)), k);
    QCOMPARE(optimizerName(runtime::OptimizerOptions::Kind::AdamW), QStringLiteral("adamw"));
  }

  void validationNamesTheField() {
    QTemporaryDir dir;
    const QString file = dir.filePath("tokens.bin");
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("abcd");
    f.close();

    LaunchSettings s;
    s.worker.steps = 0;
    s.worker.warmup = 0;
    QVERIFY(validate(s, 2).startsWith("Steps"));
    s.worker.steps = 3;
    s.worker.data.kind = "tokens";
    QVERIFY2(validate(s, 2).contains("Data file"), qPrintable(validate(s, 2)));
    s.worker.data.path = dir.filePath("missing.bin").toStdString();
    QVERIFY(validate(s, 2).contains("no such file"));
    s.worker.data.path = file.toStdString();
    QCOMPARE(validate(s, 2), QString());
    s.worker.data.tokenDtype = "int8";
    QVERIFY(validate(s, 2).contains("uint16 or int32"));
    s.worker.data.tokenDtype = "uint16";
    s.worker.optimizer.lr = -1;
    QVERIFY(validate(s, 2).startsWith("Learning rate"));
    s.worker.optimizer.lr = 0.1;
    s.worker.optimizer.momentum = 1;
    QVERIFY(validate(s, 2).startsWith("Momentum"));
    s.worker.optimizer.momentum = 0.9;
    s.worker.resumePath = dir.filePath("step-9.pt").toStdString();
    QVERIFY(validate(s, 2).startsWith("Resume from"));
    s.worker.resumePath.clear();
    s.cpuShares = {1, 0.5, 0.25};
    QVERIFY(validate(s, 2).contains("3 values for 2 ranks"));
    QCOMPARE(validate(s, 3), QString());
    s.cpuShares = {1, 0, 0.25};
    QVERIFY(validate(s, 3).contains("rank 1"));
    s.cpuShares = {1, 1.5, 0.25};
    QVERIFY(validate(s, 3).contains("rank 1"));
    s.cpuShares.clear();
    s.slowdowns = {1, 2};
    QVERIFY(validate(s, 3).startsWith("Slowdowns: 2 values for 3 ranks"));
    s.slowdowns = {1, 0.5, 4};
    QVERIFY2(validate(s, 3).contains("rank 1"), qPrintable(validate(s, 3)));
    s.slowdowns = {1, 2, 4};
    QCOMPARE(validate(s, 3), QString());
  }

  // The Run dock starts each rank at its device type's speed where the cluster is emulated on this
  // host, and hands the slowdowns to the launch.
  void emulatedClustersStartAtTheirSpeeds() {
    const auto hetero = testing::planZoo("mlp-tiny.pt", "local-cpu-hetero-3.yaml");
    QCOMPARE(emulatedShares(hetero.get()), (std::vector<double>{1, 0.5, 0.25}));
    const auto even = testing::planZoo("mlp-tiny.pt", "local-cpu-3.yaml");
    QCOMPARE(emulatedShares(even.get()), (std::vector<double>{1, 1, 1}));
    // A real cluster (other hosts): no emulation.
    const auto gpus = testing::planZoo("mlp-tiny.pt", "a100-p100-4.yaml");
    const std::vector<double> ones(gpus->p().devices.size(), 1.0);
    QCOMPARE(emulatedShares(gpus.get()), ones);
    QVERIFY(emulatedShares(nullptr).empty());
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
