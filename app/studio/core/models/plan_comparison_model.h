// The differences between two plans as a table (issue 18, item 8): one row per imported node whose
// variant changed (PlanComparison::nodes), then one row per segment whose ratios moved
// (PlanComparison::segments).
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <memory>

#include "app/studio/core/models/plan_comparison.h"

namespace hap::studio {

class ComparisonModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    ChangeColumn,  // "variant" / "ratios"
    ItemColumn,    // node: "#12 linear"; segment: its name
    ScopeColumn,   // node's module scope; "" for a segment
    AColumn,       // node: variant in A; segment: shares in A by device type
    BColumn,       // the same in B
    DeltaColumn,   // node: its steps' time B - A (ms); segment: the largest share shift (points)
    ColumnCount
  };
  enum RowKind { NodeRow, SegmentRow };
  enum Role {
    SortRole = Qt::UserRole,  // raw value: numbers as double (seconds, share), text as QString
    NodeRole,                 // int: the imported node of a node row, ir::kNone on segment rows
    RowKindRole,              // int: RowKind
    SegmentRole,              // QString: a segment row's segment name ("" on node rows)
  };

  explicit ComparisonModel(QObject* parent = nullptr);

  // Compares the two plans (either null: an empty table and a default comparison).
  void setPlans(std::shared_ptr<const PlanDocument> a, std::shared_ptr<const PlanDocument> b);
  const PlanComparison& comparison() const { return m_comparison; }
  const std::shared_ptr<const PlanDocument>& planA() const { return m_a; }
  const std::shared_ptr<const PlanDocument>& planB() const { return m_b; }

  // "A100 27.50%, P100 22.50%": per device type its share (a range when its devices differ).
  static QString formatShares(const plan::Plan& plan, const std::vector<double>& ratios);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  QVariant nodeData(const PlanComparison::NodeChange& c, int column, int role) const;
  QVariant segmentData(const PlanComparison::SegmentChange& c, int column, int role) const;

  std::shared_ptr<const PlanDocument> m_a, m_b;
  PlanComparison m_comparison;
};

}  // namespace hap::studio
