#include "app/studio/core/documents/launch_settings.h"

#include <QDir>
#include <QFileInfo>
#include <QLocale>
#include <QObject>

#include <cmath>

#include "db/store.h"

namespace hap::studio {
namespace {

QString number(double v) { return QString::number(v, 'g', QLocale::FloatingPointShortest); }

}  // namespace

QString dataName(LaunchSettings::Data d) {
  switch (d) {
    case LaunchSettings::Data::Synthetic: return QStringLiteral("synthetic");
    case LaunchSettings::Data::Tokens: return QStringLiteral("tokens");
    case LaunchSettings::Data::Cifar: return QStringLiteral("cifar");
  }
  return {};
}

QString optimizerName(LaunchSettings::Optimizer o) {
  switch (o) {
    case LaunchSettings::Optimizer::Sgd: return QStringLiteral("sgd");
    case LaunchSettings::Optimizer::Adam: return QStringLiteral("adam");
    case LaunchSettings::Optimizer::AdamW: return QStringLiteral("adamw");
  }
  return {};
}

QStringList workerArguments(const LaunchSettings& s) {
  QStringList a;
  if (!s.modelPath.isEmpty()) a << QStringLiteral("--model") << s.modelPath;
  a << QStringLiteral("--steps") << QString::number(s.steps);
  a << QStringLiteral("--warmup") << QString::number(s.warmup);
  a << QStringLiteral("--seed") << QString::number(s.seed);
  a << QStringLiteral("--data") << dataName(s.data);
  if (s.data != LaunchSettings::Data::Synthetic && !s.dataPath.isEmpty()) a << QStringLiteral("--data-path") << s.dataPath;
  if (s.data == LaunchSettings::Data::Tokens) a << QStringLiteral("--token-dtype") << s.tokenDtype;
  a << QStringLiteral("--optimizer") << optimizerName(s.optimizer);
  a << QStringLiteral("--lr") << number(s.lr);
  if (s.optimizer == LaunchSettings::Optimizer::Sgd) a << QStringLiteral("--momentum") << number(s.momentum);
  if (s.weightDecay != 0) a << QStringLiteral("--weight-decay") << number(s.weightDecay);
  if (s.clipNorm > 0) a << QStringLiteral("--clip-norm") << number(s.clipNorm);
  if (!s.checkpointDir.isEmpty()) {
    a << QStringLiteral("--checkpoint-dir") << s.checkpointDir;
    if (s.checkpointEvery > 0) a << QStringLiteral("--checkpoint-every") << QString::number(s.checkpointEvery);
  }
  if (!s.resumePath.isEmpty()) a << QStringLiteral("--resume") << s.resumePath;
  if (!s.exportPath.isEmpty()) a << QStringLiteral("--export") << s.exportPath;
  if (s.threads > 0) a << QStringLiteral("--threads") << QString::number(s.threads);
  return a;
}

std::vector<std::string> toStdStrings(const QStringList& list) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(list.size()));
  for (const QString& s : list) out.push_back(s.toStdString());
  return out;
}

QString validate(const LaunchSettings& s, int ranks) {
  const auto tr = [](const char* text) { return QObject::tr(text); };
  if (s.steps < 0 || s.warmup < 0) return tr("Steps and warm-up cannot be negative");
  if (s.totalSteps() <= 0) return tr("Steps: the run has no step to run; set Steps (or Warm-up) to 1 or more");
  if (s.data != LaunchSettings::Data::Synthetic) {
    const QString kind = dataName(s.data);
    if (s.dataPath.trimmed().isEmpty())
      return QObject::tr("Data file: --data %1 reads a file; choose one (Browse…) or pick synthetic data").arg(kind);
    if (!QFileInfo(s.dataPath).isFile())
      return QObject::tr("Data file %1: no such file; choose an existing %2 file").arg(s.dataPath, kind);
  }
  if (s.data == LaunchSettings::Data::Tokens && s.tokenDtype != QLatin1String("uint16") &&
      s.tokenDtype != QLatin1String("int32"))
    return QObject::tr("Token dtype %1: write uint16 or int32").arg(s.tokenDtype);
  if (!(s.lr >= 0) || !std::isfinite(s.lr)) return tr("Learning rate: give a number of 0 or more, such as 0.01 or 3e-4");
  if (!(s.momentum >= 0 && s.momentum < 1)) return tr("Momentum: give a number in [0, 1), such as 0.9");
  if (!(s.weightDecay >= 0) || !std::isfinite(s.weightDecay)) return tr("Weight decay: give a number of 0 or more");
  if (!(s.clipNorm >= 0) || !std::isfinite(s.clipNorm)) return tr("Clip norm: give a norm of 0 (off) or more");
  if (s.checkpointEvery < 0) return tr("Checkpoint every: give 0 (at the end) or a number of steps");
  if (!s.resumePath.isEmpty() && !QFileInfo(s.resumePath).isFile())
    return QObject::tr("Resume from %1: no such checkpoint file; choose a step-N.pt of an earlier run").arg(s.resumePath);
  if (s.threads < 0) return tr("Threads: give 0 (LibTorch's default) or more");
  if (!(s.timeoutSeconds >= 0)) return tr("Timeout: give 0 (none) or a number of seconds");
  if (!s.cpuShares.empty() && static_cast<int>(s.cpuShares.size()) != ranks)
    return QObject::tr("CPU shares: %1 values for %2 ranks; give one per rank").arg(s.cpuShares.size()).arg(ranks);
  for (size_t r = 0; r < s.cpuShares.size(); ++r)
    if (!(s.cpuShares[r] > 0 && s.cpuShares[r] <= 1))
      return QObject::tr("CPU share of rank %1 is %2: give a share of one CPU in (0, 1], 1 for a full CPU")
          .arg(r)
          .arg(s.cpuShares[r]);
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
