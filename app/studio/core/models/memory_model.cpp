#include "app/studio/core/models/memory_model.h"

#include <QFont>

#include <cmath>
#include <map>
#include <tuple>

#include "engine/ir/summary.h"

namespace hap::studio {

MemoryModel::MemoryModel(QObject* parent) : QAbstractTableModel(parent) {}

void MemoryModel::setPlan(std::shared_ptr<const PlanDocument> plan) {
  beginResetModel();
  m_plan = std::move(plan);
  m_devices = m_plan ? plan::worldDevices(m_plan->p()) : std::vector<plan::PlanDevice>{};
  m_breakdown = false;
  for (const plan::PlanDevice& d : m_devices) m_breakdown = m_breakdown || d.memory.total() > 0;
  endResetModel();
}

int MemoryModel::overCapacity() const {
  int n = 0;
  for (const plan::PlanDevice& d : m_devices) n += !fits(d);
  return n;
}

std::vector<std::vector<int>> MemoryModel::identicalRows() const {
  std::map<std::tuple<std::string, double, double, double, double, double, double, double>, size_t> index;
  std::vector<std::vector<int>> out;
  for (size_t row = 0; row < m_devices.size(); ++row) {
    const plan::PlanDevice& d = m_devices[row];
    auto [it, inserted] = index.try_emplace({d.type, d.capacityBytes, d.memoryBytes, d.memory.parameters, d.memory.gradients,
                                             d.memory.optimizer, d.memory.activations, d.memory.other},
                                            out.size());
    if (inserted) out.emplace_back();
    out[it->second].push_back(static_cast<int>(row));
  }
  return out;
}

double MemoryModel::breakdownBytes(const plan::PlanDevice& d, int column) {
  switch (column) {
    case ParametersColumn: return d.memory.parameters;
    case GradientsColumn: return d.memory.gradients;
    case OptimizerColumn: return d.memory.optimizer;
    case ActivationsColumn: return d.memory.activations;
    case OtherColumn: return d.memory.other;
    default: return 0;
  }
}

QString MemoryModel::formatBytes(double bytes) {
  return QString::fromStdString(ir::formatBytes(static_cast<int64_t>(std::llround(bytes))));
}

QString MemoryModel::columnName(int column) {
  switch (static_cast<Column>(column)) {
    case RankColumn: return tr("Rank");
    case TypeColumn: return tr("Type");
    case ParametersColumn: return tr("Parameters");
    case GradientsColumn: return tr("Gradients");
    case OptimizerColumn: return tr("Optimizer state");
    case ActivationsColumn: return tr("Activations");
    case OtherColumn: return tr("Other");
    case TotalColumn: return tr("Total");
    case CapacityColumn: return tr("Capacity");
    case FitsColumn: return tr("Fits");
    case ColumnCount: break;
  }
  return {};
}

int MemoryModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_devices.size());
}

int MemoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant MemoryModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const plan::PlanDevice& d = m_devices.at(static_cast<size_t>(index.row()));
  const int column = index.column();
  const bool ok = fits(d);
  const bool breakdownColumn = column >= ParametersColumn && column <= OtherColumn;
  switch (role) {
    case Qt::DisplayRole:
      switch (static_cast<Column>(column)) {
        case RankColumn: return d.rank;
        case TypeColumn: return QString::fromStdString(d.type);
        case TotalColumn: return formatBytes(d.memoryBytes);
        case CapacityColumn: return formatBytes(d.capacityBytes);
        case FitsColumn: return ok ? tr("yes") : tr("does not fit");
        case ColumnCount: break;
        default: return m_breakdown ? formatBytes(breakdownBytes(d, column)) : QStringLiteral("—");
      }
      break;
    case ValueRole:
      switch (static_cast<Column>(column)) {
        case RankColumn: return d.rank;
        case TypeColumn: return QString::fromStdString(d.type);
        case TotalColumn: return d.memoryBytes;
        case CapacityColumn: return d.capacityBytes;
        case FitsColumn: return ok;
        case ColumnCount: break;
        default: return m_breakdown ? QVariant(breakdownBytes(d, column)) : QVariant();
      }
      break;
    case FitsRole: return ok;
    case Qt::ToolTipRole:
      if (breakdownColumn && !m_breakdown) return tr("Breakdown not recorded in this plan");
      if (column == TotalColumn || column == CapacityColumn || column == FitsColumn) {
        const double used = d.capacityBytes > 0 ? d.memoryBytes / d.capacityBytes * 100 : 0;
        return ok ? tr("Rank %1 uses %2 of its %3 (%4%)")
                        .arg(d.rank).arg(formatBytes(d.memoryBytes), formatBytes(d.capacityBytes))
                        .arg(used, 0, 'f', 1)
                  : tr("Rank %1 needs %2 but has %3: %4 over capacity")
                        .arg(d.rank).arg(formatBytes(d.memoryBytes), formatBytes(d.capacityBytes),
                                         formatBytes(d.memoryBytes - d.capacityBytes));
      }
      if (breakdownColumn) return tr("%L1 bytes").arg(breakdownBytes(d, column), 0, 'f', 0);
      if (column == TypeColumn)
        return tr("%1 on %2 (%3)").arg(QString::fromStdString(d.type), QString::fromStdString(d.machine),
                                       QString::fromStdString(d.host));
      break;
    case Qt::ForegroundRole:
      if (!ok) return QColor(overCapacityForeground());
      if (breakdownColumn && !m_breakdown) return QColor(Qt::gray);
      break;
    case Qt::BackgroundRole:
      if (!ok) return QColor(overCapacityBackground());
      break;
    case Qt::FontRole:
      if (!ok && (column == FitsColumn || column == TotalColumn)) {
        QFont font;
        font.setBold(true);
        return font;
      }
      break;
    case Qt::TextAlignmentRole:
      return QVariant::fromValue((column == TypeColumn || column == FitsColumn ? Qt::AlignLeft : Qt::AlignRight) |
                                 Qt::AlignVCenter);
    default: break;
  }
  return {};
}

QVariant MemoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  switch (role) {
    case Qt::DisplayRole: return columnName(section);
    case Qt::ToolTipRole:
      switch (static_cast<Column>(section)) {
        case RankColumn: return tr("Global rank");
        case TypeColumn: return tr("Device type");
        case ParametersColumn: return tr("The parameters' persistent forms (whole or the device's shard)");
        case GradientsColumn: return tr("The parameters' gradients, in the same forms");
        case OptimizerColumn: return tr("Optimizer state per parameter byte (the cost model's factor)");
        case ActivationsColumn: return tr("Activations kept for backward");
        case OtherColumn: return tr("Inputs, buffers and constants");
        case TotalColumn: return tr("Predicted memory of the device");
        case CapacityColumn: return tr("Memory of the device (cluster inventory)");
        case FitsColumn: return tr("Whether the total is within the capacity");
        case ColumnCount: break;
      }
      break;
    case Qt::TextAlignmentRole:
      return QVariant::fromValue((section == TypeColumn || section == FitsColumn ? Qt::AlignLeft : Qt::AlignRight) |
                                 Qt::AlignVCenter);
    default: break;
  }
  return {};
}

}  // namespace hap::studio
