// The launch panel's preflight (runtime/launch/preflight.h, issue 20 item 1): a good request passes every
// check; each bad input (a model of another hash, a missing or malformed data file, a token id
// outside the vocabulary, a missing worker, a CPU share count that is not the rank count, a
// checkpoint of another optimizer, an export folder that cannot be written) fails exactly its own
// check, with a message naming the file or field. The plans are tiny zoo models on the local CPU
// cluster (3 ranks); one checkpoint is written by a 1-step run of the real hap-worker.
#include <QtTest>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/plan_json.h"
#include "runtime/launch/preflight.h"
#include "tests/runtime/run_process.h"

using hap::runtime::PreflightCheck;
using hap::runtime::PreflightRequest;
using Status = PreflightCheck::Status;

namespace {

bool writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

// `count` little-endian uint16 token ids: i mod 128, with `bad` at position `badAt` (-1: none).
QByteArray tokens(int count, int badAt = -1, uint16_t bad = 0) {
  QByteArray bytes;
  for (int i = 0; i < count; ++i) {
    const uint16_t id = i == badAt ? bad : static_cast<uint16_t>(i % 128);
    bytes.append(static_cast<char>(id & 0xff));
    bytes.append(static_cast<char>(id >> 8));
  }
  return bytes;
}

QString describe(const std::vector<PreflightCheck>& checks) {
  QString text;
  for (const PreflightCheck& c : checks)
    text += QString("\n  %1 [%2] %3")
                .arg(QString::fromStdString(c.what))
                .arg(c.status == Status::Ok ? "ok" : c.status == Status::Warning ? "warning" : "FAILED")
                .arg(QString::fromStdString(c.message));
  return text;
}

const PreflightCheck* find(const std::vector<PreflightCheck>& checks, const std::string& what) {
  for (const PreflightCheck& c : checks)
    if (c.what == what) return &c;
  return nullptr;
}

}  // namespace

