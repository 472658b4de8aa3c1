// The properties panel (issue 17, item 3): what the selected node, value or scope is, as a tree
// of Property | Value rows, expanded. Rows that name another node, value or scope are drawn as
// links; clicking the link (or Enter on its row) emits selectionRequested.
// Ctrl+C copies the selected rows as "property<TAB>value" lines.
#pragma once

#include <QElapsedTimer>
#include <QWidget>
#include <memory>

#include "app/studio/core/models/properties_model.h"

class QLabel;
class QTreeView;

namespace hap::studio {

class PropertiesPanel : public QWidget {
  Q_OBJECT

 public:
  explicit PropertiesPanel(QWidget* parent = nullptr);

  // Replaces the graph and its scope tree; clears what is shown.
  void setGraph(std::shared_ptr<const ir::Graph> graph, std::shared_ptr<const ScopeTree> scopes);
  // Adds the plan's rows (variant, forms with exact lengths, time per device) for what is shown;
  // null removes them. Keeps the selection.
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  // Shows `selection` (empty: a hint to select something).
  void showSelection(Selection selection);
  Selection selection() const { return m_model->selection(); }

  // The text Ctrl+C puts on the clipboard for the current selection of rows.
  QString selectedText() const;
  void copySelection() const;

  PropertiesModel* model() const { return m_model; }
  QTreeView* view() const { return m_view; }

 Q_SIGNALS:
  void selectionRequested(hap::studio::Selection selection);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void activateLink(const QModelIndex& index);

  PropertiesModel* m_model = nullptr;
  QTreeView* m_view = nullptr;
  QLabel* m_title = nullptr;
  QElapsedTimer m_sinceFollowed;  // since a click last followed a link
};

}  // namespace hap::studio
