#include "app/studio/widgets/stages_view.h"

#include <QApplication>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "app/studio/core/display/units.h"

namespace hap::studio {

namespace {

constexpr int kLegendHeight = 26;
constexpr int kRulerHeight = 24;
constexpr int kBandHeight = 24;
constexpr int kGroupHeight = 24;
constexpr int kRowHeight = 20;
constexpr int kGroupGap = 8;
constexpr double kBarScale = 1e6;  // horizontal scroll bar units per iteration

const QColor kComputeForward(0x6A, 0xA6, 0xDE);
const QColor kComputeBackward(0x2C, 0x5F, 0xA3);
const QColor kCommForward(0xF5, 0xB0, 0x5A);
const QColor kCommBackward(0xCF, 0x6F, 0x1B);
const QColor kIdleFill(0xF0, 0xF0, 0xF0);
const QColor kIdleHatch(0xCF, 0xCF, 0xCF);
const QColor kBottleneck(0xD3, 0x2F, 0x2F);
const QColor kSelectFill(0xFF, 0xD5, 0x4F);
const QColor kSelectEdge(0xE0, 0x9A, 0x00);
const QColor kGrid(0, 0, 0, 22);
const QColor kRowLine(0, 0, 0, 16);
const QColor kHeaderFill(0xF7, 0xF8, 0xFA);
const QColor kGroupFill(0xEC, 0xEF, 0xF4);
const QColor kMutedText(0x6B, 0x72, 0x80);
const QColor kText(0x1F, 0x23, 0x29);

QColor eventColour(plan::EventKind kind, bool backward) {
  switch (kind) {
    case plan::EventKind::Compute: return backward ? kComputeBackward : kComputeForward;
    case plan::EventKind::Communication: return backward ? kCommBackward : kCommForward;
    case plan::EventKind::Idle: return kIdleFill;
  }
  return kIdleFill;
}

QString kindName(plan::EventKind kind) {
  switch (kind) {
    case plan::EventKind::Compute: return QStringLiteral("computation");
    case plan::EventKind::Communication: return QStringLiteral("communication");
    case plan::EventKind::Idle: return QStringLiteral("idle");
  }
  return {};
}

// Fills `r` as an event of `kind` is drawn: solid, or hatched grey for idle time.
void fillEvent(QPainter& p, const QRectF& r, plan::EventKind kind, bool backward) {
  p.fillRect(r, eventColour(kind, backward));
  if (kind == plan::EventKind::Idle && r.width() >= 3) p.fillRect(r, QBrush(kIdleHatch, Qt::BDiagPattern));
}

// The first event of `events` (start order, disjoint) that ends after `seconds`.
std::vector<plan::Event>::const_iterator firstEndingAfter(const std::vector<plan::Event>& events, double seconds) {
  return std::partition_point(events.begin(), events.end(),
                              [seconds](const plan::Event& e) { return e.end() <= seconds; });
}

std::vector<plan::StageSpan>::const_iterator firstStageEndingAfter(const std::vector<plan::StageSpan>& stages,
                                                                  double seconds) {
  return std::partition_point(stages.begin(), stages.end(),
                              [seconds](const plan::StageSpan& s) { return s.end() <= seconds; });
}

}  // namespace

StagesView::StagesView(QWidget* parent) : QWidget(parent) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setBackgroundRole(QPalette::Base);
  setAutoFillBackground(true);
  m_vbar = new QScrollBar(Qt::Vertical, this);
  m_hbar = new QScrollBar(Qt::Horizontal, this);
  m_vbar->setObjectName(QStringLiteral("stagesRowScroll"));
  m_hbar->setObjectName(QStringLiteral("stagesTimeScroll"));
  m_vbar->hide();
  m_hbar->hide();
  connect(m_vbar, &QScrollBar::valueChanged, this, [this] { update(); });
  connect(m_hbar, &QScrollBar::valueChanged, this, [this](int value) {
    if (m_syncingBar || m_viewport.total() <= 0) return;
    const double start = value / kBarScale * m_viewport.total();
    m_viewport.setWindow(start, start + m_viewport.span());
    update();
  });
}

// ---- content ------------------------------------------------------------------------------------

void StagesView::setPlan(std::shared_ptr<const PlanDocument> plan) {
  clear();
  if (!plan) return;
  m_plan = std::move(plan);
  // Trace 0 shares the document's timeline (no copy).
  addTraceData(tr("Predicted"), std::shared_ptr<const plan::Timeline>(m_plan, &m_plan->timeline));
}

void StagesView::addTrace(QString name, plan::Timeline timeline) {
  addTraceData(std::move(name), std::make_shared<const plan::Timeline>(std::move(timeline)));
}

void StagesView::addTraceData(QString name, std::shared_ptr<const plan::Timeline> timeline) {
  Trace t;
  t.name = std::move(name);
  const auto* devices = m_plan ? &m_plan->p().devices : nullptr;
  for (size_t j = 0; j < timeline->devices.size(); ++j) {
    QString label = tr("rank %1").arg(timeline->devices[j].rank);
    if (devices && j < devices->size()) {
      const plan::PlanDevice& d = (*devices)[j];
      label += QStringLiteral(" \u00b7 ") + QString::fromStdString(d.type) + QStringLiteral(" \u00b7 ") +
               QString::fromStdString(d.machine);
    }
    t.deviceLabels.push_back(label);
  }
  t.bottleneck = timeline->devices.empty() ? -1 : plan::bottleneckRank(*timeline);
  m_stageMarks.emplace_back(timeline->stages.size(), 0);
  t.timeline = std::move(timeline);
  m_traces.push_back(std::move(t));

  // The axis covers the longest trace; a fitted view stays fitted, a zoomed one keeps its window.
  double total = 0;
  for (const Trace& trc : m_traces) total = std::max(total, trc.timeline->totalSeconds);
  const bool wasFit = m_traces.size() == 1 || m_viewport.isFit();
  const double start = m_viewport.start(), end = m_viewport.end();
  m_viewport.setTotal(total);
  if (!wasFit) m_viewport.setWindow(start, end);
  relayout();
  onViewportChanged();
}

void StagesView::removeAddedTraces() {
  if (m_traces.size() <= 1) return;
  m_traces.erase(m_traces.begin() + 1, m_traces.end());
  m_stageMarks.resize(1);
  if (m_selectedTrace > 0) {
    m_selectedTrace = 0;
    m_selectedStage = -1;
  }
  m_hover = {};
  const bool wasFit = m_viewport.isFit();
  const double start = m_viewport.start(), end = m_viewport.end();
  m_viewport.setTotal(m_traces.front().timeline->totalSeconds);
  if (!wasFit) m_viewport.setWindow(start, end);
  relayout();
  onViewportChanged();
}

