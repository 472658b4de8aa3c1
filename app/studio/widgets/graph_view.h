// The graph view: draws a Layout of the imported graph and lets the user explore it (issue 17 §3).
//
// The view owns the collapse state. Every change to it (expand, collapse, reveal, direction)
// requests a new layout from its LayoutJob off the GUI thread; until the result arrives the old
// drawing stays up with a "Laying out…" overlay, and when it arrives the item the user acted on is
// kept where it was on screen (or centred, for reveal and select). Selection is the app-wide
// Selection; the view emits selectionChanged only when the user (or select()) changes it.
//
// With a plan (setPlan, issue 18 item 3) the plan colour modes become available, edges take the
// colour of the form their value is produced in, and an edge whose consumer reads the value after
// a conversion is dashed and labelled ("AG", "RS", "A2A", ...; the full text in its tooltip).
// What each edge shows is computed in core (annotateEdges and edgeFormLegend, plan_overlay.h);
// the view only draws it.
// The context menu of a node or scope offers "Compute under variant", which emits pinRequested.
//
// Navigation (issue 31; the logic in core/graph/graph_navigation.h): a minimap at the bottom-right
// (GraphMinimap) while the view does not show the whole drawing; arrow keys follow edges from the
// selected box (along the flow to a successor or predecessor, across it among siblings), Enter
// expands a selected collapsed scope, Backspace collapses the selection's scope; a breadcrumb bar
// above the drawing (GraphBreadcrumbs) shows the selection's scope path; F (or the context menu,
// or a crumb) shows only the selected scope, and Esc or the first crumb shows the whole graph.

#include <QFutureWatcher>
#include <QGraphicsView>
#include <QHash>
#include <QPointer>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/studio/core/graph/colouring.h"
#include "app/studio/core/graph/graph_layout.h"
#include "app/studio/core/graph/graph_navigation.h"
#include "app/studio/core/documents/plan_document.h"
#include "app/studio/core/graph/plan_overlay.h"
#include "app/studio/core/graph/scope_tree.h"
#include "app/studio/core/documents/selection.h"

class QAction;
class QLabel;
class QMenu;

namespace hap::studio {

class LayoutJob;
class GraphBoxItem;
class GraphClusterItem;
class GraphEdgeItem;
class GraphLegendOverlay;
class GraphMinimap;
class GraphBreadcrumbs;

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit GraphView(QWidget* parent = nullptr);
  ~GraphView() override;

  // Shows `graph`: everything collapsed but the root, nothing selected, then lays it out. A plan
  // set before stays only if it has the new graph's node count; partial variants and highlights
  // are cleared.
  void setGraph(std::shared_ptr<const ir::Graph> graph, std::shared_ptr<const ScopeTree> tree);
  void clear();

  const ir::Graph* graph() const { return m_graph.get(); }
  const ScopeTree* scopeTree() const { return m_tree.get(); }
  // The drawn layout (null before the first one arrives) and the state it was computed for.
  const Layout* currentLayout() const { return m_layout.get(); }
  const CollapseState& collapseState() const { return m_state; }
  const CollapseState& layoutState() const { return m_layoutState; }
  Selection selection() const { return m_selection; }
  bool layoutBusy() const;
  RankDirection direction() const { return m_options.direction; }
  ColourBy colourBy() const { return m_colourBy; }
  const NodeColouring& colouring() const { return m_colouring; }

  // Scene-coordinate centre of the box drawing node n (itself or its collapsed scope), of a
  // collapsed scope's box, of a graph input's box; nullopt when not drawn.
  std::optional<QPointF> nodeBoxCentre(ir::NodeId n) const;
  std::optional<QPointF> scopeBoxCentre(ScopeId s) const;
  std::optional<QPointF> inputBoxCentre(ir::ValueId v) const;
  // The frame of an expanded scope (its label strip is at the top), or an empty rect.
  QRectF clusterRect(ScopeId s) const;
  // The fill a box has now (tests and screenshots check colouring through it).
  QColor boxFill(int boxIndex) const;
  // The scene rectangle the viewport shows now.
  QRectF visibleSceneRect() const;
  // "Show only this scope": the focused scope (kRootScope: the whole graph).
  ScopeId focusScope() const { return m_options.focus; }
  GraphMinimap* minimap() const { return m_minimap; }
  GraphBreadcrumbs* breadcrumbs() const { return m_breadcrumbs; }
  // The breadcrumb trail shown now (scopes root first).
  const BreadcrumbTrail& breadcrumbTrail() const { return m_trail; }
  // The box the selection stands on in the drawing, or -1 (an expanded scope's frame: -1).
  int selectedBox() const;
  // "Show Only This Scope" (F) and "Show Whole Graph" (Esc while focused), for menus.
  QAction* focusAction() const { return m_focusAction; }
  QAction* unfocusAction() const { return m_unfocusAction; }
  // How long building the scene for the last layout took, in milliseconds.
  double lastSceneBuildMs() const { return m_lastBuildMs; }

