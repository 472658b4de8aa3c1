// Each device's predicted memory against its capacity (issue 18, item 5).
//
// One row per rank the plan runs on (plan::worldDevices: a replicated Megatron plan lists every
// machine's copy of its program ranks), from PlanDevice::memory (the breakdown by kind),
// memoryBytes and capacityBytes. A device fits when memoryBytes <= capacityBytes, as the engine's
// Estimate::fits counts it; a device that does not is red (foreground and background) and its
// Fits cell says "does not fit".
//
// Plans written before the breakdown was recorded have an all-zero PlanDevice::memory: then the
// breakdown columns are empty ("—") and breakdownRecorded() is false; total and capacity remain.
#pragma once

#include <QAbstractTableModel>
#include <QColor>
#include <QString>

#include <memory>
#include <vector>

#include "app/studio/core/documents/plan_document.h"

namespace hap::studio {

class MemoryModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    RankColumn,
    TypeColumn,
    ParametersColumn,
    GradientsColumn,
    OptimizerColumn,
    ActivationsColumn,
    OtherColumn,
    TotalColumn,
    CapacityColumn,
    FitsColumn,
    ColumnCount
  };
  enum Role {
    ValueRole = Qt::UserRole,  // the raw figure: bytes (double) in byte columns, the rank (int),
                               // the type (QString), fits (bool)
    FitsRole,                  // bool: the row's device fits in its memory
  };

  explicit MemoryModel(QObject* parent = nullptr);

  // nullptr empties the table.
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  const PlanDocument* plan() const { return m_plan.get(); }
  // The rows' devices (plan::worldDevices of the plan).
  const std::vector<plan::PlanDevice>& devices() const { return m_devices; }
  // False when every device's breakdown is zero (a plan from before it was recorded).
  bool breakdownRecorded() const { return m_breakdown; }
  // How many devices do not fit.
  int overCapacity() const;
  // The rows as groups of devices with the same type, capacity and predicted memory (all kinds),
  // ordered by their first row: what a chart of many devices draws as one bar per group.
  std::vector<std::vector<int>> identicalRows() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  static bool fits(const plan::PlanDevice& d) { return d.memoryBytes <= d.capacityBytes; }
  // The bytes of breakdown column `column` (ParametersColumn..OtherColumn) of `d`.
  static double breakdownBytes(const plan::PlanDevice& d, int column);
  // Bytes as the engine prints them (ir::formatBytes: "1.50 GiB").
  static QString formatBytes(double bytes);
  // The colours every view uses for a device over capacity.
  static QColor overCapacityForeground() { return QColor(0xb0, 0x1c, 0x1c); }
  static QColor overCapacityBackground() { return QColor(0xfd, 0xe2, 0xe1); }
  // The label of `column`'s kind ("Parameters", "Optimizer state", ...).
  static QString columnName(int column);

 private:
  std::shared_ptr<const PlanDocument> m_plan;
  std::vector<plan::PlanDevice> m_devices;
  bool m_breakdown = false;
};

}  // namespace hap::studio
