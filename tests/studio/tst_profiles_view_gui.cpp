// The Profiles dock in the main window (offscreen), driven as a user does: $HAP_DB names a store
// filled through db::Store; View ▸ Profiles shows it; a click on a profile fills its device types
// and collective fits; on the Runs tab a click on a run fills its steps and the chart; F5 with
// focus in the view reads the store again; File ▸ Open Profile Store… through the file dialog, a
// text file as the store and a missing store are said in the view. Profile This Machine… runs the
// build's `hap profile` ($HAP_CLI) through its dialog and selects the new profile; a cancelled run
// leaves no process behind (checked in /proc); a missing hap is said in the view. Saves screenshots
// to /tmp/shots/ (or $HAP_SHOTS_DIR).
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtTest>

#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/profiles_view.h"
#include "tests/studio/profile_store_fixture.h"
#include "tests/studio/ui_driver.h"
#include "tests/studio/view_helpers.h"
#include "tests/studio/process_census.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::saveShot;

namespace {

using hap::test::alive;
using hap::test::childrenOf;
using hap::test::processesWith;

void clickRow(QAbstractItemView& view, int row) {
  const QModelIndex index = view.model()->index(row, 0);
  view.scrollTo(index);
  const QRect rect = view.visualRect(index);
  QVERIFY(rect.isValid());
  QTest::mouseClick(view.viewport(), Qt::LeftButton, Qt::NoModifier, rect.center());
}

// Answers the Profile This Machine dialog.
void answerProfileDialog(const QString& name, int ranks, bool quick, const QString& type = QStringLiteral("cpu")) {
  testing::whenDialog<QDialog>([=](QDialog* d) {
    QCOMPARE(d->objectName(), QStringLiteral("profileMachineDialog"));
    auto* nameEdit = d->findChild<QLineEdit*>(QStringLiteral("profileName"));
    auto* typeBox = d->findChild<QComboBox*>(QStringLiteral("profileDeviceType"));
    auto* ranksBox = d->findChild<QSpinBox*>(QStringLiteral("profileRanks"));
    auto* quickBox = d->findChild<QCheckBox*>(QStringLiteral("profileQuick"));
    auto* buttons = d->findChild<QDialogButtonBox*>();
    QVERIFY(nameEdit && typeBox && ranksBox && quickBox && buttons);
    // The defaults: this host, the open cluster's first device type (else cpu), 2 ranks, not quick.
    QCOMPARE(nameEdit->text(), QSysInfo::machineHostName());
    QCOMPARE(typeBox->currentText(), type);
    QCOMPARE(ranksBox->value(), 2);
    QVERIFY(!quickBox->isChecked());
    nameEdit->setText(name);
    ranksBox->setValue(ranks);
    if (quick) QTest::mouseClick(quickBox, Qt::LeftButton);
    QCOMPARE(quickBox->isChecked(), quick);
    QTest::mouseClick(buttons->button(QDialogButtonBox::Ok), Qt::LeftButton);
  });
}

}  // namespace

