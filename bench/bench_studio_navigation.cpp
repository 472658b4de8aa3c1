// Benchmark of the graph view's navigation (issue 31), run as a user would see it: the main window
// opens a corpus model (the command-line inputs from corpus.json), imports it off the GUI thread
// and lays it out collapsed by scope; then the user navigates with the keyboard: Down along the
// edges, Right and Left among siblings, Enter on a collapsed scope (a relayout), F to show only
// that scope, Esc back to the whole graph, and a click on the minimap. A watchdog timer on the GUI
// thread measures the longest stall of the event loop while navigating (over 100 ms feels frozen),
// and each key's own handling time.
//
//   bench_studio_navigation --corpus build/corpus-ci [--model NAME ...]
//   bench_studio_navigation --file MODEL.pt --input x=... --input y=...
//
// Prints per model: nodes, open + collapsed layout (s, target <= 2 s), boxes drawn, the longest
// stall while navigating and the slowest key (ms, target <= 100 ms), with the longest relayout.
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "app/studio/core/documents/model_document.h"
#include "app/studio/core/graph/graph_navigation.h"
#include "app/studio/widgets/graph_minimap.h"
#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/main_window.h"
#include "bench/event_loop_watchdog.h"
#include "engine/import/input_spec.h"

namespace {

using hap::bench::Watchdog;
using hap::studio::GraphView;

struct Model {
  std::string name, file;
  std::vector<std::string> inputs;
};

struct Figures {
  size_t nodes = 0, boxes = 0;
  double open = 0, stallOpen = 0;
  double stallNavigate = 0, slowestKey = 0, slowestRelayout = 0;
  int keys = 0, relayouts = 0;
  bool ok = true;
};

bool waitLayout(GraphView* view, int timeoutMs, double* seconds = nullptr) {
  QSignalSpy done(view, &GraphView::layoutFinished);
  QElapsedTimer t;
  t.start();
  while (done.isEmpty() && view->layoutBusy() && t.elapsed() < timeoutMs) done.wait(20);
  if (seconds) *seconds = t.nsecsElapsed() / 1e9;
  return !view->layoutBusy();
}

Figures measure(hap::studio::MainWindow& window, const Model& m, int timeoutMs, int downs) {
  Figures f;
  GraphView* view = window.graphView();
  std::vector<hap::import::InputSpec> inputs;
  for (const std::string& a : m.inputs) inputs.push_back(hap::import::parseInputArg(a));
  QSignalSpy laidOut(view, &GraphView::layoutFinished);
  QSignalSpy failed(&window, &hap::studio::MainWindow::openFailed);
  Watchdog dog;
  dog.start();
  QElapsedTimer clock;
  clock.start();
  window.openModel(QString::fromStdString(m.file), inputs);
  while (laidOut.isEmpty() && failed.isEmpty() && clock.elapsed() < timeoutMs) laidOut.wait(20);
  f.open = clock.nsecsElapsed() / 1e9;
  f.stallOpen = dog.worstMs();
  if (laidOut.isEmpty() || !view->currentLayout()) {
    std::fprintf(stderr, "bench_studio_navigation: %s did not open: %s\n", m.file.c_str(),
                 qPrintable(window.lastError()));
    f.ok = false;
    return f;
  }
  f.nodes = window.model() ? window.model()->graph->nodes.size() : 0;
  f.boxes = view->currentLayout()->boxes.size();
  QTest::qWait(100);  // the first paint

  view->setFocus();
  dog.start();
  auto press = [&](Qt::Key key) {
    QElapsedTimer t;
    t.start();
    QTest::keyClick(view, key);
    f.slowestKey = std::max(f.slowestKey, t.nsecsElapsed() / 1e6);
    ++f.keys;
    if (view->layoutBusy()) {  // the key asked for a new layout: until it is drawn
      f.ok = waitLayout(view, timeoutMs) && f.ok;
      f.slowestRelayout = std::max(f.slowestRelayout, t.nsecsElapsed() / 1e9);
      ++f.relayouts;
    }
    QTest::qWait(15);  // let the loop run: repaints, the watchdog's ticks
  };
  // Down along the edges, a step sideways every fifth box; Enter on the first three collapsed
  // scopes met, the first of them also shown alone (F) and left (Esc).
  int expanded = 0;
  for (int i = 0; i < downs; ++i) {
    press(Qt::Key_Down);
    if (i % 5 == 4) {
      press(Qt::Key_Right);
      press(Qt::Key_Left);
    }
    const hap::studio::Selection s = view->selection();
    if (expanded < 3 && s.kind == hap::studio::Selection::Kind::Scope &&
        view->scopeBoxCentre(s.id)) {
      press(Qt::Key_Return);  // expands it: a relayout
      if (expanded++ == 0) {
        press(Qt::Key_Down);  // into it
        press(Qt::Key_F);     // show only its scope
        press(Qt::Key_Down);
        press(Qt::Key_Escape);  // the whole graph again
      }
      press(Qt::Key_Down);
    }
  }
  for (int i = 0; i < 10; ++i) press(Qt::Key_Up);
  // The minimap: a click near its bottom, then its top.
  view->actualSize();
  QTest::qWait(30);
  if (auto* map = view->minimap(); map->isVisible()) {
    QTest::mouseClick(map, Qt::LeftButton, {}, QPoint(map->width() / 2, map->height() - 6));
    QTest::qWait(30);
    QTest::mouseClick(map, Qt::LeftButton, {}, QPoint(map->width() / 2, 6));
    QTest::qWait(30);
  }
  f.stallNavigate = dog.worstMs();
  return f;
}

std::vector<Model> corpusModels(const std::string& dir, const std::vector<std::string>& names) {
  QFile file(QString::fromStdString(dir + "/corpus.json"));
  std::vector<Model> out;
  if (!file.open(QIODevice::ReadOnly)) return out;
  const QJsonArray models = QJsonDocument::fromJson(file.readAll()).object()["models"].toArray();
  for (const QJsonValue& v : models) {
    const QJsonObject o = v.toObject();
    Model m{o["name"].toString().toStdString(), dir + "/" + o["file"].toString().toStdString(), {}};
    if (!names.empty() && std::find(names.begin(), names.end(), m.name) == names.end()) continue;
    for (const QJsonValue& a : o["inputs"].toArray())
      m.inputs.push_back(a.toString().toStdString());
    if (QFile::exists(QString::fromStdString(m.file))) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"hap-studio graph navigation: open corpus models and navigate them by keyboard"};
  std::string corpus, file;
  std::vector<std::string> names, inputs;
  int timeout = 120, downs = 60;
  cli.add_option("--corpus", corpus,
                 "a folder written by resources/corpus/export.py (corpus.json)");
  cli.add_option("--model", names, "only these models of the corpus (default: all)");
  cli.add_option("--file", file, "one TorchScript file instead of a corpus");
  cli.add_option("--input", inputs, "the file's --input arguments");
  cli.add_option("--downs", downs, "Down presses per model");
  cli.add_option("--timeout", timeout, "seconds to wait for each step");
  CLI11_PARSE(cli, argc, argv);

  std::vector<Model> models;
  if (!file.empty()) models.push_back({file, file, inputs});
  if (!corpus.empty()) {
    std::vector<Model> more = corpusModels(corpus, names);
    models.insert(models.end(), more.begin(), more.end());
  }
  if (models.empty()) {
    std::fprintf(stderr, "bench_studio_navigation: no model (--corpus DIR or --file MODEL)\n");
    return 2;
  }

  QStandardPaths::setTestModeEnabled(true);  // keep the user's settings and recent files out of it
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("HAP Studio bench"));
  hap::studio::MainWindow window;
  window.resize(1400, 900);
  window.show();
  QApplication::processEvents();