void StagesView::clear() {
  m_plan.reset();
  m_traces.clear();
  m_rows.clear();
  m_stageMarks.clear();
  m_stepMarks.clear();
  m_anyStepMarked = false;
  m_selectedStage = -1;
  m_selectedTrace = 0;
  m_hover = {};
  m_pressPos.reset();
  m_dragging = false;
  m_viewport.setTotal(0);
  if (m_vbar) m_vbar->setValue(0);
  relayout();
  update();
}

int StagesView::rowCount() const {
  int n = 0;
  for (const Trace& t : m_traces) n += static_cast<int>(t.timeline->devices.size());
  return n;
}

void StagesView::relayout() {
  m_rows.clear();
  int y = 0;
  for (int ti = 0; ti < traceCount(); ++ti) {
    m_rows.push_back({ti, -1, y, kGroupHeight});
    y += kGroupHeight;
    const int devices = static_cast<int>(m_traces[static_cast<size_t>(ti)].timeline->devices.size());
    for (int j = 0; j < devices; ++j) {
      m_rows.push_back({ti, j, y, kRowHeight});
      y += kRowHeight;
    }
    y += kGroupGap;
  }
  m_contentHeight = y;

  // Wide enough for the longest label (and the bottleneck dot), within reason.
  const QFontMetrics fm(font());
  QFont bold = font();
  bold.setBold(true);
  const QFontMetrics fmBold(bold);
  int widest = fm.horizontalAdvance(tr("Stages"));
  for (const Trace& t : m_traces) {
    widest = std::max(widest, fmBold.horizontalAdvance(t.name) + fm.horizontalAdvance(QStringLiteral(" 0000.00 ms")));
    for (const QString& l : t.deviceLabels) widest = std::max(widest, fm.horizontalAdvance(l));
  }
  m_labelWidth = std::clamp(widest + 30, 150, 320);
  updateScrollBars();
}

void StagesView::updateScrollBars() {
  if (!m_vbar || !m_hbar) return;
  const bool any = !m_traces.empty();
  const int hh = m_hbar->sizeHint().height();
  const int vw = m_vbar->sizeHint().width();
  const int rowsHeight = std::max(0, height() - headerHeight() - (any ? hh : 0));
  const bool needV = any && m_contentHeight > rowsHeight;
  m_vbar->setVisible(needV);
  m_vbar->setGeometry(width() - vw, headerHeight(), vw, rowsHeight);
  m_vbar->setRange(0, std::max(0, m_contentHeight - rowsHeight));
  m_vbar->setPageStep(std::max(1, rowsHeight));
  m_vbar->setSingleStep(kRowHeight);
  m_hbar->setVisible(any);
  m_hbar->setGeometry(m_labelWidth, height() - hh, std::max(0, width() - m_labelWidth - (needV ? vw : 0)), hh);
  onViewportChanged();
}

void StagesView::onViewportChanged() {
  if (m_hbar && m_viewport.total() > 0) {
    m_syncingBar = true;
    const double total = m_viewport.total();
    const int page = std::max(1, static_cast<int>(std::lround(m_viewport.span() / total * kBarScale)));
    m_hbar->setRange(0, std::max(0, static_cast<int>(std::lround((total - m_viewport.span()) / total * kBarScale))));
    m_hbar->setPageStep(page);
    m_hbar->setSingleStep(std::max(1, page / 5));
    m_hbar->setValue(static_cast<int>(std::lround(m_viewport.start() / total * kBarScale)));
    m_syncingBar = false;
  }
  update();
}

void StagesView::fit() {
  m_viewport.fit();
  onViewportChanged();
}

void StagesView::zoomToStage(int stage, int trace) {
  if (trace < 0 || trace >= traceCount()) return;
  const auto& stages = timeline(trace).stages;
  if (stage < 0 || stage >= static_cast<int>(stages.size())) return;
  const plan::StageSpan& s = stages[static_cast<size_t>(stage)];
  m_viewport.zoomToRange(s.start, s.end());
  onViewportChanged();
}

// ---- selection ----------------------------------------------------------------------------------

