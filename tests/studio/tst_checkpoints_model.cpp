// The Run dock's core without windows or workers (issue 20, items 1 and 5): CheckpointsModel on
// folders that hold no real checkpoint (a missing folder, a file instead of a folder, damaged
// step-N.pt files, other files), the recorded run's checkpoint folder from its settings JSON, the
// steps Resume From sets, and PreflightJob with its one-line summaries. Listing real checkpoints,
// resuming and exporting are tst_launch_gui's (they need the workers).
#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/studio/core/models/checkpoints_model.h"
#include "app/studio/core/documents/launch_requests.h"
#include "app/studio/core/jobs/preflight_job.h"

using namespace hap;
using namespace hap::studio;
using Status = runtime::PreflightCheck::Status;

namespace {

bool writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

}  // namespace

class TstCheckpointsModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void listsStepFilesSortedWithTheirErrors() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(writeFile(dir.filePath("step-12.pt"), "not a zip"));
    QVERIFY(writeFile(dir.filePath("step-3.pt"), QByteArray(100, 'x')));
    QVERIFY(writeFile(dir.filePath("notes.txt"), "skipped"));
    QVERIFY(writeFile(dir.filePath("step-4.pt.tmp"), "skipped"));
    CheckpointsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy listed(&model, &CheckpointsModel::listed);
    model.setFolder(dir.path());
    QCOMPARE(listed.size(), 1);
    QVERIFY(model.error().isEmpty());
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.columnCount(), int(CheckpointsModel::ColumnCount));
    QCOMPARE(model.step(0), int64_t(3));
    QCOMPARE(model.step(1), int64_t(12));
    QCOMPARE(model.lastStep(), int64_t(12));
    QCOMPARE(model.rowOfStep(12), 1);
    QCOMPARE(model.rowOfStep(5), -1);
    QCOMPARE(model.step(2), int64_t(-1));
    QCOMPARE(model.path(0), dir.filePath("step-3.pt"));
    QCOMPARE(model.data(model.index(0, CheckpointsModel::StepColumn)).toString(), QStringLiteral("step-3.pt"));
    QCOMPARE(model.data(model.index(0, CheckpointsModel::SizeColumn)).toString(), QStringLiteral("100 B"));
    QCOMPARE(model.data(model.index(0, CheckpointsModel::SizeColumn), CheckpointsModel::ValueRole).toLongLong(), 100);
    // A damaged file is a row that says so, naming the file.
    const QString status = model.data(model.index(1, CheckpointsModel::StatusColumn)).toString();
    QVERIFY2(status.contains("step-12.pt") && status.contains("damaged"), qPrintable(status));
    QVERIFY(!model.info(1)->error.empty());
  }

  void missingFolderIsEmptyAFileIsAnError() {
    QTemporaryDir dir;
    CheckpointsModel model;
    model.setFolder(dir.filePath("not-yet"));
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(model.error().isEmpty());  // no checkpoint written so far
    QVERIFY(writeFile(dir.filePath("file"), "x"));
    model.setFolder(dir.filePath("file"));
    QCOMPARE(model.rowCount(), 0);
    QVERIFY2(model.error().contains(dir.filePath("file")), qPrintable(model.error()));
    model.setFolder({});
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(model.error().isEmpty());
  }

  // update(): one file's row added in step order or replaced; files elsewhere or not step-N.pt ignored.
  void updateAddsOneFile() {
    QTemporaryDir dir;
    CheckpointsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setFolder(dir.path());
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(writeFile(dir.filePath("step-6.pt"), "x"));
    QVERIFY(model.update(dir.filePath("step-6.pt")));
    QVERIFY(writeFile(dir.filePath("step-3.pt"), "xy"));
    QVERIFY(model.update(dir.filePath("step-3.pt")));
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.step(0), int64_t(3));
    QCOMPARE(model.step(1), int64_t(6));
    QVERIFY(writeFile(dir.filePath("step-6.pt"), "xyz"));
    QVERIFY(model.update(dir.filePath("step-6.pt")));  // replaced, not added
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.info(1)->bytes, int64_t(3));
    QVERIFY(!model.update(dir.filePath("other.pt")));
    QTemporaryDir elsewhere;
    QVERIFY(writeFile(elsewhere.filePath("step-9.pt"), "x"));
    QVERIFY(!model.update(elsewhere.filePath("step-9.pt")));
    QCOMPARE(model.rowCount(), 2);
  }

  void formatsSizes() {
    QCOMPARE(formatFileSize(0), QStringLiteral("0 B"));
    QCOMPARE(formatFileSize(1023), QStringLiteral("1023 B"));
    QCOMPARE(formatFileSize(2048), QStringLiteral("2.0 KiB"));
    QCOMPARE(formatFileSize(237568), QStringLiteral("232 KiB"));
    QCOMPARE(formatFileSize(int64_t(5) << 30), QStringLiteral("5.0 GiB"));
  }

  void recordedFolderFromSettings() {
    QCOMPARE(recordedCheckpointDir(R"({"worker_args":["--steps","6","--checkpoint-dir","/runs/a/checkpoints"]})"),
             QStringLiteral("/runs/a/checkpoints"));
    QCOMPARE(recordedCheckpointDir(R"({"worker_args":["--checkpoint-dir=/x/y/"]})"), QStringLiteral("/x/y"));
    // Relative: to the plan file's folder.
    QCOMPARE(recordedCheckpointDir(R"({"plan":"/runs/b/plan.json","worker_args":["--checkpoint-dir","ckpt"]})"),
             QStringLiteral("/runs/b/ckpt"));
    QCOMPARE(recordedCheckpointDir(R"({"worker_args":["--steps","6"]})"), QString());
    QCOMPARE(recordedCheckpointDir("not json"), QString());
    QCOMPARE(recordedCheckpointDir(R"({"worker_args":["--checkpoint-dir"]})"), QString());
  }

  void resumeContinuesToTheLastStep() {
    // A run of warm-up 1 + 6 steps with checkpoints at 3, 6 and 7.
    QCOMPARE(resumeSteps(3, 7, 1, 6).warmup, int64_t(1));
    QCOMPARE(resumeSteps(3, 7, 1, 6).steps, int64_t(3));
    QCOMPARE(resumeSteps(6, 7, 1, 6).warmup, int64_t(0));  // one step left: no warm-up
    QCOMPARE(resumeSteps(6, 7, 1, 6).steps, int64_t(1));
    QCOMPARE(resumeSteps(3, 7, 10, 6).warmup, int64_t(3));
    QCOMPARE(resumeSteps(3, 7, 10, 6).steps, int64_t(1));
    // From the end: another run as long as the form says.
    QCOMPARE(resumeSteps(7, 7, 2, 20).warmup, int64_t(2));
    QCOMPARE(resumeSteps(7, 7, 2, 20).steps, int64_t(20));
    QCOMPARE(resumeSteps(7, -1, 2, 20).steps, int64_t(20));
  }

  void summaries() {
    using C = runtime::PreflightCheck;
    QCOMPARE(preflightSummary({}), QStringLiteral("No checks yet"));
    std::vector<C> checks{{"Model file", Status::Ok, "ok"}, {"Data", Status::Ok, "ok"}, {"Resume", Status::Ok, "ok"}};
    QCOMPARE(preflightSummary(checks), QStringLiteral("All 3 checks passed"));
    QCOMPARE(preflightFailures(checks), QString());
    checks[2].status = Status::Warning;
    QCOMPARE(preflightSummary(checks), QStringLiteral("All 3 checks passed, 1 with a warning"));
    checks[1] = {"Data", Status::Failed, "token file 'x.bin' has 3 bytes"};
    checks[0] = {"Model file", Status::Failed, "missing"};
    QCOMPARE(preflightSummary(checks), QStringLiteral("2 of 3 checks failed: Model file, Data"));
    QCOMPARE(preflightFailures(checks), QStringLiteral("Model file: missing; Data: token file 'x.bin' has 3 bytes"));
  }

  void requestFromSettings() {
    LaunchSettings s;
    s.worker.modelPath = "/m/bert.pt";
    s.worker.data.kind = "synthetic";
    s.worker.data.path = "/ignored.bin";  // synthetic reads no file
    s.worker.optimizer.kind = runtime::OptimizerOptions::Kind::AdamW;
    s.worker.checkpointDir = "/runs/x/checkpoints";
    s.worker.resumePath = "/runs/w/checkpoints/step-3.pt";
    s.worker.exportPath = "/out/model.pt";
    s.cpuShares = {1, 0.5};
    const runtime::PreflightRequest r = preflightRequest(plan::Plan{}, "/runs/x/plan.json", s, "/bin/hap-worker");
    QCOMPARE(r.options.planPath, std::string("/runs/x/plan.json"));
    QCOMPARE(r.options.modelPath, std::string("/m/bert.pt"));
    QCOMPARE(r.worker, std::string("/bin/hap-worker"));
    QCOMPARE(r.options.data.kind, std::string("synthetic"));
    QCOMPARE(r.options.data.path, std::string());
    QCOMPARE(r.options.optimizer.kind, runtime::OptimizerOptions::Kind::AdamW);
    QCOMPARE(r.options.checkpointDir, std::string("/runs/x/checkpoints"));
    QCOMPARE(r.options.resumePath, std::string("/runs/w/checkpoints/step-3.pt"));
    QCOMPARE(r.options.exportPath, std::string("/out/model.pt"));
    QCOMPARE(r.cpuShares, (std::vector<double>{1, 0.5}));
    s.worker.data.kind = "tokens";
    s.worker.data.tokenDtype = "int32";
    const runtime::PreflightRequest t = preflightRequest(plan::Plan{}, "p.json", s, {});
    QCOMPARE(t.options.data.kind, std::string("tokens"));
    QCOMPARE(t.options.data.path, std::string("/ignored.bin"));
    QCOMPARE(t.options.data.tokenDtype, std::string("int32"));
    QCOMPARE(t.worker, std::string());
  }

  // A request that cannot pass (no model, no worker): every check runs, none throws, finished(false)
  // once; a second start while busy is refused; wait() delivers at once.
  void jobRunsOffTheGuiThread() {
    QTemporaryDir dir;
    runtime::PreflightRequest r;
    r.options.planPath = dir.filePath("plan.json").toStdString();
    r.options.modelPath = dir.filePath("missing.pt").toStdString();
    PreflightJob job;
    QSignalSpy finished(&job, &PreflightJob::finished);
    QVERIFY(job.start(r));
    QVERIFY(job.busy());
    QVERIFY(!job.start(r));
    QVERIFY(finished.wait(10000));
    QCOMPARE(finished.size(), 1);
    QCOMPARE(finished.first().first().toBool(), false);
    QVERIFY(!job.busy());
    QCOMPARE(job.checks().size(), size_t(9));
    QCOMPARE(job.checks()[0].what, std::string("Model file"));
    QCOMPARE(job.checks()[0].status, Status::Failed);
    QVERIFY(QString::fromStdString(job.checks()[0].message).contains("missing.pt"));
    QCOMPARE(job.checks()[4].what, std::string("Worker"));
    QCOMPARE(job.checks()[4].status, Status::Failed);
    QVERIFY(!job.passed());

    QVERIFY(job.start(r));
    job.wait();
    QCOMPARE(finished.size(), 2);
    QVERIFY(!job.busy());
    QTest::qWait(50);  // the watcher's own queued signal delivers nothing more
    QCOMPARE(finished.size(), 2);
  }
};

QTEST_MAIN(TstCheckpointsModel)
#include "tst_checkpoints_model.moc"
