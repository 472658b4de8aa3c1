// The rounds of Run ▸ Tune… (issue 30, item 3) as a table: one row per plan of a round, in the
// order the loop reports them (TuneJob::runFinished), as `hap tune` prints its table: the round,
// the plan (its strategy), the profile version it was priced under, the predicted step, the
// measured step (mean ± standard deviation over the measured steps, the slowest rank's), the
// prediction's error, and a note: "= round 1 dp-cp" for a program an earlier round ran (its
// measurement reused), "chosen" for the run the loop returned once it has finished.
//
// Contract:
// - addRun appends one row (rowsInserted); setResult marks the chosen run (dataChanged on the
//   note column: every row whose measurement is the chosen run's, the reused ones included);
//   clear() empties it (a reset).
// - Numbers are formatted here as the CLI prints them: times in ms with two decimals, the error
//   signed with one decimal ("+12.3%"). ValueRole holds the raw figure (seconds; the error as a
//   fraction; the round as an int); run(row) is the row's tune::TuneRun.
// - The chosen rows are bold (Qt::FontRole); the note's tooltip says what it means.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <vector>

#include "app/cli/tune_loop.h"

namespace hap::studio {

class TuneRoundsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    RoundColumn,
    PlanColumn,
    ProfileColumn,
    PredictedColumn,
    MeasuredColumn,
    ErrorColumn,
    NoteColumn,
    ColumnCount
  };
  enum Role { ValueRole = Qt::UserRole };

  explicit TuneRoundsModel(QObject* parent = nullptr);

  void clear();
  void addRun(const tune::TuneRun& run);
  // The loop's result: marks its chosen run. A result whose runs differ from the rows' (another
  // loop's) is taken as it is: the rows become its rounds' runs.
  void setResult(const tune::TuneResult& result);

  const std::vector<tune::TuneRun>& runs() const { return m_runs; }
  const tune::TuneRun& run(int row) const { return m_runs.at(static_cast<size_t>(row)); }
  bool hasResult() const { return m_hasResult; }
  // Whether row `row`'s measurement is the chosen run's (false before setResult).
  bool isChosen(int row) const;
  // The row of the chosen run itself (not a reuse of it); -1 before setResult.
  int chosenRow() const;
  // The rounds reported so far (the highest round of any row).
  int rounds() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

  // "12.34 ms" (two decimals, as `hap tune` prints).
  static QString milliseconds(double seconds);

 private:
  std::vector<tune::TuneRun> m_runs;
  int64_t m_chosenRun = 0;
  bool m_hasResult = false;
};

}  // namespace hap::studio
