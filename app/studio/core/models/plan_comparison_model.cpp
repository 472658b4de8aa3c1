#include "app/studio/core/models/plan_comparison_model.h"

#include <QColor>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <map>

namespace hap::studio {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString signedMs(double seconds) {
  const double v = seconds * 1e3;
  return (v > 0 ? QStringLiteral("+") : QString()) + QString::number(v, 'f', 3) + QStringLiteral(" ms");
}

QString perRank(const std::vector<double>& ratios) {
  QStringList parts;
  for (size_t r = 0; r < ratios.size(); ++r)
    parts << QStringLiteral("rank %1: %2%").arg(r).arg(ratios[r] * 100, 0, 'f', 4);
  return parts.join(QLatin1Char('\n'));
}

}  // namespace

ComparisonModel::ComparisonModel(QObject* parent) : QAbstractTableModel(parent) {}

void ComparisonModel::setPlans(std::shared_ptr<const PlanDocument> a, std::shared_ptr<const PlanDocument> b) {
  beginResetModel();
  m_a = std::move(a);
  m_b = std::move(b);
  m_comparison = m_a && m_b ? compare(*m_a, *m_b) : PlanComparison{};
  endResetModel();
}

QString ComparisonModel::formatShares(const plan::Plan& plan, const std::vector<double>& ratios) {
  struct Range {
    double low = 1, high = 0;
  };
  std::map<std::string, Range> byType;
  for (const plan::PlanDevice& d : plan.devices) {
    if (d.rank < 0 || static_cast<size_t>(d.rank) >= ratios.size()) continue;
    Range& r = byType[d.type];
    r.low = std::min(r.low, ratios[static_cast<size_t>(d.rank)]);
    r.high = std::max(r.high, ratios[static_cast<size_t>(d.rank)]);
  }
  QStringList parts;
  for (const auto& [type, r] : byType)
    parts << (std::abs(r.high - r.low) < PlanComparison::kRatioTolerance
                  ? QStringLiteral("%1 %2%").arg(qs(type)).arg(r.high * 100, 0, 'f', 2)
                  : QStringLiteral("%1 %2–%3%").arg(qs(type)).arg(r.low * 100, 0, 'f', 2).arg(r.high * 100, 0, 'f', 2));
  return parts.join(QStringLiteral(", "));
}

int ComparisonModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_comparison.nodes.size() + m_comparison.segments.size());
}

int ComparisonModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ComparisonModel::nodeData(const PlanComparison::NodeChange& c, int column, int role) const {
  const double delta = c.secondsB - c.secondsA;
  switch (role) {
    case Qt::DisplayRole:
      switch (static_cast<Column>(column)) {
        case ChangeColumn: return tr("variant");
        case ItemColumn: return QStringLiteral("#%1 %2").arg(c.node).arg(qs(c.op));
        case ScopeColumn: return c.scope.empty() ? tr("(top)") : qs(c.scope);
        case AColumn: return qs(c.variantA);
        case BColumn: return qs(c.variantB);
        case DeltaColumn: return signedMs(delta);
        case ColumnCount: break;
      }
      break;
    case SortRole:
      switch (static_cast<Column>(column)) {
        case ChangeColumn: return tr("variant");
        case ItemColumn: return static_cast<double>(c.node);
        case ScopeColumn: return qs(c.scope);
        case AColumn: return qs(c.variantA);
        case BColumn: return qs(c.variantB);
        case DeltaColumn: return delta;
        case ColumnCount: break;
      }
      break;
    case Qt::ToolTipRole:
      if (column == DeltaColumn)
        return tr("The node's steps (computation and the conversions preparing its inputs), slowest device, "
                  "forward + backward: %1 ms in A, %2 ms in B")
            .arg(c.secondsA * 1e3, 0, 'f', 4)
            .arg(c.secondsB * 1e3, 0, 'f', 4);
      if (column == ItemColumn) return tr("Imported node %1 (%2)").arg(c.node).arg(qs(c.op));
      break;
    case Qt::ForegroundRole:
      if (column == DeltaColumn && std::abs(delta) > 0)
        return delta < 0 ? QColor(0x1b, 0x7f, 0x3a) : QColor(0xb3, 0x26, 0x1e);
      break;
    case NodeRole: return static_cast<int>(c.node);
    case SegmentRole: return QString();
    default: break;
  }
  return {};
}

