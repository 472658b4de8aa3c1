// The graph view, offscreen: laying out bert-tiny off the GUI thread, clicking and double-clicking
// boxes, reveal and select from outside, stale layouts dropped, highlights, colouring, exports,
// the scene-building time for 2,000 boxes, and the plan overlay (issue 18 item 3: plan colour
// modes, annotated edges, "Compute under variant" pins, highlighted nodes). Screenshots go to
// /tmp/shots/.
#include <QtTest>

#include <QApplication>
#include <QContextMenuEvent>
#include <QDir>
#include <QElapsedTimer>
#include <QGraphicsScene>
#include <QImage>
#include <QMenu>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <set>

#include "app/studio/core/jobs/layout_job.h"
#include "app/studio/core/graph/plan_overlay.h"
#include "app/studio/widgets/graph_scene_item.h"
#include "app/studio/widgets/graph_view.h"
#include "engine/import/importer.h"
#include "tests/studio/plan_fixture.h"

using namespace hap;
using namespace hap::studio;

Q_DECLARE_METATYPE(hap::studio::Selection)

namespace {

constexpr int kLayoutTimeoutMs = 20000;

std::shared_ptr<const ir::Graph> loadZoo(const char* file) {
  return std::make_shared<const ir::Graph>(
      import::importModel(qgetenv("HAP_ZOO_DIR").toStdString() + "/" + file));
}

void shoot(QWidget& w, const QString& name) {
  QDir().mkpath(QStringLiteral("/tmp/shots"));
  QVERIFY(w.grab().save(QStringLiteral("/tmp/shots/%1.png").arg(name)));
}

// `count` relu ops in a chain, in `count / 100` scopes of 100 (so the collapsed layout is small).
ir::Graph chainGraph(int count) {
  ir::Graph g;
  ir::ValueId v = g.addValue(ir::ValueKind::Input, "x", {4, 8}, ir::DType::Float32);
  g.inputs.push_back(v);
  for (int i = 0; i < count; ++i) {
    ir::Node n;
    n.op = i % 3 == 0 ? "aten::linear" : (i % 3 == 1 ? "aten::relu" : "aten::add");
    n.scope = "block" + std::to_string(i / 100);
    ir::Arg a;
    a.name = "input";
    a.type = "Tensor";
    a.kind = ir::Arg::Kind::Tensor;
    a.values = {v};
    n.args.push_back(a);
    v = g.addValue(ir::ValueKind::Activation, "v" + std::to_string(i), {4, 8}, ir::DType::Float32);
    n.outputs = {v};
    n.cost.flops = 100.0 * (i + 1);
    g.addNode(std::move(n));
  }
  g.loss = v;
  return g;
}

// `copies` copies of g's nodes one after another, each reading the same inputs and parameters
// (scopes prefixed "copyK."): a big graph of real ops for timing.
ir::Graph repeated(const ir::Graph& g, int copies) {
  ir::Graph out;
  out.values.reserve(g.values.size() * static_cast<size_t>(copies));
  std::vector<ir::ValueId> sourceId(g.values.size(), ir::kNone);
  for (const ir::Value& v : g.values)
    if (v.kind != ir::ValueKind::Activation) {
      sourceId[static_cast<size_t>(v.id)] = out.addValue(v.kind, v.name, v.shape, v.dtype);
      out.values.back().low = v.low;
      out.values.back().high = v.high;
    }
  for (ir::ValueId v : g.inputs) out.inputs.push_back(sourceId[static_cast<size_t>(v)]);
  for (ir::ValueId v : g.parameters) out.parameters.push_back(sourceId[static_cast<size_t>(v)]);
  for (ir::ValueId v : g.buffers) out.buffers.push_back(sourceId[static_cast<size_t>(v)]);
  for (int c = 0; c < copies; ++c) {
    std::vector<ir::ValueId> id = sourceId;
    for (const ir::Node& n : g.nodes) {
      ir::Node copy = n;
      copy.id = ir::kNone;
      copy.scope = "copy" + std::to_string(c) + (n.scope.empty() ? "" : "." + n.scope);
      for (ir::Arg& a : copy.args)
        for (ir::ValueId& v : a.values) v = id[static_cast<size_t>(v)];
      copy.outputs.clear();
      for (ir::ValueId o : n.outputs) {
        const ir::Value& v = g.value(o);
        id[static_cast<size_t>(o)] =
            out.addValue(ir::ValueKind::Activation, v.name, v.shape, v.dtype);
        copy.outputs.push_back(id[static_cast<size_t>(o)]);
      }
      out.addNode(std::move(copy));
    }
    if (c == copies - 1) out.loss = id[static_cast<size_t>(g.loss)];
  }
  return out;
}

// Right-clicks `pos` on the view's viewport and, while the menu is open, runs `inMenu` on it
// (then closes it). Returns whether the menu opened.
bool withContextMenu(GraphView& view, QPoint pos, const std::function<void(QMenu*)>& inMenu) {
  bool opened = false;
  QTimer::singleShot(0, &view, [&] {
    auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
    if (!menu) return;
    opened = true;
    inMenu(menu);
    if (QApplication::activePopupWidget()) QApplication::activePopupWidget()->close();
    menu->close();
  });
  QContextMenuEvent event(QContextMenuEvent::Mouse, pos, view.viewport()->mapToGlobal(pos));
  QApplication::sendEvent(view.viewport(), &event);
  return opened;
}

QMenu* pinMenu(QMenu* menu) {
  for (QAction* a : menu->actions())
    if (a->menu() && a->menu()->objectName() == QStringLiteral("graph.computeUnderVariant"))
      return a->menu();
  return nullptr;
}

int countBoxes(const Layout& l, LayoutBox::Kind kind) {
  return static_cast<int>(std::count_if(l.boxes.begin(), l.boxes.end(),
                                        [&](const LayoutBox& b) { return b.kind == kind; }));
}

bool hasCluster(const Layout& l, ScopeId s) {
  return std::any_of(l.clusters.begin(), l.clusters.end(),
                     [&](const LayoutCluster& c) { return c.scope == s; });
}

}  // namespace

