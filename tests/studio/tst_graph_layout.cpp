// The graph layout as a pure function: golden DOT text for zoo models, geometric invariants of
// the Graphviz result in several collapse states, cancellation, and small hand-built graphs.
//
// HAP_UPDATE_GOLDENS=1 rewrites tests/studio/golden/*.dot from the current output.
// HAP_LAYOUT_TIMING_MODEL=/path/model.pt prints import and layout times for that model (collapsed,
// every scope expanded) and for a 2,000-node synthetic graph; nothing is asserted about time.
#include <QtTest>

#include <QElapsedTimer>
#include <QFile>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "app/studio/core/graph/graph_layout.h"
#include "app/studio/core/graph/scope_tree.h"
#include "engine/import/importer.h"
#include "engine/ir/graph.h"

using namespace hap;
using namespace hap::studio;

namespace {

std::string zooModel(const char* name) {
  return qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + name;
}

QString goldenPath(const QString& name) {
  return qEnvironmentVariable("HAP_SOURCE_DIR") + "/tests/studio/golden/" + name;
}

ir::Arg tensor(const std::string& name, ir::ValueId v) {
  return ir::Arg{name, "Tensor", ir::Arg::Kind::Tensor, {v}, {}, {}};
}

ir::ValueId addOp(ir::Graph& g, const std::string& op, const std::string& scope,
                  std::vector<ir::ValueId> inputs, ir::Shape shape, int outputs = 1) {
  ir::Node n;
  n.op = op;
  n.scope = scope;
  for (size_t i = 0; i < inputs.size(); ++i)
    n.args.push_back(tensor("in" + std::to_string(i), inputs[i]));
  n.cost.flops = static_cast<double>(ir::numel(shape));
  for (int k = 0; k < outputs; ++k)
    n.outputs.push_back(g.addValue(ir::ValueKind::Activation, "v" + std::to_string(g.values.size()),
                                   shape, ir::DType::Float32));
  g.addNode(std::move(n));
  return g.nodes.back().outputs[0];
}

// A chain of `blocks` residual blocks of five ops with a fan-out and fan-in, each block three
// scopes deep, or all at the top level.
ir::Graph syntheticGraph(int blocks, bool scoped = true) {
  ir::Graph g;
  ir::ValueId x = g.addValue(ir::ValueKind::Input, "x", {8, 64}, ir::DType::Float32);
  g.inputs.push_back(x);
  ir::ValueId w = g.addValue(ir::ValueKind::Parameter, "w", {64, 64}, ir::DType::Float32);
  g.parameters.push_back(w);
  ir::ValueId h = x;
  for (int b = 0; b < blocks; ++b) {
    std::string s = scoped ? "blocks." + std::to_string(b) : "";
    auto sub = [&](const char* name) { return scoped ? s + "." + name : s; };
    ir::ValueId a = addOp(g, "aten::linear", sub("attn.q"), {h, w}, {8, 64});
    ir::ValueId k = addOp(g, "aten::linear", sub("attn.k"), {h, w}, {8, 64});
    ir::ValueId m = addOp(g, "aten::matmul", sub("attn"), {a, k}, {8, 64});
    ir::ValueId f = addOp(g, "aten::gelu", sub("ffn"), {m}, {8, 64});
    ir::ValueId r = addOp(g, "aten::add", s, {f, h}, {8, 64});
    h = r;
  }
  return g;
}

double distanceToRect(const PointF& p, const RectF& r) {
  double dx = std::max({r.x - p.x, 0.0, p.x - (r.x + r.width)});
  double dy = std::max({r.y - p.y, 0.0, p.y - (r.y + r.height)});
  return std::hypot(dx, dy);
}

bool inside(const RectF& inner, const RectF& outer, double slack = 0.5) {
  return inner.x >= outer.x - slack && inner.y >= outer.y - slack &&
         inner.x + inner.width <= outer.x + outer.width + slack &&
         inner.y + inner.height <= outer.y + outer.height + slack;
}

bool overlap(const RectF& a, const RectF& b) {
  constexpr double kSlack = 0.5;
  return a.x + kSlack < b.x + b.width && b.x + kSlack < a.x + a.width &&
         a.y + kSlack < b.y + b.height && b.y + kSlack < a.y + a.height;
}

// Checks everything a drawing must satisfy, whatever Graphviz chose; returns "" or a failure.
std::string checkInvariants(const ir::Graph& g, const ScopeTree& tree, const CollapseState& state,
                            const LayoutOptions& options, const Layout& l) {
  if (l.cancelled) return "cancelled";
  // Every node has exactly one box; every box draws something.
  std::vector<int> used(l.boxes.size(), 0);
  for (const ir::Node& n : g.nodes) {
    int b = l.boxOfNode(tree, state, n.id);
    if (b < 0) return "node " + std::to_string(n.id) + " has no box";
    ScopeId rep = state.representative(tree, n.id);
    const LayoutBox& box = l.boxes[static_cast<size_t>(b)];
    if (rep < 0 && !(box.kind == LayoutBox::Kind::Op && box.id == n.id))
      return "node " + std::to_string(n.id) + " is not drawn as itself";
    if (rep >= 0 && !(box.kind == LayoutBox::Kind::CollapsedScope && box.id == rep))
      return "node " + std::to_string(n.id) + " is not drawn as its scope";
    ++used[static_cast<size_t>(b)];
  }
  std::set<std::pair<int, int>> ids;
  for (size_t i = 0; i < l.boxes.size(); ++i) {
    const LayoutBox& b = l.boxes[i];
    if (!ids.insert({static_cast<int>(b.kind), b.id}).second) return "duplicate box " + b.title;
    if (b.kind == LayoutBox::Kind::Input) {
      if (!options.showInputs) return "input drawn although hidden";
      if (g.value(b.id).kind != ir::ValueKind::Input) return "input box of a non-input";
    } else if (used[i] == 0) {
      return "box " + b.title + " draws no node";
    }
    if (b.rect.width <= 0 || b.rect.height <= 0) return "empty box " + b.title;
    if (!inside(b.rect, RectF{0, 0, l.width, l.height}))
      return "box outside the drawing " + b.title;
  }
  if (options.showInputs) {
    for (ir::ValueId v : g.inputs)
      if (!ids.count({static_cast<int>(LayoutBox::Kind::Input), v})) return "input not drawn";
  }
  for (size_t i = 0; i < l.boxes.size(); ++i)
    for (size_t j = i + 1; j < l.boxes.size(); ++j)
      if (overlap(l.boxes[i].rect, l.boxes[j].rect))
        return "boxes overlap: " + l.boxes[i].title + " and " + l.boxes[j].title;

  // Edges: between distinct boxes, one per pair, starting and ending at their boxes, carrying
  // exactly the values that cross between the two boxes.
  std::map<std::pair<int, int>, std::vector<ir::ValueId>> expected;
  for (const ir::Node& n : g.nodes) {
    int to = l.boxOfNode(tree, state, n.id);
    for (ir::ValueId v : n.tensorInputs()) {
      const ir::Value& val = g.value(v);
      int from = -1;
      if (val.kind == ir::ValueKind::Activation) from = l.boxOfNode(tree, state, val.producer);
      if (val.kind == ir::ValueKind::Input && options.showInputs)
        for (size_t i = 0; i < l.boxes.size(); ++i)
          if (l.boxes[i].kind == LayoutBox::Kind::Input && l.boxes[i].id == v)
            from = static_cast<int>(i);
      if (from < 0 || from == to) continue;
      auto& vs = expected[{from, to}];
      if (std::find(vs.begin(), vs.end(), v) == vs.end()) vs.push_back(v);
    }
  }
  if (expected.size() != l.edges.size()) return "wrong number of edges";
  for (const LayoutEdge& e : l.edges) {
    auto it = expected.find({e.from, e.to});
    if (it == expected.end()) return "unexpected edge";
    std::vector<ir::ValueId> vs = it->second;
    std::sort(vs.begin(), vs.end());
    if (vs != e.values) return "edge carries the wrong values";
    if (e.points.size() < 4 || (e.points.size() - 1) % 3 != 0) return "edge is not a Bézier path";
    const RectF& a = l.boxes[static_cast<size_t>(e.from)].rect;
    const RectF& b = l.boxes[static_cast<size_t>(e.to)].rect;
    if (distanceToRect(e.points.front(), a) > 3) return "edge starts away from its box";
    if (distanceToRect(e.points.back(), b) > 3) return "edge ends away from its box";
  }

  // Clusters: exactly the expanded scopes with something drawn inside, containing their boxes
  // and the clusters nested in them.
  std::set<ScopeId> wanted;
  for (const LayoutBox& b : l.boxes) {
    ScopeId s = b.kind == LayoutBox::Kind::Op               ? tree.scopeOfNode(b.id)
                : b.kind == LayoutBox::Kind::CollapsedScope ? tree.scope(b.id).parent
                                                            : kRootScope;
    for (; s > kRootScope; s = tree.scope(s).parent) wanted.insert(s);
  }
  std::set<ScopeId> got;
  for (const LayoutCluster& c : l.clusters) {
    if (!got.insert(c.scope).second) return "duplicate cluster";
    if (!state.expanded(c.scope)) return "cluster for a collapsed scope";
    if (c.label != tree.scope(c.scope).label) return "cluster label";
  }
  if (got != wanted) return "wrong set of clusters";
  for (const LayoutCluster& c : l.clusters) {
    if (!inside(c.rect, RectF{0, 0, l.width, l.height})) return "cluster outside the drawing";
    for (const LayoutBox& b : l.boxes) {
      ScopeId s = b.kind == LayoutBox::Kind::Op               ? tree.scopeOfNode(b.id)
                  : b.kind == LayoutBox::Kind::CollapsedScope ? b.id
                                                              : kRootScope;
      bool in = s != c.scope && tree.contains(c.scope, s);
      if (b.kind == LayoutBox::Kind::Op) in = tree.contains(c.scope, s);
      if (in && !inside(b.rect, c.rect)) return "box " + b.title + " outside its cluster";
      if (!in && inside(b.rect, c.rect, -0.5))
        return "box " + b.title + " inside a foreign cluster";
    }
    for (const LayoutCluster& d : l.clusters)
      if (d.scope != c.scope && tree.contains(c.scope, d.scope) && !inside(d.rect, c.rect))
        return "nested cluster outside its parent";
  }
  return {};
}

}  // namespace

