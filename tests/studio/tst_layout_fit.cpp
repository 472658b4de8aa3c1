// Every view of the main window fits its text at the window sizes users have, from a laptop's
// 1280×720 to 1920×1080 (issue 31): with bert-tiny planned twice on the 4-device heterogeneous
// cluster (so that Compare has two plans), each dock is shown in turn, each tab of each, and no
// table header, chart axis label, chart or axis title, legend entry or bar label may be elided,
// cut by the chart's edge or drawn over another (elision_check.h). The Tune dialog too, at its
// own size. Also: the first start's layout gives the graph most of the window.
#include <QAction>
#include <QApplication>
#include <QDialog>
#include <QDockWidget>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QtTest>

#include <memory>

#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/plan_panel.h"
#include "engine/plan/plan_request.h"
#include "tests/studio/elision_check.h"
#include "tests/studio/view_helpers.h"

using namespace hap;
using namespace hap::studio;

namespace {

QString zoo(const char* name) { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name; }
QString source(const char* name) { return qEnvironmentVariable("HAP_SOURCE_DIR") + "/" + name; }

void settle(int ms = 250) {
  QApplication::processEvents();
  QTest::qWait(ms);
}

}  // namespace

class TstLayoutFit : public QObject {
  Q_OBJECT
  std::unique_ptr<MainWindow> m_window;

  bool plan(const char* ratios) {
    MainWindow& w = *m_window;
    plan::PlanRequest r = w.planPanel()->request();
    r.ratios = ratios;
    w.planPanel()->setRequest(r);
    QSignalSpy finished(&w, &MainWindow::planFinished);
    QSignalSpy failed(&w, &MainWindow::planFailed);
    QAction* a = w.action(QStringLiteral("plan.plan"));
    if (!a || !a->isEnabled()) {
      qWarning() << "plan.plan disabled:" << (a ? a->toolTip() : QString());
      return false;
    }
    a->trigger();
    for (int i = 0; i < 1200 && finished.isEmpty() && failed.isEmpty(); ++i) QTest::qWait(100);
    if (!failed.isEmpty()) qWarning() << "planning failed:" << failed.first().first().toString();
    return !finished.isEmpty();
  }

