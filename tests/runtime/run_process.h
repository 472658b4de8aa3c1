// Running hap, hap-worker or a launch script as a process from the runtime's tests, with the
// torchrun variables and the store of the calling environment removed (a test names what it
// wants), and a time limit after which the process is killed and the test warned.
#pragma once

#include <QElapsedTimer>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QtGlobal>

struct Run {
  int exitCode = -1;  // -1 when it crashed or was killed
  QString out, err;
  qint64 ms = 0;      // wall time
};

// Runs `program` with `args` in environment `env` (as given) and, when set, `workDir`, killing it
// after `limitMs`.
inline Run runProcess(const QString& program, const QStringList& args, const QProcessEnvironment& env,
                      int limitMs = 60'000, const QString& workDir = {}) {
  QProcess p;
  p.setProcessEnvironment(env);
  if (!workDir.isEmpty()) p.setWorkingDirectory(workDir);
  QElapsedTimer timer;
  timer.start();
  p.start(program, args);
  if (!p.waitForFinished(limitMs)) {
    p.kill();
    p.waitForFinished(5000);
    qWarning("%s %s did not finish within %d ms", qPrintable(program), qPrintable(args.join(' ')), limitMs);
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError()), timer.elapsed()};
}

// The same in the calling environment without the torchrun variables and the store.
inline Run runProcess(const QString& program, const QStringList& args, int limitMs) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* v : {"OMP_NUM_THREADS", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "HAP_DB"})
    env.remove(v);
  return runProcess(program, args, env, limitMs);
}

// `hap plan` (HAP_CLI_PATH) of the zoo's `model` (e.g. "mlp-tiny.pt") on the bundled local
// cluster `cluster` (e.g. "local-cpu-3.yaml"), written to `out`.
inline Run planLocal(const QString& model, const QString& cluster, const QString& out) {
  return runProcess(HAP_CLI_PATH,
                    {"plan", qEnvironmentVariable("HAP_ZOO_DIR") + "/" + model, "-c",
                     qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/" + cluster, "-o", out, "-q"},
                    120'000);
}