std::vector<ir::NodeId> StagesView::stageNodes(int trace, int stage) const {
  std::vector<ir::NodeId> out;
  if (!m_plan || trace < 0 || trace >= traceCount()) return out;
  const auto& stages = timeline(trace).stages;
  if (stage < 0 || stage >= static_cast<int>(stages.size())) return out;
  const int steps = static_cast<int>(m_plan->p().steps.size());
  for (int step : stages[static_cast<size_t>(stage)].steps) {
    if (step < 0 || step >= steps) continue;
    const ir::NodeId n = m_plan->stepNode(step);
    if (n != ir::kNone && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::vector<int> StagesView::highlightedStages(int trace) const {
  std::vector<int> out;
  if (trace < 0 || trace >= static_cast<int>(m_stageMarks.size())) return out;
  const auto& marks = m_stageMarks[static_cast<size_t>(trace)];
  for (size_t s = 0; s < marks.size(); ++s)
    if (marks[s]) out.push_back(static_cast<int>(s));
  return out;
}

std::vector<int> StagesView::highlightedSteps() const {
  std::vector<int> out;
  for (size_t s = 0; s < m_stepMarks.size(); ++s)
    if (m_stepMarks[s]) out.push_back(static_cast<int>(s));
  return out;
}

void StagesView::clearSelection() {
  for (auto& marks : m_stageMarks) std::fill(marks.begin(), marks.end(), 0);
  m_stepMarks.clear();
  m_anyStepMarked = false;
  m_selectedStage = -1;
  m_selectedTrace = 0;
  update();
}

void StagesView::setSelection(int trace, int stage) {
  clearSelection();
  if (trace < 0 || trace >= traceCount()) return;
  auto& marks = m_stageMarks[static_cast<size_t>(trace)];
  if (stage < 0 || stage >= static_cast<int>(marks.size())) return;
  marks[static_cast<size_t>(stage)] = 1;
  m_selectedTrace = trace;
  m_selectedStage = stage;
}

void StagesView::selectStage(int stage, int trace) {
  setSelection(trace, stage);
  Q_EMIT nodesSelected(m_selectedStage < 0 ? std::vector<ir::NodeId>{} : stageNodes(trace, stage));
}

void StagesView::selectNodes(const std::vector<hap::ir::NodeId>& nodes) {
  clearSelection();
  if (!m_plan || nodes.empty()) return;
  const int steps = static_cast<int>(m_plan->p().steps.size());
  m_stepMarks.assign(static_cast<size_t>(steps), 0);
  for (ir::NodeId n : nodes)
    for (int i : m_plan->stepsOfNode(n)) m_stepMarks[static_cast<size_t>(i)] = m_anyStepMarked = true;
  if (!m_anyStepMarked) return;
  for (int ti = 0; ti < traceCount(); ++ti) {
    const auto& stages = timeline(ti).stages;
    auto& marks = m_stageMarks[static_cast<size_t>(ti)];
    for (size_t s = 0; s < stages.size(); ++s)
      for (int step : stages[s].steps)
        if (step >= 0 && step < steps && m_stepMarks[static_cast<size_t>(step)]) {
          marks[s] = 1;
          if (m_selectedStage < 0) {
            m_selectedStage = static_cast<int>(s);
            m_selectedTrace = ti;
          }
          break;
        }
  }
  // Bring the selection into view when none of its stages is on screen.
  if (m_selectedStage >= 0) {
    const auto& stages = timeline(m_selectedTrace).stages;
    const auto& marks = m_stageMarks[static_cast<size_t>(m_selectedTrace)];
    bool visible = false;
    for (size_t s = 0; s < stages.size() && !visible; ++s)
      visible = marks[s] && stages[s].end() > m_viewport.start() && stages[s].start < m_viewport.end();
    if (!visible) {
      const plan::StageSpan& s = stages[static_cast<size_t>(m_selectedStage)];
      m_viewport.ensureVisible(s.start, s.end());
      onViewportChanged();
    }
  }
  update();
}

// ---- geometry -----------------------------------------------------------------------------------

int StagesView::headerHeight() const { return kLegendHeight + kRulerHeight + kBandHeight; }

QRect StagesView::rowsRect() const {
  const int right = m_vbar && !m_vbar->isHidden() ? m_vbar->geometry().left() : width();
  const int bottom = m_hbar && !m_hbar->isHidden() ? m_hbar->geometry().top() : height();
  return QRect(0, headerHeight(), std::max(0, right), std::max(0, bottom - headerHeight()));
}

QRect StagesView::plotRect() const {
  const QRect rows = rowsRect();
  return QRect(m_labelWidth, rows.top(), std::max(1, rows.width() - m_labelWidth), rows.height());
}

double StagesView::xOf(double seconds) const {
  const QRect plot = plotRect();
  return plot.left() + m_viewport.timeToX(seconds, plot.width());
}

double StagesView::timeAtX(double x) const {
  const QRect plot = plotRect();
  return m_viewport.xToTime(x - plot.left(), plot.width());
}

int StagesView::rowTop(const Row& r) const { return headerHeight() + r.y - (m_vbar ? m_vbar->value() : 0); }

int StagesView::rowIndexAt(int y) const {
  const int contentY = y - headerHeight() + (m_vbar ? m_vbar->value() : 0);
  auto it = std::partition_point(m_rows.begin(), m_rows.end(), [contentY](const Row& r) { return r.y <= contentY; });
  if (it == m_rows.begin()) return -1;
  --it;
  return contentY < it->y + it->height ? static_cast<int>(it - m_rows.begin()) : -1;
}

int StagesView::stageAt(const plan::Timeline& t, double seconds) const {
  if (!(seconds >= 0) || seconds >= t.totalSeconds) return -1;
  auto it = firstStageEndingAfter(t.stages, seconds);
  if (it == t.stages.end() || it->start > seconds) return -1;
  return static_cast<int>(it - t.stages.begin());
}

double StagesView::anchorTime() const {
  if (m_mouse && plotRect().contains(*m_mouse)) return timeAtX(m_mouse->x());
  return m_viewport.centre();
}

QRect StagesView::rowRect(int trace, int device) const {
  for (const Row& r : m_rows)
    if (r.trace == trace && r.device == device) {
      const QRect rect(0, rowTop(r), rowsRect().width(), r.height);
      return rect.intersected(rowsRect());
    }
  return {};
}

QRect StagesView::eventRect(int trace, int device, int event) const {
  if (trace < 0 || trace >= traceCount()) return {};
  const auto& devices = timeline(trace).devices;
  if (device < 0 || device >= static_cast<int>(devices.size())) return {};
  const auto& events = devices[static_cast<size_t>(device)].events;
  if (event < 0 || event >= static_cast<int>(events.size())) return {};
  const QRect row = rowRect(trace, device);
  if (row.isEmpty()) return {};
  const plan::Event& e = events[static_cast<size_t>(event)];
  const int x0 = static_cast<int>(std::floor(xOf(e.start)));
  const int x1 = static_cast<int>(std::ceil(xOf(e.end())));
  return QRect(x0, row.top() + 2, std::max(1, x1 - x0), row.height() - 4).intersected(plotRect());
}

QRect StagesView::stageHeaderRect(int stage) const {
  if (m_traces.empty()) return {};
  const auto& stages = timeline(0).stages;
  if (stage < 0 || stage >= static_cast<int>(stages.size())) return {};
  const plan::StageSpan& s = stages[static_cast<size_t>(stage)];
  const QRect plot = plotRect();
  const int x0 = static_cast<int>(std::floor(xOf(s.start)));
  const int x1 = static_cast<int>(std::ceil(xOf(s.end())));
  return QRect(x0, kLegendHeight + kRulerHeight, std::max(1, x1 - x0), kBandHeight)
      .intersected(QRect(plot.left(), 0, plot.width(), height()));
}

StagesView::Hit StagesView::hitTest(const QPoint& pos) const {
  Hit h;
  if (m_traces.empty()) return h;
  const QRect plot = plotRect();
  const bool inPlotX = pos.x() >= plot.left() && pos.x() <= plot.right();
  if (pos.y() >= kLegendHeight + kRulerHeight && pos.y() < headerHeight()) {
    h.header = true;
    h.trace = 0;
    h.inPlot = inPlotX;
    if (inPlotX) h.stage = stageAt(timeline(0), timeAtX(pos.x() + 0.5));
    return h;
  }
  if (!rowsRect().contains(pos)) return h;
  const int ri = rowIndexAt(pos.y());
  if (ri < 0) return h;
  const Row& r = m_rows[static_cast<size_t>(ri)];
  h.trace = r.trace;
  h.device = r.device;
  h.inPlot = inPlotX;
  if (!inPlotX) return h;
  const plan::Timeline& t = timeline(r.trace);
  const double seconds = timeAtX(pos.x() + 0.5);
  h.stage = stageAt(t, seconds);
  if (r.device < 0) return h;
  // The event under the point, else the nearest within two pixels (sub-pixel events).
  const auto& events = t.devices[static_cast<size_t>(r.device)].events;
  const double tolerance = 2 * m_viewport.span() / std::max(1, plot.width());
  auto it = firstEndingAfter(events, seconds);
  double best = tolerance;
  auto consider = [&](std::vector<plan::Event>::const_iterator e) {
    if (e < events.begin() || e >= events.end()) return;
    const double distance = seconds < e->start ? e->start - seconds : seconds >= e->end() ? seconds - e->end() : 0;
    if (distance <= best) {
      best = distance;
      h.event = static_cast<int>(e - events.begin());
    }
  };
  if (it != events.begin()) consider(it - 1);
  consider(it);
  if (h.event >= 0) h.stage = events[static_cast<size_t>(h.event)].stage;
  return h;
}

// ---- tooltips -----------------------------------------------------------------------------------

QString StagesView::stageName(const plan::Timeline& t, int stage) const {
  const plan::StageSpan& s = t.stages[static_cast<size_t>(stage)];
  return (s.backward ? QStringLiteral("B") : QStringLiteral("F")) + QString::number(stage + 1);
}

QString StagesView::eventToolTip(int trace, int device, int event) const {
  const Trace& trc = m_traces[static_cast<size_t>(trace)];
  const plan::Timeline& t = *trc.timeline;
  const plan::Event& e = t.devices[static_cast<size_t>(device)].events[static_cast<size_t>(event)];
  QString out = QStringLiteral("<b>%1</b>").arg(QString::fromStdString(e.label).toHtmlEscaped());
  QString what = kindName(e.kind) + (e.backward ? tr(" \u00b7 backward") : tr(" \u00b7 forward"));
  if (e.stage >= 0 && e.stage < static_cast<int>(t.stages.size()))
    what += tr(" \u00b7 stage %1 (%2 of %3)").arg(stageName(t, e.stage)).arg(e.stage + 1).arg(t.stages.size());
  out += QStringLiteral("<br>") + what;
  out += QStringLiteral("<br>") + trc.deviceLabels[static_cast<size_t>(device)].toHtmlEscaped();
  out += QStringLiteral("<br>") + tr("start %1 \u00b7 duration %2")
                                      .arg(formatDuration(e.start),
                                           formatDuration(e.duration));
  if (m_plan && e.step >= 0 && e.step < static_cast<int>(m_plan->p().steps.size())) {
    const plan::PlanStep& s = m_plan->p().steps[static_cast<size_t>(e.step)];
    QString detail = s.kind == plan::PlanStep::Kind::Compute
                         ? tr("variant %1").arg(QString::fromStdString(s.variant))
                         : QString::fromStdString(s.instruction) +
                               (s.method.empty() ? QString() : QStringLiteral(" (%1)").arg(QString::fromStdString(s.method)));
    out += QStringLiteral("<br>") + tr("step %1 \u00b7 %2").arg(e.step).arg(detail.toHtmlEscaped());
  }
  if (e.kind == plan::EventKind::Compute && e.stage >= 0 && e.stage < static_cast<int>(t.stages.size()) &&
      t.stages[static_cast<size_t>(e.stage)].slowestRank == device)
    out += QStringLiteral("<br><span style='color:#d32f2f'>") + tr("slowest device of this stage") +
           QStringLiteral("</span>");
  return out;
}

QString StagesView::stageToolTip(int trace, int stage) const {
  const Trace& trc = m_traces[static_cast<size_t>(trace)];
  const plan::Timeline& t = *trc.timeline;
  const plan::StageSpan& s = t.stages[static_cast<size_t>(stage)];
  QString out = QStringLiteral("<b>") + tr("Stage %1").arg(stageName(t, stage)) + QStringLiteral("</b> ") +
                (s.backward ? tr("backward") : tr("forward")) + tr(", %1 of %2").arg(stage + 1).arg(t.stages.size());
  if (s.steps.empty())
    out += QStringLiteral("<br>") + (s.what == "gradient buckets"
                                         ? tr("gradient all-reduces left after backward (the buckets run beside it)")
                                         : tr("gradient sums across machines"));
  out += QStringLiteral("<br>") + tr("start %1 \u00b7 duration %2")
                                      .arg(formatDuration(s.start),
                                           formatDuration(s.seconds()));
  out += QStringLiteral("<br>") + tr("communication %1 \u00b7 computation %2")
                                      .arg(formatDuration(s.communicationSeconds),
                                           formatDuration(s.computationSeconds));
  if (s.computationSeconds > 0 && s.slowestRank >= 0 && s.slowestRank < static_cast<int>(trc.deviceLabels.size()))
    out += QStringLiteral("<br>") + tr("slowest: %1").arg(trc.deviceLabels[static_cast<size_t>(s.slowestRank)].toHtmlEscaped());
  out += QStringLiteral("<br>") + (s.steps.size() == 1 ? tr("1 step") : tr("%1 steps").arg(s.steps.size()));
  if (!s.steps.empty()) out += QStringLiteral("<br><i>") + tr("click: select its nodes \u00b7 double-click: zoom") + QStringLiteral("</i>");
  return out;
}

QString StagesView::toolTipAt(const QPoint& pos) const {
  if (m_traces.empty()) return {};
  if (pos.y() < kLegendHeight)
    return tr("<b>Navigation</b><br>W / S: zoom in / out about the mouse<br>A / D: pan<br>F or 0: fit the "
              "iteration<br>Ctrl+wheel: zoom \u00b7 wheel: scroll rows \u00b7 drag: pan<br>click: select a "
              "stage's nodes \u00b7 double-click: zoom to it \u00b7 Esc: clear");
  const Hit h = hitTest(pos);
  if (h.trace < 0) return {};
  if (h.event >= 0) return eventToolTip(h.trace, h.device, h.event);
  if (h.inPlot && h.stage >= 0 && (h.header || h.device < 0)) return stageToolTip(h.trace, h.stage);
  if (!h.inPlot && h.device >= 0) {
    const Trace& trc = m_traces[static_cast<size_t>(h.trace)];
    const plan::DeviceTimeline& d = trc.timeline->devices[static_cast<size_t>(h.device)];
    const double total = std::max(1e-30, trc.timeline->totalSeconds);
    QString out = QStringLiteral("<b>%1</b>").arg(trc.deviceLabels[static_cast<size_t>(h.device)].toHtmlEscaped());
    if (m_plan && h.device < static_cast<int>(m_plan->p().devices.size()))
      out += QStringLiteral("<br>") + tr("host %1").arg(QString::fromStdString(m_plan->p().devices[static_cast<size_t>(h.device)].host).toHtmlEscaped());
    out += QStringLiteral("<br>") + tr("busy %1 (%2%)").arg(formatDuration(d.busySeconds()))
                                        .arg(100 * d.busySeconds() / total, 0, 'f', 1);
    out += QStringLiteral("<br>") + tr("computation %1 \u00b7 communication %2 \u00b7 idle %3")
                                        .arg(formatDuration(d.computeSeconds),
                                             formatDuration(d.communicationSeconds),
                                             formatDuration(d.idleSeconds));
    if (h.device == trc.bottleneck)
      out += QStringLiteral("<br><span style='color:#d32f2f'>") + tr("bottleneck: the busiest device") + QStringLiteral("</span>");
    return out;
  }
  return {};
}

bool StagesView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const QString text = toolTipAt(help->pos());
    if (text.isEmpty()) {
      QToolTip::hideText();
      e->ignore();
    } else {
      QToolTip::showText(help->globalPos(), text, this);
    }
    return true;
  }
  return QWidget::event(e);
}

// ---- input --------------------------------------------------------------------------------------

void StagesView::keyPressEvent(QKeyEvent* e) {
  if (m_traces.empty() || (e->modifiers() & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier))) {
    QWidget::keyPressEvent(e);
    return;
  }
  switch (e->key()) {
    case Qt::Key_W:
    case Qt::Key_Plus:
    case Qt::Key_Equal: m_viewport.zoomIn(anchorTime()); break;
    case Qt::Key_S:
    case Qt::Key_Minus: m_viewport.zoomOut(anchorTime()); break;
    case Qt::Key_A:
    case Qt::Key_Left: m_viewport.panBy(-TimelineViewport::kPanFraction); break;
    case Qt::Key_D:
    case Qt::Key_Right: m_viewport.panBy(TimelineViewport::kPanFraction); break;
    case Qt::Key_F:
    case Qt::Key_0:
    case Qt::Key_Home: m_viewport.fit(); break;
    case Qt::Key_Up: m_vbar->triggerAction(QAbstractSlider::SliderSingleStepSub); break;
    case Qt::Key_Down: m_vbar->triggerAction(QAbstractSlider::SliderSingleStepAdd); break;
    case Qt::Key_PageUp: m_vbar->triggerAction(QAbstractSlider::SliderPageStepSub); break;
    case Qt::Key_PageDown: m_vbar->triggerAction(QAbstractSlider::SliderPageStepAdd); break;
    case Qt::Key_Escape:
      if (m_selectedStage >= 0 || m_anyStepMarked) selectStage(-1);
      break;
    default: QWidget::keyPressEvent(e); return;
  }
  e->accept();
  onViewportChanged();
}

