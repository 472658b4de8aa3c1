// The plans made or opened this session (issue 18, item 8), oldest first: what the compare view
// chooses from. One row per plan; each plan is held once (adding it again keeps its row).
#pragma once

#include <QAbstractTableModel>
#include <memory>
#include <vector>

#include "app/studio/core/documents/plan_document.h"

namespace hap::studio {

class PlanHistoryModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    LabelColumn,      // PlanDocument::label
    StrategyColumn,   // "hap", "dp-ev", "megatron", ...
    RatiosColumn,     // the request's --ratios, else Plan::ratioPolicy
    SegmentsColumn,   // the request's effective --segments, else Plan::segmentation
    IterationColumn,  // ms
    MemoryColumn,     // the most any rank uses
    FitsColumn,       // "yes" / "NO"
    OptimalColumn,    // "yes" / "no" (beam search)
    ColumnCount
  };
  enum Role {
    SortRole = Qt::UserRole,  // raw value: numbers as double (seconds, bytes), bools, text
    PlanRole,                 // QVariant holding the row's std::shared_ptr<const PlanDocument>
  };

  explicit PlanHistoryModel(QObject* parent = nullptr);

  // Appends `plan` (newest last) and returns its row; a plan already held keeps its row. Null: -1.
  int add(std::shared_ptr<const PlanDocument> plan);
  // Puts `plan` in place of row `row`'s plan (the same plan with a path once exported, say); does
  // nothing for a row out of range or a null plan.
  void replace(int row, std::shared_ptr<const PlanDocument> plan);
  // nullptr for a row out of range.
  std::shared_ptr<const PlanDocument> plan(int row) const;
  int indexOf(const std::shared_ptr<const PlanDocument>& plan) const;  // -1 when not held
  int indexOf(const PlanDocument* plan) const;
  void clear();
  int size() const { return static_cast<int>(m_plans.size()); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<std::shared_ptr<const PlanDocument>> m_plans;
};

}  // namespace hap::studio
