// The graph view's overview (issue 31): the whole drawing in miniature at the viewport's
// bottom-right corner, with the rectangle the view shows; a click or a drag there centres the view
// on that point. Drawn from the Layout (boxes as filled rectangles, frames as outlines), not by
// rendering the scene, so it costs well under a millisecond per paint for 2,000 boxes.
#pragma once

#include <QRectF>
#include <QTransform>
#include <QWidget>

namespace hap::studio {

class GraphView;

class GraphMinimap : public QWidget {
  Q_OBJECT

 public:
  explicit GraphMinimap(GraphView* view);

  // Sizes itself to the scene's aspect within maxSize and shows when the view does not show the
  // whole scene; call after a new layout, a zoom or a resize.
  void refresh();
  // Scene point under minimap pixel p, and the reverse (tests).
  QPointF toScene(const QPointF& p) const;
  QPointF toMinimap(const QPointF& scenePoint) const;
  // The visible scene rectangle as drawn in the minimap, in its pixels.
  QRectF viewRectInMinimap() const;

  static constexpr int kMaxWidth = 200, kMaxHeight = 240;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;

 private:
  QTransform sceneToMinimap() const;
  void centreViewAt(const QPointF& minimapPos);

  GraphView* m_view;
  bool m_dragging = false;
};

}  // namespace hap::studio