void StagesView::wheelEvent(QWheelEvent* e) {
  if (m_traces.empty()) return QWidget::wheelEvent(e);
  const QPoint delta = e->angleDelta();
  const QPoint pos = e->position().toPoint();
  if (e->modifiers() & Qt::ControlModifier) {
    const double anchor = plotRect().contains(pos) ? timeAtX(pos.x()) : m_viewport.centre();
    m_viewport.zoom(std::pow(TimelineViewport::kZoomFactor, delta.y() / 120.0), anchor);
  } else if ((e->modifiers() & Qt::ShiftModifier) || std::abs(delta.x()) > std::abs(delta.y())) {
    const int d = delta.x() != 0 ? delta.x() : delta.y();
    m_viewport.pan(-d / 120.0 * 0.1 * m_viewport.span());
  } else {
    m_vbar->setValue(m_vbar->value() - static_cast<int>(std::lround(delta.y() / 120.0 * 3 * kRowHeight)));
  }
  e->accept();
  onViewportChanged();
}

void StagesView::mousePressEvent(QMouseEvent* e) {
  setFocus(Qt::MouseFocusReason);
  if (e->button() != Qt::LeftButton || m_traces.empty()) return QWidget::mousePressEvent(e);
  m_pressPos = e->position().toPoint();
  m_pressStart = m_viewport.start();
  m_pressScroll = m_vbar->value();
  m_dragging = false;
  e->accept();
}

