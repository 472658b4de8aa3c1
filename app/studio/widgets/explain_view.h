// The Explain view (issue 18, item 7): the plan's program as a sortable, filterable table
// ("Program": ExplainModel through ExplainFilterModel) and the text of `hap plan --explain`
// ("Text": plan::formatExplain). Selecting or double-clicking a step emits the imported node it
// computes or prepares, so the main window selects it in the graph; selectNode() goes the other way.
#pragma once

#include <QTabWidget>
#include <memory>

#include "app/studio/core/models/explain_filter.h"
#include "app/studio/core/models/explain_model.h"
#include "app/studio/core/documents/plan_document.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QTableView;

namespace hap::studio {

class ExplainView : public QTabWidget {
  Q_OBJECT

 public:
  enum Tab { ProgramTab, TextTab };

  explicit ExplainView(QWidget* parent = nullptr);

  // Shows `plan` (nullptr: empty); keeps the filter text, kind and sort column.
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  void clear() { setPlan(nullptr); }
  const std::shared_ptr<const PlanDocument>& plan() const { return m_model->plan(); }

  ExplainModel* model() const { return m_model; }
  ExplainFilterModel* proxy() const { return m_proxy; }
  QTableView* table() const { return m_table; }
  QLineEdit* filterEdit() const { return m_filter; }
  QComboBox* kindCombo() const { return m_kind; }
  QPlainTextEdit* textEdit() const { return m_text; }
  QLabel* countLabel() const { return m_count; }

 public Q_SLOTS:
  // Selects the rows of `node`'s steps (an imported node; its computation and the conversions
  // preparing its inputs) that the filter shows, without emitting nodeActivated; ir::kNone or a
  // node without steps clears the selection.
  void selectNode(hap::ir::NodeId node);

 Q_SIGNALS:
  // The user selected or double-clicked (or pressed Enter on) a step of imported node `node`
  // (never for a reshard's steps, which belong to no imported node).
  void nodeActivated(hap::ir::NodeId node);

 private:
  void onCurrentChanged(const QModelIndex& current);
  void updateCount();
  void resizeColumns();
  void fitFormsColumn();
  bool eventFilter(QObject* watched, QEvent* event) override;

  ExplainModel* m_model = nullptr;
  ExplainFilterModel* m_proxy = nullptr;
  QLineEdit* m_filter = nullptr;
  QComboBox* m_kind = nullptr;
  QLabel* m_count = nullptr;
  QTableView* m_table = nullptr;
  QPlainTextEdit* m_text = nullptr;
  bool m_syncing = false;  // selectNode() is moving the selection
  int m_formsWidth = 0;    // the forms column's content width
};

}  // namespace hap::studio
