// Benchmark of planning in hap-studio (issue 18 item 10), as a user sees it: the main window,
// shown, plans the open model on the 64-GPU testbed with the default options while the search view
// charts the search. Per model it prints
//   - planning time in the app (Plan clicked -> every view filled) against `hap plan`'s planning
//     (plan::planModel on the same import, in this process: the same code the CLI runs after its
//     import), runs alternated A B A B so drift hits both alike; target app <= 1.05x;
//   - the longest event-loop stall while the app plans (target <= 100 ms);
//   - Cancel -> control: from the click to the window idle again (target <= 100 ms), and how long
//     the engine took to notice (its thread ending).
//
//   bench_studio_plan --cluster paper-testbed-64.yaml --model NAME=FILE.pt ... [--runs 3]
//   (scripts/bench-studio-plan.sh)
#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTimer>
#include <QtTest>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "app/studio/core/jobs/plan_job.h"
#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/main_window.h"
#include "bench/event_loop_watchdog.h"
#include "engine/plan/plan_request.h"

namespace {

using hap::studio::MainWindow;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Waits for `spy` (or `failed`) up to `ms`, processing events.
bool waitFor(QSignalSpy& spy, QSignalSpy& failed, int ms) {
  QElapsedTimer t;
  t.start();
  while (spy.isEmpty() && failed.isEmpty() && t.elapsed() < ms) spy.wait(20);
  return !spy.isEmpty();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"hap-studio planning: time against hap plan, event-loop stalls, cancel latency"};
  std::vector<std::string> models;
  std::string clusterPath;
  int runs = 3, timeout = 600;
  cli.add_option("--model", models, "NAME=FILE.pt (repeatable)")->required();
  cli.add_option("--cluster", clusterPath, "cluster inventory (the paper's 64-GPU testbed)")->required();
  cli.add_option("--runs", runs, "alternated runs per side")->capture_default_str();
  cli.add_option("--timeout", timeout, "seconds to wait for each plan");
  CLI11_PARSE(cli, argc, argv);

  QStandardPaths::setTestModeEnabled(true);
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("HAP Studio bench"));
  MainWindow window;
  window.resize(1400, 900);
  window.show();
  QApplication::processEvents();
  if (!window.openCluster(QString::fromStdString(clusterPath))) {
    std::fprintf(stderr, "bench_studio_plan: %s\n", qPrintable(window.lastError()));
    return 1;
  }
  const hap::cost::Cluster cluster = window.clusterPanel()->cluster();
  bool ok = true;
  fmt::print("{} runs each, alternated; cluster {} ({} devices)\n\n", runs, cluster.name, cluster.size());
  for (const std::string& spec : models) {
    const size_t eq = spec.find('=');
    const std::string name = eq == std::string::npos ? spec : spec.substr(0, eq);
    const QString file = QString::fromStdString(eq == std::string::npos ? spec : spec.substr(eq + 1));
    QSignalSpy opened(&window, &MainWindow::modelOpened);
    QSignalSpy openFailed(&window, &MainWindow::openFailed);
    window.openModel(file);
    if (!waitFor(opened, openFailed, timeout * 1000)) {
      std::fprintf(stderr, "bench_studio_plan: %s did not open: %s\n", qPrintable(file), qPrintable(window.lastError()));
      return 1;
    }
    std::shared_ptr<const hap::studio::ModelDocument> model = window.model();
    hap::import::ImportOptions importOptions;
    importOptions.metaWeights = true;
    importOptions.inputOverrides = model->inputOverrides;

    std::vector<double> cliTimes, appTimes, stalls, stallAt;
    hap::bench::Watchdog dog;
    for (int r = 0; r < runs; ++r) {
      // A: the CLI's planning (blocking, as `hap plan` runs it).
      const auto t0 = std::chrono::steady_clock::now();
      const hap::plan::PlannedModel planned = hap::plan::planModel(model->graph, importOptions, cluster, {});
      cliTimes.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      // B: the app: Plan clicked -> planFinished (the views filled), the event loop watched.
      QSignalSpy finished(&window, &MainWindow::planFinished);
      QSignalSpy failed(&window, &MainWindow::planFailed);
      dog.start();
      QElapsedTimer clock;
      clock.start();
      window.startPlanning();
      if (!waitFor(finished, failed, timeout * 1000)) {
        std::fprintf(stderr, "bench_studio_plan: planning %s failed\n", name.c_str());
        return 1;
      }
      appTimes.push_back(clock.nsecsElapsed() / 1e9);
      stalls.push_back(dog.worstMs());
      stallAt.push_back(dog.worstAtSeconds());
      QApplication::processEvents();
    }

    // Cancel at 10%, 30%, 50%, 70% and 90% of the app's median planning time.
    std::vector<double> control, engine;
    for (int r = 0; r < 5; ++r) {
      QSignalSpy stopped(window.planJob(), &hap::studio::PlanJob::workerStopped);
      QSignalSpy none(&window, &MainWindow::planFailed);
      window.startPlanning();
      QTest::qWait(static_cast<int>(median(appTimes) * 1000 * (0.1 + 0.2 * r)));
      if (!window.isPlanning()) continue;  // finished before: nothing to cancel
      QElapsedTimer t;
      t.start();
      window.cancelPlanning();
      while (window.isPlanning()) QApplication::processEvents();
      control.push_back(t.nsecsElapsed() / 1e6);
      if (waitFor(stopped, none, timeout * 1000)) engine.push_back(stopped.first().first().toDouble() * 1e3);
    }

    const double ratio = median(appTimes) / median(cliTimes);
    const size_t worstRun = static_cast<size_t>(std::max_element(stalls.begin(), stalls.end()) - stalls.begin());
    const double stall = stalls[worstRun];
    const double worstControl = control.empty() ? -1 : *std::max_element(control.begin(), control.end());
    fmt::print("{} ({} nodes)\n", name, model->graph->nodes.size());
    fmt::print("  hap plan's planning (median):    {:8.3f} s   (runs: {})\n", median(cliTimes),
               fmt::join(cliTimes, ", "));
    fmt::print("  planning in the app (median):    {:8.3f} s   (runs: {})\n", median(appTimes),
               fmt::join(appTimes, ", "));
    fmt::print("  app / hap plan:                  {:8.3f}x   target <= 1.05: {}\n", ratio, ratio <= 1.05 ? "ok" : "OVER");
    fmt::print("  longest event-loop stall:        {:8.1f} ms  target <= 100 ms: {}   (at {:.2f} s of {:.2f} s)\n", stall,
               stall <= 100 ? "ok" : "OVER", stallAt[worstRun], appTimes[worstRun]);
    if (control.empty())
      fmt::print("  cancel: planning ended before it could be cancelled; not measured\n");
    else
      fmt::print("  Cancel -> control:               {:8.2f} ms  target <= 100 ms: {}   (engine stopped after {:.0f} ms)\n",
                 worstControl, worstControl <= 100 ? "ok" : "OVER", fmt::join(engine, ", "));
    fmt::print("\n");
    ok = ok && ratio <= 1.05 && stall <= 100 && (control.empty() || worstControl <= 100);
  }
  return ok ? 0 : 2;
}
