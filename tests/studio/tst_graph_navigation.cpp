// Keyboard navigation over a drawn graph, the breadcrumb trail and "show only this scope"
// (core/graph/graph_navigation.h, issue 31), on graphs built by hand and on bert-tiny.
#include <QtTest>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "app/studio/core/graph/graph_layout.h"
#include "app/studio/core/graph/graph_navigation.h"
#include "app/studio/core/graph/scope_tree.h"
#include "engine/import/importer.h"
#include "engine/ir/graph.h"

using namespace hap;
using namespace hap::studio;

namespace {

ir::ValueId addOp(ir::Graph& g, const std::string& op, const std::string& scope,
                  std::vector<ir::ValueId> inputs) {
  ir::Node n;
  n.op = op;
  n.scope = scope;
  for (size_t i = 0; i < inputs.size(); ++i)
    n.args.push_back(
        ir::Arg{"in" + std::to_string(i), "Tensor", ir::Arg::Kind::Tensor, {inputs[i]}, {}, {}});
  n.outputs = {g.addValue(ir::ValueKind::Activation, "v" + std::to_string(g.values.size()), {4},
                          ir::DType::Float32)};
  g.addNode(std::move(n));
  return g.nodes.back().outputs[0];
}

int opBox(const Layout& l, ir::NodeId n) {
  for (size_t i = 0; i < l.boxes.size(); ++i)
    if (l.boxes[i].kind == LayoutBox::Kind::Op && l.boxes[i].id == n) return static_cast<int>(i);
  return -1;
}

}  // namespace

class TestGraphNavigation : public QObject {
  Q_OBJECT

 private:
  ir::Graph bert_;

 private Q_SLOTS:
  void initTestCase() {
    bert_ =
        import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
  }

  void keysFollowTheDirection() {
    using M = NavigationMove;
    QVERIFY(navigationMoveForKey(Qt::Key_Down, RankDirection::TopToBottom) == M::Next);
    QVERIFY(navigationMoveForKey(Qt::Key_Up, RankDirection::TopToBottom) == M::Previous);
    QVERIFY(navigationMoveForKey(Qt::Key_Right, RankDirection::TopToBottom) == M::SiblingAfter);
    QVERIFY(navigationMoveForKey(Qt::Key_Left, RankDirection::TopToBottom) == M::SiblingBefore);
    QVERIFY(navigationMoveForKey(Qt::Key_Right, RankDirection::LeftToRight) == M::Next);
    QVERIFY(navigationMoveForKey(Qt::Key_Left, RankDirection::LeftToRight) == M::Previous);
    QVERIFY(navigationMoveForKey(Qt::Key_Down, RankDirection::LeftToRight) == M::SiblingAfter);
    QVERIFY(navigationMoveForKey(Qt::Key_Up, RankDirection::LeftToRight) == M::SiblingBefore);
    QVERIFY(!navigationMoveForKey(Qt::Key_Return, RankDirection::TopToBottom));
  }

  // x -> a -> (b, c) -> d: Down follows edges, Left/Right moves between the two branches.
  void diamond() {
    ir::Graph g;
    const ir::ValueId x = g.addValue(ir::ValueKind::Input, "x", {4}, ir::DType::Float32);
    g.inputs.push_back(x);
    const ir::ValueId a = addOp(g, "aten::relu", "", {x});
    const ir::ValueId b = addOp(g, "aten::tanh", "", {a});
    const ir::ValueId c = addOp(g, "aten::sigmoid", "", {a});
    addOp(g, "aten::add", "", {b, c});
    const ScopeTree t(g);
    const CollapseState st(t);
    for (RankDirection dir : {RankDirection::TopToBottom, RankDirection::LeftToRight}) {
      const Layout l = layoutGraph(g, t, st, {dir, true});
      const LayoutNavigator nav(l, dir);
      const int bx = 0, ba = opBox(l, 0), bb = opBox(l, 1), bc = opBox(l, 2), bd = opBox(l, 3);
      QCOMPARE(l.boxes[static_cast<size_t>(bx)].kind, LayoutBox::Kind::Input);
      QCOMPARE(nav.first(), bx);
      QCOMPARE(nav.move(bx, NavigationMove::Next), ba);
      QCOMPARE(nav.move(ba, NavigationMove::Previous), bx);
      QCOMPARE(nav.move(bx, NavigationMove::Previous), -1);  // nothing before the input
      const int branch = nav.move(ba, NavigationMove::Next);
      QVERIFY(branch == bb || branch == bc);
      const int other = branch == bb ? bc : bb;
      QCOMPARE(nav.siblings(branch), std::vector<int>{other});
      // The other branch lies on one side: one sibling move reaches it, the other finds nothing.
      const int after = nav.move(branch, NavigationMove::SiblingAfter);
      const int before = nav.move(branch, NavigationMove::SiblingBefore);
      QVERIFY((after == other && before == -1) || (before == other && after == -1));
      QCOMPARE(nav.move(branch, NavigationMove::Next), bd);
      QCOMPARE(nav.move(other, NavigationMove::Next), bd);
      QCOMPARE(nav.move(bd, NavigationMove::Next), -1);
      const int back = nav.move(bd, NavigationMove::Previous);
      QVERIFY(back == bb || back == bc);
      QCOMPARE(nav.move(-1, NavigationMove::Next), -1);
      QCOMPARE(nav.move(static_cast<int>(l.boxes.size()), NavigationMove::Next), -1);
      QCOMPARE(selectionForBox(l, bx), Selection::value(x));
      QCOMPARE(selectionForBox(l, bd), Selection::node(3));
      QCOMPARE(selectionForBox(l, -1), Selection{});
    }
  }

