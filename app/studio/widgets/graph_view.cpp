#include "app/studio/widgets/graph_view.h"

#include <QAction>
#include <QApplication>
#include <QFileInfo>
#include <QKeyEvent>
#include <QContextMenuEvent>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QMenu>
#include <QPainter>
#include <QScrollBar>
#include <QSvgGenerator>
#include <QWheelEvent>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "app/studio/core/jobs/layout_job.h"
#include "app/studio/widgets/graph_breadcrumbs.h"
#include "app/studio/widgets/graph_minimap.h"
#include "app/studio/widgets/graph_scene_item.h"

namespace hap::studio {

namespace {

constexpr qreal kSceneMargin = 40;
constexpr qreal kMinScale = 0.02;
constexpr qreal kMaxScale = 6.0;
constexpr qreal kMaxFitScale = 1.25;
constexpr qreal kReadableScale = 0.55;  // below it, a "fit" shows actual size instead

qint64 boxKey(LayoutBox::Kind kind, int id) {
  return (static_cast<qint64>(kind) << 32) | static_cast<quint32>(id);
}

QColor fillOf(const NodeColouring& c, const LayoutBox& b) {
  switch (b.kind) {
    case LayoutBox::Kind::Op: return c.nodeColour(b.id);
    case LayoutBox::Kind::CollapsedScope: return c.scopeColour(b.id);
    case LayoutBox::Kind::Input: return c.inputColour();
  }
  return c.neutralColour();
}

}  // namespace

// The colour legend, top-right over the viewport: swatches for categories, a ramp for numbers;
// with a plan, a key to the edges below (form colours, dashed conversions, collective labels).
class GraphLegendOverlay : public QWidget {
 public:
  explicit GraphLegendOverlay(QWidget* parent) : QWidget(parent) {
    setAttribute(Qt::WA_TransparentForMouseEvents);
    QFont f = font();
    f.setPixelSize(11);
    setFont(f);
  }

  // `edgeForms` empty: no edge key.
  void setLegend(ColourLegend legend, std::vector<std::pair<QString, QColor>> edgeForms = {}) {
    m_legend = std::move(legend);
    m_edgeForms = std::move(edgeForms);
    setVisible(!m_legend.empty() || !m_edgeForms.empty());
    resize(sizeHint());
    update();
  }

