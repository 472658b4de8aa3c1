// What Run ▸ Calibrate… shows (issue 20, item 4), as plain models over db/store_calibration.h:
// the store's runs to choose from, the calibration's result per run and per device type, its
// figures as text, and the one line that says what re-planning with the calibrated profile changed.
//
// Numbers are formatted here, once, so that the dialog, its tests and the CLI read alike:
// percentages with one decimal ("89.8%", as `hap calibrate`), Pearson with three, times as the
// rest of the app writes them (core/units.h). The raw figure is in ValueRole.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <memory>
#include <vector>

#include "app/studio/core/models/plan_comparison.h"
#include "db/store_calibration.h"

namespace hap::studio {

// "89.8%" for 0.898 (as `hap calibrate` prints a MAPE or an error); "—" when not finite.
QString calibrationPercent(double fraction);
// "+12.3%" / "−4.0%": a signed relative error.
QString calibrationSignedPercent(double fraction);
// "0.912"; "—" when not finite.
QString calibrationPearson(double r);
// "before → after", each formatted by `format`.
QString calibrationChange(double before, double after, QString (*format)(double));
// "3/4 → 4/4" for the ranking pairs; "—" without pairs.
QString calibrationRanking(const cost::Accuracy& before, const cost::Accuracy& after);

// The store's recorded runs (db::calibrationCandidates), one row each, by id, with a check box in
// the first column: the runs to calibrate on. Usable runs start checked; the others cannot be
// checked and say why in their tooltip and Status column.
class CalibrationRunsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    RunColumn, StatusColumn, ModelColumn, StrategyColumn, ProfileColumn, StepsColumn, MeasuredColumn, LabelColumn, ColumnCount
  };
  enum Role { ValueRole = Qt::UserRole, RunIdRole };
  explicit CalibrationRunsModel(QObject* parent = nullptr);

  void setCandidates(std::vector<db::CalibrationCandidate> runs);
  const std::vector<db::CalibrationCandidate>& candidates() const { return m_runs; }
  // The checked runs, by id.
  std::vector<int64_t> checkedRuns() const;
  bool isChecked(int row) const;
  void setChecked(int row, bool checked);
  // Checks the usable runs planned under a version of profile `name` ("" = planned without a
  // profile) and unchecks the rest; when none was, checks every usable run. Returns how many it checked.
  int checkBase(const QString& name);
  int usableCount() const;
  int rowOf(int64_t runId) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<db::CalibrationCandidate> m_runs;
  std::vector<bool> m_checked;
};

// A calibration's runs, as `hap calibrate` lists them: measured step time, predicted before and
// after with their errors, and the peak memory error before → after.
class CalibrationResultModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    RunColumn, PlanColumn, WhatColumn, SetColumn, MeasuredColumn, BeforeColumn, BeforeErrorColumn, AfterColumn,
    AfterErrorColumn, MemoryErrorColumn, ColumnCount
  };
  enum Role { ValueRole = Qt::UserRole };
  explicit CalibrationResultModel(QObject* parent = nullptr);

  void setResult(std::shared_ptr<const db::CalibrationResult> result);  // null: empty
  const std::shared_ptr<const db::CalibrationResult>& result() const { return m_result; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const db::CalibrationResult> m_result;
};

// The fitted terms per device type, relative to the base profile, as `hap calibrate` prints them
// (the saved version holds them composed with the base's: savedTermsText).
class CalibrationTermsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { TypeColumn, ComputeColumn, CollectivesColumn, BaseMemoryColumn, MemoryScaleColumn, ColumnCount };
  enum Role { ValueRole = Qt::UserRole };
  explicit CalibrationTermsModel(QObject* parent = nullptr);

  void setResult(std::shared_ptr<const db::CalibrationResult> result);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const db::CalibrationResult> m_result;
  std::vector<std::string> m_types;
};

// What the saved profile holds for each fitted device type, the fit composed with the base:
// "cpu-core: compute × 1.722, collectives × 1.693, memory 300 MiB + 1.000 × model", one line each.
QString savedTermsText(const db::CalibrationResult& result);

// One line saying what re-planning under the calibrated profile changed, from the comparison of
// the plan before (A) and the plan after (B): the profiles, the predicted iteration time before →
// after with the ratio, the most memory a device uses when it changed, the strategy, and the program
// and ratios as the compare view counts them.
// "Re-planned under bench@2 (was bench@1): predicted 1.342 ms → 2.281 ms per iteration (1.70× slower);
//  peak memory 10.6 KiB → 300 MiB; strategy hap; 2 nodes changed variant, 1 segment's ratios moved
//  (largest: seg rank 2 +12.0 points)."
QString calibratedPlanChange(const PlanDocument& before, const PlanDocument& after, const PlanComparison& c);

}  // namespace hap::studio