class TestGraphView : public QObject {
  Q_OBJECT

 private:
  std::shared_ptr<const ir::Graph> m_bert;
  std::shared_ptr<const ScopeTree> m_tree;
  std::unique_ptr<GraphView> m_view;

  // A fresh view showing bert-tiny, laid out.
  bool openBert() {
    m_view = std::make_unique<GraphView>();
    m_view->resize(1000, 760);
    m_view->show();
    if (!QTest::qWaitForWindowExposed(m_view.get())) return false;
    QSignalSpy finished(m_view.get(), &GraphView::layoutFinished);
    m_view->setGraph(m_bert, m_tree);
    return finished.wait(kLayoutTimeoutMs) && m_view->currentLayout();
  }

  bool waitForLayout() {
    QSignalSpy finished(m_view.get(), &GraphView::layoutFinished);
    return finished.wait(kLayoutTimeoutMs);
  }

  // The first node whose scope is `path` or inside it.
  ir::NodeId firstNodeIn(const std::string& path) const {
    const ScopeId s = m_tree->find(path);
    for (const ir::Node& n : m_bert->nodes)
      if (m_tree->contains(s, m_tree->scopeOfNode(n.id))) return n.id;
    return ir::kNone;
  }

  QPoint onScreen(QPointF scenePos) {
    m_view->centerOn(scenePos);
    return m_view->mapFromScene(scenePos);
  }

 private Q_SLOTS:
  void initTestCase() {
    qRegisterMetaType<Selection>();
    m_bert = loadZoo("bert-tiny.pt");
    m_tree = std::make_shared<const ScopeTree>(*m_bert);
    QVERIFY(m_tree->find("layers.0") > 0);
  }

  void layoutJobDeliversOnlyTheLatest() {
    LayoutJob job;
    QSignalSpy ready(&job, &LayoutJob::layoutReady);
    QSignalSpy busy(&job, &LayoutJob::busyChanged);
    CollapseState state(*m_tree);
    quint64 last = 0;
    for (ScopeId s = 1; s < m_tree->size() && s <= 5; ++s) {
      state.setExpanded(s, true);
      last = job.request(m_bert, m_tree, state);
    }
    QVERIFY(job.busy());
    QVERIFY(ready.wait(kLayoutTimeoutMs));
    QTest::qWait(200);  // older results, had they been delivered, would be here by now
    QCOMPARE(ready.count(), 1);
    QCOMPARE(ready.at(0).at(1).value<quint64>(), last);
    const auto layout = ready.at(0).at(0).value<std::shared_ptr<const Layout>>();
    QVERIFY(layout);
    const Layout expected = layoutGraph(*m_bert, *m_tree, state);
    QCOMPARE(layout->boxes.size(), expected.boxes.size());
    QCOMPARE(layout->clusters.size(), expected.clusters.size());
    QCOMPARE(layout->edges, expected.edges);
    QVERIFY(!job.busy());
    QCOMPARE(busy.count(), 2);
    QCOMPARE(busy.at(0).at(0).toBool(), true);
    QCOMPARE(busy.at(1).at(0).toBool(), false);

    // A cancelled request delivers nothing.
    job.request(m_bert, m_tree, CollapseState(*m_tree));
    job.cancel();
    QVERIFY(!job.busy());
    QVERIFY(!ready.wait(500));
  }

  void setGraphShowsTheCollapsedGraph() {
    QVERIFY(openBert());
    const Layout& l = *m_view->currentLayout();
    QCOMPARE(countBoxes(l, LayoutBox::Kind::CollapsedScope),
             static_cast<int>(m_tree->scope(kRootScope).children.size()));
    QCOMPARE(countBoxes(l, LayoutBox::Kind::Input), static_cast<int>(m_bert->inputs.size()));
    QVERIFY(l.clusters.empty());
    QCOMPARE(m_view->collapseState(), CollapseState(*m_tree));
    QVERIFY(!m_view->layoutBusy());
    QCOMPARE(m_view->scene()->items().size(), qsizetype(l.boxes.size() + l.edges.size()));
    shoot(*m_view, QStringLiteral("graph_view_collapsed_opfamily"));
  }

