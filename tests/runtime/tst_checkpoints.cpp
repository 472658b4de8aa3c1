// A run's checkpoints as the launch panel uses them (issue 20 item 5), with the real hap-worker on
// 3 CPU ranks (mlp-tiny on the local CPU cluster, through `hap launch --local`):
// - a resumed run continues the step count and the loss: 4 steps checkpointed every 2, resumed
//   from step-2.pt for 2 steps, gives steps 3 and 4 with the first run's losses;
// - listCheckpoints finds the step-N.pt files sorted by step, with size, time and the header
//   (iteration, optimizer, parameter names and shapes), and skips temporaries and other files;
// - a trained model is exported from a checkpoint without training (--resume CKPT --steps 0
//   --warmup 0 --export OUT): the exported parameters are the checkpoint's;
// - resumed from step 2 of 5 (Adam), every later loss and every tensor of every later checkpoint
//   (parameters, optimizer state, buffers) equals the uninterrupted run's, bit for bit;
// - the worker refuses a damaged checkpoint (64 flipped bytes in a tensor: named; the iteration
//   edited; truncated) with an error naming the file, and trains nothing;
// - a rank 0 killed while it writes a checkpoint (the file size limit's SIGXFSZ) leaves the
//   previous file of that name intact, and the run resumes from it.
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
#include <vector>

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

QByteArray readFile(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

c10::impl::GenericDict rootOf(const QString& path) {
  const QByteArray bytes = readFile(path);
  return torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end())).toGenericDict();
}

// Every tensor of a checkpoint by key ("parameters/NAME", "optimizer_state/NAME/STATE",
// "buffers/NAME").
std::map<std::string, at::Tensor> tensorsOf(const c10::impl::GenericDict& root) {
  std::map<std::string, at::Tensor> out;
  for (const auto& e : root.at("parameters").toGenericDict())
    out["parameters/" + e.key().toStringRef()] = e.value().toTensor();
  for (const auto& e : root.at("optimizer_state").toGenericDict())
    for (const auto& s : e.value().toGenericDict())
      out["optimizer_state/" + e.key().toStringRef() + "/" + s.key().toStringRef()] = s.value().toTensor();
  for (const auto& e : root.at("buffers").toGenericDict()) out["buffers/" + e.key().toStringRef()] = e.value().toTensor();
  return out;
}

