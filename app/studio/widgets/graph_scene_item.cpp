#include "app/studio/widgets/graph_scene_item.h"

#include <QPainter>
#include <QPainterPathStroker>
#include <QStyleOptionGraphicsItem>

#include <QtMath>

#include <cmath>

#include "app/studio/core/graph/colouring.h"

namespace hap::studio {

namespace {

// Below this zoom text is unreadable anyway: boxes are drawn as plain shapes.
constexpr qreal kTextLod = 0.4;
constexpr qreal kHalo = 8;  // room around a box for the selection halo and the "+" badge

const QFont& titleFont() {
  static const QFont f = [] {
    QFont font(QStringLiteral("Sans Serif"));
    font.setPixelSize(11);
    font.setBold(true);
    return font;
  }();
  return f;
}

const QFont& detailFont() {
  static const QFont f = [] {
    QFont font(QStringLiteral("Sans Serif"));
    font.setPixelSize(10);
    return font;
  }();
  return f;
}

const QFont& edgeLabelFont() {
  static const QFont f = [] {
    QFont font(QStringLiteral("Sans Serif"));
    font.setPixelSize(9);
    font.setBold(true);
    return font;
  }();
  return f;
}

const QFont& clusterFont() {
  static const QFont f = [] {
    QFont font(QStringLiteral("Sans Serif"));
    font.setPixelSize(10);
    font.setBold(true);
    return font;
  }();
  return f;
}

const QColor kEdge(0x9aa0a6);

}  // namespace

QColor graphAccentColour() { return QColor(0x1a73e8); }
QColor graphMarkColour() {
  return QColor(0xf29900);
}

// ---------------------------------------------------------------------------------------------

GraphBoxItem::GraphBoxItem(int boxIndex, const LayoutBox& box, const QColor& fill)
    : m_boxIndex(boxIndex),
      m_kind(box.kind),
      m_id(box.id),
      m_rect(box.rect.x, box.rect.y, box.rect.width, box.rect.height),
      m_title(QString::fromStdString(box.title)),
      m_detail(QString::fromStdString(box.detail)) {
  setAcceptedMouseButtons(Qt::NoButton);
  setZValue(200);
  setFill(fill);
}

QRectF GraphBoxItem::boundingRect() const { return m_rect.adjusted(-kHalo, -kHalo, kHalo, kHalo); }

QPainterPath GraphBoxItem::shape() const {
  QPainterPath p;
  p.addRect(m_rect);
  return p;
}

void GraphBoxItem::setFill(const QColor& fill) {
  m_fill = fill;
  m_text = NodeColouring::textColourOn(fill);
  update();
}

void GraphBoxItem::setEmphasis(ItemEmphasis e) {
  if (e == m_emphasis) return;
  m_emphasis = e;
  setZValue(e == ItemEmphasis::Normal ? 200 : 210);
  update();
}

void GraphBoxItem::setMarked(bool marked) {
  if (marked == m_marked) return;
  m_marked = marked;
  update();
}

void GraphBoxItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const qreal lod = option->levelOfDetailFromTransform(painter->worldTransform());
  const bool detailed = lod >= kTextLod;
  painter->setRenderHint(QPainter::Antialiasing, detailed);

  const bool input = m_kind == LayoutBox::Kind::Input;
  const bool collapsed = m_kind == LayoutBox::Kind::CollapsedScope;
  const qreal radius = input ? m_rect.height() / 2 : (collapsed ? 6 : 4);
  const QColor border = input ? QColor(0x80868b) : m_fill.darker(collapsed ? 170 : 145);

  if (m_emphasis == ItemEmphasis::Selected && detailed) {
    QColor halo = graphAccentColour();
    halo.setAlpha(60);
    painter->setPen(Qt::NoPen);
    painter->setBrush(halo);
    painter->drawRoundedRect(m_rect.adjusted(-4, -4, 4, 4), radius + 4, radius + 4);
  }

  QPen pen(border, collapsed ? 1.2 : 1.0);
  if (m_emphasis != ItemEmphasis::Normal) {
    pen.setColor(graphAccentColour());
    pen.setWidthF(m_emphasis == ItemEmphasis::Selected ? 2.2 : 1.8);
  }
  painter->setPen(pen);
  painter->setBrush(m_fill);
  painter->drawRoundedRect(m_rect, radius, radius);

