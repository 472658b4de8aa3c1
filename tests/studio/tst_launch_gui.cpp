// The Run dock end to end through the main window (offscreen), with the build's hap-worker: open
// the tiny BERT and the 3-device local CPU cluster through File ▸ Open, plan with the Plan panel's
// button, then with clicks on the dock's own buttons: Check (the preflight, compact when all is
// well); launch 3 ranks with CPU shares 1, 0.5, 0.25 for a few steps with a checkpoint every 3,
// see the loss chart fill, the run recorded as succeeded in the store ($HAP_DB in a temporary
// folder), shown in the Measured dock with the Run dock kept on screen, and its step-N.pt listed
// in the Checkpoints tab; Resume From a checkpoint and Start (the monitor's first step is N+1);
// Export Model… (a non-empty file); start a long run, Stop it midway and find no worker left (by
// /proc); a 3-byte token file caught by the preflight (no run recorded, no process started); a
// token file that goes bad after the preflight, so that a rank fails and shows its error; Open in
// Run Panel from the Profiles dock; write torchrun scripts with the form's options; the form kept
// in QSettings, the shares reset by a plan of another rank count; close the window while a run
// goes (No keeps it, Yes stops it) and find no worker left. Screenshots of the dock go to
// /tmp/shots/launch/ ($HAP_SHOTS_DIR/launch).
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabBar>
#include <QScrollArea>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolButton>
#include <QUrl>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtTest>

#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/error_bar.h"
#include "app/studio/widgets/launch_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/measured_view.h"
#include "app/studio/widgets/plan_panel.h"
#include "app/studio/widgets/profiles_view.h"
#include "db/store.h"
#include "tests/studio/process_census.h"
#include "tests/studio/ui_driver.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::answerFileDialog;

namespace {

using hap::test::processesWith;

QString zoo(const char* name) { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name; }
QString source(const char* name) { return qEnvironmentVariable("HAP_SOURCE_DIR") + "/" + name; }

void shot(QWidget* w, const QString& name) {
  const QString dir = qEnvironmentVariable("HAP_SHOTS_DIR", QStringLiteral("/tmp/shots")) + QStringLiteral("/launch");
  QDir().mkpath(dir);
  QTest::qWait(50);  // charts lay out on posted events
  QVERIFY(w->grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png")));
}

// `count` little-endian uint16 token ids (i mod 128): a token file bert-tiny reads.
QByteArray tokens(int count) {
  QByteArray bytes;
  for (int i = 0; i < count; ++i) {
    bytes.append(static_cast<char>(i % 128));
    bytes.append('\0');
  }
  return bytes;
}

bool writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

// Types `text` into a spin box as a user does.
template <class Box>
void typeInto(Box* box, const QString& text) {
  box->setFocus();
  box->selectAll();
  QTest::keyClicks(box, text);
  QTest::keyClick(box, Qt::Key_Tab);
}

}  // namespace

class TstLaunchGui : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  QString m_db;
  std::unique_ptr<MainWindow> m_window;
  LaunchView* m_view = nullptr;
  QList<QUrl> m_openedUrls;

  // Clicks Start and waits until the run has begun (its id; 0 if it did not).
  qint64 clickStart() {
    QSignalSpy started(m_view, &LaunchView::runStarted);
    QTest::mouseClick(m_view->startButton(), Qt::LeftButton);
    if (!m_view->busy()) {
      qWarning() << "not started:" << (m_view->errorBar() ? m_view->errorBar()->message() : QString());
      return 0;
    }
    if (!started.wait(20000)) {
      qWarning() << "not started:" << (m_view->errorBar() ? m_view->errorBar()->message() : QString());
      return 0;
    }
    return started.first().first().toLongLong();
  }

  LaunchOutcome waitForEnd(QSignalSpy& finished, int ms) {
    if (finished.isEmpty()) finished.wait(ms);
    if (!finished.isEmpty()) return finished.first().first().value<LaunchOutcome>();
    LaunchOutcome none;
    none.kind = LaunchOutcome::Kind::Error;
    none.message = QStringLiteral("the run did not end in time");
    return none;
  }

