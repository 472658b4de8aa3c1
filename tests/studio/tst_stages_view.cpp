// The stages view on a real plan (bert-tiny on the heterogeneous 2 A100 + 2 P100 cluster), driven
// as a user would (offscreen): keys W/S/A/D/F/0, Ctrl+wheel, drag, clicks on events, and the
// graph's selection coming back through selectNodes; a second trace (the plan's timeline ×1.3,
// standing in for a measured run). Saves screenshots to /tmp/shots/stages_*.png (or $HAP_SHOTS_DIR).
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QWheelEvent>
#include <QtTest>

#include <algorithm>
#include <memory>
#include <set>

#include "app/studio/core/display/units.h"
#include "app/studio/widgets/stages_view.h"
#include "tests/studio/plan_fixture.h"
#include "tests/studio/view_helpers.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::saveShot;

namespace {

// `t` with every time multiplied by `k` (a slower "measured" run of the same program).
plan::Timeline scaled(plan::Timeline t, double k) {
  for (auto& d : t.devices) {
    for (auto& e : d.events) {
      e.start *= k;
      e.duration *= k;
    }
    d.computeSeconds *= k;
    d.communicationSeconds *= k;
    d.idleSeconds *= k;
  }
  for (auto& s : t.stages) {
    s.start *= k;
    s.communicationSeconds *= k;
    s.computationSeconds *= k;
    for (double& c : s.deviceComputation) c *= k;
  }
  t.forwardSeconds *= k;
  t.backwardSeconds *= k;
  t.totalSeconds *= k;
  return t;
}

std::vector<ir::NodeId> sorted(std::vector<ir::NodeId> v) {
  std::sort(v.begin(), v.end());
  return v;
}

void sendWheel(QWidget& w, QPoint pos, int delta, Qt::KeyboardModifiers modifiers) {
  QWheelEvent e(QPointF(pos), QPointF(w.mapToGlobal(pos)), QPoint(), QPoint(0, delta), Qt::NoButton, modifiers,
                Qt::NoScrollPhase, false);
  QApplication::sendEvent(&w, &e);
}

void sendMouse(QWidget& w, QEvent::Type type, QPoint pos, Qt::MouseButton button, Qt::MouseButtons buttons) {
  QMouseEvent e(type, QPointF(pos), QPointF(w.mapToGlobal(pos)), button, buttons, Qt::NoModifier);
  QApplication::sendEvent(&w, &e);
}

}  // namespace

