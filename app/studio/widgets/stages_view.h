// The stages view (issue 18 item 4): the simulator's timeline of a plan, Perfetto-style.
//
// One or more traces share one time axis. Each trace is a group of rows: a header row (its name
// and its stages), then one row per device ("rank J · TYPE · MACHINE") with the device's events
// coloured by kind (computation blue, communication orange, idle hatched grey; backward darker
// than forward). The fixed header above the rows holds a legend, the time ruler and the stages of
// trace 0 (the plan's prediction) with F/B and the stage number (Timeline::stages index + 1); the
// slowest device of every stage that computes (StageSpan::slowestRank) is marked in red on its row.
// Trace 0 is the plan's simulated timeline; a measured run is added as a further trace
// (addTrace), drawn below with its own stages.
//
// Navigation: W/S zoom in/out about the mouse (the centre when the mouse is elsewhere), A/D pan,
// F or 0 fit the iteration; the wheel scrolls rows, Ctrl+wheel zooms about the mouse, Shift+wheel
// pans, dragging pans both ways; double-click zooms to a stage.
// Selection: a click selects the stage under the mouse (in the trace clicked) and emits
// nodesSelected with the imported nodes of its steps; Esc or a click after the end clears it (and
// emits an empty list). selectNodes() shows the graph's selection here: the events of those nodes'
// steps and the stages that hold them, without emitting.
//
// Painting draws only the visible window of each visible row (binary search by time; events are
// in start order and do not overlap), merging sub-pixel events into one-pixel marks coloured by
// the kind that takes most of their time.
#pragma once

#include <QScrollBar>
#include <QString>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

#include "app/studio/core/documents/plan_document.h"
#include "app/studio/core/display/timeline_viewport.h"

namespace hap::studio {

class StagesView : public QWidget {
  Q_OBJECT

 public:
  explicit StagesView(QWidget* parent = nullptr);

  // Shows `plan`'s simulated timeline as trace 0 "Predicted" (nullptr: clear()). Fits the time
  // axis and drops any selection and further traces.
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  // Adds a trace below the others (the measured run of the plan: same steps and ranks), sharing
  // the time axis; the axis grows to the longest trace. Its step indices must be the plan's for
  // selection to link; without a plan it is shown unlinked.
  void addTrace(QString name, plan::Timeline timeline);
  // Drops every trace after trace 0 (a measured run shown earlier), keeping the plan, the zoom
  // (within the remaining axis) and a selection in trace 0.
  void removeAddedTraces();
  // No plan, no traces: the placeholder.
  void clear();

  const PlanDocument* plan() const { return m_plan.get(); }
  int traceCount() const { return static_cast<int>(m_traces.size()); }
  QString traceName(int trace) const { return m_traces.at(static_cast<size_t>(trace)).name; }
  const plan::Timeline& timeline(int trace) const { return *m_traces.at(static_cast<size_t>(trace)).timeline; }
  // Device rows over every trace (group header rows not counted).
  int rowCount() const;

  TimelineViewport& viewport() { return m_viewport; }
  const TimelineViewport& viewport() const { return m_viewport; }

  // The selected stage (Timeline::stages index) of selectedTrace(): the one clicked, or after
  // selectNodes() the first highlighted stage; -1 for none.
  int selectedStage() const { return m_selectedStage; }
  int selectedTrace() const { return m_selectedStage < 0 ? -1 : m_selectedTrace; }
  // The stages drawn as selected in `trace`, ascending.
  std::vector<int> highlightedStages(int trace = 0) const;
  // The steps whose events are drawn as selected (selectNodes), ascending.
  std::vector<int> highlightedSteps() const;
  // The imported nodes of a stage's steps (PlanDocument::stepNode; reshards skipped), in
  // execution order without repeats; empty without a plan.
  std::vector<ir::NodeId> stageNodes(int trace, int stage) const;

  // Where things are drawn, in widget coordinates (tests click them; empty when not on screen):
  // an event's rectangle (clipped to the plot), a device row, a stage's column in the header band.
  QRect eventRect(int trace, int device, int event) const;
  QRect rowRect(int trace, int device) const;
  QRect stageHeaderRect(int stage) const;
  // What the tooltip at `pos` says (rich text; empty over nothing).
  QString toolTipAt(const QPoint& pos) const;

