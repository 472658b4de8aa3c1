// What the live search view shows, accumulated on the GUI thread from SearchEventThrottle
// snapshots: the progress series for the charts (bounded), the planning log (every search, LP step
// and baseline with its cost), the best open states of the newest report, and after planning the
// outcome (states expanded, time, proven optimal or why not).
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

#include "app/studio/core/jobs/search_event_throttle.h"

namespace hap::studio {

// The best open states of the newest progress report that carried them: g, h, f, depth, the last
// choices.
class OpenStatesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { G, H, F, Depth, Choices, ColumnCount };
  // Qt::UserRole on any column: the raw number (columns G, H, F, Depth).
  explicit OpenStatesModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  void setStates(std::vector<synth::OpenState> states, int nodes, std::shared_ptr<const SearchGraphNames> names);
  void clear();
  const synth::OpenState& state(int row) const { return m_states.at(static_cast<size_t>(row)); }
  // The partial program of a row as a variant name per imported node ("" where undecided).
  std::vector<std::string> partialVariants(int row, size_t importedNodes) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<synth::OpenState> m_states;
  int m_nodes = 0;
  std::shared_ptr<const SearchGraphNames> m_names;
};

// The planning log: one row per planning step (search, LP, baseline), with its time and cost.
class PlanningLogModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Time, Step, Cost, Fits, Outcome, ColumnCount };
  struct Row {
    double started = 0, finished = -1;  // seconds since planning started (-1: running)
    std::string name;
    double cost = -1;                   // the plan's iteration time after the step (-1: none)
    bool fits = true, adopted = false;
    std::string note;                   // beam fallback, a search's error
  };
  explicit PlanningLogModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  void add(const std::vector<PlanningEvent>& events);
  void clear();
  const std::vector<Row>& rows() const { return m_rows; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<Row> m_rows;
};

// The series and the outcome.
class SearchProgressModel : public QObject {
  Q_OBJECT
 public:
  explicit SearchProgressModel(QObject* parent = nullptr);

  // Starts a new planning run (clears everything).
  void reset();
  // Adds a snapshot; emits changed() once.
  void add(const SearchSnapshot& snapshot);
  // The series, bounded by maxPoints (halved when full: every other point kept).
  const std::vector<SearchSample>& samples() const { return m_samples; }
  void setMaxPoints(size_t n) { m_maxPoints = n; }
  size_t maxPoints() const { return m_maxPoints; }
  // Points dropped by halving since reset() (the charts redraw from samples() then).
  int generation() const { return m_generation; }

  OpenStatesModel* openStates() { return &m_open; }
  PlanningLogModel* log() { return &m_log; }
  const std::optional<synth::SearchProgress>& latest() const { return m_latest; }
  std::shared_ptr<const SearchGraphNames> names() const { return m_names; }

  // Totals over every search of the run.
  int searches() const { return m_searches; }
  int64_t expanded() const { return m_expanded; }
  bool beamUsed() const { return m_beam; }
  QString beamNote() const { return m_beamNote; }
  // One line for the status of the view ("Searching (search 2, lp ratios): 1.2M states …").
  QString statusText() const;

 Q_SIGNALS:
  void changed();

 private:
  std::vector<SearchSample> m_samples;
  size_t m_maxPoints = 4000;
  int m_generation = 0;
  OpenStatesModel m_open;
  PlanningLogModel m_log;
  std::optional<synth::SearchProgress> m_latest;
  std::shared_ptr<const SearchGraphNames> m_names;
  int m_searches = 0;
  int64_t m_expanded = 0;  // finished searches' states, plus the running one's latest
  int64_t m_finishedExpanded = 0;
  bool m_beam = false;
  QString m_beamNote;
  std::string m_step;      // the planning step running now
  bool m_running = false;
};

}  // namespace hap::studio