  void clickSelects() {
    QVERIFY(openBert());
    QSignalSpy selected(m_view.get(), &GraphView::selectionChanged);
    // A top-level op (the loss).
    const ir::NodeId loss = m_bert->value(m_bert->loss).producer;
    auto centre = m_view->nodeBoxCentre(loss);
    QVERIFY(centre);
    QTest::mouseClick(m_view->viewport(), Qt::LeftButton, {}, onScreen(*centre));
    QCOMPARE(selected.count(), 1);
    QCOMPARE(selected.at(0).at(0).value<Selection>(), Selection::node(loss));
    QCOMPARE(m_view->selection(), Selection::node(loss));
    // Its incoming edge is highlighted.
    int highlighted = 0;
    for (QGraphicsItem* item : m_view->scene()->items())
      if (item->type() == GraphEdgeItem::Type &&
          static_cast<GraphEdgeItem*>(item)->emphasis() != ItemEmphasis::Normal)
        ++highlighted;
    QVERIFY(highlighted >= 1);

    // A collapsed scope (the ModuleList of layers), then a graph input.
    const ScopeId layer = m_tree->find("layers");
    centre = m_view->scopeBoxCentre(layer);
    QVERIFY(centre);
    QTest::mouseClick(m_view->viewport(), Qt::LeftButton, {}, onScreen(*centre));
    QCOMPARE(m_view->selection(), Selection::scope(layer));
    const ir::ValueId x = m_bert->inputs.front();
    centre = m_view->inputBoxCentre(x);
    QVERIFY(centre);
    QTest::mouseClick(m_view->viewport(), Qt::LeftButton, {}, onScreen(*centre));
    QCOMPARE(m_view->selection(), Selection::value(x));
    QCOMPARE(selected.count(), 3);

    // Empty space clears.
    const QRectF r = m_view->scene()->sceneRect();
    QTest::mouseClick(m_view->viewport(), Qt::LeftButton, {},
                      onScreen(r.topLeft() + QPointF(8, 8)));
    QCOMPARE(m_view->selection(), Selection());
    QCOMPARE(selected.count(), 4);
  }

  void doubleClickExpandsAndCollapses() {
    QVERIFY(openBert());
    const ScopeId layer = m_tree->find("layers");
    auto centre = m_view->scopeBoxCentre(layer);
    QVERIFY(centre);
    const QPoint before = onScreen(*centre);
    QSignalSpy finished(m_view.get(), &GraphView::layoutFinished);
    QTest::mouseDClick(m_view->viewport(), Qt::LeftButton, {}, before);
    QVERIFY(m_view->collapseState().expanded(layer));
    QVERIFY(finished.wait(kLayoutTimeoutMs));
    QVERIFY(hasCluster(*m_view->currentLayout(), layer));
    QVERIFY(!m_view->scopeBoxCentre(layer));
    QCOMPARE(m_view->layoutState(), m_view->collapseState());
    // The frame's label strip: double-click collapses it again.
    const QRectF frame = m_view->clusterRect(layer);
    QVERIFY(!frame.isEmpty());
    const QPoint label = onScreen(frame.topLeft() + QPointF(20, 6));
    shoot(*m_view, QStringLiteral("graph_view_layer0_expanded"));
    QTest::mouseDClick(m_view->viewport(), Qt::LeftButton, {}, label);
    QVERIFY(!m_view->collapseState().expanded(layer));
    QVERIFY(finished.wait(kLayoutTimeoutMs));
    QVERIFY(m_view->scopeBoxCentre(layer));
    QVERIFY(!hasCluster(*m_view->currentLayout(), layer));
  }

  void revealExpandsAncestors() {
    QVERIFY(openBert());
    // The deepest node.
    ir::NodeId deep = 0;
    for (const ir::Node& n : m_bert->nodes)
      if (m_tree->scope(m_tree->scopeOfNode(n.id)).depth >
          m_tree->scope(m_tree->scopeOfNode(deep)).depth)
        deep = n.id;
    QVERIFY(m_tree->scope(m_tree->scopeOfNode(deep)).depth >= 2);
    QSignalSpy selected(m_view.get(), &GraphView::selectionChanged);
    m_view->reveal(deep);
    QVERIFY(waitForLayout());
    for (ScopeId s = m_tree->scopeOfNode(deep); s > kRootScope; s = m_tree->scope(s).parent)
      QVERIFY(m_view->collapseState().expanded(s));
    const auto centre = m_view->nodeBoxCentre(deep);
    QVERIFY(centre);
    const int box = m_view->currentLayout()->boxOfNode(*m_tree, m_view->layoutState(), deep);
    QCOMPARE(m_view->currentLayout()->boxes[static_cast<size_t>(box)].kind, LayoutBox::Kind::Op);
    QCOMPARE(m_view->selection(), Selection::node(deep));
    QCOMPARE(selected.count(), 1);
    // Centred (vertically: the scene is narrower than the viewport, so x is Qt's to align).
    const QPoint onView = m_view->mapFromScene(*centre);
    QVERIFY(m_view->viewport()->rect().contains(onView));
    QVERIFY2(std::abs(onView.y() - m_view->viewport()->rect().center().y()) < 40,
             qPrintable(QStringLiteral("node at (%1, %2), scene %3x%4, view scale %5")
                            .arg(onView.x()).arg(onView.y())
                            .arg(m_view->scene()->sceneRect().width())
                            .arg(m_view->scene()->sceneRect().height())
                            .arg(m_view->transform().m11())));
  }

  void selectScopeFromOutside() {
    QVERIFY(openBert());
    ScopeId deep = -1;
    for (const Scope& s : m_tree->scopes())
      if (s.depth >= 2) deep = s.id;
    QVERIFY(deep > 0);
    m_view->select(Selection::scope(deep));
    QVERIFY(waitForLayout());
    QVERIFY(m_view->scopeBoxCentre(deep));  // visible, still collapsed
    QVERIFY(!m_view->collapseState().expanded(deep));
    QCOMPARE(m_view->selection(), Selection::scope(deep));
    int selectedBoxes = 0;
    for (QGraphicsItem* item : m_view->scene()->items())
      if (item->type() == GraphBoxItem::Type &&
          static_cast<GraphBoxItem*>(item)->emphasis() == ItemEmphasis::Selected) {
        ++selectedBoxes;
        QCOMPARE(static_cast<GraphBoxItem*>(item)->id(), deep);
      }
    QCOMPARE(selectedBoxes, 1);
  }

