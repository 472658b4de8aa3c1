// Filters and sorts the Explain view's program table (ExplainModel): a case-insensitive substring
// over op, scope, variant or instruction, forms and segment (ExplainModel::SearchTextRole), and a
// kind filter (every step, computations only, conversions only). Sorts by ExplainModel::SortRole
// (numbers numerically); unsorted (sort column -1) it keeps program order.
#pragma once

#include <QSortFilterProxyModel>
#include <QString>

namespace hap::studio {

class ExplainFilterModel : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  enum class Kind { All, Computations, Communication };

  explicit ExplainFilterModel(QObject* parent = nullptr);

  // Rows whose op, scope, variant/instruction, forms or segment contain `text`, ignoring case
  // (an empty or blank text keeps every row).
  void setText(const QString& text);
  QString text() const { return m_text; }
  void setKind(Kind kind);
  Kind kind() const { return m_kind; }

 protected:
  bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

 private:
  QString m_text;
  Kind m_kind = Kind::All;
};

}  // namespace hap::studio