  // On bert-tiny collapsed: Down from the first box reaches the loss; every single-edge step
  // comes back with Up; the inputs x and y are siblings of one rank.
  void bertWalk() {
    const ScopeTree t(bert_);
    const CollapseState st(t);
    const Layout l = layoutGraph(bert_, t, st);
    const LayoutNavigator nav(l, RankDirection::TopToBottom);
    int box = nav.first();
    QVERIFY(box >= 0);
    std::set<int> seen;
    for (int next; (next = nav.move(box, NavigationMove::Next)) >= 0;) {
      QVERIFY(seen.insert(box).second);  // no cycle
      if (nav.successors(box).size() == 1 && nav.predecessors(next).size() == 1)
        QCOMPARE(nav.move(next, NavigationMove::Previous), box);
      box = next;
    }
    QCOMPARE(selectionForBox(l, box), Selection::node(bert_.value(bert_.loss).producer));
    // tokens and positions both feed the add: siblings.
    const int tokens = l.boxOfNode(t, st, t.scope(t.find("tokens")).nodes.at(0));
    const int positions = l.boxOfNode(t, st, t.scope(t.find("positions")).nodes.at(0));
    QVERIFY(tokens >= 0 && positions >= 0);
    QCOMPARE(nav.siblings(tokens), std::vector<int>{positions});
    QVERIFY(nav.move(tokens, NavigationMove::SiblingAfter) == positions ||
            nav.move(tokens, NavigationMove::SiblingBefore) == positions);
  }

  void breadcrumbs() {
    const ScopeTree t(bert_);
    const ScopeId layers = t.find("layers"), layer0 = t.find("layers.0"),
                  attn = t.find("layers.0.attn"), q = t.find("layers.0.attn.q");
    const ir::NodeId qNode = t.scope(q).nodes.at(0);
    QCOMPARE(scopePath(t, q), (std::vector<ScopeId>{kRootScope, layers, layer0, attn, q}));
    QCOMPARE(scopePath(t, kRootScope), std::vector<ScopeId>{kRootScope});
    QCOMPARE(scopeOfSelection(t, bert_, Selection::node(qNode)), q);
    QCOMPARE(scopeOfSelection(t, bert_, Selection::scope(attn)), attn);
    QCOMPARE(scopeOfSelection(t, bert_, Selection::value(bert_.inputs.at(0))), kRootScope);
    QCOMPARE(scopeOfSelection(t, bert_, Selection::value(bert_.node(qNode).outputs.at(0))), q);
    QCOMPARE(scopeOfSelection(t, bert_, {}), kRootScope);

    // No focus: the selection's path, the root focused.
    BreadcrumbTrail trail = breadcrumbTrail(t, bert_, kRootScope, Selection::node(qNode));
    QCOMPARE(trail.scopes, (std::vector<ScopeId>{kRootScope, layers, layer0, attn, q}));
    QCOMPARE(trail.focusIndex, 0);
    QCOMPARE(breadcrumbTrail(t, bert_, kRootScope, {}).scopes, std::vector<ScopeId>{kRootScope});
    // Focused on layers.0: the selection inside it extends the trail; outside, the focus ends it.
    trail = breadcrumbTrail(t, bert_, layer0, Selection::node(qNode));
    QCOMPARE(trail.scopes.size(), size_t{5});
    QCOMPARE(trail.focusIndex, 2);
    trail = breadcrumbTrail(t, bert_, layer0, Selection::scope(t.find("head")));
    QCOMPARE(trail.scopes, (std::vector<ScopeId>{kRootScope, layers, layer0}));
    QCOMPARE(trail.focusIndex, 2);
    QCOMPARE(breadcrumbTrail(ScopeTree(), bert_, kRootScope, {}), BreadcrumbTrail{});
  }

  void focus() {
    const ScopeTree t(bert_);
    const ScopeId layers = t.find("layers"), layer0 = t.find("layers.0"),
                  attn = t.find("layers.0.attn");
    const ir::NodeId qNode = t.scope(t.find("layers.0.attn.q")).nodes.at(0);
    QCOMPARE(focusScopeFor(t, Selection::scope(attn)), attn);
    QCOMPARE(focusScopeFor(t, Selection::node(qNode)), t.find("layers.0.attn.q"));
    QCOMPARE(focusScopeFor(t, Selection::node(t.scope(kRootScope).nodes.at(0))), kRootScope);
    QCOMPARE(focusScopeFor(t, Selection::value(0)), kRootScope);
    QCOMPARE(focusScopeFor(t, {}), kRootScope);

    const CollapseState collapsed(t);
    const CollapseState f = focusState(t, collapsed, layer0);
    QVERIFY(f.expanded(layers));
    QVERIFY(f.expanded(layer0));
    QVERIFY(!f.expanded(attn));  // the inside stays as it was
    QVERIFY(focusState(t, collapsed, kRootScope) == collapsed);

    // Focused on layers.0: its blocks and ops, nothing of layers.1.
    LayoutOptions options;
    options.focus = layer0;
    const Layout l = layoutGraph(bert_, t, f, options);
    const ScopeId layer1 = t.find("layers.1");
    for (const LayoutBox& b : l.boxes) {
      if (b.kind == LayoutBox::Kind::CollapsedScope) QVERIFY(!t.contains(layer1, b.id));
      if (b.kind == LayoutBox::Kind::Op) QVERIFY(t.contains(layer0, t.scopeOfNode(b.id)));
    }
    const LayoutNavigator nav(l, RankDirection::TopToBottom);
    QCOMPARE(l.boxes[static_cast<size_t>(nav.first())].kind, LayoutBox::Kind::Input);
  }
};

QTEST_GUILESS_MAIN(TestGraphNavigation)
#include "tst_graph_navigation.moc"