  void rapidRequestsEndWithTheLatestState() {
    QVERIFY(openBert());
    QSignalSpy finished(m_view.get(), &GraphView::layoutFinished);
    const ScopeId l0 = m_tree->find("layers.0"), l1 = m_tree->find("layers.1");
    m_view->setExpanded(l0, true);
    m_view->setExpanded(l1, true);
    m_view->expandAll();
    m_view->collapseAll();
    m_view->setExpanded(m_tree->find("layers"), true);
    m_view->setExpanded(l1, true);
    QVERIFY(m_view->layoutBusy());
    QVERIFY(finished.wait(kLayoutTimeoutMs));
    QTest::qWait(300);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(m_view->layoutState(), m_view->collapseState());
    QVERIFY(m_view->collapseState().expanded(l1));
    QVERIFY(!m_view->collapseState().expanded(l0));
    QVERIFY(hasCluster(*m_view->currentLayout(), l1));
    QVERIFY(m_view->scopeBoxCentre(l0));
  }

  void valueHighlightsProducerAndConsumers() {
    QVERIFY(openBert());
    m_view->expandAll();
    QVERIFY(waitForLayout());
    shoot(*m_view, QStringLiteral("graph_view_expanded_opfamily"));
    // An activation with a producer and at least two consumers.
    ir::ValueId v = -1;
    for (const ir::Value& value : m_bert->values)
      if (value.producer >= 0 && value.users.size() >= 2) {
        v = value.id;
        break;
      }
    QVERIFY(v >= 0);
    m_view->highlightValue(v);
    std::set<int> emphasised;
    for (QGraphicsItem* item : m_view->scene()->items())
      if (item->type() == GraphBoxItem::Type &&
          static_cast<GraphBoxItem*>(item)->emphasis() != ItemEmphasis::Normal)
        emphasised.insert(static_cast<GraphBoxItem*>(item)->id());
    std::set<int> expected = {m_bert->value(v).producer};
    for (ir::NodeId u : m_bert->value(v).users) expected.insert(u);
    QCOMPARE(emphasised, expected);
    int edges = 0;
    for (QGraphicsItem* item : m_view->scene()->items())
      if (item->type() == GraphEdgeItem::Type &&
          static_cast<GraphEdgeItem*>(item)->emphasis() != ItemEmphasis::Normal)
        ++edges;
    QCOMPARE(edges, static_cast<int>(m_bert->value(v).users.size()));
    m_view->fitToSelection();
    shoot(*m_view, QStringLiteral("graph_view_value_highlight"));
  }

  void colourBy() {
    QVERIFY(openBert());
    m_view->expandAll();
    QVERIFY(waitForLayout());
    m_view->setColourBy(ColourBy::Flops);
    QCOMPARE(m_view->colourBy(), ColourBy::Flops);
    const Layout& l = *m_view->currentLayout();
    // A linear box is darker than a view box.
    int linear = -1, view = -1;
    for (size_t i = 0; i < l.boxes.size(); ++i) {
      if (l.boxes[i].kind != LayoutBox::Kind::Op) continue;
      const std::string& op = m_bert->node(l.boxes[i].id).op;
      if (op == "aten::linear") linear = static_cast<int>(i);
      if (op == "aten::transpose") view = static_cast<int>(i);
    }
    QVERIFY(linear >= 0 && view >= 0);
    QVERIFY(m_view->boxFill(linear).lightnessF() < m_view->boxFill(view).lightnessF());
    shoot(*m_view, QStringLiteral("graph_view_expanded_flops"));
    m_view->collapseAll();
    QVERIFY(waitForLayout());
    shoot(*m_view, QStringLiteral("graph_view_collapsed_flops"));
    m_view->setColourBy(ColourBy::Scope);
    shoot(*m_view, QStringLiteral("graph_view_collapsed_scope"));
    m_view->setDirection(RankDirection::LeftToRight);
    QVERIFY(waitForLayout());
    shoot(*m_view, QStringLiteral("graph_view_collapsed_lr"));
  }

  void exports() {
    QVERIFY(openBert());
    m_view->setExpanded(m_tree->find("layers"), true);
    m_view->setExpanded(m_tree->find("layers.0"), true);
    QVERIFY(waitForLayout());
    QTemporaryDir dir;
    const QString svg = dir.filePath(QStringLiteral("g.svg"));
    const QString png = dir.filePath(QStringLiteral("g.png"));
    const QString dot = dir.filePath(QStringLiteral("g.dot"));
    QVERIFY(m_view->exportSvg(svg));
    QVERIFY(m_view->exportPng(png));
    QVERIFY(m_view->exportDot(dot));
    QFile svgFile(svg);
    QVERIFY(svgFile.open(QIODevice::ReadOnly));
    const QByteArray svgText = svgFile.readAll();
    QVERIFY(svgText.startsWith("<?xml") || svgText.startsWith("<svg"));
    QVERIFY(svgText.contains("layers.0"));
    QImage image(png);
    QVERIFY(!image.isNull());
    const QRectF r = m_view->scene()->sceneRect();
    QCOMPARE(image.width(), static_cast<int>(std::ceil(r.width() * 2)));
    image.save(QStringLiteral("/tmp/shots/graph_view_export.png"));
    QFile dotFile(dot);
    QVERIFY(dotFile.open(QIODevice::ReadOnly));
    const QByteArray dotText = dotFile.readAll();
    QVERIFY(dotText.startsWith("digraph"));
    QCOMPARE(dotText.toStdString(),
             layoutDot(*m_bert, *m_tree, m_view->collapseState(), LayoutOptions{}));
    // Nothing to export without a graph.
    GraphView empty;
    QVERIFY(!empty.exportSvg(svg));
    QVERIFY(!empty.exportPng(png));
    QVERIFY(!empty.exportDot(dot));
  }

