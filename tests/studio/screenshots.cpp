// Renders the main window in the states a user sees into PNG files (scripts/screenshots.sh writes
// build/screenshots/; docs/ keeps one for the README). Driven through the same actions as the
// end-to-end test: the menu's actions, the find bar, the panels.
//
//   studio-screenshots OUT_DIR ZOO_DIR FIXTURE_DIR SOURCE_DIR HAP_CLI
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QLineEdit>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>
#include <QTimer>
#include <QTreeView>

#include <cstdio>

#include "app/studio/core/open_job.h"
#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/find_bar.h"
#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/inputs_dialog.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/plan_panel.h"
#include "engine/plan/plan_request.h"

using namespace hap::studio;

namespace {

bool settle(MainWindow& w, int ms = 30000) {
  QElapsedTimer clock;
  clock.start();
  while (clock.elapsed() < ms) {
    QTest::qWait(50);
    if (!w.openJob()->busy() && !w.graphView()->layoutBusy() &&
        w.graphView()->layoutState() == w.graphView()->collapseState())
      break;
  }
  QTest::qWait(150);
  return clock.elapsed() < ms;
}

bool save(QWidget& w, const QString& file) {
  const bool ok = w.grab().save(file);
  std::printf("%s %s\n", ok ? "wrote" : "FAILED", qPrintable(file));
  return ok;
}

void raiseDock(MainWindow& w, const char* name) {
  if (auto* d = w.findChild<QDockWidget*>(QString::fromLatin1(name))) {
    d->show();
    d->raise();
  }
}

}  // namespace

