// Predicted against measured without windows (core/measured_comparison_model.h): a store written
// here holds a real plan of the tiny MLP on the local 3-CPU cluster and runs of it whose steps are
// the prediction times known factors; the table's figures are recomputed here from the plan's
// stages and the steps, ratios outside [0.8, 1.25] coloured; a run without a plan, a missing run,
// a missing store and stage records of another plan are error values; the run chooser filters
// by model; isPlanOf recognises the stored plan by file and by JSON; measuredTrace offers the
// measured timeline only where there is one.
#include <QAbstractItemModelTester>
#include <QColor>
#include <QFile>
#include <QFont>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

#include "app/studio/core/models/measured_comparison_model.h"
#include "app/studio/core/display/units.h"
#include "db/store.h"
#include "engine/plan/plan_json.h"
#include "tests/studio/plan_fixture.h"
#include "tests/studio/view_helpers.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::cell;
using M = MeasuredComparisonModel;

namespace {

// Per rank: measured = predicted × factor (step, compute, communication alike).
constexpr double kFactor[] = {1.0, 2.0, 0.5};
constexpr int kSteps = 4;  // step 1 warm-up

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

std::string planText(const PlanDocument& doc) { return plan::toJson(doc.p(), *doc.imported).dump(1) + "\n"; }

}  // namespace

class TestMeasuredComparisonModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(m_dir.isValid());
    m_path = m_dir.filePath(QStringLiteral("profiles.db"));
    m_doc = testing::planZoo("mlp-tiny.pt", "local-cpu-3.yaml");
    plan::PlanRequest even;
    even.ratios = "even";
    m_other = testing::planZoo("mlp-tiny.pt", "local-cpu-3.yaml", even);
    QCOMPARE(m_doc->p().devices.size(), size_t(3));
    QVERIFY(planText(*m_doc) != planText(*m_other));
    const plan::Timeline& t = m_doc->timeline;
    QVERIFY(t.devices[0].communicationSeconds > 0);  // something to compare in every column

    db::Store s(m_path.toStdString());
    const int64_t cluster = s.saveCluster("local-cpu-3", "name: local-cpu-3\n");
    db::PlanRecord rec;
    rec.modelSha256 = m_doc->p().modelSha256;
    rec.modelPath = m_doc->p().modelPath;
    rec.strategy = "hap";
    rec.clusterId = cluster;
    rec.predictedSeconds = m_doc->p().estimate.iterationSeconds;
    rec.json = planText(*m_doc);
    const int64_t planId = s.savePlan(rec);

    auto run = [&](int64_t plan, const std::string& label, const std::string& started) {
      db::RunRecord r;
      r.planId = plan;
      r.label = label;
      r.ranks = 3;
      r.startedAt = started;
      return s.beginRun(r);
    };
    // Run 1: every rank at its factor; rank 2 has no step 4; stages as predicted.
    m_run = run(planId, "factors", "2026-11-26T10:00:00Z");
    std::vector<db::StepRecord> steps;
    for (int step = 1; step <= kSteps; ++step)
      for (int rank = 0; rank < 3; ++rank) {
        if (rank == 2 && step == kSteps) continue;
        const double f = step == 1 ? 50.0 : kFactor[rank];  // the warm-up is far off: it must not count
        const double jitter = 1 + 0.01 * step;              // the means are over steps 2..4
        db::StepRecord r;
        r.rank = rank;
        r.step = step;
        r.warmup = step == 1;
        r.seconds = t.totalSeconds * f * jitter;
        r.computeSeconds = t.devices[static_cast<size_t>(rank)].computeSeconds * f * jitter;
        r.communicationSeconds = t.devices[static_cast<size_t>(rank)].communicationSeconds * f * jitter;
        r.loss = 1.0 / step;
        steps.push_back(r);
      }
    s.recordSteps(m_run, steps);
    std::vector<db::StageRecord> stages;
    for (int rank = 0; rank < 3; ++rank)
      for (size_t st = 0; st < m_doc->p().stages.size(); ++st)
        stages.push_back({rank, static_cast<int>(st), t.stages[st].deviceComputation[static_cast<size_t>(rank)],
                          t.stages[st].communicationSeconds});
    s.recordStages(m_run, stages);
    s.finishRun(m_run, db::RunStatus::Succeeded);
    // Run 2: no plan. Run 3: the plan, but stage records of a plan with more stages.
    m_noPlan = run(0, "no plan", "2026-11-26T11:00:00Z");
    s.recordSteps(m_noPlan, {steps.front()});
    s.finishRun(m_noPlan, db::RunStatus::Failed, "rank 0: exit code 1");
    m_otherStages = run(planId, "other stages", "2026-11-26T12:00:00Z");
    s.recordSteps(m_otherStages, steps);
    s.recordStages(m_otherStages, {{0, 99, 1e-3, 0}});
    s.finishRun(m_otherStages, db::RunStatus::Succeeded);
    // A run of another model's plan, newest of all.
    db::PlanRecord foreign = rec;
    foreign.modelSha256 = std::string(64, 'f');
    foreign.json = R"({"format": "hap-plan", "version": 2})";
    m_foreign = run(s.savePlan(foreign), "another model", "2026-11-26T13:00:00Z");
    s.finishRun(m_foreign, db::RunStatus::Stopped);
  }

  void loadsTheRunAndItsPlan() {
    const MeasuredRun m = loadMeasuredRun(m_path, m_run);
    QVERIFY2(m.ok(), qPrintable(m.error));
    QVERIFY(m.run && m.planRecord);
    QCOMPARE(m.run->label, std::string("factors"));
    QCOMPARE(m.plan->stages.size(), m_doc->p().stages.size());
    QCOMPARE(m.predicted.totalSeconds, m_doc->timeline.totalSeconds);
    QCOMPARE(m.stepCount(), int64_t(kSteps));
    QCOMPARE(m.warmupCount(), int64_t(1));
    QVERIFY2(m.measured.ok(), m.measured.error.c_str());
    // The stages were recorded as predicted: the measured timeline is the prediction again, but
    // for the gradient buckets' exposed all-reduces, which the workers measure inside the last
    // backward stage (not recorded here).
    QVERIFY(close(m.measured.timeline.totalSeconds, m.predicted.totalSeconds - m.predicted.exposedGradientSeconds));
    QVERIFY(isPlanOf(*m_doc, *m.planRecord));
    QVERIFY(!isPlanOf(*m_other, *m.planRecord));
    // The trace the Stages view is offered: the same timeline, labelled from the shown plan.
    const std::optional<plan::Timeline> trace = measuredTrace(*m_doc, m);
    QVERIFY(trace);
    QVERIFY(close(trace->totalSeconds, m.measured.timeline.totalSeconds));
    QCOMPARE(trace->stages.size(), m.measured.timeline.stages.size());
  }

  void isPlanOfRecognisesTheFile() {
    const MeasuredRun m = loadMeasuredRun(m_path, m_run);
    QVERIFY(m.planRecord);
    // The same plan read from its file: the file's hash decides.
    const QString file = m_dir.filePath(QStringLiteral("plan.json"));
    {
      std::ofstream out(file.toStdString());
      out << m.planRecord->json;
    }
    auto fromFile = std::make_shared<PlanDocument>(*m_other);  // another plan's JSON...
    fromFile->path = file.toStdString();                       // ...but the stored file
    QVERIFY(isPlanOf(*fromFile, *m.planRecord));
    fromFile->path = m_dir.filePath(QStringLiteral("missing.json")).toStdString();
    QVERIFY(!isPlanOf(*fromFile, *m.planRecord));
  }

  void tableComparesEveryRank() {
    const MeasuredRun m = loadMeasuredRun(m_path, m_run);
    QVERIFY(m.ok());
    M model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRun(m);
    QCOMPARE(model.rowCount(), 4);  // 3 ranks and the Slowest row
    QCOMPARE(model.columnCount(), int(M::ColumnCount));
    QCOMPARE(model.slowestRow(), 3);
    const plan::Timeline& t = m.predicted;
    double slowest[3][2] = {};
    for (int rank = 0; rank < 3; ++rank) {
      QCOMPARE(cell(model, rank, M::DeviceColumn).toString(), QStringLiteral("rank %1 · cpu-core · local").arg(rank));
      QCOMPARE(cell(model, rank, 0, M::RankRole).toInt(), rank);
      // Predicted, recomputed from the stages: the iteration, the rank's computation over the
      // stages, every stage's communication.
      double compute = 0, communication = 0;
      for (const plan::StageSpan& st : t.stages) {
        compute += st.deviceComputation[static_cast<size_t>(rank)];
        communication += st.communicationSeconds;
      }
      // Measured: the mean of the steps after warm-up (rank 2 has steps 2 and 3 only).
      const int last = rank == 2 ? kSteps - 1 : kSteps;
      double jitter = 0;
      for (int step = 2; step <= last; ++step) jitter += 1 + 0.01 * step;
      jitter /= last - 1;
      const double predicted[] = {t.totalSeconds, compute, communication};
      for (int q = 0; q < M::QuantityCount; ++q) {
        const int c = M::firstColumn(static_cast<M::Quantity>(q));
        const double p = cell(model, rank, c, M::ValueRole).toDouble();
        const double measured = cell(model, rank, c + 1, M::ValueRole).toDouble();
        const double ratio = cell(model, rank, c + 2, M::ValueRole).toDouble();
        QVERIFY2(close(p, predicted[q]), qPrintable(QString("rank %1 quantity %2: %3 vs %4").arg(rank).arg(q).arg(p).arg(predicted[q])));
        QVERIFY2(close(measured, predicted[q] * kFactor[rank] * jitter), qPrintable(QString("rank %1 quantity %2").arg(rank).arg(q)));
        QVERIFY(close(ratio, measured / p));
        QCOMPARE(cell(model, rank, c + 2).toString(), QStringLiteral("%1×").arg(measured / p, 0, 'f', 2));
        QCOMPARE(cell(model, rank, c).toString(), formatMilliseconds(p));
        slowest[q][0] = std::max(slowest[q][0], p);
        slowest[q][1] = std::max(slowest[q][1], measured);
        // Colours: rank 0 within the band, rank 1 slower, rank 2 faster.
        const QVariant fg = cell(model, rank, c + 2, Qt::ForegroundRole);
        if (rank == 0) QVERIFY(!fg.isValid());
        if (rank == 1) QCOMPARE(fg.value<QColor>(), QColor(0xB0, 0x1C, 0x1C));
        if (rank == 2) QCOMPARE(fg.value<QColor>(), QColor(0x1D, 0x5C, 0xA8));
        QCOMPARE(cell(model, rank, c + 2, Qt::FontRole).value<QFont>().bold(), rank != 0);
        QVERIFY(!cell(model, rank, c, Qt::ForegroundRole).isValid());  // only ratios are coloured
      }
      QCOMPARE(cell(model, rank, M::StepsColumn).toInt(), last - 1);
    }
    // The Slowest row: the most of any rank, which rank in the tooltip.
    for (int q = 0; q < M::QuantityCount; ++q) {
      const int c = M::firstColumn(static_cast<M::Quantity>(q));
      QVERIFY(close(cell(model, 3, c, M::ValueRole).toDouble(), slowest[q][0]));
      QVERIFY(close(cell(model, 3, c + 1, M::ValueRole).toDouble(), slowest[q][1]));
      QVERIFY(cell(model, 3, c + 1, Qt::ToolTipRole).toString().contains(QStringLiteral("rank 1")));
    }
    QCOMPARE(cell(model, 3, 0, M::RankRole).toInt(), -1);
    QVERIFY(cell(model, 3, M::DeviceColumn, Qt::FontRole).value<QFont>().bold());
    // Tooltips say what a figure is.
    QVERIFY(cell(model, 0, M::PredictedComputeColumn, Qt::ToolTipRole).toString().contains("summed over the plan's stages"));
    QVERIFY(cell(model, 2, M::MeasuredStepColumn, Qt::ToolTipRole).toString().contains("over 2 steps after warm-up"));
    QVERIFY(cell(model, 1, M::StepRatioColumn, Qt::ToolTipRole).toString().contains("slower than predicted"));
    QVERIFY(cell(model, 2, M::CommunicationRatioColumn, Qt::ToolTipRole).toString().contains("faster than predicted"));
    QVERIFY(!model.headerData(M::StepRatioColumn, Qt::Horizontal, Qt::ToolTipRole).toString().isEmpty());
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  void aRankWithoutStepsHasDashes() {
    const MeasuredRun m = loadMeasuredRun(m_path, m_run);
    std::vector<db::StepRecord> steps;
    for (const db::StepRecord& s : m.steps)
      if (s.rank != 1) steps.push_back(s);
    M model;
    model.setRun(*m.plan, m.predicted, steps);
    QCOMPARE(model.rowCount(), 4);
    QCOMPARE(cell(model, 1, M::MeasuredStepColumn).toString(), QStringLiteral("—"));
    QCOMPARE(cell(model, 1, M::StepRatioColumn).toString(), QStringLiteral("—"));
    QVERIFY(cell(model, 1, M::StepRatioColumn, M::ValueRole).isNull());
    QVERIFY(cell(model, 1, M::StepRatioColumn, Qt::ToolTipRole).toString().contains("nothing measured"));
    QVERIFY(cell(model, 1, M::PredictedStepColumn, M::ValueRole).toDouble() > 0);
  }

  void errorsAreValues() {
    MeasuredRun m = loadMeasuredRun(m_path, m_noPlan);
    QVERIFY(!m.ok());
    QVERIFY(!measuredTrace(*m_doc, m));
    QVERIFY2(m.error.contains(QStringLiteral("Run %1 has no stored plan").arg(m_noPlan)), qPrintable(m.error));
    M model;
    model.setRun(m);
    QCOMPARE(model.rowCount(), 0);

    m = loadMeasuredRun(m_path, 999);
    QVERIFY(!m.ok());
    QVERIFY2(m.error.contains(QStringLiteral("No run 999 in %1").arg(m_path)), qPrintable(m.error));

    m = loadMeasuredRun(m_dir.filePath(QStringLiteral("none.db")), 1);
    QVERIFY(!m.ok());
    QVERIFY2(m.error.startsWith(QStringLiteral("No profile store at")), qPrintable(m.error));

    m = loadMeasuredRun(m_path, m_foreign);  // its "plan" is not a plan
    QVERIFY(!m.ok());
    QVERIFY2(m.error.contains(QStringLiteral("stored plan cannot be read")), qPrintable(m.error));

    // Stage records of another plan: the table still compares the steps; the timeline says why not.
    m = loadMeasuredRun(m_path, m_otherStages);
    QVERIFY2(m.ok(), qPrintable(m.error));
    QVERIFY(!m.measured.ok());
    QVERIFY2(QString::fromStdString(m.measured.error).contains("a run of another plan"), m.measured.error.c_str());
    QVERIFY(!measuredTrace(*m_doc, m));
    model.setRun(m);
    QCOMPARE(model.rowCount(), 4);
  }

  void runsOfTheModelNewestFirst() {
    QString error;
    std::vector<RunChoice> all = listRuns(m_path, {}, &error);
    QVERIFY(error.isEmpty());
    QCOMPARE(all.size(), size_t(4));
    QCOMPARE(all.front().id, m_foreign);
    QCOMPARE(all.back().id, m_run);
    QCOMPARE(all.back().text, QStringLiteral("Run %1 · succeeded · 2026-11-26 10:00:00 · factors").arg(m_run));
    std::vector<RunChoice> mine = listRuns(m_path, m_doc->p().modelSha256, &error);
    QCOMPARE(mine.size(), size_t(2));  // not the run without a plan, nor the other model's
    QCOMPARE(mine[0].id, m_otherStages);
    QCOMPARE(mine[1].id, m_run);
    QVERIFY(!mine[1].planSha256.empty());
    QVERIFY(listRuns(m_dir.filePath(QStringLiteral("none.db")), {}, &error).empty());
    QVERIFY(error.isEmpty());  // a missing store is empty, not broken
  }

 private:
  QTemporaryDir m_dir;
  QString m_path;
  std::shared_ptr<const PlanDocument> m_doc, m_other;
  int64_t m_run = 0, m_noPlan = 0, m_otherStages = 0, m_foreign = 0;
};

QTEST_MAIN(TestMeasuredComparisonModel)
#include "tst_measured_comparison_model.moc"