  void sceneFor2000BoxesBuildsFast() {
    auto g = std::make_shared<const ir::Graph>(chainGraph(2000));
    auto tree = std::make_shared<const ScopeTree>(*g);
    GraphView view;
    view.resize(1000, 760);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy finished(&view, &GraphView::layoutFinished);
    view.setGraph(g, tree);
    QVERIFY(finished.wait(kLayoutTimeoutMs));

    // A grid of 2,000 op boxes in a chain, as dot would place them in 40 columns.
    auto layout = std::make_shared<Layout>();
    for (int i = 0; i < 2000; ++i) {
      LayoutBox b;
      b.kind = LayoutBox::Kind::Op;
      b.id = i;
      b.title = g->node(i).op.substr(6);
      b.detail = "[4, 8]";
      b.rect = {(i % 40) * 90.0, (i / 40) * 60.0, 70, 36};
      layout->boxes.push_back(b);
      if (i > 0) {
        LayoutEdge e;
        e.from = i - 1;
        e.to = i;
        e.values = {i};
        const RectF& a = layout->boxes[static_cast<size_t>(i - 1)].rect;
        const PointF p0{a.x + 35, a.y + 36}, p3{b.rect.x + 35, b.rect.y};
        e.points = {p0, {p0.x, p0.y + 10}, {p3.x, p3.y - 10}, p3};
        layout->edges.push_back(e);
      }
    }
    layout->width = 40 * 90;
    layout->height = 50 * 60;
    double best = 1e9;
    for (int round = 0; round < 3; ++round) {
      view.showLayout(layout);
      best = std::min(best, view.lastSceneBuildMs());
    }
    QElapsedTimer paint;
    paint.start();
    view.fitToWindow();
    view.grab();
    const double fitPaintMs = static_cast<double>(paint.nsecsElapsed()) / 1e6;
    paint.restart();
    view.actualSize();
    view.grab();
    const double actualPaintMs = static_cast<double>(paint.nsecsElapsed()) / 1e6;
    paint.restart();
    view.fitToWindow();
    view.grab();
    const double fitPaint2Ms = static_cast<double>(paint.nsecsElapsed()) / 1e6;
    qInfo("second fit-to-window paint %.1f ms", fitPaint2Ms);
    qInfo("scene for 2000 boxes + 1999 edges: build %.1f ms (best of 3); paint fit-to-window %.1f "
          "ms, actual size %.1f ms",
          best, fitPaintMs, actualPaintMs);
    QVERIFY2(best < 100, qPrintable(QString::number(best)));
    view.fitToWindow();
    shoot(view, QStringLiteral("graph_view_2000_fit"));
  }

  // ---- plan overlay ----

  void setPlanEnablesThePlanModes() {
    QVERIFY(openBert());
    const auto doc = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    QCOMPARE(doc->imported->nodes.size(), m_bert->nodes.size());
    for (ColourBy m :
         {ColourBy::ShardingForm, ColourBy::Variant, ColourBy::Segment, ColourBy::DeviceCost})
      QVERIFY(!m_view->colourByAvailable(m));
    QVERIFY(m_view->colourByAvailable(ColourBy::Flops));
    QSignalSpy available(m_view.get(), &GraphView::planModesAvailableChanged);
    QSignalSpy mode(m_view.get(), &GraphView::colourByChanged);
    m_view->setPlan(doc);
    QCOMPARE(available.count(), 1);
    QCOMPARE(available.at(0).at(0).toBool(), true);
    for (ColourBy m :
         {ColourBy::ShardingForm, ColourBy::Variant, ColourBy::Segment, ColourBy::DeviceCost})
      QVERIFY(m_view->colourByAvailable(m));
    // The first plan: sharding form, chosen by the view.
    QCOMPARE(mode.count(), 1);
    QCOMPARE(mode.at(0).at(0).value<ColourBy>(), ColourBy::ShardingForm);
    QCOMPARE(m_view->colourBy(), ColourBy::ShardingForm);
    const PlanOverlay& overlay = *m_view->planOverlay();
    const Layout& l = *m_view->currentLayout();
    // Every drawn op box has its node's form colour; the loss is a partial sum or replicated.
    const std::vector<QColor> colours = formCategoryColours(overlay.maxShardedDim());
    for (size_t i = 0; i < l.boxes.size(); ++i)
      if (l.boxes[i].kind == LayoutBox::Kind::Op) {
        const PlanNodeInfo& info = overlay.node(l.boxes[i].id);
        QCOMPARE(
            m_view->boxFill(static_cast<int>(i)),
            colours[static_cast<size_t>(formCategory(info.outputForm, overlay.maxShardedDim()))]);
      }
    shoot(*m_view, QStringLiteral("overlay_collapsed_sharding"));

    // A second plan keeps the user's choice.
    m_view->setColourBy(ColourBy::Segment);
    m_view->setPlan(doc);
    QCOMPARE(m_view->colourBy(), ColourBy::Segment);
    QCOMPARE(mode.count(), 1);
    // Device cost: the bottleneck by default, then a chosen rank.
    m_view->setColourBy(ColourBy::DeviceCost);
    QCOMPARE(m_view->costDevice(), plan::bottleneckRank(doc->timeline));
    const ir::NodeId loss = m_bert->value(m_bert->loss).producer;
    const int lossBox = l.boxOfNode(*m_tree, m_view->layoutState(), loss);
    const PlanOverlay& now = *m_view->planOverlay();  // setPlan made a new overlay
    QCOMPARE(m_view->colouring().nodeValue(loss), now.nodeSeconds(loss, m_view->costDevice()));
    const int other = m_view->costDevice() == 0 ? 3 : 0;
    m_view->setCostDevice(other);
    QCOMPARE(m_view->costDevice(), other);
    QCOMPARE(m_view->colouring().nodeValue(loss), now.nodeSeconds(loss, other));
    QVERIFY(m_view->boxFill(lossBox).isValid());
    m_view->setCostDevice(-1);

    // Clearing the plan under a plan mode falls back to op family and disables the modes.
    m_view->setPlan(nullptr);
    QCOMPARE(available.count(), 2);
    QCOMPARE(available.at(1).at(0).toBool(), false);
    QCOMPARE(m_view->colourBy(), ColourBy::OpFamily);
    QVERIFY(!m_view->colourByAvailable(ColourBy::Segment));
    QVERIFY(m_view->edgeLabel(0).isEmpty());
  }