class TestGraphLayout : public QObject {
  Q_OBJECT

 private:
  ir::Graph mlp_, bert_;

  void compareGolden(const std::string& actual, const QString& name) {
    QString path = goldenPath(name);
    if (qEnvironmentVariableIntValue("HAP_UPDATE_GOLDENS") == 1) {
      QFile f(path);
      QVERIFY2(f.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(path));
      f.write(actual.data(), static_cast<qint64>(actual.size()));
      qInfo("rewrote %s", qPrintable(path));
      return;
    }
    QFile f(path);
    QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(path + " (HAP_UPDATE_GOLDENS=1 writes it)"));
    QCOMPARE(QString::fromStdString(actual), QString::fromUtf8(f.readAll()));
  }

 private Q_SLOTS:
  void initTestCase() {
    mlp_ = import::importModel(zooModel("mlp-tiny.pt"));
    bert_ = import::importModel(zooModel("bert-tiny.pt"));
  }

  void goldenMlp() {
    ScopeTree tree(mlp_);
    CollapseState state(tree);
    compareGolden(layoutDot(mlp_, tree, state), "mlp-tiny-collapsed.dot");
    state.expandAll();
    compareGolden(layoutDot(mlp_, tree, state, {RankDirection::LeftToRight, false}),
                  "mlp-tiny-expanded-lr.dot");
  }

  void goldenBert() {
    ScopeTree tree(bert_);
    CollapseState state(tree);
    compareGolden(layoutDot(bert_, tree, state), "bert-tiny-collapsed.dot");
    state.reveal(tree, tree.find("layers.0.attn.q"));  // layers, layers.0 and its attn expanded
    compareGolden(layoutDot(bert_, tree, state), "bert-tiny-layer0.dot");
  }

  void invariants_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("expanded");  // "", "all" or a comma-separated list of paths
    QTest::addColumn<bool>("leftToRight");
    QTest::addColumn<bool>("showInputs");
    QTest::newRow("mlp collapsed") << "mlp"
                                   << "" << false << true;
    QTest::newRow("mlp expanded LR") << "mlp"
                                     << "all" << true << true;
    QTest::newRow("bert collapsed") << "bert"
                                    << "" << false << true;
    QTest::newRow("bert collapsed no inputs") << "bert"
                                              << "" << false << false;
    QTest::newRow("bert layer0") << "bert"
                                 << "layers.0,layers.0.attn" << false << true;
    QTest::newRow("bert deep only") << "bert"
                                    << "layers.1.attn" << false << true;
    QTest::newRow("bert expanded") << "bert"
                                   << "all" << false << true;
    QTest::newRow("bert expanded LR") << "bert"
                                      << "all" << true << false;
  }

  void invariants() {
    QFETCH(QString, model);
    QFETCH(QString, expanded);
    QFETCH(bool, leftToRight);
    QFETCH(bool, showInputs);
    const ir::Graph& g = model == "mlp" ? mlp_ : bert_;
    ScopeTree tree(g);
    CollapseState state(tree);
    if (expanded == "all") {
      state.expandAll();
    } else if (!expanded.isEmpty()) {
      for (const QString& p : expanded.split(',')) {
        ScopeId s = tree.find(p.toStdString());
        QVERIFY(s > 0);
        state.setExpanded(s, true);
      }
    }
    LayoutOptions options{leftToRight ? RankDirection::LeftToRight : RankDirection::TopToBottom,
                          showInputs};
    Layout l = layoutGraph(g, tree, state, options);
    std::string failure = checkInvariants(g, tree, state, options, l);
    QVERIFY2(failure.empty(), failure.c_str());
    QVERIFY(l.width > 0 && l.height > 0);
    // Ranks run down (TB) or right (LR): the first op's box comes before the loss's.
    const LayoutBox& first = l.boxes[static_cast<size_t>(l.boxOfNode(tree, state, 0))];
    const LayoutBox& last = l.boxes[static_cast<size_t>(
        l.boxOfNode(tree, state, static_cast<ir::NodeId>(g.nodes.size() - 1)))];
    if (&first != &last) {
      if (leftToRight)
        QVERIFY(first.rect.x < last.rect.x);
      else
        QVERIFY(first.rect.y < last.rect.y);
    }
    // Deterministic: the same arguments give the same drawing.
    Layout again = layoutGraph(g, tree, state, options);
    QCOMPARE(again.edges, l.edges);
    QCOMPARE(again.boxes.size(), l.boxes.size());
    for (size_t i = 0; i < l.boxes.size(); ++i) QCOMPARE(again.boxes[i].rect, l.boxes[i].rect);
  }

  void collapsedBoxesDescribeTheirScope() {
    ScopeTree tree(bert_);
    CollapseState state(tree);
    Layout l = layoutGraph(bert_, tree, state);
    const ir::NodeId qNode = tree.scope(tree.find("layers.0.attn.q")).nodes.at(0);
    int b = l.boxOfNode(tree, state, qNode);
    QVERIFY(b >= 0);
    // The ModuleList is one box.
    QCOMPARE(l.boxes[static_cast<size_t>(b)].kind, LayoutBox::Kind::CollapsedScope);
    QCOMPARE(l.boxes[static_cast<size_t>(b)].id, tree.find("layers"));
    QCOMPARE(l.boxes[static_cast<size_t>(b)].title, std::string("layers"));
    QVERIFY(l.clusters.empty());  // nothing expanded but the root
    // Opened, each of its blocks is.
    CollapseState open = state;
    open.setExpanded(tree.find("layers"), true);
    const Layout inner = layoutGraph(bert_, tree, open);
    b = inner.boxOfNode(tree, open, qNode);
    QVERIFY(b >= 0);
    const LayoutBox& box = inner.boxes[static_cast<size_t>(b)];
    QCOMPARE(box.kind, LayoutBox::Kind::CollapsedScope);
    QCOMPARE(box.id, tree.find("layers.0"));
    QCOMPARE(box.title, std::string("layers.0"));
    QCOMPARE(box.detail, std::string("28 ops · 8.54K params · 1.29 MFLOP"));
    QCOMPARE(inner.clusters.size(), size_t{1});
    // A scope of one op names it.
    const LayoutBox& tokens = l.boxes[static_cast<size_t>(
        l.boxOfNode(tree, state, tree.scope(tree.find("tokens")).nodes.at(0)))];
    QCOMPARE(tokens.detail, std::string("embedding · 4.10K params"));
    // The loss is drawn as itself at the top level.
    const LayoutBox& loss =
        l.boxes[static_cast<size_t>(l.boxOfNode(tree, state, bert_.value(bert_.loss).producer))];
    QCOMPARE(loss.title, std::string("cross_entropy_loss"));
    QCOMPARE(loss.detail, std::string("[]"));
  }

  // "Show only this scope": only the ops inside it, values from outside as input boxes, no frame
  // for the scope itself; its inside collapsed as the state says.
  void focusDrawsOnlyTheScope() {
    ScopeTree tree(bert_);
    const ScopeId attn = tree.find("layers.0.attn");
    CollapseState state(tree);
    state.reveal(tree, attn);
    state.setExpanded(attn, true);
    LayoutOptions options;
    options.focus = attn;
    const Layout l = layoutGraph(bert_, tree, state, options);
    int ops = 0, inputs = 0;
    for (const LayoutBox& b : l.boxes) {
      switch (b.kind) {
        case LayoutBox::Kind::Op:
          QVERIFY(tree.contains(attn, tree.scopeOfNode(b.id)));
          ++ops;
          break;
        case LayoutBox::Kind::CollapsedScope:
          QVERIFY(tree.contains(attn, b.id) && b.id != attn);
          break;
        case LayoutBox::Kind::Input: {
          // Read inside, made outside (or a graph input read inside).
          const ir::Value& v = bert_.value(b.id);
          QVERIFY(std::any_of(v.users.begin(), v.users.end(), [&](ir::NodeId u) {
            return tree.contains(attn, tree.scopeOfNode(u));
          }));
          if (v.producer >= 0) QVERIFY(!tree.contains(attn, tree.scopeOfNode(v.producer)));
          ++inputs;
          break;
        }
      }
    }
    QVERIFY(ops > 0);
    QVERIFY(inputs >= 1);  // the block's input, made by the norm or dropout before it
    for (const LayoutCluster& c : l.clusters) QVERIFY(c.scope != attn);
    for (const LayoutEdge& e : l.edges) QVERIFY(e.from >= 0 && e.to >= 0 && e.from != e.to);
    // The whole graph's drawing has more boxes; the DOT text has no frame for the focus.
    QVERIFY(layoutGraph(bert_, tree, state).boxes.size() > l.boxes.size());
    QVERIFY(layoutDot(bert_, tree, state, options).find("cluster_s" + std::to_string(attn) + " ") ==
            std::string::npos);
  }

  void cancel() {
    ScopeTree tree(bert_);
    CollapseState state(tree);
    state.expandAll();
    std::atomic<bool> flag{true};
    Layout l = layoutGraph(bert_, tree, state, {}, &flag);
    QVERIFY(l.cancelled);
    QVERIFY(l.boxes.empty() && l.edges.empty() && l.clusters.empty());
    flag = false;
    l = layoutGraph(bert_, tree, state, {}, &flag);
    QVERIFY(!l.cancelled);
    QVERIFY(!l.boxes.empty());
  }

  // Layouts on several threads at once give what one thread gives.
  void concurrentCalls() {
    ScopeTree tree(bert_);
    CollapseState state(tree);
    state.expandAll();
    Layout expected = layoutGraph(bert_, tree, state);
    std::vector<Layout> results(3);
    std::vector<std::thread> threads;
    for (Layout& r : results) threads.emplace_back([&] { r = layoutGraph(bert_, tree, state); });
    for (std::thread& t : threads) t.join();
    for (const Layout& r : results) {
      QCOMPARE(r.edges, expected.edges);
      QCOMPARE(r.clusters.size(), expected.clusters.size());
      for (size_t i = 0; i < r.clusters.size(); ++i)
        QCOMPARE(r.clusters[i].rect, expected.clusters[i].rect);
    }
  }

  // x -> a (s.a) -> b (s.b, two outputs) -> c (top) reads both outputs of b and x;
  // d (s.b) reads a. Parameters are never drawn.
  void handBuilt() {
    ir::Graph g;
    ir::ValueId x = g.addValue(ir::ValueKind::Input, "x", {2, 3}, ir::DType::Float32);
    g.inputs.push_back(x);
    ir::ValueId w = g.addValue(ir::ValueKind::Parameter, "s.a.weight", {3, 3}, ir::DType::Float32);
    g.parameters.push_back(w);
    ir::ValueId a = addOp(g, "aten::linear", "s.a", {x, w}, {2, 3});
    ir::ValueId b0 = addOp(g, "aten::chunk", "s.b", {a}, {1, 3}, 2);
    ir::ValueId b1 = b0 + 1;
    addOp(g, "aten::cat", "", {b0, b1, x}, {2, 6});
    addOp(g, "my::custom", "s.b", {a}, {2, 3});
    ScopeTree tree(g);
    ScopeId s = tree.find("s"), sa = tree.find("s.a"), sb = tree.find("s.b");
    QVERIFY(s > 0 && sa > 0 && sb > 0);

    // Collapsed: x, the scope box for s, cat. Edges x->s, s->cat (both chunks), x->cat.
    CollapseState state(tree);
    Layout l = layoutGraph(g, tree, state);
    QVERIFY(checkInvariants(g, tree, state, {}, l).empty());
    QCOMPARE(l.boxes.size(), size_t{3});
    QCOMPARE(l.boxes[0].kind, LayoutBox::Kind::Input);
    QCOMPARE(l.boxes[0].title, std::string("x"));
    QCOMPARE(l.boxes[0].detail, std::string("[2, 3]"));
    QCOMPARE(l.boxes[1].kind, LayoutBox::Kind::CollapsedScope);
    QCOMPARE(l.boxes[1].id, s);
    QCOMPARE(l.boxes[1].detail, std::string("3 ops · 9 params · 15 FLOP"));
    QCOMPARE(l.boxes[2].title, std::string("cat"));
    QCOMPARE(l.boxes[2].detail, std::string("[2, 6]"));
    QCOMPARE(l.edges.size(), size_t{3});
    QCOMPARE(l.edges[0].from, 0);
    QCOMPARE(l.edges[0].to, 1);
    QCOMPARE(l.edges[0].values, std::vector<ir::ValueId>{x});
    QCOMPARE(l.edges[1].from, 1);
    QCOMPARE(l.edges[1].to, 2);
    QCOMPARE(l.edges[1].values, (std::vector<ir::ValueId>{b0, b1}));
    QCOMPARE(l.edges[2].from, 0);
    QCOMPARE(l.edges[2].to, 2);

    // s expanded, s.b collapsed: a drawn as itself inside the cluster of s.a, nested in s.
    state.setExpanded(s, true);
    state.setExpanded(sa, true);
    l = layoutGraph(g, tree, state, {RankDirection::TopToBottom, false});
    QVERIFY2(checkInvariants(g, tree, state, {RankDirection::TopToBottom, false}, l).empty(),
             checkInvariants(g, tree, state, {RankDirection::TopToBottom, false}, l).c_str());
    QCOMPARE(l.boxes.size(), size_t{3});
    QCOMPARE(l.boxes[0].title, std::string("linear"));
    QCOMPARE(l.boxes[1].title, std::string("b"));
    QCOMPARE(l.boxes[1].detail, std::string("2 ops · 9 FLOP"));
    QCOMPARE(l.boxes[2].title, std::string("cat"));
    QCOMPARE(l.clusters.size(), size_t{2});
    QCOMPARE(l.clusters[0].scope, s);
    QCOMPARE(l.clusters[1].scope, sa);
    QCOMPARE(l.edges.size(), size_t{2});  // a->b carries a to both of b's nodes: one edge
    std::string dot = layoutDot(g, tree, state, {RankDirection::TopToBottom, false});
    QVERIFY(dot.find("subgraph cluster_s" + std::to_string(s) + " {\n") != std::string::npos);
    QVERIFY(dot.find("label=\"my::custom") == std::string::npos);  // inside collapsed s.b
    QVERIFY(dot.find("i0") == std::string::npos);
    QVERIFY(dot.find("weight") == std::string::npos);

    // Labels are quoted for DOT.
    g.value(x).name = "say \"hi\"\\";
    state.collapseAll();
    dot = layoutDot(g, tree, state);
    QVERIFY(dot.find("[label=\"say \\\"hi\\\"\\\\\\n[2, 3]\"") != std::string::npos);
    l = layoutGraph(g, tree, state);
    QCOMPARE(l.boxes[0].title, std::string("say \"hi\"\\"));

    // Nothing to draw.
    ir::Graph empty;
    ScopeTree emptyTree(empty);
    l = layoutGraph(empty, emptyTree, CollapseState(emptyTree));
    QVERIFY(!l.cancelled);
    QVERIFY(l.boxes.empty());
  }

  void largeSynthetic() {
    ir::Graph g = syntheticGraph(400);  // 2,000 ops, 1,601 scopes below the root
    QCOMPARE(g.nodes.size(), size_t{2000});
    ScopeTree tree(g);
    CollapseState state(tree);
    for (const Scope& s : tree.scopes())
      if (s.depth <= 2) state.setExpanded(s.id, true);  // `blocks`, 400 blocks of three boxes
    Layout l = layoutGraph(g, tree, state);
    std::string failure = checkInvariants(g, tree, state, {}, l);
    QVERIFY2(failure.empty(), failure.c_str());
    QCOMPARE(l.boxes.size(), size_t{1 + 400 * 3});
    // Only a drawing this large caps dot's positioning effort.
    QVERIFY(layoutDot(g, tree, state).find("nslimit") != std::string::npos);
    state.collapseAll();
    QVERIFY(layoutDot(g, tree, state).find("nslimit") == std::string::npos);
    QCOMPARE(tree.scope(tree.find("blocks.0")).structureKey,
             tree.scope(tree.find("blocks.399")).structureKey);
  }

  // Prints timings for the model in HAP_LAYOUT_TIMING_MODEL; skipped without it.
  void timing() {
    QString path = qEnvironmentVariable("HAP_LAYOUT_TIMING_MODEL");
    if (path.isEmpty()) QSKIP("set HAP_LAYOUT_TIMING_MODEL=model.pt to print layout timings");
    QElapsedTimer t;
    t.start();
    ir::Graph g = import::importModel(path.toStdString());
    qint64 import = t.restart();
    ScopeTree tree(g);
    CollapseState state(tree);
    qint64 treeMs = t.restart();
    Layout collapsed = layoutGraph(g, tree, state);
    qint64 collapsedMs = t.restart();
    state.expandAll();
    Layout expanded = layoutGraph(g, tree, state);
    qint64 expandedMs = t.restart();
    qInfo("%s: %zu nodes, %d scopes; import %lld ms, scope tree %lld ms", qPrintable(path),
          g.nodes.size(), tree.size(), import, treeMs);
    qInfo("  collapsed: %zu boxes, %zu edges, layout %lld ms", collapsed.boxes.size(),
          collapsed.edges.size(), collapsedMs);
    qInfo("  expanded:  %zu boxes, %zu clusters, %zu edges, layout %lld ms", expanded.boxes.size(),
          expanded.clusters.size(), expanded.edges.size(), expandedMs);
    std::string failure = checkInvariants(g, tree, state, {}, expanded);
    QVERIFY2(failure.empty(), failure.c_str());

    for (auto [blocks, scoped] : {std::pair{100, true}, {400, true}, {400, false}}) {
      ir::Graph s = syntheticGraph(blocks, scoped);
      ScopeTree st(s);
      CollapseState all(st);
      all.expandAll();
      t.restart();
      Layout l = layoutGraph(s, st, all);
      qInfo("  synthetic %zu ops fully expanded: %zu clusters, layout %lld ms", s.nodes.size(),
            l.clusters.size(), t.restart());
    }
  }
};

QTEST_GUILESS_MAIN(TestGraphLayout)
#include "tst_graph_layout.moc"
