// Benchmark of hap-studio's responsiveness (issue 17 item 6), run as a user would see it: the main
// window opens a model, imports it off the GUI thread and lays it out collapsed by scope; then every
// scope is expanded. A watchdog timer on the GUI thread measures the longest stall of the event loop
// throughout (a window that does not repaint for over 100 ms feels frozen).
//
//   bench_studio --model BERT-BASE.pt [--large LARGE.pt]        (scripts/bench-studio.sh)
//
// Prints per model: open + collapsed layout (s), expand-all layout (s), boxes drawn, longest
// event-loop stall (ms), each against its target.
#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTimer>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

#include "app/studio/core/graph/graph_layout.h"
#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/main_window.h"
#include "bench/event_loop_watchdog.h"

namespace {

using hap::bench::Watchdog;

struct Figures {
  double open = 0, expand = 0, stallOpen = 0, stallExpand = 0;
  size_t collapsedBoxes = 0, expandedBoxes = 0;
  bool ok = true;
};

Figures measure(hap::studio::MainWindow& window, const QString& model, int timeoutMs) {
  Figures f;
  Watchdog dog;
  hap::studio::GraphView* view = window.graphView();
  QSignalSpy laidOut(view, &hap::studio::GraphView::layoutFinished);
  QSignalSpy failed(&window, &hap::studio::MainWindow::openFailed);
  dog.start();
  QElapsedTimer clock;
  clock.start();
  window.openModel(model);
  while (laidOut.isEmpty() && failed.isEmpty() && clock.elapsed() < timeoutMs) laidOut.wait(50);
  f.open = clock.nsecsElapsed() / 1e9;
  f.stallOpen = dog.worstMs();
  if (laidOut.isEmpty()) {
    std::fprintf(stderr, "bench_studio: %s did not open: %s\n", qPrintable(model), qPrintable(window.lastError()));
    f.ok = false;
    return f;
  }
  f.collapsedBoxes = view->currentLayout()->boxes.size();
  QApplication::processEvents();

  laidOut.clear();
  dog.start();
  clock.restart();
  view->expandAll();
  while (laidOut.isEmpty() && clock.elapsed() < timeoutMs) laidOut.wait(50);
  f.expand = clock.nsecsElapsed() / 1e9;
  f.stallExpand = dog.worstMs();
  f.ok = !laidOut.isEmpty();
  if (f.ok) f.expandedBoxes = view->currentLayout()->boxes.size();
  return f;
}

void print(const char* name, const Figures& f, double openTarget, double expandTarget) {
  auto verdict = [](double value, double target) {
    return target <= 0 ? std::string() : fmt::format("   target <= {:g} s: {}", target, value <= target ? "ok" : "OVER");
  };
  const double stall = std::max(f.stallOpen, f.stallExpand);
  fmt::print("{}\n", name);
  fmt::print("  open + layout, collapsed by scope: {:6.2f} s  ({} boxes){}\n", f.open, f.collapsedBoxes,
             verdict(f.open, openTarget));
  fmt::print("  expand every scope:                {:6.2f} s  ({} boxes){}\n", f.expand, f.expandedBoxes,
             verdict(f.expand, expandTarget));
  fmt::print("  longest event-loop stall:          {:6.0f} ms (open {:.0f}, expand {:.0f})   target <= 100 ms: {}\n",
             stall, f.stallOpen, f.stallExpand, stall <= 100 ? "ok" : "OVER");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"hap-studio responsiveness: open, lay out and expand models in the main window"};
  std::string model, large;
  int timeout = 120;
  cli.add_option("--model", model, "BERT-Base (resources/models/export.py --model bert --preset default)")->required();
  cli.add_option("--large", large, "a graph of about 2,000 nodes");
  cli.add_option("--timeout", timeout, "seconds to wait for each step");
  CLI11_PARSE(cli, argc, argv);

  QStandardPaths::setTestModeEnabled(true);  // keep the user's settings and recent files out of it
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("HAP Studio bench"));
  hap::studio::MainWindow window;
  window.resize(1400, 900);
  window.show();
  QApplication::processEvents();

  bool ok = true;
  const Figures bert = measure(window, QString::fromStdString(model), timeout * 1000);
  print(model.c_str(), bert, 2.0, 3.0);
  ok = ok && bert.ok;
  if (!large.empty()) {
    const Figures big = measure(window, QString::fromStdString(large), timeout * 1000);
    fmt::print("  ({} ops)\n", window.model() ? window.model()->graph->nodes.size() : 0);
    print(large.c_str(), big, 0, 0);
    ok = ok && big.ok;
  }
  return ok ? 0 : 1;
}
