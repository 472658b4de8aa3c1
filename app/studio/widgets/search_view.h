// The live search view: the planner's progress charted over time (states expanded and the open
// set; the best f-bound and the best complete cost), the planning log (every search, LP step and
// baseline with the plan's cost after it), and the best open states of the newest report. Clicking
// an open state colours the graph by its partial program (partialProgramSelected). After planning,
// a line says what the search did: states, time, proven optimal or why not.
#pragma once

#include <QWidget>

#include <memory>
#include <string>
#include <vector>

#include "app/studio/core/documents/plan_document.h"

class QChart;
class QChartView;
class QLabel;
class QLineSeries;
class QLogValueAxis;
class QTableView;
class QValueAxis;

namespace hap::studio {

class SearchProgressModel;

class SearchView : public QWidget {
  Q_OBJECT
 public:
  explicit SearchView(SearchProgressModel* model, QWidget* parent = nullptr);

  // The outcome of the run that just ended (null: failed or cancelled; `message` says which).
  void setOutcome(std::shared_ptr<const PlanDocument> plan, const QString& message = {});
  // The number of imported nodes partial programs are mapped to (the open model's).
  void setImportedNodes(size_t nodes) { m_importedNodes = nodes; }

  // For tests and screenshots.
  QTableView* openStatesTable() const { return m_open; }
  QTableView* logTable() const { return m_log; }
  QLineSeries* expandedSeries() const { return m_expanded; }
  QLineSeries* frontierSeries() const { return m_frontier; }
  QLineSeries* boundSeries() const { return m_bound; }
  QLineSeries* bestSeries() const { return m_best; }
  QString statusText() const;
  QString outcomeText() const;

 Q_SIGNALS:
  // The partial program of the clicked open state, as a variant name per imported node ("" where
  // undecided); empty when the selection is cleared.
  void partialProgramSelected(std::vector<std::string> variantByNode);

 private:
  void refresh();
  void onOpenStateClicked();

  SearchProgressModel* m_model;
  QLabel* m_status = nullptr;
  QLabel* m_outcome = nullptr;
  QChartView* m_statesChart = nullptr;
  QChartView* m_costChart = nullptr;
  QLineSeries *m_expanded = nullptr, *m_frontier = nullptr, *m_bound = nullptr, *m_best = nullptr;
  QValueAxis *m_statesTime = nullptr, *m_statesCount = nullptr, *m_costTime = nullptr, *m_costMs = nullptr;
  QTableView* m_open = nullptr;
  QTableView* m_log = nullptr;
  size_t m_importedNodes = 0;
  size_t m_drawn = 0;       // samples already appended to the series
  int m_generation = -1;    // the model's series generation they came from
  double m_maxSeconds = 0, m_maxCount = 0, m_maxMs = 0;  // over the samples drawn: the axes' ranges
};

}  // namespace hap::studio
