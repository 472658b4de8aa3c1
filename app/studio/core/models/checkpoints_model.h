// The checkpoints of a run for the Run dock (issue 20, item 5): the step-N.pt files a run wrote
// into its --checkpoint-dir (runtime::listCheckpoints, which reads each file's header, never its
// tensors), as a table; and the pure functions the dock's Resume From and "open a finished run
// later" need.
//
// Contract:
// - setFolder() and reload() list the folder at once, on the calling thread (headers only: a few
//   KiB per file). A folder that does not exist yet is an empty list, not an error (no checkpoint
//   written so far); one that cannot be listed is error(), a line naming the folder; a file whose
//   header cannot be read is a row whose Status column says why.
// - update(file) reads that one file's header and adds or replaces its row (a "checkpoint: FILE"
//   line of a run going), so a run writing thousands of checkpoints costs one header per file,
//   not a listing per file.
// - Rows are sorted by step. Text is formatted for people; ValueRole holds the raw figure (the
//   step, bytes, seconds since the epoch) for sorting and tests.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/train/checkpoint_list.h"

namespace hap::studio {

class CheckpointsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { StepColumn, SizeColumn, WrittenColumn, StatusColumn, ColumnCount };
  enum Role { ValueRole = Qt::UserRole, PathRole };
  explicit CheckpointsModel(QObject* parent = nullptr);

  // Lists `dir` ("" clears the list).
  void setFolder(const QString& dir);
  void reload();
  // The checkpoint `file` of this folder was written: its row added or replaced. False (nothing
  // changes) when it is not a step-N.pt directly in folder().
  bool update(const QString& file);
  QString folder() const { return m_folder; }
  QString error() const { return m_error; }

  const runtime::CheckpointInfo* info(int row) const;
  QString path(int row) const;        // "" for a row out of range
  int64_t step(int row) const;        // -1 for a row out of range
  int rowOfStep(int64_t step) const;  // -1 when there is none
  int64_t lastStep() const;           // the largest step listed; -1 when none

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 Q_SIGNALS:
  void listed();  // after every listing, failed or not

 private:
  QString m_folder, m_error;
  std::vector<runtime::CheckpointInfo> m_rows;
};

// "812 B", "3.4 KiB", "12.6 MiB", "1.2 GiB".
QString formatFileSize(int64_t bytes);

// The checkpoint folder of a recorded run, from its settings JSON (db::RunRecord::settingsJson:
// the --checkpoint-dir of its "worker_args"); a relative folder is taken relative to the plan
// file's folder ("plan"). "" when the run wrote no checkpoints (none given) or the JSON cannot be
// read.
QString recordedCheckpointDir(const std::string& settingsJson);

// The form's warm-up and measured steps that make a run resumed from a checkpoint of step
// `checkpointStep` end at `lastStep` (the step the run that wrote it was going to reach), keeping
// `warmup` where it fits; when `lastStep` is not after `checkpointStep` (resuming from the end),
// the run continues for another warmup + steps, unchanged.
struct ResumeSteps {
  int64_t warmup = 0;
  int64_t steps = 0;
};
ResumeSteps resumeSteps(int64_t checkpointStep, int64_t lastStep, int64_t warmup, int64_t steps);

}  // namespace hap::studio