class TstPreflight : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir tmp_;
  QString bertPlan_, mlpPlan_, tokens_, checkpoint_;
  hap::plan::Plan bert_, mlp_;

  QString zoo(const QString& name) const { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name; }

  // Every check passes: bert-tiny's plan on 3 ranks, a token file, a checkpoint of the model, new
  // folders for checkpoints and the export.
  PreflightRequest good() const {
    PreflightRequest r;
    r.plan = bert_;
    r.options.planPath = bertPlan_.toStdString();
    r.options.modelPath = zoo("bert-tiny.pt").toStdString();
    r.worker = HAP_WORKER_PATH;
    r.cpuShares = {1, 0.5, 0.25};
    r.options.data.kind = "tokens";
    r.options.data.path = tokens_.toStdString();
    r.options.resumePath = checkpoint_.toStdString();
    r.options.checkpointDir = tmp_.filePath("new/checkpoints").toStdString();
    r.options.exportPath = tmp_.filePath("out/trained.pt").toStdString();
    return r;
  }

  // Checks `request` fails check `what` with a message holding every one of `needles`, and no other.
  void expectOnly(const PreflightRequest& request, const std::string& what, const QStringList& needles) {
    const std::vector<PreflightCheck> checks = hap::runtime::preflight(request);
    QCOMPARE(checks.size(), size_t{9});
    const PreflightCheck* c = find(checks, what);
    QVERIFY2(c, what.c_str());
    QVERIFY2(c->status == Status::Failed, qPrintable(describe(checks)));
    qInfo("%s: %s", what.c_str(), c->message.c_str());
    for (const QString& n : needles) QVERIFY2(QString::fromStdString(c->message).contains(n), qPrintable(describe(checks)));
    for (const PreflightCheck& other : checks)
      if (other.what != what) QVERIFY2(other.status != Status::Failed, qPrintable(describe(checks)));
    QVERIFY(!hap::runtime::preflightPassed(checks));
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    QVERIFY2(QFileInfo::exists(zoo("bert-tiny.pt")), "run the zoo fixture (export_zoo_tiny) first");
    const QString cluster = qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/local-cpu-3.yaml";
    bertPlan_ = tmp_.filePath("bert.json");
    mlpPlan_ = tmp_.filePath("mlp.json");
    for (const auto& [model, plan] : {std::pair{zoo("bert-tiny.pt"), bertPlan_}, std::pair{zoo("mlp-tiny.pt"), mlpPlan_}}) {
      const Run r = runProcess(HAP_CLI_PATH, {"plan", model, "-c", cluster, "-o", plan, "-q"}, 120'000);
      QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    }
    bert_ = hap::plan::readPlan(bertPlan_.toStdString());
    mlp_ = hap::plan::readPlan(mlpPlan_.toStdString());
    tokens_ = tmp_.filePath("tokens.bin");
    QVERIFY(writeFile(tokens_, tokens(4000)));
    // A checkpoint of bert-tiny (SGD) after one step, by the real workers.
    const Run r = runProcess(HAP_CLI_PATH,
                             {"launch", bertPlan_, "--local", "--worker", HAP_WORKER_PATH, "--timeout", "120", "--",
                              "--steps", "1", "--warmup", "0", "--checkpoint-dir", tmp_.filePath("ck")},
                             180'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
    checkpoint_ = tmp_.filePath("ck/step-1.pt");
    QVERIFY(QFileInfo::exists(checkpoint_));
  }

  void goodRequestPassesEveryCheck() {
    QElapsedTimer timer;
    timer.start();
    const std::vector<PreflightCheck> checks = hap::runtime::preflight(good());
    const qint64 ms = timer.elapsed();
    const std::vector<std::string> titles = {"Model file", "Ranks",  "CPU shares",  "Port",  "Worker",
                                             "Data",       "Resume", "Checkpoints", "Export"};
    QCOMPARE(checks.size(), titles.size());
    for (size_t i = 0; i < titles.size(); ++i) {
      QCOMPARE(checks[i].what, titles[i]);
      QVERIFY2(checks[i].status == Status::Ok, qPrintable(describe(checks)));
      QVERIFY(!checks[i].message.empty());
    }
    QVERIFY(hap::runtime::preflightPassed(checks));
    QVERIFY2(QString::fromStdString(checks[1].message).startsWith("3 ranks"), checks[1].message.c_str());
    QVERIFY2(QString::fromStdString(checks[5].message).contains("tokens.bin"), checks[5].message.c_str());
    QVERIFY2(QString::fromStdString(checks[6].message).contains("step 1"), checks[6].message.c_str());
    qInfo("preflight of bert-tiny on 3 ranks: %lld ms%s", ms, qPrintable(describe(checks)));
    QVERIFY2(ms < 5000, qPrintable(QString("%1 ms").arg(ms)));
    // Nothing was created: the folders stay for the run to make.
    QVERIFY(!QFileInfo::exists(tmp_.filePath("new")));
    QVERIFY(!QFileInfo::exists(tmp_.filePath("out")));
  }

  void syntheticDataNeedsNoFile() {
    PreflightRequest r = good();
    r.plan = mlp_;
    r.options.planPath = mlpPlan_.toStdString();
    r.options.modelPath.clear();  // the plan's
    r.options.data.kind = "synthetic";
    r.options.data.path.clear();
    r.options.resumePath.clear();
    const std::vector<PreflightCheck> checks = hap::runtime::preflight(r);
    QCOMPARE(checks.size(), size_t{9});  // every check ran: an empty list would pass the loop below
    for (const PreflightCheck& c : checks) QVERIFY2(c.status == Status::Ok, qPrintable(describe(checks)));
  }

  void wrongModelHash() {
    PreflightRequest r = good();
    r.options.modelPath = zoo("mlp-tiny.pt").toStdString();
    expectOnly(r, "Model file", {"mlp-tiny.pt", "SHA-256", "bert.json"});
    // What needs the model is not checked, and says why.
    const std::vector<PreflightCheck> checks = hap::runtime::preflight(r);
    QVERIFY(find(checks, "Data")->status == Status::Warning);
    QVERIFY(find(checks, "Resume")->status == Status::Warning);
  }

  void missingModel() {
    PreflightRequest r = good();
    r.options.modelPath = tmp_.filePath("nowhere.pt").toStdString();
    expectOnly(r, "Model file", {"nowhere.pt", "does not exist"});
  }

  void missingDataFile() {
    PreflightRequest r = good();
    r.options.data.path = tmp_.filePath("missing.bin").toStdString();
    expectOnly(r, "Data", {"missing.bin", "does not exist"});
    r.options.data.path.clear();
    expectOnly(r, "Data", {"data file"});
  }

  void threeByteTokenFile() {
    const QString path = tmp_.filePath("three.bin");
    QVERIFY(writeFile(path, QByteArray(3, '\1')));
    PreflightRequest r = good();
    r.options.data.path = path.toStdString();
    expectOnly(r, "Data", {"three.bin", "3 bytes"});  // the runtime's message
  }

  void tokenIdOutsideVocabulary() {
    const QString path = tmp_.filePath("big-ids.bin");
    QVERIFY(writeFile(path, tokens(4000, 3210, 200)));  // far beyond batch 0: only the whole-file scan finds it
    PreflightRequest r = good();
    r.options.data.path = path.toStdString();
    expectOnly(r, "Data", {"big-ids.bin", "200", "3210", "vocabulary"});
  }

  void dataNotForTheModelsInputs() {
    PreflightRequest r = good();
    r.plan = mlp_;
    r.options.planPath = mlpPlan_.toStdString();
    r.options.modelPath = zoo("mlp-tiny.pt").toStdString();
    r.options.resumePath.clear();
    expectOnly(r, "Data", {"tokens source"});  // mlp-tiny takes a float x and a label y
  }

  void missingWorker() {
    PreflightRequest r = good();
    r.worker.clear();
    expectOnly(r, "Worker", {"hap-worker"});
    r.worker = tmp_.filePath("no-worker").toStdString();
    expectOnly(r, "Worker", {"no-worker", "does not exist"});
    r.worker = tokens_.toStdString();  // a file, not executable
    expectOnly(r, "Worker", {"tokens.bin", "not an executable"});
  }

  void shareCountMismatch() {
    PreflightRequest r = good();
    r.cpuShares = {1, 0.5};
    expectOnly(r, "CPU shares", {"2 CPU shares", "3 ranks", "bert.json"});
    r.cpuShares = {1, 1.5, 1};
    expectOnly(r, "CPU shares", {"rank 1", "1.5"});
  }

  void devicesNotListedByRank() {
    PreflightRequest r = good();
    r.plan.devices[1].rank = 7;
    expectOnly(r, "Ranks", {"bert.json", "devices[1].rank"});
  }

  void unwritableExportFolder() {
    PreflightRequest r = good();
    const QString file = tmp_.filePath("a-file");
    QVERIFY(writeFile(file, "x"));
    r.options.exportPath = (file + "/sub/trained.pt").toStdString();  // its folder would be inside a file
    expectOnly(r, "Export", {"a-file", "not a folder"});
    r.options.exportPath = "/proc/hap-preflight/trained.pt";  // not writable, even by root
    expectOnly(r, "Export", {"/proc", "not writable"});
    r.options.exportPath = tmp_.path().toStdString();  // a folder, not a file
    expectOnly(r, "Export", {"is a folder"});
  }

  void unwritableCheckpointFolder() {
    PreflightRequest r = good();
    const QString file = tmp_.filePath("b-file");
    QVERIFY(writeFile(file, "x"));
    r.options.checkpointDir = file.toStdString();
    expectOnly(r, "Checkpoints", {"b-file", "not a folder"});
    r.options.checkpointDir = "/proc/hap-preflight";
    expectOnly(r, "Checkpoints", {"/proc", "not writable"});
  }

  void checkpointFolderWithCheckpointsWarns() {
    PreflightRequest r = good();
    r.options.checkpointDir = tmp_.filePath("ck").toStdString();
    const std::vector<PreflightCheck> checks = hap::runtime::preflight(r);
    const PreflightCheck* c = find(checks, "Checkpoints");
    QVERIFY2(c->status == Status::Warning && QString::fromStdString(c->message).contains("step-1.pt"),
             qPrintable(describe(checks)));
    QVERIFY(hap::runtime::preflightPassed(checks));  // a warning does not stop the run
  }

  void resumeProblems() {
    PreflightRequest r = good();
    r.options.optimizer.kind = hap::runtime::OptimizerOptions::Kind::Adam;  // the checkpoint holds SGD's state
    expectOnly(r, "Resume", {"step-1.pt", "optimizer sgd", "adam"});
    r = good();
    r.options.resumePath = tmp_.filePath("ck/step-99.pt").toStdString();
    expectOnly(r, "Resume", {"step-99.pt", "does not exist"});
    r.options.resumePath = tokens_.toStdString();  // not a checkpoint
    expectOnly(r, "Resume", {"tokens.bin"});
  }

  void checkpointOfAnotherModel() {
    // The bert-tiny checkpoint resumed under mlp-tiny's plan: loadCheckpoint's name check.
    PreflightRequest r = good();
    r.plan = mlp_;
    r.options.planPath = mlpPlan_.toStdString();
    r.options.modelPath = zoo("mlp-tiny.pt").toStdString();
    r.options.data.kind = "synthetic";
    expectOnly(r, "Resume", {"step-1.pt", "another model"});
  }
};

QTEST_GUILESS_MAIN(TstPreflight)
#include "tst_preflight.moc"