  // Edges: every read after a conversion is dashed and labelled on the drawn edge; the expanded
  // graph shows every conversion on exactly the edge of its read.
  void edgesShowConversions() {
    QVERIFY(openBert());
    const auto doc = testing::planWithCollectives();
    m_view->setPlan(doc);
    m_view->expandAll();
    QVERIFY(waitForLayout());
    const Layout& l = *m_view->currentLayout();
    const PlanOverlay& overlay = *m_view->planOverlay();
    const plan::Plan& p = doc->p();
    int converted = 0, allReduces = 0;
    for (size_t i = 0; i < l.edges.size(); ++i) {
      const LayoutEdge& e = l.edges[i];
      QStringList expected;
      bool collective = false;
      for (ir::ValueId v : e.values)
        for (const PlanEdgeInfo* r : overlay.readsOf(v)) {
          if (m_view->currentLayout()->boxOfNode(*m_tree, m_view->layoutState(), r->consumer) !=
              e.to)
            continue;
          for (int c : r->conversions) {
            const plan::PlanStep& s = p.steps[static_cast<size_t>(c)];
            if (conversionGlyph(s).isEmpty()) continue;
            expected << conversionText(s);
            collective = collective || isCollective(s);
          }
        }
      QCOMPARE(m_view->edgeConverted(static_cast<int>(i)), !expected.isEmpty());
      if (expected.isEmpty()) continue;
      ++converted;
      const QString label = m_view->edgeLabel(static_cast<int>(i));
      const QString tip = m_view->edgeToolTip(static_cast<int>(i));
      QVERIFY(!label.isEmpty());
      for (const QString& text : expected) QVERIFY2(tip.contains(text), qPrintable(tip));
      if (expected.contains(QStringLiteral("all-reduce"))) {
        ++allReduces;
        QVERIFY2(label.contains(QStringLiteral("AR")), qPrintable(label));
      }
      // The scene item draws what the view reports.
      for (QGraphicsItem* item : m_view->scene()->items())
        if (item->type() == GraphEdgeItem::Type &&
            static_cast<GraphEdgeItem*>(item)->edgeIndex() == static_cast<int>(i)) {
          auto* edge = static_cast<GraphEdgeItem*>(item);
          QCOMPARE(edge->label(), label);
          QVERIFY(edge->dashed());
          QCOMPARE(edge->toolTip(), tip);
        }
      Q_UNUSED(collective);
    }
    QVERIFY(converted >= 3);
    QVERIFY(allReduces >= 1);
    // Unconverted edges carry their value's form colour.
    int coloured = 0;
    for (QGraphicsItem* item : m_view->scene()->items())
      if (item->type() == GraphEdgeItem::Type &&
          static_cast<GraphEdgeItem*>(item)->stroke().isValid())
        ++coloured;
    QCOMPARE(coloured, static_cast<int>(l.edges.size()));
    shoot(*m_view, QStringLiteral("overlay_expanded_sharding_top"));
    // Each mode on the expanded graph, centred on the first layer's attention.
    m_view->resetTransform();
    m_view->centerOn(*m_view->nodeBoxCentre(firstNodeIn("layers.0.attn")));
    shoot(*m_view, QStringLiteral("overlay_expanded_sharding"));
    m_view->setColourBy(ColourBy::Variant);
    shoot(*m_view, QStringLiteral("overlay_expanded_variant"));
    m_view->setColourBy(ColourBy::Segment);
    shoot(*m_view, QStringLiteral("overlay_expanded_segment"));
    m_view->setColourBy(ColourBy::DeviceCost);
    shoot(*m_view, QStringLiteral("overlay_expanded_devicecost"));

    // Collapsed: edges between scopes aggregate their reads.
    m_view->collapseAll();
    QVERIFY(waitForLayout());
    m_view->setColourBy(ColourBy::ShardingForm);
    const Layout& c = *m_view->currentLayout();
    int aggregated = 0;
    for (size_t i = 0; i < c.edges.size(); ++i)
      if (m_view->edgeToolTip(static_cast<int>(i)).contains(QStringLiteral("read"))) ++aggregated;
    QVERIFY(aggregated > 0);
    shoot(*m_view, QStringLiteral("overlay_collapsed_sharding"));
    m_view->setColourBy(ColourBy::Segment);
    shoot(*m_view, QStringLiteral("overlay_collapsed_segment"));
    m_view->setColourBy(ColourBy::DeviceCost);
    shoot(*m_view, QStringLiteral("overlay_collapsed_devicecost"));
    m_view->setColourBy(ColourBy::Variant);
    shoot(*m_view, QStringLiteral("overlay_collapsed_variant"));
  }

