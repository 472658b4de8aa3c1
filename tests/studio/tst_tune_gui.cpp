// Run ▸ Tune… end to end through the main window (offscreen), with real hap-worker processes of
// this build: open the tiny MLP and local-cpu-hetero-3 (3 ranks on loopback), Run ▸ Tune… (next to
// Calibrate, enabled only with a model and a cluster open), see what is tuned (the Run dock has no
// plan: the cluster's shares 1, 0.5, 0.25), Start 2 rounds of a few steps; the table fills with
// every plan run, the chart gets a measured and a predicted point per row, the chosen plan is the
// measured best and is opened in the window (the shown plan is the tuned file), "Open Tuned Plan"
// opens it again; with the tuned plan shown, the dialog takes the Run dock's shares and
// slowdowns (a slowdown changed there shows); a second loop stopped midway ends in failed() saying
// it was interrupted; a third ends with the window closed; no worker is left behind (by /proc).
// The store ($HAP_DB, in a temporary folder) is seeded with a profile of the cluster's three
// device types, so that the loop does not profile first.
#include <QAction>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtCharts/QChartView>
#include <QtTest>

#include <memory>

#include "app/studio/core/models/tune_rounds_model.h"
#include "app/studio/widgets/launch_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/tune_dialog.h"
#include "db/store.h"
#include "engine/cost/profile.h"
#include "tests/studio/process_census.h"

using namespace hap;
using namespace hap::studio;
using hap::test::processesWith;

namespace {

QString zoo(const char* name) {
  return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name;
}
QString source(const char* name) {
  return qEnvironmentVariable("HAP_SOURCE_DIR") + "/" + name;
}

// A profile of local-cpu-hetero-3's device types as `hap profile --quick` would save one: a matmul
// curve per type at its CPU share, and the loopback collectives.
cost::Profile heteroProfile() {
  cost::Profile p;
  p.name = "local-cpu-hetero-3";
  p.host = "test";
  p.note = "made by tst_tune_gui";
  const std::pair<const char*, double> types[] = {
      {"cpu-full", 1}, {"cpu-half", 0.5}, {"cpu-quarter", 0.25}};
  for (const auto& [type, share] : types) {
    cost::DeviceProfile d;
    d.deviceType = type;
    d.description = "synthetic";
    d.threads = 1;
    d.ops.push_back({cost::OpFamily::MatMul,
                     ir::DType::Float32,
                     {{1e4, 20e-6 / share}, {1e6, 60e-6 / share}, {1e9, 50e-3 / share}}});
    p.devices.push_back(d);
  }
  for (cost::LinkClass k : {cost::LinkClass::Intra, cost::LinkClass::Inter}) {
    cost::CollectiveFit ar;
    ar.collective = cost::Collective::AllReduce;
    ar.algorithm = "ring";
    ar.linkClass = k;
    ar.link = {5e8, 300e-6};
    ar.ranks = 3;
    ar.samples = 5;
    p.collectives.push_back(ar);
  }
  return p;
}

}  // namespace

