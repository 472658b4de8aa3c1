// Predicted vs measured in the main window (offscreen), driven as a user does: the build's `hap`
// plans the tiny MLP on the local 3-CPU cluster and runs it for 3 steps into a store ($HAP_DB);
// the app opens the plan; in the Profiles dock's Runs tab the run is selected and "Show in
// Measured" opens it in the Measured dock. The table's ratios are the measured / predicted
// figures recomputed here from the store and the plan file, and the stages view has the measured
// trace below the prediction (its stages recomputed here from the stage records). A double-click
// on the run replaces the trace; another plan shown withdraws it and the dock offers the run's
// plan, whose opening brings it back; Run ▸ Compare with Run… finds the run of the shown plan.
// Screenshots go to /tmp/shots/measured (or $HAP_SHOTS_DIR/measured).
#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QStandardPaths>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "app/studio/core/models/measured_comparison_model.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/measured_view.h"
#include "app/studio/widgets/profiles_view.h"
#include "app/studio/widgets/stages_view.h"
#include "db/store.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/simulator.h"
#include "tests/app/run_hap.h"
#include "tests/studio/view_helpers.h"
#include "tests/studio/process_census.h"

using namespace hap;
using namespace hap::studio;
using M = MeasuredComparisonModel;

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1e-12, std::abs(b)); }

void clickRow(QAbstractItemView& view, int row, bool twice = false) {
  const QModelIndex index = view.model()->index(row, 0);
  view.scrollTo(index);
  const QRect rect = view.visualRect(index);
  QVERIFY(rect.isValid());
  if (twice)
    QTest::mouseDClick(view.viewport(), Qt::LeftButton, Qt::NoModifier, rect.center());
  else
    QTest::mouseClick(view.viewport(), Qt::LeftButton, Qt::NoModifier, rect.center());
}

void shot(QWidget& w, const QString& name) { testing::saveShot(w, name); }

QString zoo(const char* name) { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name; }

}  // namespace

