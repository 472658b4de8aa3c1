// Run ▸ Calibrate… in the main window (offscreen), driven as a user does (issue 20, item 4): with
// mlp-tiny planned on local-cpu-3 under profile bench@1 and $HAP_DB naming a store whose runs took
// 1.7x their predictions (calibration_fixture.h), the dialog lists the store's runs, Fit shows the
// accuracy before → after exactly as db::calibrateStore computed it, and "Re-plan with Calibrated
// Model" gives the cluster `profile: bench@2`, plans again and opens the Compare dock on the plan
// before against the new one with the summary of what changed. Without a model, re-planning is
// refused with a message. Screenshots go to /tmp/shots/calibrate (or $HAP_SHOTS_DIR).
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "app/studio/core/jobs/calibrate_job.h"
#include "app/studio/core/models/calibration_models.h"
#include "app/studio/core/models/cluster_model.h"
#include "app/studio/core/models/plan_history_model.h"
#include "app/studio/core/jobs/plan_job.h"
#include "app/studio/core/display/units.h"
#include "app/studio/widgets/calibrate_dialog.h"
#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/compare_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/profiles_view.h"
#include "engine/ir/summary.h"
#include "tests/studio/calibration_fixture.h"
#include "tests/studio/process_census.h"

using namespace hap;
using namespace hap::studio;

namespace {

void shot(QWidget& w, const QString& name) {
  const QString dir = qEnvironmentVariable("HAP_SHOTS_DIR", QStringLiteral("/tmp/shots/calibrate"));
  QDir().mkpath(dir);
  QTest::qWait(50);
  QVERIFY(w.grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png")));
}

// "41.2% → 0.3%", formatted here independently of the app's helpers.
QString percents(double before, double after) {
  return QStringLiteral("%1% → %2%").arg(before * 100, 0, 'f', 1).arg(after * 100, 0, 'f', 1);
}

QString bytesText(double b) { return QString::fromStdString(ir::formatBytes(static_cast<int64_t>(b))); }

QAction* menuAction(QMenuBar* bar, const QString& menu, const QString& id) {
  for (QAction* top : bar->actions())
    if (top->menu() && top->text() == menu)
      for (QAction* a : top->menu()->actions())
        if (a->objectName() == id) return a;
  return nullptr;
}

}  // namespace

class TestCalibrateGui : public QObject {
  Q_OBJECT

  bool openAndPlan(MainWindow& w, const QString& cluster) {
    QSignalSpy opened(&w, &MainWindow::modelOpened);
    w.openModel(qEnvironmentVariable("HAP_ZOO_DIR") + "/mlp-tiny.pt");
    if (!opened.wait(60000)) return false;
    if (!w.openCluster(cluster)) return false;
    QSignalSpy finished(&w, &MainWindow::planFinished);
    w.action(QStringLiteral("plan.plan"))->trigger();
    return finished.wait(60000);
  }

 private Q_SLOTS:
  void initTestCase() {
    hap::test::markChildren();  // every process this test starts, checked in cleanupTestCase
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("HAP Studio tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_calibrate_gui"));
    QSettings().clear();
    QVERIFY(m_dir.isValid());
  }

  void cleanupTestCase() {
    // No process this test started outlives it (checked by the process list).
    const QStringList left = hap::test::survivors();
    QVERIFY2(left.isEmpty(), qPrintable(left.join(QStringLiteral("; "))));
  }

