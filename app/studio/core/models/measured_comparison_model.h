// Predicted against measured (issue 20 item 3, and item 5's "open a finished run's metrics later
// from the store"): a recorded run of the profile store beside the prediction of the plan it ran.
//
// Contract:
// - loadMeasuredRun reads a run, its stored plan (the plan file's JSON, parsed), its steps and its
//   per-stage split from a store, read-only, and never throws: what makes a comparison impossible
//   (no store, no such run, a run without a stored plan, a plan that does not parse or simulate)
//   is MeasuredRun::error, a one-line message naming the store or run and what to do. Stage
//   records that do not fit the plan leave the table usable and say why in measured.error.
// - The prediction compared with is always the run's own plan (plan::simulate of it), whatever
//   plan the app shows; isPlanOf says whether the app's plan is that plan.
// - MeasuredComparisonModel: one row per rank of the run's plan (plan::worldDevices), then a
//   "Slowest" row (the most of any rank for each figure). Per step: step time, computation and
//   communication, predicted and measured, and measured / predicted. Predicted per rank from the
//   simulated timeline: the iteration's total, the rank's computation summed over stages, and the
//   stages' communication (DeviceTimeline::computeSeconds, communicationSeconds). Measured per rank:
//   db::rankMeans over the run's steps that are not warm-up. Ratios outside [kFastRatio,
//   kSlowRatio] are coloured (red: slower than predicted, blue: faster); "—" where a figure is
//   missing (a rank without steps, nothing predicted). Every cell has a tooltip saying what it is.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "app/studio/core/documents/plan_document.h"
#include "engine/plan/measured_timeline.h"
#include "db/run_figures.h"
#include "db/store.h"
#include "engine/plan/plan.h"
#include "engine/plan/simulator.h"

namespace hap::studio {

// A recorded run and the prediction of the plan it ran.
struct MeasuredRun {
  QString storePath;
  int64_t runId = 0;
  std::optional<db::RunRecord> run;
  std::optional<db::PlanRecord> planRecord;
  std::shared_ptr<const plan::Plan> plan;  // parsed from planRecord->json
  plan::Timeline predicted;                // plan::simulate(*plan)
  std::vector<db::StepRecord> steps;
  std::vector<db::StageRecord> stages;
  plan::MeasuredTimeline measured;         // measuredTimeline(*plan, predicted, stages)
  QString error;                           // why there is nothing to compare ("" when there is)
  bool ok() const { return error.isEmpty() && plan != nullptr; }
  // Steps recorded (distinct step numbers) and how many of them were warm-up.
  int64_t stepCount() const;
  int64_t warmupCount() const;
};

// Reads run `runId` of the store at `storePath` (contract above).
MeasuredRun loadMeasuredRun(const QString& storePath, int64_t runId);

// Which stored plans a plan the app shows is: the SHA-256 of its file (when it has one) and of
// its JSON as the app writes it (plan::writePlan), as PlanRecord::sha256 hashes a plan file.
struct PlanIdentity {
  std::string fileSha256, jsonSha256;  // empty when unknown
  bool matches(const std::string& planSha256) const;
};
PlanIdentity planIdentity(const PlanDocument& doc);  // never throws
// Whether `doc` is the plan `record` stores.
bool isPlanOf(const PlanDocument& doc, const db::PlanRecord& record);

// The run's measured timeline with `shown`'s step labels (plan::measuredTimeline over the run's
// stage records), for the Stages view to draw beside the prediction. `shown` must be the run's
// own plan (planIdentity matches its record); nullopt when the run has nothing to compare or its
// stage records make no timeline.
std::optional<plan::Timeline> measuredTrace(const PlanDocument& shown, const MeasuredRun& run);

// A run as the Measured view's chooser lists it.
struct RunChoice {
  int64_t id = 0;
  QString text;  // "Run 3 · succeeded · 2026-11-26 10:24:47 · label"
  std::string planSha256, modelSha256;  // empty without a stored plan
};
// The store's runs, newest first; with `modelSha256` only the runs of plans of that model.
// A store that cannot be read gives none and sets `error` (when given).
std::vector<RunChoice> listRuns(const QString& storePath, const std::string& modelSha256 = {}, QString* error = nullptr);

class MeasuredComparisonModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    DeviceColumn,
    PredictedStepColumn, MeasuredStepColumn, StepRatioColumn,
    PredictedComputeColumn, MeasuredComputeColumn, ComputeRatioColumn,
    PredictedCommunicationColumn, MeasuredCommunicationColumn, CommunicationRatioColumn,
    StepsColumn,
    ColumnCount
  };
  enum Quantity { StepTime, Compute, Communication, QuantityCount };
  enum Role {
    ValueRole = Qt::UserRole,  // the figure in seconds (ratios: the ratio); null when missing
    RankRole,                  // the row's rank; -1 on the Slowest row
  };
  // Ratios beyond these stand out.
  static constexpr double kSlowRatio = 1.25, kFastRatio = 0.8;

  struct Figure {
    double predicted = std::numeric_limits<double>::quiet_NaN();
    double measured = std::numeric_limits<double>::quiet_NaN();
    int predictedRank = -1, measuredRank = -1;  // the Slowest row: whose figure it is
    double ratio() const;  // measured / predicted; NaN when either is missing or nothing was predicted
  };
  struct Row {
    int rank = -1;    // -1: the Slowest row
    QString device;   // "rank 2 · cpu-core · local"
    std::array<Figure, QuantityCount> figures;
    int steps = 0;    // the steps the measured means are over
  };

  explicit MeasuredComparisonModel(QObject* parent = nullptr);

  // Compares `steps` (a run of `plan`) with `predicted` (plan::simulate(plan)).
  void setRun(const plan::Plan& plan, const plan::Timeline& predicted, const std::vector<db::StepRecord>& steps);
  void setRun(const MeasuredRun& run);  // empties the model when !run.ok()
  void clear();

  const Row& row(int r) const { return m_rows.at(static_cast<size_t>(r)); }
  int slowestRow() const { return m_rows.empty() ? -1 : static_cast<int>(m_rows.size()) - 1; }
  static Quantity quantityOf(int column);  // the quantity a figure column shows
  // The column of a quantity's predicted figure; +1 measured, +2 ratio.
  static int firstColumn(Quantity q) { return PredictedStepColumn + 3 * static_cast<int>(q); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<Row> m_rows;
};

}  // namespace hap::studio