// "" when checkpoints `a` and `b` hold the same counts and bitwise-equal tensors; else the first
// difference.
QString differenceOf(const QString& a, const QString& b) {
  const c10::impl::GenericDict x = rootOf(a), y = rootOf(b);
  for (const char* key : {"iteration", "optimizer_steps"})
    if (x.at(key).toInt() != y.at(key).toInt()) return QString("%1 differs").arg(key);
  const std::map<std::string, at::Tensor> tx = tensorsOf(x), ty = tensorsOf(y);
  if (tx.size() != ty.size() || tx.empty()) return QString("%1 tensors, %2").arg(tx.size()).arg(ty.size());
  for (const auto& [key, t] : tx) {
    auto it = ty.find(key);
    if (it == ty.end()) return QString::fromStdString(key) + " missing";
    if (t.scalar_type() != it->second.scalar_type() || !at::equal(t, it->second))
      return QString::fromStdString(key) + " differs";
  }
  return {};
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
    QVERIFY2(resumed.out.contains("resumed from " + ck_ + "/step-2.pt at step 2: this run takes steps 3 to 4"),
             qPrintable(resumed.out));
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
      QCOMPARE(c.version, int64_t{3});
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

  // Resumed from step 2 of 5 with Adam (state beyond the parameters), on the same 3 ranks: steps
  // 3 to 5 give the uninterrupted run's losses, and its checkpoints' every tensor, bit for bit.
  void resumeIsBitwiseAcrossProcesses() {
    const QString straightDir = tmp_.filePath("bitwise-straight"), resumedDir = tmp_.filePath("bitwise-resumed");
    const QStringList common = {"--optimizer", "adam", "--lr", "0.01", "--warmup", "0", "--checkpoint-every", "1"};
    const Run first = launch(common + QStringList{"--steps", "5", "--checkpoint-dir", straightDir, "--metrics",
                                                  tmp_.filePath("bitwise-straight.jsonl")});
    QVERIFY2(first.exitCode == 0, qPrintable(first.err + first.out));
    const Run resumed = launch(common + QStringList{"--resume", straightDir + "/step-2.pt", "--steps", "3",
                                                    "--checkpoint-dir", resumedDir, "--metrics",
                                                    tmp_.filePath("bitwise-resumed.jsonl")});
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err + resumed.out));
    QVERIFY2(resumed.out.contains("at step 2: this run takes steps 3 to 5"), qPrintable(resumed.out));
    const QMap<int, double> straight = lossesOf(tmp_.filePath("bitwise-straight.jsonl"));
    const QMap<int, double> continued = lossesOf(tmp_.filePath("bitwise-resumed.jsonl"));
    QCOMPARE(straight.keys(), (QList<int>{1, 2, 3, 4, 5}));
    QCOMPARE(continued.keys(), (QList<int>{3, 4, 5}));
    for (int step : {3, 4, 5}) {
      QVERIFY2(straight[step] == continued[step],
               qPrintable(QString("step %1: loss %2 straight, %3 resumed")
                              .arg(step)
                              .arg(straight[step], 0, 'g', 17)
                              .arg(continued[step], 0, 'g', 17)));
      const QString name = QString("/step-%1.pt").arg(step);
      const QString difference = differenceOf(straightDir + name, resumedDir + name);
      QVERIFY2(difference.isEmpty(), qPrintable(QString("step-%1.pt: %2").arg(step).arg(difference)));
    }
    QVERIFY(differenceOf(straightDir + "/step-2.pt", straightDir + "/step-5.pt") != "");  // it did train
  }

  // A damaged checkpoint is refused by the worker, naming the file (and the tensor), before any
  // step: 64 flipped bytes inside a parameter, the iteration edited from 2 to 255 (the header's
  // checksum), a truncated file.
  void refusesDamagedCheckpoints() {
    const QString source = tmp_.filePath("bitwise-straight/step-2.pt");
    const QByteArray bytes = readFile(source);
    QVERIFY(!bytes.isEmpty());
    const at::Tensor weight = rootOf(source).at("parameters").toGenericDict().at("hidden.0.weight").toTensor();
    const QByteArray raw(static_cast<const char*>(weight.data_ptr()), static_cast<qsizetype>(weight.nbytes()));
    const qsizetype payload = bytes.indexOf(raw);
    QVERIFY(payload >= 0);
    QByteArray flipped = bytes;
    for (qsizetype i = payload + 100; i < payload + 164; ++i) flipped[i] = static_cast<char>(~flipped[i]);

    const QByteArray key = QByteArray("X\x09\x00\x00\x00iteration", 14);
    qsizetype at = bytes.indexOf(key) + key.size();
    QVERIFY(at >= key.size());
    if (bytes[at] == 'q') at += 2;
    QCOMPARE(bytes[at], 'K');
    QByteArray edited = bytes;
    edited[at + 1] = static_cast<char>(255);

    const struct {
      const char* name;
      QByteArray bytes;
      QString says;
    } cases[] = {{"flipped.pt", flipped, "parameter 'hidden.0.weight'"},
                 {"iteration.pt", edited, "header"},
                 {"truncated.pt", bytes.left(bytes.size() / 2), "truncated"}};
    for (const auto& c : cases) {
      const QString path = tmp_.filePath(c.name);
      QVERIFY(writeFile(path, c.bytes));
      const Run r = launch({"--resume", path, "--optimizer", "adam", "--steps", "2", "--warmup", "0"});
      QVERIFY2(r.exitCode != 0, qPrintable(QString(c.name) + ": " + r.out));
      QVERIFY2((r.err + r.out).contains(path) && (r.err + r.out).contains(c.says), qPrintable(r.err + r.out));
      QVERIFY2(!r.out.contains("step 3/"), qPrintable(r.out));  // nothing trained
    }
  }

  // Rank 0 killed while it writes step-3.pt over an existing step-3.pt (the file size limit of a
  // wrapper: SIGXFSZ part-way through the write): the existing file is intact, listed, and the
  // run resumes from it bit for bit.
  void crashDuringWriteKeepsThePreviousCheckpoint() {
    const QString straightDir = tmp_.filePath("bitwise-straight"), dir = tmp_.filePath("crash");
    QVERIFY(QDir().mkpath(dir));
    for (const char* name : {"/step-2.pt", "/step-3.pt"}) QVERIFY(QFile::copy(straightDir + name, dir + name));
    const QByteArray before = readFile(dir + "/step-3.pt");
    QVERIFY(before.size() > 16 * 1024);
    const QString wrapper = tmp_.filePath("limited-worker.sh");
    QVERIFY(writeFile(wrapper, QString("#!/bin/bash\nulimit -c 0\nulimit -f 8\nexec '%1' \"$@\"\n")
                                   .arg(HAP_WORKER_PATH)
                                   .toUtf8()));
    QVERIFY(QFile::setPermissions(wrapper, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
    const Run crashed = runProcess(HAP_CLI_PATH,
                                   {"launch", plan_, "--local", "--worker", wrapper, "--timeout", "30", "--",
                                    "--resume", dir + "/step-2.pt", "--optimizer", "adam", "--lr", "0.01", "--steps",
                                    "1", "--warmup", "0", "--checkpoint-dir", dir, "--checkpoint-every", "1"},
                                   120'000);
    QVERIFY2(crashed.exitCode != 0, qPrintable(crashed.out));
    QVERIFY2(crashed.out.contains("step 3/3: loss") || crashed.err.contains("step 3/3: loss"),
             qPrintable(crashed.err + crashed.out));  // the step ran; its checkpoint did not land
    QCOMPARE(readFile(dir + "/step-3.pt"), before);
    const std::vector<hap::runtime::CheckpointInfo> list = hap::runtime::listCheckpoints(dir.toStdString());
    QCOMPARE(list.size(), size_t{2});
    for (const hap::runtime::CheckpointInfo& c : list) QVERIFY2(c.error.empty(), c.error.c_str());

    const QString again = tmp_.filePath("crash-resumed");
    const Run resumed = launch({"--resume", dir + "/step-3.pt", "--optimizer", "adam", "--lr", "0.01", "--steps", "2",
                                "--warmup", "0", "--checkpoint-dir", again, "--checkpoint-every", "1"});
    QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err + resumed.out));
    const QString difference = differenceOf(straightDir + "/step-5.pt", again + "/step-5.pt");
    QVERIFY2(difference.isEmpty(), qPrintable(difference));
  }
};

QTEST_GUILESS_MAIN(TstCheckpoints)
#include "tst_checkpoints.moc"
