// The Profiles dock in the main window (offscreen), driven as a user does: $HAP_DB names a store
// filled through db::Store; View ▸ Profiles shows it; a click on a profile fills its device types
// and collective fits; on the Runs tab a click on a run fills its steps and the chart; F5 with
// focus in the view reads the store again; File ▸ Open Profile Store… through the file dialog, a
// text file as the store and a missing store are said in the view. Saves screenshots to
// /tmp/shots/ (or $HAP_SHOTS_DIR).
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
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

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::saveShot;

namespace {

void clickRow(QAbstractItemView& view, int row) {
  const QModelIndex index = view.model()->index(row, 0);
  view.scrollTo(index);
  const QRect rect = view.visualRect(index);
  QVERIFY(rect.isValid());
  QTest::mouseClick(view.viewport(), Qt::LeftButton, Qt::NoModifier, rect.center());
}

}  // namespace

class TestProfilesViewGui : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
    m_path = m_dir.filePath(QStringLiteral("profiles.db"));
    m_fixture = testing::fillStore(m_path);
    qputenv("HAP_DB", m_path.toUtf8());
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
