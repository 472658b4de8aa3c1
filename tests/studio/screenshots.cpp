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
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QTreeView>

#include <cmath>
#include <cstdio>

#include "app/studio/core/jobs/open_job.h"
#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/find_bar.h"
#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/inputs_dialog.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/plan_panel.h"
#include "app/studio/widgets/profiles_view.h"
#include "db/store.h"
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

// A profile store as `hap profile` and three recorded runs leave it (3 ranks at CPU shares 1, 0.5,
// 0.25), for the Profiles dock's picture.
void fillProfileStore(const QString& path) {
  namespace cost = hap::cost;
  hap::db::Store s(path.toStdString());
  cost::Profile p;
  p.name = "this-machine";
  p.host = "bench-host";
  p.note = "hap profile --quick";
  p.createdAt = "2026-11-24T09:12:40Z";
  const double shares[] = {1, 0.5, 0.25};
  const char* names[] = {"cpu-full", "cpu-half", "cpu-quarter"};
  for (int d = 0; d < 3; ++d) {
    cost::DeviceProfile dev;
    dev.deviceType = names[d];
    dev.description = QStringLiteral("cpu: Intel Xeon @ 2.2GHz, 2 threads, share %1").arg(shares[d]).toStdString();
    dev.threads = 2;
    dev.memoryBandwidth = 9.6e9 * shares[d];
    struct Op {
      cost::OpFamily family;
      hap::ir::DType dtype;
      double work0, rate;
    };
    for (const Op& o : {Op{cost::OpFamily::MatMul, hap::ir::DType::Float32, 2e5, 6.1e10},
                        Op{cost::OpFamily::Convolution, hap::ir::DType::Float32, 1e6, 3.2e10},
                        Op{cost::OpFamily::Elementwise, hap::ir::DType::Float32, 4096, 4.4e9},
                        Op{cost::OpFamily::Softmax, hap::ir::DType::Float32, 4096, 2.1e9},
                        Op{cost::OpFamily::Normalization, hap::ir::DType::Float32, 4096, 1.7e9},
                        Op{cost::OpFamily::Embedding, hap::ir::DType::Float32, 4096, 3.3e9}}) {
      cost::OpThroughput t;
      t.family = o.family;
      t.dtype = o.dtype;
      for (int k = 0; k < 5; ++k) {
        const double work = o.work0 * std::pow(8.0, k);
        t.samples.push_back({work, 4e-6 + work / (o.rate * shares[d] * (0.55 + 0.1 * k))});
      }
      dev.ops.push_back(t);
    }
    p.devices.push_back(dev);
  }
  auto fit = [](cost::Collective c, const char* algorithm, double latency, double bandwidth, double residual) {
    cost::CollectiveFit f;
    f.collective = c;
    f.algorithm = algorithm;
    f.linkClass = cost::LinkClass::Intra;
    f.link.latency = latency;
    f.link.bandwidth = bandwidth;
    f.ranks = 3;
    f.samples = 8;
    f.relativeResidual = residual;
    return f;
  };
  p.collectives = {fit(cost::Collective::AllReduce, "ring", 3.1e-5, 2.4e9, 0.047),
                   fit(cost::Collective::AllGather, "padded", 2.7e-5, 2.9e9, 0.052),
                   fit(cost::Collective::AllGather, "grouped", 4.4e-5, 2.2e9, 0.081),
                   fit(cost::Collective::ReduceScatter, "padded", 2.9e-5, 2.6e9, 0.061),
                   fit(cost::Collective::AllToAll, "", 5.2e-5, 1.8e9, 0.094),
                   fit(cost::Collective::Broadcast, "", 1.9e-5, 3.4e9, 0.038)};
  s.saveProfile(p);
  p.note = "hap calibrate: 6 runs, 3 plans";
  p.host.clear();
  p.createdAt = "2026-11-25T16:40:03Z";
  for (cost::DeviceProfile& d : p.devices) d.computeScale = 1.18, d.collectiveSlowdown = d.deviceType == "cpu-quarter" ? 1.9 : 1.2;
  s.saveProfile(p);

  const int64_t cluster = s.saveCluster("local-cpu-3", "name: local-cpu-3\n");
  for (int run = 0; run < 3; ++run) {
    hap::db::PlanRecord plan;
    plan.modelSha256 = std::string(64, 'b');
    plan.modelPath = run == 2 ? "/zoo/mlp-tiny.pt" : "/zoo/bert-tiny.pt";
    plan.strategy = run == 1 ? "dp-ev" : "hap";
    plan.clusterId = cluster;
    plan.predictedSeconds = run == 2 ? 0.0061 : run == 1 ? 0.0412 : 0.0287;
    plan.json = QStringLiteral("{\"run\": %1}").arg(run).toStdString();
    hap::db::RunRecord r;
    r.planId = s.savePlan(plan);
    r.label = run == 1 ? "bench-hetero DP-EV" : run == 2 ? "mlp smoke" : "bench-hetero HAP";
    r.ranks = 3;
    r.cpuShares = {1, 0.5, 0.25};
    r.startedAt = QStringLiteral("2026-11-25T1%1:05:00Z").arg(run + 1).toStdString();
    const int64_t id = s.beginRun(r);
    std::vector<hap::db::StepRecord> steps;
    for (int step = 1; step <= 30; ++step)
      for (int rank = 0; rank < 3; ++rank) {
        hap::db::StepRecord st;
        st.rank = rank;
        st.step = step;
        st.warmup = step <= 2;
        const double base = plan.predictedSeconds * (1.05 + 0.04 * std::sin(step * 1.7 + rank)) * (step <= 2 ? 1.6 : 1.0);
        st.seconds = base;
        st.computeSeconds = base * (0.55 + 0.1 * rank);
        st.communicationSeconds = base * (0.3 - 0.05 * rank);
        st.loss = 2.2 * std::exp(-step / 12.0) + 0.35 + 0.03 * std::sin(step * 2.3);
        st.peakMemoryBytes = (run == 2 ? 1.1e8 : 3.4e8) * (1 - 0.2 * rank);
        steps.push_back(st);
      }
    s.recordSteps(id, steps);
    s.finishRun(id, hap::db::RunStatus::Succeeded);
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
  // Whole lengths by MILP (issue 21): the Ratios view and the Plan panel's choice.
  w.planPanel()->setRequest([] {
    hap::plan::PlanRequest r;
    r.ratios = "milp";
    return r;
  }());
  planned.clear();
  w.action("plan.plan")->trigger();
  ok &= planned.wait(600000);
  settle(w);
  raiseDock(w, "dock.ratios");
  QTest::qWait(200);
  ok &= save(w, out + "/plan-ratios-milp.png");

  // 9. The profile store (issue 20): the Profiles dock on a store filled here, both tabs.
  QTemporaryDir storeDir;
  const QString store = storeDir.filePath("profiles.db");
  fillProfileStore(store);
  if (auto* profiles = w.findChild<ProfilesView*>(); profiles && storeDir.isValid()) {
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("dock.profiles"));
    raiseDock(w, "dock.profiles");
    dock->setFloating(true);  // its own size, whatever the window's layout left it
    dock->resize(1500, 520);
    profiles->setStorePath(store);
    profiles->profilesTable()->selectRow(0);
    QTest::qWait(200);
    ok &= save(*dock, out + "/profiles.png");
    profiles->tabs()->setCurrentIndex(ProfilesView::RunsTab);
    profiles->runsTable()->selectRow(1);
    QTest::qWait(300);
    ok &= save(*dock, out + "/profiles-runs.png");
    dock->setFloating(false);
  } else {
    ok = false;
  }

  // 10. Every view at a laptop's 1280×720 and at 1920×1080 (issue 31): each dock raised in turn,
  //     each page of its tabs, with the two plans above (Compare) and the filled profile store.
  for (const QSize size : {QSize(1280, 720), QSize(1920, 1080)}) {
    w.resize(size);
    QTest::qWait(300);
    const QString prefix = out + QStringLiteral("/views-%1x%2-").arg(size.width()).arg(size.height());
    for (QDockWidget* d : w.findChildren<QDockWidget*>()) {
      if (d->objectName() == QLatin1String("dock.problems")) continue;
      d->show();
      d->raise();
      QTest::qWait(300);
      const QString name = d->objectName().mid(5);  // "dock.ratios" → "ratios"
      ok &= save(w, prefix + name + QStringLiteral(".png"));
      for (QTabWidget* tabs : d->findChildren<QTabWidget*>()) {
        if (!tabs->isVisible() || tabs->visibleRegion().isEmpty()) continue;
        const int was = tabs->currentIndex();
        for (int i = 0; i < tabs->count(); ++i) {
          if (i == was) continue;
          tabs->setCurrentIndex(i);
          QTest::qWait(300);
          ok &= save(w, prefix + name + QStringLiteral("-tab%1.png").arg(i));
        }
        tabs->setCurrentIndex(was);
      }
    }
  }
  // The Tune dialog at its own size (Run ▸ Tune…, before a loop runs).
  if (QAction* tune = w.action(QStringLiteral("run.tune")); tune && tune->isEnabled()) {
    tune->trigger();
    QTest::qWait(300);
    for (QWidget* top : QApplication::topLevelWidgets())
      if (top->isVisible() && top->inherits("hap::studio::TuneDialog")) {
        ok &= save(*top, out + QStringLiteral("/tune-dialog.png"));
        top->close();
      }
  }
  return ok ? 0 : 1;
}