  std::optional<db::RunRecord> recorded(qint64 run) {
    const db::Store store(m_db.toStdString(), db::Store::Mode::ReadOnly);
    return store.run(run);
  }
  size_t recordedRuns() { return db::Store(m_db.toStdString(), db::Store::Mode::ReadOnly).runs().size(); }
  int runFolders() { return QDir(m_dir.filePath("runs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(); }

  // The steps listed in the Checkpoints tab.
  QList<qint64> listedSteps() {
    QList<qint64> out;
    for (int r = 0; r < m_view->checkpointsModel()->rowCount(); ++r) out << m_view->checkpointsModel()->step(r);
    return out;
  }
  void selectCheckpoint(qint64 step) {
    const int row = m_view->checkpointsModel()->rowOfStep(step);
    QVERIFY2(row >= 0, qPrintable(QStringLiteral("no step-%1.pt listed").arg(step)));
    m_view->checkpointsTable()->selectRow(row);
    QCOMPARE(m_view->checkpointsTable()->currentIndex().row(), row);
  }

 public Q_SLOTS:
  // Open Folder's URL (QDesktopServices hands file: URLs here instead of to a file manager).
  void openUrl(const QUrl& url) { m_openedUrls << url; }

 private Q_SLOTS:
  void initTestCase() {
    hap::test::markChildren();  // every process this test starts, checked in cleanupTestCase
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("HAP Studio tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_launch_gui"));
    QSettings().clear();
    QVERIFY(m_dir.isValid());
    m_db = m_dir.filePath("store/profiles.db");
    qputenv("HAP_DB", m_db.toUtf8());
    qputenv("HAP_RUNS_DIR", m_dir.filePath("runs").toUtf8());
    qputenv("HAP_WORKER", HAP_WORKER_PATH);
    QDesktopServices::setUrlHandler(QStringLiteral("file"), this, "openUrl");

    m_window = std::make_unique<MainWindow>();
    m_window->resize(1600, 1100);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    m_window->resize(1600, 1100);  // again: offscreen, the first show may widen it
    m_view = m_window->launchView();
    QVERIFY(m_view);
    auto* dock = m_window->findChild<QDockWidget*>(QStringLiteral("dock.run"));
    QVERIFY(dock);
    QCOMPARE(dock->windowTitle(), QStringLiteral("Run"));
    // Tabbed with Search once both show (the bottom docks are hidden until they have content).
    auto* search = m_window->findChild<QDockWidget*>(QStringLiteral("dock.search"));
    search->show();
    dock->show();
    QVERIFY(m_window->tabifiedDockWidgets(dock).contains(search));
    QVERIFY(m_view->preflightArea());
    QCOMPARE(m_view->preflightArea()->objectName(), QStringLiteral("preflightArea"));
  }

  void cleanupTestCase() {
    QDesktopServices::unsetUrlHandler(QStringLiteral("file"));
    m_window.reset();
    QCOMPARE(processesWith(m_dir.path().toUtf8()).size(), 0);
    // No process this test started outlives it (checked by the process list).
    const QStringList left = hap::test::survivors();
    QVERIFY2(left.isEmpty(), qPrintable(left.join(QStringLiteral("; "))));
  }

  void cleanup() {
    // No test leaves a worker behind.
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(m_dir.path().toUtf8()).size(), 0, 10000);
  }

  // Open and plan through the window; the Run dock follows the plan.
  void openAndPlan() {
    MainWindow& w = *m_window;
    QVERIFY(!m_view->startButton()->isEnabled());
    QVERIFY(m_view->startButton()->toolTip().contains("Needs a plan"));
    QVERIFY(!m_view->checkButton()->isEnabled());
    QVERIFY(!w.action("run.launch")->isEnabled());
    QVERIFY(!w.action("run.stop")->isEnabled());
    QCOMPARE(m_view->shareBoxes().size(), size_t(0));
    QVERIFY(m_view->preflightSummary()->text().startsWith("Not checked yet"));
    QVERIFY(!m_view->preflightList()->isVisible());

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

    QVERIFY(m_view->startButton()->isEnabled());
    QVERIFY(m_view->checkButton()->isEnabled());
    QVERIFY(w.action("run.launch")->isEnabled());
    QCOMPARE(m_view->shareBoxes().size(), size_t(3));
    for (QDoubleSpinBox* b : m_view->shareBoxes()) QCOMPARE(b->value(), 1.0);
    // A slowdown per rank, 1 at first: no --slowdown unless one is set.
    QCOMPARE(m_view->slowdownBoxes().size(), size_t(3));
    QVERIFY(m_view->settings().slowdowns.empty());
    typeInto(m_view->slowdownBoxes()[2], QStringLiteral("4"));
    QCOMPARE(m_view->settings().slowdowns, (std::vector<double>{1, 1, 4}));
    typeInto(m_view->slowdownBoxes()[2], QStringLiteral("1"));
    QVERIFY(m_view->settings().slowdowns.empty());
    w.action(QStringLiteral("view.run"))->trigger();
    QTRY_VERIFY(m_view->isVisible() && !m_view->visibleRegion().isEmpty());
    w.resizeDocks({w.findChild<QDockWidget*>(QStringLiteral("dock.run"))}, {440}, Qt::Vertical);
    QCOMPARE(w.width(), 1600);  // the dock does not widen the window
  }

  // Check: the preflight of the form, without starting; one line when all is well, a row per
  // check when opened.
  void checkPasses() {
    const int folders = runFolders();
    QSignalSpy checked(m_view, &LaunchView::preflightFinished);
    QTest::mouseClick(m_view->checkButton(), Qt::LeftButton);
    QVERIFY(!m_view->busy());  // a Check does not hold the dock
    QVERIFY(checked.wait(20000));
    QCOMPARE(checked.first().first().toBool(), true);
    const auto& checks = m_view->preflightChecks();
    QCOMPARE(checks.size(), size_t(9));
    for (const runtime::PreflightCheck& c : checks)
      QVERIFY2(c.status == runtime::PreflightCheck::Status::Ok, (c.what + ": " + c.message).c_str());
    QCOMPARE(m_view->preflightSummary()->text(), QStringLiteral("All 9 checks passed  ▸"));
    QVERIFY(!m_view->preflightList()->isVisible());  // compact
    QCOMPARE(runFolders(), folders);  // nothing made in the runs folder
    QCOMPARE(processesWith(m_dir.path().toUtf8()).size(), 0);
    // The line opens into the list on a click, and closes again.
    QTest::mouseClick(m_view->preflightSummary(), Qt::LeftButton);
    QVERIFY(m_view->preflightList()->isVisible());
    QVERIFY(m_view->preflightSummary()->text().endsWith("▾"));
    auto* data = m_view->preflightList()->findChild<QLabel*>(QStringLiteral("preflight.Data"));
    QVERIFY(data);
    QVERIFY(data->text().contains("synthetic"));
    QVERIFY(data->wordWrap());
    QVERIFY(data->textInteractionFlags() & Qt::TextSelectableByMouse);
    shot(m_view, "preflight-passed");
    QTest::mouseClick(m_view->preflightSummary(), Qt::LeftButton);
    QVERIFY(!m_view->preflightList()->isVisible());
  }

  // 3 ranks with shares 1, 0.5, 0.25 for a few steps: the loss chart fills, the run is recorded,
  // the Measured dock shows it, its checkpoints are listed.
  void launchThreeRanks() {
    QVERIFY(m_window->plan());
    typeInto(m_view->shareBoxes()[1], QStringLiteral("0.5"));
    typeInto(m_view->shareBoxes()[2], QStringLiteral("0.25"));
    QCOMPARE(m_view->shareBoxes()[1]->value(), 0.5);
    QCOMPARE(m_view->shareBoxes()[2]->value(), 0.25);
    typeInto(m_view->stepsBox(), QStringLiteral("6"));
    typeInto(m_view->warmupBox(), QStringLiteral("1"));
    typeInto(m_view->checkpointEveryBox(), QStringLiteral("3"));
    QCOMPARE(m_view->settings().totalSteps(), 7);
    QCOMPARE(m_view->settings().worker.checkpointEvery, 3);

    QSignalSpy finished(m_view, &LaunchView::runFinished);
    QSignalSpy checked(m_view, &LaunchView::preflightFinished);
    const qint64 run = clickStart();
    QVERIFY(run > 0);
    QCOMPARE(checked.size(), 1);  // the preflight came first
    QCOMPARE(checked.first().first().toBool(), true);
    QVERIFY(!m_view->startButton()->isEnabled());
    QVERIFY(!m_view->checkButton()->isEnabled());
    QVERIFY(m_view->stopButton()->isEnabled());
    QVERIFY(m_window->action("run.stop")->isEnabled());
    QVERIFY(m_view->log(-1)->toPlainText().contains(QStringLiteral("$ ") + HAP_WORKER_PATH));

    QTRY_VERIFY_WITH_TIMEOUT(m_view->lossSeries() && m_view->lossSeries()->count() >= 3, 30000);
    const LaunchOutcome o = waitForEnd(finished, 30000);
    QVERIFY2(o.succeeded(), qPrintable(o.message));
    QCOMPARE(o.run, run);
    QVERIFY(m_view->startButton()->isEnabled());
    QVERIFY(!m_view->stopButton()->isEnabled());

    // Recorded in the store: succeeded, 3 ranks with their shares, 7 steps each.
    const std::optional<db::RunRecord> r = recorded(run);
    QVERIFY(r);
    QCOMPARE(r->status, db::RunStatus::Succeeded);
    QCOMPARE(r->ranks, 3);
    QCOMPARE(r->cpuShares, (std::vector<double>{1, 0.5, 0.25}));
    QVERIFY(QString::fromStdString(r->settingsJson).contains("\"steps\":\"6\""));
    const std::vector<db::StepRecord> steps = db::Store(m_db.toStdString(), db::Store::Mode::ReadOnly).steps(run);
    QCOMPARE(steps.size(), size_t(21));

    // The monitor: every step in, per rank, with the figures.
    QTRY_COMPARE_WITH_TIMEOUT(m_view->lossSeries()->count(), 7, 5000);
    QCOMPARE(m_view->stepTimeSeries().size(), size_t(3));
    for (QLineSeries* s : m_view->stepTimeSeries()) QCOMPARE(s->count(), 7);
    for (QLineSeries* s : m_view->cpuTimeSeries()) QCOMPARE(s->count(), 7);
    QCOMPARE(m_view->lossSeries()->at(6).y(), steps.back().loss);
    QCOMPARE(m_view->progressBar()->value(), 7);
    QCOMPARE(m_view->progressBar()->maximum(), 7);
    QCOMPARE(m_view->progressBar()->text(), QStringLiteral("Step 7 of 7"));
    QVERIFY(m_view->throughputLabel()->text().contains("samples/s"));
    QVERIFY(m_view->meanStepLabel()->text().contains(" ms"));
    QVERIFY(m_view->statusLabel()->text().contains("succeeded"));

    // Logs: All, then a tab per rank with that rank's lines, then the checkpoints.
    QCOMPARE(m_view->logTabs()->count(), 5);
    QCOMPARE(m_view->logTabs()->tabText(3), QStringLiteral("Rank 2"));
    QVERIFY(m_view->log(0)->toPlainText().contains("step 7/7: loss"));
    QVERIFY(m_view->log(-1)->toPlainText().contains("[rank 0] step 7/7: loss"));
    QVERIFY(!m_view->log(1)->toPlainText().contains("step 7/7"));  // rank 0 prints the steps

    // The run folder: the plan as Plan File… writes it, and the checkpoints every 3 steps and at the end.
    const QString folder = m_view->runFolder();
    QVERIFY(folder.startsWith(m_dir.filePath("runs") + "/"));
    QVERIFY(folder.endsWith("-bert-tiny"));
    QVERIFY(QFile::exists(folder + "/plan.json"));
    QVERIFY(QFile::exists(folder + "/checkpoints/step-7.pt"));
    QCOMPARE(m_view->checkpointFolder(), folder + "/checkpoints");
    QCOMPARE(listedSteps(), (QList<qint64>{3, 6, 7}));
    QCOMPARE(m_view->logTabs()->tabText(4), QStringLiteral("Checkpoints (3)"));
    QCOMPARE(m_view->checkpointsModel()->data(m_view->checkpointsModel()->index(0, CheckpointsModel::StepColumn)).toString(),
             QStringLiteral("step-3.pt"));
    QVERIFY(m_view->checkpointsModel()->data(m_view->checkpointsModel()->index(0, CheckpointsModel::SizeColumn),
                                             CheckpointsModel::ValueRole).toLongLong() > 0);
    QCOMPARE(m_view->checkpointsTable()->currentIndex().row(), 2);  // the newest selected
    QVERIFY(m_view->resumeButton()->isEnabled());
    QVERIFY(m_view->exportButton()->isEnabled());
    QVERIFY(m_view->openFolderButton()->isEnabled());
    m_view->logTabs()->setCurrentIndex(1);
    shot(m_view, "run-succeeded");
    m_view->logTabs()->setCurrentWidget(m_view->checkpointsPage());
    shot(m_view, "checkpoints");
    m_view->logTabs()->setCurrentIndex(0);
    shot(m_window.get(), "window-after-run");

    // Open Folder: the checkpoint folder, to the desktop's file manager.
    QTest::mouseClick(m_view->openFolderButton(), Qt::LeftButton);
    QCOMPARE(m_openedUrls, (QList<QUrl>{QUrl::fromLocalFile(folder + "/checkpoints")}));

    // The Measured dock shows the run against the prediction, and the Run dock stays on screen.
    QTRY_COMPARE_WITH_TIMEOUT(m_window->measuredView()->run().runId, int64_t(run), 5000);
    QVERIFY(m_view->isVisible() && !m_view->visibleRegion().isEmpty());

    // Opened again later from the store: the charts and the checkpoints.
    QVERIFY(m_view->showRecordedRun(m_db, run));
    QCOMPARE(m_view->lossSeries()->count(), 7);
    QVERIFY(m_view->statusLabel()->text().contains("succeeded"));
    QCOMPARE(listedSteps(), (QList<qint64>{3, 6, 7}));
    m_firstRun = run;
    m_firstFolder = folder;
  }

  // Resume From step-3.pt, then Start: the run goes on with step 4 to step 7.
  void resumeFromCheckpoint() {
    m_view->logTabs()->setCurrentWidget(m_view->checkpointsPage());
    selectCheckpoint(3);
    m_view->optimizerBox()->setCurrentIndex(m_view->optimizerBox()->findData("adam"));  // the checkpoint's wins
    QTest::mouseClick(m_view->resumeButton(), Qt::LeftButton);
    const QString checkpoint = m_firstFolder + "/checkpoints/step-3.pt";
    QCOMPARE(m_view->resumeEdit()->text(), checkpoint);
    QCOMPARE(m_view->optimizerBox()->currentData().toString(), QStringLiteral("sgd"));
    QCOMPARE(m_view->warmupBox()->value(), 1);
    QCOMPARE(m_view->stepsBox()->value(), 3);
    QVERIFY2(m_view->findChild<QLabel*>("checkpointsResult")->text().contains("step 4 to step 7"),
             qPrintable(m_view->findChild<QLabel*>("checkpointsResult")->text()));

    QSignalSpy finished(m_view, &LaunchView::runFinished);
    const qint64 run = clickStart();
    QVERIFY(run > 0);
    const LaunchOutcome o = waitForEnd(finished, 30000);
    QVERIFY2(o.succeeded(), qPrintable(o.message));
    QTRY_COMPARE_WITH_TIMEOUT(m_view->lossSeries()->count(), 4, 5000);
    QCOMPARE(m_view->monitor()->loss().first().x(), 4.0);  // N + 1
    QCOMPARE(m_view->monitor()->loss().last().x(), 7.0);
    QCOMPARE(m_view->progressBar()->text(), QStringLiteral("Step 7 of 7"));
    const std::vector<db::StepRecord> steps = db::Store(m_db.toStdString(), db::Store::Mode::ReadOnly).steps(run);
    QVERIFY(!steps.empty());
    QCOMPARE(steps.front().step, int64_t(4));
    QVERIFY(QString::fromStdString(recorded(run)->settingsJson).contains(checkpoint));
    // Its own checkpoints, in its own folder.
    QCOMPARE(m_view->checkpointFolder(), m_view->runFolder() + "/checkpoints");
    QCOMPARE(listedSteps(), (QList<qint64>{6, 7}));
    m_view->resumeEdit()->clear();
  }

  // Export Model… of the last checkpoint: the plan's ranks write a TorchScript file.
  void exportModel() {
    m_view->logTabs()->setCurrentWidget(m_view->checkpointsPage());
    selectCheckpoint(7);
    const QString path = m_dir.filePath("exported/bert-tiny-trained.pt");
    const size_t runsBefore = recordedRuns();
    QSignalSpy exported(m_view, &LaunchView::exportFinished);
    QSignalSpy finished(m_view, &LaunchView::runFinished);
    answerFileDialog(path);
    QTest::mouseClick(m_view->exportButton(), Qt::LeftButton);
    QVERIFY(exported.wait(30000));
    QVERIFY2(exported.first().at(0).toBool(), qPrintable(m_view->outcomeMessage()));
    QCOMPARE(exported.first().at(1).toString(), path);
    QVERIFY(QFileInfo(path).isFile());
    QVERIFY(QFileInfo(path).size() > 0);
    QVERIFY(m_view->outcomeMessage().startsWith("Model written to " + path));
    QVERIFY(m_view->findChild<QLabel*>("checkpointsResult")->text().startsWith("Model written to " + path));
    QCOMPARE(finished.size(), 0);  // not a training run
    QCOMPARE(m_view->lossSeries()->count(), 4);  // the shown run's charts stay
    QVERIFY(!m_view->busy());
    // Recorded with its own label.
    QCOMPARE(recordedRuns(), runsBefore + 1);
    const db::RunRecord r = db::Store(m_db.toStdString(), db::Store::Mode::ReadOnly).runs().front();
    QCOMPARE(QString::fromStdString(r.label), QStringLiteral("bert-tiny · export of step-7.pt · hap-studio"));
    QCOMPARE(r.status, db::RunStatus::Succeeded);
    shot(m_view, "exported");
  }

  // A long run stopped midway: every rank ends, none is left.
  void stopMidway() {
    typeInto(m_view->stepsBox(), QStringLiteral("100000"));
    QSignalSpy finished(m_view, &LaunchView::runFinished);
    const qint64 run = clickStart();
    QVERIFY(run > 0);
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(m_view->runFolder().toUtf8()).size(), 3, 20000);
    QTRY_VERIFY_WITH_TIMEOUT(m_view->monitor()->stepsDone() >= 4, 30000);
    // The checkpoint list follows the run's "checkpoint:" lines while it goes (every 3 steps).
    QTRY_VERIFY_WITH_TIMEOUT(listedSteps().contains(3), 10000);
    QVERIFY(m_view->busy());
    QVERIFY(m_view->progressBar()->text().startsWith("Step "));
    QVERIFY(m_view->progressBar()->text().endsWith(" of 100001"));
    QVERIFY(m_view->timeLeftLabel()->text().contains("min") || m_view->timeLeftLabel()->text().contains(" h "));
    shot(m_view, "run-going");
    QVERIFY(m_view->stopButton()->isEnabled());
    QTest::mouseClick(m_view->stopButton(), Qt::LeftButton);
    const LaunchOutcome o = waitForEnd(finished, 20000);
    QCOMPARE(o.kind, LaunchOutcome::Kind::Stopped);
    QCOMPARE(processesWith(m_view->runFolder().toUtf8()).size(), 0);
    QCOMPARE(processesWith(HAP_WORKER_PATH " " + m_dir.path().toUtf8()).size(), 0);
    QCOMPARE(recorded(run)->status, db::RunStatus::Stopped);
    QVERIFY(m_view->statusLabel()->text().contains("stopped"));
    QVERIFY(m_view->monitor()->stepsDone() >= 4);
    shot(m_view, "run-stopped");
  }

