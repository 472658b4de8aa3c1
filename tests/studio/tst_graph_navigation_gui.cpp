// The graph view's navigation through real key events and clicks (issue 31): arrows follow edges
// as LayoutNavigator says, Enter expands, Backspace collapses, F shows only the selected scope,
// the breadcrumb bar follows the selection and takes the user back, Esc leaves the focus, and the
// minimap shows the view's rectangle and moves the view when clicked. On bert-tiny, offscreen;
// pictures of the focus and the minimap go to /tmp/shots/.
#include <QtTest>

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QToolButton>

#include <memory>

#include "app/studio/core/graph/graph_navigation.h"
#include "app/studio/widgets/graph_breadcrumbs.h"
#include "app/studio/widgets/graph_minimap.h"
#include "app/studio/widgets/graph_view.h"
#include "engine/import/importer.h"

using namespace hap;
using namespace hap::studio;

namespace {
constexpr int kLayoutTimeoutMs = 20000;
}

class TestGraphNavigationGui : public QObject {
  Q_OBJECT

 private:
  std::shared_ptr<const ir::Graph> m_bert;
  std::shared_ptr<const ScopeTree> m_tree;
  std::unique_ptr<GraphView> m_view;

  bool open() {
    m_view = std::make_unique<GraphView>();
    m_view->resize(1000, 760);
    m_view->show();
    if (!QTest::qWaitForWindowExposed(m_view.get())) return false;
    QSignalSpy finished(m_view.get(), &GraphView::layoutFinished);
    m_view->setGraph(m_bert, m_tree);
    if (!finished.wait(kLayoutTimeoutMs) || !m_view->currentLayout()) return false;
    m_view->setFocus();
    return true;
  }
  bool waitForLayout() {
    QSignalSpy finished(m_view.get(), &GraphView::layoutFinished);
    return finished.wait(kLayoutTimeoutMs);
  }
  // A key press on the view, timed: none may stall the event loop.
  void key(int k) {
    QElapsedTimer t;
    t.start();
    QTest::keyClick(m_view.get(), static_cast<Qt::Key>(k));
    QVERIFY2(t.elapsed() < 100, qPrintable(QStringLiteral("key took %1 ms").arg(t.elapsed())));
  }
  QStringList crumbs() const { return m_view->breadcrumbs()->labels(); }
  void shoot(const QString& name) {
    QDir().mkpath(QStringLiteral("/tmp/shots"));
    QVERIFY(m_view->grab().save(QStringLiteral("/tmp/shots/%1.png").arg(name)));
  }

