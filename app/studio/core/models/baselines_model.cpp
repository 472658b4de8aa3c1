#include "app/studio/core/models/baselines_model.h"

#include <QColor>
#include <QFont>

#include <algorithm>

#include "app/studio/core/models/memory_model.h"
#include "engine/plan/plan_request.h"

namespace hap::studio {
namespace {

const QString kDash = QStringLiteral("—");

}  // namespace

BaselinesModel::BaselinesModel(QObject* parent) : QAbstractTableModel(parent) {}

void BaselinesModel::setPlan(std::shared_ptr<const PlanDocument> plan) {
  beginResetModel();
  m_plan = std::move(plan);
  endResetModel();
}

QString BaselinesModel::displayName(const std::string& name) {
  if (name == "hap") return QStringLiteral("HAP");
  if (name == "megatron") return QStringLiteral("Megatron");
  return QString::fromStdString(name).toUpper();
}

const plan::Estimate* BaselinesModel::estimate(int row) const {
  if (!m_plan || row < 0 || row >= rowCount()) return nullptr;
  return row == 0 ? &m_plan->p().estimate : &m_plan->p().baselines[static_cast<size_t>(row - 1)].estimate;
}

bool BaselinesModel::applicable(int row) const {
  if (!m_plan || row < 0 || row >= rowCount()) return false;
  return row == 0 || m_plan->p().baselines[static_cast<size_t>(row - 1)].applicable;
}

QString BaselinesModel::baselineName(int row) const {
  if (!m_plan || row <= 0 || row >= rowCount()) return {};
  return QString::fromStdString(m_plan->p().baselines[static_cast<size_t>(row - 1)].name);
}

bool BaselinesModel::openable(int row) const {
  if (row <= 0 || !applicable(row)) return false;
  const std::vector<std::string>& names = plan::baselineNames();
  return std::find(names.begin(), names.end(), baselineName(row).toStdString()) != names.end();
}

QString BaselinesModel::note(int row) const {
  const plan::Plan& p = m_plan->p();
  if (row > 0) return QString::fromStdString(p.baselines[static_cast<size_t>(row - 1)].note);
  // As `hap compare` describes HAP's row, with the plan's own ratio policy.
  // `hap compare`'s words: "4 segments", "1 segment".
  const QString segments = p.segments.size() == 1 ? tr("1 segment") : tr("%1 segments").arg(p.segments.size());
  const QString ratios = p.ratioPolicy == "lp"     ? tr("ratios by LP")
                         : p.ratioPolicy == "milp" ? tr("whole lengths by MILP")
                                                   : tr("ratios %1").arg(QString::fromStdString(p.ratioPolicy));
  QString out = segments + QStringLiteral(", ") + ratios;
  if (p.strategy != "hap") out = tr("this plan (%1), ").arg(displayName(p.strategy)) + out;
  return out;
}

int BaselinesModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_plan) return 0;
  return 1 + static_cast<int>(m_plan->p().baselines.size());
}

int BaselinesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant BaselinesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const int row = index.row();
  const auto column = static_cast<Column>(index.column());
  const plan::Estimate& e = *estimate(row);
  const double hapSeconds = m_plan->p().estimate.iterationSeconds;
  const bool ok = applicable(row);
  const double speedup = hapSeconds > 0 ? e.iterationSeconds / hapSeconds : 0;
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case NameColumn:
          return row == 0 ? displayName(m_plan->p().strategy)
                          : displayName(m_plan->p().baselines[static_cast<size_t>(row - 1)].name);
        case TimeColumn: return ok ? QStringLiteral("%1 ms").arg(e.iterationSeconds * 1e3, 0, 'f', 3) : kDash;
        case MemoryColumn: return ok ? MemoryModel::formatBytes(e.maxMemoryBytes()) : kDash;
        case FitsColumn: return ok ? (e.fits ? tr("yes") : tr("does not fit")) : kDash;
        case SpeedupColumn: return ok && hapSeconds > 0 ? QStringLiteral("%1×").arg(speedup, 0, 'f', 2) : kDash;
        case NoteColumn: return note(row);
        case ColumnCount: break;
      }
      break;
    case ValueRole:
      if (!ok && column != NameColumn && column != NoteColumn) return {};
      switch (column) {
        case NameColumn: return row == 0 ? QString::fromStdString(m_plan->p().strategy) : baselineName(row);
        case TimeColumn: return e.iterationSeconds;
        case MemoryColumn: return e.maxMemoryBytes();
        case FitsColumn: return e.fits;
        case SpeedupColumn: return hapSeconds > 0 ? QVariant(speedup) : QVariant();
        case NoteColumn: return note(row);
        case ColumnCount: break;
      }
      break;
    case BaselineNameRole: return baselineName(row);
    case ApplicableRole: return ok;
    case IsPlanRole: return row == 0;
    case Qt::ToolTipRole:
      switch (column) {
        case NameColumn:
          if (row == 0) return tr("The plan itself");
          return openable(row) ? tr("Double-click to open this baseline as a plan (hap plan --baseline %1)").arg(baselineName(row))
                               : tr("Not applicable to this model and cluster");
        case TimeColumn: return ok ? tr("Predicted iteration time, forward and backward") : QVariant();
        case MemoryColumn:
          return ok ? tr("The most memory any device needs (%L1 bytes)").arg(e.maxMemoryBytes(), 0, 'f', 0) : QVariant();
        case SpeedupColumn:
          return ok ? tr("This row's iteration time over the plan's: above 1, the plan is faster") : QVariant();
        case NoteColumn: return note(row);
        default: break;
      }
      break;
    case Qt::ForegroundRole:
      if (!ok) return QColor(Qt::gray);
      if (!e.fits && (column == FitsColumn || column == MemoryColumn)) return MemoryModel::overCapacityForeground();
      break;
    case Qt::BackgroundRole:
      if (ok && !e.fits && (column == FitsColumn || column == MemoryColumn)) return MemoryModel::overCapacityBackground();
      break;
    case Qt::FontRole:
      if (row == 0) {
        QFont font;
        font.setBold(true);
        return font;
      }
      if (!ok && column == NoteColumn) {
        QFont font;
        font.setItalic(true);
        return font;
      }
      break;
    case Qt::TextAlignmentRole:
      return QVariant::fromValue((column == NameColumn || column == NoteColumn || column == FitsColumn ? Qt::AlignLeft
                                                                                                        : Qt::AlignRight) |
                                 Qt::AlignVCenter);
    default: break;
  }
  return {};
}

QVariant BaselinesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    switch (static_cast<Column>(section)) {
      case NameColumn: return tr("Plan");
      case TimeColumn: return tr("Iteration");
      case MemoryColumn: return tr("Memory (max)");
      case FitsColumn: return tr("Fits");
      case SpeedupColumn: return tr("Speedup");
      case NoteColumn: return tr("How it was priced");
      case ColumnCount: break;
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (static_cast<Column>(section)) {
      case NameColumn: return tr("The plan, then the baselines hap compare prices under the same cost model");
      case TimeColumn: return tr("Predicted iteration time");
      case MemoryColumn: return tr("The largest predicted memory of any device");
      case FitsColumn: return tr("Whether every device's memory is within its capacity");
      case SpeedupColumn: return tr("The row's iteration time over the plan's (above 1: the plan is faster)");
      case NoteColumn: return tr("How the row was priced, or why it does not apply");
      case ColumnCount: break;
    }
  }
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue(
        (section == NameColumn || section == NoteColumn || section == FitsColumn ? Qt::AlignLeft : Qt::AlignRight) |
        Qt::AlignVCenter);
  return {};
}

}  // namespace hap::studio