  QSize sizeHint() const override {
    const QFontMetrics fm(font());
    QFont bold = font();
    bold.setBold(true);
    int w = QFontMetrics(bold).horizontalAdvance(m_legend.title);
    int h = kPad + fm.height();
    if (m_legend.numeric) {
      w = std::max({w, 140, fm.horizontalAdvance(m_legend.minLabel + QStringLiteral("  ") +
                                                 m_legend.maxLabel)});
      h += 4 + kRampHeight + 2 + fm.height();
    } else {
      for (const auto& e : m_legend.entries) {
        w = std::max(w, kSwatch + 6 + fm.horizontalAdvance(e.first));
        h += kRow;
      }
    }
    if (!m_edgeForms.empty()) {
      h += kGap + fm.height();
      w = std::max(w, QFontMetrics(bold).horizontalAdvance(edgeTitle()));
      for (const auto& e : m_edgeForms) {
        w = std::max(w, kLine + 6 + fm.horizontalAdvance(e.first));
        h += kRow;
      }
      w = std::max({w, kLine + 6 + fm.horizontalAdvance(dashedText()),
                    kLine + 6 + fm.horizontalAdvance(pillText())});
      h += 2 * kRow;
    }
    return {w + 2 * kPad, h + kPad};
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QColor(0xdadce0));
    p.setBrush(QColor(255, 255, 255, 235));
    p.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6);
    const QFontMetrics fm(font());
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(QColor(0x202124));
    int y = kPad;
    p.drawText(QRect(kPad, y, width() - 2 * kPad, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
               m_legend.title);
    y += fm.height();
    p.setFont(font());
    if (m_legend.numeric) {
      y += 4;
      const QRectF bar(kPad, y, width() - 2 * kPad, kRampHeight);
      QLinearGradient g(bar.topLeft(), bar.topRight());
      const auto& stops = m_legend.ramp;
      for (size_t i = 0; i < stops.size(); ++i)
        g.setColorAt(stops.size() == 1 ? 0 : static_cast<qreal>(i) / (stops.size() - 1), stops[i]);
      p.setPen(QColor(0xbdc1c6));
      p.setBrush(g);
      p.drawRect(bar);
      y += kRampHeight + 2;
      p.setPen(QColor(0x5f6368));
      p.drawText(QRect(kPad, y, width() - 2 * kPad, fm.height()), Qt::AlignLeft, m_legend.minLabel);
      p.drawText(QRect(kPad, y, width() - 2 * kPad, fm.height()), Qt::AlignRight, m_legend.maxLabel);
      if (m_legend.logScale)
        p.drawText(QRect(kPad, y, width() - 2 * kPad, fm.height()), Qt::AlignHCenter,
                   QStringLiteral("log"));
      y += fm.height();
    } else {
      for (const auto& [label, colour] : m_legend.entries) {
        const QRectF sw(kPad, y + (kRow - kSwatch) / 2.0, kSwatch, kSwatch);
        p.setPen(colour.darker(145));
        p.setBrush(colour);
        p.drawRoundedRect(sw, 2, 2);
        p.setPen(QColor(0x3c4043));
        p.drawText(QRect(kPad + kSwatch + 6, y, width() - kPad * 2 - kSwatch - 6, kRow),
                   Qt::AlignLeft | Qt::AlignVCenter, label);
        y += kRow;
      }
    }
    if (m_edgeForms.empty()) return;
    y += kGap;
    p.setPen(QColor(0xe8eaed));
    p.drawLine(kPad, y - kGap / 2, width() - kPad, y - kGap / 2);
    p.setFont(bold);
    p.setPen(QColor(0x202124));
    p.drawText(QRect(kPad, y, width() - 2 * kPad, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
               edgeTitle());
    y += fm.height();
    p.setFont(font());
    auto line = [&](const QColor& c, bool dashed) {
      QPen pen(c, 2.0, Qt::SolidLine, Qt::FlatCap);
      if (dashed) pen.setDashPattern({3, 2});
      p.setPen(pen);
      p.drawLine(QPointF(kPad, y + kRow / 2.0), QPointF(kPad + kLine, y + kRow / 2.0));
    };
    auto text = [&](const QString& t) {
      p.setPen(QColor(0x3c4043));
      p.drawText(QRect(kPad + kLine + 6, y, width() - kPad * 2 - kLine - 6, kRow),
                 Qt::AlignLeft | Qt::AlignVCenter, t);
      y += kRow;
    };
    for (const auto& [label, colour] : m_edgeForms) {
      line(colour, false);
      text(label);
    }
    line(QColor(0x5f6368), true);
    text(dashedText());
    QFont small = font();
    small.setPixelSize(9);
    small.setBold(true);
    const QRectF pill(kPad, y + 2, kLine, kRow - 4);
    p.setPen(QColor(0x4a2c8f));
    p.setBrush(QColor(0x4a2c8f));
    p.drawRoundedRect(pill, pill.height() / 2, pill.height() / 2);
    p.setPen(Qt::white);
    p.setFont(small);
    p.drawText(pill, Qt::AlignCenter, QStringLiteral("AG"));
    p.setFont(font());
    text(pillText());
  }

 private:
  static QString edgeTitle() { return GraphView::tr("Edges (value form)"); }
  static QString dashedText() { return GraphView::tr("read after a conversion"); }
  static QString pillText() { return GraphView::tr("collective (hover for details)"); }
  static constexpr int kPad = 8, kSwatch = 11, kRow = 17, kRampHeight = 10, kGap = 8, kLine = 24;
  ColourLegend m_legend;
  std::vector<std::pair<QString, QColor>> m_edgeForms;
};

GraphView::GraphView(QWidget* parent)
    : QGraphicsView(parent), m_job(new LayoutJob(this)), m_scene(new QGraphicsScene(this)) {
  // No BSP index: building one costs more on the first paint after each relayout (~130 ms for
  // 2,000 boxes) than a linear walk over the items costs per paint and hit test.
  m_scene->setItemIndexMethod(QGraphicsScene::NoIndex);
  setScene(m_scene);
  setBackgroundBrush(QColor(0xfafbfc));
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setOptimizationFlags(QGraphicsView::DontSavePainterState |
                       QGraphicsView::DontAdjustForAntialiasing);
  setFrameShape(QFrame::NoFrame);
  setContextMenuPolicy(Qt::DefaultContextMenu);
  setFocusPolicy(Qt::StrongFocus);

  m_legend = new GraphLegendOverlay(this);
  m_legend->setObjectName(QStringLiteral("graph.legend"));
  m_legend->hide();
  m_busyLabel = new QLabel(tr("Laying out…"), this);
  m_busyLabel->setAttribute(Qt::WA_TransparentForMouseEvents);
  m_busyLabel->setStyleSheet(QStringLiteral(
      "QLabel { background: rgba(32,33,36,200); color: white; border-radius: 4px;"
      " padding: 3px 8px; }"));
  m_busyLabel->hide();
  m_minimap = new GraphMinimap(this);
  m_breadcrumbs = new GraphBreadcrumbs(this);
  setViewportMargins(0, m_breadcrumbs->sizeHint().height(), 0, 0);
  connect(m_breadcrumbs, &GraphBreadcrumbs::crumbClicked, this, [this](int i) {
    if (i >= 0 && i < static_cast<int>(m_trail.scopes.size()))
      setFocusScope(m_trail.scopes[static_cast<size_t>(i)]);
  });
  // The keys are the view's own (keyPressEvent); the text shows them in menus.
  m_focusAction = new QAction(tr("Show Only This Scope") + QStringLiteral("\tF"), this);
  m_focusAction->setObjectName(QStringLiteral("graph.focusScope"));
  m_focusAction->setEnabled(false);
  connect(m_focusAction, &QAction::triggered, this, &GraphView::focusSelection);
  m_unfocusAction = new QAction(tr("Show Whole Graph") + QStringLiteral("\tEsc"), this);
  m_unfocusAction->setObjectName(QStringLiteral("graph.unfocus"));
  m_unfocusAction->setEnabled(false);
  connect(m_unfocusAction, &QAction::triggered, this, [this] { setFocusScope(kRootScope); });

  connect(m_job, &LayoutJob::layoutReady, this, &GraphView::onLayoutReady);
  connect(m_job, &LayoutJob::busyChanged, this, [this](bool busy) {
    m_busyLabel->setVisible(busy);
    positionOverlays();
    Q_EMIT busyChanged(busy);
  });
  connect(m_job, &LayoutJob::failed, this, [this](const QString& message, quint64) {
    Q_EMIT layoutFailed(message);
  });
  m_variantWatcher = new QFutureWatcher<std::shared_ptr<const VariantNames>>(this);
  connect(m_variantWatcher, &QFutureWatcherBase::finished, this, [this] {
    if (!m_graph || m_variantsFor != m_graph.get() || m_variantWatcher->future().resultCount() == 0)
      return;
    auto names = m_variantWatcher->result();
    if (names && m_graph && names->size() == m_graph->nodes.size()) m_ruleVariants = names;
    if (m_variantElapsed) m_ruleVariantsMs = *m_variantElapsed;
  });
}

GraphView::~GraphView() = default;

bool GraphView::layoutBusy() const { return m_job->busy(); }

void GraphView::setGraph(std::shared_ptr<const ir::Graph> graph,
                         std::shared_ptr<const ScopeTree> tree) {
  if (!graph || !tree) {
    clear();
    return;
  }
  const bool sameGraph = graph == m_graph;
  m_graph = std::move(graph);
  m_tree = std::move(tree);
  m_options.focus = kRootScope;
  m_state = CollapseState::opening(*m_tree, *m_graph);
  m_layoutState = m_pendingState = m_state;
  dropDrawing();
  if (!sameGraph) {
    m_ruleVariants.reset();
    m_variantsFor = nullptr;
  }
  m_partialVariants.clear();
  m_highlightedNodes.clear();
  if (m_plan && m_plan->imported->nodes.size() != m_graph->nodes.size()) setPlan(nullptr);
  rebuildColouring();
  m_firstLayout = true;
  setSelectionInternal({}, true);
  requestLayout({Anchor::Kind::Fit});
}

void GraphView::dropDrawing() {
  m_layout.reset();
  m_scene->clear();
  m_boxItems.clear();
  m_clusterItems.clear();
  m_edgeItems.clear();
  m_boxByKey.clear();
  m_highlightedValue = -1;
}

void GraphView::clear() {
  m_job->cancel();
  m_graph.reset();
  m_tree.reset();
  m_state = m_pendingState = m_layoutState = CollapseState();
  dropDrawing();
  if (m_plan) setPlan(nullptr);
  m_partialVariants.clear();
  m_highlightedNodes.clear();
  m_ruleVariants.reset();
  m_variantsFor = nullptr;
  m_colouring = NodeColouring();
  m_options.focus = kRootScope;
  setSelectionInternal({}, true);
  refreshLegend();
  m_minimap->refresh();
}

// ---- layout requests ----------------------------------------------------------------------------

void GraphView::requestLayout(Anchor anchor) {
  m_relayout = false;
  if (!m_graph) return;
  m_pendingAnchor = anchor;
  m_pendingState = m_state;
  m_job->request(m_graph, m_tree, m_state, m_options);
}

void GraphView::changeState(const CollapseState& next, Anchor anchor) {
  if (!(next == m_state) || m_relayout) {
    m_state = next;
    requestLayout(anchor);
  } else if (m_job->busy()) {
    m_pendingAnchor = anchor;  // applied when the outstanding layout arrives
  } else {
    applyAnchor(anchor);
  }
}

void GraphView::onLayoutReady(std::shared_ptr<const Layout> layout, quint64) {
  m_layoutState = m_pendingState;
  showLayout(std::move(layout));
}

void GraphView::showLayout(std::shared_ptr<const Layout> layout) {
  if (!layout) return;
  m_layout = std::move(layout);
  m_colouring.fitRange(*m_layout);
  buildScene(*m_layout);
  applySelection();
  Anchor anchor = m_pendingAnchor;
  if (m_firstLayout) anchor = {Anchor::Kind::Fit};
  m_firstLayout = false;
  m_pendingAnchor = {};
  applyAnchor(anchor);
  refreshLegend();
  m_minimap->refresh();
  updateBreadcrumbs();
  // The variant names of "Compute under variant": once per graph, after the first drawing so as
  // not to compete with it.
  if (!m_ruleVariants && m_variantsFor != m_graph.get()) startRuleVariants();
  Q_EMIT layoutFinished();
}

void GraphView::buildScene(const Layout& layout) {
  QElapsedTimer timer;
  timer.start();
  // Items are replaced wholesale: a layout moves everything anyway.
  m_scene->clear();
  m_boxItems.clear();
  m_clusterItems.clear();
  m_edgeItems.clear();
  m_boxByKey.clear();
  m_scene->setSceneRect(QRectF(-kSceneMargin, -kSceneMargin, layout.width + 2 * kSceneMargin,
                               layout.height + 2 * kSceneMargin));

  m_clusterItems.reserve(layout.clusters.size());
  for (const LayoutCluster& c : layout.clusters) {
    const int depth = m_tree && c.scope >= 0 && c.scope < m_tree->size() ? m_tree->scope(c.scope).depth : 1;
    auto* item = new GraphClusterItem(c, depth);
    m_scene->addItem(item);
    m_clusterItems.push_back(item);
  }
  m_edgeItems.reserve(layout.edges.size());
  for (size_t i = 0; i < layout.edges.size(); ++i) {
    auto* item = new GraphEdgeItem(static_cast<int>(i), layout.edges[i]);
    m_scene->addItem(item);
    m_edgeItems.push_back(item);
  }
  m_boxItems.reserve(layout.boxes.size());
  m_boxByKey.reserve(static_cast<qsizetype>(layout.boxes.size()));
  for (size_t i = 0; i < layout.boxes.size(); ++i) {
    const LayoutBox& b = layout.boxes[i];
    auto* item = new GraphBoxItem(static_cast<int>(i), b, fillOf(m_colouring, b));
    m_scene->addItem(item);
    m_boxItems.push_back(item);
    m_boxByKey.insert(boxKey(b.kind, b.id), static_cast<int>(i));
  }
  annotateEdges();
  applyMarks();
  m_lastBuildMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
}

// ---- geometry lookups ---------------------------------------------------------------------------

int GraphView::boxOf(LayoutBox::Kind kind, int id) const {
  return m_boxByKey.value(boxKey(kind, id), -1);
}

int GraphView::boxOfNode(ir::NodeId n) const {
  if (!m_layout || !m_tree || n < 0 || n >= static_cast<int>(m_graph->nodes.size())) return -1;
  const ScopeId rep = m_layoutState.representative(*m_tree, n);
  return rep < 0 ? boxOf(LayoutBox::Kind::Op, n) : boxOf(LayoutBox::Kind::CollapsedScope, rep);
}

std::optional<QPointF> GraphView::nodeBoxCentre(ir::NodeId n) const {
  const int b = boxOfNode(n);
  if (b < 0) return std::nullopt;
  return m_boxItems[static_cast<size_t>(b)]->rect().center();
}

std::optional<QPointF> GraphView::scopeBoxCentre(ScopeId s) const {
  const int b = boxOf(LayoutBox::Kind::CollapsedScope, s);
  if (b < 0) return std::nullopt;
  return m_boxItems[static_cast<size_t>(b)]->rect().center();
}

std::optional<QPointF> GraphView::inputBoxCentre(ir::ValueId v) const {
  const int b = boxOf(LayoutBox::Kind::Input, v);
  if (b < 0) return std::nullopt;
  return m_boxItems[static_cast<size_t>(b)]->rect().center();
}

QRectF GraphView::clusterRect(ScopeId s) const {
  for (const GraphClusterItem* c : m_clusterItems)
    if (c->scope() == s) return c->rect();
  return {};
}

QColor GraphView::boxFill(int boxIndex) const {
  if (!m_layout || boxIndex < 0 || boxIndex >= static_cast<int>(m_layout->boxes.size())) return {};
  return fillOf(m_colouring, m_layout->boxes[static_cast<size_t>(boxIndex)]);
}

std::optional<QPointF> GraphView::centreOfScopeItem(ScopeId s) const {
  if (auto c = scopeBoxCentre(s)) return c;
  const QRectF r = clusterRect(s);
  if (!r.isEmpty()) {
    // A big frame: its top (the label) rather than its middle, so the user sees where it starts.
    const qreal visibleHalf = viewport()->height() / std::max(transform().m11(), 1e-6) / 2;
    return QPointF(r.center().x(), std::min(r.center().y(), r.top() + visibleHalf - 20));
  }
  // Hidden inside a collapsed ancestor: that ancestor's box.
  if (m_tree && s > kRootScope && s < m_tree->size()) {
    for (ScopeId a = m_tree->scope(s).parent; a > kRootScope; a = m_tree->scope(a).parent)
      if (auto c = scopeBoxCentre(a)) return c;
  }
  return std::nullopt;
}

std::optional<QPointF> GraphView::centreOfValue(ir::ValueId v) const {
  if (!m_graph || v < 0 || v >= static_cast<int>(m_graph->values.size())) return std::nullopt;
  if (auto c = inputBoxCentre(v)) return c;
  const ir::Value& value = m_graph->value(v);
  if (value.producer >= 0) return nodeBoxCentre(value.producer);
  if (!value.users.empty()) return nodeBoxCentre(value.users.front());
  return std::nullopt;
}

GraphView::Anchor GraphView::anchorForScope(ScopeId s) const {
  Anchor a{Anchor::Kind::Scope, s};
  if (auto c = centreOfScopeItem(s)) a.viewportPos = mapFromScene(*c);
  else a.centre = true;
  return a;
}

GraphView::Anchor GraphView::anchorForNode(ir::NodeId n) const {
  Anchor a{Anchor::Kind::Node, n};
  if (auto c = nodeBoxCentre(n)) a.viewportPos = mapFromScene(*c);
  else a.centre = true;
  return a;
}

void GraphView::applyAnchor(const Anchor& anchor) {
  std::optional<QPointF> target;
  switch (anchor.kind) {
    case Anchor::Kind::None: return;
    case Anchor::Kind::Keep: centerOn(anchor.scenePos); return;
    case Anchor::Kind::Fit: {
      const QRectF r = m_scene->sceneRect();
      const qreal fit = std::min(viewport()->width() / std::max(r.width(), 1.0),
                                 viewport()->height() / std::max(r.height(), 1.0));
      if (fit >= kReadableScale) {
        fitToWindow();
      } else {
        actualSize();
        // The start of the graph: the top (or the left, for left-to-right).
        if (m_options.direction == RankDirection::TopToBottom)
          centerOn(r.center().x(), r.top() + viewport()->height() / 2.0);
        else
          centerOn(r.left() + viewport()->width() / 2.0, r.center().y());
      }
      return;
    }
    case Anchor::Kind::Node: target = nodeBoxCentre(anchor.id); break;
    case Anchor::Kind::Scope: target = centreOfScopeItem(anchor.id); break;
    case Anchor::Kind::Value: target = centreOfValue(anchor.id); break;
  }
  if (!target) return;
  if (anchor.centre) {
    centerOn(*target);
    return;
  }
  // Keep the item where it was on screen: the viewport centre moves by the same offset.
  const qreal s = std::max(transform().m11(), 1e-6);
  const QPointF offset = (anchor.viewportPos - QPointF(viewport()->rect().center())) / s;
  centerOn(*target - offset);
}

// ---- selection ----------------------------------------------------------------------------------

void GraphView::setSelectionInternal(Selection s, bool emitSignal) {
  m_highlightedValue = -1;
  const bool changed = !(s == m_selection);
  m_selection = s;
  applySelection();
  updateBreadcrumbs();
  updateFocusActions();
  if (changed && emitSignal) Q_EMIT selectionChanged(m_selection);
}

void GraphView::applySelection() {
  for (GraphBoxItem* b : m_boxItems) b->setEmphasis(ItemEmphasis::Normal);
  for (GraphClusterItem* c : m_clusterItems) c->setEmphasis(ItemEmphasis::Normal);
  for (GraphEdgeItem* e : m_edgeItems) e->setEmphasis(ItemEmphasis::Normal);
  if (!m_layout || !m_graph) return;

  auto emphasiseBox = [&](int b, ItemEmphasis e) {
    if (b < 0) return;
    GraphBoxItem* item = m_boxItems[static_cast<size_t>(b)];
    if (item->emphasis() != ItemEmphasis::Selected) item->setEmphasis(e);
  };
  auto emphasiseEdgesOf = [&](int b) {
    if (b < 0) return;
    for (size_t i = 0; i < m_layout->edges.size(); ++i) {
      const LayoutEdge& e = m_layout->edges[i];
      if (e.from == b || e.to == b) m_edgeItems[i]->setEmphasis(ItemEmphasis::Highlighted);
    }
  };
  auto emphasiseValue = [&](ir::ValueId v, bool selectInput) {
    if (v < 0 || v >= static_cast<int>(m_graph->values.size())) return;
    const ir::Value& value = m_graph->value(v);
    const int input = boxOf(LayoutBox::Kind::Input, v);
    emphasiseBox(input, selectInput ? ItemEmphasis::Selected : ItemEmphasis::Highlighted);
    if (value.producer >= 0) emphasiseBox(boxOfNode(value.producer), ItemEmphasis::Highlighted);
    for (ir::NodeId u : value.users) emphasiseBox(boxOfNode(u), ItemEmphasis::Highlighted);
    for (size_t i = 0; i < m_layout->edges.size(); ++i) {
      const auto& vals = m_layout->edges[i].values;
      if (std::binary_search(vals.begin(), vals.end(), v))
        m_edgeItems[i]->setEmphasis(ItemEmphasis::Highlighted);
    }
  };

  switch (m_selection.kind) {
    case Selection::Kind::None: break;
    case Selection::Kind::Node: {
      const int b = boxOfNode(m_selection.id);
      emphasiseBox(b, ItemEmphasis::Selected);
      emphasiseEdgesOf(b);
      break;
    }
    case Selection::Kind::Scope: {
      const int b = boxOf(LayoutBox::Kind::CollapsedScope, m_selection.id);
      if (b >= 0) {
        emphasiseBox(b, ItemEmphasis::Selected);
        emphasiseEdgesOf(b);
        break;
      }
      for (GraphClusterItem* c : m_clusterItems)
        if (c->scope() == m_selection.id) c->setEmphasis(ItemEmphasis::Selected);
      break;
    }
    case Selection::Kind::Value: emphasiseValue(m_selection.id, true); break;
  }
  if (m_highlightedValue >= 0) emphasiseValue(m_highlightedValue, false);
}

void GraphView::select(Selection selection) {
  if (!m_graph || !m_tree) return;
  switch (selection.kind) {
    case Selection::Kind::None: setSelectionInternal({}, true); return;
    case Selection::Kind::Node:
      if (selection.id < 0 || selection.id >= static_cast<int>(m_graph->nodes.size())) return;
      reveal(selection.id);
      return;
    case Selection::Kind::Scope: {
      if (selection.id < 0 || selection.id >= m_tree->size()) return;
      leaveFocusUnlessInside(selection.id);
      CollapseState next = m_state;
      next.reveal(*m_tree, selection.id);
      setSelectionInternal(selection, true);
      changeState(next, {Anchor::Kind::Scope, selection.id, true});
      return;
    }
    case Selection::Kind::Value:
      if (selection.id < 0 || selection.id >= static_cast<int>(m_graph->values.size())) return;
      setSelectionInternal(selection, true);
      changeState(m_state, {Anchor::Kind::Value, selection.id, true});
      return;
  }
}

void GraphView::highlightValue(ir::ValueId value) {
  if (!m_graph) return;
  m_highlightedValue =
      value >= 0 && value < static_cast<int>(m_graph->values.size()) ? value : -1;
  applySelection();
}

void GraphView::reveal(ir::NodeId node) {
  if (!m_graph || !m_tree || node < 0 || node >= static_cast<int>(m_graph->nodes.size())) return;
  const ScopeId s = m_tree->scopeOfNode(node);
  leaveFocusUnlessInside(s);
  CollapseState next = m_state;
  next.reveal(*m_tree, s);
  if (s != kRootScope) next.setExpanded(s, true);
  setSelectionInternal(Selection::node(node), true);
  changeState(next, {Anchor::Kind::Node, node, true});
}

// ---- collapse state -----------------------------------------------------------------------------

void GraphView::setExpanded(ScopeId scope, bool expanded) {
  if (!m_tree || scope <= kRootScope || scope >= m_tree->size()) return;
  // Collapsing the focused scope or one around it shows the whole graph again.
  if (!expanded) leaveFocusUnlessInside(m_tree->scope(scope).parent);
  CollapseState next = m_state;
  next.setExpanded(scope, expanded);
  changeState(next, anchorForScope(scope));
}

void GraphView::leaveFocusUnlessInside(ScopeId s) {
  if (!m_tree || m_options.focus == kRootScope || m_tree->contains(m_options.focus, s)) return;
  m_options.focus = kRootScope;
  m_relayout = true;  // the caller's changeState draws the whole graph
  Q_EMIT focusScopeChanged(kRootScope);
  updateFocusActions();
}

void GraphView::setFocusScope(ScopeId scope) {
  if (!m_tree || !m_graph) return;
  if (scope < 0 || scope >= m_tree->size()) scope = kRootScope;
  if (scope == m_options.focus) return;
  const ScopeId previous = m_options.focus;
  m_options.focus = scope;
  m_state = focusState(*m_tree, m_state, scope);
  // Into a scope: fit it; back out: the scope left, where the user was.
  requestLayout(scope != kRootScope ? Anchor{Anchor::Kind::Fit}
                                    : Anchor{Anchor::Kind::Scope, previous, true});
  updateBreadcrumbs();
  updateFocusActions();
  Q_EMIT focusScopeChanged(scope);
}

void GraphView::focusSelection() {
  if (!m_tree) return;
  const ScopeId s = focusScopeFor(*m_tree, m_selection);
  if (s != kRootScope) setFocusScope(s);
}

void GraphView::updateFocusActions() {
  const bool graph = m_tree && m_graph;
  m_focusAction->setEnabled(graph && focusScopeFor(*m_tree, m_selection) != kRootScope &&
                            focusScopeFor(*m_tree, m_selection) != m_options.focus);
  m_unfocusAction->setEnabled(graph && m_options.focus != kRootScope);
}

void GraphView::updateBreadcrumbs() {
  if (!m_tree || !m_graph) {
    m_trail = {};
    m_breadcrumbs->setTrail({}, 0);
    return;
  }
  m_trail = studio::breadcrumbTrail(*m_tree, *m_graph, m_options.focus, m_selection);
  QStringList labels;
  for (ScopeId s : m_trail.scopes) {
    if (s == kRootScope) {
      const QString file = QFileInfo(QString::fromStdString(m_graph->sourceFile)).fileName();
      labels << (file.isEmpty() ? tr("(top)") : file);
    } else {
      labels << QString::fromStdString(m_tree->scope(s).label);
    }
  }
  m_breadcrumbs->setTrail(labels, m_trail.focusIndex);
}

void GraphView::expandAll() {
  if (!m_tree) return;
  CollapseState next = m_state;
  next.expandAll();
  next = focusState(*m_tree, next, m_options.focus);
  Anchor anchor{Anchor::Kind::Fit};
  switch (m_selection.kind) {
    case Selection::Kind::None: break;
    case Selection::Kind::Node: anchor = {Anchor::Kind::Node, m_selection.id, true}; break;
    case Selection::Kind::Scope: anchor = {Anchor::Kind::Scope, m_selection.id, true}; break;
    case Selection::Kind::Value: anchor = {Anchor::Kind::Value, m_selection.id, true}; break;
  }
  changeState(next, anchor);
}

void GraphView::collapseAll() {
  if (!m_tree) return;
  // Every scope collapsed, then a model wrapped in one module opened as at first (its modules,
  // not one box); inside a focus, its ancestors and itself stay open.
  CollapseState next = m_graph ? CollapseState::opening(*m_tree, *m_graph) : m_state;
  next = focusState(*m_tree, next, m_options.focus);
  changeState(next, {Anchor::Kind::Fit});
}

void GraphView::collapseRepeatedBlocks() {
  if (!m_tree) return;
  std::map<std::string, int> count;
  for (const Scope& s : m_tree->scopes())
    if (s.id != kRootScope && !s.structureKey.empty()) ++count[s.structureKey];
  CollapseState next = m_state;
  // A repeated single-op scope stays as it is: collapsing it would only hide the op's name.
  for (const Scope& s : m_tree->scopes())
    if (s.id != kRootScope && s.opCount >= 2 && !s.structureKey.empty() &&
        count[s.structureKey] > 1)
      next.setExpanded(s.id, false);
  next = focusState(*m_tree, next, m_options.focus);
  changeState(next, {Anchor::Kind::Fit});
}

void GraphView::setDirection(RankDirection direction) {
  if (direction == m_options.direction) return;
  m_options.direction = direction;
  Anchor anchor{Anchor::Kind::Fit};
  if (m_selection.kind == Selection::Kind::Node) anchor = {Anchor::Kind::Node, m_selection.id, true};
  if (m_selection.kind == Selection::Kind::Scope) anchor = {Anchor::Kind::Scope, m_selection.id, true};
  requestLayout(anchor);
}

// ---- colouring ----------------------------------------------------------------------------------

void GraphView::setColourBy(ColourBy mode) {
  m_colourBy = mode;
  m_partialVariants.clear();
  rebuildColouring();
  recolour();
}

void GraphView::rebuildColouring() {
  if (!m_graph || !m_tree) {
    m_colouring = NodeColouring();
    return;
  }
  if (!m_partialVariants.empty())
    m_colouring =
        variantColouring(*m_graph, *m_tree, m_partialVariants, tr("Partial program (variant)"));
  else if (m_overlay && colourByNeedsPlan(m_colourBy))
    m_colouring = planColouring(*m_overlay, *m_graph, *m_tree, m_colourBy, m_costRank);
  else
    m_colouring = NodeColouring(*m_graph, *m_tree, m_colourBy);
}

// ---- plan overlay -------------------------------------------------------------------------------

void GraphView::setPlan(std::shared_ptr<const PlanDocument> plan) {
  if (plan && (!plan->plan || !plan->imported ||
               (m_graph && plan->imported->nodes.size() != m_graph->nodes.size())))
    plan.reset();  // not a plan of this graph
  const bool had = m_overlay != nullptr;
  m_plan = std::move(plan);
  m_overlay = m_plan ? std::make_shared<const PlanOverlay>(m_plan) : nullptr;
  if (m_overlay && m_overlay->empty()) m_overlay.reset(), m_plan.reset();
  const bool has = m_overlay != nullptr;
  if (m_overlay && (m_costRank >= m_overlay->rankCount())) m_costRank = -1;
  bool modeChanged = false;
  if (has && !m_planSeen) {
    m_planSeen = true;
    modeChanged = m_colourBy != ColourBy::ShardingForm;
    m_colourBy = ColourBy::ShardingForm;
  } else if (!has && colourByNeedsPlan(m_colourBy)) {
    modeChanged = true;
    m_colourBy = ColourBy::OpFamily;
  }
  rebuildColouring();
  recolour();
  annotateEdges();
  if (had != has) Q_EMIT planModesAvailableChanged(has);
  if (modeChanged) Q_EMIT colourByChanged(m_colourBy);
}

bool GraphView::colourByAvailable(ColourBy mode) const {
  return !colourByNeedsPlan(mode) || m_overlay != nullptr;
}

int GraphView::costDevice() const {
  if (!m_overlay) return -1;
  return m_costRank >= 0 ? m_costRank : m_overlay->bottleneckRank();
}

void GraphView::setCostDevice(int rank) {
  m_costRank = rank < 0 || (m_overlay && rank >= m_overlay->rankCount()) ? -1 : rank;
  if (m_colourBy == ColourBy::DeviceCost && m_partialVariants.empty()) {
    rebuildColouring();
    recolour();
  }
}

void GraphView::setPartialVariants(std::vector<std::string> variantByNode) {
  const bool any = std::any_of(variantByNode.begin(), variantByNode.end(),
                               [](const std::string& v) { return !v.empty(); });
  // A program where nothing is decided yet still shows as a partial program (all neutral).
  m_partialVariants = variantByNode.empty() ? std::vector<std::string>{} : std::move(variantByNode);
  if (!any && !m_partialVariants.empty() && m_graph)
    m_partialVariants.resize(m_graph->nodes.size());
  rebuildColouring();
  recolour();
}

void GraphView::highlightNodes(const std::vector<ir::NodeId>& nodes) {
  m_highlightedNodes = nodes;
  applyMarks();
}

void GraphView::applyMarks() {
  std::vector<bool> marked(m_boxItems.size(), false);
  if (m_layout && m_graph)
    for (ir::NodeId n : m_highlightedNodes) {
      const int b = boxOfNode(n);
      if (b >= 0) marked[static_cast<size_t>(b)] = true;
    }
  for (size_t i = 0; i < m_boxItems.size(); ++i) m_boxItems[i]->setMarked(marked[i]);
}

bool GraphView::boxMarked(int boxIndex) const {
  return boxIndex >= 0 && boxIndex < static_cast<int>(m_boxItems.size()) &&
         m_boxItems[static_cast<size_t>(boxIndex)]->marked();
}

QString GraphView::edgeLabel(int edgeIndex) const {
  return edgeIndex >= 0 && edgeIndex < static_cast<int>(m_edgeNotes.size())
             ? m_edgeNotes[static_cast<size_t>(edgeIndex)].label
             : QString();
}

QString GraphView::edgeToolTip(int edgeIndex) const {
  return edgeIndex >= 0 && edgeIndex < static_cast<int>(m_edgeNotes.size())
             ? m_edgeNotes[static_cast<size_t>(edgeIndex)].toolTip
             : QString();
}

bool GraphView::edgeConverted(int edgeIndex) const {
  return edgeIndex >= 0 && edgeIndex < static_cast<int>(m_edgeNotes.size()) &&
         m_edgeNotes[static_cast<size_t>(edgeIndex)].converted;
}

void GraphView::annotateEdges() {
  m_edgeNotes.clear();
  if (m_overlay && m_layout && m_graph && m_tree)
    m_edgeNotes = studio::annotateEdges(*m_overlay, *m_graph, *m_tree, m_layoutState, *m_layout);
  for (size_t i = 0; i < m_edgeItems.size(); ++i) {
    static const EdgeAnnotation kNone;  // without a plan: the plain style
    const EdgeAnnotation& note = i < m_edgeNotes.size() ? m_edgeNotes[i] : kNone;
    m_edgeItems[i]->setPlanStyle(note.stroke, note.converted, note.label, note.collective);
    m_edgeItems[i]->setToolTip(note.toolTip);
  }
  refreshLegend();
}

// ---- "Compute under variant" --------------------------------------------------------------------

void GraphView::startRuleVariants() {
  if (!m_graph) return;
  auto elapsed = std::make_shared<double>(0);
  m_variantElapsed = elapsed;
  m_variantsFor = m_graph.get();
  m_variantWatcher->setFuture(QtConcurrent::run([graph = m_graph, elapsed] {
    QElapsedTimer timer;
    timer.start();
    auto names = std::make_shared<const VariantNames>(ruleVariantNames(*graph));
    *elapsed = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    return names;
  }));
}

void GraphView::waitForRuleVariants() {
  if (m_ruleVariants || !m_graph) return;
  if (m_variantsFor != m_graph.get()) startRuleVariants();
  {
    m_variantWatcher->waitForFinished();
    if (m_variantWatcher->future().resultCount() == 0) return;
    auto names = m_variantWatcher->result();
    if (names && names->size() == m_graph->nodes.size()) m_ruleVariants = names;
    if (m_variantElapsed) m_ruleVariantsMs = *m_variantElapsed;
  }
}

void GraphView::addPinMenu(QMenu& menu, ir::NodeId node, ScopeId scope) {
  waitForRuleVariants();
  if (!m_ruleVariants || !m_graph || !m_tree) return;
  const VariantNames& all = *m_ruleVariants;
  std::vector<std::string> names;
  std::string planned;  // the plan's variant of the node, if any
  if (node >= 0) {
    names = all[static_cast<size_t>(node)];
    if (m_overlay && node < m_overlay->nodeCount()) planned = m_overlay->node(node).variant;
  } else {
    // A scope: the union of its nodes' variants, "replicate" first, then by name.
    std::set<std::string> unique;
    for (const ir::Node& n : m_graph->nodes)
      if (m_tree->contains(scope, m_tree->scopeOfNode(n.id)))
        unique.insert(all[static_cast<size_t>(n.id)].begin(), all[static_cast<size_t>(n.id)].end());
    names.assign(unique.begin(), unique.end());
    std::stable_partition(names.begin(), names.end(),
                          [](const std::string& v) { return v == "replicate"; });
  }
  if (names.empty()) return;
  QMenu* sub = menu.addMenu(tr("Compute under variant"));
  sub->setObjectName(QStringLiteral("graph.computeUnderVariant"));
  sub->setToolTipsVisible(true);
  for (const std::string& name : names) {
    const PinChoice choice = node >= 0 ? pinForNode(*m_graph, all, node, name)
                                       : pinForScope(*m_graph, *m_tree, all, scope, name);
    const QString pattern = QString::fromStdString(choice.pattern);
    const QString variant = QString::fromStdString(name);
    QAction* a = sub->addAction(variant);
    a->setData(pattern);
    if (!planned.empty() && name == planned) {
      a->setCheckable(true);
      a->setChecked(true);  // what the plan computes it under now
    }
    QString tip = tr("Re-plan with the pin %1=%2: %n node(s) with this variant match", nullptr,
                     choice.selected)
                      .arg(pattern, variant);
    if (!choice.exact())
      tip += tr(" (%n outside what you clicked: a glob on the scope or op cannot tell them apart)",
                nullptr, choice.selected - choice.wanted);
    a->setToolTip(tip);
    a->setStatusTip(tip);
    connect(a, &QAction::triggered, this,
            [this, pattern, variant] { Q_EMIT pinRequested(pattern, variant); });
  }
}

void GraphView::setColouring(NodeColouring colouring) {
  m_colourBy = colouring.mode();
  m_colouring = std::move(colouring);
  recolour();
}

void GraphView::recolour() {
  if (m_layout) {
    m_colouring.fitRange(*m_layout);
    for (size_t i = 0; i < m_boxItems.size() && i < m_layout->boxes.size(); ++i)
      m_boxItems[i]->setFill(fillOf(m_colouring, m_layout->boxes[i]));
  }
  refreshLegend();
}

void GraphView::refreshLegend() {
  std::vector<std::pair<QString, QColor>> edgeForms;
  if (m_layout && m_graph && m_overlay && !m_edgeNotes.empty())
    edgeForms = edgeFormLegend(*m_overlay, *m_layout);
  m_legend->setLegend(m_layout && m_graph ? m_colouring.legend(*m_layout) : ColourLegend{},
                      std::move(edgeForms));
  positionOverlays();
}

void GraphView::positionOverlays() {
  const QRect vp = viewport()->geometry();
  m_legend->move(vp.right() - m_legend->width() - 10, vp.top() + 10);
  m_busyLabel->adjustSize();
  m_busyLabel->move(vp.left() + 10, vp.top() + 10);
  m_minimap->refresh();  // places itself clear of the legend
  m_breadcrumbs->setGeometry(0, 0, width(), vp.top());
  m_legend->raise();
  m_busyLabel->raise();
  m_minimap->raise();
}

QRectF GraphView::visibleSceneRect() const {
  return mapToScene(viewport()->rect()).boundingRect();
}

void GraphView::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  m_minimap->refresh();
}