 private Q_SLOTS:
  void initTestCase() {
    m_bert = std::make_shared<const ir::Graph>(
        import::importModel(qgetenv("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt"));
    m_tree = std::make_shared<const ScopeTree>(*m_bert);
  }

  // Down from nothing selects the first box, then follows edges down to the loss; Up retraces a
  // single-edge step; every step is the navigator's.
  void arrowsFollowEdges() {
    QVERIFY(open());
    const Layout& l = *m_view->currentLayout();
    const LayoutNavigator nav(l, RankDirection::TopToBottom);
    QCOMPARE(m_view->selection(), Selection{});
    key(Qt::Key_Down);
    QCOMPARE(m_view->selectedBox(), nav.first());
    QCOMPARE(m_view->selection().kind, Selection::Kind::Value);  // an input of the model
    int steps = 0;
    for (int expected; (expected = nav.move(m_view->selectedBox(), NavigationMove::Next)) >= 0;) {
      const int from = m_view->selectedBox();
      key(Qt::Key_Down);
      QCOMPARE(m_view->selectedBox(), expected);
      if (nav.predecessors(expected).size() == 1) {
        key(Qt::Key_Up);
        QCOMPARE(m_view->selectedBox(), from);
        key(Qt::Key_Down);
      }
      QVERIFY(++steps < static_cast<int>(l.boxes.size()));
    }
    QCOMPARE(m_view->selection(), Selection::node(m_bert->value(m_bert->loss).producer));
    key(Qt::Key_Down);  // nowhere further: stays
    QCOMPARE(m_view->selection(), Selection::node(m_bert->value(m_bert->loss).producer));
    // Left/Right go where the navigator says (or stay where it finds nothing).
    const int here = m_view->selectedBox();
    const int right = nav.move(here, NavigationMove::SiblingAfter);
    key(Qt::Key_Right);
    QCOMPARE(m_view->selectedBox(), right >= 0 ? right : here);
    // Esc clears the selection.
    key(Qt::Key_Escape);
    QCOMPARE(m_view->selection(), Selection{});
  }

  // Enter expands the selected collapsed scope; Down enters its frame; Backspace collapses it.
  void enterExpandsBackspaceCollapses() {
    QVERIFY(open());
    const ScopeId layers = m_tree->find("layers"), layer0 = m_tree->find("layers.0");
    m_view->select(Selection::scope(layers));
    QCOMPARE(crumbs(), (QStringList{QStringLiteral("bert-tiny.pt"), QStringLiteral("layers")}));
    key(Qt::Key_Return);
    QVERIFY(waitForLayout());
    QVERIFY(m_view->collapseState().expanded(layers));
    QVERIFY(!m_view->clusterRect(layers).isEmpty());
    QCOMPARE(m_view->selection(), Selection::scope(layers));
    key(Qt::Key_Down);  // into the frame: its first box, the first block
    QCOMPARE(m_view->selection(), Selection::scope(layer0));
    QCOMPARE(crumbs(), (QStringList{QStringLiteral("bert-tiny.pt"), QStringLiteral("layers"),
                                    QStringLiteral("layers.0")}));
    key(Qt::Key_Down);
    QCOMPARE(m_view->selection(), Selection::scope(m_tree->find("layers.1")));
    key(Qt::Key_Backspace);  // collapses the scope around the selected block
    QCOMPARE(m_view->selection(), Selection::scope(layers));
    QVERIFY(waitForLayout());
    QVERIFY(!m_view->collapseState().expanded(layers));
    QVERIFY(m_view->scopeBoxCentre(layers));
  }

  // F shows only the selected scope, the breadcrumbs mark it and take the user out again, and Esc
  // shows the whole graph.
  void focusAndBack() {
    QVERIFY(open());
    const ScopeId layers = m_tree->find("layers"), layer0 = m_tree->find("layers.0"),
                  attn = m_tree->find("layers.0.attn");
    const int wholeBoxes = static_cast<int>(m_view->currentLayout()->boxes.size());
    QVERIFY(!m_view->focusAction()->isEnabled());
    m_view->select(Selection::scope(layer0));
    QVERIFY(waitForLayout());  // layers opened to show it
    QVERIFY(m_view->focusAction()->isEnabled());
    key(Qt::Key_F);
    QCOMPARE(m_view->focusScope(), layer0);
    QVERIFY(waitForLayout());
    for (const LayoutBox& b : m_view->currentLayout()->boxes) {
      if (b.kind == LayoutBox::Kind::Op)
        QVERIFY(m_tree->contains(layer0, m_tree->scopeOfNode(b.id)));
      if (b.kind == LayoutBox::Kind::CollapsedScope) QVERIFY(m_tree->contains(layer0, b.id));
    }
    QCOMPARE(m_view->breadcrumbs()->focusIndex(), 2);
    QVERIFY(m_view->breadcrumbs()->crumb(2)->font().bold());
    QVERIFY(m_view->unfocusAction()->isEnabled());
    shoot(QStringLiteral("graph_focus_layer0"));

    // Deeper with a click on a box's scope, then out with the breadcrumb of `layers`.
    m_view->select(Selection::scope(attn));
    QCOMPARE(m_view->focusScope(), layer0);  // inside the focus: it stays
    QCOMPARE(crumbs().size(), 4);
    m_view->breadcrumbs()->crumb(1)->click();
    QCOMPARE(m_view->focusScope(), layers);
    QVERIFY(waitForLayout());
    QCOMPARE(m_view->breadcrumbs()->focusIndex(), 1);

    // Esc: the whole graph again, the selection kept.
    key(Qt::Key_Escape);
    QCOMPARE(m_view->focusScope(), kRootScope);
    QVERIFY(waitForLayout());
    QCOMPARE(m_view->selection(), Selection::scope(attn));
    QVERIFY(static_cast<int>(m_view->currentLayout()->boxes.size()) >= wholeBoxes);
    QVERIFY(!m_view->unfocusAction()->isEnabled());

    // The first crumb also leaves a focus; selecting outside the focus leaves it too.
    m_view->setFocusScope(layer0);
    QVERIFY(waitForLayout());
    m_view->breadcrumbs()->crumb(0)->click();
    QCOMPARE(m_view->focusScope(), kRootScope);
    QVERIFY(waitForLayout());
    m_view->setFocusScope(layer0);
    QVERIFY(waitForLayout());
    m_view->select(Selection::scope(m_tree->find("head")));
    QCOMPARE(m_view->focusScope(), kRootScope);
    QVERIFY(waitForLayout());
    QVERIFY(m_view->scopeBoxCentre(m_tree->find("head")));
  }

  // The minimap appears when the drawing does not fit, frames the visible rectangle, and a click
  // on it centres the view there.
  void minimap() {
    QVERIFY(open());
    m_view->expandAll();
    QVERIFY(waitForLayout());
    m_view->actualSize();
    m_view->centerOn(m_view->sceneRect().center().x(), m_view->sceneRect().top());
    GraphMinimap* map = m_view->minimap();
    QVERIFY(map->isVisible());
    shoot(QStringLiteral("graph_minimap"));
    QVERIFY(map->width() <= GraphMinimap::kMaxWidth && map->height() <= GraphMinimap::kMaxHeight);
    const QRectF frame = map->viewRectInMinimap();
    QVERIFY(!frame.isEmpty());
    QVERIFY(frame.height() < map->height());
    // Near the bottom of the minimap: the view moves to the end of the graph.
    const QPoint target(map->width() / 2, map->height() - 8);
    const QPointF sceneTarget = map->toScene(target);
    QTest::mouseClick(map, Qt::LeftButton, {}, target);
    const QPointF centre = m_view->visibleSceneRect().center();
    QVERIFY2(
        std::abs(centre.y() - sceneTarget.y()) < 40 ||
            m_view->visibleSceneRect().bottom() >= m_view->sceneRect().bottom() - 1,
        qPrintable(QStringLiteral("centre %1, wanted %2").arg(centre.y()).arg(sceneTarget.y())));
    QVERIFY(map->viewRectInMinimap().center().y() > frame.center().y());
    // Fit to window: everything shows, the minimap hides.
    m_view->fitToWindow();
    QTest::qWait(10);
    if (m_view->visibleSceneRect().contains(m_view->sceneRect().adjusted(1, 1, -1, -1)))
      QVERIFY(!map->isVisible());
  }
};

QTEST_MAIN(TestGraphNavigationGui)
#include "tst_graph_navigation_gui.moc"
