// PlanHistoryModel: the session's plans, newest last, each once; its columns show each plan's
// request (or, for a plan file, the plan's own policy and segmentation) and figures.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>

#include <memory>

#include "app/studio/core/models/plan_history_model.h"
#include "engine/ir/summary.h"
#include "tests/studio/plan_fixture.h"

using namespace hap;
using namespace hap::studio;

namespace {

QString cell(const QAbstractItemModel& m, int row, int column) { return m.index(row, column).data().toString(); }

}  // namespace

class TestPlanHistoryModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    m_default = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    plan::PlanRequest even;
    even.ratios = "even";
    even.segments = "none";
    m_even = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml", even);
    // As opened from a file: no request; the columns come from the plan itself.
    m_file = makePlanDocument(m_default->p(), m_default->imported, "/tmp/plan.json", "plan.json");
  }

  void addAndFind() {
    PlanHistoryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), int(PlanHistoryModel::ColumnCount));
    QCOMPARE(model.add(m_default), 0);
    QCOMPARE(model.add(m_even), 1);
    QCOMPARE(model.add(m_file), 2);
    QCOMPARE(inserted.count(), 3);
    QCOMPARE(model.add(m_even), 1);  // held once
    QCOMPARE(model.add(nullptr), -1);
    QCOMPARE(inserted.count(), 3);
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.plan(0), m_default);
    QCOMPARE(model.plan(2), m_file);
    QVERIFY(!model.plan(3));
    QVERIFY(!model.plan(-1));
    QCOMPARE(model.indexOf(m_even), 1);
    QCOMPARE(model.indexOf(m_even.get()), 1);
    QCOMPARE(model.indexOf(std::shared_ptr<const PlanDocument>()), -1);
    const auto held = model.index(1, 0).data(PlanHistoryModel::PlanRole).value<std::shared_ptr<const PlanDocument>>();
    QCOMPARE(held, m_even);
    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.indexOf(m_even), -1);
  }

  void columnsShowThePlans() {
    PlanHistoryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.add(m_default);
    model.add(m_even);
    model.add(m_file);
    for (int row = 0; row < 3; ++row) {
      const plan::Plan& p = model.plan(row)->p();
      QCOMPARE(cell(model, row, PlanHistoryModel::LabelColumn), QString::fromStdString(model.plan(row)->label));
      QCOMPARE(cell(model, row, PlanHistoryModel::StrategyColumn), QStringLiteral("hap"));
      QCOMPARE(cell(model, row, PlanHistoryModel::IterationColumn),
               QStringLiteral("%1 ms").arg(p.estimate.iterationSeconds * 1e3, 0, 'f', 3));
      QCOMPARE(model.index(row, PlanHistoryModel::IterationColumn).data(PlanHistoryModel::SortRole).toDouble(),
               p.estimate.iterationSeconds);
      QCOMPARE(cell(model, row, PlanHistoryModel::MemoryColumn),
               QString::fromStdString(ir::formatBytes(int64_t(p.estimate.maxMemoryBytes()))));
      QCOMPARE(model.index(row, PlanHistoryModel::MemoryColumn).data(PlanHistoryModel::SortRole).toDouble(),
               p.estimate.maxMemoryBytes());
      QCOMPARE(cell(model, row, PlanHistoryModel::FitsColumn), p.estimate.fits ? QStringLiteral("yes") : QStringLiteral("NO"));
      QCOMPARE(cell(model, row, PlanHistoryModel::OptimalColumn), p.provenOptimal ? QStringLiteral("yes") : QStringLiteral("no"));
    }
    // From the request: ratios and the effective segments.
    QCOMPARE(cell(model, 0, PlanHistoryModel::RatiosColumn), QStringLiteral("lp"));
    QCOMPARE(cell(model, 0, PlanHistoryModel::SegmentsColumn), QStringLiteral("layer"));
    QCOMPARE(cell(model, 1, PlanHistoryModel::RatiosColumn), QStringLiteral("even"));
    QCOMPARE(cell(model, 1, PlanHistoryModel::SegmentsColumn), QStringLiteral("none"));
    QCOMPARE(m_even->p().segments.size(), size_t(1));
    // A plan file: the plan's own policy and segmentation.
    QVERIFY(!m_file->request);
    QCOMPARE(cell(model, 2, PlanHistoryModel::RatiosColumn), QString::fromStdString(m_file->p().ratioPolicy));
    QCOMPARE(cell(model, 2, PlanHistoryModel::SegmentsColumn), QString::fromStdString(m_file->p().segmentation));
    QCOMPARE(cell(model, 2, PlanHistoryModel::RatiosColumn), QStringLiteral("lp"));
  }

 private:
  std::shared_ptr<const PlanDocument> m_default, m_even, m_file;
};

QTEST_MAIN(TestPlanHistoryModel)
#include "tst_plan_history_model.moc"