// ---- zoom ---------------------------------------------------------------------------------------

void GraphView::zoomBy(qreal factor) {
  const qreal current = transform().m11();
  const qreal target = std::clamp(current * factor, kMinScale, kMaxScale);
  if (current > 0) scale(target / current, target / current);
  m_minimap->refresh();
}

void GraphView::zoomIn() {
  const auto anchor = transformationAnchor();
  setTransformationAnchor(QGraphicsView::AnchorViewCenter);
  zoomBy(1.25);
  setTransformationAnchor(anchor);
}

void GraphView::zoomOut() {
  const auto anchor = transformationAnchor();
  setTransformationAnchor(QGraphicsView::AnchorViewCenter);
  zoomBy(1 / 1.25);
  setTransformationAnchor(anchor);
}

void GraphView::fitToWindow() {
  const QRectF r = m_scene->sceneRect();
  if (r.isEmpty()) return;
  // The legend's column is left free, so that it covers no box: the drawing is scaled into the
  // rest, and put against the left edge where centring would reach under the legend.
  const QRect vp = viewport()->rect();
  const int reserve = m_legend->isVisible() ? m_legend->width() + 20 : 0;
  const qreal s = std::min({std::max(vp.width() - reserve, 1) / std::max(r.width(), 1.0),
                            vp.height() / std::max(r.height(), 1.0), kMaxFitScale}) *
                  0.98;
  resetTransform();
  scale(s, s);
  const bool left = reserve > 0 && (vp.width() - r.width() * s) / 2 < reserve;
  setAlignment(left ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignCenter);
  centerOn(r.center());
  m_minimap->refresh();
}