  // A partial program of the live search colours by variant; an empty one returns to the mode.
  void partialVariants() {
    QVERIFY(openBert());
    m_view->expandAll();
    QVERIFY(waitForLayout());
    const auto doc = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    const PlanOverlay overlay(doc);
    std::vector<std::string> partial = overlay.variantByNode();
    for (size_t n = partial.size() / 3; n < partial.size(); ++n) partial[n].clear();
    m_view->setPartialVariants(partial);
    QVERIFY(m_view->partialVariantsShown());
    QCOMPARE(m_view->colourBy(), ColourBy::OpFamily);  // the chosen mode stays
    QCOMPARE(m_view->colouring().mode(), ColourBy::Variant);
    const Layout& l = *m_view->currentLayout();
    for (size_t i = 0; i < l.boxes.size(); ++i) {
      if (l.boxes[i].kind != LayoutBox::Kind::Op) continue;
      const auto& v = partial[static_cast<size_t>(l.boxes[i].id)];
      QCOMPARE(m_view->boxFill(static_cast<int>(i)),
               v.empty() ? m_view->colouring().neutralColour() : variantColour(v));
    }
    m_view->resetTransform();
    shoot(*m_view, QStringLiteral("overlay_partial_program"));
    m_view->setPartialVariants({});
    QVERIFY(!m_view->partialVariantsShown());
    QCOMPARE(m_view->colouring().mode(), ColourBy::OpFamily);
  }

  // Right-click a node: the menu lists its rule variants; one of them emits the pin.
  void pinFromTheContextMenu() {
    QVERIFY(openBert());
    const auto doc = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml");
    m_view->setPlan(doc);
    m_view->reveal([&] {
      for (const ir::Node& n : m_bert->nodes)
        if (n.op == "aten::linear" && n.scope.find("attn") != std::string::npos) return n.id;
      return ir::NodeId{0};
    }());
    QVERIFY(waitForLayout());
    const ir::NodeId linear = m_view->selection().id;
    QCOMPARE(m_bert->node(linear).op, std::string("aten::linear"));
    m_view->waitForRuleVariants();
    QVERIFY(m_view->ruleVariants());
    qInfo("rule variant names for bert-tiny (%zu nodes), off the GUI thread: %.2f ms",
          m_bert->nodes.size(), m_view->ruleVariantsMs());
    const std::vector<std::string> expected =
        (*m_view->ruleVariants())[static_cast<size_t>(linear)];
    QVERIFY(std::find(expected.begin(), expected.end(), "column") != expected.end());

    QSignalSpy pins(m_view.get(), &GraphView::pinRequested);
    QStringList listed;
    QString planned;
    const QPoint at = onScreen(*m_view->nodeBoxCentre(linear));
    QVERIFY(withContextMenu(*m_view, at, [&](QMenu* menu) {
      QMenu* sub = pinMenu(menu);
      QVERIFY(sub);
      QVERIFY(sub->title().contains(QStringLiteral("variant")));
      for (QAction* a : sub->actions()) {
        listed << a->text();
        if (a->isChecked()) planned = a->text();
      }
      for (QAction* a : sub->actions())
        if (a->text() == QStringLiteral("column")) a->trigger();
    }));
    QStringList want;
    for (const std::string& v : expected) want << QString::fromStdString(v);
    QCOMPARE(listed, want);
    QCOMPARE(planned.toStdString(), m_view->planOverlay()->node(linear).variant);
    QCOMPARE(pins.count(), 1);
    QCOMPARE(pins.at(0).at(0).toString(), QString::fromStdString(m_bert->node(linear).scope));
    QCOMPARE(pins.at(0).at(1).toString(), QStringLiteral("column"));

    // A collapsed scope: the union of its nodes' variants; its subtree's pattern.
    m_view->collapseAll();
    m_view->setExpanded(m_tree->find("layers"), true);
    QVERIFY(waitForLayout());
    const ScopeId layer = m_tree->find("layers.1");
    std::set<std::string> inLayer;
    for (const ir::Node& n : m_bert->nodes)
      if (m_tree->contains(layer, m_tree->scopeOfNode(n.id)))
        for (const std::string& v : (*m_view->ruleVariants())[static_cast<size_t>(n.id)])
          inLayer.insert(v);
    QStringList scopeListed;
    QVERIFY(withContextMenu(*m_view, onScreen(*m_view->scopeBoxCentre(layer)), [&](QMenu* menu) {
      QMenu* sub = pinMenu(menu);
      QVERIFY(sub);
      for (QAction* a : sub->actions()) scopeListed << a->text();
      for (QAction* a : sub->actions())
        if (a->text() == QStringLiteral("replicate")) a->trigger();
    }));
    QCOMPARE(static_cast<size_t>(scopeListed.size()), inLayer.size());
    QCOMPARE(scopeListed.front(), QStringLiteral("replicate"));
    QCOMPARE(pins.count(), 2);
    QCOMPARE(pins.at(1).at(0).toString(), QStringLiteral("layers.1*"));
    QCOMPARE(pins.at(1).at(1).toString(), QStringLiteral("replicate"));

    // Without a plan the entry is there too (pins before the first plan).
    m_view->setPlan(nullptr);
    bool present = false;
    QVERIFY(withContextMenu(*m_view, onScreen(*m_view->scopeBoxCentre(layer)),
                            [&](QMenu* menu) { present = pinMenu(menu) != nullptr; }));
    QVERIFY(present);
  }

