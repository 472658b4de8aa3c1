#include "app/studio/core/documents/launch_settings.h"

#include <QDir>
#include <QFileInfo>
#include <QObject>

#include <cmath>

#include "db/store.h"

namespace hap::studio {

QString optimizerName(runtime::OptimizerOptions::Kind kind) {
  const std::string_view name = runtime::optimizerKindName(kind);
  return QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()));
}

runtime::OptimizerOptions::Kind optimizerKind(const QString& name) {
  using Kind = runtime::OptimizerOptions::Kind;
  for (const Kind k : {Kind::Sgd, Kind::Adam, Kind::AdamW})
    if (optimizerName(k) == name) return k;
  return Kind::Sgd;
}

runtime::WorkerOptions launchedOptions(const LaunchSettings& s) {
  const runtime::WorkerOptions byDefault;
  runtime::WorkerOptions o = s.worker;
  if (o.optimizer.kind != runtime::OptimizerOptions::Kind::Sgd) o.optimizer.momentum = byDefault.optimizer.momentum;
  if (o.data.kind != "tokens" && o.data.kind != "cifar") o.data.path = byDefault.data.path;
  if (o.data.kind != "tokens") o.data.tokenDtype = byDefault.data.tokenDtype;
  if (o.checkpointDir.empty()) o.checkpointEvery = byDefault.checkpointEvery;
  return o;
}

QString validate(const LaunchSettings& s, int ranks) {
  const auto tr = [](const char* text) { return QObject::tr(text); };
  const runtime::WorkerOptions& w = s.worker;
  if (w.steps < 0 || w.warmup < 0) return tr("Steps and warm-up cannot be negative");
  if (s.totalSteps() <= 0) return tr("Steps: the run has no step to run; set Steps (or Warm-up) to 1 or more");
  if (w.data.kind != "synthetic") {
    const QString kind = QString::fromStdString(w.data.kind);
    const QString path = QString::fromStdString(w.data.path);
    if (path.trimmed().isEmpty())
      return QObject::tr("Data file: --data %1 reads a file; choose one (Browse…) or pick synthetic data").arg(kind);
    if (!QFileInfo(path).isFile())
      return QObject::tr("Data file %1: no such file; choose an existing %2 file").arg(path, kind);
  }
  if (w.data.kind == "tokens" && w.data.tokenDtype != "uint16" && w.data.tokenDtype != "int32")
    return QObject::tr("Token dtype %1: write uint16 or int32").arg(QString::fromStdString(w.data.tokenDtype));
  const runtime::OptimizerOptions& o = w.optimizer;
  if (!(o.lr >= 0) || !std::isfinite(o.lr))
    return tr("Learning rate: give a number of 0 or more, such as 0.01 or 3e-4");
  if (!(o.momentum >= 0 && o.momentum < 1)) return tr("Momentum: give a number in [0, 1), such as 0.9");
  if (!(o.weightDecay >= 0) || !std::isfinite(o.weightDecay)) return tr("Weight decay: give a number of 0 or more");
  if (!(o.clipNorm >= 0) || !std::isfinite(o.clipNorm)) return tr("Clip norm: give a norm of 0 (off) or more");
  if (w.checkpointEvery < 0) return tr("Checkpoint every: give 0 (at the end) or a number of steps");
  if (!w.resumePath.empty() && !QFileInfo(QString::fromStdString(w.resumePath)).isFile())
    return QObject::tr("Resume from %1: no such checkpoint file; choose a step-N.pt of an earlier run")
        .arg(QString::fromStdString(w.resumePath));
  if (w.threads < 0) return tr("Threads: give 0 (LibTorch's default) or more");
  if (!(s.timeoutSeconds >= 0)) return tr("Timeout: give 0 (none) or a number of seconds");
  if (!s.cpuShares.empty() && static_cast<int>(s.cpuShares.size()) != ranks)
    return QObject::tr("CPU shares: %1 values for %2 ranks; give one per rank").arg(s.cpuShares.size()).arg(ranks);
  for (size_t r = 0; r < s.cpuShares.size(); ++r)
    if (!(s.cpuShares[r] > 0 && s.cpuShares[r] <= 1))
      return QObject::tr("CPU share of rank %1 is %2: give a share of one CPU in (0, 1], 1 for a full CPU")
          .arg(r)
          .arg(s.cpuShares[r]);
  if (!s.slowdowns.empty() && static_cast<int>(s.slowdowns.size()) != ranks)
    return QObject::tr("Slowdowns: %1 values for %2 ranks; give one per rank").arg(s.slowdowns.size()).arg(ranks);
  for (size_t r = 0; r < s.slowdowns.size(); ++r)
    if (!(s.slowdowns[r] >= 1) || !std::isfinite(s.slowdowns[r]))
      return QObject::tr("Slowdown of rank %1 is %2: give a factor of 1 (full speed) or more")
          .arg(r)
          .arg(s.slowdowns[r]);
  return {};
}

QString runsDirectory() {
  const QString env = qEnvironmentVariable("HAP_RUNS_DIR");
  if (!env.isEmpty()) return QDir::cleanPath(env);
  const QFileInfo store(QString::fromStdString(db::defaultPath()));
  return QDir::cleanPath(store.absolutePath() + QStringLiteral("/runs"));
}

QString makeRunFolder(const QString& runsDir, const QString& modelPath, const QDateTime& at, QString* error) {
  QString base = QFileInfo(modelPath).completeBaseName();
  if (base.isEmpty()) base = QStringLiteral("run");
  const QString stem = at.toString(QStringLiteral("yyyyMMdd-HHmmss")) + QLatin1Char('-') + base;
  QDir dir(runsDir);
  if (!dir.mkpath(QStringLiteral("."))) {
    if (error) *error = QObject::tr("Cannot create the runs folder %1: make it writable or set $HAP_RUNS_DIR").arg(runsDir);
    return {};
  }
  for (int n = 1; n < 1000; ++n) {
    const QString name = n == 1 ? stem : stem + QStringLiteral("-%1").arg(n);
    if (dir.exists(name)) continue;
    if (dir.mkdir(name)) return QDir::cleanPath(dir.absoluteFilePath(name));
    break;
  }
  if (error) *error = QObject::tr("Cannot create a run folder in %1: make it writable or set $HAP_RUNS_DIR").arg(runsDir);
  return {};
}

}  // namespace hap::studio
