#include "app/studio/core/models/ratios_model.h"

#include <QFont>

#include <algorithm>
#include <map>
#include <tuple>

namespace hap::studio {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

QString DeviceGroup::label() const {
  if (ranks.size() == 1) return QStringLiteral("rank %1 %2").arg(ranks.front()).arg(qs(type));
  return QStringLiteral("%1× %2").arg(ranks.size()).arg(qs(type));
}

QString DeviceGroup::rankRanges() const {
  QStringList parts;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    parts << (i == j ? QString::number(ranks[i]) : QStringLiteral("%1–%2").arg(ranks[i]).arg(ranks[j]));
    i = j + 1;
  }
  return parts.join(QStringLiteral(", "));
}

std::vector<DeviceGroup> deviceGroups(const plan::Plan& plan) {
  // Keyed by everything that must agree, so that a plan whose group ids are missing or wrong
  // still never merges devices with different shares.
  std::map<std::tuple<int, std::string, std::vector<double>>, size_t> index;
  std::vector<DeviceGroup> out;
  for (const plan::PlanDevice& d : plan.devices) {
    std::vector<double> shares;
    for (const plan::Segment& s : plan.segments)
      shares.push_back(static_cast<size_t>(d.rank) < s.ratios.size() ? s.ratios[static_cast<size_t>(d.rank)] : 0.0);
    auto [it, inserted] = index.try_emplace({d.group, d.type, std::move(shares)}, out.size());
    if (inserted) out.push_back({d.type, {}});
    out[it->second].ranks.push_back(d.rank);
  }
  for (DeviceGroup& g : out) std::sort(g.ranks.begin(), g.ranks.end());
  std::sort(out.begin(), out.end(), [](const DeviceGroup& a, const DeviceGroup& b) { return a.ranks[0] < b.ranks[0]; });
  return out;
}

RatiosModel::RatiosModel(QObject* parent) : QAbstractTableModel(parent) {}

void RatiosModel::setPlan(std::shared_ptr<const PlanDocument> plan) {
  beginResetModel();
  m_plan = std::move(plan);
  rebuildColumns();
  endResetModel();
}

void RatiosModel::setGrouped(bool grouped) {
  if (grouped == m_grouped) return;
  beginResetModel();
  m_grouped = grouped;
  rebuildColumns();
  endResetModel();
}

void RatiosModel::rebuildColumns() {
  m_columns.clear();
  if (!m_plan) return;
  if (m_grouped) {
    m_columns = deviceGroups(m_plan->p());
    return;
  }
  for (const plan::PlanDevice& d : m_plan->p().devices) m_columns.push_back({d.type, {d.rank}});
}

double RatiosModel::deviceShare(int segment, int rank) const {
  const std::vector<double>& r = m_plan->p().segments.at(static_cast<size_t>(segment)).ratios;
  return rank >= 0 && static_cast<size_t>(rank) < r.size() ? r[static_cast<size_t>(rank)] : 0.0;
}

QString RatiosModel::formatShare(double share) { return QStringLiteral("%1%").arg(share * 100, 0, 'f', 1); }

int RatiosModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_plan) return 0;
  return static_cast<int>(m_plan->p().segments.size());
}

int RatiosModel::columnCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_plan) return 0;
  return 1 + static_cast<int>(m_columns.size());
}

QVariant RatiosModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const plan::Segment& segment = m_plan->p().segments.at(static_cast<size_t>(index.row()));
  if (role == SegmentRole) return index.row();
  if (index.column() == 0) {
    switch (role) {
      case Qt::DisplayRole: return qs(segment.name);
      case Qt::ToolTipRole: {
        int nodes = 0;
        for (int s : m_plan->p().importedNodeSegment) nodes += s == index.row();
        return tr("Segment %1: %2 (%3 node%4 with these ratios)")
            .arg(index.row())
            .arg(qs(segment.name))
            .arg(nodes)
            .arg(nodes == 1 ? QString() : QStringLiteral("s"));
      }
      case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
      default: return {};
    }
  }
  const DeviceGroup& g = m_columns.at(static_cast<size_t>(index.column() - 1));
  const double each = deviceShare(index.row(), g.ranks.front());
  const double total = each * g.count();
  switch (role) {
    case Qt::DisplayRole: return formatShare(total);
    case ShareRole: return total;
    case DeviceShareRole: return each;
    case Qt::ToolTipRole:
      if (g.count() == 1)
        return tr("%1 on rank %2 (%3): %4 of the work").arg(qs(segment.name)).arg(g.ranks.front()).arg(qs(g.type))
            .arg(QString::number(each * 100, 'f', 3) + QLatin1Char('%'));
      return tr("%1 on %2 (ranks %3): %4 in all, %5 per device")
          .arg(qs(segment.name), g.label(), g.rankRanges())
          .arg(QString::number(total * 100, 'f', 3) + QLatin1Char('%'))
          .arg(QString::number(each * 100, 'f', 3) + QLatin1Char('%'));
    case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    default: return {};
  }
}

QVariant RatiosModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= columnCount()) return {};
  if (section == 0) {
    if (role == Qt::DisplayRole) return tr("Segment");
    if (role == Qt::ToolTipRole) return tr("The nodes that share one ratio vector (segmentation %1)").arg(qs(m_plan->p().segmentation));
    if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
    return {};
  }
  const DeviceGroup& g = m_columns.at(static_cast<size_t>(section - 1));
  switch (role) {
    case Qt::DisplayRole: return g.label();
    case Qt::ToolTipRole:
      return g.count() == 1 ? tr("Rank %1, a %2").arg(g.ranks.front()).arg(qs(g.type))
                            : tr("%1 devices of type %2 (ranks %3), which take the same share of every segment; "
                                 "the cells are their total share")
                                  .arg(g.count()).arg(qs(g.type), g.rankRanges());
    case Qt::TextAlignmentRole: return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    default: return {};
  }
}

}  // namespace hap::studio