  // The variant names of a 2,000-node graph: how long synth::Theory takes for them.
  void ruleVariantsOf2000Nodes() {
    const int copies =
        static_cast<int>(std::ceil(2000.0 / static_cast<double>(m_bert->nodes.size())));
    auto big = std::make_shared<const ir::Graph>(repeated(*m_bert, copies));
    QVERIFY(big->nodes.size() >= 2000);
    QElapsedTimer t;
    t.start();
    const auto names = ruleVariantNames(*big);
    const double ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
    qInfo("rule variant names (synth::Theory) for %zu nodes: %.1f ms", big->nodes.size(), ms);
    QCOMPARE(names.size(), big->nodes.size());
    for (size_t n = 0; n < names.size(); ++n) QCOMPARE(names[n], names[n % m_bert->nodes.size()]);
    // What the context menu of a whole copy computes: a pin pattern per variant of its nodes.
    const ScopeTree tree(*big);
    const ScopeId copy = tree.find("copy1");
    QVERIFY(copy > 0);
    std::set<std::string> variants;
    for (const ir::Node& n : big->nodes)
      if (tree.contains(copy, tree.scopeOfNode(n.id)))
        variants.insert(names[static_cast<size_t>(n.id)].begin(), names[static_cast<size_t>(n.id)].end());
    t.restart();
    for (const std::string& v : variants) {
      // "copy1*" takes copy10..copy19 too; "copy1.*" misses the copy's own (top-level) nodes,
      // "copy1" its sub-scopes: the exact one where there is one, else "copy1*".
      bool direct = false, nested = false;
      for (const ir::Node& n : big->nodes)
        if (tree.contains(copy, tree.scopeOfNode(n.id)) &&
            std::count(names[static_cast<size_t>(n.id)].begin(), names[static_cast<size_t>(n.id)].end(), v))
          (n.scope == "copy1" ? direct : nested) = true;
      const PinChoice c = pinForScope(*big, tree, names, copy, v);
      QCOMPARE(c.pattern, std::string(direct && nested ? "copy1*" : direct ? "copy1" : "copy1.*"));
      QCOMPARE(c.exact(), !(direct && nested));
    }
    qInfo("pin patterns for the %zu variants of a scope of %zu nodes: %.1f ms", variants.size(),
          big->nodes.size(), static_cast<double>(t.nsecsElapsed()) / 1e6);
  }

  // highlightNodes: an orange outline on the nodes' boxes, or on the collapsed scopes holding them.
  void highlightNodesMarksBoxes() {
    QVERIFY(openBert());
    const ir::NodeId loss = m_bert->value(m_bert->loss).producer;
    const ScopeId layer = m_tree->find("layers");  // collapsed, it holds the node
    const ir::NodeId inLayer = firstNodeIn("layers.0.attn");
    m_view->highlightNodes({inLayer, loss});
    const Layout& l = *m_view->currentLayout();
    std::set<int> marked;
    for (size_t i = 0; i < l.boxes.size(); ++i)
      if (m_view->boxMarked(static_cast<int>(i))) marked.insert(static_cast<int>(i));
    const std::set<int> expected = {l.boxOfNode(*m_tree, m_view->layoutState(), loss),
                                    l.boxOfNode(*m_tree, m_view->layoutState(), inLayer)};
    QCOMPARE(marked, expected);
    QCOMPARE(l.boxes[static_cast<size_t>(l.boxOfNode(*m_tree, m_view->layoutState(), inLayer))].id,
             layer);
    int items = 0;
    for (QGraphicsItem* item : m_view->scene()->items())
      if (item->type() == GraphBoxItem::Type && static_cast<GraphBoxItem*>(item)->marked()) ++items;
    QCOMPARE(items, 2);
    shoot(*m_view, QStringLiteral("overlay_highlight_collapsed"));
    // Kept across a relayout: now on the node itself.
    m_view->reveal(inLayer);
    QVERIFY(waitForLayout());
    const int box = m_view->currentLayout()->boxOfNode(*m_tree, m_view->layoutState(), inLayer);
    QCOMPARE(m_view->currentLayout()->boxes[static_cast<size_t>(box)].kind, LayoutBox::Kind::Op);
    QVERIFY(m_view->boxMarked(box));
    m_view->highlightNodes({});
    for (size_t i = 0; i < m_view->currentLayout()->boxes.size(); ++i)
      QVERIFY(!m_view->boxMarked(static_cast<int>(i)));
  }
};

QTEST_MAIN(TestGraphView)
#include "tst_graph_view.moc"
