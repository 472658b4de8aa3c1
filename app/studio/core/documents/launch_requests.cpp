#include "app/studio/core/documents/launch_requests.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QObject>
#include <QTemporaryDir>

#include <algorithm>
#include <exception>

#include "app/studio/core/documents/plan_export.h"
#include "app/studio/core/models/checkpoints_model.h"
#include "engine/plan/plan_json.h"
#include "runtime/train/checkpoint_list.h"

namespace hap::studio {
namespace {

// Writes the open plan to `planPath` and reads it back: the plan as the workers will read it.
std::shared_ptr<const plan::Plan> writePlan(const PlanDocument& doc, const QString& planPath, QString* error) {
  if (const std::string e = exportPlanFile(doc, planPath.toStdString()); !e.empty()) {
    *error = QString::fromStdString(e);
    return nullptr;
  }
  try {
    return std::make_shared<const plan::Plan>(plan::readPlan(planPath.toStdString()));
  } catch (const std::exception& e) {
    *error = QObject::tr("The plan file %1 cannot be read back: %2").arg(planPath, QString::fromUtf8(e.what()));
    return nullptr;
  }
}

// The launch of `s` with the plan read back from `planPath`: the request and its preflight.
PreparedLaunch prepared(std::shared_ptr<const plan::Plan> plan, const QString& planPath, const LaunchSettings& s,
                        const QString& store, const QString& label) {
  PreparedLaunch p;
  const QString worker = launchWorker();
  p.plan = std::move(plan);
  p.ranks = static_cast<int>(plan::worldDevices(*p.plan).size());
  p.checkpointDir = QString::fromStdString(s.worker.checkpointDir);
  p.preflight = preflightRequest(*p.plan, planPath, s, worker);
  runtime::LocalLaunchRequest& r = p.request;
  r.options = p.preflight.options;
  r.worker = worker.toStdString();
  r.cpuShares = s.cpuShares;
  r.slowdowns = s.slowdowns;
  r.timeoutSeconds = s.timeoutSeconds;
  r.dbPath = launchStorePath(store).toStdString();
  r.label = label.toStdString();
  return p;
}

QString modelName(const LaunchSettings& s) {
  return QFileInfo(QString::fromStdString(s.worker.modelPath)).completeBaseName();
}

}  // namespace

runtime::PreflightRequest preflightRequest(const plan::Plan& plan, const QString& planPath, const LaunchSettings& s,
                                           const QString& worker) {
  runtime::PreflightRequest r;
  r.plan = plan;
  r.options = launchedOptions(s);
  r.options.planPath = planPath.toStdString();
  r.worker = worker.toStdString();
  r.cpuShares = s.cpuShares;
  return r;
}

std::vector<plan::PlanDevice> launchDevices(const PlanDocument* doc) {
  return doc ? plan::worldDevices(doc->p()) : std::vector<plan::PlanDevice>{};
}

int launchRanks(const PlanDocument* doc) { return static_cast<int>(launchDevices(doc).size()); }

std::vector<double> emulatedShares(const cost::Cluster& cluster) {
  std::vector<double> shares(static_cast<size_t>(cluster.size()), 1.0);
  for (const cost::Machine& m : cluster.machines)
    if (m.host != "127.0.0.1" && m.host != "localhost" && m.host != "::1") return shares;
  double fastest = 0;
  for (const cost::DeviceType& t : cluster.types) fastest = std::max(fastest, t.flops32);
  if (!(fastest > 0)) return shares;
  for (int r = 0; r < cluster.size(); ++r)
    shares[static_cast<size_t>(r)] = std::clamp(cluster.type(r).flops32 / fastest, 0.05, 1.0);
  return shares;
}

std::vector<double> emulatedShares(const PlanDocument* doc) {
  // A plan's world is its cluster's devices, rank by rank (plan::worldDevices).
  return doc ? emulatedShares(doc->p().cluster) : std::vector<double>{};
}

QString launchModelPath(const PlanDocument* doc, const QString& modelPath) {
  if (!modelPath.isEmpty() || !doc) return modelPath;
  return QString::fromStdString(doc->p().modelPath);
}

QString launchWorker() {
  try {
    return QString::fromStdString(runtime::resolveWorker(qEnvironmentVariable("HAP_WORKER").toStdString(),
                                                         QCoreApplication::applicationFilePath().toStdString()));
  } catch (const std::exception&) {
    return {};  // the preflight's Worker check says what to do
  }
}

QString launchStorePath(const QString& store) {
  return !store.isEmpty() ? store : QString::fromStdString(db::defaultPath());
}

std::optional<PreparedLaunch> prepareStart(const PlanDocument& doc, const LaunchSettings& settings,
                                           const QString& store, QString* error) {
  LaunchSettings s = settings;
  *error = validate(s, launchRanks(&doc));
  if (!error->isEmpty()) return std::nullopt;
  const QString folder = makeRunFolder(runsDirectory(), QString::fromStdString(s.worker.modelPath),
                                       QDateTime::currentDateTime(), error);
  if (folder.isEmpty()) return std::nullopt;
  // The plan as the workers will read it: written into the run folder, then read back.
  const QString planPath = folder + QStringLiteral("/plan.json");
  std::shared_ptr<const plan::Plan> plan = writePlan(doc, planPath, error);
  if (!plan) {
    discardRunFolder(folder);
    return std::nullopt;
  }
  if (s.worker.checkpointDir.empty()) s.worker.checkpointDir = (folder + QStringLiteral("/checkpoints")).toStdString();
  const QString label = !s.label.isEmpty() ? s.label
                                           : QStringLiteral("%1 · %2 · hap-studio")
                                                 .arg(modelName(s), QString::fromStdString(doc.p().strategy));
  PreparedLaunch p = prepared(std::move(plan), planPath, s, store, label);
  p.folder = folder;
  return p;
}

void discardRunFolder(const QString& folder) {
  QFile::remove(folder + QStringLiteral("/plan.json"));
  QDir().rmdir(folder);
}

std::optional<PreparedLaunch> prepareCheck(const PlanDocument& doc, const LaunchSettings& settings,
                                           const QString& planPath, QString* error) {
  LaunchSettings s = settings;
  std::shared_ptr<const plan::Plan> plan = writePlan(doc, planPath, error);
  if (!plan) return std::nullopt;
  // Where Start would put the checkpoints: a new folder in the runs folder.
  if (s.worker.checkpointDir.empty())
    s.worker.checkpointDir =
        QDir(runsDirectory())
            .filePath(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-")) + modelName(s) +
                      QStringLiteral("/checkpoints"))
            .toStdString();
  return prepared(std::move(plan), planPath, s, QString(), QString());
}

std::optional<PreparedLaunch> prepareExport(const PlanDocument& doc, const LaunchSettings& settings,
                                            const QString& planPath, const QString& checkpoint,
                                            const QString& exportPath, const QString& store, QString* error) {
  std::shared_ptr<const plan::Plan> plan = writePlan(doc, planPath, error);
  if (!plan) return std::nullopt;
  // No step: load the checkpoint, write the model. The checkpoint's optimizer (a resume must match it).
  LaunchSettings s = settings;
  runtime::WorkerOptions& w = s.worker;
  w.steps = 0;
  w.warmup = 0;
  w.data = runtime::DataOptions{};
  w.checkpointDir.clear();
  w.checkpointEvery = 0;
  w.resumePath = checkpoint.toStdString();
  w.exportPath = exportPath.toStdString();
  s.cpuShares.clear();
  s.slowdowns.clear();
  const runtime::CheckpointInfo info = runtime::readCheckpointInfo(checkpoint.toStdString());
  if (info.error.empty()) {
    try {
      w.optimizer.kind = runtime::parseOptimizerKind(info.optimizer);
    } catch (const std::exception&) {
      // Not one the worker knows: the form's, and the preflight's Resume check says what is wrong.
    }
  }
  const QString label =
      QStringLiteral("%1 · export of %2 · hap-studio").arg(modelName(s), QFileInfo(checkpoint).fileName());
  return prepared(std::move(plan), planPath, s, store, label);
}

QString writeLaunchScripts(const PlanDocument& doc, const LaunchSettings& settings, runtime::ScriptKind kind,
                           const QString& dir, bool force) {
  LaunchSettings s = settings;
  s.cpuShares.clear();  // a local emulation only
  s.slowdowns.clear();
  if (const QString why = validate(s, launchRanks(&doc)); !why.isEmpty()) return why;
  QTemporaryDir scratch;
  if (!scratch.isValid()) return QObject::tr("Cannot make a temporary folder for the plan file");
  const QString planPath = scratch.filePath(QStringLiteral("plan.json"));
  if (const std::string e = exportPlanFile(doc, planPath.toStdString()); !e.empty()) return QString::fromStdString(e);
  runtime::EmitRequest request;
  request.kind = kind;
  request.dir = dir.toStdString();
  request.force = force;
  request.options = launchedOptions(s);
  request.options.modelPath.clear();  // the scripts name the model's file
  try {
    (void)runtime::emitLaunchFolder(doc.p(), planPath.toStdString(), request);
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

std::optional<RecordedRun> readRecordedRun(const QString& storePath, qint64 run, QString* error) {
  try {
    const db::Store store(storePath.toStdString(), db::Store::Mode::ReadOnly);
    const std::optional<db::RunRecord> r = store.run(run);
    if (!r) {
      *error =
          QObject::tr("Run %1 is not in %2: choose a run the store lists (Profiles ▸ Runs)").arg(run).arg(storePath);
      return std::nullopt;
    }
    RecordedRun out;
    out.ranks = r->ranks;
    out.checkpointDir = recordedCheckpointDir(r->settingsJson);
    out.exitReason = QString::fromStdString(r->exitReason);
    return out;
  } catch (const std::exception& e) {
    *error = QString::fromUtf8(e.what());
    return std::nullopt;
  }
}

QString runStatusText(db::RunStatus status) { return QString::fromStdString(std::string(db::runStatusName(status))); }

}  // namespace hap::studio
