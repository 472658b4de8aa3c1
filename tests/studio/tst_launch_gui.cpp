// The Run dock end to end through the main window (offscreen), with the build's hap-worker: open
// the tiny BERT and the 3-device local CPU cluster through File ▸ Open, plan with the Plan panel's
// button, then with clicks on the dock's own buttons: launch 3 ranks with CPU shares 1, 0.5, 0.25
// for a few steps, see the loss chart fill and the run recorded as succeeded in the store ($HAP_DB
// in a temporary folder); start a long run, Stop it midway and find no worker left (by /proc);
// make the ranks fail with a 3-byte token file and see the failed rank and its error; write
// torchrun scripts with the form's options; close the window while a run goes (No keeps it, Yes
// stops it) and find no worker left. Screenshots of the dock go to /tmp/shots/launch/
// ($HAP_SHOTS_DIR/launch).
#include <QAction>
#include <QApplication>
#include <QComboBox>
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
#include <QTabWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtTest>

#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/error_bar.h"
#include "app/studio/widgets/launch_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/plan_panel.h"
#include "db/store.h"
#include "tests/studio/ui_driver.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::answerFileDialog;

namespace {

QString zoo(const char* name) { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name; }
QString source(const char* name) { return qEnvironmentVariable("HAP_SOURCE_DIR") + "/" + name; }

// Every process (but this one) whose command line contains `needle`.
QList<qint64> processesWith(const QByteArray& needle) {
  QList<qint64> out;
  for (const QString& e : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    bool numeric = false;
    const qint64 id = e.toLongLong(&numeric);
    if (!numeric || id == QCoreApplication::applicationPid()) continue;
    QFile f(QStringLiteral("/proc/%1/cmdline").arg(e));
    if (!f.open(QIODevice::ReadOnly)) continue;
    QByteArray cmd = f.readAll();
    cmd.replace('\0', ' ');
    if (cmd.contains(needle)) out << id;
  }
  return out;
}

void shot(QWidget* w, const QString& name) {
  const QString dir = qEnvironmentVariable("HAP_SHOTS_DIR", QStringLiteral("/tmp/shots")) + QStringLiteral("/launch");
  QDir().mkpath(dir);
  QTest::qWait(50);  // charts lay out on posted events
  QVERIFY(w->grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png")));
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

  // Clicks Start and waits until the run has begun (its id; 0 if it did not).
  qint64 clickStart() {
    QSignalSpy started(m_view, &LaunchView::runStarted);
    QTest::mouseClick(m_view->startButton(), Qt::LeftButton);
    if (!m_view->busy()) {
      qWarning() << "not started:" << (m_view->errorBar() ? m_view->errorBar()->message() : QString());
      return 0;
    }
    if (!started.wait(20000)) return 0;
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

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("HAP Studio tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_launch_gui"));
    QSettings().clear();
    QVERIFY(m_dir.isValid());
    m_db = m_dir.filePath("store/profiles.db");
    qputenv("HAP_DB", m_db.toUtf8());
    qputenv("HAP_RUNS_DIR", m_dir.filePath("runs").toUtf8());
    qputenv("HAP_WORKER", HAP_WORKER_PATH);

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
    QVERIFY(m_window->tabifiedDockWidgets(dock).contains(m_window->findChild<QDockWidget*>(QStringLiteral("dock.search"))));
    QVERIFY(m_view->preflightArea());
    QCOMPARE(m_view->preflightArea()->objectName(), QStringLiteral("preflightArea"));
  }

  void cleanupTestCase() {
    m_window.reset();
    QCOMPARE(processesWith(m_dir.path().toUtf8()).size(), 0);
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
    QVERIFY(!w.action("run.launch")->isEnabled());
    QVERIFY(!w.action("run.stop")->isEnabled());
    QCOMPARE(m_view->shareBoxes().size(), size_t(0));

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
    QVERIFY(w.action("run.launch")->isEnabled());
    QCOMPARE(m_view->shareBoxes().size(), size_t(3));
    for (QDoubleSpinBox* b : m_view->shareBoxes()) QCOMPARE(b->value(), 1.0);
    w.action(QStringLiteral("view.run"))->trigger();
    QTRY_VERIFY(m_view->isVisible() && !m_view->visibleRegion().isEmpty());
    w.resizeDocks({w.findChild<QDockWidget*>(QStringLiteral("dock.run"))}, {440}, Qt::Vertical);
    QCOMPARE(w.width(), 1600);  // the dock does not widen the window
  }

  // 3 ranks with shares 1, 0.5, 0.25 for a few steps: the loss chart fills, the run is recorded.
  void launchThreeRanks() {
    QVERIFY(m_window->plan());
    typeInto(m_view->shareBoxes()[1], QStringLiteral("0.5"));
    typeInto(m_view->shareBoxes()[2], QStringLiteral("0.25"));
    QCOMPARE(m_view->shareBoxes()[1]->value(), 0.5);
    QCOMPARE(m_view->shareBoxes()[2]->value(), 0.25);
    typeInto(m_view->stepsBox(), QStringLiteral("6"));
    typeInto(m_view->warmupBox(), QStringLiteral("1"));
    QCOMPARE(m_view->settings().totalSteps(), 7);

    QSignalSpy finished(m_view, &LaunchView::runFinished);
    const qint64 run = clickStart();
    QVERIFY(run > 0);
    QVERIFY(!m_view->startButton()->isEnabled());
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

    // Logs: All, then a tab per rank with that rank's lines.
    QCOMPARE(m_view->logTabs()->count(), 4);
    QCOMPARE(m_view->logTabs()->tabText(3), QStringLiteral("Rank 2"));
    QVERIFY(m_view->log(0)->toPlainText().contains("step 7/7: loss"));
    QVERIFY(m_view->log(-1)->toPlainText().contains("[rank 0] step 7/7: loss"));
    QVERIFY(!m_view->log(1)->toPlainText().contains("step 7/7"));  // rank 0 prints the steps

    // The run folder: the plan as Plan File… writes it, and the checkpoint at the end.
    const QString folder = m_view->runFolder();
    QVERIFY(folder.startsWith(m_dir.filePath("runs") + "/"));
    QVERIFY(folder.endsWith("-bert-tiny"));
    QVERIFY(QFile::exists(folder + "/plan.json"));
    QVERIFY(QFile::exists(folder + "/checkpoints/step-7.pt"));
    m_view->logTabs()->setCurrentIndex(1);
    shot(m_view, "run-succeeded");
    m_view->logTabs()->setCurrentIndex(0);
    shot(m_window.get(), "window-after-run");

    // Opened again later from the store.
    m_view->showRecordedRun(m_db, run);
    QCOMPARE(m_view->lossSeries()->count(), 7);
    QVERIFY(m_view->statusLabel()->text().contains("succeeded"));
    m_firstRun = run;
  }

  // A long run stopped midway: every rank ends, none is left.
  void stopMidway() {
    typeInto(m_view->stepsBox(), QStringLiteral("100000"));
    QSignalSpy finished(m_view, &LaunchView::runFinished);
    const qint64 run = clickStart();
    QVERIFY(run > 0);
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(m_view->runFolder().toUtf8()).size(), 3, 20000);
    QTRY_VERIFY_WITH_TIMEOUT(m_view->monitor()->stepsDone() >= 4, 30000);
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

  // A bad data file: the failed rank and its error, in the error bar and on its tab.
  void aRankFails() {
    const QString bad = m_dir.filePath("bad-tokens.bin");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("abc");
    f.close();
    typeInto(m_view->stepsBox(), QStringLiteral("5"));
    m_view->dataBox()->setCurrentIndex(m_view->dataBox()->findData("tokens"));
    QVERIFY(m_view->dataPathEdit()->isEnabled());
    // Without a file Start refuses, saying which field, and starts nothing.
    const int folders = QDir(m_dir.filePath("runs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size();
    QTest::mouseClick(m_view->startButton(), Qt::LeftButton);
    QVERIFY(!m_view->busy());
    QVERIFY(m_view->errorBar() && m_view->errorBar()->isVisible());
    QVERIFY2(m_view->errorBar()->message().startsWith("Data file: --data tokens reads a file"),
             qPrintable(m_view->errorBar()->message()));
    QCOMPARE(QDir(m_dir.filePath("runs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), folders);
    m_view->dataPathEdit()->setFocus();
    QTest::keyClicks(m_view->dataPathEdit(), bad);
    QSignalSpy finished(m_view, &LaunchView::runFinished);
    const qint64 run = clickStart();
    QVERIFY(run > 0);
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

  // Closing while a run goes: No keeps the window and the run; Yes stops every rank, then closes.
  void closeWhileRunning() {
    typeInto(m_view->stepsBox(), QStringLiteral("100000"));
    const qint64 run = clickStart();
    QVERIFY(run > 0);
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(m_view->runFolder().toUtf8()).size(), 3, 20000);
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
    QCOMPARE(processesWith(m_view->runFolder().toUtf8()).size(), 3);
    answer(QMessageBox::Yes);
    QVERIFY(m_window->close());
    QVERIFY(!m_view->busy());
    QCOMPARE(processesWith(m_view->runFolder().toUtf8()).size(), 0);  // reaped before the close returned
    QCOMPARE(recorded(run)->status, db::RunStatus::Stopped);
  }

 private:
  qint64 m_firstRun = 0;
};

QTEST_MAIN(TstLaunchGui)
#include "tst_launch_gui.moc"