class TstTuneGui : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  QString m_db;
  std::unique_ptr<MainWindow> m_window;

 private Q_SLOTS:
  void initTestCase() {
    hap::test::markChildren();  // every process this test starts, checked in cleanupTestCase
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("HAP Studio tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_tune_gui"));
    QSettings().clear();
    QVERIFY(m_dir.isValid());
    m_db = m_dir.filePath("store/profiles.db");
    QVERIFY(QDir().mkpath(m_dir.filePath("store")));
    qputenv("HAP_DB", m_db.toUtf8());
    qputenv("HAP_RUNS_DIR", m_dir.filePath("runs").toUtf8());
    qputenv("HAP_WORKER", HAP_WORKER_PATH);
    qputenv("HAP_CLI", HAP_CLI_PATH);
    qputenv("XDG_DATA_HOME", m_dir.filePath("xdg-data").toUtf8());
    qputenv("XDG_CONFIG_HOME", m_dir.filePath("xdg-config").toUtf8());
    {
      db::Store store(m_db.toStdString());
      store.saveProfile(heteroProfile());
    }

    m_window = std::make_unique<MainWindow>();
    m_window->resize(1500, 940);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
  }

  void cleanupTestCase() {
    m_window.reset();
    QCOMPARE(processesWith(m_dir.path().toUtf8()).size(), 0);
    const QStringList left = hap::test::survivors();
    QVERIFY2(left.isEmpty(), qPrintable(left.join(QStringLiteral("; "))));
  }

  void actionNextToCalibrate() {
    QAction* tune = m_window->action(QStringLiteral("run.tune"));
    QVERIFY(tune);
    QCOMPARE(tune->text(), QStringLiteral("T&une…"));  // S&top Training Run has the T
    QMenu* run = nullptr;
    for (QAction* a : m_window->menuBar()->actions())
      if (a->text() == QStringLiteral("&Run")) run = a->menu();
    QVERIFY(run);
    const QList<QAction*> items = run->actions();
    const qsizetype calibrate = items.indexOf(m_window->action(QStringLiteral("run.calibrate")));
    QVERIFY(calibrate >= 0);
    QCOMPARE(items.value(calibrate + 1), tune);
    QVERIFY(!tune->isEnabled());  // nothing open

    QSignalSpy opened(m_window.get(), &MainWindow::modelOpened);
    m_window->openModel(zoo("mlp-tiny.pt"));
    QVERIFY(opened.wait(60000));
    QVERIFY(!tune->isEnabled());  // no cluster yet
    QVERIFY(m_window->openCluster(source("resources/clusters/local-cpu-hetero-3.yaml")));
    QVERIFY(tune->isEnabled());
  }

  void tunesAndOpensTheChosenPlan() {
    m_window->action(QStringLiteral("run.tune"))->trigger();
    TuneDialog* d = m_window->tuneDialog();
    QVERIFY(d);
    QTRY_VERIFY(d->isVisible());
    QVERIFY(!d->isModal());
    QVERIFY2(d->targetLabel()->text().contains("mlp-tiny.pt"),
             qPrintable(d->targetLabel()->text()));
    QVERIFY2(d->targetLabel()->text().contains("local-cpu-hetero-3"),
             qPrintable(d->targetLabel()->text()));
    QVERIFY2(d->targetLabel()->text().contains(m_db), qPrintable(d->targetLabel()->text()));
    QVERIFY2(d->emulationLabel()->text().contains("1, 0.5, 0.25"),
             qPrintable(d->emulationLabel()->text()));
    QVERIFY(d->startButton()->isEnabled());
    QVERIFY(!d->stopButton()->isEnabled());
    QVERIFY(!d->openPlanButton()->isEnabled());

    d->stepsBox()->setValue(3);
    d->warmupBox()->setValue(1);
    d->roundsBox()->setValue(2);
    const std::shared_ptr<const PlanDocument> before = m_window->plan();
    QSignalSpy ended(d, &TuneDialog::tuneFinished);
    QSignalSpy planOpened(m_window.get(), &MainWindow::planOpened);
    QTest::mouseClick(d->startButton(), Qt::LeftButton);
    QVERIFY(d->busy());
    QVERIFY(d->stopButton()->isEnabled());
    QVERIFY(!d->startButton()->isEnabled());
    QVERIFY(ended.wait(420000));
    QVERIFY2(ended.first().first().toBool(),
             qPrintable(d->messageLabel()->text() + "\n" + d->log()->toPlainText()));
    QVERIFY(!d->busy());

    // The table: every plan of every round, as hap tune prints them.
    TuneRoundsModel* rows = d->roundsModel();
    QVERIFY2(rows->rowCount() >= 2, qPrintable(d->log()->toPlainText()));
    QCOMPARE(d->roundsTable()->model(), rows);
    QCOMPARE(rows->index(0, TuneRoundsModel::RoundColumn).data().toString(), QStringLiteral("1"));
    QCOMPARE(rows->index(0, TuneRoundsModel::PlanColumn).data().toString(), QStringLiteral("hap"));
    bool baseline = false;
    for (int r = 0; r < rows->rowCount(); ++r) {
      QVERIFY(rows->run(r).measuredSeconds > 0);
      QVERIFY(rows->run(r).predictedSeconds > 0);
      baseline = baseline || rows->run(r).baseline();
      QVERIFY(rows->index(r, TuneRoundsModel::MeasuredColumn).data().toString().contains(" ± "));
    }
    QVERIFY(baseline);
    // The chart: a measured and a predicted point per row.
    QVERIFY(d->chartView() && d->chartView()->isVisible());
    QCOMPARE(d->chartPoints(true), rows->rowCount());
    QCOMPARE(d->chartPoints(false), rows->rowCount());

    // The chosen plan: the measured best, marked, said, written, and opened in the window.
    const std::shared_ptr<const tune::TuneResult> result = d->result();
    QVERIFY(result);
    const int chosen = rows->chosenRow();
    QVERIFY(chosen >= 0);
    QCOMPARE(rows->index(chosen, TuneRoundsModel::NoteColumn).data().toString(),
             QStringLiteral("chosen"));
    for (int r = 0; r < rows->rowCount(); ++r)
      QVERIFY(result->chosen.measuredSeconds <= rows->run(r).measuredSeconds);
    QVERIFY(d->resultLabel()->isVisible());
    QVERIFY2(d->resultLabel()->text().contains(
                 QStringLiteral("Chosen: %1").arg(QString::fromStdString(result->chosen.strategy))),
             qPrintable(d->resultLabel()->text()));
    QVERIFY(QFileInfo::exists(d->tunedPlanPath()));
    QVERIFY(d->tunedPlanPath().startsWith(m_dir.filePath("runs")));
    if (planOpened.isEmpty()) QVERIFY(planOpened.wait(60000));
    QVERIFY(m_window->plan());
    QVERIFY(m_window->plan() != before);
    QCOMPARE(QString::fromStdString(m_window->plan()->path), d->tunedPlanPath());
    QCOMPARE(QString::fromStdString(m_window->model()->path), zoo("mlp-tiny.pt"));

    // Open Tuned Plan opens it again.
    QVERIFY(d->openPlanButton()->isEnabled());
    const std::shared_ptr<const PlanDocument> first = m_window->plan();
    planOpened.clear();
    QTest::mouseClick(d->openPlanButton(), Qt::LeftButton);
    QVERIFY(planOpened.wait(60000));
    QVERIFY(m_window->plan() != first);
    QCOMPARE(QString::fromStdString(m_window->plan()->path), d->tunedPlanPath());

    // Every run is in the store; no worker is left.
    {
      db::Store store(m_db.toStdString(), db::Store::Mode::ReadOnly);
      int succeeded = 0;
      for (const db::RunRecord& run : store.runs())
        succeeded += run.status == db::RunStatus::Succeeded;
      QVERIFY(succeeded >= 2);
    }
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(m_dir.path().toUtf8()).size(), 0, 10000);
  }

  void stopMidway() {
    // The tuned plan is shown, so the Run dock has a share and a slowdown per rank: the dialog
    // takes them, as they are when it is opened.
    LaunchView* run = m_window->launchView();
    QVERIFY(run);
    QCOMPARE(run->shareBoxes().size(), size_t(3));
    QCOMPARE(run->slowdownBoxes().size(), size_t(3));
    run->slowdownBoxes()[2]->setValue(2);
    m_window->openTuneDialog();
    TuneDialog* d = m_window->tuneDialog();
    QVERIFY(d);
    QVERIFY2(d->emulationLabel()->text().contains("CPU share 1, 0.5, 0.25") &&
                 d->emulationLabel()->text().contains("slowed down 1, 1, 2") &&
                 d->emulationLabel()->text().contains("Run dock"),
             qPrintable(d->emulationLabel()->text()));
    QVERIFY(m_window->tuneSetup().slowdowns == (std::vector<double>{1, 1, 2}));
    QVERIFY(m_window->tuneSetup().cpuShares == (std::vector<double>{1, 0.5, 0.25}));
    run->slowdownBoxes()[2]->setValue(1);
    m_window->openTuneDialog();  // again: the setup is what the window has open now
    QVERIFY2(d->emulationLabel()->text().contains("slowed down 1, 1, 1"),
             qPrintable(d->emulationLabel()->text()));
    d->stepsBox()->setValue(5000);  // long enough to be stopped while a run goes
    d->warmupBox()->setValue(1);
    d->roundsBox()->setValue(3);
    QSignalSpy ended(d, &TuneDialog::tuneFinished);
    // A share changed in the Run dock while the dialog is open is the one Start runs.
    run->shareBoxes()[2]->setValue(0.5);
    QVERIFY(d->start());
    QVERIFY(d->setup().cpuShares == (std::vector<double>{1, 0.5, 0.5}));
    QVERIFY2(d->emulationLabel()->text().contains("CPU share 1, 0.5, 0.5"),
             qPrintable(d->emulationLabel()->text()));
    // While it runs, the dialog keeps what it started with.
    run->shareBoxes()[2]->setValue(0.25);
    m_window->openTuneDialog();
    QVERIFY(d->setup().cpuShares == (std::vector<double>{1, 0.5, 0.5}));
    // Stop once the first plan's workers run.
    QTRY_VERIFY_WITH_TIMEOUT(d->log()->toPlainText().contains("running hap"), 120000);
    QTRY_VERIFY2_WITH_TIMEOUT(!processesWith(d->folder().toUtf8()).isEmpty() || !d->busy(),
                              qPrintable(d->log()->toPlainText()), 120000);
    QVERIFY2(d->busy(), qPrintable(d->log()->toPlainText()));
    QTest::mouseClick(d->stopButton(), Qt::LeftButton);
    QVERIFY(!d->stopButton()->isEnabled());
    QVERIFY(ended.wait(60000));
    QCOMPARE(ended.first().first().toBool(), false);
    QVERIFY2(d->messageLabel()->text().contains("interrupted"),
             qPrintable(d->messageLabel()->text()));
    QVERIFY(!d->openPlanButton()->isEnabled());
    QVERIFY(d->startButton()->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(processesWith(m_dir.path().toUtf8()).size(), 0, 10000);
  }

  // Closing the window while a loop runs ends its workers before the window is gone.
  void closeWhileTuning() {
    m_window->openTuneDialog();
    TuneDialog* d = m_window->tuneDialog();
    QVERIFY(d);
    d->stepsBox()->setValue(5000);
    QVERIFY(d->start());
    const QString folder = d->folder();
    QTRY_VERIFY2_WITH_TIMEOUT(!processesWith(folder.toUtf8()).isEmpty() || !d->busy(),
                              qPrintable(d->log()->toPlainText()), 120000);
    QVERIFY2(d->busy(), qPrintable(d->log()->toPlainText()));
    QElapsedTimer clock;
    clock.start();
    m_window->close();
    m_window.reset();  // the dialog with it: its job stops the loop and waits
    QCOMPARE(processesWith(folder.toUtf8()).size(), 0);
    // Stopped, not run to its end (5000 steps): the loop's own thread pool is not the global one
    // that the window's other jobs wait for when they are destroyed.
    QVERIFY2(clock.elapsed() < 30000, qPrintable(QString::number(clock.elapsed())));
  }
};

QTEST_MAIN(TstTuneGui)
#include "tst_tune_gui.moc"
