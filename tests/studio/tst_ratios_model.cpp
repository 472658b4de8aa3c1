// RatiosModel: a plan's per-segment shares as a table, per device and per device group, equal to
// Plan::segments' ratios (a real, uneven plan: BERT-tiny on 2 A100 + 2 P100); the words the Ratios
// view shows about the plan (RatiosSummary).
#include <QAbstractItemModelTester>
#include <QtTest>

#include <cmath>
#include <memory>

#include "app/studio/core/models/ratios_model.h"
#include "app/studio/core/models/ratios_summary.h"
#include "tests/studio/plan_fixture.h"

using namespace hap;
using namespace hap::studio;

class TestRatiosModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    m_doc = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    QVERIFY(m_doc);
    QCOMPARE(m_doc->p().devices.size(), size_t(4));
    QVERIFY(m_doc->p().segments.size() >= 2);
  }

  void emptyWithoutPlan() {
    RatiosModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), 0);
    model.setGrouped(true);
    QCOMPARE(model.columnCount(), 0);
  }

  void perDevice() {
    RatiosModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setPlan(m_doc);
    const plan::Plan& p = m_doc->p();
    QCOMPARE(model.rowCount(), int(p.segments.size()));
    QCOMPARE(model.columnCount(), 1 + int(p.devices.size()));
    QCOMPARE(model.headerData(0, Qt::Horizontal).toString(), QStringLiteral("Segment"));
    for (size_t j = 0; j < p.devices.size(); ++j)
      QCOMPARE(model.headerData(int(j) + 1, Qt::Horizontal).toString(),
               QStringLiteral("rank %1 %2").arg(p.devices[j].rank).arg(QString::fromStdString(p.devices[j].type)));
    QCOMPARE(model.headerData(1, Qt::Horizontal).toString(), QStringLiteral("rank 0 A100-SXM4-40GB"));

    bool uneven = false;
    for (int row = 0; row < model.rowCount(); ++row) {
      const plan::Segment& s = p.segments[size_t(row)];
      QCOMPARE(model.index(row, 0).data().toString(), QString::fromStdString(s.name));
      QCOMPARE(model.index(row, 0).data(RatiosModel::SegmentRole).toInt(), row);
      double sum = 0;
      for (size_t j = 0; j < p.devices.size(); ++j) {
        const QModelIndex cell = model.index(row, int(j) + 1);
        const double share = s.ratios[size_t(p.devices[j].rank)];
        QCOMPARE(cell.data(RatiosModel::ShareRole).toDouble(), share);
        QCOMPARE(cell.data(RatiosModel::DeviceShareRole).toDouble(), share);
        QCOMPARE(cell.data().toString(), QString::number(share * 100, 'f', 1) + QLatin1Char('%'));
        sum += cell.data(RatiosModel::ShareRole).toDouble();
        uneven = uneven || std::abs(share - 0.25) > 1e-3;
      }
      QVERIFY2(std::abs(sum - 1) < 1e-9, qPrintable(QString::number(sum)));
    }
    // The A100s take more than the P100s somewhere: the LP did not split evenly.
    QVERIFY(uneven);
    QCOMPARE(RatiosModel::formatShare(0.375), QStringLiteral("37.5%"));
  }

  void grouped() {
    RatiosModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setPlan(m_doc);
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    model.setGrouped(true);
    QCOMPARE(reset.count(), 1);
    model.setGrouped(true);  // no change, no reset
    QCOMPARE(reset.count(), 1);
    const plan::Plan& p = m_doc->p();
    // Two groups: the A100s and the P100s, each sharing one ratio per segment.
    QCOMPARE(model.columnCount(), 3);
    QCOMPARE(model.headerData(1, Qt::Horizontal).toString(), QStringLiteral("2× A100-SXM4-40GB"));
    QCOMPARE(model.headerData(2, Qt::Horizontal).toString(), QStringLiteral("2× P100-PCIE-16GB"));
    const std::vector<DeviceGroup>& groups = model.columnGroups();
    QCOMPARE(groups.size(), size_t(2));
    QCOMPARE(groups[0].ranks, (std::vector<int>{0, 1}));
    QCOMPARE(groups[1].ranks, (std::vector<int>{2, 3}));
    for (int row = 0; row < model.rowCount(); ++row) {
      const std::vector<double>& r = p.segments[size_t(row)].ratios;
      double sum = 0;
      for (int c = 1; c <= 2; ++c) {
        const DeviceGroup& g = groups[size_t(c - 1)];
        double expected = 0;
        for (int rank : g.ranks) expected += r[size_t(rank)];
        const QModelIndex cell = model.index(row, c);
        QVERIFY(std::abs(cell.data(RatiosModel::ShareRole).toDouble() - expected) < 1e-12);
        QCOMPARE(cell.data(RatiosModel::DeviceShareRole).toDouble(), r[size_t(g.ranks[0])]);
        QCOMPARE(cell.data().toString(), RatiosModel::formatShare(expected));
        sum += expected;
      }
      QVERIFY(std::abs(sum - 1) < 1e-9);
    }
    model.setGrouped(false);
    QCOMPARE(model.columnCount(), 5);
  }

  void groupsNeverMergeDifferentShares() {
    // A plan whose group ids were lost (all 0) still groups by type and equal shares only.
    plan::Plan p = m_doc->p();
    for (plan::PlanDevice& d : p.devices) d.group = 0;
    std::vector<DeviceGroup> groups = deviceGroups(p);
    QCOMPARE(groups.size(), size_t(2));
    QCOMPARE(groups[0].type, std::string("A100-SXM4-40GB"));
    // Different shares on two devices of one type: they become separate columns.
    p.segments[0].ratios[0] += 0.01;
    p.segments[0].ratios[1] -= 0.01;
    groups = deviceGroups(p);
    QCOMPARE(groups.size(), size_t(3));
    QCOMPARE(groups[0].label(), QStringLiteral("rank 0 A100-SXM4-40GB"));
    QCOMPARE(groups[1].label(), QStringLiteral("rank 1 A100-SXM4-40GB"));
    QCOMPARE(groups[2].label(), QStringLiteral("2× P100-PCIE-16GB"));
  }

  void rankRanges() {
    QCOMPARE((DeviceGroup{"V100", {0, 1, 2, 3, 8, 9, 11}}).rankRanges(), QStringLiteral("0–3, 8–9, 11"));
    QCOMPARE((DeviceGroup{"V100", {5}}).rankRanges(), QStringLiteral("5"));
    QCOMPARE((DeviceGroup{"V100", {0, 1, 2, 3, 4, 5, 6, 7}}).label(), QStringLiteral("8× V100"));
  }

  void replacingThePlanResets() {
    RatiosModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setPlan(m_doc);
    model.setGrouped(true);
    model.setPlan(nullptr);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), 0);
    model.setPlan(m_doc);
    QCOMPARE(model.columnCount(), 3);
  }

  // The Ratios view's words (ratios_summary.h): the headline's counts and text, the Memory page's
  // title, the solver counts, from the plan alone.
  void summary() {
    const plan::Plan& p = m_doc->p();
    RatiosSummary s = ratiosSummary(p);
    QCOMPARE(s.segments, int(p.segments.size()));
    QCOMPARE(s.devices, 4);
    QCOMPARE(s.deviceTypes, 2);
    QCOMPARE(s.machines, 1);
    QCOMPARE(s.overCapacity, 0);
    QCOMPARE(s.lpSolves, p.lpSolves);
    QCOMPARE(s.milpSolves, 0);
    QCOMPARE(s.policy, QStringLiteral("Ratios by LP"));
    QCOMPARE(s.headline(), QStringLiteral("<b>Ratios by LP</b> · segmentation <i>%1</i> · %2 segments on 4 "
                                          "devices of 2 types")
                               .arg(QString::fromStdString(p.segmentation))
                               .arg(p.segments.size()));
    QCOMPARE(s.memoryPageTitle(), QStringLiteral("Memory per device"));
    QCOMPARE(s.solves(),
             QStringLiteral("%1 LP solve%2, %3 ms")
                 .arg(p.lpSolves)
                 .arg(p.lpSolves == 1 ? "" : "s")
                 .arg(p.lpSeconds * 1e3, 0, 'f', 1));

    // Whole lengths by MILP; devices over their capacity.
    plan::Plan q = p;
    q.ratioPolicy = "milp";
    q.milpSolves = 1;
    q.milpSeconds = 0.25;
    q.lpSolves = 3;
    q.lpSeconds = 0.0012;
    q.devices[1].memoryBytes = q.devices[1].capacityBytes * 2;
    s = ratiosSummary(q);
    QCOMPARE(s.policy, QStringLiteral("Whole lengths by MILP"));
    QCOMPARE(s.overCapacity, 1);
    QVERIFY2(s.headline().contains(QStringLiteral("<b>1 device does not fit in memory</b>")), qPrintable(s.headline()));
    QCOMPARE(s.memoryPageTitle(), QStringLiteral("Memory per device (1 does not fit)"));
    QCOMPARE(s.solves(), QStringLiteral("3 LP solves, 1.2 ms; 1 MILP solve, 250.0 ms"));
    q.devices[3].memoryBytes = q.devices[3].capacityBytes + 1;
    s = ratiosSummary(q);
    QCOMPARE(s.overCapacity, 2);
    QVERIFY2(s.headline().contains(QStringLiteral("<b>2 devices do not fit in memory</b>")), qPrintable(s.headline()));
    QCOMPARE(s.memoryPageTitle(), QStringLiteral("Memory per device (2 do not fit)"));
    QVERIFY(!s.headline().contains(QStringLiteral("replicated")));
    // One machine's program replicated on 2 machines.
    q.replication.machines = 2;
    s = ratiosSummary(q);
    QCOMPARE(s.machines, 2);
    QVERIFY2(s.headline().contains(QStringLiteral(" (one machine's program, replicated on 2 machines)")),
             qPrintable(s.headline()));
    q.ratioPolicy = "even";
    QCOMPARE(ratiosSummary(q).policy, QStringLiteral("Ratios: even"));
  }

 private:
  std::shared_ptr<const PlanDocument> m_doc;
};

QTEST_MAIN(TestRatiosModel)
#include "tst_ratios_model.moc"
