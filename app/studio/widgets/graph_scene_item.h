// The items the graph view draws: boxes, cluster frames and edges of a Layout.
//
// Items are cheap on purpose (2,000 boxes must build in well under 100 ms): geometry comes from
// the layout in scene coordinates, nothing is measured while building, and paint() drops text
// when zoomed far out. They ignore mouse events; the view hit-tests by item type.
#pragma once

#include <QColor>
#include <QFont>
#include <QGraphicsItem>
#include <QPainterPath>
#include <QString>

#include "app/studio/core/graph/graph_layout.h"

namespace hap::studio {

// Emphasis shared by all item kinds: selected beats highlighted (a neighbour of the selection).
enum class ItemEmphasis { Normal, Highlighted, Selected };

// The accent used for selection and highlights.
QColor graphAccentColour();
// The outline of boxes marked by GraphView::highlightNodes (the compare view's changed nodes).
QColor graphMarkColour();

class GraphBoxItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };

  GraphBoxItem(int boxIndex, const LayoutBox& box, const QColor& fill);

  int type() const override { return Type; }
  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  int boxIndex() const { return m_boxIndex; }
  LayoutBox::Kind kind() const { return m_kind; }
  int id() const { return m_id; }  // NodeId, ScopeId or ValueId, by kind
  QRectF rect() const { return m_rect; }
  void setFill(const QColor& fill);
  void setEmphasis(ItemEmphasis e);
  ItemEmphasis emphasis() const { return m_emphasis; }
  // A thick orange outline, independent of the emphasis.
  void setMarked(bool marked);
  bool marked() const { return m_marked; }

 private:
  int m_boxIndex;
  LayoutBox::Kind m_kind;
  int m_id;
  QRectF m_rect;
  QString m_title, m_detail;
  QColor m_fill, m_text;
  ItemEmphasis m_emphasis = ItemEmphasis::Normal;
  bool m_marked = false;
};

class GraphClusterItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };

  GraphClusterItem(const LayoutCluster& cluster, int depth);

  int type() const override { return Type; }
  QRectF boundingRect() const override;
  // The frame and the label strip only: a click inside the frame is a click on empty space.
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  ScopeId scope() const { return m_scope; }
  QRectF rect() const { return m_rect; }
  void setEmphasis(ItemEmphasis e);
  ItemEmphasis emphasis() const { return m_emphasis; }

 private:
  ScopeId m_scope;
  QRectF m_rect;
  QString m_label;
  ItemEmphasis m_emphasis = ItemEmphasis::Normal;
};

class GraphEdgeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 3 };

  GraphEdgeItem(int edgeIndex, const LayoutEdge& edge);

  int type() const override { return Type; }
  QRectF boundingRect() const override { return m_bounds; }
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  int edgeIndex() const { return m_edgeIndex; }
  void setEmphasis(ItemEmphasis e);
  ItemEmphasis emphasis() const { return m_emphasis; }

  // The plan overlay: the stroke colour of the value's form (invalid: the default grey), a dashed
  // line for a read after a conversion, and a small label on the middle of the edge (a dark pill
  // for communication, a light one for local conversions). The tooltip is QGraphicsItem's.
  void setPlanStyle(const QColor& stroke, bool dashed, const QString& label, bool communicates);
  QString label() const { return m_label; }
  bool dashed() const { return m_dashed; }
  QColor stroke() const { return m_stroke; }

 private:
  void updateBounds();

  int m_edgeIndex;
  QPainterPath m_path;
  QPolygonF m_arrow;
  QRectF m_bounds;
  ItemEmphasis m_emphasis = ItemEmphasis::Normal;
  QColor m_stroke;  // invalid: the default
  bool m_dashed = false, m_communicates = false;
  QString m_label;
  QRectF m_labelRect;  // centred on the path's midpoint
};

}  // namespace hap::studio