  // A 3-byte token file: the preflight refuses the start; no run is recorded, no process starts.
  void preflightRefusesBadData() {
    const QString bad = m_dir.filePath("bad-tokens.bin");
    QVERIFY(writeFile(bad, "abc"));
    typeInto(m_view->stepsBox(), QStringLiteral("5"));
    m_view->dataBox()->setCurrentIndex(m_view->dataBox()->findData("tokens"));
    QVERIFY(m_view->dataPathEdit()->isEnabled());
    // Without a file Start refuses, saying which field, and starts nothing.
    const int folders = runFolders();
    const size_t runs = recordedRuns();
    QTest::mouseClick(m_view->startButton(), Qt::LeftButton);
    QVERIFY(!m_view->busy());
    QVERIFY(m_view->errorBar() && m_view->errorBar()->isVisible());
    QVERIFY2(m_view->errorBar()->message().startsWith("Data file: --data tokens reads a file"),
             qPrintable(m_view->errorBar()->message()));
    QCOMPARE(runFolders(), folders);

    m_view->dataPathEdit()->setFocus();
    QTest::keyClicks(m_view->dataPathEdit(), bad);
    QSignalSpy checked(m_view, &LaunchView::preflightFinished);
    QSignalSpy started(m_view, &LaunchView::runStarted);
    QTest::mouseClick(m_view->startButton(), Qt::LeftButton);
    QVERIFY(m_view->busy());  // checking
    QVERIFY(!m_view->startButton()->isEnabled());
    QVERIFY(checked.wait(20000));
    QCOMPARE(checked.first().first().toBool(), false);
    QVERIFY(!m_view->busy());
    QVERIFY(m_view->startButton()->isEnabled());
    QTest::qWait(200);
    QCOMPARE(started.size(), 0);
    QCOMPARE(processesWith(m_dir.path().toUtf8()).size(), 0);  // no worker was started
    QCOMPARE(recordedRuns(), runs);                             // nothing recorded
    QCOMPARE(runFolders(), folders);                            // the run folder went again
    // Which check, and why: in the error bar and the list, open.
    QVERIFY(m_view->errorBar()->isVisible());
    const QString message = m_view->errorBar()->message();
    QVERIFY2(message.startsWith("Not started: Data: token file"), qPrintable(message));
    QVERIFY(message.contains("has 3 bytes"));
    QVERIFY(m_view->preflightSummary()->text().startsWith("1 of 9 checks failed: Data"));
    QVERIFY(m_view->preflightList()->isVisible());
    auto* data = m_view->preflightList()->findChild<QLabel*>(QStringLiteral("preflight.Data"));
    QVERIFY(data && data->text().contains("has 3 bytes"));
    QVERIFY(m_view->statusLabel()->text().contains("Not started"));
    shot(m_view, "preflight-failed");
  }