void StagesView::mouseMoveEvent(QMouseEvent* e) {
  const QPoint pos = e->position().toPoint();
  m_mouse = pos;
  if (m_pressPos && (e->buttons() & Qt::LeftButton)) {
    const QPoint d = pos - *m_pressPos;
    if (!m_dragging && d.manhattanLength() >= QApplication::startDragDistance()) {
      m_dragging = true;
      setCursor(Qt::ClosedHandCursor);
    }
    if (m_dragging) {
      const double secondsPerPixel = m_viewport.span() / std::max(1, plotRect().width());
      const double start = m_pressStart - d.x() * secondsPerPixel;
      m_viewport.setWindow(start, start + m_viewport.span());
      m_vbar->setValue(m_pressScroll - d.y());
      onViewportChanged();
    }
    return;
  }
  const Hit h = hitTest(pos);
  m_hover = h;
  update();
}

void StagesView::mouseReleaseEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton || !m_pressPos) return QWidget::mouseReleaseEvent(e);
  const QPoint press = *m_pressPos;
  const bool dragged = m_dragging;
  m_pressPos.reset();
  m_dragging = false;
  unsetCursor();
  if (dragged) return;
  const Hit h = hitTest(press);
  if (!h.inPlot) return;
  if (h.stage >= 0)
    selectStage(h.stage, h.trace);
  else if (m_selectedStage >= 0 || m_anyStepMarked)
    selectStage(-1);  // a click after the end clears the selection
}

void StagesView::mouseDoubleClickEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return QWidget::mouseDoubleClickEvent(e);
  const Hit h = hitTest(e->position().toPoint());
  if (h.inPlot && h.stage >= 0) zoomToStage(h.stage, h.trace);
}

void StagesView::leaveEvent(QEvent* e) {
  m_mouse.reset();
  m_hover = {};
  update();
  QWidget::leaveEvent(e);
}

void StagesView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  updateScrollBars();
}

// ---- painting -----------------------------------------------------------------------------------

void StagesView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (m_traces.empty()) {
    p.setPen(kMutedText);
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, tr("Plan the model (Plan \u25b8 Plan) to see its stages"));
    return;
  }
  paintRows(p);
  paintHeader(p);
  if (!m_vbar->isHidden() && !m_hbar->isHidden())
    p.fillRect(QRect(m_vbar->geometry().left(), m_hbar->geometry().top(), m_vbar->width(), m_hbar->height()),
               palette().window());
}

std::vector<StagesView::TraceBand> StagesView::traceBands() const {
  std::vector<TraceBand> out;
  for (size_t ri = 0; ri < m_rows.size(); ++ri) {
    const Row& header = m_rows[ri];
    if (header.device >= 0) continue;
    const plan::Timeline& t = timeline(header.trace);
    const int n = static_cast<int>(t.devices.size());
    if (n == 0) continue;
    const int top = rowTop(m_rows[ri + 1]);
    out.push_back({header.trace, &t, top, top + n * kRowHeight});
  }
  return out;
}