  // ---- plan overlay ----
  // Shows `plan` over the graph (null clears). The plan must be for the drawn graph (same node
  // ids; a plan with another node count is refused: treated as null). The plan modes of ColourBy
  // become available (planModesAvailableChanged); the first plan this view gets switches the
  // colouring to ShardingForm (colourByChanged); clearing the plan while a plan mode is shown
  // falls back to OpFamily (colourByChanged).
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  const std::shared_ptr<const PlanDocument>& plan() const { return m_plan; }
  const PlanOverlay* planOverlay() const { return m_overlay.get(); }
  // False for the plan modes while no plan is set.
  bool colourByAvailable(ColourBy mode) const;
  // The DeviceCost device in use: the one setCostDevice chose, else the plan's bottleneck (-1
  // without a plan).
  int costDevice() const;
  bool partialVariantsShown() const { return !m_partialVariants.empty(); }
  const std::vector<ir::NodeId>& highlightedNodes() const { return m_highlightedNodes; }
  // What the overlay drew: the label on edge i ("" when none), its tooltip, whether it is drawn
  // as a conversion; whether box i carries the highlightNodes mark.
  QString edgeLabel(int edgeIndex) const;
  QString edgeToolTip(int edgeIndex) const;
  bool edgeConverted(int edgeIndex) const;
  bool boxMarked(int boxIndex) const;
  // The rule variant names per node of the drawn graph (synth::Theory), computed once per graph
  // off the GUI thread; null until ready. waitForRuleVariants blocks until they are.
  std::shared_ptr<const std::vector<std::vector<std::string>>> ruleVariants() const {
    return m_ruleVariants;
  }
  void waitForRuleVariants();
  double ruleVariantsMs() const { return m_ruleVariantsMs; }  // how long the last computation took

  // Draws a layout computed elsewhere for the current graph and collapse state (benchmarks,
  // tests). Normal use goes through the LayoutJob.
  void showLayout(std::shared_ptr<const Layout> layout);

  bool exportSvg(const QString& path);
  bool exportPng(const QString& path);  // at twice the scene's resolution
  bool exportDot(const QString& path);  // layoutDot: the Graphviz input for what is shown

 public Q_SLOTS:
  void zoomIn();
  void zoomOut();
  void fitToWindow();
  void actualSize();
  void fitToSelection();
  void setDirection(hap::studio::RankDirection direction);
  void expandAll();
  void collapseAll();
  // Collapses every scope whose structureKey occurs more than once (repeated blocks).
  void collapseRepeatedBlocks();
  void setExpanded(hap::studio::ScopeId scope, bool expanded);
  // Shows only `scope` (its ancestors and itself expanded); kRootScope shows the whole graph.
  void setFocusScope(hap::studio::ScopeId scope);
  // Focuses the selected scope (a node: its scope); nothing at the top level.
  void focusSelection();
  // One step of keyboard navigation from the selected box (graph_navigation.h); false when there
  // is nowhere to go.
  bool navigate(hap::studio::NavigationMove move);
  // Expands the node's scope and its ancestors, then selects and centres the node.
  void reveal(hap::ir::NodeId node);
  // Selects from outside: a node or scope is revealed first; a value highlights its producer,
  // consumers and the edges carrying it.
  void select(hap::studio::Selection selection);
  void highlightValue(hap::ir::ValueId value);
  void setColourBy(hap::studio::ColourBy mode);
  // A colouring computed elsewhere (kept until the mode, the plan or the partial program changes).
  void setColouring(hap::studio::NodeColouring colouring);
  // Colours nodes by a partial program of the live search (variant names per imported node, ""
  // for nodes not decided yet) over whatever mode is chosen; an empty vector returns to the mode.
  // Choosing a mode (setColourBy) also ends it.
  void setPartialVariants(std::vector<std::string> variantByNode);
  // The device DeviceCost shows (a rank of the plan's devices; -1: the bottleneck).
  void setCostDevice(int rank);
  // Marks these nodes with a thick orange outline (or the collapsed scopes holding them); empty
  // clears. Kept across relayouts until replaced.
  void highlightNodes(const std::vector<hap::ir::NodeId>& nodes);

 Q_SIGNALS:
  void selectionChanged(hap::studio::Selection selection);
  void layoutFinished();
  void layoutFailed(QString message);
  void busyChanged(bool busy);
  // "Compute under variant > X" on a node or scope: re-plan with the pin pattern=X
  // (engine/synth/search.h Pin; the pattern selects what was clicked as far as a glob can).
  void pinRequested(QString pattern, QString variant);
  // The plan modes became available (a plan was set) or not (cleared).
  void planModesAvailableChanged(bool available);
  // The view changed its colour mode by itself (the first plan; the plan cleared under a plan
  // mode). Not emitted for setColourBy.
  void colourByChanged(hap::studio::ColourBy mode);
  void focusScopeChanged(hap::studio::ScopeId scope);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;