  // A token file that goes bad after the preflight passed (the preflight cannot foresee it): a rank
  // fails, and the dock shows the failed rank and its error, in the error bar and on its tab.
  void aRankFails() {
    const QString tokensFile = m_dir.filePath("tokens.bin");
    QVERIFY(writeFile(tokensFile, tokens(4000)));
    m_view->dataPathEdit()->setText(tokensFile);
    QMetaObject::Connection spoil = connect(m_view, &LaunchView::preflightFinished, this, [tokensFile](bool passed) {
      if (passed) QVERIFY(writeFile(tokensFile, "abc"));  // after the checks, before any worker starts
    });
    QSignalSpy finished(m_view, &LaunchView::runFinished);
    const qint64 run = clickStart();
    disconnect(spoil);
    QVERIFY(run > 0);
    QVERIFY(!m_view->preflightList()->isVisible());  // all is well again: one line
    QVERIFY(m_view->preflightSummary()->text().startsWith("All 9 checks passed"));
    const LaunchOutcome o = waitForEnd(finished, 30000);
    QCOMPARE(o.kind, LaunchOutcome::Kind::RankFailed);
    QVERIFY(o.failedRank >= 0 && o.failedRank < 3);
    QVERIFY(m_view->errorBar() && m_view->errorBar()->isVisible());
    const QString message = m_view->errorBar()->message();
    QVERIFY2(message.startsWith(QStringLiteral("Rank %1 failed (exit code 1): hap-worker: error: token file").arg(o.failedRank)),
             qPrintable(message));
    QVERIFY(message.contains("has 3 bytes"));
    QCOMPARE(m_view->logTabs()->tabText(o.failedRank + 1), QStringLiteral("Rank %1 — failed").arg(o.failedRank));
    QCOMPARE(m_view->logTabs()->currentIndex(), o.failedRank + 1);
    QVERIFY(m_view->log(o.failedRank)->toPlainText().contains("has 3 bytes"));
    QVERIFY(m_view->statusLabel()->text().contains(QStringLiteral("failed: rank %1").arg(o.failedRank)));
    const std::optional<db::RunRecord> r = recorded(run);
    QCOMPARE(r->status, db::RunStatus::Failed);
    QVERIFY(QString::fromStdString(r->exitReason).startsWith(QStringLiteral("rank %1: exit code 1").arg(o.failedRank)));
    shot(m_view, "run-failed");
    m_view->dataBox()->setCurrentIndex(m_view->dataBox()->findData("synthetic"));
  }