void StagesView::paintRows(QPainter& p) const {
  const QRect rows = rowsRect();
  const QRect plot = plotRect();
  if (rows.isEmpty()) return;
  p.save();
  p.setClipRect(rows);

  // Stage backgrounds behind each trace's device rows: alternating tints, the selection in amber,
  // the time after a shorter trace's end greyed.
  for (const TraceBand& band : traceBands()) {
    const plan::Timeline& t = *band.timeline;
    const int top = band.top, bottom = band.bottom;
    if (bottom < rows.top() || top > rows.bottom()) continue;
    const auto& marks = m_stageMarks[static_cast<size_t>(band.trace)];
    for (auto it = firstStageEndingAfter(t.stages, m_viewport.start());
         it != t.stages.end() && it->start < m_viewport.end(); ++it) {
      const size_t s = static_cast<size_t>(it - t.stages.begin());
      const double x0 = std::max<double>(plot.left(), xOf(it->start));
      const double x1 = std::min<double>(plot.right() + 1, xOf(it->end()));
      const QRectF r(x0, top, x1 - x0, bottom - top);
      if (marks[s]) {
        QColor fill = kSelectFill;
        fill.setAlpha(70);
        p.fillRect(r, fill);
      } else if (s % 2 == 1 && x1 - x0 >= 2) {
        p.fillRect(r, it->backward ? QColor(0x5E, 0x35, 0xB1, 12) : QColor(0x1E, 0x5A, 0xA8, 12));
      }
    }
    const double endX = xOf(t.totalSeconds);
    if (endX < plot.right()) p.fillRect(QRectF(endX, top, plot.right() + 1 - endX, bottom - top), QColor(0, 0, 0, 14));
  }

  // Ruler grid.
  p.setPen(kGrid);
  for (const TimelineViewport::Tick& tick : m_viewport.ticks(plot.width())) {
    const double x = std::round(xOf(tick.seconds)) + 0.5;
    p.drawLine(QPointF(x, rows.top()), QPointF(x, rows.bottom() + 1));
  }

  // Rows (only those on screen).
  int first = rowIndexAt(rows.top());
  if (first < 0) {
    const int contentY = m_vbar->value();
    first = static_cast<int>(std::partition_point(m_rows.begin(), m_rows.end(),
                                                  [contentY](const Row& r) { return r.y + r.height <= contentY; }) -
                             m_rows.begin());
  }
  for (size_t ri = static_cast<size_t>(std::max(0, first)); ri < m_rows.size(); ++ri) {
    const Row& r = m_rows[ri];
    const int top = rowTop(r);
    if (top > rows.bottom()) break;
    const QRect area(plot.left(), top, plot.width(), r.height);
    if (r.device < 0)
      paintGroupHeader(p, r, area);
    else
      paintDeviceRow(p, r, area);
  }

  // Selected stage edges, over the events.
  p.setPen(QPen(kSelectEdge, 1.5));
  for (const TraceBand& band : traceBands()) {
    const auto& marks = m_stageMarks[static_cast<size_t>(band.trace)];
    for (size_t s = 0; s < marks.size(); ++s) {
      if (!marks[s]) continue;
      const plan::StageSpan& st = band.timeline->stages[s];
      if (st.end() < m_viewport.start() || st.start > m_viewport.end()) continue;
      const double x0 = xOf(st.start), x1 = xOf(st.end());
      p.drawLine(QPointF(x0, band.top), QPointF(x0, band.bottom));
      p.drawLine(QPointF(x1, band.top), QPointF(x1, band.bottom));
    }
  }

  // Hover line.
  if (m_mouse && plot.contains(*m_mouse) && !m_dragging) {
    p.setPen(QPen(QColor(0, 0, 0, 90), 1, Qt::DashLine));
    p.drawLine(QPointF(m_mouse->x() + 0.5, rows.top()), QPointF(m_mouse->x() + 0.5, rows.bottom()));
  }

  // Label column.
  p.setClipRect(QRect(rows.left(), rows.top(), m_labelWidth, rows.height()));
  p.fillRect(QRect(rows.left(), rows.top(), m_labelWidth, rows.height()), palette().base());
  const QFontMetrics fm(font());
  QFont bold = font();
  bold.setBold(true);
  for (size_t ri = static_cast<size_t>(std::max(0, first)); ri < m_rows.size(); ++ri) {
    const Row& r = m_rows[ri];
    const int top = rowTop(r);
    if (top > rows.bottom()) break;
    const Trace& trc = m_traces[static_cast<size_t>(r.trace)];
    const QRect label(8, top, m_labelWidth - 14, r.height);
    if (r.device < 0) {
      p.fillRect(QRect(0, top, m_labelWidth, r.height), kGroupFill);
      p.setPen(kText);
      p.setFont(bold);
      p.drawText(label, Qt::AlignVCenter | Qt::AlignLeft, trc.name);
      const int nameWidth = QFontMetrics(bold).horizontalAdvance(trc.name);
      p.setFont(font());
      p.setPen(kMutedText);
      p.drawText(label.adjusted(nameWidth + 8, 0, 0, 0), Qt::AlignVCenter | Qt::AlignLeft,
                 formatDuration(trc.timeline->totalSeconds));
    } else {
      const bool hovered = m_hover.trace == r.trace && m_hover.device == r.device;
      if (hovered) p.fillRect(QRect(0, top, m_labelWidth, r.height), QColor(0, 0, 0, 12));
      if (r.device == trc.bottleneck) {
        p.setPen(Qt::NoPen);
        p.setBrush(kBottleneck);
        p.setRenderHint(QPainter::Antialiasing, true);
        p.drawEllipse(QPointF(label.left() + 3, top + r.height / 2.0), 3, 3);
        p.setRenderHint(QPainter::Antialiasing, false);
        p.setBrush(Qt::NoBrush);
      }
      p.setPen(kText);
      p.drawText(label.adjusted(12, 0, 0, 0), Qt::AlignVCenter | Qt::AlignLeft,
                 fm.elidedText(trc.deviceLabels[static_cast<size_t>(r.device)], Qt::ElideRight, label.width() - 12));
      p.setPen(kRowLine);
      p.drawLine(0, top + r.height - 1, m_labelWidth, top + r.height - 1);
    }
  }
  p.setClipRect(rows);
  p.setPen(QColor(0, 0, 0, 40));
  p.drawLine(m_labelWidth - 1, rows.top(), m_labelWidth - 1, rows.bottom());
  p.restore();
}

void StagesView::paintGroupHeader(QPainter& p, const Row& r, const QRect& area) const {
  p.fillRect(area, kGroupFill);
  const Trace& trc = m_traces[static_cast<size_t>(r.trace)];
  const plan::Timeline& t = *trc.timeline;
  if (r.trace > 0) {
    // A further trace's own stages (the fixed band above shows trace 0's).
    paintStageBand(p, t, r.trace, area.adjusted(0, 3, 0, -3), false);
  } else {
    // Trace 0's stages are the fixed band: a summary instead.
    int forward = 0;
    for (const plan::StageSpan& s : t.stages) forward += s.backward ? 0 : 1;
    QString text = (t.devices.size() == 1 ? tr("1 device") : tr("%1 devices").arg(t.devices.size())) + QStringLiteral(" \u00b7 ") +
                   tr("%1 stages: %2 forward (%3), %4 backward (%5)")
                       .arg(t.stages.size())
                       .arg(forward)
                       .arg(formatDuration(t.forwardSeconds))
                       .arg(static_cast<int>(t.stages.size()) - forward)
                       .arg(formatDuration(t.backwardSeconds));
    if (trc.bottleneck >= 0 && t.totalSeconds > 0) {
      const plan::DeviceTimeline& d = t.devices[static_cast<size_t>(trc.bottleneck)];
      text += QStringLiteral(" \u00b7 ") + tr("busiest: rank %1 (busy %2%)")
                                              .arg(d.rank)
                                              .arg(100 * d.busySeconds() / t.totalSeconds, 0, 'f', 1);
    }
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.9));
    p.setFont(small);
    p.setPen(kMutedText);
    const QRect textRect = area.adjusted(8, 0, -8, 0);
    p.drawText(textRect, Qt::AlignVCenter | Qt::AlignLeft, QFontMetrics(small).elidedText(text, Qt::ElideRight, textRect.width()));
    p.setFont(font());
  }
  p.setPen(QColor(0, 0, 0, 30));
  p.drawLine(area.left(), area.top(), area.right(), area.top());
}