  if (collapsed) {
    // A second, inner border: "there is more inside".
    QPen inner(m_emphasis == ItemEmphasis::Normal ? border : graphAccentColour(), 0.8);
    painter->setPen(inner);
    painter->setBrush(Qt::NoBrush);
    painter->drawRoundedRect(m_rect.adjusted(2.5, 2.5, -2.5, -2.5), radius - 2, radius - 2);
  }
  if (m_marked) {
    // Outside the box, so the fill (the colouring) stays readable; thick enough to see zoomed out.
    painter->setPen(QPen(graphMarkColour(), detailed ? 3.5 : 6.0));
    painter->setBrush(Qt::NoBrush);
    painter->drawRoundedRect(m_rect.adjusted(-3, -3, 3, 3), radius + 3, radius + 3);
  }
  if (!detailed) return;

  if (collapsed) {
    // "+" badge on the top-right corner: double-click expands.
    const QPointF c = m_rect.topRight() + QPointF(-1, 1);
    painter->setPen(QPen(border, 1));
    painter->setBrush(Qt::white);
    painter->drawEllipse(c, 5.5, 5.5);
    painter->setPen(QPen(border.darker(120), 1.3));
    painter->drawLine(c + QPointF(-2.8, 0), c + QPointF(2.8, 0));
    painter->drawLine(c + QPointF(0, -2.8), c + QPointF(0, 2.8));
  }

  painter->setPen(m_text);
  painter->setFont(titleFont());
  if (m_detail.isEmpty()) {
    painter->drawText(m_rect, Qt::AlignCenter | Qt::TextSingleLine, m_title);
    return;
  }
  const qreal mid = m_rect.top() + m_rect.height() / 2;
  QRectF titleRect(m_rect.left(), m_rect.top() + 3, m_rect.width(), mid - m_rect.top() - 2);
  QRectF detailRect(m_rect.left(), mid, m_rect.width(), m_rect.bottom() - mid - 4);
  painter->drawText(titleRect, Qt::AlignHCenter | Qt::AlignBottom | Qt::TextSingleLine, m_title);
  QColor detailColour = m_text;
  detailColour.setAlphaF(0.75f);
  painter->setPen(detailColour);
  painter->setFont(detailFont());
  painter->drawText(detailRect, Qt::AlignHCenter | Qt::AlignTop | Qt::TextSingleLine, m_detail);
}

// ---------------------------------------------------------------------------------------------

GraphClusterItem::GraphClusterItem(const LayoutCluster& cluster, int depth)
    : m_scope(cluster.scope),
      m_rect(cluster.rect.x, cluster.rect.y, cluster.rect.width, cluster.rect.height),
      m_label(QString::fromStdString(cluster.label)) {
  setAcceptedMouseButtons(Qt::NoButton);
  setZValue(depth);
}

QRectF GraphClusterItem::boundingRect() const { return m_rect.adjusted(-3, -3, 3, 3); }

QPainterPath GraphClusterItem::shape() const {
  QPainterPath frame;
  frame.addRect(m_rect);
  QPainterPathStroker stroker;
  stroker.setWidth(8);
  QPainterPath band = stroker.createStroke(frame);
  band.addRect(QRectF(m_rect.left(), m_rect.top(), m_rect.width(), 16));
  return band;
}

void GraphClusterItem::setEmphasis(ItemEmphasis e) {
  if (e == m_emphasis) return;
  m_emphasis = e;
  update();
}

void GraphClusterItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const qreal lod = option->levelOfDetailFromTransform(painter->worldTransform());
  painter->setRenderHint(QPainter::Antialiasing, lod >= kTextLod);
  QPen pen(QColor(0xc4c9d0), 1.0);
  if (m_emphasis != ItemEmphasis::Normal) pen = QPen(graphAccentColour(), 2.0);
  painter->setPen(pen);
  // Translucent, so nested clusters get slightly darker with depth.
  painter->setBrush(QColor(60, 80, 120, 10));
  painter->drawRoundedRect(m_rect, 6, 6);
  if (lod < kTextLod) return;
  painter->setPen(m_emphasis != ItemEmphasis::Normal ? graphAccentColour() : QColor(0x5f6368));
  painter->setFont(clusterFont());
  painter->drawText(QRectF(m_rect.left() + 7, m_rect.top() + 2, m_rect.width() - 10, 14),
                    Qt::AlignLeft | Qt::AlignVCenter | Qt::TextSingleLine, m_label);
}

// ---------------------------------------------------------------------------------------------

