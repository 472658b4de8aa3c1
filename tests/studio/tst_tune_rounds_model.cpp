// TuneRoundsModel (Run ▸ Tune…'s table, issue 30 item 3) under QAbstractItemModelTester, without
// windows: the rows as the loop reports its runs, formatted as `hap tune` prints them, the reused
// note, the chosen mark after the result (reused rows of the chosen run included), a result of
// another loop taken as it is. Beside it, TuneJob's plain parts: the --input, --cpu-share and
// emulated-share helpers, and a loop that cannot start ending in exactly one failed().
#include <QAbstractItemModelTester>
#include <QFont>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/studio/core/jobs/tune_job.h"
#include "app/studio/core/models/tune_rounds_model.h"
#include "engine/cost/cluster.h"
#include "engine/import/input_spec.h"

using namespace hap;
using namespace hap::studio;

namespace {

tune::TuneRun makeRun(int round, const char* strategy, double predictedMs, double measuredMs,
                      double spreadMs, int64_t runId, int reused = 0, const char* sameAs = "") {
  tune::TuneRun r;
  r.round = round;
  r.strategy = strategy;
  r.planPath = std::string("/tmp/round") + std::to_string(round) + "-" + strategy + ".json";
  r.profile = "local-cpu-hetero-3@" + std::to_string(round);
  r.predictedSeconds = predictedMs / 1e3;
  r.measuredSeconds = measuredMs / 1e3;
  r.spreadSeconds = spreadMs / 1e3;
  r.measuredSteps = 3;
  r.runId = runId;
  r.reused = reused;
  r.sameAs = sameAs;
  return r;
}

// Two rounds as the loop reports them: round 2's dp-cp is round 1's program (reused), and round 2's
// hap plan is measured fastest.
std::vector<tune::TuneRun> twoRounds() {
  return {makeRun(1, "hap", 10, 20, 0.5, 1), makeRun(1, "dp-cp", 12, 15, 0.25, 2),
          makeRun(1, "dp-ev", 14, 18, 1, 3), makeRun(2, "hap", 13, 14, 0.3, 4),
          makeRun(2, "dp-cp", 15.5, 15, 0.25, 2, 1, "dp-cp")};
}

tune::TuneResult resultOf(const std::vector<tune::TuneRun>& runs, int64_t chosenRun) {
  tune::TuneResult r;
  for (const tune::TuneRun& run : runs) {
    if (r.rounds.empty() || r.rounds.back().round != run.round) {
      r.rounds.emplace_back();
      r.rounds.back().round = run.round;
    }
    r.rounds.back().runs.push_back(run);
    if (run.runId == chosenRun && !run.reused) r.chosen = run;
  }
  return r;
}

QString cell(const TuneRoundsModel& m, int row, int column) {
  return m.index(row, column).data().toString();
}

}  // namespace

class TstTuneRoundsModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void empty() {
    TuneRoundsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), int(TuneRoundsModel::ColumnCount));
    QCOMPARE(model.chosenRow(), -1);
    QCOMPARE(model.rounds(), 0);
    QCOMPARE(model.headerData(TuneRoundsModel::MeasuredColumn, Qt::Horizontal).toString(),
             QStringLiteral("Measured (mean ± sd)"));
    QCOMPARE(model.headerData(TuneRoundsModel::ProfileColumn, Qt::Horizontal).toString(),
             QStringLiteral("Priced under"));
  }

  void rowsAsTheyCome() {
    TuneRoundsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    const std::vector<tune::TuneRun> runs = twoRounds();
    for (const tune::TuneRun& r : runs) model.addRun(r);
    QCOMPARE(inserted.size(), int(runs.size()));
    QCOMPARE(model.rowCount(), 5);
    QCOMPARE(model.rounds(), 2);
    QCOMPARE(cell(model, 0, TuneRoundsModel::RoundColumn), QStringLiteral("1"));
    QCOMPARE(cell(model, 0, TuneRoundsModel::PlanColumn), QStringLiteral("hap"));
    QCOMPARE(cell(model, 0, TuneRoundsModel::ProfileColumn),
             QStringLiteral("local-cpu-hetero-3@1"));
    QCOMPARE(cell(model, 0, TuneRoundsModel::PredictedColumn), QStringLiteral("10.00 ms"));
    QCOMPARE(cell(model, 0, TuneRoundsModel::MeasuredColumn), QStringLiteral("20.00 ± 0.50 ms"));
    QCOMPARE(cell(model, 0, TuneRoundsModel::ErrorColumn), QStringLiteral("−50.0%"));
    QCOMPARE(cell(model, 4, TuneRoundsModel::ErrorColumn), QStringLiteral("+3.3%"));
    QCOMPARE(
        model.index(0, TuneRoundsModel::MeasuredColumn).data(TuneRoundsModel::ValueRole).toDouble(),
        0.020);
    QCOMPARE(
        model.index(0, TuneRoundsModel::ErrorColumn).data(TuneRoundsModel::ValueRole).toDouble(),
        -0.5);
    QCOMPARE(model.index(3, TuneRoundsModel::RoundColumn).data(TuneRoundsModel::ValueRole).toInt(),
             2);
    // Numbers right-aligned, words left.
    QCOMPARE(model.index(0, TuneRoundsModel::PredictedColumn).data(Qt::TextAlignmentRole).toInt(),
             int(Qt::AlignRight | Qt::AlignVCenter));
    QCOMPARE(model.index(0, TuneRoundsModel::PlanColumn).data(Qt::TextAlignmentRole).toInt(),
             int(Qt::AlignLeft | Qt::AlignVCenter));
    // The reused program says whose measurement it is; nothing is chosen before the result.
    QCOMPARE(cell(model, 0, TuneRoundsModel::NoteColumn), QString());
    QCOMPARE(cell(model, 4, TuneRoundsModel::NoteColumn), QStringLiteral("= round 1 dp-cp"));
    QVERIFY(model.index(4, TuneRoundsModel::NoteColumn)
                .data(Qt::ToolTipRole)
                .toString()
                .contains("reused"));
    QVERIFY(model.index(0, TuneRoundsModel::PlanColumn)
                .data(Qt::ToolTipRole)
                .toString()
                .contains("round1-hap.json"));
    QVERIFY(!model.hasResult());
    QCOMPARE(model.chosenRow(), -1);
    for (int r = 0; r < model.rowCount(); ++r) QVERIFY(!model.isChosen(r));
    QVERIFY(!model.index(3, 0).data(Qt::FontRole).isValid());
  }

  void chosenMarkedAtTheEnd() {
    TuneRoundsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const std::vector<tune::TuneRun> runs = twoRounds();
    for (const tune::TuneRun& r : runs) model.addRun(r);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    model.setResult(resultOf(runs, 4));
    QCOMPARE(reset.size(), 0);  // the same rows: only marked
    QVERIFY(changed.size() >= 1);
    QVERIFY(model.hasResult());
    QCOMPARE(model.chosenRow(), 3);
    QCOMPARE(cell(model, 3, TuneRoundsModel::NoteColumn), QStringLiteral("chosen"));
    QVERIFY(model.index(3, TuneRoundsModel::PlanColumn).data(Qt::FontRole).value<QFont>().bold());
    QVERIFY(!model.index(0, TuneRoundsModel::PlanColumn).data(Qt::FontRole).isValid());
    QCOMPARE(cell(model, 1, TuneRoundsModel::NoteColumn), QString());

    // Chosen: round 1's dp-cp, which round 2 reused: both rows carry the mark, the run's own row is
    // chosenRow.
    model.setResult(resultOf(runs, 2));
    QCOMPARE(model.chosenRow(), 1);
    QCOMPARE(cell(model, 1, TuneRoundsModel::NoteColumn), QStringLiteral("chosen"));
    QCOMPARE(cell(model, 4, TuneRoundsModel::NoteColumn),
             QStringLiteral("= round 1 dp-cp, chosen"));
    QVERIFY(model.isChosen(4));
    QCOMPARE(cell(model, 3, TuneRoundsModel::NoteColumn), QString());

    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(!model.hasResult());
  }

  void anotherLoopsResult() {
    TuneRoundsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.addRun(makeRun(1, "hap", 1, 2, 0, 99));
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    const std::vector<tune::TuneRun> runs = twoRounds();
    model.setResult(resultOf(runs, 3));
    QCOMPARE(reset.size(), 1);
    QCOMPARE(model.rowCount(), int(runs.size()));
    QCOMPARE(model.chosenRow(), 2);
    QCOMPARE(cell(model, 2, TuneRoundsModel::PlanColumn), QStringLiteral("dp-ev"));
  }

  // ---- TuneJob's plain parts ----

  void jobHelpers() {
    QCOMPARE(TuneJob::perRankList({}), std::string());
    QCOMPARE(TuneJob::perRankList({1, 1, 1}), std::string());
    QCOMPARE(TuneJob::perRankList({1, 0.5, 0.25}), std::string("1,0.5,0.25"));
    QCOMPARE(TuneJob::perRankList({1, 2, 4}), std::string("1,2,4"));

    // The --input arguments parse back to the same overrides.
    std::vector<import::InputSpec> overrides{import::parseInputArg("x=8x3x32x32:float32"),
                                             import::parseInputArg("ids=4x16:int64:0..128"),
                                             import::parseInputArg("y=8x10")};
    const std::vector<std::string> args = TuneJob::inputArguments(overrides);
    QCOMPARE(args.size(), size_t(3));
    QCOMPARE(args[0], std::string("x=8x3x32x32:float32"));
    QCOMPARE(args[1], std::string("ids=4x16:int64:0..128"));
    QCOMPARE(args[2], std::string("y=8x10"));
    for (size_t i = 0; i < args.size(); ++i) {
      const import::InputSpec back = import::parseInputArg(args[i]);
      QCOMPARE(back.name, overrides[i].name);
      QVERIFY(back.shape == overrides[i].shape);
      QCOMPARE(back.dtype, overrides[i].dtype);
      QCOMPARE(back.dtypeGiven, overrides[i].dtypeGiven);
      QVERIFY(back.low == overrides[i].low && back.high == overrides[i].high);
    }

    // local-cpu-hetero-3 is emulated at 1, 0.5, 0.25; a cluster of other hosts is not.
    cost::Cluster c = cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                                        "/resources/clusters/local-cpu-hetero-3.yaml");
    QVERIFY(TuneJob::emulatedShares(c) == (std::vector<double>{1, 0.5, 0.25}));
    for (cost::Machine& m : c.machines) m.host = "node" + m.name;
    QVERIFY(TuneJob::emulatedShares(c) == (std::vector<double>{1, 1, 1}));
  }

  // A loop that cannot begin (no such model) ends in exactly one failed(), naming the file; busy
  // goes true, then false; the job refuses a second start while busy.
  void jobFailsOnce() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    TuneJob job;
    QSignalSpy failed(&job, &TuneJob::failed);
    QSignalSpy finished(&job, &TuneJob::finished);
    QSignalSpy busy(&job, &TuneJob::busyChanged);
    tune::TuneRequest r;
    r.modelPath = dir.filePath("missing.pt").toStdString();
    r.clusterPath = qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                    "/resources/clusters/local-cpu-hetero-3.yaml";
    r.storePath = dir.filePath("store.db").toStdString();
    r.workDir = dir.path().toStdString();
    QVERIFY(job.start(r));
    QVERIFY(job.busy());
    QVERIFY(!job.start(r));
    QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 1, 30000);
    QVERIFY2(failed.first().first().toString().contains("missing.pt"),
             qPrintable(failed.first().first().toString()));
    QVERIFY(!job.busy());
    QTest::qWait(50);
    QCOMPARE(failed.size(), 1);
    QCOMPARE(finished.size(), 0);
    QCOMPARE(busy.size(), 2);
    QCOMPARE(busy.at(0).first().toBool(), true);
    QCOMPARE(busy.at(1).first().toBool(), false);

    // No folder for the rounds' plans: failed() says so.
    r.workDir = dir.filePath("nowhere").toStdString();
    QVERIFY(job.start(r));
    QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 2, 30000);
    QVERIFY2(failed.last().first().toString().contains("nowhere"),
             qPrintable(failed.last().first().toString()));
  }
};

QTEST_MAIN(TstTuneRoundsModel)
#include "tst_tune_rounds_model.moc"