  bool ok = true;
  fmt::print("{:<22} {:>5} {:>9} {:>6} {:>11} {:>10} {:>12} {:>5}  {}\n", "model", "nodes",
             "open (s)", "boxes", "stall (ms)", "key (ms)", "relayouts", "keys", "targets");
  double worstOpen = 0, worstStall = 0;
  for (const Model& m : models) {
    const Figures f = measure(window, m, timeout * 1000, downs);
    ok = ok && f.ok;
    const double stall = std::max({f.stallNavigate, f.slowestKey});
    worstOpen = std::max(worstOpen, f.open);
    worstStall = std::max(worstStall, stall);
    fmt::print("{:<22} {:>5} {:>9.2f} {:>6} {:>11.0f} {:>10.1f} {:>2} ≤{:>5.2f}s {:>5}  {}{}\n",
               m.name, f.nodes, f.open, f.boxes, f.stallNavigate, f.slowestKey, f.relayouts,
               f.slowestRelayout, f.keys, f.open <= 2.0 ? "open ok" : "open OVER",
               stall <= 100 ? ", stall ok" : ", stall OVER");
    std::fflush(stdout);
  }
  fmt::print(
      "worst: open + collapsed layout {:.2f} s (target <= 2 s), navigation stall {:.0f} ms "
      "(target <= 100 ms)\n",
      worstOpen, worstStall);
  return ok ? 0 : 1;
}
