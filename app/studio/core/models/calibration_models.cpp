#include "app/studio/core/models/calibration_models.h"

#include <QFileInfo>
#include <QObject>

#include <algorithm>
#include <cmath>

#include "app/studio/core/display/units.h"
#include "engine/ir/summary.h"

namespace hap::studio {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString dash() { return QStringLiteral("—"); }
QString bytes(double b) { return qs(ir::formatBytes(static_cast<int64_t>(b))); }
QString profileText(const std::string& base) { return base.empty() ? QObject::tr("inventory") : qs(base); }
// "bench" for "bench@2".
QString profileName(const std::string& base) { return qs(base.substr(0, base.rfind('@'))); }

}  // namespace

QString calibrationPercent(double fraction) {
  if (!std::isfinite(fraction)) return dash();
  return QStringLiteral("%1%").arg(fraction * 100, 0, 'f', 1);
}

QString calibrationSignedPercent(double fraction) {
  if (!std::isfinite(fraction)) return dash();
  const double p = fraction * 100;
  if (std::abs(p) < 0.05) return QStringLiteral("0.0%");
  return QStringLiteral("%1%2%").arg(p > 0 ? QStringLiteral("+") : QStringLiteral("−")).arg(std::abs(p), 0, 'f', 1);
}

QString calibrationPearson(double r) { return std::isfinite(r) ? QString::number(r, 'f', 3) : dash(); }

QString calibrationChange(double before, double after, QString (*format)(double)) {
  return QStringLiteral("%1 → %2").arg(format(before), format(after));
}

QString calibrationRanking(const cost::Accuracy& before, const cost::Accuracy& after) {
  if (after.rankingPairs == 0) return dash();
  return QStringLiteral("%1/%2 → %3/%4")
      .arg(before.rankingRight)
      .arg(before.rankingPairs)
      .arg(after.rankingRight)
      .arg(after.rankingPairs);
}

// ---- CalibrationRunsModel ---------------------------------------------------------------------

CalibrationRunsModel::CalibrationRunsModel(QObject* parent) : QAbstractTableModel(parent) {}

void CalibrationRunsModel::setCandidates(std::vector<db::CalibrationCandidate> runs) {
  beginResetModel();
  m_runs = std::move(runs);
  m_checked.assign(m_runs.size(), false);
  for (size_t i = 0; i < m_runs.size(); ++i) m_checked[i] = m_runs[i].usable();
  endResetModel();
}

std::vector<int64_t> CalibrationRunsModel::checkedRuns() const {
  std::vector<int64_t> out;
  for (size_t i = 0; i < m_runs.size(); ++i)
    if (m_checked[i]) out.push_back(m_runs[i].run.id);
  return out;
}

bool CalibrationRunsModel::isChecked(int row) const {
  return row >= 0 && row < rowCount() && m_checked[static_cast<size_t>(row)];
}

void CalibrationRunsModel::setChecked(int row, bool checked) {
  setData(index(row, RunColumn), checked ? Qt::Checked : Qt::Unchecked, Qt::CheckStateRole);
}

int CalibrationRunsModel::checkBase(const QString& name) {
  auto matches = [&](const db::CalibrationCandidate& c) {
    return c.usable() && (name.isEmpty() ? c.base.empty() : !c.base.empty() && profileName(c.base) == name);
  };
  const int n = static_cast<int>(std::count_if(m_runs.begin(), m_runs.end(), matches));
  for (size_t i = 0; i < m_runs.size(); ++i) m_checked[i] = m_runs[i].usable() && (n == 0 || matches(m_runs[i]));
  if (!m_runs.empty()) Q_EMIT dataChanged(index(0, RunColumn), index(rowCount() - 1, RunColumn), {Qt::CheckStateRole});
  return n == 0 ? usableCount() : n;
}

int CalibrationRunsModel::usableCount() const {
  return static_cast<int>(std::count_if(m_runs.begin(), m_runs.end(), [](const auto& c) { return c.usable(); }));
}

int CalibrationRunsModel::rowOf(int64_t runId) const {
  for (size_t i = 0; i < m_runs.size(); ++i)
    if (m_runs[i].run.id == runId) return static_cast<int>(i);
  return -1;
}

int CalibrationRunsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_runs.size());
}
int CalibrationRunsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CalibrationRunsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const db::CalibrationCandidate& c = m_runs[static_cast<size_t>(index.row())];
  if (role == RunIdRole) return QVariant::fromValue<qint64>(c.run.id);
  if (role == Qt::CheckStateRole && index.column() == RunColumn)
    return m_checked[static_cast<size_t>(index.row())] ? Qt::Checked : Qt::Unchecked;
  if (role == Qt::ToolTipRole)
    return c.usable() ? (c.run.label.empty() ? QVariant() : QVariant(qs(c.run.label)))
                      : QVariant(QObject::tr("Not used: %1").arg(qs(c.why)));
  if (role == Qt::TextAlignmentRole)
    return index.column() == StepsColumn || index.column() == MeasuredColumn ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                                                                              : QVariant();
  const bool display = role == Qt::DisplayRole;
  if (!display && role != ValueRole) return {};
  switch (index.column()) {
    case RunColumn: return display ? QVariant(QString::number(c.run.id)) : QVariant::fromValue<qint64>(c.run.id);
    case StatusColumn:
      return c.usable() ? QVariant(qs(std::string(db::runStatusName(c.run.status)))) : QVariant(qs(c.why));
    case ModelColumn: return c.modelPath.empty() ? dash() : QFileInfo(qs(c.modelPath)).fileName();
    case StrategyColumn: return c.strategy.empty() ? dash() : qs(c.strategy);
    case ProfileColumn: return c.run.planId == 0 || c.modelPath.empty() ? dash() : profileText(c.base);
    case StepsColumn: return display ? QVariant(QString::number(c.measuredSteps)) : QVariant(c.measuredSteps);
    case MeasuredColumn:
      if (!display) return c.measuredStepSeconds;
      return c.measuredSteps ? formatMilliseconds(c.measuredStepSeconds) : dash();
    case LabelColumn: return qs(c.run.label);
  }
  return {};
}

bool CalibrationRunsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || index.column() != RunColumn || role != Qt::CheckStateRole) return false;
  const size_t row = static_cast<size_t>(index.row());
  const bool checked = value.toInt() == Qt::Checked;
  if (checked && !m_runs[row].usable()) return false;  // a run the calibration cannot use
  if (m_checked[row] == checked) return true;
  m_checked[row] = checked;
  Q_EMIT dataChanged(index, index, {Qt::CheckStateRole});
  return true;
}

Qt::ItemFlags CalibrationRunsModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  const bool usable = m_runs[static_cast<size_t>(index.row())].usable();
  Qt::ItemFlags f = Qt::ItemIsSelectable;
  if (usable) f |= Qt::ItemIsEnabled;
  if (usable && index.column() == RunColumn) f |= Qt::ItemIsUserCheckable;
  return f;
}

QVariant CalibrationRunsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case RunColumn: return tr("Run");
    case StatusColumn: return tr("Status");
    case ModelColumn: return tr("Model");
    case StrategyColumn: return tr("Strategy");
    case ProfileColumn: return tr("Planned under");
    case StepsColumn: return tr("Steps");
    case MeasuredColumn: return tr("Measured step");
    case LabelColumn: return tr("Label");
  }
  return {};
}

// ---- CalibrationResultModel -------------------------------------------------------------------

CalibrationResultModel::CalibrationResultModel(QObject* parent) : QAbstractTableModel(parent) {}

void CalibrationResultModel::setResult(std::shared_ptr<const db::CalibrationResult> result) {
  beginResetModel();
  m_result = std::move(result);
  endResetModel();
}

int CalibrationResultModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !m_result ? 0 : static_cast<int>(m_result->runs.size());
}
int CalibrationResultModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CalibrationResultModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const db::CalibratedRun& r = m_result->runs[static_cast<size_t>(index.row())];
  const cost::RunObservation& o = r.observation;
  const int column = index.column();
  if (role == Qt::TextAlignmentRole)
    return column >= MeasuredColumn || column <= PlanColumn ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
  if (role == ValueRole) {
    switch (column) {
      case RunColumn: return QVariant::fromValue<qint64>(o.run);
      case PlanColumn: return QVariant::fromValue<qint64>(o.plan);
      case WhatColumn: return qs(o.label);
      case SetColumn: return o.heldOut;
      case MeasuredColumn: return o.measuredStepSeconds;
      case BeforeColumn: return r.beforeSeconds;
      case BeforeErrorColumn: return r.beforeError();
      case AfterColumn: return r.afterSeconds;
      case AfterErrorColumn: return r.afterError();
      case MemoryErrorColumn: return r.memoryErrorAfter;
    }
    return {};
  }
  if (role == Qt::ToolTipRole && column == MemoryErrorColumn)
    return tr("Mean absolute error of the %1 ranks' predicted peak memory, before → after").arg(o.memory.size());
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case RunColumn: return QString::number(o.run);
    case PlanColumn: return QString::number(o.plan);
    case WhatColumn: return qs(o.label);
    case SetColumn: return o.heldOut ? tr("held-out") : tr("fit");
    case MeasuredColumn: return formatMilliseconds(o.measuredStepSeconds);
    case BeforeColumn: return formatMilliseconds(r.beforeSeconds);
    case BeforeErrorColumn: return calibrationSignedPercent(r.beforeError());
    case AfterColumn: return formatMilliseconds(r.afterSeconds);
    case AfterErrorColumn: return calibrationSignedPercent(r.afterError());
    case MemoryErrorColumn:
      return o.memory.empty() ? dash() : calibrationChange(r.memoryErrorBefore, r.memoryErrorAfter, calibrationPercent);
  }
  return {};
}

QVariant CalibrationResultModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case RunColumn: return tr("Run");
    case PlanColumn: return tr("Plan");
    case WhatColumn: return tr("What");
    case SetColumn: return tr("Set");
    case MeasuredColumn: return tr("Measured");
    case BeforeColumn: return tr("Before");
    case BeforeErrorColumn: return tr("Error");
    case AfterColumn: return tr("After");
    case AfterErrorColumn: return tr("Error");
    case MemoryErrorColumn: return tr("Memory error");
  }
  return {};
}

// ---- CalibrationTermsModel --------------------------------------------------------------------

CalibrationTermsModel::CalibrationTermsModel(QObject* parent) : QAbstractTableModel(parent) {}

void CalibrationTermsModel::setResult(std::shared_ptr<const db::CalibrationResult> result) {
  beginResetModel();
  m_result = std::move(result);
  m_types.clear();
  if (m_result)
    for (const auto& [type, t] : m_result->calibration.types) m_types.push_back(type);
  endResetModel();
}

int CalibrationTermsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_types.size());
}
int CalibrationTermsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CalibrationTermsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const std::string& type = m_types[static_cast<size_t>(index.row())];
  const cost::TypeParameters& t = m_result->calibration.types.at(type);
  const int column = index.column();
  if (role == Qt::TextAlignmentRole)
    return column == TypeColumn ? QVariant() : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == ValueRole) {
    switch (column) {
      case TypeColumn: return qs(type);
      case ComputeColumn: return t.computeScale;
      case CollectivesColumn: return t.collectiveSlowdown;
      case BaseMemoryColumn: return t.baseMemoryBytes;
      case MemoryScaleColumn: return t.memoryScale;
    }
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case TypeColumn: return qs(type);
    case ComputeColumn: return QStringLiteral("× %1").arg(t.computeScale, 0, 'f', 3);
    case CollectivesColumn: return QStringLiteral("× %1").arg(t.collectiveSlowdown, 0, 'f', 3);
    case BaseMemoryColumn: return QStringLiteral("%1 MiB").arg(t.baseMemoryBytes / (1 << 20), 0, 'f', 1);
    case MemoryScaleColumn: return QStringLiteral("× %1").arg(t.memoryScale, 0, 'f', 3);
  }
  return {};
}

QVariant CalibrationTermsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case TypeColumn: return tr("Device type");
    case ComputeColumn: return tr("Compute");
    case CollectivesColumn: return tr("Collectives");
    case BaseMemoryColumn: return tr("Runtime memory");
    case MemoryScaleColumn: return tr("Memory scale");
  }
  return {};
}

