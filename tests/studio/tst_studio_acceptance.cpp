// Issue 20's acceptance, tried as a new user would and without a terminal: open the tiny BERT and
// the local CPU cluster, plan, launch 3 ranks with CPU shares 1, 0.5, 0.25 on the bundled token
// file, watch the loss fall, see predicted against measured (the table and the measured trace in
// the stages view), calibrate on the run, re-plan with the calibrated model and see what changed.
// Everything goes through the main window's menus, buttons and file dialogs; the figures shown are
// checked against the profile store the run was recorded in. No process outlives the test
// (checked by the process list). Screenshots of each step: $HAP_SHOTS_DIR/acceptance (default
// /tmp/shots/acceptance).
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtCharts/QLineSeries>
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "app/studio/core/models/calibration_models.h"
#include "app/studio/core/jobs/launch_job.h"
#include "app/studio/core/models/measured_comparison_model.h"
#include "app/studio/core/models/plan_history_model.h"
#include "app/studio/widgets/calibrate_dialog.h"
#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/compare_view.h"
#include "app/studio/widgets/launch_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/measured_view.h"
#include "app/studio/widgets/plan_panel.h"
#include "app/studio/widgets/stages_view.h"
#include "db/run_figures.h"
#include "db/store.h"
#include "db/store_calibration.h"
#include "tests/studio/process_census.h"
#include "tests/studio/ui_driver.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::answerFileDialog;

namespace {

QString zoo(const char* name) { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name; }
QString source(const char* name) { return qEnvironmentVariable("HAP_SOURCE_DIR") + "/" + name; }

void shot(QWidget* w, const QString& name) {
  const QString dir = qEnvironmentVariable("HAP_SHOTS_DIR", QStringLiteral("/tmp/shots")) + QStringLiteral("/acceptance");
  QDir().mkpath(dir);
  QTest::qWait(80);  // charts lay out on posted events
  QVERIFY(w->grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png")));
}

template <class Box>
void typeInto(Box* box, const QString& text) {
  box->setFocus();
  box->selectAll();
  QTest::keyClicks(box, text);
  QTest::keyClick(box, Qt::Key_Tab);
}

void raise(MainWindow& w, const char* dock) {
  auto* d = w.findChild<QDockWidget*>(QString::fromLatin1(dock));
  QVERIFY(d);
  d->show();
  d->raise();
  QTRY_VERIFY(d->isVisible() && !d->visibleRegion().isEmpty());
}

}  // namespace

class TstStudioAcceptance : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  QString m_db;
  std::unique_ptr<MainWindow> m_window;
  qint64 m_run = 0;
  double m_measuredStep = 0;  // the run's slowest rank's mean step, from the store