void GraphView::actualSize() {
  resetTransform();
  m_minimap->refresh();
}

QRectF GraphView::selectionRect() const {
  switch (m_selection.kind) {
    case Selection::Kind::None: return {};
    case Selection::Kind::Node: {
      const int b = boxOfNode(m_selection.id);
      return b >= 0 ? m_boxItems[static_cast<size_t>(b)]->rect() : QRectF();
    }
    case Selection::Kind::Scope: {
      const int b = boxOf(LayoutBox::Kind::CollapsedScope, m_selection.id);
      return b >= 0 ? m_boxItems[static_cast<size_t>(b)]->rect() : clusterRect(m_selection.id);
    }
    case Selection::Kind::Value: {
      // The producer and every consumer.
      QRectF r;
      for (const GraphBoxItem* b : m_boxItems)
        if (b->emphasis() != ItemEmphasis::Normal) r = r.united(b->rect());
      return r;
    }
  }
  return {};
}

void GraphView::fitToSelection() {
  const QRectF r = selectionRect();
  if (r.isEmpty()) {
    fitToWindow();
    return;
  }
  fitInView(r.adjusted(-60, -60, 60, 60), Qt::KeepAspectRatio);
  if (transform().m11() > 2.0) {
    resetTransform();
    scale(2.0, 2.0);
    centerOn(r.center());
  }
  m_minimap->refresh();
}