QString savedTermsText(const db::CalibrationResult& result) {
  QStringList lines;
  for (const auto& [type, t] : result.calibration.types) {
    const cost::DeviceProfile* d = result.profile.device(type);
    if (!d) continue;
    lines << QObject::tr("%1: compute × %2, collectives × %3, memory %4 + %5 × model")
                 .arg(qs(type))
                 .arg(d->computeScale, 0, 'f', 3)
                 .arg(d->collectiveSlowdown, 0, 'f', 3)
                 .arg(bytes(d->baseMemoryBytes))
                 .arg(d->memoryScale, 0, 'f', 3);
  }
  return lines.join(QLatin1Char('\n'));
}

// ---- the change a calibrated re-plan made -----------------------------------------------------

QString calibratedPlanChange(const PlanDocument& before, const PlanDocument& after, const PlanComparison& c) {
  const plan::Plan &a = before.p(), &b = after.p();
  QStringList parts;
  QString head = QObject::tr("Re-planned under %1 (was %2): predicted %3 → %4 per iteration")
                     .arg(profileText(b.cluster.profile), profileText(a.cluster.profile),
                          formatMilliseconds(c.a.iterationSeconds), formatMilliseconds(c.b.iterationSeconds));
  if (c.a.iterationSeconds > 0 && c.b.iterationSeconds > 0) {
    const double s = c.a.iterationSeconds / c.b.iterationSeconds;
    head += std::abs(s - 1) < 5e-4 ? QObject::tr(" (same time)")
            : s > 1               ? QObject::tr(" (%1× faster)").arg(s, 0, 'f', 2)
                                  : QObject::tr(" (%1× slower)").arg(1 / s, 0, 'f', 2);
  }
  parts << head;
  if (c.a.maxMemoryBytes > 0 && std::abs(c.b.maxMemoryBytes / c.a.maxMemoryBytes - 1) >= 5e-4)
    parts << QObject::tr("peak memory %1 → %2").arg(bytes(c.a.maxMemoryBytes), bytes(c.b.maxMemoryBytes));
  parts << (a.strategy == b.strategy ? QObject::tr("strategy %1").arg(qs(b.strategy))
                                     : QObject::tr("strategy %1 → %2").arg(qs(a.strategy), qs(b.strategy)));
  if (c.a.fits != c.b.fits)
    parts << (c.b.fits ? QObject::tr("now fits in memory") : QObject::tr("no longer fits in memory"));
  if (!c.sameGraph) {
    parts << QObject::tr("programs not compared (%1)").arg(qs(c.note));
  } else if (c.identical()) {
    parts << (c.sameDevices ? QObject::tr("same program and ratios") : QObject::tr("same program"));
  } else {
    const int nodes = static_cast<int>(c.nodes.size()), segments = static_cast<int>(c.segments.size());
    QString program = nodes == 0   ? QObject::tr("same program")
                      : nodes == 1 ? QObject::tr("1 node changed variant")
                                   : QObject::tr("%1 nodes changed variant").arg(nodes);
    if (segments > 0) {
      // The segment whose share moved most.
      const auto most = std::max_element(c.segments.begin(), c.segments.end(), [](const auto& x, const auto& y) {
        return std::abs(x.largestShift) < std::abs(y.largestShift);
      });
      program += QObject::tr(", %1 (largest: %2 rank %3 %4%5 points)")
                     .arg(segments == 1 ? QObject::tr("1 segment's ratios moved")
                                        : QObject::tr("%1 segments' ratios moved").arg(segments))
                     .arg(qs(most->name))
                     .arg(most->rank)
                     .arg(most->largestShift > 0 ? QStringLiteral("+") : QStringLiteral("−"))
                     .arg(std::abs(most->largestShift) * 100, 0, 'f', 1);
    } else if (c.sameDevices) {
      program += QObject::tr(", same ratios");
    }
    parts << program;
  }
  return parts.join(QStringLiteral("; ")) + QLatin1Char('.');
}

}  // namespace hap::studio
