#include "app/studio/core/models/explain_filter.h"

#include "app/studio/core/models/explain_model.h"

namespace hap::studio {

ExplainFilterModel::ExplainFilterModel(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(ExplainModel::SortRole);
  setSortCaseSensitivity(Qt::CaseInsensitive);
}

void ExplainFilterModel::setText(const QString& text) {
  const QString t = text.trimmed();
  if (t == m_text) return;
  m_text = t;
  invalidateRowsFilter();
}

void ExplainFilterModel::setKind(Kind kind) {
  if (kind == m_kind) return;
  m_kind = kind;
  invalidateRowsFilter();
}

bool ExplainFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
  const QModelIndex index = sourceModel()->index(sourceRow, 0, sourceParent);
  if (m_kind != Kind::All) {
    const bool compute = index.data(ExplainModel::IsComputeRole).toBool();
    if (compute != (m_kind == Kind::Computations)) return false;
  }
  if (m_text.isEmpty()) return true;
  return index.data(ExplainModel::SearchTextRole).toString().contains(m_text, Qt::CaseInsensitive);
}

}  // namespace hap::studio