class TestProfilesViewGui : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    hap::test::markChildren();  // every process this test starts, checked in cleanupTestCase
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
    m_path = m_dir.filePath(QStringLiteral("profiles.db"));
    m_fixture = testing::fillStore(m_path);
    qputenv("HAP_DB", m_path.toUtf8());
  }

  void cleanupTestCase() {
    // No process this test started outlives it (checked by the process list).
    const QStringList left = hap::test::survivors();
    QVERIFY2(left.isEmpty(), qPrintable(left.join(QStringLiteral("; "))));
  }

  void browseTheStoreInTheMainWindow() {
    MainWindow w;
    w.resize(1500, 940);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("dock.profiles"));
    QVERIFY(dock);
    QCOMPARE(dock->windowTitle(), QStringLiteral("Profiles"));
    auto* view = w.findChild<ProfilesView*>();
    QVERIFY(view);
    QCOMPARE(view->storePath(), m_path);
    QVERIFY(w.action(QStringLiteral("file.openStore")));
    QCOMPARE(w.action(QStringLiteral("profiles.refresh")), view->refreshAction());

    // View ▸ Profiles raises the dock, which reads the store.
    QSignalSpy loaded(view, &ProfilesView::storeLoaded);
    w.action(QStringLiteral("view.profiles"))->trigger();
    QTRY_VERIFY(view->isVisible());
    QTRY_COMPARE(view->profilesModel()->rowCount(), 3);  // read when first shown
    QVERIFY2(view->error().isEmpty(), qPrintable(view->error()));
    QVERIFY(view->message()->isHidden());
    QCOMPARE(view->profilesModel()->rowCount(), 3);
    QCOMPARE(view->devicesModel()->rowCount(), 0);

    // A click on lab-cpu version 1 fills its device types and fits.
    clickRow(*view->profilesTable(), 1);
    QCOMPARE(view->devicesModel()->rowCount(), 2);
    QCOMPARE(view->devicesModel()->profile()->version, 1);
    QCOMPARE(view->devicesModel()->rowCount(view->devicesModel()->index(0, 0)), 2);
    QVERIFY(view->devicesTree()->isExpanded(view->devicesModel()->index(0, 0)));
    QCOMPARE(view->collectivesModel()->rowCount(), 2);
    // The older profile has one device and no fits.
    clickRow(*view->profilesTable(), 2);
    QCOMPARE(view->devicesModel()->rowCount(), 1);
    QCOMPARE(view->collectivesModel()->rowCount(), 0);
    clickRow(*view->profilesTable(), 0);
    QCOMPARE(view->devicesModel()->profile()->version, 2);
    QTest::qWait(50);
    saveShot(*dock, QStringLiteral("profiles-dock-profiles"));

    // Runs: click the tab, then the first run (the older one, second row).
    QTabBar* bar = view->tabs()->tabBar();
    QTest::mouseClick(bar, Qt::LeftButton, Qt::NoModifier, bar->tabRect(ProfilesView::RunsTab).center());
    QCOMPARE(view->tabs()->currentIndex(), int(ProfilesView::RunsTab));
    QCOMPARE(view->runsModel()->rowCount(), 2);
    clickRow(*view->runsTable(), 1);
    QCOMPARE(view->stepsModel()->runId(), m_fixture.firstRun);
    QCOMPARE(view->stepsModel()->rowCount(), 4);
    QVERIFY(view->lossSeries());
    QCOMPARE(view->lossSeries()->count(), 4);
    QCOMPARE(view->lossSeries()->at(3), QPointF(4, testing::fixtureLoss(4)));
    QCOMPARE(view->stepTimeSeries().size(), size_t{2});
    for (int rank = 0; rank < 2; ++rank) {
      QCOMPARE(view->stepTimeSeries()[size_t(rank)]->count(), 4);
      QVERIFY(std::abs(view->stepTimeSeries()[size_t(rank)]->at(0).y() - testing::fixtureStepSeconds(rank, 1) * 1e3) < 1e-9);
    }
    QTest::qWait(50);
    saveShot(*dock, QStringLiteral("profiles-dock-runs"));

    // Something new is recorded; F5 with focus in the runs table reads it, keeping the selection.
    {
      db::Store s(m_path.toStdString());
      db::RunRecord r;
      r.label = "third";
      r.ranks = 1;
      r.startedAt = "2026-11-23T09:00:00Z";
      const int64_t id = s.beginRun(r);
      s.finishRun(id, db::RunStatus::Stopped);
    }
    view->runsTable()->setFocus();
    QTRY_VERIFY(view->runsTable()->hasFocus());
    loaded.clear();
    QTest::keyClick(view->runsTable(), Qt::Key_F5);
    QCOMPARE(loaded.size(), 1);
    QCOMPARE(view->runsModel()->rowCount(), 3);
    QCOMPARE(view->runsModel()->index(0, RunsModel::LabelColumn).data().toString(), QStringLiteral("third"));
    QCOMPARE(view->stepsModel()->runId(), m_fixture.firstRun);
    QCOMPARE(view->runsTable()->currentIndex().row(), 2);

    // File ▸ Open Profile Store…: a text file is said in the view, not thrown.
    const QString text = m_dir.filePath(QStringLiteral("notes.txt"));
    {
      QFile f(text);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("not a database\n");
    }
    testing::answerFileDialog(text);
    w.action(QStringLiteral("file.openStore"))->trigger();
    QCOMPARE(view->storePath(), text);
    QVERIFY(view->message()->isVisible());
    QVERIFY2(view->message()->text().contains(text), qPrintable(view->message()->text()));
    QCOMPARE(view->runsModel()->rowCount(), 0);
    QCOMPARE(view->profilesModel()->rowCount(), 0);
    QCOMPARE(view->stepsModel()->rowCount(), 0);
    QVERIFY(!view->lossSeries());

    // The Open Store… button, back to the store.
    testing::answerFileDialog(m_path);
    QTest::mouseClick(view->openButton(), Qt::LeftButton);
    QCOMPARE(view->storePath(), m_path);
    QVERIFY(view->message()->isHidden());
    QCOMPARE(view->runsModel()->rowCount(), 3);
  }

  void profileThisMachine() {
    qputenv("HAP_CLI", HAP_CLI_PATH);
    QTemporaryDir dir;  // a store of its own: the other tests count the shared one's rows
    const QString store = dir.filePath(QStringLiteral("profiled.db"));
    testing::fillStore(store);
    ProfilesView view;
    view.setStorePath(store);
    view.resize(1200, 520);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const int before = view.profilesModel()->rowCount();
    QCOMPARE(before, 3);
    auto* action = view.findChild<QAction*>(QStringLiteral("profiles.profileMachine"));
    QVERIFY(action);
    QCOMPARE(action, view.profileMachineAction());
    QVERIFY(!view.profileLog()->isVisible());

    QVERIFY(!view.useProfileButton()->isVisible());
    view.setClusterDeviceTypes({QStringLiteral("cpu-core"), QStringLiteral("cpu-half")});
    QSignalSpy done(&view, &ProfilesView::profileFinished);
    answerProfileDialog(QStringLiteral("studio-quick"), 1, true, QStringLiteral("cpu-core"));
    action->trigger();
    QVERIFY(view.profileLog()->isVisible());
    QVERIFY(QTest::qWaitFor([&] { return done.size() == 1; }, 60000));
    QVERIFY2(done[0][0].toBool(), qPrintable(done[0][1].toString() + "\n" + view.profileLog()->toPlainText()));
    const QString log = view.profileLog()->toPlainText();
    QVERIFY2(log.contains(QStringLiteral("--ranks 1")) && log.contains(QStringLiteral("--quick")) &&
                 log.contains(QStringLiteral("no collective benchmarks")) &&
                 log.contains(QStringLiteral("profile studio-quick v1 saved to %1").arg(store)),
             qPrintable(log));
    QCOMPARE(view.profilesModel()->rowCount(), before + 1);
    const db::ProfileInfo* info = view.profilesModel()->info(view.profilesTable()->currentIndex().row());
    QVERIFY(info);
    QCOMPARE(QString::fromStdString(info->name), QStringLiteral("studio-quick"));
    QCOMPARE(info->version, 1);
    QCOMPARE(view.devicesModel()->rowCount(), 1);  // device type cpu-core
    // Use for the Open Cluster: the profile just saved, from this store.
    QVERIFY(view.useProfileButton()->isVisible());
    QSignalSpy use(&view, &ProfilesView::useProfileRequested);
    QTest::mouseClick(view.useProfileButton(), Qt::LeftButton);
    QCOMPARE(use.size(), 1);
    QCOMPARE(use[0][0].toString(), QStringLiteral("studio-quick@1"));
    QCOMPARE(use[0][1].toString(), store);
    QVERIFY(!view.cancelProfileButton()->isEnabled());
    QVERIFY(action->isEnabled());
    QVERIFY(view.message()->isHidden());
    saveShot(view, QStringLiteral("profiles-profiled"));
  }

  void cancelLeavesNoProcess() {
    qputenv("HAP_CLI", HAP_CLI_PATH);
    QTemporaryDir dir;
    const QString store = dir.filePath(QStringLiteral("cancel.db"));
    ProfilesView view;
    view.setStorePath(store);
    view.resize(1200, 520);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy done(&view, &ProfilesView::profileFinished);
    QSignalSpy lines(view.profileJob(), &ProfileJob::progress);
    answerProfileDialog(QStringLiteral("studio-cancel"), 2, false);
    view.profileMachineAction()->trigger();
    QVERIFY(view.profileJob()->busy());
    const qint64 pid = view.profileJob()->processId();
    QVERIFY(pid > 0);
    QVERIFY(QTest::qWaitFor([&] { return alive(pid, "hap profile"); }, 5000));
    QVERIFY(!view.profileMachineAction()->isEnabled());
    // Let it get going (its first line), note its children, then Cancel.
    QVERIFY(QTest::qWaitFor([&] { return !lines.isEmpty(); }, 30000));
    const QList<qint64> children = childrenOf(pid);
    QVERIFY(view.cancelProfileButton()->isEnabled());
    QTest::mouseClick(view.cancelProfileButton(), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return done.size() == 1; }, 10000));
    QVERIFY(!done[0][0].toBool());
    QCOMPARE(done[0][1].toString(), QStringLiteral("Cancelled"));
    QVERIFY(!view.profileJob()->busy());
    QVERIFY(!view.profileJob()->process());
    QVERIFY(view.profileMachineAction()->isEnabled());
    QVERIFY(view.profileLog()->toPlainText().contains(QStringLiteral("Failed: Cancelled")));
    // No process left: not hap, not its ranks, nothing naming this store.
    QVERIFY(QTest::qWaitFor([&] { return !alive(pid, "hap profile"); }, 5000));
    for (qint64 child : children) QVERIFY(QTest::qWaitFor([&] { return !alive(child, "hap profile"); }, 5000));
    QVERIFY(childrenOf(pid).isEmpty());
    QVERIFY2(processesWith(store.toUtf8()).isEmpty(), "a process naming the store is left");
    QVERIFY(view.profilesModel()->rowCount() == 0);
  }

  void cancelDuringTheCollectives() {
    // Cancelled while the ranks run: they go with hap.
    qputenv("HAP_CLI", HAP_CLI_PATH);
    QTemporaryDir dir;
    ProfileJob job;
    QSignalSpy done(&job, &ProfileJob::finished);
    bool collectives = false;
    connect(&job, &ProfileJob::progress, this, [&](const QString& line) {
      if (line.contains(QStringLiteral("collective benchmarks among"))) collectives = true;
    });
    ProfileOptions o;
    o.name = QStringLiteral("studio-ranks");
    o.ranks = 3;
    o.quick = true;
    o.storePath = dir.filePath(QStringLiteral("ranks.db"));
    QVERIFY(job.start(o));
    const qint64 pid = job.processId();
    QList<qint64> ranks;
    QVERIFY(QTest::qWaitFor([&] {
      if (collectives) ranks = childrenOf(pid);
      return ranks.size() == 3 || !done.isEmpty();
    }, 30000));
    QVERIFY2(done.isEmpty(), "hap profile ended before its ranks were seen");
    job.cancel();
    QVERIFY(QTest::qWaitFor([&] { return done.size() == 1; }, 10000));
    QCOMPARE(done[0][1].toString(), QStringLiteral("Cancelled"));
    QVERIFY(!alive(pid, "hap profile"));
    for (qint64 rank : ranks) QVERIFY(QTest::qWaitFor([&] { return !alive(rank, "profile-worker"); }, 5000));
  }

  void destroyingTheJobKillsTheChild() {
    qputenv("HAP_CLI", HAP_CLI_PATH);
    QTemporaryDir dir;
    qint64 pid = 0;
    {
      ProfileJob job;
      ProfileOptions o;
      o.ranks = 2;
      o.storePath = dir.filePath(QStringLiteral("gone.db"));
      QVERIFY(job.start(o));
      pid = job.processId();
      QVERIFY(QTest::qWaitFor([&] { return alive(pid, "hap profile"); }, 5000));
    }
    QVERIFY(QTest::qWaitFor([&] { return !alive(pid, "hap profile"); }, 5000));
  }

  void missingHapIsSaid() {
    qputenv("HAP_CLI", m_dir.filePath(QStringLiteral("no-such-hap")).toUtf8());
    ProfilesView view;
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy done(&view, &ProfilesView::profileFinished);
    ProfileOptions o;
    o.quick = true;
    view.profileMachine(o);
    QCOMPARE(done.size(), 1);
    QVERIFY(!done[0][0].toBool());
    QVERIFY2(done[0][1].toString().contains(QStringLiteral("HAP_CLI")), qPrintable(done[0][1].toString()));
    QVERIFY(view.message()->isVisible());
    QVERIFY(view.message()->text().contains(QStringLiteral("no-such-hap")));
    QVERIFY(view.profileMachineAction()->isEnabled());
    qputenv("HAP_CLI", HAP_CLI_PATH);
  }

  void missingStoreSaysWhatToDo() {
    const QString missing = m_dir.filePath(QStringLiteral("none/profiles.db"));
    qputenv("HAP_DB", missing.toUtf8());
    ProfilesView view;
    view.resize(1200, 420);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.storePath(), missing);
    QVERIFY(view.message()->isVisible());
    QCOMPARE(view.message()->text(),
             QStringLiteral("No profile store at %1: run `hap profile` or `hap launch --db %1`").arg(missing));
    QCOMPARE(view.profilesModel()->rowCount(), 0);
    auto* hint = view.findChild<QLabel*>(QStringLiteral("profilesHint"));
    QVERIFY(hint && hint->isVisible());
    QVERIFY(hint->text().contains(QStringLiteral("hap profile --db %1").arg(missing)));
    QVERIFY(!QFile::exists(missing));  // browsing creates nothing
    saveShot(view, QStringLiteral("profiles-missing"));

    // Typing the store's path and Enter shows it.
    view.pathEdit()->setText(m_path);
    QTest::keyClick(view.pathEdit(), Qt::Key_Return);
    QCOMPARE(view.storePath(), m_path);
    QVERIFY(view.message()->isHidden());
    QCOMPARE(view.profilesModel()->rowCount(), 3);
    QVERIFY(hint->text().contains(QStringLiteral("Select a profile")));
    qputenv("HAP_DB", m_path.toUtf8());
  }

 private:
  QTemporaryDir m_dir;
  QString m_path;
  testing::StoreFixture m_fixture;
};

QTEST_MAIN(TestProfilesViewGui)
#include "tst_profiles_view_gui.moc"
