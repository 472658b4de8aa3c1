// MemoryModel: each device's predicted memory by kind against its capacity, equal to the plan's
// PlanDevice figures; a device over capacity is red and "does not fit"; a plan without a recorded
// breakdown shows totals only.
#include <QAbstractItemModelTester>
#include <QColor>
#include <QtTest>

#include <cmath>
#include <memory>

#include "app/studio/core/models/memory_model.h"
#include "engine/ir/summary.h"
#include "tests/studio/plan_fixture.h"
#include "tests/studio/view_helpers.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::cell;
using hap::studio::testing::bytes;

class TestMemoryModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { m_doc = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml"); }

  void emptyWithoutPlan() {
    MemoryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), int(MemoryModel::ColumnCount));
    QVERIFY(!model.breakdownRecorded());
    QCOMPARE(model.overCapacity(), 0);
  }

  void figuresOfThePlan() {
    MemoryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setPlan(m_doc);
    const plan::Plan& p = m_doc->p();
    QCOMPARE(model.rowCount(), int(p.devices.size()));
    QVERIFY(model.breakdownRecorded());
    QCOMPARE(model.overCapacity(), 0);
    QCOMPARE(model.headerData(MemoryModel::OptimizerColumn, Qt::Horizontal).toString(), QStringLiteral("Optimizer state"));
    for (int row = 0; row < model.rowCount(); ++row) {
      const plan::PlanDevice& d = p.devices[size_t(row)];
      QCOMPARE(cell(model, row, MemoryModel::RankColumn).toInt(), d.rank);
      QCOMPARE(cell(model, row, MemoryModel::TypeColumn).toString(), QString::fromStdString(d.type));
      const std::pair<int, double> kinds[] = {{MemoryModel::ParametersColumn, d.memory.parameters},
                                              {MemoryModel::GradientsColumn, d.memory.gradients},
                                              {MemoryModel::OptimizerColumn, d.memory.optimizer},
                                              {MemoryModel::ActivationsColumn, d.memory.activations},
                                              {MemoryModel::OtherColumn, d.memory.other}};
      for (const auto& [column, value] : kinds) {
        QCOMPARE(cell(model, row, column, MemoryModel::ValueRole).toDouble(), value);
        QCOMPARE(cell(model, row, column).toString(), bytes(value));
      }
      QVERIFY(d.memory.parameters > 0 && d.memory.activations > 0);
      // The breakdown adds up to the device's total, as memory.h promises.
      QVERIFY(std::abs(d.memory.total() - d.memoryBytes) <= 1e-6 * d.memoryBytes);
      QCOMPARE(cell(model, row, MemoryModel::TotalColumn, MemoryModel::ValueRole).toDouble(), d.memoryBytes);
      QCOMPARE(cell(model, row, MemoryModel::TotalColumn).toString(), bytes(d.memoryBytes));
      QCOMPARE(cell(model, row, MemoryModel::CapacityColumn, MemoryModel::ValueRole).toDouble(), d.capacityBytes);
      QCOMPARE(cell(model, row, MemoryModel::CapacityColumn).toString(), bytes(d.capacityBytes));
      QCOMPARE(cell(model, row, MemoryModel::FitsColumn).toString(), QStringLiteral("yes"));
      QVERIFY(cell(model, row, 0, MemoryModel::FitsRole).toBool());
      QVERIFY(!cell(model, row, MemoryModel::TotalColumn, Qt::BackgroundRole).isValid());
      // Per-device memory equals the estimate's.
      QCOMPARE(d.memoryBytes, p.estimate.memoryBytes[size_t(d.rank)]);
    }
    QCOMPARE(bytes(40.0 * (1 << 30)), QStringLiteral("40.0 GiB"));
  }

  void overCapacityIsRed() {
    plan::Plan p = m_doc->p();
    p.devices[2].capacityBytes = p.devices[2].memoryBytes / 2;  // a P100 with too little memory
    auto doc = makePlanDocument(std::move(p), m_doc->imported, "", "small P100");
    MemoryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setPlan(doc);
    QCOMPARE(model.overCapacity(), 1);
    for (int row = 0; row < model.rowCount(); ++row) {
      const bool over = row == 2;
      QCOMPARE(cell(model, row, 0, MemoryModel::FitsRole).toBool(), !over);
      QCOMPARE(cell(model, row, MemoryModel::FitsColumn).toString(), over ? QStringLiteral("does not fit") : QStringLiteral("yes"));
      QCOMPARE(cell(model, row, MemoryModel::FitsColumn, MemoryModel::ValueRole).toBool(), !over);
      for (int column = 0; column < MemoryModel::ColumnCount; ++column) {
        const QVariant background = cell(model, row, column, Qt::BackgroundRole);
        const QVariant foreground = cell(model, row, column, Qt::ForegroundRole);
        if (over) {
          QCOMPARE(qvariant_cast<QColor>(background), MemoryModel::overCapacityBackground());
          QCOMPARE(qvariant_cast<QColor>(foreground), MemoryModel::overCapacityForeground());
          const QColor red = qvariant_cast<QColor>(foreground);
          QVERIFY(red.red() > 2 * red.green() && red.red() > 2 * red.blue());
        } else {
          QVERIFY(!background.isValid());
        }
      }
    }
    QVERIFY(cell(model, 2, MemoryModel::TotalColumn, Qt::ToolTipRole).toString().contains(QStringLiteral("over capacity")));
  }

  void breakdownNotRecorded() {
    plan::Plan p = m_doc->p();
    for (plan::PlanDevice& d : p.devices) d.memory = {};
    auto doc = makePlanDocument(std::move(p), m_doc->imported, "", "old plan");
    MemoryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setPlan(doc);
    QVERIFY(!model.breakdownRecorded());
    for (int row = 0; row < model.rowCount(); ++row) {
      for (int column = MemoryModel::ParametersColumn; column <= MemoryModel::OtherColumn; ++column) {
        QCOMPARE(cell(model, row, column).toString(), QStringLiteral("—"));
        QVERIFY(!cell(model, row, column, MemoryModel::ValueRole).isValid());
        QCOMPARE(cell(model, row, column, Qt::ToolTipRole).toString(), QStringLiteral("Breakdown not recorded in this plan"));
      }
      QCOMPARE(cell(model, row, MemoryModel::TotalColumn).toString(), bytes(doc->p().devices[size_t(row)].memoryBytes));
      QCOMPARE(cell(model, row, MemoryModel::CapacityColumn).toString(), bytes(doc->p().devices[size_t(row)].capacityBytes));
    }
  }

  void identicalRows() {
    MemoryModel model;
    model.setPlan(m_doc);
    const std::vector<std::vector<int>> groups = model.identicalRows();
    std::vector<int> seen;
    for (const std::vector<int>& g : groups) {
      const plan::PlanDevice& first = model.devices()[size_t(g.front())];
      for (int row : g) {
        const plan::PlanDevice& d = model.devices()[size_t(row)];
        QCOMPARE(d.type, first.type);
        QCOMPARE(d.memoryBytes, first.memoryBytes);
        QCOMPARE(d.capacityBytes, first.capacityBytes);
        seen.push_back(row);
      }
    }
    std::sort(seen.begin(), seen.end());
    QCOMPARE(seen, (std::vector<int>{0, 1, 2, 3}));
    // An A100 and a P100 never share a bar.
    QVERIFY(groups.size() >= 2);
  }

 private:
  std::shared_ptr<const PlanDocument> m_doc;
};

QTEST_MAIN(TestMemoryModel)
#include "tst_memory_model.moc"
