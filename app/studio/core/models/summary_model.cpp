#include "app/studio/core/models/summary_model.h"

#include <QFont>

#include <algorithm>
#include <unordered_set>

namespace hap::studio {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// The depth at which truncateScope leaves `scope` whole.
int fullDepth(const std::string& scope) {
  int d = 0;
  while (ir::truncateScope(scope, d) != scope) ++d;
  return d;
}

}  // namespace

SummaryModel::SummaryModel(QObject* parent) : QAbstractTableModel(parent) {}

void SummaryModel::setGraph(std::shared_ptr<const ir::Graph> graph) {
  beginResetModel();
  m_graph = std::move(graph);
  m_maxDepth = 0;
  if (m_graph) {
    std::unordered_set<std::string> seen;
    auto visit = [&](const std::string& scope) {
      if (seen.insert(scope).second) m_maxDepth = std::max(m_maxDepth, fullDepth(scope));
    };
    for (const ir::Node& n : m_graph->nodes) visit(n.scope);
    for (ir::ValueId p : m_graph->parameters)
      visit(std::string(ir::ownerScope(m_graph->value(p).name)));
  }
  recompute();
  endResetModel();
}

void SummaryModel::setDepth(int depth) {
  depth = std::max(depth, -1);
  if (depth == m_depth) return;
  beginResetModel();
  m_depth = depth;
  recompute();
  endResetModel();
}

void SummaryModel::recompute() {
  m_summary = m_graph ? ir::summarize(*m_graph, m_depth) : ir::GraphSummary{};
}

int SummaryModel::totalRow() const {
  return m_graph ? static_cast<int>(m_summary.scopes.size()) : -1;
}

const ir::ScopeSummary& SummaryModel::rowSummary(int row) const {
  return row == totalRow() ? m_summary.total : m_summary.scopes.at(static_cast<size_t>(row));
}

int SummaryModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_graph) return 0;
  return static_cast<int>(m_summary.scopes.size()) + 1;
}

int SummaryModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QString SummaryModel::formatTopOps(const std::map<std::string, int>& opCounts, int shown) {
  std::vector<std::pair<std::string, int>> ops(opCounts.begin(), opCounts.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  QStringList parts;
  for (int i = 0; i < std::min<int>(shown, static_cast<int>(ops.size())); ++i)
    parts << QStringLiteral("%1×%2").arg(qs(ops[static_cast<size_t>(i)].first)).arg(ops[static_cast<size_t>(i)].second);
  if (static_cast<int>(ops.size()) > shown) parts << QStringLiteral("…");
  return parts.join(QLatin1Char(' '));
}

QVariant SummaryModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const bool total = index.row() == totalRow();
  const ir::ScopeSummary& s = rowSummary(index.row());
  const auto column = static_cast<Column>(index.column());

  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case ScopeColumn:
          return total ? tr("total") : s.scope.empty() ? tr("(top)") : qs(s.scope);
        case ParametersColumn: return qs(ir::formatCount(static_cast<double>(s.parameters)));
        case ParameterBytesColumn: return qs(ir::formatBytes(s.parameterBytes));
        case FlopsColumn: return qs(ir::formatCount(s.flops));
        case ActivationsColumn: return qs(ir::formatBytes(s.activationBytes));
        case OpsColumn: return s.nodes;
        case TopOpsColumn: return formatTopOps(s.opCounts);
        case ColumnCount: break;
      }
      break;
    case SortRole:
      switch (column) {
        case ScopeColumn: return total ? QString() : qs(s.scope);
        case ParametersColumn: return static_cast<qint64>(s.parameters);
        case ParameterBytesColumn: return static_cast<qint64>(s.parameterBytes);
        case FlopsColumn: return s.flops;
        case ActivationsColumn: return static_cast<qint64>(s.activationBytes);
        case OpsColumn: return s.nodes;
        case TopOpsColumn: return formatTopOps(s.opCounts);
        case ColumnCount: break;
      }
      break;
    case Qt::ToolTipRole:
      switch (column) {
        case ScopeColumn:
          return total ? tr("Sums over every scope") : s.scope.empty() ? tr("Top-level module")
                                                                     : qs(s.scope);
        case ParametersColumn: return tr("%L1 parameter elements").arg(s.parameters);
        case ParameterBytesColumn: return tr("%L1 bytes").arg(s.parameterBytes);
        case FlopsColumn: return tr("%L1 forward FLOPs").arg(s.flops, 0, 'f', 0);
        case ActivationsColumn: return tr("%L1 bytes written by its ops").arg(s.activationBytes);
        case OpsColumn: return tr("%L1 ops").arg(s.nodes);
        case TopOpsColumn: return formatTopOps(s.opCounts, 1 << 20);
        case ColumnCount: break;
      }
      break;
    case Qt::TextAlignmentRole:
      if (column == ScopeColumn || column == TopOpsColumn)
        return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
      return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::FontRole:
      if (total) {
        QFont font;
        font.setBold(true);
        return font;
      }
      break;
    case ScopePathRole:
      return total ? QVariant() : QVariant(qs(s.scope));
    case IsTotalRole:
      return total;
    default:
      break;
  }
  return {};
}

QVariant SummaryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    switch (static_cast<Column>(section)) {
      case ScopeColumn: return tr("Scope");
      case ParametersColumn: return tr("Parameters");
      case ParameterBytesColumn: return tr("Param bytes");
      case FlopsColumn: return tr("FLOPs");
      case ActivationsColumn: return tr("Activations");
      case OpsColumn: return tr("Ops");
      case TopOpsColumn: return tr("Top ops");
      case ColumnCount: break;
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (static_cast<Column>(section)) {
      case ScopeColumn: return tr("Module scope, truncated to the depth");
      case ParametersColumn: return tr("Parameter elements owned by the scope");
      case ParameterBytesColumn: return tr("Bytes of those parameters");
      case FlopsColumn: return tr("Forward floating-point operations (a multiply-add counts 2)");
      case ActivationsColumn: return tr("Bytes written by the scope's ops in forward");
      case OpsColumn: return tr("Number of ops");
      case TopOpsColumn: return tr("The most frequent op kinds");
      case ColumnCount: break;
    }
  }
  // A first click on a header sorts numbers largest first, text A to Z.
  if (role == Qt::InitialSortOrderRole)
    return section == ScopeColumn || section == TopOpsColumn ? Qt::AscendingOrder
                                                             : Qt::DescendingOrder;
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue((section == ScopeColumn || section == TopOpsColumn ? Qt::AlignLeft
                                                                                   : Qt::AlignRight) |
                               Qt::AlignVCenter);
  return {};
}

SummaryProxyModel::SummaryProxyModel(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(SummaryModel::SortRole);
  setSortCaseSensitivity(Qt::CaseInsensitive);
}

bool SummaryProxyModel::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  // QSortFilterProxyModel sorts descending by asking lessThan(right, left); answering so that
  // the totals row compares greatest in ascending and least in descending order keeps it last.
  const bool leftTotal = left.data(SummaryModel::IsTotalRole).toBool();
  const bool rightTotal = right.data(SummaryModel::IsTotalRole).toBool();
  if (leftTotal != rightTotal)
    return sortOrder() == Qt::AscendingOrder ? rightTotal : leftTotal;
  return QSortFilterProxyModel::lessThan(left, right);
}

}  // namespace hap::studio
