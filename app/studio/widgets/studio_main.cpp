#include "app/studio/widgets/studio_main.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QTimer>

#include <cstdio>

#include "app/studio/core/jobs/open_job.h"
#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/main_window.h"

namespace hap::studio {

bool parseCommandLine(const QStringList& arguments, CommandLine* out, QString* error) {
  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("HAP Studio: plan distributed training of a PyTorch model on a heterogeneous cluster."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("model"), QStringLiteral("TorchScript model to open (.pt)"),
                               QStringLiteral("[MODEL.pt]"));
  const QCommandLineOption cluster(QStringLiteral("cluster"), QStringLiteral("Cluster inventory to open (YAML)."),
                                   QStringLiteral("C.yaml"));
  const QCommandLineOption plan(QStringLiteral("plan"),
                                QStringLiteral("Plan to open, verified against the model (JSON from hap plan)."),
                                QStringLiteral("PLAN.json"));
  const QCommandLineOption input(QStringLiteral("input"),
                                 QStringLiteral("An input's shape, as hap plan takes it: "
                                                "NAME=DIMxDIMx...[:DTYPE[:LOW..HIGH]] (repeatable)."),
                                 QStringLiteral("SPEC"));
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QStringLiteral("Save a picture of the window to FILE once every file has opened or failed, then quit "
                     "(exit status 1 when a file failed; for docs and scripts)."),
      QStringLiteral("FILE"));
  parser.addOptions({cluster, plan, input, screenshot});
  if (!parser.parse(arguments)) {
    *error = parser.errorText();
    return false;
  }
  if (parser.isSet(QStringLiteral("help")) || parser.isSet(QStringLiteral("help-all"))) parser.showHelp(0);
  if (parser.isSet(QStringLiteral("version"))) parser.showVersion();

  const ParsedInputs inputs = parseInputArgs(parser.values(input));
  if (!inputs.ok()) {
    *error = inputs.error;
    return false;
  }
  if (parser.positionalArguments().size() > 1) {
    *error = QStringLiteral("give at most one model (got %1 files)").arg(parser.positionalArguments().size());
    return false;
  }
  out->model = parser.positionalArguments().value(0);
  out->cluster = parser.value(cluster);
  out->plan = parser.value(plan);
  out->screenshot = parser.value(screenshot);
  out->inputs = inputs.inputs;
  return true;
}

CommandLineOpening::CommandLineOpening(MainWindow& window, const CommandLine& line)
    : QObject(&window), m_window(&window), m_line(line) {
  connect(&window, &MainWindow::modelOpened, this, &CommandLineOpening::asyncEnded);
  connect(&window, &MainWindow::planOpened, this, &CommandLineOpening::asyncEnded);
  // After the window's own handler (connected first), which reports the failure or asks for the
  // input shapes.
  connect(window.openJob(), &OpenJob::failed, this, [this](const QString& path, const OpenError& error) {
    if (m_finished || m_asyncPath.isEmpty() || m_waitingLayout) return;
    const bool planFailed = !m_line.plan.isEmpty() && m_asyncPath == m_line.plan;
    if (error.kind != OpenError::Kind::Cancelled) fail(path, QString::fromStdString(error.message));
    if (planFailed && !m_line.model.isEmpty() && error.kind != OpenError::Kind::Cancelled) {
      openAsync(true);  // the model given with it, on its own
      return;
    }
    m_asyncPath.clear();
    finish();
  });
  connect(window.graphView(), &GraphView::layoutFinished, this, [this] {
    if (!m_finished && m_waitingLayout && !m_window->graphView()->layoutBusy()) finish();
  });

  // The model or the plan first: its opening starts by clearing the error bar, which must not
  // hide a cluster's failure.
  if (!m_line.plan.isEmpty() || !m_line.model.isEmpty()) openAsync(m_line.plan.isEmpty());
  if (!m_line.cluster.isEmpty() && !window.openCluster(m_line.cluster)) fail(m_line.cluster, window.lastError());
  if (m_asyncPath.isEmpty()) finish();
}

void CommandLineOpening::openAsync(bool modelOnly) {
  if (modelOnly) {
    m_asyncPath = m_line.model;
    m_window->openModel(m_line.model, m_line.inputs);
  } else {
    m_asyncPath = m_line.plan;
    m_window->openPlan(m_line.plan, m_line.model);
  }
}

void CommandLineOpening::asyncEnded() {
  if (m_finished || m_asyncPath.isEmpty() || m_waitingLayout) return;
  // Opened: done once the graph is laid out.
  GraphView* view = m_window->graphView();
  if (!view->layoutBusy() && view->currentLayout()) {
    finish();
    return;
  }
  m_waitingLayout = true;
}

void CommandLineOpening::fail(const QString& path, const QString& message) {
  const bool named = message.contains(path) || message.contains(QFileInfo(path).fileName());
  m_failures << (named ? message : QStringLiteral("%1: %2").arg(path, message));
}

void CommandLineOpening::finish() {
  if (m_finished) return;
  m_finished = true;
  QMetaObject::invokeMethod(this, &CommandLineOpening::finished, Qt::QueuedConnection);
}

CommandLineOpening* openFromCommandLine(MainWindow& window, const CommandLine& line) {
  if (!window.isVisible()) window.show();
  return new CommandLineOpening(window, line);
}

CommandLineOpening* openFromCommandLine(MainWindow& window, const QStringList& arguments, QString* error) {
  CommandLine line;
  QString why;
  if (!parseCommandLine(arguments, &line, &why)) {
    if (error) *error = why;
    return nullptr;
  }
  return openFromCommandLine(window, line);
}

int studioMain(const QStringList& arguments) {
  CommandLine line;
  QString error;
  if (!parseCommandLine(arguments, &line, &error)) {
    std::fprintf(stderr, "hap-studio: %s\n", qPrintable(error));
    return 2;
  }
  MainWindow window;
  window.show();
  CommandLineOpening* opening = openFromCommandLine(window, line);
  if (!line.screenshot.isEmpty()) {
    // The picture shows the laid-out graph, or the window saying why a file failed; the exit
    // status says whether everything opened.
    const QString file = line.screenshot;
    QObject::connect(opening, &CommandLineOpening::finished, &window, [&window, opening, file] {
      QTimer::singleShot(200, &window, [&window, opening, file] {
        QDir().mkpath(QFileInfo(file).absolutePath());
        const bool saved = window.grab().save(file);
        std::fprintf(saved ? stdout : stderr, "hap-studio: %s %s\n", saved ? "saved" : "could not write",
                     qPrintable(file));
        const QStringList failures = opening->failures();
        for (const QString& f : failures) std::fprintf(stderr, "hap-studio: %s\n", qPrintable(f));
        QApplication::exit(saved && failures.isEmpty() ? 0 : 1);
      });
    });
  }
  return QApplication::exec();
}

}  // namespace hap::studio