// ---- mouse --------------------------------------------------------------------------------------

QGraphicsItem* GraphView::hitItem(const QPoint& viewPos) const {
  QGraphicsItem* cluster = nullptr;
  for (QGraphicsItem* item : items(viewPos)) {
    if (item->type() == GraphBoxItem::Type) return item;
    if (!cluster && item->type() == GraphClusterItem::Type) cluster = item;
  }
  return cluster;
}

void GraphView::wheelEvent(QWheelEvent* event) {
  const QPoint delta = event->angleDelta();
  if (delta.y() == 0) {
    QGraphicsView::wheelEvent(event);  // horizontal wheels scroll
    return;
  }
  const auto anchor = transformationAnchor();
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  zoomBy(std::pow(1.0015, delta.y()));
  setTransformationAnchor(anchor);
  event->accept();
}

void GraphView::mousePressEvent(QMouseEvent* event) {
  m_pressPos = event->position().toPoint();
  m_pressed = event->button() == Qt::LeftButton;
  QGraphicsView::mousePressEvent(event);
}

void GraphView::mouseReleaseEvent(QMouseEvent* event) {
  QGraphicsView::mouseReleaseEvent(event);
  if (!m_pressed || event->button() != Qt::LeftButton) return;
  m_pressed = false;
  const QPoint pos = event->position().toPoint();
  if ((pos - m_pressPos).manhattanLength() >= QApplication::startDragDistance()) return;  // a pan
  Selection s;
  if (QGraphicsItem* item = hitItem(pos)) {
    if (item->type() == GraphBoxItem::Type) {
      auto* box = static_cast<GraphBoxItem*>(item);
      switch (box->kind()) {
        case LayoutBox::Kind::Op: s = Selection::node(box->id()); break;
        case LayoutBox::Kind::CollapsedScope: s = Selection::scope(box->id()); break;
        case LayoutBox::Kind::Input: s = Selection::value(box->id()); break;
      }
    } else {
      s = Selection::scope(static_cast<GraphClusterItem*>(item)->scope());
    }
  }
  setSelectionInternal(s, true);
}

