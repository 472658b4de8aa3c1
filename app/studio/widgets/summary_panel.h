// The model summary panel (issue 17, item 4): the per-scope table `hap inspect` prints, sortable
// by any column (numbers sort numerically, the totals row stays last), with a depth control whose
// levels are the graph's (SummaryModel; inside a single wrapper module, counted from it).
// Selecting a scope row emits scopeActivated(path) so the main window selects it in the graph.
#pragma once

#include <QSpinBox>
#include <QWidget>
#include <memory>

#include "app/studio/core/models/summary_model.h"

class QTreeView;

namespace hap::studio {

// A depth spin box showing its maximum as "all" (the depth where no scope is truncated any more,
// which gives the same rows as depth -1).
class DepthSpinBox : public QSpinBox {
  Q_OBJECT

 public:
  explicit DepthSpinBox(QWidget* parent = nullptr);
  // -1 at the maximum ("all"), the value otherwise.
  int depth() const { return value() == maximum() ? -1 : value(); }
  void setDepth(int depth) { setValue(depth < 0 ? maximum() : std::min(depth, maximum())); }

 protected:
  QString textFromValue(int value) const override;
  int valueFromText(const QString& text) const override;
  QValidator::State validate(QString& text, int& pos) const override;
};

class SummaryPanel : public QWidget {
  Q_OBJECT

 public:
  explicit SummaryPanel(QWidget* parent = nullptr);

  // Shows `graph` (nullptr: empty); keeps the depth when possible and the sort column.
  void setGraph(std::shared_ptr<const ir::Graph> graph);
  // -1: full scopes.
  void setDepth(int depth);
  int depth() const { return m_model->depth(); }
  // Selects the row of `path` (a scope at the current depth, "" = top level) without emitting
  // scopeActivated; clears the selection when no row has it.
  void selectScope(const QString& path);

  SummaryModel* model() const { return m_model; }
  SummaryProxyModel* proxy() const { return m_proxy; }
  QTreeView* view() const { return m_view; }
  DepthSpinBox* depthSpinBox() const { return m_depth; }

 Q_SIGNALS:
  // The user selected the row of scope `path` ("" = top level; never the totals row).
  void scopeActivated(const QString& path);

 private:
  void onCurrentChanged(const QModelIndex& current);
  void resizeColumns();

  SummaryModel* m_model = nullptr;
  SummaryProxyModel* m_proxy = nullptr;
  QTreeView* m_view = nullptr;
  DepthSpinBox* m_depth = nullptr;
  bool m_syncing = false;  // selectScope() is moving the selection
};

}  // namespace hap::studio
