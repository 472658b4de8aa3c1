// The Ratios and Baselines views filled from real plans (offscreen): the charts hold the plan's
// figures, clicks on bars and rows emit what the main window follows, a device over capacity is
// red, and a baseline opens as a plan. Saves screenshots to /tmp/shots/ (or $HAP_SHOTS_DIR).
#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLineSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <QtTest>

#include <cmath>
#include <memory>

#include "app/studio/widgets/baselines_view.h"
#include "app/studio/widgets/ratios_view.h"
#include "tests/studio/plan_fixture.h"
#include "tests/studio/view_helpers.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::saveShot;

namespace {

// Where `value` (in `series`' axes) lies in `view`'s viewport.
QPoint chartPoint(QChartView* view, QAbstractSeries* series, QPointF value) {
  QChart* chart = view->chart();
  return view->mapFromScene(chart->mapToScene(chart->mapToPosition(value, series)));
}

void clickCell(QTableView& view, const QModelIndex& index, bool twice = false) {
  view.scrollTo(index);
  const QRect rect = view.visualRect(index);
  QVERIFY(rect.isValid());
  QTest::mouseClick(view.viewport(), Qt::LeftButton, Qt::NoModifier, rect.center());
  // A double-click is a click, then the double-click event (QTest sends only the latter).
  if (twice) QTest::mouseDClick(view.viewport(), Qt::LeftButton, Qt::NoModifier, rect.center());
}

// A red of some lightness: hue near 0°, clearly saturated (not orange, not grey).
bool reddish(const QColor& c) {
  return (c.hsvHue() >= 0 && (c.hsvHue() <= 12 || c.hsvHue() >= 348)) && c.hsvSaturationF() > 0.35;
}

int baselineRow(const BaselinesModel& m, const QString& name) {
  for (int row = 0; row < m.rowCount(); ++row)
    if (m.index(row, 0).data(BaselinesModel::BaselineNameRole).toString() == name) return row;
  return -1;
}

}  // namespace

class TestPlanChartsGui : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { m_doc = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml"); }

  void emptyViews() {
    RatiosView ratios;
    QVERIFY(!ratios.ratiosSeries());
    QCOMPARE(ratios.ratiosModel()->rowCount(), 0);
    BaselinesView baselines;
    QVERIFY(!baselines.series());
    QVERIFY(!baselines.openButton()->isEnabled());
  }

  void ratiosChartHoldsTheShares() {
    RatiosView view;
    view.resize(1200, 700);
    view.setPlan(m_doc);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const plan::Plan& p = m_doc->p();
    const int segments = int(p.segments.size());

    // One set per device (4 devices: not grouped), one bar per segment, values in percent.
    QVERIFY(!view.groupSharesBox()->isChecked());
    QHorizontalStackedBarSeries* series = view.ratiosSeries();
    QVERIFY(series);
    QCOMPARE(series->count(), int(p.devices.size()));
    for (int j = 0; j < series->count(); ++j) {
      QBarSet* set = series->barSets()[j];
      QCOMPARE(set->count(), segments);
      for (int bar = 0; bar < segments; ++bar) {
        const int segment = view.segmentOfBar(bar);
        QVERIFY(std::abs(set->at(bar) - p.segments[size_t(segment)].ratios[size_t(j)] * 100) < 1e-9);
      }
    }
    // The first segment is the top bar.
    auto* axis = qobject_cast<QBarCategoryAxis*>(view.ratiosChart()->axes(Qt::Vertical).value(0));
    QVERIFY(axis);
    QCOMPARE(axis->categories().size(), segments);
    QCOMPARE(axis->categories().last(), QString::fromStdString(p.segments[0].name));
    QCOMPARE(view.segmentOfBar(segments - 1), 0);

    // Clicking segment 1's bar (inside rank 0's part) emits it and selects its table row.
    QSignalSpy activated(&view, &RatiosView::segmentActivated);
    const int bar = segments - 1 - 1;
    const QPoint at = chartPoint(view.ratiosChartView(), series, QPointF(series->barSets()[0]->at(bar) / 2, bar));
    QTest::mouseClick(view.ratiosChartView()->viewport(), Qt::LeftButton, Qt::NoModifier, at);
    QCOMPARE(activated.count(), 1);
    QCOMPARE(activated.takeFirst().at(0).toInt(), 1);
    QCOMPARE(view.ratiosTable()->currentIndex().row(), 1);

    // Clicking a table row emits its segment.
    clickCell(*view.ratiosTable(), view.ratiosModel()->index(0, 2));
    QCOMPARE(activated.count(), 1);
    QCOMPARE(activated.takeFirst().at(0).toInt(), 0);
    // selectSegment from outside does not echo.
    view.selectSegment(segments - 1);
    QCOMPARE(view.ratiosTable()->currentIndex().row(), segments - 1);
    QCOMPARE(activated.count(), 0);

    // The alternation history: one point per step, in milliseconds; the note when there is one.
    QVERIFY(!p.history.empty());
    QLineSeries* history = view.historySeries();
    QVERIFY(history);
    QCOMPARE(history->count(), int(p.history.size()));
    for (int i = 0; i < history->count(); ++i) {
      QCOMPARE(history->at(i).x(), double(i + 1));
      QVERIFY(std::abs(history->at(i).y() - p.history[size_t(i)].seconds * 1e3) < 1e-9);
    }
    QCOMPARE(view.balanceNoteLabel()->isVisible(), !p.balanceNote.empty());
    saveShot(view, QStringLiteral("ratios-shares"));

    // Grouping the devices: two sets (A100s, P100s) holding each group's total share.
    view.groupSharesBox()->click();
    series = view.ratiosSeries();
    QCOMPARE(series->count(), 2);
    QCOMPARE(series->barSets()[0]->label(), QStringLiteral("2× A100-SXM4-40GB"));
    for (int b = 0; b < segments; ++b) {
      const std::vector<double>& r = p.segments[size_t(view.segmentOfBar(b))].ratios;
      QVERIFY(std::abs(series->barSets()[1]->at(b) - (r[2] + r[3]) * 100) < 1e-9);
    }
    QCOMPARE(view.ratiosModel()->columnCount(), 3);
  }