void GraphView::mouseDoubleClickEvent(QMouseEvent* event) {
  QGraphicsItem* item = hitItem(event->position().toPoint());
  if (!item || event->button() != Qt::LeftButton) {
    QGraphicsView::mouseDoubleClickEvent(event);
    return;
  }
  if (item->type() == GraphBoxItem::Type) {
    auto* box = static_cast<GraphBoxItem*>(item);
    if (box->kind() == LayoutBox::Kind::CollapsedScope) setExpanded(box->id(), true);
  } else {
    const ScopeId s = static_cast<GraphClusterItem*>(item)->scope();
    setSelectionInternal(Selection::scope(s), true);
    setExpanded(s, false);
  }
  event->accept();
}

void GraphView::contextMenuEvent(QContextMenuEvent* event) {
  if (!m_graph || !m_tree) return;
  QMenu menu(this);
  QGraphicsItem* item = hitItem(event->pos());
  auto scopeName = [&](ScopeId s) {
    return QString::fromStdString(m_tree->scope(s).label);
  };
  if (item && item->type() == GraphBoxItem::Type) {
    auto* box = static_cast<GraphBoxItem*>(item);
    if (box->kind() == LayoutBox::Kind::CollapsedScope) {
      const ScopeId s = box->id();
      menu.addAction(tr("Expand %1").arg(scopeName(s)), this, [this, s] { setExpanded(s, true); });
      menu.addAction(tr("Show Only %1").arg(scopeName(s)) + QStringLiteral("\tF"), this, [this, s] { setFocusScope(s); });
      addPinMenu(menu, ir::kNone, s);
    } else if (box->kind() == LayoutBox::Kind::Op) {
      const ScopeId s = m_tree->scopeOfNode(box->id());
      if (s != kRootScope) {
        menu.addAction(tr("Collapse %1").arg(scopeName(s)), this,
                       [this, s] { setExpanded(s, false); });
        if (s != m_options.focus)
          menu.addAction(tr("Show Only %1").arg(scopeName(s)) + QStringLiteral("\tF"), this, [this, s] { setFocusScope(s); });
      }
      addPinMenu(menu, box->id(), kRootScope);
    }
  } else if (item) {
    const ScopeId s = static_cast<GraphClusterItem*>(item)->scope();
    menu.addAction(tr("Collapse %1").arg(scopeName(s)), this, [this, s] { setExpanded(s, false); });
    if (s != m_options.focus)
      menu.addAction(tr("Show Only %1").arg(scopeName(s)) + QStringLiteral("\tF"), this, [this, s] { setFocusScope(s); });
    addPinMenu(menu, ir::kNone, s);
  }
  if (m_options.focus != kRootScope) {
    menu.addSeparator();
    menu.addAction(m_unfocusAction);
  }
  if (!menu.isEmpty()) menu.addSeparator();
  menu.addAction(tr("Expand All"), this, &GraphView::expandAll);
  menu.addAction(tr("Collapse All"), this, &GraphView::collapseAll);
  menu.addAction(tr("Collapse Repeated Blocks"), this, &GraphView::collapseRepeatedBlocks);
  menu.addSeparator();
  menu.addAction(tr("Fit to Window"), this, &GraphView::fitToWindow);
  menu.exec(event->globalPos());
}