  void fitAndReplanFromTheRunMenu() {
    const testing::CalibrationStore s = testing::makeCalibrationStore(m_dir.filePath("a"), 1.7);
    qputenv("HAP_DB", s.path.toUtf8());
    MainWindow w;
    w.resize(1500, 940);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(openAndPlan(w, s.cluster));
    const std::shared_ptr<const PlanDocument> before = w.plan();
    QCOMPARE(QString::fromStdString(before->p().cluster.profile), QStringLiteral("bench@1"));

    // Run ▸ Calibrate…, after Profile This Machine….
    QAction* calibrate = menuAction(w.menuBar(), QStringLiteral("&Run"), QStringLiteral("run.calibrate"));
    QVERIFY(calibrate);
    QCOMPARE(calibrate, w.action(QStringLiteral("run.calibrate")));
    QCOMPARE(calibrate->text(), QStringLiteral("&Calibrate…"));
    QVERIFY(menuAction(w.menuBar(), QStringLiteral("&Run"), QStringLiteral("profiles.profileMachine")));
    QVERIFY(!w.calibrateDialog());
    calibrate->trigger();
    CalibrateDialog* d = w.calibrateDialog();
    QVERIFY(d);
    QTRY_VERIFY(d->isVisible());
    QVERIFY(!d->isModal());
    QCOMPARE(d->storePath(), s.path);
    QTRY_COMPARE(d->runsModel()->rowCount(), 4);
    QCOMPARE(d->profileCombo()->currentText(), QStringLiteral("bench"));  // what the runs were planned under
    QCOMPARE(d->runsModel()->checkedRuns(), s.runs);                      // every usable run
    QVERIFY(d->fitButton()->isEnabled());
    QVERIFY(!d->replanButton()->isEnabled());
    QVERIFY(d->saveCheck()->isChecked());

    // Fit: the figures shown are the library's.
    QSignalSpy fitted(d, &CalibrateDialog::fitFinished);
    QTest::mouseClick(d->fitButton(), Qt::LeftButton);
    QVERIFY(fitted.wait(30000));
    QCOMPARE(fitted.first().first().toBool(), true);
    const std::shared_ptr<const db::CalibrationResult> r = d->result();
    QVERIFY(r);
    QCOMPARE(QString::fromStdString(r->saved), QStringLiteral("bench@2"));
    QCOMPARE(r->fittedRuns(), 2);
    QCOMPARE(r->heldOutRuns(), 1);
    QCOMPARE(d->accuracyHeader(false)->text(), QStringLiteral("Fit runs (2)"));
    QCOMPARE(d->accuracyHeader(true)->text(), QStringLiteral("Held-out runs (1)"));
    for (bool held : {false, true}) {
      const db::AccuracyChange& a = held ? r->heldOut : r->fit;
      QCOMPARE(d->accuracyLabel(held, CalibrateDialog::StepMapeRow)->text(), percents(a.before.stepMape, a.after.stepMape));
      QCOMPARE(d->accuracyLabel(held, CalibrateDialog::MemoryMapeRow)->text(),
               percents(a.before.memoryMape, a.after.memoryMape));
      // A correlation needs two runs.
      QCOMPARE(d->accuracyLabel(held, CalibrateDialog::StepPearsonRow)->text(),
               a.after.runs < 2 ? QStringLiteral("—")
                                : QStringLiteral("%1 → %2").arg(a.before.stepPearson, 0, 'f', 3).arg(a.after.stepPearson, 0, 'f', 3));
      QCOMPARE(d->accuracyLabel(held, CalibrateDialog::RankingRow)->text(),
               a.after.rankingPairs ? QStringLiteral("%1/%2 → %3/%4")
                                          .arg(a.before.rankingRight)
                                          .arg(a.before.rankingPairs)
                                          .arg(a.after.rankingRight)
                                          .arg(a.after.rankingPairs)
                                    : QStringLiteral("—"));
    }
    // The known slowdown: 41.2% off before, near exact after.
    QVERIFY2(d->accuracyLabel(true, CalibrateDialog::StepMapeRow)->text().startsWith(QStringLiteral("41.2% → 0.")),
             qPrintable(d->accuracyLabel(true, CalibrateDialog::StepMapeRow)->text()));
    QCOMPARE(d->resultTable()->model()->rowCount(), 3);
    for (int row = 0; row < 3; ++row) {
      const db::CalibratedRun& c = r->runs[size_t(row)];
      auto text = [&](int column) { return d->resultTable()->model()->index(row, column).data().toString(); };
      QCOMPARE(text(CalibrationResultModel::RunColumn), QString::number(c.observation.run));
      QCOMPARE(text(CalibrationResultModel::MeasuredColumn), formatMilliseconds(c.observation.measuredStepSeconds));
      QCOMPARE(text(CalibrationResultModel::BeforeColumn), formatMilliseconds(c.beforeSeconds));
      QCOMPARE(text(CalibrationResultModel::AfterColumn), formatMilliseconds(c.afterSeconds));
    }
    QCOMPARE(d->termsModel()->rowCount(), 1);
    QVERIFY2(d->savedLabel()->text().contains(QStringLiteral("bench@2")), qPrintable(d->savedLabel()->text()));
    QVERIFY(d->exposureLabel()->text().contains(QStringLiteral("%1%").arg(r->calibration.gradientExposure * 100, 0, 'f', 0)));
    QVERIFY(d->messageLabel()->isHidden());  // nothing left out
    QVERIFY(d->replanButton()->isEnabled());
    shot(*d, QStringLiteral("calibrate-dialog-fit"));

    // Re-plan: the cluster gets bench@2, the model is planned again, Compare shows before vs after.
    QSignalSpy replanned(&w, &MainWindow::calibratedReplanFinished);
    QTest::mouseClick(d->replanButton(), Qt::LeftButton);
    QVERIFY(w.isPlanning());
    QVERIFY(replanned.wait(60000));
    QCOMPARE(replanned.first().at(0).toBool(), true);
    const QString summary = replanned.first().at(1).toString();
    QCOMPARE(QString::fromStdString(w.clusterPanel()->cluster().profile), QStringLiteral("bench@2"));
    const std::shared_ptr<const PlanDocument> after = w.plan();
    QVERIFY(after && after != before);
    QCOMPARE(QString::fromStdString(after->p().cluster.profile), QStringLiteral("bench@2"));
    QVERIFY(QString::fromStdString(after->label).endsWith(QStringLiteral(" · bench@2")));
    QCOMPARE(w.planHistory()->size(), 2);

    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("dock.compare"));
    QVERIFY(dock);
    QTRY_VERIFY(dock->isVisible() && !dock->visibleRegion().isEmpty());
    CompareView* compare = w.compareView();
    QCOMPARE(compare->rowA(), 0);
    QCOMPARE(compare->rowB(), 1);
    QCOMPARE(compare->model()->planA(), before);
    QCOMPARE(compare->model()->planB(), after);
    QCOMPARE(compare->findChild<QLabel*>(QStringLiteral("compareTimeA"))->text(),
             formatMilliseconds(before->p().estimate.iterationSeconds));
    QCOMPARE(compare->findChild<QLabel*>(QStringLiteral("compareTimeB"))->text(),
             formatMilliseconds(after->p().estimate.iterationSeconds));
    const double ratio = after->p().estimate.iterationSeconds / before->p().estimate.iterationSeconds;
    QVERIFY2(ratio > 1.3 && ratio < 1.8, qPrintable(QString::number(ratio)));  // priced 1.7x slower, as measured
    QVERIFY(compare->speedupLabel()->text().contains(QStringLiteral("slower")));
    // One line saying what changed: in the compare view, the dialog and the status bar.
    QVERIFY(compare->captionLabel()->isVisible());
    QCOMPARE(compare->captionLabel()->text(), summary);
    QCOMPARE(w.calibrationChange(), summary);
    QCOMPARE(d->changeLabel()->text(), summary);
    QVERIFY2(summary.startsWith(QStringLiteral("Re-planned under bench@2 (was bench@1): predicted %1 → %2 per iteration")
                                    .arg(formatMilliseconds(before->p().estimate.iterationSeconds),
                                         formatMilliseconds(after->p().estimate.iterationSeconds))),
             qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("× slower); peak memory %1 → %2; strategy hap;")
                                  .arg(bytesText(compare->comparison().a.maxMemoryBytes),
                                       bytesText(compare->comparison().b.maxMemoryBytes))),
             qPrintable(summary));
    shot(*d, QStringLiteral("calibrate-dialog-replanned"));
    d->hide();
    shot(*dock, QStringLiteral("calibrate-compare-dock"));
    shot(w, QStringLiteral("calibrate-main-window"));

    // Choosing other plans in the compare view drops the caption.
    compare->comboA()->setCurrentIndex(1);
    QVERIFY(compare->captionLabel()->isHidden());
  }

  // Profiles ▸ Use for the Open Cluster (shown after Profile This Machine): the cluster names the
  // profile, and plans are priced from the store it was saved in.
  void useAProfileForTheOpenCluster() {
    const testing::CalibrationStore s = testing::makeCalibrationStore(m_dir.filePath("use"), 1.0);
    qputenv("HAP_DB", m_dir.filePath("use-other.db").toUtf8());  // not the profile's store
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy opened(&w, &MainWindow::modelOpened);
    w.openModel(qEnvironmentVariable("HAP_ZOO_DIR") + "/mlp-tiny.pt");
    QVERIFY(opened.wait(60000));
    QVERIFY(w.openCluster(s.cluster));
    auto* profiles = w.findChild<ProfilesView*>();
    QVERIFY(profiles);
    Q_EMIT profiles->useProfileRequested(QStringLiteral("bench@1"), s.path);
    QCOMPARE(QString::fromStdString(w.clusterPanel()->cluster().profile), QStringLiteral("bench@1"));
    QCOMPARE(w.planJob()->storePath(), s.path);
    QSignalSpy finished(&w, &MainWindow::planFinished);
    w.action(QStringLiteral("plan.plan"))->trigger();
    QVERIFY(finished.wait(60000));
    QCOMPARE(QString::fromStdString(w.plan()->p().cluster.profile), QStringLiteral("bench@1"));
  }

  void replanNeedsAModel() {
    const testing::CalibrationStore s = testing::makeCalibrationStore(m_dir.filePath("b"), 2.0);
    qputenv("HAP_DB", s.path.toUtf8());
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.action(QStringLiteral("run.calibrate"))->trigger();
    CalibrateDialog* d = w.calibrateDialog();
    QVERIFY(d);
    QTRY_COMPARE(d->runsModel()->rowCount(), 4);
    // Only two runs, no hold-out, saved under another name.
    d->runsModel()->setChecked(1, false);
    d->splitCombo()->setCurrentIndex(1);
    d->profileCombo()->setEditText(QStringLiteral("lab"));
    QSignalSpy fitted(d, &CalibrateDialog::fitFinished);
    QTest::mouseClick(d->fitButton(), Qt::LeftButton);
    QVERIFY(fitted.wait(30000));
    QVERIFY(d->result());
    QCOMPARE(QString::fromStdString(d->result()->saved), QStringLiteral("lab@1"));
    QCOMPARE(d->result()->fittedRuns(), 2);
    QCOMPARE(d->accuracyLabel(true, CalibrateDialog::StepMapeRow)->text(), QStringLiteral("—"));
    QSignalSpy replanned(&w, &MainWindow::calibratedReplanFinished);
    QTest::mouseClick(d->replanButton(), Qt::LeftButton);
    QCOMPARE(replanned.size(), 1);
    QCOMPARE(replanned.first().at(0).toBool(), false);
    QVERIFY(d->changeLabel()->isVisible());
    QVERIFY2(d->changeLabel()->text().startsWith(QStringLiteral("Open the model to re-plan first")),
             qPrintable(d->changeLabel()->text()));
    QVERIFY(!w.isPlanning());

    // Every usable run unchecked: nothing to fit.
    for (int row = 0; row < d->runsModel()->rowCount(); ++row) d->runsModel()->setChecked(row, false);
    QVERIFY(!d->fitButton()->isEnabled());
    QVERIFY(!d->fit());
  }

 private:
  QTemporaryDir m_dir;
};

QTEST_MAIN(TestCalibrateGui)
#include "tst_calibrate_gui.moc"
