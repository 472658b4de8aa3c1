// hap-studio's command line, `hap-studio [MODEL.pt] [--cluster C.yaml] [--plan PLAN.json]
// [--input SPEC]... [--screenshot FILE]`: read, and its files opened in the main window, for
// main() and for tests that run the same argument handling in their own process. Every file opens
// through the window's own Open, so a file that fails is reported as File ▸ Open reports it: the
// error bar and an entry in the Problems dock (MainWindow::reportOpenFailure), which later files
// of other kinds do not clear.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <vector>

#include "app/studio/core/documents/model_inputs.h"

namespace hap::studio {

class MainWindow;

struct CommandLine {
  QString model, cluster, plan, screenshot;  // "" when not given
  std::vector<import::InputSpec> inputs;     // --input, parsed
};

// Reads `arguments` (the program's name first, as QCoreApplication::arguments() gives them).
// A usage error (an unknown option, more than one model, an --input that does not parse) returns
// false with the message in `error`, worded as the CLI words it. --help and --version print and
// exit the process, as every Qt program does.
bool parseCommandLine(const QStringList& arguments, CommandLine* out, QString* error);

// The opening of a command line's files, followed to its end: every file opened (the graph laid
// out) or failed. A plan that fails with a model given opens the model on its own after it; a
// model that needs its input shapes (no hap/inputs.json, no --input) counts as failed here (the
// window asks for them in the inputs dialog).
class CommandLineOpening : public QObject {
  Q_OBJECT
 public:
  CommandLineOpening(MainWindow& window, const CommandLine& line);
  bool isFinished() const { return m_finished; }
  // Each file that did not open, as "PATH: message" (the path first unless the message names
  // it), in the order they failed.
  QStringList failures() const { return m_failures; }

 Q_SIGNALS:
  void finished();  // queued: emitted after the call that made this object returned

 private:
  void openAsync(bool modelOnly);
  void asyncEnded();
  void fail(const QString& path, const QString& message);
  void finish();

  MainWindow* m_window;
  CommandLine m_line;
  QString m_asyncPath;           // the model or plan opening in the background ("" when none)
  bool m_waitingLayout = false;  // opened: the graph is being laid out
  bool m_finished = false;
  QStringList m_failures;
};

// Opens what `line` names in `window` (shown first, so the graph lays out): the model or the plan
// (with its model) in the background, then the cluster. The object returned is the window's
// child.
CommandLineOpening* openFromCommandLine(MainWindow& window, const CommandLine& line);
// The same from the program's arguments; null with `error` set on a usage error.
CommandLineOpening* openFromCommandLine(MainWindow& window, const QStringList& arguments, QString* error = nullptr);

// main()'s body once the QApplication exists: reads the arguments (a usage error: the message on
// stderr, exit status 2), shows the window and opens the files. With --screenshot FILE the window
// is saved to FILE once every file has opened or failed, each failure is printed on stderr, and
// the process exits 1 when any file failed or FILE could not be written, else 0.
int studioMain(const QStringList& arguments);

}  // namespace hap::studio