GraphEdgeItem::GraphEdgeItem(int edgeIndex, const LayoutEdge& edge) : m_edgeIndex(edgeIndex) {
  setAcceptedMouseButtons(Qt::NoButton);
  setZValue(100);
  const auto& pts = edge.points;
  if (pts.size() < 4) return;
  auto qp = [](const PointF& p) { return QPointF(p.x, p.y); };
  const QPointF tip = qp(pts.back());
  QPointF from = qp(pts[pts.size() - 2]);
  if (QLineF(from, tip).length() < 0.5) from = qp(pts[pts.size() - 4]);
  QLineF dir(tip, from);  // tip → back along the curve
  const qreal len = dir.length();
  const qreal arrowLength = 7, arrowHalfWidth = 3.5;
  QPointF ux = len > 0 ? (from - tip) / len : QPointF(0, -1);
  const QPointF base = tip + ux * arrowLength;
  const QPointF normal(-ux.y(), ux.x());
  m_arrow << tip << base + normal * arrowHalfWidth << base - normal * arrowHalfWidth;

  m_path.moveTo(qp(pts[0]));
  for (size_t i = 1; i + 2 < pts.size(); i += 3) {
    const bool last = i + 3 >= pts.size();
    m_path.cubicTo(qp(pts[i]), qp(pts[i + 1]), last ? base : qp(pts[i + 2]));
  }
  updateBounds();
}

void GraphEdgeItem::updateBounds() {
  QRectF r = m_path.boundingRect().united(m_arrow.boundingRect()).adjusted(-3, -3, 3, 3);
  if (!m_labelRect.isEmpty()) r = r.united(m_labelRect.adjusted(-1, -1, 1, 1));
  m_bounds = r;
}

QPainterPath GraphEdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(6);
  QPainterPath p = stroker.createStroke(m_path);
  if (!m_labelRect.isEmpty()) p.addRoundedRect(m_labelRect, 4, 4);
  return p;
}

void GraphEdgeItem::setPlanStyle(const QColor& stroke, bool dashed, const QString& label,
                                 bool communicates) {
  prepareGeometryChange();
  m_stroke = stroke;
  m_dashed = dashed;
  m_communicates = communicates;
  m_label = label;
  m_labelRect = {};
  if (!m_label.isEmpty() && !m_path.isEmpty()) {
    const QFontMetricsF fm(edgeLabelFont());
    const qreal w = fm.horizontalAdvance(m_label) + 8, h = fm.height() + 2;
    // Beside the middle of the edge, on its right (seen along the edge), so that neither the
    // line nor the frames' labels (top-left of each frame) hide it.
    const qreal at = m_path.percentAtLength(m_path.length() / 2);
    const QPointF mid = m_path.pointAtPercent(at);
    const qreal angle = qDegreesToRadians(m_path.angleAtPercent(at));
    const QPointF tangent(std::cos(angle), -std::sin(angle));  // y down
    QPointF normal(-tangent.y(), tangent.x());
    if (normal.x() < 0 || (std::abs(normal.x()) < 1e-6 && normal.y() < 0)) normal = -normal;
    const qreal reach = std::abs(normal.x()) * w / 2 + std::abs(normal.y()) * h / 2 + 3;
    const QPointF centre = mid + normal * reach;
    m_labelRect = QRectF(centre.x() - w / 2, centre.y() - h / 2, w, h);
  }
  updateBounds();
  update();
}

void GraphEdgeItem::setEmphasis(ItemEmphasis e) {
  if (e == m_emphasis) return;
  m_emphasis = e;
  setZValue(e == ItemEmphasis::Normal ? 100 : 150);
  update();
}

void GraphEdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const qreal lod = option->levelOfDetailFromTransform(painter->worldTransform());
  painter->setRenderHint(QPainter::Antialiasing, lod >= kTextLod);
  const bool strong = m_emphasis != ItemEmphasis::Normal;
  const bool planned = m_stroke.isValid();
  const QColor colour = strong ? graphAccentColour() : (planned ? m_stroke : kEdge);
  QPen pen(colour, strong ? 2.0 : (planned ? 1.5 : 1.1), Qt::SolidLine, Qt::RoundCap,
           Qt::RoundJoin);
  if (m_dashed) pen.setDashPattern({4, 3});
  painter->setPen(pen);
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(m_path);
  painter->setPen(Qt::NoPen);
  painter->setBrush(colour);
  painter->drawPolygon(m_arrow);
  if (m_labelRect.isEmpty() || lod < kTextLod) return;
  // The label: a pill over the middle of the edge, dark for communication, light for local work.
  const QColor fill = m_communicates ? QColor(0x4a2c8f) : QColor(0xffffff);
  const QColor text = m_communicates ? QColor(0xffffff) : QColor(0x4a2c8f);
  painter->setPen(QPen(strong ? graphAccentColour() : QColor(0x4a2c8f), strong ? 1.5 : 1.0));
  painter->setBrush(fill);
  painter->drawRoundedRect(m_labelRect, m_labelRect.height() / 2, m_labelRect.height() / 2);
  painter->setPen(text);
  painter->setFont(edgeLabelFont());
  painter->drawText(m_labelRect, Qt::AlignCenter | Qt::TextSingleLine, m_label);
}

}  // namespace hap::studio
