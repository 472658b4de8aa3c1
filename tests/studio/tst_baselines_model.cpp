// BaselinesModel: the plan against DP-EV, DP-CP, FSDP and Megatron with the figures `hap compare`
// prints (time, max memory, fits, speedup = baseline time / HAP time), from the plan's own
// Estimate and Plan::baselines.
#include <QAbstractItemModelTester>
#include <QtTest>

#include <cmath>
#include <memory>

#include "app/studio/core/models/baselines_model.h"
#include "app/studio/core/models/memory_model.h"
#include "engine/ir/summary.h"
#include "tests/studio/plan_fixture.h"
#include "tests/studio/view_helpers.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::cell;
using hap::studio::testing::bytes;

class TestBaselinesModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    m_doc = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    // dp-ev, dp-cp, fsdp (and megatron where the planner priced it), in `hap compare`'s order.
    const std::vector<plan::Plan::Baseline>& b = m_doc->p().baselines;
    QVERIFY(b.size() >= 3);
    for (size_t i = 0; i < b.size(); ++i) QCOMPARE(b[i].name, plan::baselineNames()[i]);
  }

  void emptyWithoutPlan() {
    BaselinesModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(!model.estimate(0));
    QVERIFY(!model.openable(1));
  }

  void figuresOfThePlan() {
    BaselinesModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setPlan(m_doc);
    const plan::Plan& p = m_doc->p();
    QCOMPARE(model.rowCount(), 1 + int(p.baselines.size()));
    QCOMPARE(model.columnCount(), int(BaselinesModel::ColumnCount));

    // Row 0: the plan itself, as `hap compare` names and describes it.
    QCOMPARE(cell(model, 0, BaselinesModel::NameColumn).toString(), QStringLiteral("HAP"));
    QVERIFY(cell(model, 0, 0, BaselinesModel::IsPlanRole).toBool());
    QCOMPARE(cell(model, 0, 0, BaselinesModel::BaselineNameRole).toString(), QString());
    QCOMPARE(cell(model, 0, BaselinesModel::NoteColumn).toString(),
             QStringLiteral("%1 segments, ratios by LP").arg(p.segments.size()));
    QCOMPARE(cell(model, 0, BaselinesModel::SpeedupColumn).toString(), QStringLiteral("1.00×"));
    QVERIFY(!model.openable(0));

    const QStringList names{QStringLiteral("DP-EV"), QStringLiteral("DP-CP"), QStringLiteral("FSDP"),
                            QStringLiteral("Megatron")};  // plan::baselineNames() as the CLI shows them
    for (int row = 0; row < model.rowCount(); ++row) {
      const plan::Estimate& e = row == 0 ? p.estimate : p.baselines[size_t(row - 1)].estimate;
      const bool applicable = row == 0 || p.baselines[size_t(row - 1)].applicable;
      QCOMPARE(cell(model, row, 0, BaselinesModel::ApplicableRole).toBool(), applicable);
      if (row > 0) {
        const plan::Plan::Baseline& b = p.baselines[size_t(row - 1)];
        QCOMPARE(cell(model, row, BaselinesModel::NameColumn).toString(), names[row - 1]);
        QCOMPARE(cell(model, row, 0, BaselinesModel::BaselineNameRole).toString(), QString::fromStdString(b.name));
        QCOMPARE(cell(model, row, BaselinesModel::NoteColumn).toString(), QString::fromStdString(b.note));
        QCOMPARE(model.openable(row), b.applicable);
      }
      if (!applicable) {
        for (int c : {BaselinesModel::TimeColumn, BaselinesModel::MemoryColumn, BaselinesModel::FitsColumn,
                      BaselinesModel::SpeedupColumn}) {
          QCOMPARE(cell(model, row, c).toString(), QStringLiteral("—"));
          QVERIFY(!cell(model, row, c, BaselinesModel::ValueRole).isValid());
        }
        QVERIFY(!cell(model, row, BaselinesModel::NoteColumn).toString().isEmpty());  // why not
        continue;
      }
      QCOMPARE(cell(model, row, BaselinesModel::TimeColumn, BaselinesModel::ValueRole).toDouble(), e.iterationSeconds);
      QCOMPARE(cell(model, row, BaselinesModel::TimeColumn).toString(),
               QString::asprintf("%.3f ms", e.iterationSeconds * 1e3));
      QCOMPARE(cell(model, row, BaselinesModel::MemoryColumn, BaselinesModel::ValueRole).toDouble(), e.maxMemoryBytes());
      QCOMPARE(cell(model, row, BaselinesModel::MemoryColumn).toString(), bytes(e.maxMemoryBytes()));
      QCOMPARE(cell(model, row, BaselinesModel::FitsColumn, BaselinesModel::ValueRole).toBool(), e.fits);
      QCOMPARE(cell(model, row, BaselinesModel::FitsColumn).toString(),
               e.fits ? QStringLiteral("yes") : QStringLiteral("does not fit"));
      const double speedup = e.iterationSeconds / p.estimate.iterationSeconds;
      QCOMPARE(cell(model, row, BaselinesModel::SpeedupColumn, BaselinesModel::ValueRole).toDouble(), speedup);
      QCOMPARE(cell(model, row, BaselinesModel::SpeedupColumn).toString(), QString::asprintf("%.2f×", speedup));
    }
    // The data-parallel baselines apply to BERT on any cluster, and HAP's search includes them:
    // it is at least as fast as each.
    for (int row = 1; row <= 2; ++row) {
      QVERIFY(model.applicable(row));
      QVERIFY(cell(model, row, BaselinesModel::SpeedupColumn, BaselinesModel::ValueRole).toDouble() >= 1 - 1e-9);
    }
    QCOMPARE(model.baselineName(2), QStringLiteral("dp-cp"));
  }

  void misfitAndNotApplicable() {
    plan::Plan p = m_doc->p();
    p.baselines[0].estimate.fits = false;
    const int last = int(p.baselines.size());  // the last baseline's row
    p.baselines.back().applicable = false;
    p.baselines.back().note = "no attention or FFN linears to split";
    auto doc = makePlanDocument(std::move(p), m_doc->imported, "", "edited");
    BaselinesModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setPlan(doc);
    QCOMPARE(cell(model, 1, BaselinesModel::FitsColumn).toString(), QStringLiteral("does not fit"));
    QCOMPARE(qvariant_cast<QColor>(cell(model, 1, BaselinesModel::FitsColumn, Qt::ForegroundRole)),
             MemoryModel::overCapacityForeground());
    QVERIFY(model.openable(1));  // it can still be opened and looked at
    QCOMPARE(cell(model, last, BaselinesModel::TimeColumn).toString(), QStringLiteral("—"));
    QCOMPARE(cell(model, last, BaselinesModel::SpeedupColumn).toString(), QStringLiteral("—"));
    QCOMPARE(cell(model, last, BaselinesModel::NoteColumn).toString(), QStringLiteral("no attention or FFN linears to split"));
    QVERIFY(!model.openable(last));
    model.setPlan(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }

 private:
  std::shared_ptr<const PlanDocument> m_doc;
};

QTEST_MAIN(TestBaselinesModel)
#include "tst_baselines_model.moc"