class TestStagesView : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    qRegisterMetaType<std::vector<hap::ir::NodeId>>();
    m_doc = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    QVERIFY(m_doc);
    const plan::Timeline& t = m_doc->timeline;
    QCOMPARE(t.devices.size(), m_doc->p().devices.size());
    QVERIFY(t.stages.size() >= 2);
    QVERIFY(plan::matchesPrediction(m_doc->p(), t));
    // The test's stage: the forward stage whose computation on rank 0 is longest, with nodes.
    double longest = 0;
    for (size_t s = 0; s < t.stages.size(); ++s) {
      const plan::StageSpan& st = t.stages[s];
      if (st.backward) continue;
      bool hasNode = false;
      for (int step : st.steps) hasNode = hasNode || m_doc->stepNode(step) != ir::kNone;
      if (hasNode && st.deviceComputation[0] > longest) {
        longest = st.deviceComputation[0];
        m_stage = static_cast<int>(s);
      }
    }
    QVERIFY(m_stage >= 0);
    // Its longest computation event on rank 0.
    const auto& events = t.devices[0].events;
    double widest = 0;
    for (size_t i = 0; i < events.size(); ++i)
      if (events[i].stage == m_stage && events[i].kind == plan::EventKind::Compute && events[i].duration > widest) {
        widest = events[i].duration;
        m_event = static_cast<int>(i);
      }
    QVERIFY(m_event >= 0);
    qInfo("bert-tiny on a100-p100-4: %zu devices, %zu stages, %zu events on rank 0, total %s; test stage %d, "
          "event %d (%s)",
          t.devices.size(), t.stages.size(), events.size(),
          qPrintable(formatDuration(t.totalSeconds)), m_stage, m_event,
          events[static_cast<size_t>(m_event)].label.c_str());
  }

  void placeholder() {
    StagesView v;
    v.resize(700, 260);
    QCOMPARE(v.traceCount(), 0);
    QCOMPARE(v.rowCount(), 0);
    QCOMPARE(v.viewport().total(), 0.0);
    QVERIFY(v.toolTipAt(QPoint(350, 130)).isEmpty());
    QTest::keyClick(&v, Qt::Key_W);  // nothing to zoom: no crash
    saveShot(v, QStringLiteral("stages_empty"));
    // Something (the placeholder text) is drawn in the middle.
    const QImage img = v.grab().toImage();
    const QColor base = img.pixelColor(5, 5);
    bool drawn = false;
    for (int x = 150; x < 550 && !drawn; ++x)
      for (int y = 110; y < 150 && !drawn; ++y) drawn = img.pixelColor(x, y) != base;
    QVERIFY(drawn);
  }

  void rowsAndSpan() {
    StagesView v;
    v.resize(1100, 360);
    v.setPlan(m_doc);
    const plan::Plan& p = m_doc->p();
    QCOMPARE(v.traceCount(), 1);
    QCOMPARE(v.traceName(0), QStringLiteral("Predicted"));
    QCOMPARE(v.rowCount(), static_cast<int>(p.devices.size()));
    QCOMPARE(v.viewport().total(), m_doc->timeline.totalSeconds);
    QCOMPARE(v.viewport().span(), m_doc->timeline.totalSeconds);
    QVERIFY(std::abs(v.viewport().total() - p.estimate.iterationSeconds) <= 1e-9 * p.estimate.iterationSeconds);
    // One row per device, top to bottom by rank, labelled "rank J · TYPE · MACHINE".
    int previous = -1;
    for (size_t j = 0; j < p.devices.size(); ++j) {
      const QRect row = v.rowRect(0, static_cast<int>(j));
      QVERIFY(!row.isEmpty());
      QVERIFY(row.top() > previous);
      previous = row.top();
      const QString tip = v.toolTipAt(QPoint(20, row.center().y()));
      const QString label = QStringLiteral("rank %1 \u00b7 %2 \u00b7 %3")
                                .arg(p.devices[j].rank)
                                .arg(QString::fromStdString(p.devices[j].type), QString::fromStdString(p.devices[j].machine));
      QVERIFY2(tip.contains(label.toHtmlEscaped()), qPrintable(tip));
      QVERIFY2(tip.contains(formatDuration(m_doc->timeline.devices[j].busySeconds())), qPrintable(tip));
    }
    QVERIFY(v.rowRect(0, static_cast<int>(p.devices.size())).isEmpty());
    // Every stage has its column in the header band, in time order, covering the plot.
    int right = -1;
    for (size_t s = 0; s < m_doc->timeline.stages.size(); ++s) {
      const QRect r = v.stageHeaderRect(static_cast<int>(s));
      QVERIFY(!r.isEmpty());
      QVERIFY(r.left() >= right - 1);
      right = r.right();
    }
    saveShot(v, QStringLiteral("stages_fit"));
  }

  void keyboardNavigation() {
    StagesView v;
    v.resize(1000, 320);
    v.setPlan(m_doc);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    const double total = m_doc->timeline.totalSeconds;
    TimelineViewport& vp = v.viewport();

    QTest::keyClick(&v, Qt::Key_W);
    QVERIFY(std::abs(vp.span() - total / TimelineViewport::kZoomFactor) < 1e-12 * total);
    QVERIFY(std::abs(vp.centre() - total / 2) < 1e-12 * total);  // about the centre: no mouse
    QTest::keyClick(&v, Qt::Key_S);
    QVERIFY(vp.isFit());
    QTest::keyClick(&v, Qt::Key_S);  // no further out than the whole iteration
    QVERIFY(vp.isFit());

    for (int i = 0; i < 4; ++i) QTest::keyClick(&v, Qt::Key_W);
    const double span = vp.span();
    QVERIFY(span < total / 2);
    const double start = vp.start();
    QTest::keyClick(&v, Qt::Key_D);
    QVERIFY(std::abs(vp.start() - (start + TimelineViewport::kPanFraction * span)) < 1e-12 * total);
    QCOMPARE(vp.span(), span);
    QTest::keyClick(&v, Qt::Key_A);
    QTest::keyClick(&v, Qt::Key_A);
    QVERIFY(std::abs(vp.start() - (start - TimelineViewport::kPanFraction * span)) < 1e-12 * total);
    for (int i = 0; i < 20; ++i) QTest::keyClick(&v, Qt::Key_A);
    QCOMPARE(vp.start(), 0.0);  // stops at the start
    for (int i = 0; i < 40; ++i) QTest::keyClick(&v, Qt::Key_D);
    QCOMPARE(vp.end(), total);  // and at the end
    QTest::keyClick(&v, Qt::Key_F);
    QVERIFY(vp.isFit());
    QTest::keyClick(&v, Qt::Key_W);
    QTest::keyClick(&v, Qt::Key_0);
    QVERIFY(vp.isFit());
    // Ctrl+W is not a zoom (the window's shortcuts keep it).
    QTest::keyClick(&v, Qt::Key_W, Qt::ControlModifier);
    QVERIFY(vp.isFit());
  }

  void wheelAndDrag() {
    StagesView v;
    v.resize(1000, 320);
    v.setPlan(m_doc);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    TimelineViewport& vp = v.viewport();
    const double total = m_doc->timeline.totalSeconds;
    // Ctrl+wheel zooms about the mouse: the time under it stays under it.
    const QRect row = v.rowRect(0, 1);
    const QRect ev = v.eventRect(0, 1, 0);  // at fit, the plot starts where the first event does
    QVERIFY(!ev.isEmpty());
    const int plotLeft = ev.left();
    const int plotWidth = row.right() + 1 - plotLeft;
    const QPoint at(plotLeft + plotWidth * 3 / 4, row.center().y());
    const double before = vp.xToTime(at.x() - plotLeft, plotWidth);
    sendWheel(v, at, 120, Qt::ControlModifier);
    QVERIFY(std::abs(vp.span() - total / TimelineViewport::kZoomFactor) < 1e-12 * total);
    QVERIFY(std::abs(vp.xToTime(at.x() - plotLeft, plotWidth) - before) < 1e-9 * total);
    sendWheel(v, at, 360, Qt::ControlModifier);
    QVERIFY(vp.span() < total / 2);
    QVERIFY(std::abs(vp.xToTime(at.x() - plotLeft, plotWidth) - before) < 1e-9 * total);

    // Dragging left by 100 px shows later times by 100 px worth.
    QSignalSpy spy(&v, &StagesView::nodesSelected);
    const double start = vp.start(), perPixel = vp.span() / plotWidth;
    sendMouse(v, QEvent::MouseButtonPress, at, Qt::LeftButton, Qt::LeftButton);
    sendMouse(v, QEvent::MouseMove, at - QPoint(50, 0), Qt::NoButton, Qt::LeftButton);
    sendMouse(v, QEvent::MouseMove, at - QPoint(100, 0), Qt::NoButton, Qt::LeftButton);
    sendMouse(v, QEvent::MouseButtonRelease, at - QPoint(100, 0), Qt::LeftButton, Qt::NoButton);
    QVERIFY(std::abs(vp.start() - (start + 100 * perPixel)) < 1e-6 * total);
    QCOMPARE(spy.count(), 0);  // a drag is not a click

    // The plain wheel scrolls rows when they do not fit.
    v.addTrace(QStringLiteral("Measured"), scaled(m_doc->timeline, 1.3));
    v.resize(1000, 200);
    auto* rows = v.findChild<QScrollBar*>(QStringLiteral("stagesRowScroll"));
    QVERIFY(rows && rows->isVisible());
    QCOMPARE(rows->value(), 0);
    const QRect firstRow = v.rowRect(0, 0);
    const double spanBefore = vp.span();
    sendWheel(v, QPoint(at.x(), 150), -120, Qt::NoModifier);
    QVERIFY(rows->value() > 0);
    QVERIFY(v.rowRect(0, 0) != firstRow);
    QCOMPARE(vp.span(), spanBefore);  // scrolling rows is not zooming
    sendWheel(v, QPoint(at.x(), 150), -1200, Qt::NoModifier);
    QCOMPARE(rows->value(), rows->maximum());
    QVERIFY(!v.rowRect(1, 3).isEmpty());  // the last row is on screen
  }

  void clickSelectsTheStage() {
    StagesView v;
    v.resize(1100, 320);
    v.setPlan(m_doc);
    v.zoomToStage(m_stage);
    const plan::StageSpan& st = m_doc->timeline.stages[static_cast<size_t>(m_stage)];
    QVERIFY(v.viewport().start() <= st.start && st.end() <= v.viewport().end());
    QVERIFY(v.viewport().span() < 1.2 * st.seconds());
    saveShot(v, QStringLiteral("stages_zoomed"));

    const QRect r = v.eventRect(0, 0, m_event);
    QVERIFY2(r.width() >= 3, qPrintable(QStringLiteral("event %1 px wide").arg(r.width())));
    // The tooltip names the event as the plan does.
    const plan::Event& e = m_doc->timeline.devices[0].events[static_cast<size_t>(m_event)];
    const QString tip = v.toolTipAt(r.center());
    QVERIFY2(tip.contains(QString::fromStdString(e.label).toHtmlEscaped()), qPrintable(tip));
    QVERIFY(tip.contains(QStringLiteral("computation")));
    QVERIFY(tip.contains(QStringLiteral("forward")));
    QVERIFY(tip.contains(QStringLiteral("F%1").arg(m_stage + 1)));
    QVERIFY(tip.contains(formatDuration(e.duration)));
    QVERIFY(tip.contains(formatDuration(e.start)));

    // The stage's tooltip in the header band gives the plan's figures for it.
    const plan::Plan& p = m_doc->p();
    // The simulation adds a stage without steps where the gradient buckets outlast backward.
    QCOMPARE(m_doc->timeline.stages.size(), p.stages.size() + (m_doc->timeline.exposedGradientSeconds > 0 ? 1 : 0));
    const plan::Stage& planned = p.stages[static_cast<size_t>(m_stage)];
    QCOMPARE(planned.backward, false);
    const QString stageTip = v.toolTipAt(v.stageHeaderRect(m_stage).center());
    QVERIFY2(stageTip.contains(QStringLiteral("Stage F%1").arg(m_stage + 1)), qPrintable(stageTip));
    QVERIFY2(stageTip.contains(QStringLiteral("duration ") + formatDuration(planned.seconds())), qPrintable(stageTip));
    QVERIFY2(stageTip.contains(QStringLiteral("communication ") + formatDuration(planned.communicationSeconds)),
             qPrintable(stageTip));
    QVERIFY2(stageTip.contains(QStringLiteral("computation ") + formatDuration(planned.computationSeconds)),
             qPrintable(stageTip));
    const plan::PlanDevice& slowest = p.devices[static_cast<size_t>(st.slowestRank)];
    QVERIFY2(stageTip.contains(QStringLiteral("slowest: rank %1 \u00b7 %2").arg(slowest.rank).arg(QString::fromStdString(slowest.type))),
             qPrintable(stageTip));

    QSignalSpy spy(&v, &StagesView::nodesSelected);
    QTest::mouseClick(&v, Qt::LeftButton, Qt::NoModifier, r.center());
    QCOMPARE(spy.count(), 1);
    QCOMPARE(v.selectedStage(), m_stage);
    QCOMPARE(v.selectedTrace(), 0);
    QCOMPARE(v.highlightedStages(), std::vector<int>{m_stage});
    // Exactly the imported nodes of the stage's steps.
    std::set<ir::NodeId> expected;
    for (int step : st.steps) {
      const plan::PlanStep& ps = m_doc->p().steps[static_cast<size_t>(step)];
      if (ps.node < 0) continue;
      const ir::NodeId n = m_doc->importedNode[static_cast<size_t>(ps.node)];
      if (n != ir::kNone) expected.insert(n);
    }
    QVERIFY(!expected.empty());
    const auto nodes = spy.at(0).at(0).value<std::vector<ir::NodeId>>();
    QCOMPARE(sorted(nodes), std::vector<ir::NodeId>(expected.begin(), expected.end()));
    QCOMPARE(nodes.size(), expected.size());  // no repeats
    saveShot(v, QStringLiteral("stages_clicked"));

    // The header band selects too; Esc clears (and says so).
    const int other = m_stage + 1 < static_cast<int>(m_doc->timeline.stages.size()) ? m_stage + 1 : m_stage - 1;
    v.fit();
    const QRect band = v.stageHeaderRect(other);
    QVERIFY(!band.isEmpty());
    QTest::mouseClick(&v, Qt::LeftButton, Qt::NoModifier, band.center());
    QCOMPARE(spy.count(), 2);
    QCOMPARE(v.selectedStage(), other);
    QCOMPARE(sorted(spy.at(1).at(0).value<std::vector<ir::NodeId>>()), sorted(v.stageNodes(0, other)));
    QTest::keyClick(&v, Qt::Key_Escape);
    QCOMPARE(spy.count(), 3);
    QVERIFY(spy.at(2).at(0).value<std::vector<ir::NodeId>>().empty());
    QCOMPARE(v.selectedStage(), -1);
    // Double-click zooms to the stage.
    QTest::mouseDClick(&v, Qt::LeftButton, Qt::NoModifier, v.stageHeaderRect(m_stage).center());
    QVERIFY(v.viewport().start() <= st.start && st.end() <= v.viewport().end());
    QVERIFY(v.viewport().span() < 1.2 * st.seconds());
  }

  void selectNodesHighlights() {
    StagesView v;
    v.resize(1100, 320);
    v.setPlan(m_doc);
    QSignalSpy spy(&v, &StagesView::nodesSelected);
    const plan::Event& e = m_doc->timeline.devices[0].events[static_cast<size_t>(m_event)];
    const ir::NodeId node = m_doc->stepNode(e.step);
    QVERIFY(node != ir::kNone);
    // Start far away from the stage: the last stage, zoomed in.
    const int last = static_cast<int>(m_doc->timeline.stages.size()) - 1;
    v.zoomToStage(last);
    v.viewport().zoom(4, v.viewport().end());
    const plan::StageSpan& st = m_doc->timeline.stages[static_cast<size_t>(m_stage)];
    QVERIFY(v.viewport().start() > st.end());

    v.selectNodes({node});
    QCOMPARE(spy.count(), 0);  // not re-emitted
    // The node's steps (its computation and the conversions preparing its inputs) ...
    const std::vector<int> steps = m_doc->stepsOfNode(node);
    QCOMPARE(v.highlightedSteps(), steps);
    // ... and every stage holding one of them, forward and backward.
    std::vector<int> stages;
    for (size_t s = 0; s < m_doc->timeline.stages.size(); ++s)
      for (int step : m_doc->timeline.stages[s].steps)
        if (std::find(steps.begin(), steps.end(), step) != steps.end()) {
          stages.push_back(static_cast<int>(s));
          break;
        }
    QCOMPARE(v.highlightedStages(), stages);
    QVERIFY(std::find(stages.begin(), stages.end(), m_stage) != stages.end());
    QVERIFY(stages.size() >= 2);  // its forward and its backward
    QCOMPARE(v.selectedStage(), stages.front());
    // Brought into view.
    QVERIFY(st.end() > v.viewport().start() && st.start < v.viewport().end());
    v.fit();
    // The header band shows the stage selected (amber).
    const QImage img = v.grab().toImage();
    const QRect band = v.stageHeaderRect(m_stage);
    QVERIFY(!band.isEmpty());
    const QColor c = img.pixelColor(band.left() + 2, band.top() + 3);
    QVERIFY2(c.red() > 240 && c.green() > 190 && c.green() < 230 && c.blue() < 120, qPrintable(c.name()));
    saveShot(v, QStringLiteral("stages_selection"));
    v.zoomToStage(m_stage);
    saveShot(v, QStringLiteral("stages_selection_zoomed"));

    // Unknown and empty selections clear it, silently.
    v.selectNodes({});
    QVERIFY(v.highlightedStages().empty());
    QCOMPARE(v.selectedStage(), -1);
    v.selectNodes({999999});
    QVERIFY(v.highlightedSteps().empty());
    QCOMPARE(spy.count(), 0);
  }

  void twoTraces() {
    StagesView v;
    v.resize(1100, 420);
    v.setPlan(m_doc);
    const plan::Timeline measured = scaled(m_doc->timeline, 1.3);
    const int devices = static_cast<int>(m_doc->timeline.devices.size());
    v.addTrace(QStringLiteral("Measured"), measured);
    QCOMPARE(v.traceCount(), 2);
    QCOMPARE(v.rowCount(), 2 * devices);
    QVERIFY(std::abs(v.viewport().total() - 1.3 * m_doc->timeline.totalSeconds) < 1e-12);
    QVERIFY(v.viewport().isFit());
    QVERIFY(v.rowRect(1, 0).top() > v.rowRect(0, devices - 1).bottom());
    saveShot(v, QStringLiteral("stages_two_traces"));

    // A click on the measured trace selects that trace's stage, with the same nodes.
    QSignalSpy spy(&v, &StagesView::nodesSelected);
    v.zoomToStage(m_stage, 1);
    const QRect r = v.eventRect(1, 0, m_event);
    QVERIFY(!r.isEmpty());
    QTest::mouseClick(&v, Qt::LeftButton, Qt::NoModifier, r.center());
    QCOMPARE(spy.count(), 1);
    QCOMPARE(v.selectedTrace(), 1);
    QCOMPARE(v.selectedStage(), m_stage);
    QCOMPARE(sorted(spy.at(0).at(0).value<std::vector<ir::NodeId>>()), sorted(v.stageNodes(0, m_stage)));
    QVERIFY(v.highlightedStages(0).empty());
    QCOMPARE(v.highlightedStages(1), std::vector<int>{m_stage});
    // After the predicted trace's end (the axis runs to the measured one's): a click clears.
    v.fit();
    const QRect row0 = v.rowRect(0, 0);
    const QRect lastEvent = v.eventRect(0, 0, static_cast<int>(m_doc->timeline.devices[0].events.size()) - 1);
    const QPoint after((lastEvent.right() + row0.right()) / 2, row0.center().y());
    QTest::mouseClick(&v, Qt::LeftButton, Qt::NoModifier, after);
    QCOMPARE(spy.count(), 2);
    QVERIFY(spy.at(1).at(0).value<std::vector<ir::NodeId>>().empty());
    QCOMPARE(v.selectedStage(), -1);
    // selectNodes marks both traces.
    const ir::NodeId node = m_doc->stepNode(m_doc->timeline.devices[0].events[static_cast<size_t>(m_event)].step);
    v.selectNodes({node});
    QCOMPARE(v.highlightedStages(0), v.highlightedStages(1));
    QVERIFY(!v.highlightedStages(1).empty());
    saveShot(v, QStringLiteral("stages_two_traces_selection"));
    // setPlan starts over with one trace.
    v.setPlan(m_doc);
    QCOMPARE(v.traceCount(), 1);
    QCOMPARE(v.rowCount(), devices);
    v.clear();
    QCOMPARE(v.traceCount(), 0);
    QVERIFY(v.plan() == nullptr);
  }

  // BERT-Base on 64 devices has ~64 rows of thousands of events: painting stays fast.
  void paintsLargeTimelinesFast() {
    plan::Timeline big;
    const int devices = 64, stages = 400, perStage = 12;
    double clock = 0;
    for (int j = 0; j < devices; ++j) big.devices.push_back({j, {}, 0, 0, 0});
    for (int s = 0; s < stages; ++s) {
      plan::StageSpan span;
      span.backward = s >= stages / 2;
      span.start = clock;
      span.communicationSeconds = 20e-6;
      span.deviceComputation.assign(devices, 0);
      for (int j = 0; j < devices; ++j) {
        double t = clock;
        big.devices[static_cast<size_t>(j)].events.push_back(
            {plan::EventKind::Communication, t, 20e-6, s * perStage, s, span.backward, "all-gather x"});
        t += 20e-6;
        for (int k = 0; k < perStage; ++k) {
          const double d = (5 + (j * 7 + k * 3) % 11) * 1e-6;
          big.devices[static_cast<size_t>(j)].events.push_back(
              {plan::EventKind::Compute, t, d, s * perStage + k, s, span.backward, "linear layers.0.attn.q"});
          t += d;
          span.deviceComputation[static_cast<size_t>(j)] += d;
        }
      }
      span.computationSeconds = *std::max_element(span.deviceComputation.begin(), span.deviceComputation.end());
      span.slowestRank = static_cast<int>(std::max_element(span.deviceComputation.begin(), span.deviceComputation.end()) -
                                          span.deviceComputation.begin());
      for (int j = 0; j < devices; ++j) {
        const double t = clock + 20e-6 + span.deviceComputation[static_cast<size_t>(j)];
        const double idle = span.computationSeconds - span.deviceComputation[static_cast<size_t>(j)];
        if (idle > 0)
          big.devices[static_cast<size_t>(j)].events.push_back({plan::EventKind::Idle, t, idle, -1, s, span.backward, "idle"});
      }
      clock = span.end();
      big.stages.push_back(span);
    }
    big.totalSeconds = clock;
    size_t events = 0;
    for (auto& d : big.devices) {
      events += d.events.size();
      for (const plan::Event& e : d.events)
        (e.kind == plan::EventKind::Compute ? d.computeSeconds
         : e.kind == plan::EventKind::Idle  ? d.idleSeconds
                                            : d.communicationSeconds) += e.duration;
    }
    big.forwardSeconds = big.stages[stages / 2].start;
    big.backwardSeconds = clock - big.forwardSeconds;

    StagesView v;
    v.resize(1400, 900);
    v.addTrace(QStringLiteral("Synthetic"), big);
    QCOMPARE(v.rowCount(), devices);
    QElapsedTimer timer;
    timer.start();
    QPixmap fit = v.grab();
    const qint64 fitMs = timer.elapsed();
    v.zoomToStage(stages / 2);
    timer.restart();
    QPixmap zoomed = v.grab();
    const qint64 zoomMs = timer.elapsed();
    qInfo("%zu events on %d rows: fit painted in %lld ms, one stage in %lld ms", events, devices, fitMs, zoomMs);
    QVERIFY2(fitMs < 400, qPrintable(QString::number(fitMs)));
    QVERIFY2(zoomMs < 400, qPrintable(QString::number(zoomMs)));
    saveShot(v, QStringLiteral("stages_synthetic_64_stage"));
    v.fit();
    saveShot(v, QStringLiteral("stages_synthetic_64_fit"));
  }

 private:
  std::shared_ptr<const PlanDocument> m_doc;
  int m_stage = -1;  // a forward stage with nodes
  int m_event = -1;  // rank 0's longest computation in it
};

QTEST_MAIN(TestStagesView)
#include "tst_stages_view.moc"