  // Stop while Start's preflight goes: nothing is launched or recorded, the run folder goes.
  void stopCancelsAStartBeingChecked() {
    const int folders = runFolders();
    const size_t runs = recordedRuns();
    QSignalSpy checked(m_view, &LaunchView::preflightFinished);
    QSignalSpy started(m_view, &LaunchView::runStarted);
    QSignalSpy busy(m_view, &LaunchView::busyChanged);
    QVERIFY(m_view->start());
    QVERIFY(m_view->busy());
    QVERIFY(m_view->stopButton()->isEnabled());
    QVERIFY(m_window->action("run.stop")->isEnabled());
    QTest::mouseClick(m_view->stopButton(), Qt::LeftButton);
    QVERIFY(!m_view->stopButton()->isEnabled());
    QVERIFY(checked.wait(20000));
    QVERIFY(!m_view->busy());
    QCOMPARE(busy.size(), 2);  // true, then false
    QTest::qWait(200);
    QCOMPARE(started.size(), 0);
    QCOMPARE(recordedRuns(), runs);
    QCOMPARE(runFolders(), folders);
    QCOMPARE(processesWith(m_dir.path().toUtf8()).size(), 0);
    QVERIFY(m_view->statusLabel()->text().contains("Start cancelled"));
  }

  // Profiles ▸ Runs ▸ Open in Run Panel: the first run's charts and checkpoints, later, from the store.
  void openInRunPanel() {
    MainWindow& w = *m_window;
    w.action(QStringLiteral("view.profiles"))->trigger();
    auto* profiles = w.findChild<ProfilesView*>();
    QVERIFY(profiles);
    QTRY_VERIFY(profiles->isVisible());
    QVERIFY(m_view->visibleRegion().isEmpty());  // the Profiles dock is on top
    profiles->reload();
    profiles->tabs()->setCurrentIndex(ProfilesView::RunsTab);
    const int row = profiles->runsModel()->rowOf(m_firstRun);
    QVERIFY(row >= 0);
    profiles->runsTable()->selectRow(row);
    QVERIFY(profiles->openInRunPanelAction()->isEnabled());
    QVERIFY(profiles->showMeasuredAction()->isEnabled());
    auto* button = profiles->findChild<QToolButton*>(QStringLiteral("openInRunPanel"));
    QVERIFY(button && button->isVisible());
    QTest::mouseClick(button, Qt::LeftButton);
    QTRY_VERIFY(m_view->isVisible() && !m_view->visibleRegion().isEmpty());
    QCOMPARE(m_view->monitor()->runId(), m_firstRun);
    QTRY_COMPARE_WITH_TIMEOUT(m_view->lossSeries()->count(), 7, 5000);
    for (QLineSeries* s : m_view->stepTimeSeries()) QCOMPARE(s->count(), 7);
    QCOMPARE(m_view->progressBar()->text(), QStringLiteral("Step 7 of 7"));
    QVERIFY(m_view->statusLabel()->text().contains(QStringLiteral("Run %1").arg(m_firstRun)));
    QCOMPARE(m_view->checkpointFolder(), m_firstFolder + "/checkpoints");
    QCOMPARE(listedSteps(), (QList<qint64>{3, 6, 7}));
    shot(m_view, "opened-from-profiles");
  }

