#include "app/studio/core/models/measured_comparison_model.h"

#include <QColor>
#include <QCryptographicHash>
#include <QFileInfo>
#include <QFont>

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <set>

#include "app/studio/core/models/profile_store_models.h"
#include "app/studio/core/display/units.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"

namespace hap::studio {
namespace {

const QString kDash = QStringLiteral("—");
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString tr(const char* text) { return QObject::tr(text); }

QVariant valueOrNull(double v) { return std::isfinite(v) ? QVariant(v) : QVariant(); }
QString secondsOrDash(double s) { return std::isfinite(s) ? formatMilliseconds(s) : kDash; }

}  // namespace

// ---- loading --------------------------------------------------------------------------------

int64_t MeasuredRun::stepCount() const {
  std::set<int64_t> all;
  for (const db::StepRecord& s : steps) all.insert(s.step);
  return static_cast<int64_t>(all.size());
}

int64_t MeasuredRun::warmupCount() const {
  std::set<int64_t> warm;
  for (const db::StepRecord& s : steps)
    if (s.warmup) warm.insert(s.step);
  return static_cast<int64_t>(warm.size());
}

MeasuredRun loadMeasuredRun(const QString& storePath, int64_t runId) {
  MeasuredRun m;
  m.storePath = storePath;
  m.runId = runId;
  StoreReader reader(storePath);
  if (!reader.ok()) {
    m.error = reader.error();
    return m;
  }
  m.run = reader.run(runId);
  if (!m.run) {
    m.error = !reader.error().isEmpty()
                  ? reader.error()
                  : tr("No run %1 in %2: `hap runs --db %2` lists the runs it holds").arg(runId).arg(storePath);
    return m;
  }
  m.steps = reader.steps(runId);
  try {
    if (reader.store()) m.stages = reader.store()->stages(runId);
  } catch (const std::exception& e) {
    m.error = QString::fromUtf8(e.what());
    return m;
  }
  if (!reader.error().isEmpty()) {
    m.error = reader.error();
    return m;
  }
  if (m.run->planId == 0 || !(m.planRecord = reader.plan(m.run->planId))) {
    m.error = tr("Run %1 has no stored plan, so there is no prediction to compare it with (runs recorded by "
                 "`hap launch --db` store theirs)")
                  .arg(runId);
    return m;
  }
  try {
    const std::string origin = QStringLiteral("%1: plan %2 of run %3").arg(storePath).arg(m.planRecord->id).arg(runId).toStdString();
    auto parsed = std::make_shared<plan::Plan>(plan::planFromJson(nlohmann::json::parse(m.planRecord->json), origin));
    m.predicted = plan::simulate(*parsed);
    m.plan = std::move(parsed);
  } catch (const std::exception& e) {
    m.error = tr("Run %1's stored plan cannot be read: %2").arg(runId).arg(QString::fromUtf8(e.what()));
    return m;
  }
  m.measured = plan::measuredTimeline(*m.plan, m.predicted, m.stages);
  return m;
}

bool PlanIdentity::matches(const std::string& planSha256) const {
  return !planSha256.empty() && (planSha256 == fileSha256 || planSha256 == jsonSha256);
}

PlanIdentity planIdentity(const PlanDocument& doc) {
  PlanIdentity id;
  try {
    if (!doc.path.empty() && QFileInfo::exists(qs(doc.path))) id.fileSha256 = plan::sha256File(doc.path);
  } catch (const std::exception&) {
    // An unreadable file identifies nothing.
  }
  try {
    if (doc.plan && doc.imported) {
      const std::string text = plan::toJson(*doc.plan, *doc.imported).dump(1) + "\n";
      id.jsonSha256 = QCryptographicHash::hash(QByteArray::fromStdString(text), QCryptographicHash::Sha256).toHex().toStdString();
    }
  } catch (const std::exception&) {
    // A plan the app cannot write again is none of the stored ones.
  }
  return id;
}

bool isPlanOf(const PlanDocument& doc, const db::PlanRecord& record) { return planIdentity(doc).matches(record.sha256); }

std::vector<RunChoice> listRuns(const QString& storePath, const std::string& modelSha256, QString* error) {
  std::vector<RunChoice> out;
  StoreReader reader(storePath);
  std::map<int64_t, std::optional<db::PlanRecord>> plans;
  for (const db::RunRecord& r : reader.runs()) {
    RunChoice c;
    c.id = r.id;
    if (r.planId != 0) {
      auto it = plans.find(r.planId);
      if (it == plans.end()) it = plans.emplace(r.planId, reader.plan(r.planId)).first;
      if (it->second) c.planSha256 = it->second->sha256, c.modelSha256 = it->second->modelSha256;
    }
    if (!modelSha256.empty() && c.modelSha256 != modelSha256) continue;
    c.text = tr("Run %1 · %2 · %3").arg(r.id).arg(qs(std::string(db::runStatusName(r.status))), formatStoreTime(r.startedAt));
    if (!r.label.empty()) c.text += QStringLiteral(" · ") + qs(r.label);
    out.push_back(std::move(c));
  }
  if (error) *error = reader.missing() ? QString() : reader.error();
  return out;
}

std::optional<plan::Timeline> measuredTrace(const PlanDocument& shown, const MeasuredRun& run) {
  if (!run.ok()) return std::nullopt;
  plan::MeasuredTimeline mt = plan::measuredTimeline(shown.p(), shown.timeline, run.stages);
  if (!mt.ok()) return std::nullopt;
  return std::move(mt.timeline);
}

// ---- the model ------------------------------------------------------------------------------

double MeasuredComparisonModel::Figure::ratio() const {
  if (!std::isfinite(predicted) || !std::isfinite(measured) || predicted <= 0) return kNaN;
  return measured / predicted;
}

MeasuredComparisonModel::MeasuredComparisonModel(QObject* parent) : QAbstractTableModel(parent) {}

MeasuredComparisonModel::Quantity MeasuredComparisonModel::quantityOf(int column) {
  return static_cast<Quantity>(std::clamp((column - PredictedStepColumn) / 3, 0, QuantityCount - 1));
}

void MeasuredComparisonModel::clear() {
  beginResetModel();
  m_rows.clear();
  endResetModel();
}

void MeasuredComparisonModel::setRun(const MeasuredRun& run) {
  if (!run.ok()) {
    clear();
    return;
  }
  setRun(*run.plan, run.predicted, run.steps);
}

void MeasuredComparisonModel::setRun(const plan::Plan& plan, const plan::Timeline& predicted,
                                     const std::vector<db::StepRecord>& steps) {
  beginResetModel();
  m_rows.clear();
  const size_t k = plan.devices.size();
  std::vector<plan::PlanDevice> devices = plan.devices;
  if (plan.replication.replicated() && k > 0 &&
      plan.cluster.devices.size() == k * static_cast<size_t>(plan.replication.machines))
    devices = plan::worldDevices(plan);
  std::map<int, db::RankMeans> means;
  for (const db::RankMeans& m : db::rankMeans(steps)) means[m.rank] = m;

  auto measure = [&](Row& r) {
    const auto it = means.find(r.rank);
    if (it == means.end()) return;
    r.figures[StepTime].measured = it->second.stepSeconds;
    r.figures[Compute].measured = it->second.computeSeconds;
    r.figures[Communication].measured = it->second.communicationSeconds;
    r.steps = it->second.steps;
    means.erase(it);
  };
  for (const plan::PlanDevice& d : devices) {
    Row r;
    r.rank = d.rank;
    r.device = tr("rank %1 · %2 · %3").arg(d.rank).arg(qs(d.type), qs(d.machine));
    const size_t program = k > 0 ? static_cast<size_t>(d.rank) % k : 0;
    if (program < predicted.devices.size()) {
      const plan::DeviceTimeline& t = predicted.devices[program];
      r.figures[StepTime].predicted = predicted.totalSeconds;
      r.figures[Compute].predicted = t.computeSeconds;
      r.figures[Communication].predicted = t.communicationSeconds;
    }
    measure(r);
    m_rows.push_back(std::move(r));
  }
  // Ranks the plan does not have (a run of another plan): measured only.
  while (!means.empty()) {
    Row r;
    r.rank = means.begin()->first;
    r.device = tr("rank %1 · not in the plan").arg(r.rank);
    measure(r);
    m_rows.push_back(std::move(r));
  }
  if (!m_rows.empty()) {
    Row slowest;
    slowest.device = tr("Slowest (most of any rank)");
    for (int q = 0; q < QuantityCount; ++q) {
      Figure& f = slowest.figures[static_cast<size_t>(q)];
      for (const Row& r : m_rows) {
        const Figure& g = r.figures[static_cast<size_t>(q)];
        if (std::isfinite(g.predicted) && !(g.predicted <= f.predicted)) f.predicted = g.predicted, f.predictedRank = r.rank;
        if (std::isfinite(g.measured) && !(g.measured <= f.measured)) f.measured = g.measured, f.measuredRank = r.rank;
      }
    }
    for (const Row& r : m_rows) slowest.steps = std::max(slowest.steps, r.steps);
    m_rows.push_back(std::move(slowest));
  }
  endResetModel();
}

int MeasuredComparisonModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int MeasuredComparisonModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant MeasuredComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    switch (section) {
      case DeviceColumn: return tr("Device");
      case PredictedStepColumn: return tr("Step pred.");
      case MeasuredStepColumn: return tr("Step meas.");
      case PredictedComputeColumn: return tr("Compute pred.");
      case MeasuredComputeColumn: return tr("Compute meas.");
      case PredictedCommunicationColumn: return tr("Comm. pred.");
      case MeasuredCommunicationColumn: return tr("Comm. meas.");
      case StepRatioColumn: return tr("Step ratio");
      case ComputeRatioColumn: return tr("Compute ratio");
      case CommunicationRatioColumn: return tr("Comm. ratio");
      case StepsColumn: return tr("Steps");
      default: break;
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case DeviceColumn: return tr("Rank, device type and machine of the run's plan");
      case PredictedStepColumn: return tr("Predicted time per step: the simulated iteration of the run's plan");
      case MeasuredStepColumn: return tr("Measured time per step: the rank's mean wall time over the steps after warm-up");
      case PredictedComputeColumn: return tr("Predicted computation per step: the rank's computation summed over the plan's stages");
      case MeasuredComputeColumn: return tr("Measured computation per step: the rank's mean compute time over the steps after warm-up");
      case PredictedCommunicationColumn: return tr("Predicted communication per step: the collectives of every stage");
      case MeasuredCommunicationColumn:
        return tr("Measured communication per step: the rank's mean time in collectives (waits for slower ranks "
                  "included) over the steps after warm-up");
      case StepRatioColumn:
      case ComputeRatioColumn:
      case CommunicationRatioColumn:
        return tr("Measured / predicted: above %1 (red) the run was slower than predicted, below %2 (blue) faster")
            .arg(kSlowRatio)
            .arg(kFastRatio);
      case StepsColumn: return tr("The steps the measured means are over (after warm-up)");
      default: break;
    }
  }
  return {};
}