  void memoryChartHoldsTheBreakdown() {
    RatiosView view;
    view.resize(1200, 700);
    view.setPlan(m_doc);
    view.pages()->setCurrentIndex(1);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const std::vector<plan::PlanDevice>& devices = m_doc->p().devices;
    QStackedBarSeries* series = view.memorySeries();
    QVERIFY(series);
    QCOMPARE(series->count(), 5);  // parameters, gradients, optimizer, activations, other
    QCOMPARE(view.memoryBarRows().size(), devices.size());
    const double unit = view.memoryUnitBytes();
    for (int bar = 0; bar < int(devices.size()); ++bar) {
      const plan::PlanDevice& d = devices[size_t(bar)];
      const double expected[] = {d.memory.parameters, d.memory.gradients, d.memory.optimizer, d.memory.activations,
                                 d.memory.other};
      double sum = 0;
      for (int k = 0; k < 5; ++k) {
        QVERIFY(std::abs(series->barSets()[k]->at(bar) * unit - expected[k]) <= 1e-6 * d.memoryBytes);
        QVERIFY(!series->barSets()[k]->isBarSelected(bar));  // fits: not red
        sum += series->barSets()[k]->at(bar);
      }
      QVERIFY(std::abs(sum * unit - d.memoryBytes) <= 1e-6 * d.memoryBytes);
      // A capacity line crosses the bar at the device's capacity.
      int crossing = 0;
      for (QLineSeries* line : view.capacitySeries())
        if (line->at(0).x() < bar && bar < line->at(1).x()) {
          ++crossing;
          QCOMPARE(line->at(0).y() * unit, d.capacityBytes);
          QCOMPARE(line->at(1).y(), line->at(0).y());
        }
      QCOMPARE(crossing, 1);
    }
    QCOMPARE(view.memoryModel()->overCapacity(), 0);
    saveShot(view, QStringLiteral("ratios-memory"));
    // Scaled to capacity, the axis reaches the largest capacity.
    QVERIFY(!view.scaleToCapacityBox()->isChecked());
    view.scaleToCapacityBox()->click();
    auto* axis = qobject_cast<QValueAxis*>(view.memoryChart()->axes(Qt::Vertical).value(0));
    QVERIFY(axis);
    QVERIFY(axis->max() * view.memoryUnitBytes() >= devices[0].capacityBytes);
    saveShot(view, QStringLiteral("ratios-memory-capacity"));
  }

