// The compare view (issue 18, item 8): two plans of the session's history side by side — time,
// memory and fits of each with B's speedup over A, then the differences (ComparisonModel): the
// nodes whose variant changed and the segments whose ratios moved. The changed nodes go to the
// graph through highlightNodes(); a node row's double-click through nodeActivated().
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "app/studio/core/models/plan_comparison_model.h"
#include "app/studio/core/models/plan_history_model.h"

class QComboBox;
class QLabel;
class QPushButton;
class QTableView;

namespace hap::studio {

class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(QWidget* parent = nullptr);

  // The plans to choose from (not owned; nullptr: none). Whenever a plan is added, A and B
  // become the two newest (A the older); with one plan both are that plan.
  void setHistory(PlanHistoryModel* history);
  PlanHistoryModel* history() const { return m_history; }
  // Chooses plans by history row (-1: none) and compares them.
  void setPlans(int rowA, int rowB);
  int rowA() const;
  int rowB() const;

  ComparisonModel* model() const { return m_model; }
  const PlanComparison& comparison() const { return m_model->comparison(); }
  QComboBox* comboA() const { return m_comboA; }
  QComboBox* comboB() const { return m_comboB; }
  QTableView* table() const { return m_table; }
  QPushButton* highlightButton() const { return m_highlight; }
  // "1.08× faster" / "1.10× slower" / "same time": B against A.
  QLabel* speedupLabel() const { return m_speedup; }
  QLabel* summaryLabel() const { return m_summary; }
  // A line above the plans saying why these two are compared (a calibrated re-plan's summary);
  // cleared when the user picks other plans or a plan is added. "" hides it.
  void setCaption(const QString& text);
  QLabel* captionLabel() const { return m_caption; }

 Q_SIGNALS:
  // The imported nodes whose variant differs between A and B (possibly none), whenever the
  // comparison changes and when the user clicks "Highlight in graph".
  void highlightNodes(std::vector<hap::ir::NodeId> nodes);
  // The user double-clicked (or pressed Enter on) the row of imported node `node`.
  void nodeActivated(hap::ir::NodeId node);

 private:
  void onHistoryRowsInserted();
  void recompare();
  void updateHeader();
  void resizeColumns();

  PlanHistoryModel* m_history = nullptr;
  PlanHistoryModel* m_empty = nullptr;  // the combos' model without a history
  ComparisonModel* m_model = nullptr;
  QComboBox* m_comboA = nullptr;
  QComboBox* m_comboB = nullptr;
  QLabel* m_timeA = nullptr;
  QLabel* m_timeB = nullptr;
  QLabel* m_speedup = nullptr;
  QLabel* m_memoryA = nullptr;
  QLabel* m_memoryB = nullptr;
  QLabel* m_memoryChange = nullptr;
  QLabel* m_fitsA = nullptr;
  QLabel* m_fitsB = nullptr;
  QLabel* m_note = nullptr;
  QLabel* m_summary = nullptr;
  QLabel* m_caption = nullptr;
  QTableView* m_table = nullptr;
  QPushButton* m_highlight = nullptr;
  bool m_choosing = false;  // setPlans() is moving both combos
};

}  // namespace hap::studio