void GraphView::keyPressEvent(QKeyEvent* event) {
  const bool plain = (event->modifiers() & ~Qt::KeypadModifier) == Qt::NoModifier;
  if (event->key() == Qt::Key_Escape) {
    if (m_options.focus != kRootScope) {
      setFocusScope(kRootScope);
      event->accept();
      return;
    }
    if (!m_selection.empty()) {
      setSelectionInternal({}, true);
      event->accept();
      return;
    }
  }
  if (plain && m_layout && m_graph && m_tree) {
    if (auto move = navigationMoveForKey(event->key(), m_options.direction)) {
      navigate(*move);
      event->accept();  // at the end of a path the view stays: arrows do not scroll it
      return;
    }
    switch (event->key()) {
      case Qt::Key_Return:
      case Qt::Key_Enter:
        if (m_selection.kind == Selection::Kind::Scope &&
            boxOf(LayoutBox::Kind::CollapsedScope, m_selection.id) >= 0) {
          setExpanded(m_selection.id, true);
          event->accept();
          return;
        }
        break;
      case Qt::Key_Backspace: {
        // Collapses the selected frame, or the scope around the selected box.
        ScopeId s = -1;
        if (m_selection.kind == Selection::Kind::Scope &&
            boxOf(LayoutBox::Kind::CollapsedScope, m_selection.id) < 0)
          s = m_selection.id;
        else if (m_selection.kind == Selection::Kind::Scope)
          s = m_tree->scope(m_selection.id).parent;
        else if (m_selection.kind == Selection::Kind::Node)
          s = m_tree->scopeOfNode(m_selection.id);
        if (s > kRootScope) {
          setSelectionInternal(Selection::scope(s), true);
          setExpanded(s, false);
          event->accept();
          return;
        }
        break;
      }
      case Qt::Key_F:
        if (m_focusAction->isEnabled()) {
          focusSelection();
          event->accept();
          return;
        }
        break;
      default: break;
    }
  }
  QGraphicsView::keyPressEvent(event);
}