QVariant MeasuredComparisonModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& r = m_rows[static_cast<size_t>(index.row())];
  const int column = index.column();
  const bool slowestRow = r.rank < 0;
  const bool figureColumn = column >= PredictedStepColumn && column < StepsColumn;
  const Quantity q = quantityOf(column);
  const Figure& f = r.figures[static_cast<size_t>(q)];
  const int kind = figureColumn ? (column - PredictedStepColumn) % 3 : -1;  // 0 predicted, 1 measured, 2 ratio
  const double value = kind == 0 ? f.predicted : kind == 1 ? f.measured : kind == 2 ? f.ratio() : kNaN;
  const bool slow = kind == 2 && std::isfinite(value) && value > kSlowRatio;
  const bool fast = kind == 2 && std::isfinite(value) && value < kFastRatio;

  switch (role) {
    case Qt::DisplayRole:
      if (column == DeviceColumn) return r.device;
      if (column == StepsColumn) return r.steps > 0 ? QVariant(r.steps) : QVariant(kDash);
      if (kind == 2) return std::isfinite(value) ? QStringLiteral("%1×").arg(value, 0, 'f', 2) : kDash;
      return secondsOrDash(value);
    case ValueRole:
      if (column == DeviceColumn) return r.device;
      if (column == StepsColumn) return r.steps;
      return valueOrNull(value);
    case RankRole: return r.rank;
    case Qt::TextAlignmentRole:
      return column == DeviceColumn ? QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter)
                                    : QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::FontRole:
      if (slowestRow || slow || fast) {
        QFont font;
        font.setBold(true);
        return font;
      }
      return {};
    case Qt::ForegroundRole:
      if (slow) return QColor(0xB0, 0x1C, 0x1C);
      if (fast) return QColor(0x1D, 0x5C, 0xA8);
      return {};
    case Qt::BackgroundRole:
      if (slow) return QColor(0xFD, 0xE4, 0xE1);
      if (fast) return QColor(0xE1, 0xEC, 0xFB);
      return {};
    case Qt::ToolTipRole: {
      const QString of = slowestRow ? QString() : tr("rank %1's ").arg(r.rank);
      const QString names[] = {tr("step time"), tr("computation"), tr("communication")};
      const QString name = names[static_cast<int>(q)];
      if (column == DeviceColumn)
        return slowestRow ? tr("The most of any rank, figure by figure (each cell's tooltip names the rank)")
                          : tr("Rank %1 of the run's plan: %2").arg(r.rank).arg(r.device);
      if (column == StepsColumn) return tr("The steps after warm-up that the measured means are over");
      auto whose = [&](int rank) {
        return slowestRow && rank >= 0 ? tr(" (the most of any rank: rank %1)").arg(rank) : QString();
      };
      if (kind == 0) {
        QString what;
        switch (q) {
          case StepTime: what = tr("the simulated iteration of the run's plan (every rank ends it together)"); break;
          case Compute: what = tr("%1computation summed over the plan's stages").arg(of); break;
          default: what = tr("the collectives of every stage of the plan (every rank takes part in each)"); break;
        }
        return tr("Predicted %1 per step: %2%3").arg(name, what, whose(f.predictedRank));
      }
      if (kind == 1) {
        QString what;
        switch (q) {
          case StepTime: what = tr("%1mean wall time per step").arg(of); break;
          case Compute: what = tr("%1mean compute time per step").arg(of); break;
          default: what = tr("%1mean time in collectives per step, waiting for slower ranks included").arg(of); break;
        }
        const QString over = r.steps == 1 ? tr("1 step") : tr("%1 steps").arg(r.steps);
        return tr("Measured %1: %2 over %3 after warm-up%4").arg(name, what, over, whose(f.measuredRank));
      }
      if (!std::isfinite(value))
        return tr("Measured / predicted %1: not known (%2)")
            .arg(name, !std::isfinite(f.measured) ? tr("nothing measured") : tr("nothing predicted"));
      return tr("Measured / predicted %1: %2 / %3 = %4%5")
          .arg(name, formatMilliseconds(f.measured), formatMilliseconds(f.predicted), QString::number(value, 'f', 3),
               slow   ? tr(": slower than predicted by more than %1%").arg(std::lround((kSlowRatio - 1) * 100))
               : fast ? tr(": faster than predicted by more than %1%").arg(std::lround((1 - kFastRatio) * 100))
                      : QString());
    }
    default: break;
  }
  return {};
}

}  // namespace hap::studio
