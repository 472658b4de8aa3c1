// The breadcrumb bar above the graph (issue 31): the scope path of the selection, or of the
// focused scope ("show only this scope"), as flat buttons from the model down. A click on a crumb
// shows only that scope; the first crumb (the model) shows the whole graph again. The trail itself
// comes from core (breadcrumbTrail, graph_navigation.h).
#pragma once

#include <QStringList>
#include <QWidget>

class QHBoxLayout;
class QToolButton;

namespace hap::studio {

class GraphBreadcrumbs : public QWidget {
  Q_OBJECT

 public:
  explicit GraphBreadcrumbs(QWidget* parent = nullptr);

  // `labels` root first; the entry at focusIndex is the focused scope (bold).
  void setTrail(const QStringList& labels, int focusIndex);
  QStringList labels() const { return m_labels; }
  int focusIndex() const { return m_focusIndex; }
  // The button of crumb i (tests click it).
  QToolButton* crumb(int i) const;
  QSize sizeHint() const override;

 Q_SIGNALS:
  void crumbClicked(int index);

 private:
  QHBoxLayout* m_row;
  QStringList m_labels;
  int m_focusIndex = 0;
  QList<QToolButton*> m_buttons;
};

}  // namespace hap::studio
