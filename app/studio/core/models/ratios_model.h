// The per-segment sharding ratios of a plan (issue 18, item 5): how much of each segment's work
// every device does (the LP's result under ratio policy "lp").
//
// One row per Plan::segments entry, in plan order. Column 0 is the segment's name; then one column
// per program rank (Plan::devices, header "rank J TYPE"), or, with setGrouped(true), one column per
// device group ("8× V100"): the devices of a group share their ratios in every segment
// (PlanDevice::group), so a group's column holds the group's total share, and the row still sums to
// 100 %. A replicated (Megatron) plan's columns are one machine's program ranks: the ratios are
// that program's.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <memory>
#include <vector>

#include "app/studio/core/documents/plan_document.h"

namespace hap::studio {

// Devices that take the same share of every segment: one PlanDevice::group of one type (a group
// whose devices' ratios differ, as in a hand-edited plan, is split into single devices).
struct DeviceGroup {
  std::string type;
  std::vector<int> ranks;  // program ranks, ascending
  int count() const { return static_cast<int>(ranks.size()); }
  // "8× V100" for several devices, "rank 3 V100" for one.
  QString label() const;
  // "0–7", "0–3, 8–11", "5": the ranks as compact ranges.
  QString rankRanges() const;
};

// The groups of `plan`'s program ranks, ordered by their first rank.
std::vector<DeviceGroup> deviceGroups(const plan::Plan& plan);

class RatiosModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Role {
    ShareRole = Qt::UserRole,  // double: the column's share of the row's segment, 0..1 (the
                               // group's total when grouped; the segment's name column: none)
    DeviceShareRole,           // double: the share of one device of the column (grouped or not)
    SegmentRole,               // int: the row's index into Plan::segments
  };

  explicit RatiosModel(QObject* parent = nullptr);

  // nullptr empties the table.
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  const PlanDocument* plan() const { return m_plan.get(); }
  // One column per device group instead of one per device.
  void setGrouped(bool grouped);
  bool grouped() const { return m_grouped; }
  // The device columns' groups, in column order (one single-device group per rank when not
  // grouped); column c >= 1 is columnGroups()[c - 1].
  const std::vector<DeviceGroup>& columnGroups() const { return m_columns; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // A share as the table shows it: "37.5%".
  static QString formatShare(double share);

 private:
  void rebuildColumns();
  double deviceShare(int segment, int rank) const;

  std::shared_ptr<const PlanDocument> m_plan;
  bool m_grouped = false;
  std::vector<DeviceGroup> m_columns;
};

}  // namespace hap::studio