void StagesView::paintDeviceRow(QPainter& p, const Row& r, const QRect& area) const {
  const Trace& trc = m_traces[static_cast<size_t>(r.trace)];
  const plan::Timeline& t = *trc.timeline;
  const auto& events = t.devices[static_cast<size_t>(r.device)].events;
  const QRectF bar(area.left(), area.top() + 2, area.width(), area.height() - 4);
  const double left = area.left(), right = area.left() + area.width();
  const double t0 = m_viewport.start(), t1 = m_viewport.end();
  const bool hoveredRow = m_hover.trace == r.trace && m_hover.device == r.device;
  const int steps = static_cast<int>(m_stepMarks.size());
  auto marked = [&](const plan::Event& e) { return m_anyStepMarked && e.step >= 0 && e.step < steps && m_stepMarks[static_cast<size_t>(e.step)]; };

  if (hoveredRow) p.fillRect(area, QColor(0, 0, 0, 10));

  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  const QFontMetrics fmSmall(small);

  // Narrow events gather into one-pixel marks, one per pixel column they start in, coloured by
  // the kind and pass that take most of their time there.
  double pendingX0 = 0, pendingX1 = -1;
  double weight[3][2] = {{0, 0}, {0, 0}, {0, 0}};
  bool pendingMarked = false;
  auto flush = [&] {
    if (pendingX1 < pendingX0) return;
    int bestKind = 0, bestPass = 0;
    for (int k = 0; k < 3; ++k)
      for (int b = 0; b < 2; ++b)
        if (weight[k][b] > weight[bestKind][bestPass]) bestKind = k, bestPass = b;
    const QRectF rect(pendingX0, bar.top(), 1, bar.height());
    fillEvent(p, rect, static_cast<plan::EventKind>(bestKind), bestPass == 1);
    if (pendingMarked) p.fillRect(QRectF(rect.left(), bar.top() - 2, rect.width(), 2), QColor(0x21, 0x21, 0x21));
    pendingX1 = -1;
    pendingMarked = false;
    for (auto& w : weight) w[0] = w[1] = 0;
  };

  std::vector<QRectF> outlines;  // marked or hovered events, outlined last
  for (auto it = firstEndingAfter(events, t0); it != events.end() && it->start < t1; ++it) {
    const double x0 = std::max(left - 1, xOf(it->start));
    const double x1 = std::min(right + 1, xOf(it->end()));
    const bool isMarked = marked(*it);
    if (x1 - x0 >= 1.5) {
      flush();
      // A one-pixel gap separates wide neighbours.
      const QRectF rect(x0, bar.top(), x1 - x0 >= 4 ? x1 - x0 - 1 : x1 - x0, bar.height());
      fillEvent(p, rect, it->kind, it->backward);
      if (rect.width() > 28 && it->kind != plan::EventKind::Idle) {
        p.setFont(small);
        const bool dark = it->backward;
        p.setPen(dark ? QColor(Qt::white) : kText);
        const QRectF textRect = rect.adjusted(3, 0, -2, 0).intersected(QRectF(left, bar.top(), right - left, bar.height()));
        p.drawText(textRect, Qt::AlignVCenter | Qt::AlignLeft,
                   fmSmall.elidedText(QString::fromStdString(it->label), Qt::ElideRight, static_cast<int>(textRect.width())));
        p.setFont(font());
      }
      const bool hovered = hoveredRow && m_hover.event == static_cast<int>(it - events.begin());
      if (isMarked || hovered) outlines.push_back(rect);
    } else {
      const double column = std::floor(x0);
      if (pendingX1 >= pendingX0 && column != pendingX0) flush();
      pendingX0 = column;
      pendingX1 = std::max(pendingX1, column + 1);
      weight[static_cast<int>(it->kind)][it->backward ? 1 : 0] += it->duration;
      pendingMarked = pendingMarked || isMarked;
    }
  }
  flush();
  for (const QRectF& o : outlines) {
    p.setPen(QPen(QColor(0x21, 0x21, 0x21), 1));
    p.drawRect(o.adjusted(0.5, 0.5, -0.5, -0.5));
    if (o.width() > 4 && o.height() > 4) {
      p.setPen(QPen(QColor(Qt::white), 1));
      p.drawRect(o.adjusted(1.5, 1.5, -1.5, -1.5));
    }
  }

  // The slowest device of each computing stage: a red bar along its computation, a red end cap.
  for (auto it = firstStageEndingAfter(t.stages, t0); it != t.stages.end() && it->start < t1; ++it) {
    if (it->computationSeconds <= 0 || it->slowestRank != r.device) continue;
    const double c0 = std::max(left, xOf(it->start + it->communicationSeconds));
    const double c1 = std::min(right, xOf(it->end()));
    if (c1 < left || c0 > right) continue;
    p.fillRect(QRectF(c0, area.top() + area.height() - 3, std::max(1.0, c1 - c0), 2), kBottleneck);
    if (c1 - c0 >= 6) p.fillRect(QRectF(c1 - 3, area.top() + 1, 3, area.height() - 2), kBottleneck);
  }
  p.setPen(kRowLine);
  p.drawLine(area.left(), area.bottom(), area.right(), area.bottom());
}