QVariant ComparisonModel::segmentData(const PlanComparison::SegmentChange& c, int column, int role) const {
  switch (role) {
    case SortRole:
      // The text of every column but Δ, which sorts by the size of the shift.
      if (column == DeltaColumn) return std::abs(c.largestShift);
      [[fallthrough]];
    case Qt::DisplayRole:
      switch (static_cast<Column>(column)) {
        case ChangeColumn: return tr("ratios");
        case ItemColumn: return qs(c.name);
        case ScopeColumn: return QString();
        case AColumn: return formatShares(m_a->p(), c.ratiosA);
        case BColumn: return formatShares(m_b->p(), c.ratiosB);
        case DeltaColumn:
          return tr("%1%2 pt, rank %3")
              .arg(c.largestShift > 0 ? QStringLiteral("+") : QString())
              .arg(c.largestShift * 100, 0, 'f', 2)
              .arg(c.rank);
        case ColumnCount: break;
      }
      break;
    case Qt::ToolTipRole:
      switch (static_cast<Column>(column)) {
        case AColumn: return perRank(c.ratiosA);
        case BColumn: return perRank(c.ratiosB);
        case DeltaColumn: {
          const plan::PlanDevice& d = m_a->p().devices.at(static_cast<size_t>(c.rank));
          QStringList shifts;
          for (size_t r = 0; r < c.shifts.size(); ++r)
            shifts << tr("rank %1: %2%3 pt").arg(r).arg(c.shifts[r] > 0 ? QStringLiteral("+") : QString()).arg(c.shifts[r] * 100, 0, 'f', 4);
          return tr("The largest change of one device's share (B − A), on rank %1 (%2), in percentage points:\n%3")
              .arg(c.rank)
              .arg(qs(d.type), shifts.join(QLatin1Char('\n')));
        }
        default: return tr("Segment %1: its ratios moved").arg(qs(c.name));
      }
    case NodeRole: return static_cast<int>(ir::kNone);
    case SegmentRole: return qs(c.name);
    default: break;
  }
  return {};
}

QVariant ComparisonModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const size_t row = static_cast<size_t>(index.row());
  const bool node = row < m_comparison.nodes.size();
  if (role == RowKindRole) return node ? NodeRow : SegmentRow;
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue((index.column() == DeltaColumn ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  return node ? nodeData(m_comparison.nodes[row], index.column(), role)
              : segmentData(m_comparison.segments[row - m_comparison.nodes.size()], index.column(), role);
}

QVariant ComparisonModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    switch (static_cast<Column>(section)) {
      case ChangeColumn: return tr("Change");
      case ItemColumn: return tr("Node / segment");
      case ScopeColumn: return tr("Scope");
      case AColumn: return tr("Plan A");
      case BColumn: return tr("Plan B");
      case DeltaColumn: return tr("Δ (B − A)");
      case ColumnCount: break;
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (static_cast<Column>(section)) {
      case ChangeColumn: return tr("A node computed under another rule variant, or a segment whose ratios moved");
      case ItemColumn: return tr("The imported node (id and op), or the segment's name");
      case ScopeColumn: return tr("The node's module scope");
      case AColumn: return tr("Variant, or shares by device type, in plan A");
      case BColumn: return tr("Variant, or shares by device type, in plan B");
      case DeltaColumn: return tr("Node: its steps' predicted time in B minus A; segment: the largest share shift");
      case ColumnCount: break;
    }
  }
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue((section == DeltaColumn ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  return {};
}

}  // namespace hap::studio
