// Pipelined plans executed exactly (issue 34 item 2; runtime/train/pipeline_trainer.h): real
// hap-worker processes on loopback run plans of `hap plan --pipeline N --micro-batches M` with
// --check, which compares every step's loss, every gradient, the parameters and buffers with the
// single-device program in float64. Stages of 1 and 2 ranks (uneven shares inside: the stages'
// machines have devices of two speeds), 2 and 3 stages, the zoo's tiny MLP and BERT. Also: hap
// launch --local starts the plan's ranks; GPT-style targets that may be ignored are counted per
// micro-batch; batch norm in training across micro-batches is refused.
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <vector>

#include "runtime/launch/free_port.h"
#include "tests/runtime/torchrun_env.h"

namespace {

QString zoo(const QString& model) {
  return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + model + "-tiny.pt";
}

// `machines` machines of `perMachine` devices each (a machine is a unit of the stage search, a
// device when there is one machine), fast and slow machines alternating, behind a 1 GB/s network.
QString writeCluster(const QTemporaryDir& dir, int machines, int perMachine) {
  const QString path = dir.filePath(QString("cluster-%1x%2.yaml").arg(machines).arg(perMachine));
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return {};
  QString text =
      "name: pipeline-test\n"
      "device_types:\n"
      "  fast: {flops: {float32: 60G}, memory: 4GiB, memory_bandwidth: 10GB/s}\n"
      "  slow: {flops: {float32: 20G}, memory: 4GiB, memory_bandwidth: 5GB/s}\n"
      "network: {bandwidth: 1GB/s, latency: 100us}\n"
      "machines:\n";
  for (int k = 0; k < machines; ++k)
    text += QString(
                "  - {name: m%1, host: 127.0.0.1, device_type: %2, count: %3, link: {bandwidth: "
                "10GB/s, "
                "latency: 10us}}\n")
                .arg(k)
                .arg(k % 2 == 0 ? "fast" : "slow")
                .arg(perMachine);
  f.write(text.toUtf8());
  return path;
}

struct Outcome {
  QString planError, planOutput;
  std::vector<int> exitCodes;
  QStringList outputs;
};

// Plans `model` on `cluster` with `planArgs`, then runs `ranks` workers with --check.
Outcome runChecked(const QString& model, const QString& cluster, int ranks,
                   const QStringList& planArgs, int steps = 3) {
  Outcome o;
  QTemporaryDir dir;
  const QString plan = dir.filePath("plan.json");
  QProcess planner;
  const QString file = model.endsWith(".pt") ? model : zoo(model);
  planner.start(
      HAP_CLI_PATH,
      QStringList{"plan", file, "-c", cluster, "-o", plan, "-q", "--no-baselines"} + planArgs);
  if (!planner.waitForFinished(240000) || planner.exitCode() != 0) {
    o.planError = planner.readAllStandardError() + planner.readAllStandardOutput();
    if (o.planError.isEmpty()) o.planError = "hap plan did not finish";
    return o;
  }
  o.planOutput = planner.readAllStandardOutput();
  const int port = hap::runtime::freeTcpPort();
  std::vector<QProcess*> workers;
  for (int r = 0; r < ranks; ++r) {
    auto* w = new QProcess;
    w->setProcessEnvironment(torchrunEnvironment(r, ranks, port, 60));
    w->setProcessChannelMode(QProcess::MergedChannels);
    w->start(HAP_WORKER_PATH, QStringList{plan, "--steps", QString::number(steps), "--warmup", "0",
                                          "--check", "--clip-norm", "0.5"});
    workers.push_back(w);
  }
  for (QProcess* w : workers) {
    if (!w->waitForFinished(240000)) w->kill(), w->waitForFinished(5000);
    o.exitCodes.push_back(w->exitStatus() == QProcess::NormalExit ? w->exitCode() : -1);
    o.outputs << QString::fromUtf8(w->readAll());
    delete w;
  }
  return o;
}

void expectPass(const Outcome& o) {
  QVERIFY2(o.planError.isEmpty(), qPrintable("hap plan failed: " + o.planError));
  QVERIFY2(o.planOutput.contains("Pipeline:"), qPrintable("no pipeline planned:\n" + o.planOutput));
  for (size_t r = 0; r < o.exitCodes.size(); ++r) {
    const QString& out = o.outputs[static_cast<int>(r)];
    QVERIFY2(o.exitCodes[r] == 0,
             qPrintable(QString("rank %1 exited %2:\n%3").arg(r).arg(o.exitCodes[r]).arg(out)));
    QVERIFY2(out.contains("PASS"),
             qPrintable(QString("rank %1 printed no check verdict:\n%2").arg(r).arg(out)));
  }
  // The verdict with its errors, for the log.
  const QRegularExpression verdict("check rank 0[^\n]*");
  qInfo().noquote() << verdict.match(o.outputs.value(0)).captured(0);
}

}  // namespace

