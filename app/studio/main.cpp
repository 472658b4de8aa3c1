// hap-studio [MODEL.pt] [--cluster C.yaml] [--plan PLAN.json] [--input NAME=DIMxDIM...:DTYPE]...
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QTimer>

#include <cstdio>
#include <memory>

#include "app/studio/core/documents/model_inputs.h"
#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("HAP Studio"));
  QApplication::setApplicationName(QStringLiteral("hap-studio"));
  QApplication::setApplicationDisplayName(QStringLiteral("HAP Studio"));
  QApplication::setApplicationVersion(QStringLiteral(HAP_STUDIO_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("HAP Studio: plan distributed training of a PyTorch model on a "
                                                  "heterogeneous cluster."));
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
  const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                      QStringLiteral("Save a picture of the window to FILE once the files are open "
                                                     "and laid out, then quit (for docs and scripts)."),
                                      QStringLiteral("FILE"));
  parser.addOptions({cluster, plan, input, screenshot});
  parser.process(app);

  const hap::studio::ParsedInputs inputs = hap::studio::parseInputArgs(parser.values(input));
  if (!inputs.ok()) {
    std::fprintf(stderr, "hap-studio: %s\n", qPrintable(inputs.error));
    return 2;
  }
  if (parser.positionalArguments().size() > 1) {
    std::fprintf(stderr, "hap-studio: give at most one model (got %lld files)\n",
                 static_cast<long long>(parser.positionalArguments().size()));
    return 2;
  }

  hap::studio::MainWindow window;
  window.show();
  const QString model = parser.positionalArguments().value(0);
  if (parser.isSet(cluster)) window.openCluster(parser.value(cluster));
  if (parser.isSet(plan))
    window.openPlan(parser.value(plan), model);
  else if (!model.isEmpty())
    window.openModel(model, inputs.inputs);

  if (parser.isSet(screenshot)) {
    // The picture is taken once the graph is laid out, or once a file has failed (the window then
    // shows why); the exit status says whether everything opened.
    const QString file = parser.value(screenshot);
    auto failed = std::make_shared<bool>(false);
    auto save = [&window, file, failed] {
      QDir().mkpath(QFileInfo(file).absolutePath());
      const bool ok = window.grab().save(file);
      std::fprintf(ok ? stdout : stderr, "hap-studio: %s %s\n", ok ? "saved" : "could not write", qPrintable(file));
      if (*failed) std::fprintf(stderr, "hap-studio: %s\n", qPrintable(window.lastError()));
      QApplication::exit(ok && !*failed ? 0 : 1);
    };
    QObject::connect(window.graphView(), &hap::studio::GraphView::layoutFinished, &window,
                     [save] { QTimer::singleShot(200, save); });
    QObject::connect(&window, &hap::studio::MainWindow::openFailed, &window, [save, failed] {
      *failed = true;
      QTimer::singleShot(200, save);
    });
    if (model.isEmpty() && !parser.isSet(plan)) QTimer::singleShot(300, save);
  }
  return QApplication::exec();
}