 private:
  // What to keep in place across a relayout.
  struct Anchor {
    // Fit: fit to window when readable, else actual size at the start of the graph.
    enum class Kind { None, Node, Scope, Value, Fit, Keep };
    Anchor() = default;
    Anchor(Kind k, int i = -1, bool c = false) : kind(k), id(i), centre(c) {}
    Kind kind = Kind::None;
    int id = -1;
    bool centre = false;      // centre it, rather than keep its viewport position
    QPointF viewportPos;      // where it was on screen
    QPointF scenePos;         // Keep: the scene point at the viewport's centre
  };

  void requestLayout(Anchor anchor);
  void dropDrawing();  // the drawn layout and its items
  void onLayoutReady(std::shared_ptr<const Layout> layout, quint64 generation);
  void buildScene(const Layout& layout);
  void applyAnchor(const Anchor& anchor);
  void applySelection();
  void setSelectionInternal(Selection s, bool emitSignal);
  void recolour();
  void rebuildColouring();  // m_colouring from the mode, the plan and the partial program
  void annotateEdges();     // the plan's edge annotations (plan_overlay.h) on the drawn edges
  void applyMarks();        // highlightNodes' outlines on the drawn boxes
  void startRuleVariants();
  void addPinMenu(QMenu& menu, ir::NodeId node, ScopeId scope);
  void refreshLegend();     // the legend for what is drawn, then positionOverlays()
  void positionOverlays();  // legend and busy label at the viewport's corners
  Anchor anchorForScope(ScopeId s) const;
  Anchor anchorForNode(ir::NodeId n) const;
  QGraphicsItem* hitItem(const QPoint& viewPos) const;
  std::optional<QPointF> centreOfScopeItem(ScopeId s) const;  // box or cluster
  std::optional<QPointF> centreOfValue(ir::ValueId v) const;  // its producer's or input's box
  int boxOfNode(ir::NodeId n) const;  // in the drawn layout, or -1
  int boxOf(LayoutBox::Kind kind, int id) const;
  QRectF selectionRect() const;
  void zoomBy(qreal factor);
  void changeState(const CollapseState& next, Anchor anchor);
  // Leaves the focus when `s` lies outside it (a selection or reveal elsewhere in the graph).
  void leaveFocusUnlessInside(ScopeId s);
  void updateBreadcrumbs();
  void updateFocusActions();
  int boxInsideScope(ScopeId s) const;  // the first drawn box inside an expanded scope, or -1
  bool renderTo(QPainter& painter, const QRectF& target);

  std::shared_ptr<const ir::Graph> m_graph;
  std::shared_ptr<const ScopeTree> m_tree;
  CollapseState m_state;        // what the user asked for
  CollapseState m_pendingState; // of the latest layout request
  CollapseState m_layoutState;  // of the drawn layout
  LayoutOptions m_options;
  std::shared_ptr<const Layout> m_layout;
  Anchor m_pendingAnchor;
  bool m_firstLayout = true;
  bool m_relayout = false;  // the options changed (the focus left): changeState must lay out

  LayoutJob* m_job;
  QGraphicsScene* m_scene;
  std::vector<GraphBoxItem*> m_boxItems;        // by box index
  std::vector<GraphClusterItem*> m_clusterItems;
  std::vector<GraphEdgeItem*> m_edgeItems;      // by edge index
  QHash<qint64, int> m_boxByKey;                // (kind, id) -> box index

  Selection m_selection;
  ColourBy m_colourBy = ColourBy::OpFamily;
  NodeColouring m_colouring;
  ir::ValueId m_highlightedValue = -1;  // highlightValue's overlay, cleared by the next selection
  GraphLegendOverlay* m_legend;
  GraphMinimap* m_minimap;
  GraphBreadcrumbs* m_breadcrumbs;
  BreadcrumbTrail m_trail;
  QAction* m_focusAction;
  QAction* m_unfocusAction;
  QLabel* m_busyLabel;
  std::shared_ptr<const PlanDocument> m_plan;
  std::shared_ptr<const PlanOverlay> m_overlay;
  bool m_planSeen = false;  // a plan was set once: ShardingForm is not forced again
  int m_costRank = -1;
  std::vector<std::string> m_partialVariants;
  std::vector<ir::NodeId> m_highlightedNodes;
  std::vector<EdgeAnnotation> m_edgeNotes;  // by edge index (annotateEdges); empty without a plan
  using VariantNames = std::vector<std::vector<std::string>>;
  std::shared_ptr<const VariantNames> m_ruleVariants;
  QFutureWatcher<std::shared_ptr<const VariantNames>>* m_variantWatcher;
  const ir::Graph* m_variantsFor = nullptr;  // the graph the watched computation is for
  std::shared_ptr<double> m_variantElapsed;  // written by the computation, read when it is done
  double m_ruleVariantsMs = 0;
  QPoint m_pressPos;
  bool m_pressed = false;
  double m_lastBuildMs = 0;
};

}  // namespace hap::studio
