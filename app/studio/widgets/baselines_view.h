// The Baselines view (issue 18, item 6): the plan against DP-EV, DP-CP, FSDP and Megatron as
// `hap compare` prices them, under the same cost model.
//
// The BaselinesModel table (time, memory, fits, speedup, how each was priced or why it does not
// apply) above a bar chart of the iteration time per strategy: the plan's bar highlighted,
// baselines that do not fit in memory in red, the ones that do not apply left out of the chart
// (the table lists them with the reason). "Open as Plan", or a double-click on an applicable
// baseline's row, emits openBaselineRequested with its `hap plan --baseline` name.
#pragma once

#include <QWidget>

#include <memory>
#include <vector>

#include "app/studio/core/models/baselines_model.h"
#include "app/studio/core/documents/plan_document.h"

class QChart;
class QChartView;
class QHorizontalStackedBarSeries;
class QLabel;
class QPushButton;
class QSplitter;
class QTableView;

namespace hap::studio {

class BaselinesView : public QWidget {
  Q_OBJECT

 public:
  explicit BaselinesView(QWidget* parent = nullptr);

  // Shows `plan` (nullptr: the same as clear()).
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  void clear();
  const PlanDocument* plan() const { return m_plan.get(); }

  // For tests and the main window.
  BaselinesModel* model() const { return m_model; }
  QTableView* table() const { return m_table; }
  QPushButton* openButton() const { return m_open; }
  QChartView* chartView() const { return m_chartView; }
  QChart* chart() const;
  QLabel* headline() const { return m_headline; }
  // The chart's series (nullptr without a plan): one bar per applicable row, in table order from
  // the top (category i, 0 at the bottom, is model row chartRows()[i]); three sets ("HAP" — the plan's own
  // strategy —, "fits", "does not fit"), each bar non-zero in exactly one of them; milliseconds.
  QHorizontalStackedBarSeries* series() const { return m_series; }
  const std::vector<int>& chartRows() const { return m_chartRows; }
  // The baseline row that is current and can be opened as a plan, or -1.
  int openableRow() const;

 Q_SIGNALS:
  // The user asked to plan baseline `name` ("dp-ev", "dp-cp", "fsdp", "megatron") on its own,
  // as `hap plan --baseline NAME` would.
  void openBaselineRequested(const QString& name);

 private:
  void rebuildChart();
  void updateButton();
  void openRow(int row);

  std::shared_ptr<const PlanDocument> m_plan;
  BaselinesModel* m_model = nullptr;
  QLabel* m_headline = nullptr;
  QTableView* m_table = nullptr;
  QPushButton* m_open = nullptr;
  QChartView* m_chartView = nullptr;
  QSplitter* m_split = nullptr;
  QHorizontalStackedBarSeries* m_series = nullptr;
  std::vector<int> m_chartRows;
};

}  // namespace hap::studio