int GraphView::boxInsideScope(ScopeId s) const {
  if (!m_layout || !m_tree) return -1;
  for (size_t i = 0; i < m_layout->boxes.size(); ++i) {
    const LayoutBox& b = m_layout->boxes[i];
    if ((b.kind == LayoutBox::Kind::Op && m_tree->contains(s, m_tree->scopeOfNode(b.id))) ||
        (b.kind == LayoutBox::Kind::CollapsedScope && m_tree->contains(s, b.id)))
      return static_cast<int>(i);
  }
  return -1;
}

int GraphView::selectedBox() const {
  switch (m_selection.kind) {
    case Selection::Kind::None: return -1;
    case Selection::Kind::Node: return boxOfNode(m_selection.id);
    case Selection::Kind::Scope: return boxOf(LayoutBox::Kind::CollapsedScope, m_selection.id);
    case Selection::Kind::Value: {
      const int input = boxOf(LayoutBox::Kind::Input, m_selection.id);
      if (input >= 0 || !m_graph || m_selection.id >= static_cast<int>(m_graph->values.size()))
        return input;
      const ir::Value& v = m_graph->value(m_selection.id);
      return v.producer >= 0 ? boxOfNode(v.producer) : -1;
    }
  }
  return -1;
}

bool GraphView::navigate(NavigationMove move) {
  if (!m_layout || m_layout->boxes.empty()) return false;
  const LayoutNavigator nav(*m_layout, m_options.direction);
  int from = selectedBox();
  int to = -1;
  if (from < 0 && m_selection.kind == Selection::Kind::Scope) {
    // A frame: into it along the flow, else from its first box.
    to = boxInsideScope(m_selection.id);
    if (move != NavigationMove::Next && to >= 0) to = nav.move(to, move);
  } else if (from < 0) {
    to = nav.first();
  } else {
    to = nav.move(from, move);
  }
  if (to < 0) return false;
  setSelectionInternal(selectionForBox(*m_layout, to), true);
  const QRectF r = m_boxItems[static_cast<size_t>(to)]->rect();
  ensureVisible(r, 60, 60);
  return true;
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  m_minimap->refresh();
  positionOverlays();
}

// ---- export -------------------------------------------------------------------------------------

bool GraphView::renderTo(QPainter& painter, const QRectF& target) {
  if (!m_layout) return false;
  painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  painter.fillRect(target, Qt::white);
  m_scene->render(&painter, target, m_scene->sceneRect(), Qt::KeepAspectRatio);
  return true;
}

bool GraphView::exportSvg(const QString& path) {
  if (!m_layout) return false;
  const QRectF r = m_scene->sceneRect();
  const QSize size(static_cast<int>(std::ceil(r.width())), static_cast<int>(std::ceil(r.height())));
  {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(size);
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setTitle(QStringLiteral("HAP Studio graph"));
    if (m_graph) svg.setDescription(QString::fromStdString(m_graph->sourceFile));
    QPainter painter;
    if (!painter.begin(&svg)) return false;
    renderTo(painter, QRectF(QPointF(0, 0), QSizeF(size)));
    if (!painter.end()) return false;
  }
  QFile f(path);
  return f.exists() && f.size() > 0;
}

bool GraphView::exportPng(const QString& path) {
  if (!m_layout) return false;
  const QRectF r = m_scene->sceneRect();
  // Twice the scene's resolution, limited to about 200 megapixels for huge graphs.
  qreal factor = 2.0;
  const qreal pixels = r.width() * r.height() * factor * factor;
  if (pixels > 2e8) factor *= std::sqrt(2e8 / pixels);
  QImage image(static_cast<int>(std::ceil(r.width() * factor)),
               static_cast<int>(std::ceil(r.height() * factor)), QImage::Format_ARGB32_Premultiplied);
  if (image.isNull()) return false;
  QPainter painter(&image);
  renderTo(painter, QRectF(QPointF(0, 0), QSizeF(image.size())));
  painter.end();
  return image.save(path, "PNG");
}

bool GraphView::exportDot(const QString& path) {
  if (!m_graph || !m_tree) return false;
  const std::string dot = layoutDot(*m_graph, *m_tree, m_layoutState, m_options);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
  const qint64 written = f.write(dot.data(), static_cast<qint64>(dot.size()));
  return written == static_cast<qint64>(dot.size()) && f.flush();
}

}  // namespace hap::studio
