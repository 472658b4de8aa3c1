#include "app/studio/core/models/plan_history_model.h"

#include "engine/ir/summary.h"

namespace hap::studio {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString ratios(const PlanDocument& d) { return qs(d.request ? d.request->ratios : d.p().ratioPolicy); }
QString segments(const PlanDocument& d) {
  return qs(d.request ? d.request->effectiveSegments() : d.p().segmentation);
}

}  // namespace

PlanHistoryModel::PlanHistoryModel(QObject* parent) : QAbstractTableModel(parent) {}

int PlanHistoryModel::add(std::shared_ptr<const PlanDocument> plan) {
  if (!plan) return -1;
  if (const int row = indexOf(plan); row >= 0) return row;
  const int row = size();
  beginInsertRows({}, row, row);
  m_plans.push_back(std::move(plan));
  endInsertRows();
  return row;
}

void PlanHistoryModel::replace(int row, std::shared_ptr<const PlanDocument> plan) {
  if (!plan || row < 0 || row >= size()) return;
  m_plans[static_cast<size_t>(row)] = std::move(plan);
  Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

std::shared_ptr<const PlanDocument> PlanHistoryModel::plan(int row) const {
  return row >= 0 && row < size() ? m_plans[static_cast<size_t>(row)] : nullptr;
}

int PlanHistoryModel::indexOf(const std::shared_ptr<const PlanDocument>& plan) const { return indexOf(plan.get()); }

int PlanHistoryModel::indexOf(const PlanDocument* plan) const {
  if (!plan) return -1;
  for (int row = 0; row < size(); ++row)
    if (m_plans[static_cast<size_t>(row)].get() == plan) return row;
  return -1;
}

void PlanHistoryModel::clear() {
  if (m_plans.empty()) return;
  beginResetModel();
  m_plans.clear();
  endResetModel();
}

int PlanHistoryModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : size(); }

int PlanHistoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PlanHistoryModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const PlanDocument& d = *m_plans[static_cast<size_t>(index.row())];
  const plan::Plan& p = d.p();
  const auto column = static_cast<Column>(index.column());
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case LabelColumn: return qs(d.label);
        case StrategyColumn: return qs(p.strategy);
        case RatiosColumn: return ratios(d);
        case SegmentsColumn: return segments(d);
        case IterationColumn: return QStringLiteral("%1 ms").arg(p.estimate.iterationSeconds * 1e3, 0, 'f', 3);
        case MemoryColumn: return qs(ir::formatBytes(static_cast<int64_t>(p.estimate.maxMemoryBytes())));
        case FitsColumn: return p.estimate.fits ? tr("yes") : tr("NO");
        case OptimalColumn: return p.provenOptimal ? tr("yes") : tr("no");
        case ColumnCount: break;
      }
      break;
    case SortRole:
      switch (column) {
        case IterationColumn: return p.estimate.iterationSeconds;
        case MemoryColumn: return p.estimate.maxMemoryBytes();
        case FitsColumn: return p.estimate.fits;
        case OptimalColumn: return p.provenOptimal;
        default: return data(index, Qt::DisplayRole);
      }
    case Qt::ToolTipRole:
      switch (column) {
        case LabelColumn: return d.path.empty() ? qs(d.label) : qs(d.path);
        case FitsColumn:
          return p.estimate.fits ? tr("Every device's memory fits its capacity")
                                 : tr("Some device needs more memory than it has");
        case OptimalColumn: return p.provenOptimal ? tr("Optimal under the cost model") : qs(p.notOptimal);
        default: break;
      }
      break;
    case Qt::TextAlignmentRole:
      return QVariant::fromValue((column == IterationColumn || column == MemoryColumn ? Qt::AlignRight : Qt::AlignLeft) |
                                 Qt::AlignVCenter);
    case PlanRole:
      return QVariant::fromValue(m_plans[static_cast<size_t>(index.row())]);
    default:
      break;
  }
  return {};
}

QVariant PlanHistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    switch (static_cast<Column>(section)) {
      case LabelColumn: return tr("Plan");
      case StrategyColumn: return tr("Strategy");
      case RatiosColumn: return tr("Ratios");
      case SegmentsColumn: return tr("Segments");
      case IterationColumn: return tr("Iteration");
      case MemoryColumn: return tr("Memory (max)");
      case FitsColumn: return tr("Fits");
      case OptimalColumn: return tr("Optimal");
      case ColumnCount: break;
    }
  }
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue(
        (section == IterationColumn || section == MemoryColumn ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  return {};
}

}  // namespace hap::studio
