#include "app/studio/widgets/graph_minimap.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>

#include "app/studio/widgets/graph_scene_item.h"
#include "app/studio/widgets/graph_view.h"

namespace hap::studio {
namespace {
constexpr qreal kInset = 4;
}

GraphMinimap::GraphMinimap(GraphView* view) : QWidget(view), m_view(view) {
  setObjectName(QStringLiteral("graph.minimap"));
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Overview: click or drag to move the view"));
  hide();
}

void GraphMinimap::refresh() {
  const QRectF scene = m_view->sceneRect();
  const Layout* layout = m_view->currentLayout();
  if (!layout || layout->boxes.empty() || scene.isEmpty()) {
    hide();
    return;
  }
  // At most a third of the viewport's height, so that it leaves the drawing room.
  const qreal maxHeight = std::clamp<qreal>(m_view->viewport()->height() / 3.0, 60, kMaxHeight);
  const qreal s =
      std::min((kMaxWidth - 2 * kInset) / scene.width(), (maxHeight - 2 * kInset) / scene.height());
  resize(static_cast<int>(std::ceil(scene.width() * s + 2 * kInset)),
         static_cast<int>(std::ceil(scene.height() * s + 2 * kInset)));
  const QRectF visible = m_view->visibleSceneRect();
  const bool wholeShown = visible.contains(scene.adjusted(1, 1, -1, -1));
  // Bottom-right of the viewport; bottom-left where the colour legend (top-right) reaches down to
  // it, as in a short view: the two never cover each other.
  const QRect vp = m_view->viewport()->geometry();
  QRect r(QPoint(vp.right() - width() - 10, vp.bottom() - height() - 10), size());
  const QWidget* legend = m_view->findChild<QWidget*>(QStringLiteral("graph.legend"), Qt::FindDirectChildrenOnly);
  if (legend && legend->isVisible() && legend->geometry().adjusted(0, 0, 0, 10).intersects(r))
    r.moveLeft(vp.left() + 10);
  move(r.topLeft());
  setVisible(!wholeShown);
  update();
}

QTransform GraphMinimap::sceneToMinimap() const {
  const QRectF scene = m_view->sceneRect();
  if (scene.isEmpty()) return {};
  const qreal s =
      std::min((width() - 2 * kInset) / scene.width(), (height() - 2 * kInset) / scene.height());
  QTransform t;
  t.translate(kInset, kInset);
  t.scale(s, s);
  t.translate(-scene.left(), -scene.top());
  return t;
}

QPointF GraphMinimap::toScene(const QPointF& p) const {
  return sceneToMinimap().inverted().map(p);
}

QPointF GraphMinimap::toMinimap(const QPointF& scenePoint) const {
  return sceneToMinimap().map(scenePoint);
}

QRectF GraphMinimap::viewRectInMinimap() const {
  return sceneToMinimap().mapRect(m_view->visibleSceneRect()).intersected(QRectF(rect()));
}

void GraphMinimap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setPen(QColor(0xdadce0));
  p.setBrush(QColor(255, 255, 255, 235));
  p.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
  const Layout* layout = m_view->currentLayout();
  if (!layout) return;
  const QTransform t = sceneToMinimap();
  p.setPen(QPen(QColor(0xbdc1c6), 0));
  p.setBrush(Qt::NoBrush);
  for (const LayoutCluster& c : layout->clusters)
    p.drawRect(t.mapRect(QRectF(c.rect.x, c.rect.y, c.rect.width, c.rect.height)));
  p.setPen(Qt::NoPen);
  for (size_t i = 0; i < layout->boxes.size(); ++i) {
    const RectF& r = layout->boxes[i].rect;
    QRectF m = t.mapRect(QRectF(r.x, r.y, r.width, r.height));
    if (m.width() < 1) m.setWidth(1);
    if (m.height() < 1) m.setHeight(1);
    p.fillRect(m, m_view->boxFill(static_cast<int>(i)).darker(115));
  }
  const QRectF view = viewRectInMinimap();
  p.setPen(QPen(graphAccentColour(), 1.5));
  p.setBrush(QColor(26, 115, 232, 40));
  p.drawRect(view.adjusted(0.75, 0.75, -0.75, -0.75));
}

void GraphMinimap::centreViewAt(const QPointF& minimapPos) {
  m_view->centerOn(toScene(minimapPos));
  update();
}

void GraphMinimap::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  m_dragging = true;
  centreViewAt(event->position());
  event->accept();
}

void GraphMinimap::mouseMoveEvent(QMouseEvent* event) {
  if (!m_dragging) return;
  centreViewAt(event->position());
  event->accept();
}

void GraphMinimap::mouseReleaseEvent(QMouseEvent* event) {
  m_dragging = false;
  event->accept();
}

}  // namespace hap::studio
