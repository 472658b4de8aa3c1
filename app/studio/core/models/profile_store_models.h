// The profile store in the app (issue 20, item 4, browsing): what `hap profile`, `hap launch --db`
// and `hap calibrate` recorded (db/store.h), as plain item models the Profiles view shows.
//
// Contract:
// - StoreReader opens the store read-only and never throws: a missing file, a file that is not a
//   HAP store, or any StoreError becomes error(), a one-line message naming the file and what to
//   do. Every model filled from a reader that failed is empty and repeats its error().
// - The models hold copies of what they show (the store may change under them; Refresh reads it
//   again). Text is formatted as the rest of the app writes it (core/units.h, MemoryModel), the raw
//   figure is in ValueRole; "—" stands for a figure that was not measured.
#pragma once

#include <QAbstractItemModel>
#include <QAbstractTableModel>
#include <QString>

#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "db/run_figures.h"
#include "db/store.h"
#include "engine/cost/profile.h"

namespace hap::studio {

// One read-only connection to a profile store, or why there is none.
class StoreReader {
 public:
  // Opens `path` read-only. A missing file says "No profile store at PATH: run `hap profile` or
  // `hap launch --db PATH`"; other failures carry the store's own message.
  explicit StoreReader(QString path);
  ~StoreReader();

  // Where the store lives unless the user names another (db::defaultPath: $HAP_DB, else the
  // user's data folder).
  static QString defaultPath();

  const QString& path() const { return m_path; }
  const QString& error() const { return m_error; }
  bool ok() const { return m_store != nullptr; }
  bool missing() const { return m_missing; }  // no file at path() (an empty store, not a broken one)
  const db::Store* store() const { return m_store.get(); }

  // Reads through the store; a failure sets error() (and the store is dropped) and returns empty.
  std::vector<db::ProfileInfo> profiles();
  std::optional<cost::Profile> loadProfile(const QString& name, int version);
  std::vector<db::RunRecord> runs();
  std::optional<db::PlanRecord> plan(int64_t id);
  std::optional<db::RunRecord> run(int64_t id);
  std::vector<db::StepRecord> steps(int64_t run);

 private:
  template <class F>
  auto guarded(F f) -> decltype(f());

  QString m_path, m_error;
  bool m_missing = false;
  std::unique_ptr<db::Store> m_store;
};

// Every stored profile version, newest first.
class ProfilesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { NameColumn, VersionColumn, HostColumn, CreatedColumn, DevicesColumn, CollectivesColumn, NoteColumn, ColumnCount };
  enum Role { ValueRole = Qt::UserRole };
  explicit ProfilesModel(QObject* parent = nullptr);

  void load(StoreReader& reader);
  void clear();
  const QString& error() const { return m_error; }
  const db::ProfileInfo* info(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<db::ProfileInfo> m_rows;
  QString m_error;
};

// One profile's device types (top-level rows) and, under each, one row per measured op family ×
// dtype. Device rows fill the device columns, op rows the op columns; the name column both.
class DeviceProfilesModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Column {
    NameColumn,           // device type; "matmul · float32" on an op row
    SamplesColumn,        // op rows: sizes measured
    SizesColumn,          // op rows: smallest – largest work (FLOPs or bytes)
    RateColumn,           // op rows: work per second at the largest size
    ThreadsColumn,        // device rows from here on
    BandwidthColumn,      // measured memory bandwidth
    ComputeScaleColumn,
    CollectiveSlowdownColumn,
    RuntimeMemoryColumn,  // base + scale × the model's bytes
    DescriptionColumn,    // where it was measured
    ColumnCount
  };
  enum Role { ValueRole = Qt::UserRole };
  explicit DeviceProfilesModel(QObject* parent = nullptr);

  // nullopt empties the model; `error` is kept for the view.
  void setProfile(std::optional<cost::Profile> profile, QString error = {});
  const std::optional<cost::Profile>& profile() const { return m_profile; }
  const QString& error() const { return m_error; }

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant deviceData(const cost::DeviceProfile& d, int column, int role) const;
  QVariant opData(const cost::OpThroughput& op, int column, int role) const;

  std::optional<cost::Profile> m_profile;
  QString m_error;
};

// One profile's collective fits: latency + size / bandwidth per collective, algorithm and link class.
class CollectiveFitsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { CollectiveColumn, AlgorithmColumn, LinkColumn, LatencyColumn, BandwidthColumn, RanksColumn, SamplesColumn, ResidualColumn, ColumnCount };
  enum Role { ValueRole = Qt::UserRole };
  explicit CollectiveFitsModel(QObject* parent = nullptr);

  void setProfile(const std::optional<cost::Profile>& profile);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<cost::CollectiveFit> m_rows;
};

// Every recorded run, newest first (by start, then id).
class RunsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    IdColumn, StatusColumn, StartedColumn, RanksColumn, StrategyColumn, ModelColumn, StepsColumn, MeanStepColumn,
    PredictedColumn, FinalLossColumn, LabelColumn, ColumnCount
  };
  enum Role { ValueRole = Qt::UserRole, RunIdRole };
  explicit RunsModel(QObject* parent = nullptr);

  void load(StoreReader& reader);
  void clear();
  const QString& error() const { return m_error; }
  int64_t runId(int row) const;  // 0 for a row that does not exist
  int rowOf(int64_t runId) const;  // -1 when absent

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    db::RunRecord run;
    std::optional<db::PlanRecord> plan;
    db::RunFigures figures;
  };
  std::vector<Row> m_rows;
  QString m_error;
};

// One run's steps: step, warm-up, loss, then for each rank its step time, compute,
// communication and peak memory (RankColumns columns per rank, from FirstRankColumn).
class StepsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { StepColumn, WarmupColumn, LossColumn, FirstRankColumn };
  enum RankField { StepTimeField, ComputeField, CommunicationField, PeakMemoryField, RankColumns };
  enum Role { ValueRole = Qt::UserRole };
  explicit StepsModel(QObject* parent = nullptr);

  // Reads run `runId`'s steps (0: empties the model).
  void load(StoreReader& reader, int64_t runId);
  void clear();
  const QString& error() const { return m_error; }
  int64_t runId() const { return m_runId; }
  int ranks() const { return m_ranks; }
  static int column(int rank, RankField field) { return FirstRankColumn + rank * RankColumns + field; }

  // Per table row: the step, rank 0's loss, and the rank's record (nullptr where it has none).
  int64_t step(int row) const;
  double loss(int row) const;
  bool warmup(int row) const;
  const db::StepRecord* record(int row, int rank) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    int64_t step = 0;
    bool warmup = false;
    double loss = 0;
    std::vector<std::optional<db::StepRecord>> ranks;
  };
  std::vector<Row> m_rows;
  int m_ranks = 0;
  int64_t m_runId = 0;
  QString m_error;
};

// "12.5 GFLOP", "1.5 MFLOP" (SI prefixes); `per second` appends "/s".
QString formatFlops(double flops, bool perSecond = false);
// "2026-11-26T07:01:02Z" → "2026-11-26 07:01:02" (the store's UTC times, as `hap runs` shows them).
QString formatStoreTime(const std::string& iso);

}  // namespace hap::studio