  // Write Launch Scripts ▸ torchrun through its menu and folder dialog: the form's options.
  void writeScripts() {
    const QString dir = m_dir.filePath("scripts");
    QVERIFY(QDir().mkpath(dir));
    testing::whenMenu([](QMenu* menu) {
      QAction* torchrun = menu->findChild<QAction*>(QStringLiteral("scripts.%1").arg(0));
      QVERIFY(torchrun);
      menu->setActiveAction(torchrun);
      QTest::keyClick(menu, Qt::Key_Return);
    });
    answerFileDialog(dir);
    QTest::mouseClick(m_view->scriptsButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(dir + "/plan.json"), 10000);
    const QStringList scripts = QDir(dir).entryList({"run-*.sh"});
    QVERIFY(!scripts.isEmpty());
    QFile s(dir + "/" + scripts.first());
    QVERIFY(s.open(QIODevice::ReadOnly));
    const QByteArray text = s.readAll();
    QVERIFY2(text.contains("--steps 5"), text.constData());
    QVERIFY(!text.contains("--checkpoint-dir"));  // the run folder's default is local
  }

  // The form persists in QSettings; a view made later has it. The shares stay while the rank count
  // does and go back to 1 when a plan of another count comes.
  void settingsPersist() {
    typeInto(m_view->stepsBox(), QStringLiteral("9"));
    m_view->saveSettings();
    QSettings q;
    QCOMPARE(q.value("launch/steps").toInt(), 9);
    QCOMPARE(q.value("launch/checkpointEvery").toInt(), 3);
    {
      LaunchView later;
      QCOMPARE(later.stepsBox()->value(), 9);
      QCOMPARE(later.warmupBox()->value(), 1);
      QCOMPARE(later.checkpointEveryBox()->value(), 3);
      QVERIFY(later.resumeEdit()->text().isEmpty());
      later.setPlan(m_window->plan(), {});
      QCOMPARE(later.shareBoxes().size(), size_t(3));
      QCOMPARE(later.shareBoxes()[1]->value(), 0.5);
      QCOMPARE(later.shareBoxes()[2]->value(), 0.25);
    }
    // Another plan of the same ranks keeps them; a plan of 4 ranks resets them.
    MainWindow& w = *m_window;
    QVERIFY(w.openCluster(source("resources/clusters/local-cpu-4.yaml")));
    QSignalSpy planned(&w, &MainWindow::planFinished);
    QTest::mouseClick(w.planPanel()->planButton(), Qt::LeftButton);
    QVERIFY(planned.wait(60000));
    QCOMPARE(m_view->shareBoxes().size(), size_t(4));
    for (QDoubleSpinBox* b : m_view->shareBoxes()) QCOMPARE(b->value(), 1.0);
  }