  void deviceOverCapacityIsRed() {
    plan::Plan p = m_doc->p();
    p.devices[3].capacityBytes = p.devices[3].memoryBytes * 0.6;
    auto doc = makePlanDocument(std::move(p), m_doc->imported, "", "small P100");
    RatiosView view;
    view.resize(1200, 700);
    view.setPlan(doc);
    view.pages()->setCurrentIndex(1);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.memoryModel()->overCapacity(), 1);
    // Table: the row is red and says so.
    const QModelIndex fits = view.memoryModel()->index(3, MemoryModel::FitsColumn);
    QCOMPARE(fits.data().toString(), QStringLiteral("does not fit"));
    QVERIFY(reddish(qvariant_cast<QColor>(fits.data(Qt::ForegroundRole))));
    QCOMPARE(qvariant_cast<QColor>(view.memoryModel()->index(3, 0).data(Qt::BackgroundRole)),
             MemoryModel::overCapacityBackground());
    // Chart: the device's bar is drawn in reds, the others are not; the capacity line shows.
    QStackedBarSeries* series = view.memorySeries();
    for (QBarSet* set : series->barSets()) {
      QCOMPARE(set->selectedBars(), QList<int>{3});
      QVERIFY(reddish(set->selectedColor()));
      QVERIFY(!reddish(set->color()));
    }
    // The capacity of the device that does not fit is within the axis, under the top of its bar.
    auto* axis = qobject_cast<QValueAxis*>(view.memoryChart()->axes(Qt::Vertical).value(0));
    QVERIFY(axis);
    QVERIFY(doc->p().devices[3].capacityBytes / view.memoryUnitBytes() < axis->max());
    QVERIFY(view.pages()->tabText(1).contains(QStringLiteral("does not fit")));
    QVERIFY(view.memoryNoteLabel()->isVisible());
    saveShot(view, QStringLiteral("ratios-memory-over-capacity"));
  }

  void breakdownNotRecorded() {
    plan::Plan p = m_doc->p();
    for (plan::PlanDevice& d : p.devices) d.memory = {};
    auto doc = makePlanDocument(std::move(p), m_doc->imported, "", "old plan");
    RatiosView view;
    view.setPlan(doc);
    QCOMPARE(view.memorySeries()->count(), 1);
    for (int bar = 0; bar < 4; ++bar)
      QVERIFY(std::abs(view.memorySeries()->barSets()[0]->at(bar) * view.memoryUnitBytes() -
                       doc->p().devices[size_t(bar)].memoryBytes) < 1);
    QVERIFY(view.memoryNoteLabel()->text().contains(QStringLiteral("Breakdown not recorded in this plan")));
    view.clear();
    QVERIFY(!view.memorySeries());
    QCOMPARE(view.memoryModel()->rowCount(), 0);
  }

  void baselinesChartAndOpenAsPlan() {
    BaselinesView view;
    view.resize(1200, 700);
    view.setPlan(m_doc);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const plan::Plan& p = m_doc->p();
    BaselinesModel* model = view.model();
    QCOMPARE(model->rowCount(), 1 + int(p.baselines.size()));

    // The chart: one bar per applicable row, its time in ms in exactly one set; HAP is the top
    // bar and the only one in the first set.
    QHorizontalStackedBarSeries* series = view.series();
    QVERIFY(series);
    QCOMPARE(series->count(), 3);
    const std::vector<int>& rows = view.chartRows();
    int applicable = 0;
    for (int row = 0; row < model->rowCount(); ++row) applicable += model->applicable(row);
    QCOMPARE(int(rows.size()), applicable);
    QCOMPARE(rows.back(), 0);
    for (int bar = 0; bar < int(rows.size()); ++bar) {
      const plan::Estimate& e = *model->estimate(rows[size_t(bar)]);
      int nonZero = 0;
      double sum = 0;
      for (QBarSet* set : series->barSets()) {
        nonZero += set->at(bar) != 0;
        sum += set->at(bar);
      }
      QCOMPARE(nonZero, 1);
      QVERIFY(std::abs(sum - e.iterationSeconds * 1e3) < 1e-9);
      QCOMPARE(series->barSets()[0]->at(bar) != 0, rows[size_t(bar)] == 0);
      QCOMPARE(series->barSets()[2]->at(bar) != 0, rows[size_t(bar)] != 0 && !e.fits);
    }
    QVERIFY(view.headline()->text().contains(QStringLiteral("HAP")));

    QSignalSpy open(&view, &BaselinesView::openBaselineRequested);
    // The plan's own row cannot be opened.
    clickCell(*view.table(), model->index(0, BaselinesModel::NameColumn));
    QVERIFY(!view.openButton()->isEnabled());
    QTest::mouseClick(view.openButton(), Qt::LeftButton);
    QCOMPARE(open.count(), 0);
    // DP-CP: select its row, then the button.
    const int dpcp = baselineRow(*model, QStringLiteral("dp-cp"));
    QVERIFY(dpcp > 0);
    clickCell(*view.table(), model->index(dpcp, BaselinesModel::TimeColumn));
    QVERIFY(view.openButton()->isEnabled());
    QCOMPARE(view.openButton()->text(), QStringLiteral("&Open as Plan"));
    QVERIFY(view.openButton()->toolTip().contains(QStringLiteral("--baseline dp-cp")));
    saveShot(view, QStringLiteral("baselines"));
    QTest::mouseClick(view.openButton(), Qt::LeftButton);
    QCOMPARE(open.count(), 1);
    QCOMPARE(open.takeFirst().at(0).toString(), QStringLiteral("dp-cp"));
    // A double-click on DP-EV's row opens it too.
    clickCell(*view.table(), model->index(baselineRow(*model, QStringLiteral("dp-ev")), BaselinesModel::NoteColumn), true);
    QCOMPARE(open.count(), 1);
    QCOMPARE(open.takeFirst().at(0).toString(), QStringLiteral("dp-ev"));

    view.clear();
    QVERIFY(!view.series());
    QVERIFY(!view.openButton()->isEnabled());
  }

  void baselinesNotApplicableAndMisfit() {
    plan::Plan p = m_doc->p();
    p.baselines[0].estimate.fits = false;  // DP-EV
    const int last = int(p.baselines.size());  // the last baseline's row
    p.baselines.back().applicable = false;
    p.baselines.back().note = "the model has no attention or FFN linears to split";
    auto doc = makePlanDocument(std::move(p), m_doc->imported, "", "edited");
    BaselinesView view;
    view.resize(1200, 700);
    view.setPlan(doc);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(int(view.chartRows().size()), last);  // the last baseline left out of the chart
    const auto rows = view.chartRows();
    QVERIFY(std::find(rows.begin(), rows.end(), last) == rows.end());
    // DP-EV's bar is in the "does not fit" set.
    const int bar = int(std::find(rows.begin(), rows.end(), 1) - rows.begin());
    QVERIFY(view.series()->barSets()[2]->at(bar) > 0);
    QVERIFY(reddish(view.series()->barSets()[2]->color()));
    // Megatron's row keeps its reason and cannot be opened.
    clickCell(*view.table(), view.model()->index(last, BaselinesModel::NameColumn));
    QVERIFY(!view.openButton()->isEnabled());
    saveShot(view, QStringLiteral("baselines-misfit"));
  }

  void sixtyFourDevices() {
    plan::PlanRequest request;
    request.baselines = true;
    QElapsedTimer timer;
    timer.start();
    auto doc = testing::planZoo("bert-tiny.pt", "paper-testbed-64.yaml", request);
    qInfo("planned bert-tiny on 64 devices in %lld ms", timer.elapsed());
    const plan::Plan& p = doc->p();
    RatiosView view;
    view.resize(1200, 700);
    view.setPlan(doc);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    // Many devices: one set and one column per device group.
    const std::vector<DeviceGroup> groups = deviceGroups(p);
    QVERIFY(groups.size() < p.devices.size());
    QVERIFY(view.groupSharesBox()->isChecked());
    QCOMPARE(view.ratiosSeries()->count(), int(groups.size()));
    QCOMPARE(view.ratiosModel()->columnCount(), 1 + int(groups.size()));
    for (int g = 0; g < int(groups.size()); ++g) {
      const DeviceGroup& group = groups[size_t(g)];
      for (int b = 0; b < int(p.segments.size()); ++b) {
        double expected = 0;
        for (int rank : group.ranks) expected += p.segments[size_t(view.segmentOfBar(b))].ratios[size_t(rank)];
        QVERIFY(std::abs(view.ratiosSeries()->barSets()[g]->at(b) - expected * 100) < 1e-6);
      }
    }
    saveShot(view, QStringLiteral("ratios-shares-64"));
    view.pages()->setCurrentIndex(1);
    QVERIFY(view.groupMemoryBox()->isChecked());
    QCOMPARE(view.memoryBarRows().size(), view.memoryModel()->identicalRows().size());
    saveShot(view, QStringLiteral("ratios-memory-64"));
    view.groupMemoryBox()->click();
    QCOMPARE(int(view.memoryBarRows().size()), view.memoryModel()->rowCount());
    saveShot(view, QStringLiteral("ratios-memory-64-all"));

    BaselinesView baselines;
    baselines.resize(1200, 700);
    baselines.setPlan(doc);
    baselines.show();
    QVERIFY(QTest::qWaitForWindowExposed(&baselines));
    QCOMPARE(baselines.model()->rowCount(), 1 + int(p.baselines.size()));
    saveShot(baselines, QStringLiteral("baselines-64"));
  }

 private:
  std::shared_ptr<const PlanDocument> m_doc;
};

QTEST_MAIN(TestPlanChartsGui)
#include "tst_plan_charts_gui.moc"