  // Shows stage `stage` of `trace` across the view (a little margin on each side).
  void zoomToStage(int stage, int trace = 0);
  void fit();

  QSize sizeHint() const override { return {900, 420}; }
  QSize minimumSizeHint() const override { return {320, 160}; }

 public Q_SLOTS:
  // Highlights the events of the steps of `nodes` (imported ids; PlanDocument::stepsOfNode) and
  // the stages that contain them, and brings the first such stage into view when none is
  // visible. Never emits nodesSelected. Empty: clears the selection.
  void selectNodes(const std::vector<hap::ir::NodeId>& nodes);
  // Selects stage `stage` of `trace` as a click does (-1: none) and emits nodesSelected.
  void selectStage(int stage, int trace = 0);

 Q_SIGNALS:
  // The user selected a stage (its imported nodes; see stageNodes) or cleared the selection (empty).
  void nodesSelected(std::vector<hap::ir::NodeId> nodes);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct Trace {
    QString name;
    std::shared_ptr<const plan::Timeline> timeline;
    std::vector<QString> deviceLabels;
    int bottleneck = -1;  // plan::bottleneckRank
  };
  // A row of the scrolled area: a trace's header (device -1) or one of its devices.
  struct Row {
    int trace = 0, device = -1;
    int y = 0, height = 0;  // in content coordinates (0 = the top of the first row)
  };
  // What is under a point.
  struct Hit {
    int trace = -1, device = -1, event = -1, stage = -1;
    bool header = false;  // in the fixed stage band (trace 0)
    bool inPlot = false;  // over the time axis (not the label column)
  };

  void addTraceData(QString name, std::shared_ptr<const plan::Timeline> timeline);
  void relayout();         // rows, label width, scroll ranges
  void updateScrollBars();
  void onViewportChanged();  // repaint and sync the horizontal scroll bar
  Hit hitTest(const QPoint& pos) const;
  int rowIndexAt(int y) const;
  int stageAt(const plan::Timeline& t, double seconds) const;
  double anchorTime() const;
  void setSelection(int trace, int stage);
  void clearSelection();

  QRect plotRect() const;  // the time axis of the rows area (widget coordinates)
  QRect rowsRect() const;  // the scrolled area, label column included
  int headerHeight() const;
  double xOf(double seconds) const;
  double timeAtX(double x) const;
  int rowTop(const Row& r) const;  // widget y of a row

  // Each trace's device rows: the widget y range they cover.
  struct TraceBand {
    int trace;
    const plan::Timeline* timeline;
    int top, bottom;
  };
  std::vector<TraceBand> traceBands() const;
  void paintRows(class QPainter& p) const;
  void paintGroupHeader(QPainter& p, const Row& r, const QRect& area) const;
  void paintDeviceRow(QPainter& p, const Row& r, const QRect& area) const;
  void paintHeader(QPainter& p) const;
  void paintLegend(QPainter& p, const QRect& area) const;
  void paintRuler(QPainter& p, const QRect& area) const;
  void paintStageBand(QPainter& p, const plan::Timeline& t, int trace, const QRect& area, bool fixedBand) const;
  QString stageName(const plan::Timeline& t, int stage) const;
  QString eventToolTip(int trace, int device, int event) const;
  QString stageToolTip(int trace, int stage) const;

  std::shared_ptr<const PlanDocument> m_plan;
  std::vector<Trace> m_traces;
  std::vector<Row> m_rows;
  int m_contentHeight = 0;
  int m_labelWidth = 180;
  TimelineViewport m_viewport;
  QScrollBar* m_vbar = nullptr;
  QScrollBar* m_hbar = nullptr;
  bool m_syncingBar = false;

  int m_selectedTrace = 0, m_selectedStage = -1;
  std::vector<std::vector<char>> m_stageMarks;  // per trace, per stage: highlighted
  std::vector<char> m_stepMarks;                // per plan step: its events highlighted
  bool m_anyStepMarked = false;

  std::optional<QPoint> m_mouse;  // last hover position (none when the mouse left)
  Hit m_hover;
  // A press and the drag that may follow it.
  std::optional<QPoint> m_pressPos;
  double m_pressStart = 0;
  int m_pressScroll = 0;
  bool m_dragging = false;
};

}  // namespace hap::studio