  // Each dock shown and raised in turn, each tab of each: what does not fit.
  QStringList everyView() {
    MainWindow& w = *m_window;
    QStringList out;
    auto check = [&](QWidget* root, const QString& where) {
      settle();
      for (const QString& m : testing::misfits(root)) out << where + QStringLiteral(": ") + m;
    };
    for (QDockWidget* d : w.findChildren<QDockWidget*>()) {
      if (d->isFloating()) continue;
      const bool hidden = d->isHidden();
      const QSize size = w.size();
      d->show();
      d->raise();
      for (int i = 0; i < 50 && d->visibleRegion().isEmpty(); ++i) QTest::qWait(100);
      if (d->visibleRegion().isEmpty()) {
        out << d->objectName() + QStringLiteral(": not on screen when raised");
        continue;
      }
      check(d, d->objectName());
      for (QTabWidget* tabs : d->findChildren<QTabWidget*>()) {
        if (!testing::shown(tabs)) continue;
        const int was = tabs->currentIndex();
        for (int i = 0; i < tabs->count(); ++i) {
          if (i == was) continue;
          tabs->setCurrentIndex(i);
          check(d, d->objectName() + QStringLiteral(" tab ") + tabs->tabText(i));
        }
        tabs->setCurrentIndex(was);
      }
      if (!qEnvironmentVariableIsEmpty("HAP_SHOTS_DIR"))
        testing::saveShot(w, QStringLiteral("layout-%1x%2-%3").arg(w.width()).arg(w.height()).arg(d->objectName()));
      if (w.size() != size)
        out << QStringLiteral("%1: the window grew from %2x%3 to %4x%5 (the dock's minimum size is %6x%7)")
                   .arg(d->objectName()).arg(size.width()).arg(size.height()).arg(w.width()).arg(w.height())
                   .arg(d->minimumSizeHint().width()).arg(d->minimumSizeHint().height());
      if (hidden) d->hide();  // as the user had it
      w.resize(size);
    }
    check(&w, QStringLiteral("window"));
    return out;
  }

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("HAP Studio tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_layout_fit"));
    QSettings().clear();
    m_window = std::make_unique<MainWindow>();
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
  }

  void cleanupTestCase() { m_window.reset(); }

  // A first start: the graph has most of the window, the docks without content are hidden.
  void firstStartGivesTheGraphTheWindow() {
    MainWindow& w = *m_window;
    QSignalSpy opened(&w, &MainWindow::modelOpened);
    w.openModel(zoo("bert-tiny.pt"));
    QVERIFY(opened.wait(60000));
    settle(500);
    const QSize graph = w.graphView()->size();
    QStringList docks;
    for (QDockWidget* d : w.findChildren<QDockWidget*>())
      if (d->isVisible()) docks << QStringLiteral("%1 %2x%3").arg(d->objectName()).arg(d->width()).arg(d->height());
    qInfo() << docks;
    QVERIFY2(graph.width() >= w.width() * 0.55 && graph.height() >= w.height() * 0.85,
             qPrintable(QStringLiteral("graph %1x%2 in a %3x%4 window")
                            .arg(graph.width()).arg(graph.height()).arg(w.width()).arg(w.height())));
    for (const char* name : {"dock.search", "dock.stages", "dock.ratios", "dock.baselines", "dock.explain",
                             "dock.compare", "dock.run", "dock.measured", "dock.profiles"}) {
      auto* d = w.findChild<QDockWidget*>(QString::fromLatin1(name));
      QVERIFY2(d && !d->isVisible(), name);
    }
  }

  void planTwice() {
    MainWindow& w = *m_window;
    w.openCluster(source("resources/clusters/a100-p100-4.yaml"));
    settle();
    QVERIFY(plan("lp"));
    QVERIFY(plan("even"));
    QVERIFY(w.plan());
    auto* search = w.findChild<QDockWidget*>(QStringLiteral("dock.search"));
    QVERIFY(search && search->isVisible());  // shown when planning started
  }

  void everyViewFits_data() {
    QTest::addColumn<QSize>("size");
    QTest::newRow("1280x720") << QSize(1280, 720);
    QTest::newRow("1920x1080") << QSize(1920, 1080);
  }

  void everyViewFits() {
    QFETCH(QSize, size);
    MainWindow& w = *m_window;
    w.resize(size);
    settle(500);
    if (w.size() != size) {
      for (QDockWidget* d : w.findChildren<QDockWidget*>())
        if (d->isVisible()) qWarning() << d->objectName() << "minimum" << d->minimumSizeHint() << d->widget()->minimumSizeHint();
    }
    QCOMPARE(w.size(), size);
    QStringList misfits = everyView();
    misfits.removeDuplicates();
    for (const QString& m : misfits) qWarning().noquote() << m;
    QVERIFY2(misfits.isEmpty(), qPrintable(QStringLiteral("%1 misfits (listed above)").arg(misfits.size())));
  }

  // View ▸ Graph Only at 1280×720 with the plan's panels open: the graph gets the window, and the
  // panels come back as they were (the same tabs on top); showing a panel ends it too.
  void graphOnlyGivesTheGraphTheWindow() {
    MainWindow& w = *m_window;
    w.resize(1280, 720);
    auto* stages = w.findChild<QDockWidget*>(QStringLiteral("dock.stages"));
    auto* properties = w.findChild<QDockWidget*>(QStringLiteral("dock.properties"));
    QVERIFY(stages && properties);
    stages->show();
    stages->raise();
    settle(400);
    const QSize before = w.graphView()->size();
    QStringList shown;
    for (QDockWidget* d : w.findChildren<QDockWidget*>())
      if (!d->isHidden()) shown << d->objectName();
    QVERIFY(shown.size() >= 3);
    QVERIFY2(before.height() < w.height() * 0.6, qPrintable(QStringLiteral("graph %1 high").arg(before.height())));

    QAction* graphOnly = w.action(QStringLiteral("view.graphOnly"));
    QVERIFY(graphOnly && graphOnly->isCheckable());
    graphOnly->trigger();
    settle(400);
    for (QDockWidget* d : w.findChildren<QDockWidget*>()) QVERIFY2(d->isHidden(), qPrintable(d->objectName()));
    const QSize alone = w.graphView()->size();
    QVERIFY2(alone.width() >= w.width() * 0.95 && alone.height() >= w.height() * 0.8,
             qPrintable(QStringLiteral("graph %1x%2 alone in a %3x%4 window")
                            .arg(alone.width()).arg(alone.height()).arg(w.width()).arg(w.height())));

    graphOnly->trigger();
    settle(400);
    QStringList back;
    for (QDockWidget* d : w.findChildren<QDockWidget*>())
      if (!d->isHidden()) back << d->objectName();
    QCOMPARE(back, shown);
    QVERIFY(!stages->visibleRegion().isEmpty());  // the tab that was on top is on top again
    QCOMPARE(w.graphView()->size(), before);

    // A panel shown while the graph is alone (a plan finished, View ▸ Panels) brings the rest back.
    graphOnly->trigger();
    settle(200);
    properties->toggleViewAction()->trigger();
    settle(400);
    QVERIFY(!graphOnly->isChecked());
    QVERIFY(!stages->isHidden());
  }

  void tuneDialogFits() {
    MainWindow& w = *m_window;
    QAction* tune = w.action(QStringLiteral("run.tune"));
    QVERIFY(tune && tune->isEnabled());
    tune->trigger();
    QDialog* dialog = nullptr;
    for (QWidget* top : QApplication::topLevelWidgets())
      if (top->isVisible() && top->inherits("hap::studio::TuneDialog")) dialog = qobject_cast<QDialog*>(top);
    QVERIFY(dialog);
    QVERIFY(QTest::qWaitForWindowExposed(dialog));
    settle(400);
    const QStringList misfits = testing::misfits(dialog);
    dialog->close();
    QVERIFY2(misfits.isEmpty(), qPrintable(misfits.join(QLatin1Char('\n'))));
  }
};

QTEST_MAIN(TstLayoutFit)
#include "tst_layout_fit.moc"