  // Closing while a run goes: No keeps the window and the run; Yes stops every rank, then closes.
  void closeWhileRunning() {
    typeInto(m_view->stepsBox(), QStringLiteral("100000"));
    const int ranks = static_cast<int>(m_view->shareBoxes().size());
    const qint64 run = clickStart();
    QVERIFY(run > 0);
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(m_view->runFolder().toUtf8()).size(), ranks, 20000);
    const auto answer = [](QMessageBox::StandardButton button) {
      testing::whenDialog<QMessageBox>([button](QMessageBox* box) {
        QVERIFY(box->text().contains("A training run is going: stop it and quit?"));
        QTest::mouseClick(box->button(button), Qt::LeftButton);
      });
    };
    answer(QMessageBox::No);
    QVERIFY(!m_window->close());
    QVERIFY(m_window->isVisible());
    QVERIFY(m_view->busy());
    QCOMPARE(processesWith(m_view->runFolder().toUtf8()).size(), ranks);
    answer(QMessageBox::Yes);
    QVERIFY(m_window->close());
    QVERIFY(!m_view->busy());
    QCOMPARE(processesWith(m_view->runFolder().toUtf8()).size(), 0);  // reaped before the close returned
    QCOMPARE(recorded(run)->status, db::RunStatus::Stopped);
  }

 private:
  qint64 m_firstRun = 0;
  QString m_firstFolder;
};

QTEST_MAIN(TstLaunchGui)
#include "tst_launch_gui.moc"
