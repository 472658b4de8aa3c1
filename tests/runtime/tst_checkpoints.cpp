// A run's checkpoints as the launch panel uses them (issue 20 item 5), with the real hap-worker on
// 3 CPU ranks (mlp-tiny on the local CPU cluster, through `hap launch --local`):
// - a resumed run continues the step count and the loss: 4 steps checkpointed every 2, resumed
//   from step-2.pt for 2 steps, gives steps 3 and 4 with the first run's losses;
// - listCheckpoints finds the step-N.pt files sorted by step, with size, time and the header
//   (iteration, optimizer, parameter names and shapes), and skips temporaries and other files;
// - a trained model is exported from a checkpoint without training (--resume CKPT --steps 0
//   --warmup 0 --export OUT): the exported parameters are the checkpoint's.
#include <QtTest>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/script.h>

#include <QDateTime>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QProcess>
#include <QTemporaryDir>

#include <cmath>
#include <map>

#include "engine/plan/plan_json.h"
#include "runtime/train/checkpoint_list.h"
#include "runtime/core/runtime_error.h"
#include "tests/runtime/run_process.h"

namespace {

// The per-step losses of a metrics file (JSON lines; the summary line left out), by step.
QMap<int, double> lossesOf(const QString& path) {
  QMap<int, double> out;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return out;
  for (const QByteArray& line : f.readAll().split('\n')) {
    const QJsonObject o = QJsonDocument::fromJson(line).object();
    if (o.contains("step")) out[o["step"].toInt()] = o["loss"].toDouble();
  }
  return out;
}

bool writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

}  // namespace

