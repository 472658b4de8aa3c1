// HAP's plan against the baselines priced under the same cost model (issue 18, item 6): the
// table `hap compare` prints (app/cli/compare_command.cpp), from the plan's own figures.
//
// Row 0 is the plan itself (Plan::estimate; named "HAP", or the strategy's name for a baseline
// opened as a plan), then one row per Plan::baselines entry in plan order. Speedup is the row's
// predicted iteration time over the plan's (above 1: the plan is faster), as `hap compare`
// computes it; a baseline that does not apply has no time, memory, fits or speedup ("—"), and
// its note says why.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <memory>

#include "app/studio/core/documents/plan_document.h"

namespace hap::studio {

class BaselinesModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { NameColumn, TimeColumn, MemoryColumn, FitsColumn, SpeedupColumn, NoteColumn, ColumnCount };
  enum Role {
    ValueRole = Qt::UserRole,  // raw figure: seconds (double), max bytes per device (double), fits
                               // (bool), speedup (double); invalid where not applicable
    BaselineNameRole,          // QString: the `--baseline` name ("dp-ev", ...); "" on the plan's row
    ApplicableRole,            // bool
    IsPlanRole,                // bool: true on row 0 only
  };

  explicit BaselinesModel(QObject* parent = nullptr);

  // nullptr empties the table.
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  const PlanDocument* plan() const { return m_plan.get(); }

  // The Estimate of `row` (row 0: the plan's), or nullptr for a row that does not exist.
  const plan::Estimate* estimate(int row) const;
  bool applicable(int row) const;
  // The `--baseline` name of `row` ("" for the plan's row).
  QString baselineName(int row) const;
  // Whether `row` can be planned on its own with `hap plan --baseline NAME`: an applicable
  // baseline whose name plan::baselineNames() accepts.
  bool openable(int row) const;

  // "DP-EV", "DP-CP", "FSDP", "Megatron", "HAP"; other names upper-cased.
  static QString displayName(const std::string& name);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QString note(int row) const;

  std::shared_ptr<const PlanDocument> m_plan;
};

}  // namespace hap::studio