class TstPipeline : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // The tiny MLP cut at its module scopes: 2 stages of 1 rank, 3 stages of 1 rank (4 micro-batches
  // of one row), and 2 stages of 2 ranks whose shares are uneven (0.75 and 0.25: a zero-length
  // piece of the boundary value and the labels) with clipping by the global norm.
  void mlpTwoStagesOneRankEach() {
    QTemporaryDir dir;
    expectPass(runChecked("mlp", writeCluster(dir, 1, 2), 2,
                          {"--pipeline", "2", "--micro-batches", "2", "--segments", "scope:1"}));
  }
  void mlpThreeStages() {
    QTemporaryDir dir;
    expectPass(runChecked("mlp", writeCluster(dir, 1, 3), 3,
                          {"--pipeline", "3", "--micro-batches", "4", "--segments", "scope:1"}));
  }
  void mlpTwoStagesTwoRanksUneven() {
    QTemporaryDir dir;
    expectPass(runChecked("mlp", writeCluster(dir, 4, 1), 4,
                          {"--pipeline", "2", "--micro-batches", "2", "--segments", "scope:1",
                           "--ratios", "proportional"}));
  }

  // BERT: dropout drawn per micro-batch's rows of the global mask, a mean cross-entropy over two
  // micro-batches, layers cut between stages.
  void bertTwoStages() {
    QTemporaryDir dir;
    expectPass(runChecked("bert", writeCluster(dir, 1, 2), 2,
                          {"--pipeline", "2", "--micro-batches", "2"}));
  }
  void bertThreeStages() {
    QTemporaryDir dir;
    expectPass(runChecked("bert", writeCluster(dir, 1, 3), 3,
                          {"--pipeline", "3", "--micro-batches", "2"}));
  }
  void bertTwoStagesTwoRanksUneven() {
    QTemporaryDir dir;
    expectPass(runChecked("bert", writeCluster(dir, 4, 1), 4,
                          {"--pipeline", "2", "--micro-batches", "2", "--ratios", "proportional"}));
  }

  // A GPT-style decoder written by others (tests/fixtures, no hap/inputs.json): its cross-entropy's
  // targets may be ignore_index (the stage graphs carry no declared range), so each micro-batch's
  // loss weighs its count of the other targets over the batch's.
  void gptDecoderCountedTargets() {
    QTemporaryDir dir;
    const QString model = qEnvironmentVariable("HAP_FIXTURE_DIR") + "/gpt_decoder.pt";
    expectPass(
        runChecked(model, writeCluster(dir, 1, 2), 2,
                   {"--pipeline", "2", "--micro-batches", "2", "--input", "idx=8x8:int64:0..32",
                    "--input", "targets=8x8:int64:0..32", "--segments", "scope:1"}));
  }

  // Batch norm in training over 2 micro-batches: refused (not synchronised), saying so.
  void batchNormAcrossMicroBatchesRefused() {
    QTemporaryDir dir;
    const Outcome o =
        runChecked(qEnvironmentVariable("HAP_FIXTURE_DIR") + "/conv_bn.pt", writeCluster(dir, 1, 2),
                   2, {"--pipeline", "2", "--micro-batches", "2", "--segments", "scope:1"});
    QVERIFY2(o.planError.isEmpty(), qPrintable(o.planError));
    for (size_t r = 0; r < o.exitCodes.size(); ++r) {
      QCOMPARE(o.exitCodes[r], 1);
      QVERIFY2(o.outputs[static_cast<int>(r)].contains("batch norm in training") &&
                   o.outputs[static_cast<int>(r)].contains("not synchronised"),
               qPrintable(o.outputs[static_cast<int>(r)]));
    }
  }

  // hap launch --local starts one worker per device of the pipelined plan's cluster.
  void launchLocalStartsEveryRank() {
    QTemporaryDir dir;
    const QString plan = dir.filePath("plan.json");
    QProcess planner;
    planner.start(HAP_CLI_PATH, {"plan", zoo("mlp"), "-c", writeCluster(dir, 4, 1), "-o", plan,
                                 "-q", "--no-baselines", "--pipeline", "2", "--micro-batches", "2",
                                 "--segments", "scope:1"});
    QVERIFY(planner.waitForFinished(120000));
    QCOMPARE(planner.exitCode(), 0);
    QProcess launch;
    launch.setProcessChannelMode(QProcess::MergedChannels);
    launch.start(HAP_CLI_PATH, {"launch", plan, "--local", "--steps", "2", "--timeout", "120"});
    QVERIFY(launch.waitForFinished(180000));
    const QString out = QString::fromUtf8(launch.readAll());
    QVERIFY2(launch.exitCode() == 0, qPrintable(out));
    QVERIFY2(out.contains("all 4 ranks finished"), qPrintable(out));
  }
};

QTEST_GUILESS_MAIN(TstPipeline)
#include "tst_pipeline.moc"