 private Q_SLOTS:
  void initTestCase() {
    hap::test::markChildren();
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("HAP Studio tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_studio_acceptance"));
    QSettings().clear();
    QVERIFY(m_dir.isValid());
    m_db = m_dir.filePath("profiles.db");
    qputenv("HAP_DB", m_db.toUtf8());
    qputenv("HAP_RUNS_DIR", m_dir.filePath("runs").toUtf8());
    qputenv("HAP_WORKER", HAP_WORKER_PATH);
    m_window = std::make_unique<MainWindow>();
    m_window->resize(1600, 1000);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
  }

  void cleanupTestCase() {
    m_window.reset();
    const QStringList left = hap::test::survivors();
    QVERIFY2(left.isEmpty(), qPrintable(left.join(QStringLiteral("; "))));
  }

  // File ▸ Open Model…, File ▸ Open Cluster…, the Plan panel's Plan button.
  void openAndPlan() {
    MainWindow& w = *m_window;
    QSignalSpy opened(&w, &MainWindow::modelOpened);
    answerFileDialog(zoo("bert-tiny.pt"));
    w.action(QStringLiteral("file.open"))->trigger();
    QVERIFY(opened.wait(60000));
    answerFileDialog(source("resources/clusters/local-cpu-3.yaml"));
    w.action(QStringLiteral("file.openCluster"))->trigger();
    QVERIFY(w.clusterPanel()->hasCluster());
    QSignalSpy planned(&w, &MainWindow::planFinished);
    QTest::mouseClick(w.planPanel()->planButton(), Qt::LeftButton);
    QVERIFY(planned.wait(60000));
    QVERIFY(w.plan());
    QCOMPARE(static_cast<int>(w.plan()->p().devices.size()), 3);
  }

  // Run ▸ Show Run Panel; shares 1, 0.5, 0.25; the bundled token file; Start; the loss falls.
  void launchAndWatchTheLossFall() {
    MainWindow& w = *m_window;
    w.action(QStringLiteral("view.run"))->trigger();
    LaunchView* v = w.launchView();
    QTRY_VERIFY(v->isVisible());
    QCOMPARE(v->shareBoxes().size(), size_t(3));
    typeInto(v->shareBoxes()[1], QStringLiteral("0.5"));
    typeInto(v->shareBoxes()[2], QStringLiteral("0.25"));
    typeInto(v->stepsBox(), QStringLiteral("40"));
    typeInto(v->warmupBox(), QStringLiteral("1"));
    const int tokens = v->dataBox()->findData(QStringLiteral("tokens"));
    QVERIFY(tokens >= 0);
    v->dataBox()->setCurrentIndex(tokens);
    typeInto(v->dataPathEdit(), source("resources/data/tokens-v128/tokens.bin"));
    QCOMPARE(v->settings().cpuShares, (std::vector<double>{1, 0.5, 0.25}));

    QSignalSpy started(v, &LaunchView::runStarted);
    QSignalSpy finished(v, &LaunchView::runFinished);
    QTest::mouseClick(v->startButton(), Qt::LeftButton);
    QVERIFY(started.wait(30000));
    m_run = started.first().first().toLongLong();
    QVERIFY(m_run > 0);
    QTRY_VERIFY_WITH_TIMEOUT(v->lossSeries() && v->lossSeries()->count() >= 10, 60000);
    shot(&w, QStringLiteral("1-running"));
    if (finished.isEmpty()) QVERIFY(finished.wait(120000));
    const LaunchOutcome o = finished.first().first().value<LaunchOutcome>();
    QVERIFY2(o.succeeded(), qPrintable(o.message));
    QTRY_COMPARE_WITH_TIMEOUT(v->lossSeries()->count(), 41, 5000);

    // The loss falls: the last ten steps' mean well below the first step's (ln 128 = 4.85).
    const QLineSeries* loss = v->lossSeries();
    double tail = 0;
    for (int i = loss->count() - 10; i < loss->count(); ++i) tail += loss->at(i).y() / 10;
    QVERIFY2(tail < loss->at(0).y() - 0.5, qPrintable(QStringLiteral("first %1, last ten %2").arg(loss->at(0).y()).arg(tail)));

    // Recorded in the store with the shares, every rank's every step.
    const db::Store store(m_db.toStdString(), db::Store::Mode::ReadOnly);
    const std::optional<db::RunRecord> r = store.run(m_run);
    QVERIFY(r);
    QCOMPARE(r->status, db::RunStatus::Succeeded);
    QCOMPARE(r->cpuShares, (std::vector<double>{1, 0.5, 0.25}));
    const std::vector<db::StepRecord> steps = store.steps(m_run);
    QCOMPARE(steps.size(), size_t(3 * 41));
    QCOMPARE(loss->at(40).y(), steps.back().loss);
    for (const db::RankMeans& m : db::rankMeans(steps)) m_measuredStep = std::max(m_measuredStep, m.stepSeconds);
    shot(w.findChild<QDockWidget*>(QStringLiteral("dock.run")), QStringLiteral("2-run-finished"));
  }

  // The run's end opens it in Measured: per device predicted against measured, and the measured
  // trace below the simulated one in Stages.
  void predictedAgainstMeasured() {
    MainWindow& w = *m_window;
    MeasuredView* m = w.measuredView();
    QTRY_VERIFY_WITH_TIMEOUT(m->run().run && m->run().run->id == m_run, 10000);
    QVERIFY(m->showsRunPlan());
    const MeasuredComparisonModel* table = m->model();
    QCOMPARE(table->rowCount(), 4);  // 3 ranks and the slowest
    const std::vector<db::RankMeans> means =
        db::rankMeans(db::Store(m_db.toStdString(), db::Store::Mode::ReadOnly).steps(m_run));
    for (int rank = 0; rank < 3; ++rank) {
      const auto& row = table->row(rank);
      const auto& step = row.figures[MeasuredComparisonModel::StepTime];
      QCOMPARE(step.measured, means[static_cast<size_t>(rank)].stepSeconds);
      QVERIFY(step.predicted > 0);
      const QString ratio =
          table->index(rank, MeasuredComparisonModel::StepRatioColumn).data().toString();
      QVERIFY2(ratio.startsWith(QString::number(step.measured / step.predicted, 'f', 2)), qPrintable(ratio));
    }
    QCOMPARE(w.stagesView()->traceCount(), 2);
    raise(w, "dock.measured");
    shot(w.findChild<QDockWidget*>(QStringLiteral("dock.measured")), QStringLiteral("3-measured"));
    raise(w, "dock.stages");
    shot(w.findChild<QDockWidget*>(QStringLiteral("dock.stages")), QStringLiteral("4-stages-measured"));
  }

  // Run ▸ Calibrate…: a new profile "local" fitted on the run; the accuracy improves.
  void calibrate() {
    MainWindow& w = *m_window;
    w.action(QStringLiteral("run.calibrate"))->trigger();
    CalibrateDialog* d = w.calibrateDialog();
    QVERIFY(d);
    QTRY_VERIFY(d->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(d->runsModel()->rowCount() >= 1, 10000);
    {
      const std::vector<int64_t> checked = d->runsModel()->checkedRuns();
      QVERIFY(std::find(checked.begin(), checked.end(), m_run) != checked.end());
    }
    d->profileCombo()->setFocus();
    d->profileCombo()->lineEdit()->selectAll();
    QTest::keyClicks(d->profileCombo(), QStringLiteral("local"));
    QSignalSpy fitted(d, &CalibrateDialog::fitFinished);
    QTest::mouseClick(d->fitButton(), Qt::LeftButton);
    QVERIFY(fitted.wait(60000));
    QVERIFY2(fitted.first().first().toBool(), qPrintable(d->messageLabel()->text()));
    const std::shared_ptr<const db::CalibrationResult> r = d->result();
    QVERIFY(r);
    QCOMPARE(QString::fromStdString(r->saved), QStringLiteral("local@1"));
    QVERIFY2(r->fit.after.stepMape < r->fit.before.stepMape,
             qPrintable(QStringLiteral("%1 -> %2").arg(r->fit.before.stepMape).arg(r->fit.after.stepMape)));
    shot(d, QStringLiteral("5-calibrated"));
  }

  // Re-plan with Calibrated Model: the cluster names local@1, the plan is made again under it,
  // Compare shows the previous plan against the new one, and the prediction moved toward what
  // was measured.
  void replan() {
    MainWindow& w = *m_window;
    CalibrateDialog* d = w.calibrateDialog();
    const std::shared_ptr<const PlanDocument> before = w.plan();
    QSignalSpy replanned(&w, &MainWindow::calibratedReplanFinished);
    QTest::mouseClick(d->replanButton(), Qt::LeftButton);
    QVERIFY(replanned.wait(60000));
    QVERIFY2(replanned.first().at(0).toBool(), qPrintable(replanned.first().at(1).toString()));
    QCOMPARE(QString::fromStdString(w.clusterPanel()->cluster().profile), QStringLiteral("local@1"));
    const std::shared_ptr<const PlanDocument> after = w.plan();
    QVERIFY(after && after != before);
    QCOMPARE(w.planHistory()->size(), 2);
    QCOMPARE(w.compareView()->model()->planA(), before);
    QCOMPARE(w.compareView()->model()->planB(), after);
    const double was = before->p().estimate.iterationSeconds, now = after->p().estimate.iterationSeconds;
    QVERIFY2(std::abs(now - m_measuredStep) < std::abs(was - m_measuredStep),
             qPrintable(QStringLiteral("predicted %1 ms, then %2 ms; measured %3 ms")
                            .arg(was * 1e3).arg(now * 1e3).arg(m_measuredStep * 1e3)));
    QVERIFY(!w.calibrationChange().isEmpty());
    d->close();
    raise(w, "dock.compare");
    shot(m_window.get(), QStringLiteral("6-replanned"));
  }
};

QTEST_MAIN(TstStudioAcceptance)
#include "tst_studio_acceptance.moc"