class TestMeasuredViewGui : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    hap::test::markChildren();  // every process this test starts, checked in cleanupTestCase
    QStandardPaths::setTestModeEnabled(true);
    qputenv("HAP_SHOTS_DIR", (qEnvironmentVariable("HAP_SHOTS_DIR", QStringLiteral("/tmp/shots")) + "/measured").toUtf8());
    QVERIFY(m_dir.isValid());
    m_plan = m_dir.filePath(QStringLiteral("mlp.json"));
    m_other = m_dir.filePath(QStringLiteral("mlp-uneven.json"));
    m_store = m_dir.filePath(QStringLiteral("runs.db"));
    const QString cluster = qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/local-cpu-3.yaml";
    HapRun r = runHap({"plan", zoo("mlp-tiny.pt"), "--cluster", cluster, "--no-baselines", "-o", m_plan});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    r = runHap({"plan", zoo("mlp-tiny.pt"), "--cluster", cluster, "--no-baselines", "--ratios", "0.5,0.3,0.2", "-o", m_other});
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    r = runHap({"launch", "--local", m_plan, "--db", m_store, "--steps", "3", "--label", "gui", "--timeout", "60"}, 90'000);
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    qputenv("HAP_DB", m_store.toUtf8());
  }

  void cleanupTestCase() {
    // No process this test started outlives it (checked by the process list).
    const QStringList left = hap::test::survivors();
    QVERIFY2(left.isEmpty(), qPrintable(left.join(QStringLiteral("; "))));
  }

  void showARunFromTheProfilesDock() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.resize(1500, 940);  // the first show lays the docks out wider than asked (offscreen)
    openPlan(w, m_plan);
    QVERIFY(w.plan());
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("dock.measured"));
    QVERIFY(dock);
    QCOMPARE(dock->windowTitle(), QStringLiteral("Measured"));
    MeasuredView* measured = w.measuredView();
    QVERIFY(measured && dock->widget() == measured);
    QCOMPARE(measured->storePath(), m_store);
    QCOMPARE(w.stagesView()->traceCount(), w.stagesView()->plan() ? 1 : 0);

    // Profiles ▸ Runs: select the run, Show in Measured.
    auto* profiles = w.findChild<ProfilesView*>();
    w.action(QStringLiteral("view.profiles"))->trigger();
    QTRY_COMPARE(profiles->runsModel()->rowCount(), 1);
    QTabBar* bar = profiles->tabs()->tabBar();
    QTest::mouseClick(bar, Qt::LeftButton, Qt::NoModifier, bar->tabRect(ProfilesView::RunsTab).center());
    auto* show = profiles->findChild<QToolButton*>(QStringLiteral("showMeasured"));
    QVERIFY(show && show->isVisible());
    QVERIFY(!show->isEnabled());  // no run selected yet
    clickRow(*profiles->runsTable(), 0);
    QVERIFY(show->isEnabled());
    QTest::mouseClick(show, Qt::LeftButton);
    QTRY_VERIFY(measured->isVisible() && !measured->visibleRegion().isEmpty());
    QVERIFY2(measured->run().ok(), qPrintable(measured->run().error));
    const int64_t runId = measured->run().runId;
    QCOMPARE(runId, profiles->runsModel()->runId(0));
    const QString header = measured->header()->text();
    for (const QString& part : {QStringLiteral("<b>Run %1</b>").arg(runId), QStringLiteral("succeeded"),
                                QStringLiteral("“gui”"), QStringLiteral("3 ranks"), QStringLiteral("5 steps (2 warm-up)"),
                                QStringLiteral("started ")})
      QVERIFY2(header.contains(part), qPrintable(header + " lacks " + part));
    QCOMPARE(measured->runCombo()->currentData().toLongLong(), runId);
    QVERIFY2(measured->showsRunPlan(), qPrintable(measured->planLine()->text()));
    QVERIFY(measured->openPlanButton()->isHidden());
    QVERIFY2(measured->planLine()->text().contains(QStringLiteral("the plan shown")), qPrintable(measured->planLine()->text()));

    // The table: per rank, measured / predicted as recomputed from the store and the plan file.
    checkTable(*measured->model(), runId);

    // The stages view: the prediction, then the measured run with the same stages.
    StagesView* stages = w.stagesView();
    QCOMPARE(stages->traceCount(), 2);
    QCOMPARE(stages->traceName(1), QStringLiteral("Measured run %1").arg(runId));
    checkMeasuredTrace(stages->timeline(0), stages->timeline(1), runId);
    QTest::qWait(50);
    shot(*dock, QStringLiteral("measured-dock"));
    auto* stagesDock = w.findChild<QDockWidget*>(QStringLiteral("dock.stages"));
    stagesDock->raise();
    QTRY_VERIFY(!stages->visibleRegion().isEmpty());
    QCOMPARE(stages->traceCount(), 2);  // the tab's first showing keeps the trace
    shot(*stagesDock, QStringLiteral("stages-predicted-and-measured"));

    // A double-click on the run shows it again: the trace is replaced, not added.
    w.action(QStringLiteral("view.profiles"))->trigger();
    QTRY_VERIFY(!profiles->runsTable()->visibleRegion().isEmpty());
    clickRow(*profiles->runsTable(), 0, true);
    QTRY_VERIFY(!measured->visibleRegion().isEmpty());
    QCOMPARE(stages->traceCount(), 2);
    // A run that is not there: said in the dock, the trace withdrawn; the run again brings it back.
    measured->showRun(m_store, 999);
    QVERIFY(measured->message()->isVisible());
    QVERIFY2(measured->message()->text().contains(QStringLiteral("No run 999")), qPrintable(measured->message()->text()));
    QCOMPARE(measured->model()->rowCount(), 0);
    QCOMPARE(stages->traceCount(), 1);
    measured->showRun(m_store, runId);
    QCOMPARE(stages->traceCount(), 2);

    // Another plan shown: the dock says so, the trace goes; Open the Run's Plan brings it back.
    openPlan(w, m_other);
    QCOMPARE(stages->traceCount(), 1);
    QVERIFY(!measured->showsRunPlan());
    QVERIFY2(measured->planLine()->text().contains(QStringLiteral("another plan than the one shown")),
             qPrintable(measured->planLine()->text()));
    checkTable(*measured->model(), runId);  // still against the run's own plan
    dock->raise();
    QTRY_VERIFY(measured->openPlanButton()->isVisible());
    shot(*dock, QStringLiteral("measured-dock-other-plan"));
    QSignalSpy opened(&w, &MainWindow::planOpened);
    QTest::mouseClick(measured->openPlanButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(opened.size(), 1, 30000);
    QVERIFY2(w.lastError().isEmpty(), qPrintable(w.lastError()));
    QVERIFY(QString::fromStdString(w.plan()->path).contains(QStringLiteral("hap-studio-runs")));
    QVERIFY(measured->showsRunPlan());
    QCOMPARE(stages->traceCount(), 2);
    QVERIFY(measured->openPlanButton()->isHidden());
  }

  void compareWithRunFindsTheRunOfTheShownPlan() {
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.resize(1400, 900);
    openPlan(w, m_plan);
    QAction* a = w.action(QStringLiteral("run.showMeasured"));
    QVERIFY(a);
    QCOMPARE(a->text(), QStringLiteral("Compare with &Run…"));
    QMenu* run = nullptr;
    for (QAction* m : w.menuBar()->actions())
      if (m->text() == QStringLiteral("&Run")) run = m->menu();
    QVERIFY(run && run->actions().contains(a));
    a->trigger();
    MeasuredView* measured = w.measuredView();
    QTRY_VERIFY(!measured->visibleRegion().isEmpty());
    QVERIFY2(measured->run().ok(), qPrintable(measured->run().error));
    QVERIFY(measured->showsRunPlan());
    QCOMPARE(measured->runCombo()->count(), 1);
    QCOMPARE(w.stagesView()->traceCount(), 2);
    checkTable(*measured->model(), measured->run().runId);
  }

 private:
  void openPlan(MainWindow& w, const QString& path) {
    QSignalSpy opened(&w, &MainWindow::planOpened);
    w.openPlan(path, zoo("mlp-tiny.pt"));
    QTRY_COMPARE_WITH_TIMEOUT(opened.size(), 1, 30000);
    QVERIFY(w.plan());
  }

  // The table against the store and the plan file, computed here without the app's code.
  void checkTable(const M& model, int64_t runId) {
    const plan::Plan p = plan::readPlan(m_plan.toStdString());
    const plan::Timeline t = plan::simulate(p);
    db::Store s(m_store.toStdString(), db::Store::Mode::ReadOnly);
    struct Sums { double n = 0, step = 0, compute = 0, comm = 0; };
    std::map<int, Sums> sums;
    for (const db::StepRecord& r : s.steps(runId)) {
      if (r.warmup) continue;
      Sums& x = sums[r.rank];
      x.n += 1, x.step += r.seconds, x.compute += r.computeSeconds, x.comm += r.communicationSeconds;
    }
    QCOMPARE(sums.size(), size_t(3));
    QCOMPARE(model.rowCount(), 4);
    for (int rank = 0; rank < 3; ++rank) {
      const Sums& x = sums[rank];
      QCOMPARE(x.n, 3.0);
      const double predicted[] = {t.totalSeconds, t.devices[size_t(rank)].computeSeconds, t.devices[size_t(rank)].communicationSeconds};
      const double measured[] = {x.step / x.n, x.compute / x.n, x.comm / x.n};
      for (int q = 0; q < M::QuantityCount; ++q) {
        const int c = M::firstColumn(static_cast<M::Quantity>(q));
        const double ratio = model.index(rank, c + 2).data(M::ValueRole).toDouble();
        QVERIFY2(close(model.index(rank, c).data(M::ValueRole).toDouble(), predicted[q]), qPrintable(QString("rank %1 q %2").arg(rank).arg(q)));
        QVERIFY2(close(model.index(rank, c + 1).data(M::ValueRole).toDouble(), measured[q]), qPrintable(QString("rank %1 q %2").arg(rank).arg(q)));
        QVERIFY2(close(ratio, measured[q] / predicted[q]),
                 qPrintable(QString("rank %1 q %2: %3 vs %4").arg(rank).arg(q).arg(ratio).arg(measured[q] / predicted[q])));
        QCOMPARE(model.index(rank, c + 2).data().toString(), QStringLiteral("%1×").arg(measured[q] / predicted[q], 0, 'f', 2));
      }
    }
  }

  // The measured trace against the stage records: the predicted stages, each with the least
  // communication any rank measured and the slowest rank's computation.
  void checkMeasuredTrace(const plan::Timeline& predicted, const plan::Timeline& measured, int64_t runId) {
    db::Store s(m_store.toStdString(), db::Store::Mode::ReadOnly);
    const std::vector<db::StageRecord> records = s.stages(runId);
    QCOMPARE(measured.stages.size(), predicted.stages.size());
    // The plan's stages are recorded; the simulation's stages without steps after them (the
    // gradient buckets' exposed all-reduces) are not, and measure nothing.
    size_t planned = 0;
    for (const plan::StageSpan& st : predicted.stages) planned += st.steps.empty() ? 0 : 1;
    QCOMPARE(records.size(), 3 * planned);
    QCOMPARE(measured.devices.size(), size_t(3));
    double clock = 0;
    for (size_t st = 0; st < predicted.stages.size(); ++st) {
      double comm = st < planned ? std::numeric_limits<double>::infinity() : 0, compute = 0;
      for (const db::StageRecord& r : records)
        if (r.stage == static_cast<int>(st)) comm = std::min(comm, r.communicationSeconds), compute = std::max(compute, r.computeSeconds);
      QCOMPARE(measured.stages[st].backward, predicted.stages[st].backward);
      QCOMPARE(measured.stages[st].steps, predicted.stages[st].steps);
      QVERIFY(close(measured.stages[st].start, clock));
      QVERIFY(close(measured.stages[st].communicationSeconds, comm));
      QVERIFY(close(measured.stages[st].computationSeconds, compute));
      clock += comm + compute;
    }
    QVERIFY(close(measured.totalSeconds, clock));
  }

  QTemporaryDir m_dir;
  QString m_plan, m_other, m_store;
};

QTEST_MAIN(TestMeasuredViewGui)
#include "tst_measured_view_gui.moc"
