// The Explain view's program table (issue 18, item 7): one row per Plan::steps entry, in program
// order, with the stage it runs in, what it does and its predicted time — the rows of
// `hap plan --explain` as a table (that text skips free conversions; the table keeps every step).
//
// Forms print as rules::formatRel with, for G(d), each rank's exact length: "x G(0)[3,3,2,0]".
// Times are the slowest device's (PlanStep::forwardSeconds / backwardSeconds, communication
// included), shown in ms; SortRole gives them in seconds. explainText() is that text itself.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <memory>

#include "app/studio/core/documents/plan_document.h"

namespace hap::studio {

class ExplainModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    StepColumn,         // the step's index in Plan::steps
    StageColumn,        // the forward stage it runs in, from 1 as `hap plan --explain` numbers them
    KindColumn,         // "compute" / "convert"
    OpColumn,           // the node's op without its namespace ("linear"); a conversion: its consumer's
    ScopeColumn,        // module scope ("" = top level)
    VariantColumn,      // compute: the rule variant; convert: the instruction ("all-gather", ...)
    MethodColumn,       // a padded/grouped collective's method, else ""
    SegmentColumn,      // the segment's name
    ForwardColumn,      // ms
    BackwardColumn,     // ms
    TotalColumn,        // ms
    FormsColumn,        // "(x G(0)[3,3,2,0], w I) -> (y G(0)[3,3,2,0])" / "x [8, 16]: G(0)[..] -> I"
                        // (last: the widest, it takes the view's remaining width)
    ColumnCount
  };
  enum Role {
    SortRole = Qt::UserRole,  // raw value: numbers as double (seconds for times), text as QString
    NodeRole,                 // int: the imported node the step computes or prepares (ir::kNone for
                              // a reshard's steps), PlanDocument::stepNode
    StepRole,                 // int: the index into Plan::steps (the source row)
    IsComputeRole,            // bool: a computation (PlanStep::Kind::Compute)
    SearchTextRole,           // QString: op, scope, variant/instruction, forms and segment, for the
                              // filter (ExplainFilterModel)
  };

  explicit ExplainModel(QObject* parent = nullptr);

  // Replaces the plan (nullptr clears the table).
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  const std::shared_ptr<const PlanDocument>& plan() const { return m_plan; }

  // The imported node of source row `row` (ir::kNone for a reshard's steps or a bad row).
  ir::NodeId node(int row) const;
  // The forward stage index (0-based into the forward stages) of step `row`, -1 if in none.
  int stage(int row) const;

  // "G(0)[3,3,2,0]", "I", "R": a form's relation with its per-rank lengths.
  static QString formatForm(const plan::Form& form);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    int stage = -1;
    ir::NodeId node = ir::kNone;
    QString op, scope, what, forms, method, segment;
  };
  QVariant display(const Row& row, const plan::PlanStep& s, int column) const;
  QVariant raw(const Row& row, const plan::PlanStep& s, int index, int column) const;

  std::shared_ptr<const PlanDocument> m_plan;
  std::vector<Row> m_rows;  // one per step, derived once in setPlan
};

// The text of `hap plan --explain` for `plan` (plan::formatExplain over its imported graph), shown
// beside the table; "Cannot explain this plan: WHY" when the plan does not fit its graph.
QString explainText(const PlanDocument& plan);

}  // namespace hap::studio