int main(int argc, char** argv) {
  QStandardPaths::setTestModeEnabled(true);
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("HAP Studio screenshots"));
  if (argc != 6) {
    std::fprintf(stderr, "usage: studio-screenshots OUT_DIR ZOO_DIR FIXTURE_DIR SOURCE_DIR HAP_CLI\n");
    return 2;
  }
  const QString out = argv[1], zoo = argv[2], fixtures = argv[3], source = argv[4], hap = argv[5];
  QDir().mkpath(out);
  bool ok = true;

  MainWindow w;
  w.resize(1500, 940);
  w.show();
  ok &= QTest::qWaitForWindowExposed(&w);

  // 1. A model and a cluster, as `hap-studio MODEL --cluster C` opens them: collapsed by scope.
  w.openCluster(source + "/resources/clusters/a100-p100-4.yaml");
  w.openModel(zoo + "/bert-tiny.pt");
  ok &= settle(w);
  w.graphView()->fitToWindow();
  ok &= save(w, out + "/main-collapsed.png");

  // 2. Find a node: its scope expands, the node is selected, its properties show.
  w.action("edit.find")->trigger();
  QTest::keyClicks(w.findBar()->lineEdit(), "softmax");
  QTest::keyClick(w.findBar()->lineEdit(), Qt::Key_Return);
  ok &= settle(w);
  ok &= save(w, out + "/main-find-properties.png");
  QTest::keyClick(w.findBar()->lineEdit(), Qt::Key_Escape);

  // 3. Everything expanded, coloured by FLOPs.
  w.action("view.expandAll")->trigger();
  ok &= settle(w);
  if (QAction* flops = w.action(QStringLiteral("view.colourBy.%1").arg(static_cast<int>(ColourBy::Flops)))) flops->trigger();
  QTest::qWait(100);
  w.graphView()->fitToWindow();
  ok &= save(w, out + "/main-expanded-flops.png");

  // 4. The cluster panel.
  raiseDock(w, "dock.cluster");
  w.clusterPanel()->view()->expandAll();
  QTest::qWait(100);
  ok &= save(w, out + "/cluster-panel.png");
  raiseDock(w, "dock.summary");

  // 5. A plan, verified and summarised.
  const QString plan = QDir::temp().filePath("hap-screenshot-plan.json");
  QProcess cli;
  cli.start(hap, {"plan", zoo + "/bert-tiny.pt", "-c", source + "/resources/clusters/a100-p100-4.yaml", "-o", plan, "-q"});
  if (cli.waitForFinished(180000) && cli.exitCode() == 0) {
    QSignalSpy opened(&w, &MainWindow::planOpened);
    w.openPlan(plan);
    opened.wait(60000);
    settle(w);
    raiseDock(w, "dock.plan");
    ok &= save(w, out + "/plan-summary.png");
    raiseDock(w, "dock.properties");
  } else {
    std::fprintf(stderr, "hap plan failed: %s\n", cli.readAllStandardError().constData());
    ok = false;
  }

  // 6. A file the CLI rejects: the message in the window, which stays usable.
  QSignalSpy failed(&w, &MainWindow::openFailed);
  w.openModel(fixtures + "/control_flow.pt");
  failed.wait(30000);
  QTest::qWait(150);
  ok &= save(w, out + "/error.png");

  // 7. A user's own torch.jit.save file without hap/inputs.json: the inputs dialog.
  QTimer::singleShot(0, [&] {
    auto poll = new QTimer(&w);
    QObject::connect(poll, &QTimer::timeout, [&, poll] {
      if (auto* d = qobject_cast<InputsDialog*>(QApplication::activeModalWidget())) {
        poll->stop();
        d->setRow("x", "64x8", "float32");
        d->setRow("y", "64", "int64", "0..4");
        QTest::qWait(100);
        ok &= save(*d, out + "/inputs-dialog.png");
        d->accept();
      }
    });
    poll->start(30);
  });
  QSignalSpy opened(&w, &MainWindow::modelOpened);
  w.openModel(fixtures + "/no_spec.pt");
  ok &= opened.wait(30000);
  settle(w);
  ok &= save(w, out + "/no-spec-opened.png");

  // 8. Planning in the app (issue 18): BERT-tiny on the heterogeneous 4-device cluster, then each
  //    plan view; with HAP_SCREENSHOT_MODEL and HAP_SCREENSHOT_CLUSTER set (e.g. BERT-Base on the
  //    64-GPU testbed), that model and cluster instead.
  const QString bigModel = qEnvironmentVariable("HAP_SCREENSHOT_MODEL");
  const QString bigCluster = qEnvironmentVariable("HAP_SCREENSHOT_CLUSTER");
  w.openCluster(bigCluster.isEmpty() ? source + "/resources/clusters/a100-p100-4.yaml" : bigCluster);
  QSignalSpy reopened(&w, &MainWindow::modelOpened);
  w.openModel(bigModel.isEmpty() ? zoo + "/bert-tiny.pt" : bigModel);
  ok &= reopened.wait(120000);
  settle(w);
  QSignalSpy planned(&w, &MainWindow::planFinished);
  raiseDock(w, "dock.plan");
  w.action("plan.plan")->trigger();
  // Mid-search (HAP_SCREENSHOT_SEARCHING_MS after Plan; a long search needs longer than a tiny one).
  QTest::qWait(qEnvironmentVariableIntValue("HAP_SCREENSHOT_SEARCHING_MS") > 0
                   ? qEnvironmentVariableIntValue("HAP_SCREENSHOT_SEARCHING_MS")
                   : 400);
  ok &= save(w, out + "/plan-searching.png");
  ok &= !planned.isEmpty() || planned.wait(600000);
  settle(w);
  if (QAction* form = w.action(QStringLiteral("view.colourBy.%1").arg(static_cast<int>(ColourBy::ShardingForm))))
    form->trigger();
  w.graphView()->fitToWindow();
  QTest::qWait(150);
  for (const char* dock : {"search", "stages", "ratios", "baselines", "explain"}) {
    raiseDock(w, (std::string("dock.") + dock).c_str());
    QTest::qWait(200);
    ok &= save(w, out + "/plan-" + dock + ".png");
  }
  // A second plan (even ratios) to compare with.
  w.planPanel()->setRequest([] {
    hap::plan::PlanRequest r;
    r.ratios = "even";
    return r;
  }());
  planned.clear();
  w.action("plan.plan")->trigger();
  ok &= planned.wait(600000);
  settle(w);
  raiseDock(w, "dock.compare");
  QTest::qWait(200);
  ok &= save(w, out + "/plan-compare.png");
  if (QAction* v = w.action(QStringLiteral("view.colourBy.%1").arg(static_cast<int>(ColourBy::Variant)))) v->trigger();
  QTest::qWait(200);
  ok &= save(w, out + "/plan-variants.png");
  return ok ? 0 : 1;
}
