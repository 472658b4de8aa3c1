// Running the `hap` CLI (HAP_CLI_PATH, set by the test's CMake) as a user runs it, for the tests
// that drive it as a process.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>
#include <QtGlobal>

struct HapRun {
  int exitCode = -1;
  QString out, err;
};

// Runs hap with `args` and waits for it; a hap that does not finish in `timeoutMs` fails the test.
inline HapRun runHap(const QStringList& args, int timeoutMs = 120'000) {
  QProcess p;
  p.start(HAP_CLI_PATH, args);
  if (!p.waitForFinished(timeoutMs)) qFatal("hap %s did not finish", qPrintable(args.join(' ')));
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}