class TstCheckpoints : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString plan_, ck_;

  Run launch(const QStringList& workerArgs) {
    return runProcess(HAP_CLI_PATH,
                      QStringList{"launch", plan_, "--local", "--worker", HAP_WORKER_PATH, "--timeout", "120", "--"} +
                          workerArgs,
                      180'000);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    plan_ = tmp_.filePath("plan.json");
    ck_ = tmp_.filePath("ck");
    const Run r = planLocal("mlp-tiny.pt", "local-cpu-3.yaml", plan_);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
  }

  // Runs first: the others read its checkpoints.
  void resumeContinuesStepsAndLoss() {
    const Run first = launch({"--steps", "4", "--warmup", "0", "--checkpoint-dir", ck_, "--checkpoint-every", "2",
                              "--metrics", tmp_.filePath("first.jsonl")});
    QVERIFY2(first.exitCode == 0, qPrintable(first.err + first.out));
    const QMap<int, double> straight = lossesOf(tmp_.filePath("first.jsonl"));
    QCOMPARE(straight.keys(), (QList<int>{1, 2, 3, 4}));

    const Run resumed = launch({"--resume", ck_ + "/step-2.pt", "--steps", "2", "--warmup", "0", "--metrics",
                                tmp_.filePath("resumed.jsonl")});
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err + resumed.out));
    QVERIFY2(resumed.out.contains("resumed from " + ck_ + "/step-2.pt at step 2"), qPrintable(resumed.out));
    QVERIFY2(resumed.out.contains("step 3/4: loss") && resumed.out.contains("step 4/4: loss"), qPrintable(resumed.out));
    const QMap<int, double> continued = lossesOf(tmp_.filePath("resumed.jsonl"));
    QCOMPARE(continued.keys(), (QList<int>{3, 4}));
    for (int step : {3, 4}) {
      const double a = straight[step], b = continued[step];
      QVERIFY2(std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(a)),
               qPrintable(QString("step %1: %2 straight, %3 resumed").arg(step).arg(a, 0, 'g', 17).arg(b, 0, 'g', 17)));
    }
    QVERIFY(straight[4] != straight[2]);  // the steps did train
  }

  // A data-parallel plan (every parameter replicated, no length says how many ranks there are)
  // resumes on every rank too.
  void resumesADataParallelPlan() {
    const QString plan = tmp_.filePath("dp.json"), ck = tmp_.filePath("dp-ck");
    const Run planned = runProcess(HAP_CLI_PATH,
                                   {"plan", qEnvironmentVariable("HAP_ZOO_DIR") + "/mlp-tiny.pt", "-c",
                                    qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/local-cpu-3.yaml",
                                    "--baseline", "dp-ev", "-o", plan, "-q"},
                                   120'000);
    QVERIFY2(planned.exitCode == 0, qPrintable(planned.err));
    auto run = [&](const QStringList& args) {
      return runProcess(HAP_CLI_PATH,
                        QStringList{"launch", plan, "--local", "--worker", HAP_WORKER_PATH, "--timeout", "120", "--"} +
                            args,
                        180'000);
    };
    const Run first = run({"--steps", "2", "--warmup", "0", "--checkpoint-dir", ck, "--checkpoint-every", "2"});
    QVERIFY2(first.exitCode == 0, qPrintable(first.err + first.out));
    const Run resumed = run({"--resume", ck + "/step-2.pt", "--steps", "1", "--warmup", "0"});
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err + resumed.out));
    QVERIFY2(resumed.out.contains("step 3/3: loss"), qPrintable(resumed.out));
  }

  void listsCheckpointsByStep() {
    // Things that are not checkpoints of the run are skipped; a damaged one is listed with its error.
    QVERIFY(writeFile(ck_ + "/.step-6.pt.tmp-123", "partial"));
    QVERIFY(writeFile(ck_ + "/notes.txt", "hello"));
    QVERIFY(writeFile(ck_ + "/step-10.pt", "not a zip"));
    const QDateTime now = QDateTime::currentDateTime();
    const std::vector<hap::runtime::CheckpointInfo> list = hap::runtime::listCheckpoints(ck_.toStdString());
    QCOMPARE(list.size(), size_t{3});
    QCOMPARE(list[0].step, int64_t{2});
    QCOMPARE(list[1].step, int64_t{4});
    QCOMPARE(list[2].step, int64_t{10});  // numeric order, not text order
    const hap::plan::Plan plan = hap::plan::readPlan(plan_.toStdString());
    for (int i = 0; i < 2; ++i) {
      const hap::runtime::CheckpointInfo& c = list[static_cast<size_t>(i)];
      QVERIFY2(c.error.empty(), c.error.c_str());
      QCOMPARE(QString::fromStdString(c.path), ck_ + QString("/step-%1.pt").arg(c.step));
      QCOMPARE(c.bytes, static_cast<int64_t>(QFileInfo(QString::fromStdString(c.path)).size()));
      const qint64 ms = std::chrono::duration_cast<std::chrono::milliseconds>(c.modified.time_since_epoch()).count();
      QVERIFY2(std::abs(ms - QFileInfo(QString::fromStdString(c.path)).lastModified().toMSecsSinceEpoch()) <= 1,
               qPrintable(QString::number(ms)));
      QVERIFY(ms <= now.toMSecsSinceEpoch() && ms > now.toMSecsSinceEpoch() - 600'000);
      QCOMPARE(c.iteration, c.step);
      QCOMPARE(c.version, int64_t{2});
      QCOMPARE(c.optimizer, std::string("sgd"));
      QCOMPARE(c.optimizerSteps, c.step);
      QCOMPARE(c.parameters.size(), size_t{6});  // mlp-tiny: 3 linears
      std::map<std::string, std::vector<int64_t>> shapes;
      for (const hap::runtime::CheckpointTensor& t : c.parameters) shapes[t.name] = t.shape;
      QVERIFY(shapes.count("head.weight") && shapes.count("hidden.0.bias"));
      QCOMPARE(shapes["head.weight"].size(), size_t{2});
      QCOMPARE(c.parameterElements, plan.parameters);  // the plan's model
    }
    QVERIFY2(QString::fromStdString(list[2].error).contains("step-10.pt"), list[2].error.c_str());
    QFile::remove(ck_ + "/step-10.pt");

    QVERIFY(hap::runtime::listCheckpoints(tmp_.filePath("not-yet").toStdString()).empty());
    QVERIFY_THROWS_EXCEPTION(hap::runtime::RuntimeError, hap::runtime::listCheckpoints(plan_.toStdString()));
    const hap::runtime::CheckpointInfo missing = hap::runtime::readCheckpointInfo(tmp_.filePath("gone.pt").toStdString());
    QVERIFY2(QString::fromStdString(missing.error).contains("gone.pt"), missing.error.c_str());
  }

  void exportsFromCheckpointWithoutTraining() {
    const QString out = tmp_.filePath("exported/sub/trained.pt");  // its folder is made
    const Run r = launch({"--resume", ck_ + "/step-4.pt", "--steps", "0", "--warmup", "0", "--export", out});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    QVERIFY2(r.out.contains("exported: " + out), qPrintable(r.out));
    QVERIFY2(!r.out.contains("step 5"), qPrintable(r.out));  // no step ran

    QFile f(ck_ + "/step-4.pt");
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    const c10::IValue root = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    const c10::impl::GenericDict saved = root.toGenericDict().at("parameters").toGenericDict();
    torch::jit::Module exported = torch::jit::load(out.toStdString());
    torch::jit::Module original = torch::jit::load((qEnvironmentVariable("HAP_ZOO_DIR") + "/mlp-tiny.pt").toStdString());
    std::map<std::string, at::Tensor> before;
    for (const auto& named : original.named_parameters()) before[named.name] = named.value;
    size_t count = 0;
    for (const auto& named : exported.named_parameters()) {
      QVERIFY2(at::equal(named.value, saved.at(named.name).toTensor()), named.name.c_str());
      QVERIFY2(!at::equal(named.value, before.at(named.name)), named.name.c_str());  // trained, not the original
      ++count;
    }
    QCOMPARE(count, size_t{6});
  }
};

QTEST_GUILESS_MAIN(TstCheckpoints)
#include "tst_checkpoints.moc"
