#include "app/studio/core/models/summary_model.h"

#include <QFont>

#include <algorithm>
#include <unordered_set>

namespace hap::studio {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

SummaryModel::SummaryModel(QObject* parent) : QAbstractTableModel(parent) {}

void SummaryModel::setGraph(std::shared_ptr<const ir::Graph> graph) {
  beginResetModel();
  m_graph = std::move(graph);
  m_tree.reset();
  m_wrapper = kRootScope;
  m_maxDepth = 0;
  if (m_graph) {
    m_tree = std::make_unique<ScopeTree>(*m_graph);
    m_wrapper = m_tree->wrapper();
    const int base = m_tree->scope(m_wrapper).depth;
    for (const Scope& sc : m_tree->scopes())
      m_maxDepth = std::max(m_maxDepth, m_tree->contains(m_wrapper, sc.id) && sc.id != m_wrapper
                                            ? sc.depth - base
                                            : sc.depth);
  }
  recompute();
  endResetModel();
}

QString SummaryModel::wrapperPath() const {
  return m_tree ? qs(m_tree->scope(m_wrapper).path) : QString();
}

ScopeId SummaryModel::rowScope(ScopeId s) const {
  if (m_depth < 0) return s;
  if (m_depth == 0) return kRootScope;
  const int base = m_wrapper != kRootScope && m_tree->contains(m_wrapper, s) && s != m_wrapper
                       ? m_tree->scope(m_wrapper).depth
                       : 0;
  while (m_tree->scope(s).depth > base + m_depth) s = m_tree->scope(s).parent;
  return s;
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
  m_summary = ir::GraphSummary{};
  if (!m_graph || !m_tree) return;
  // The totals and value counts as ir::summarize has them; the rows from the scope tree.
  m_summary = ir::summarize(*m_graph, 0);
  m_summary.depth = m_depth;
  m_summary.scopes.clear();
  std::vector<int> rowOf(static_cast<size_t>(m_tree->size()), -1);
  auto row = [&](ScopeId s) -> ir::ScopeSummary& {
    const ScopeId r = rowScope(s);
    int& index = rowOf[static_cast<size_t>(r)];
    if (index < 0) {
      index = static_cast<int>(m_summary.scopes.size());
      m_summary.scopes.emplace_back();
      m_summary.scopes.back().scope = m_tree->scope(r).path;
    }
    return m_summary.scopes[static_cast<size_t>(index)];
  };
  for (const ir::Node& n : m_graph->nodes) {
    ir::ScopeSummary& r = row(m_tree->scopeOfNode(n.id));
    r.flops += n.cost.flops;
    r.activationBytes += n.cost.bytesWritten;
    ++r.nodes;
    std::string_view op = n.op;
    if (op.starts_with("aten::")) op.remove_prefix(6);
    ++r.opCounts[std::string(op)];
  }
  for (ir::ValueId id : m_graph->parameters) {
    const ir::Value& p = m_graph->value(id);
    const ScopeId owner = m_tree->find(std::string(ir::ownerScope(p.name)));
    ir::ScopeSummary& r = row(owner >= 0 ? owner : kRootScope);
    r.parameters += p.numel();
    r.parameterBytes += p.bytes();
  }
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