void StagesView::paintStageBand(QPainter& p, const plan::Timeline& t, int trace, const QRect& area, bool fixedBand) const {
  const auto& marks = m_stageMarks[static_cast<size_t>(trace)];
  const double left = area.left(), right = area.left() + area.width();
  QFont small = font();
  if (!fixedBand) small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  const QFontMetrics fm(small);
  p.setFont(small);
  for (auto it = firstStageEndingAfter(t.stages, m_viewport.start());
       it != t.stages.end() && it->start < m_viewport.end(); ++it) {
    const int s = static_cast<int>(it - t.stages.begin());
    const double x0 = std::max(left, xOf(it->start));
    const double x1 = std::min(right, xOf(it->end()));
    if (x1 <= x0) continue;
    const QRectF r(x0, area.top(), x1 - x0, area.height());
    QColor fill;
    if (marks[static_cast<size_t>(s)])
      fill = kSelectFill;
    else if (it->backward)
      fill = s % 2 ? QColor(0xDC, 0xD2, 0xEE) : QColor(0xEA, 0xE4, 0xF5);
    else
      fill = s % 2 ? QColor(0xCF, 0xE0, 0xF3) : QColor(0xE2, 0xEC, 0xF8);
    p.fillRect(r, fill);
    if (x1 - x0 >= 3) {
      p.setPen(QColor(0xFF, 0xFF, 0xFF));
      p.drawLine(QPointF(std::round(x0) + 0.5, area.top()), QPointF(std::round(x0) + 0.5, area.bottom() + 1));
    }
    const bool hovered = m_hover.trace == trace && m_hover.stage == s && (fixedBand ? m_hover.header : m_hover.device < 0);
    if (hovered) {
      p.setPen(QPen(QColor(0, 0, 0, 110), 1));
      p.drawRect(r.adjusted(0.5, 0.5, -1, -1));
    }
    const QString name = stageName(t, s);
    const QString longName = name + QStringLiteral(" \u00b7 ") + formatDuration(it->seconds());
    const int room = static_cast<int>(x1 - x0) - 6;
    QString text = fm.horizontalAdvance(longName) <= room ? longName : fm.horizontalAdvance(name) <= room ? name : QString();
    if (!text.isEmpty()) {
      p.setPen(marks[static_cast<size_t>(s)] ? kText : (it->backward ? QColor(0x4A, 0x2C, 0x7D) : QColor(0x1D, 0x3F, 0x6E)));
      p.drawText(r, Qt::AlignCenter, text);
    }
  }
  p.setFont(font());
}

void StagesView::paintHeader(QPainter& p) const {
  const QRect plot = plotRect();
  const int w = width();
  p.save();
  p.setClipRect(QRect(0, 0, w, headerHeight()));
  p.fillRect(QRect(0, 0, w, headerHeight()), kHeaderFill);
  paintLegend(p, QRect(0, 0, w, kLegendHeight));
  p.setPen(QColor(0, 0, 0, 25));
  p.drawLine(0, kLegendHeight - 1, w, kLegendHeight - 1);
  paintRuler(p, QRect(plot.left(), kLegendHeight, plot.width(), kRulerHeight));
  const QRect band(plot.left(), kLegendHeight + kRulerHeight, plot.width(), kBandHeight);
  p.fillRect(band, palette().base());
  paintStageBand(p, timeline(0), 0, band.adjusted(0, 2, 0, -2), true);
  // Label column of the header.
  p.setPen(kMutedText);
  p.drawText(QRect(8, kLegendHeight, m_labelWidth - 14, kRulerHeight), Qt::AlignVCenter | Qt::AlignLeft, tr("Time"));
  p.drawText(QRect(8, kLegendHeight + kRulerHeight, m_labelWidth - 14, kBandHeight), Qt::AlignVCenter | Qt::AlignLeft,
             tr("Stages \u00b7 %1").arg(m_traces.front().name));
  p.setPen(QColor(0, 0, 0, 60));
  p.drawLine(0, headerHeight() - 1, w, headerHeight() - 1);
  p.setPen(QColor(0, 0, 0, 40));
  p.drawLine(m_labelWidth - 1, kLegendHeight, m_labelWidth - 1, headerHeight());
  p.restore();
}

void StagesView::paintLegend(QPainter& p, const QRect& area) const {
  const QFontMetrics fm(font());
  int x = area.left() + 8;
  const int sw = 14, sh = 10;
  const int y = area.top() + (area.height() - sh) / 2;
  auto item = [&](const QString& text, auto&& swatch) {
    swatch(QRect(x, y, sw, sh));
    x += sw + 5;
    p.setPen(kText);
    p.drawText(QRect(x, area.top(), fm.horizontalAdvance(text) + 2, area.height()), Qt::AlignVCenter | Qt::AlignLeft, text);
    x += fm.horizontalAdvance(text) + 16;
  };
  auto pair = [&](plan::EventKind kind) {
    return [&p, kind](const QRect& r) {
      fillEvent(p, QRect(r.left(), r.top(), r.width() / 2, r.height()), kind, false);
      fillEvent(p, QRect(r.left() + r.width() / 2, r.top(), r.width() - r.width() / 2, r.height()), kind, true);
    };
  };
  item(tr("computation"), pair(plan::EventKind::Compute));
  item(tr("communication"), pair(plan::EventKind::Communication));
  item(tr("idle"), [&p](const QRect& r) {
    fillEvent(p, r, plan::EventKind::Idle, false);
    p.setPen(QColor(0, 0, 0, 40));
    p.drawRect(r.adjusted(0, 0, -1, -1));
  });
  item(tr("bottleneck"), [&p](const QRect& r) {
    p.fillRect(QRect(r.left(), r.bottom() - 1, r.width(), 2), kBottleneck);
    p.fillRect(QRect(r.right() - 2, r.top(), 3, r.height()), kBottleneck);
  });
  item(tr("selected stage"), [&p](const QRect& r) { p.fillRect(r, kSelectFill); });
  p.setPen(kMutedText);
  const QString pass = tr("light: forward \u00b7 dark: backward");
  p.drawText(QRect(x, area.top(), fm.horizontalAdvance(pass) + 2, area.height()), Qt::AlignVCenter | Qt::AlignLeft, pass);
  x += fm.horizontalAdvance(pass) + 16;
  // The window, right-aligned when there is room.
  const QString window = tr("%1 \u2013 %2 of %3")
                             .arg(formatDuration(m_viewport.start()),
                                  formatDuration(m_viewport.end()),
                                  formatDuration(m_viewport.total()));
  const int ww = fm.horizontalAdvance(window);
  if (area.right() - 10 - ww > x) p.drawText(QRect(area.right() - 10 - ww, area.top(), ww + 2, area.height()), Qt::AlignVCenter, window);
}

void StagesView::paintRuler(QPainter& p, const QRect& area) const {
  p.fillRect(area, kHeaderFill);
  const QFontMetrics fm(font());
  p.save();
  p.setClipRect(area);
  for (const TimelineViewport::Tick& tick : m_viewport.ticks(area.width())) {
    const double x = std::round(xOf(tick.seconds)) + 0.5;
    p.setPen(QColor(0, 0, 0, 90));
    p.drawLine(QPointF(x, area.bottom() - 6), QPointF(x, area.bottom() + 1));
    p.setPen(kText);
    p.drawText(QRectF(x + 3, area.top(), fm.horizontalAdvance(tick.label) + 4, area.height() - 4),
               Qt::AlignBottom | Qt::AlignLeft, tick.label);
  }
  // The time under the mouse.
  if (m_mouse && plotRect().contains(*m_mouse)) {
    const QString text = formatDuration(timeAtX(m_mouse->x()));
    const int tw = fm.horizontalAdvance(text) + 10;
    const int x = std::clamp(m_mouse->x() - tw / 2, area.left(), area.right() - tw);
    const QRect box(x, area.top() + 2, tw, area.height() - 4);
    p.fillRect(box, QColor(0x33, 0x3A, 0x45));
    p.setPen(Qt::white);
    p.drawText(box, Qt::AlignCenter, text);
  }
  p.restore();
}

}  // namespace hap::studio
