// The Ratios view (issue 18, item 5): how a plan divides each segment's work among the devices
// and what that costs each device in memory.
//
// Two pages:
//   Shares  each segment as a horizontal stacked bar of the devices' shares (the LP's result),
//           one set per device, or per device group when there are many devices ("8× V100");
//           the RatiosModel table below with the numbers; beside the bars the Q/B alternation
//           history (iteration time after each step, steps whose ratios do not fit in red) and
//           Plan::balanceNote.
//   Memory  per device (or per group of identical devices) its predicted memory as stacked bars
//           by kind against its capacity (a dashed line across the bar; the axis reaches the
//           capacities on demand, "Scale to capacity"), devices that do not fit in red; the
//           MemoryModel table below.
// Clicking a segment's bar or its table row emits segmentActivated(segment). The headline above
// the pages and the solver counts under the history are core's (RatiosSummary,
// core/models/ratios_summary.h); the view draws what the models and the summary give it.
#pragma once

#include <QWidget>

#include <memory>
#include <vector>

#include "app/studio/core/models/memory_model.h"
#include "app/studio/core/documents/plan_document.h"
#include "app/studio/core/models/ratios_model.h"

class QChart;
class QChartView;
class QCheckBox;
class QHorizontalStackedBarSeries;
class QLabel;
class QLineSeries;
class QScatterSeries;
class QSplitter;
class QStackedBarSeries;
class QTabWidget;
class QTableView;

namespace hap::studio {

class RatiosView : public QWidget {
  Q_OBJECT

 public:
  explicit RatiosView(QWidget* parent = nullptr);

  // Shows `plan` (nullptr: the same as clear()).
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  void clear();
  const PlanDocument* plan() const { return m_plan.get(); }
  // Selects `segment`'s row without emitting segmentActivated (-1: no selection).
  void selectSegment(int segment);

  // For tests and the main window.
  RatiosModel* ratiosModel() const { return m_ratios; }
  MemoryModel* memoryModel() const { return m_memory; }
  QTabWidget* pages() const { return m_pages; }
  QTableView* ratiosTable() const { return m_ratiosTable; }
  QTableView* memoryTable() const { return m_memoryTable; }
  QChartView* ratiosChartView() const { return m_ratiosView; }
  QChartView* memoryChartView() const { return m_memoryView; }
  QChartView* historyChartView() const { return m_historyView; }
  QChart* ratiosChart() const;
  QChart* memoryChart() const;
  QChart* historyChart() const;
  // The current series (nullptr without a plan). Ratios: one bar per segment from the top in plan
  // order (category i is segment segmentOfBar(i)), one set per RatiosModel column group, values
  // in percent. Memory: one bar per memoryBarRows() entry, one set per breakdown kind (or a
  // single "Total" set when the plan has no breakdown), values in memoryUnitBytes(); capacity:
  // one two-point line per run of neighbouring bars with the same capacity, from the run's first
  // bar - 0.5 to its last + 0.5 at that capacity. History: (step number from 1, milliseconds).
  QHorizontalStackedBarSeries* ratiosSeries() const { return m_ratiosSeries; }
  QStackedBarSeries* memorySeries() const { return m_memorySeries; }
  const std::vector<QLineSeries*>& capacitySeries() const { return m_capacitySeries; }
  QLineSeries* historySeries() const { return m_historySeries; }
  int segmentOfBar(int bar) const;
  const std::vector<std::vector<int>>& memoryBarRows() const { return m_memoryBars; }
  double memoryUnitBytes() const { return m_memoryUnit; }
  QCheckBox* groupSharesBox() const { return m_groupShares; }
  QCheckBox* groupMemoryBox() const { return m_groupMemory; }
  QCheckBox* scaleToCapacityBox() const { return m_scaleToCapacity; }
  QLabel* balanceNoteLabel() const { return m_balanceNote; }
  QLabel* memoryNoteLabel() const { return m_memoryNote; }

 Q_SIGNALS:
  // The user clicked a segment's bar or selected its table row (an index into Plan::segments).
  void segmentActivated(int segment);

 private:
  void rebuildRatiosChart();
  void rebuildMemoryChart();
  void rebuildHistoryChart();
  void onBarClicked(int bar);
  void fitTables();

  std::shared_ptr<const PlanDocument> m_plan;
  RatiosModel* m_ratios = nullptr;
  MemoryModel* m_memory = nullptr;
  QTabWidget* m_pages = nullptr;
  QLabel* m_headline = nullptr;
  QChartView* m_ratiosView = nullptr;
  QChartView* m_memoryView = nullptr;
  QChartView* m_historyView = nullptr;
  QTableView* m_ratiosTable = nullptr;
  QTableView* m_memoryTable = nullptr;
  QSplitter* m_sharesSplit = nullptr;
  QSplitter* m_memorySplit = nullptr;
  QCheckBox* m_groupShares = nullptr;
  QCheckBox* m_groupMemory = nullptr;
  QCheckBox* m_scaleToCapacity = nullptr;
  QLabel* m_historyText = nullptr;
  QLabel* m_balanceNote = nullptr;
  QLabel* m_memoryNote = nullptr;
  QHorizontalStackedBarSeries* m_ratiosSeries = nullptr;
  QStackedBarSeries* m_memorySeries = nullptr;
  std::vector<QLineSeries*> m_capacitySeries;
  QLineSeries* m_historySeries = nullptr;
  QScatterSeries* m_historyMisfits = nullptr;
  std::vector<std::vector<int>> m_memoryBars;
  double m_memoryUnit = 1;
  bool m_syncing = false;
};

}  // namespace hap::studio
