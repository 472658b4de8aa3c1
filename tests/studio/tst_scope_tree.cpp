// The module-scope tree (paths, parents, order, totals, structure keys) and the collapse state,
// on bert-tiny from the zoo and on small graphs built by hand.
#include <QtTest>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "app/studio/core/graph/graph_layout.h"
#include "app/studio/core/graph/scope_tree.h"
#include "engine/import/importer.h"
#include "engine/ir/graph.h"
#include "engine/ir/summary.h"

using namespace hap;
using namespace hap::studio;

namespace {

std::string zooModel(const char* name) {
  return qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + name;
}

ir::Arg tensor(const std::string& name, ir::ValueId v) {
  return ir::Arg{name, "Tensor", ir::Arg::Kind::Tensor, {v}, {}, {}};
}

// Appends `op` in `scope` reading `inputs`, with one fresh float32 output of `shape`.
ir::ValueId addOp(ir::Graph& g, const std::string& op, const std::string& scope,
                  std::vector<ir::ValueId> inputs, ir::Shape shape, double flops = 0) {
  ir::Node n;
  n.op = op;
  n.scope = scope;
  for (size_t i = 0; i < inputs.size(); ++i)
    n.args.push_back(tensor("in" + std::to_string(i), inputs[i]));
  n.cost.flops = flops;
  n.cost.bytesWritten = ir::numel(shape) * 4;
  n.outputs = {g.addValue(ir::ValueKind::Activation, "v" + std::to_string(g.values.size()),
                          std::move(shape), ir::DType::Float32)};
  g.addNode(std::move(n));
  return g.nodes.back().outputs[0];
}

std::vector<std::string> childPaths(const ScopeTree& t, ScopeId s) {
  std::vector<std::string> out;
  for (ScopeId c : t.scope(s).children) out.push_back(t.scope(c).path);
  return out;
}

}  // namespace

class TestScopeTree : public QObject {
  Q_OBJECT

 private:
  ir::Graph bert_;

 private Q_SLOTS:
  void initTestCase() { bert_ = import::importModel(zooModel("bert-tiny.pt")); }

  void bertPathsAndParents() {
    ScopeTree t(bert_);
    const Scope& root = t.scope(kRootScope);
    QCOMPARE(root.path, std::string());
    QCOMPARE(root.label, std::string("(top)"));
    QCOMPARE(root.parent, -1);
    QCOMPARE(root.depth, 0);
    // Top-level children in order of first appearance; the ModuleList `layers` is a scope, its
    // blocks (labelled with the list's name) are its children.
    QCOMPARE(childPaths(t, kRootScope),
             (std::vector<std::string>{"tokens", "positions", "norm", "dropout", "layers",
                                       "head"}));
    const ScopeId layers = t.find("layers");
    QVERIFY(layers > 0);
    QCOMPARE(childPaths(t, layers), (std::vector<std::string>{"layers.0", "layers.1"}));
    ScopeId layer0 = t.find("layers.0");
    QVERIFY(layer0 > 0);
    QCOMPARE(t.scope(layer0).label, std::string("layers.0"));
    QCOMPARE(t.scope(layer0).parent, layers);
    QCOMPARE(t.scope(layer0).depth, 2);
    QCOMPARE(t.find("nonexistent"), -1);
    ScopeId attn = t.find("layers.0.attn");
    ScopeId q = t.find("layers.0.attn.q");
    QVERIFY(attn > 0 && q > 0);
    QCOMPARE(t.scope(q).parent, attn);
    QCOMPARE(t.scope(attn).parent, layer0);
    QCOMPARE(t.scope(q).label, std::string("q"));
    QCOMPARE(t.scope(q).depth, 4);
    QCOMPARE(childPaths(t, attn).front(), std::string("layers.0.attn.q"));
    QVERIFY(t.contains(kRootScope, q));
    QVERIFY(t.contains(layer0, q));
    QVERIFY(t.contains(q, q));
    QVERIFY(!t.contains(q, layer0));
    QVERIFY(!t.contains(t.find("layers.1"), q));

    // Every scope is its id, and its parent lists it; every node sits in exactly one scope.
    std::vector<int> seen(bert_.nodes.size(), 0);
    for (const Scope& s : t.scopes()) {
      QCOMPARE(t.scope(s.id).id, s.id);
      QCOMPARE(t.find(s.path), s.id);
      if (s.id != kRootScope) {
        const auto& siblings = t.scope(s.parent).children;
        QCOMPARE(std::count(siblings.begin(), siblings.end(), s.id), 1);
        QCOMPARE(s.depth, t.scope(s.parent).depth + 1);
        QVERIFY(s.parent < s.id);
      }
      QVERIFY(std::is_sorted(s.nodes.begin(), s.nodes.end()));
      for (ir::NodeId n : s.nodes) {
        ++seen[static_cast<size_t>(n)];
        QCOMPARE(t.scopeOfNode(n), s.id);
        QCOMPARE(bert_.node(n).scope, s.path);
      }
    }
    QVERIFY(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  }

  // A scope's totals are the sum of ir::summarize's full-scope rows inside it.
  void bertTotalsMatchSummary() {
    ScopeTree t(bert_);
    const ir::GraphSummary sum = ir::summarize(bert_, -1);
    for (const Scope& s : t.scopes()) {
      ir::ScopeSummary row;
      for (const ir::ScopeSummary& r : sum.scopes)
        if (s.id == kRootScope || r.scope == s.path || r.scope.starts_with(s.path + ".")) {
          row.nodes += r.nodes;
          row.parameters += r.parameters;
          row.parameterBytes += r.parameterBytes;
          row.flops += r.flops;
          row.activationBytes += r.activationBytes;
        }
      QVERIFY2(row.nodes > 0 || row.parameters > 0, s.path.c_str());
      QCOMPARE(s.opCount, row.nodes);
      QCOMPARE(s.parameters, row.parameters);
      QCOMPARE(s.parameterBytes, row.parameterBytes);
      QCOMPARE(s.flops, row.flops);
      QCOMPARE(s.activationBytes, row.activationBytes);
    }
    QCOMPARE(t.scope(kRootScope).opCount, static_cast<int>(bert_.nodes.size()));
    QCOMPARE(t.scope(kRootScope).parameters, bert_.parameterCount());
    QVERIFY(t.scope(t.find("layers.0")).flops > 0);
  }

  void bertStructureKeys() {
    ScopeTree t(bert_);
    auto key = [&](const char* path) {
      ScopeId s = t.find(path);
      return s < 0 ? std::string("missing ") + path : t.scope(s).structureKey;
    };
    QCOMPARE(key("layers.0"), key("layers.1"));
    QCOMPARE(key("layers.0.attn"), key("layers.1.attn"));
    QCOMPARE(key("layers.0.attn.q"), key("layers.0.attn.k"));  // same linear, same shapes
    QVERIFY(key("layers.0") != key("head"));
    QVERIFY(key("layers.0.attn") != key("layers.0.ffn"));
    QVERIFY(key("layers.0.attn.q") != key("layers.0.ffn.fc1"));
    QVERIFY(key("layers.0") != key(""));
    QVERIFY(!key("layers.0").empty());
  }

  void collapseState() {
    ScopeTree t(bert_);
    CollapseState st(t);
    ScopeId layers = t.find("layers"), layer0 = t.find("layers.0"),
            attn = t.find("layers.0.attn"), q = t.find("layers.0.attn.q");
    ir::NodeId qNode = t.scope(q).nodes.at(0);
    ir::NodeId topNode = t.scope(kRootScope).nodes.at(0);

    QVERIFY(st.expanded(kRootScope));
    QVERIFY(!st.expanded(layer0));
    QCOMPARE(st.representative(t, topNode), -1);  // the top level is always shown
    QCOMPARE(st.representative(t, qNode), layers);
    st.setExpanded(layers, true);
    QCOMPARE(st.representative(t, qNode), layer0);
    st.setExpanded(layer0, true);
    QCOMPARE(st.representative(t, qNode), attn);
    st.setExpanded(q, true);  // attn is still collapsed: it stands for q's node
    QCOMPARE(st.representative(t, qNode), attn);
    st.setExpanded(attn, true);
    QCOMPARE(st.representative(t, qNode), -1);
    st.setExpanded(layer0, false);
    QCOMPARE(st.representative(t, qNode), layer0);
    st.setExpanded(kRootScope, false);  // ignored
    QVERIFY(st.expanded(kRootScope));

    st.collapseAll();
    QVERIFY(st == CollapseState(t));
    st.reveal(t, q);
    QVERIFY(st.expanded(layers));
    QVERIFY(st.expanded(layer0));
    QVERIFY(st.expanded(attn));
    QVERIFY(!st.expanded(q));
    QCOMPARE(st.representative(t, qNode), q);
    QVERIFY(!st.expanded(t.find("layers.1")));

    st.expandAll();
    for (const ir::Node& n : bert_.nodes) QCOMPARE(st.representative(t, n.id), -1);
    st.collapseAll();
    for (const ir::Node& n : bert_.nodes) {
      ScopeId rep = st.representative(t, n.id);
      ScopeId s = t.scopeOfNode(n.id);
      if (s == kRootScope) {
        QCOMPARE(rep, -1);
      } else {
        QCOMPARE(t.scope(rep).depth, 1);  // the top-level ancestor
        QVERIFY(t.contains(rep, s));
      }
    }
  }

  // Index components at the top level, parameters of a module that runs no op of its own,
  // interleaved children, and an empty graph.
  // A model wrapped in one module (a user's `model` plus the loss) opens to its layers, not to one
  // box; a model that already shows enough at the top level opens fully collapsed.
  void openingExpandsWrappers() {
    ir::Graph g;
    ir::ValueId v = g.addValue(ir::ValueKind::Input, "x", {4, 8}, ir::DType::Float32);
    g.inputs.push_back(v);
    for (int layer = 0; layer < 8; ++layer)
      for (const char* part : {"fc1", "act", "fc2"})
        v = addOp(g, "aten::linear", "model.layers." + std::to_string(layer) + "." + part, {v}, {4, 8}, 64);
    addOp(g, "aten::mse_loss", "", {v}, {});
    ScopeTree t(g);
    const CollapseState collapsed(t);
    QCOMPARE(collapsed.drawnBoxes(t, g), 2);  // `model` and the loss
    const CollapseState opening = CollapseState::opening(t, g);
    QVERIFY(opening.expanded(t.find("model")));
    QCOMPARE(opening.drawnBoxes(t, g), 9);  // eight layers and the loss: no layer is opened
    for (int layer = 0; layer < 8; ++layer)
      QVERIFY(!opening.expanded(t.find("model.layers." + std::to_string(layer))));

    // bert-tiny shows 11 ops and scopes at the top level: it opens collapsed.
    const ScopeTree bert(bert_);
    QVERIFY(CollapseState::opening(bert, bert_) == CollapseState(bert));
  }

  // A U-Net written with nn.Sequential blocks, wrapped in `m` with the loss beside it (issue 31):
  // the children of each Sequential ("m.d1.0", "m.d1.1", ...) sit under one scope "m.d1", so the
  // collapsed drawing shows one box per block, not every op.
  void sequentialChildrenGrouped() {
    ir::Graph g;
    ir::ValueId v = g.addValue(ir::ValueKind::Input, "x", {2, 3, 16, 16}, ir::DType::Float32);
    g.inputs.push_back(v);
    for (const char* block : {"d1", "d2", "mid", "u2", "u1"}) {
      v = addOp(g, "aten::_convolution", std::string("m.") + block + ".0", {v}, {2, 8, 16, 16});
      v = addOp(g, "aten::batch_norm", std::string("m.") + block + ".1", {v}, {2, 8, 16, 16});
      v = addOp(g, "aten::relu", std::string("m.") + block + ".2", {v}, {2, 8, 16, 16});
      if (std::string(block) == "d1") v = addOp(g, "aten::max_pool2d", "m.p1", {v}, {2, 8, 8, 8});
    }
    v = addOp(g, "aten::cat", "m", {v, v}, {2, 16, 16, 16});
    addOp(g, "aten::cross_entropy_loss", "loss", {v}, {});
    const ScopeTree t(g);
    const ScopeId m = t.find("m"), d1 = t.find("m.d1");
    QVERIFY(m > 0 && d1 > 0);
    QCOMPARE(childPaths(t, m),
             (std::vector<std::string>{"m.d1", "m.p1", "m.d2", "m.mid", "m.u2", "m.u1"}));
    QCOMPARE(childPaths(t, d1), (std::vector<std::string>{"m.d1.0", "m.d1.1", "m.d1.2"}));
    QCOMPARE(t.scope(t.find("m.d1.1")).label, std::string("d1.1"));
    QCOMPARE(t.scope(d1).opCount, 3);
    // Blocks of the same ops and shapes share a key; the index does not enter it.
    QCOMPARE(t.scope(d1).structureKey, t.scope(t.find("m.d2")).structureKey);
    QCOMPARE(t.wrapper(), m);  // every parameter and all but one op: the summary descends into it

    // Opening (and Collapse All) shows m's blocks, each one box: 6 in m, its cat, and the loss.
    const CollapseState opening = CollapseState::opening(t, g);
    QVERIFY(opening.expanded(m));
    QVERIFY(!opening.expanded(d1));
    QCOMPARE(opening.drawnBoxes(t, g), 8);
    const Layout l = layoutGraph(g, t, opening);
    int scopeBoxes = 0;
    for (const LayoutBox& b : l.boxes) scopeBoxes += b.kind == LayoutBox::Kind::CollapsedScope;
    QCOMPARE(scopeBoxes, 7);  // d1, p1, d2, mid, u2, u1 and the loss module
  }

  // Chains of scopes that run no op of their own and hold one child each are one scope, one box,
  // one double-click: named by the chain, found by every path in it.
  void chainsMerge() {
    ir::Graph g;
    ir::ValueId v = g.addValue(ir::ValueKind::Input, "x", {4, 16}, ir::DType::Float32);
    g.inputs.push_back(v);
    for (int i = 0; i < 3; ++i)
      for (const char* part : {"0", "1", "2"})
        v = addOp(g, "aten::linear", "blocks.0.layers." + std::to_string(i) + "." + part, {v},
                  {4, 16});
    v = addOp(g, "aten::linear", "head", {v}, {4, 4});
    addOp(g, "aten::cross_entropy_loss", "", {v}, {});
    const ScopeTree t(g);
    QCOMPARE(childPaths(t, kRootScope), (std::vector<std::string>{"blocks.0.layers", "head"}));
    const ScopeId chain = t.find("blocks.0.layers");
    QVERIFY(chain > 0);
    QCOMPARE(t.find("blocks"), chain);
    QCOMPARE(t.find("blocks.0"), chain);
    QCOMPARE(t.scope(chain).label, std::string("blocks.0/layers"));
    QCOMPARE(t.scope(chain).outerPath, std::string("blocks"));
    QCOMPARE(t.scope(chain).depth, 1);
    QCOMPARE(t.scope(chain).opCount, 9);
    QCOMPARE(childPaths(t, chain), (std::vector<std::string>{"blocks.0.layers.0",
                                                             "blocks.0.layers.1",
                                                             "blocks.0.layers.2"}));
    QCOMPARE(t.scope(t.find("blocks.0.layers.1.2")).label, std::string("layers.1.2"));
    // One expansion shows the layers.
    CollapseState st(t);
    st.setExpanded(chain, true);
    QCOMPARE(st.drawnBoxes(t, g), 5);  // three layers, head, the loss
    // The chain holds 9 of 11 ops, every parameter (none here), and is the only child with more
    // than one op: the model's wrapper.
    QCOMPARE(t.wrapper(), chain);

    // A chain ending in a single op ("attn" holding only "attn.out") is one scope too.
    ir::Graph h;
    ir::ValueId y = h.addValue(ir::ValueKind::Input, "y", {2}, ir::DType::Float32);
    h.inputs.push_back(y);
    y = addOp(h, "aten::relu", "attn.out", {y}, {2});
    addOp(h, "aten::relu", "", {y}, {2});
    const ScopeTree th(h);
    QCOMPARE(th.size(), 2);
    QCOMPARE(th.scope(1).label, std::string("attn/out"));
    QCOMPARE(th.wrapper(), kRootScope);  // no child with more than one op
  }

  // A ModuleList looped over with its parent's ops between the entries (mlp-tiny's `hidden`:
  // linear, then the parent's relu, then the next linear) is no scope: one box for it would feed
  // itself through the relu. Its entries stay in the parent.
  void loopedModuleListStaysFlat() {
    ir::Graph g;
    ir::ValueId v = g.addValue(ir::ValueKind::Input, "x", {4}, ir::DType::Float32);
    g.inputs.push_back(v);
    for (int i = 0; i < 2; ++i) {
      v = addOp(g, "aten::linear", "hidden." + std::to_string(i), {v}, {4});
      v = addOp(g, "aten::relu", "", {v}, {4});
    }
    const ScopeTree t(g);
    QCOMPARE(t.find("hidden"), -1);
    QCOMPARE(childPaths(t, kRootScope), (std::vector<std::string>{"hidden.0", "hidden.1"}));
    QCOMPARE(t.scope(t.find("hidden.1")).label, std::string("hidden.1"));
    QCOMPARE(t.scope(t.find("hidden.1")).depth, 1);
  }

  void handBuilt() {
    ir::Graph g;
    ir::ValueId x = g.addValue(ir::ValueKind::Input, "x", {4, 8}, ir::DType::Float32);
    g.inputs.push_back(x);
    ir::ValueId w = g.addValue(ir::ValueKind::Parameter, "0.fc.weight", {8, 8}, ir::DType::Float32);
    ir::ValueId s = g.addValue(ir::ValueKind::Parameter, "out.scale", {8}, ir::DType::Float32);
    g.parameters = {w, s};
    ir::ValueId a = addOp(g, "aten::linear", "0.fc", {x, w}, {4, 8}, 512);
    ir::ValueId b = addOp(g, "aten::relu", "0", {a}, {4, 8}, 32);
    ir::ValueId c = addOp(g, "aten::linear", "1.fc", {b, w}, {4, 8}, 512);
    ir::ValueId d = addOp(g, "aten::relu", "1", {c}, {4, 8}, 32);
    addOp(g, "aten::mul", "", {d, s}, {4, 8}, 32);

    ScopeTree t(g);
    QCOMPARE(childPaths(t, kRootScope), (std::vector<std::string>{"0", "1", "out"}));
    ScopeId zero = t.find("0");
    QCOMPARE(t.scope(zero).label, std::string("0"));
    QCOMPARE(childPaths(t, zero), std::vector<std::string>{"0.fc"});
    QCOMPARE(t.scope(t.find("0.fc")).label, std::string("fc"));
    QCOMPARE(t.scope(zero).opCount, 2);
    QCOMPARE(t.scope(zero).flops, 544.0);
    QCOMPARE(t.scope(zero).parameters, int64_t{64});
    ScopeId out = t.find("out");
    QCOMPARE(t.scope(out).opCount, 0);
    QCOMPARE(t.scope(out).parameters, int64_t{8});
    QCOMPARE(t.scope(kRootScope).parameters, int64_t{72});
    QCOMPARE(t.scope(kRootScope).opCount, 5);
    QCOMPARE(t.scope(kRootScope).nodes, std::vector<ir::NodeId>{4});
    // "0" owns the weight both blocks use; "1" owns none, so they differ in structure.
    QVERIFY(t.scope(zero).structureKey != t.scope(t.find("1")).structureKey);
    QCOMPARE(t.scope(t.find("0.fc")).structureKey.substr(0, 2), std::string("1:"));

    // The order of a child's nodes relative to its parent's own nodes is part of the key.
    ir::Graph h;
    ir::ValueId y = h.addValue(ir::ValueKind::Input, "y", {2}, ir::DType::Float32);
    h.inputs.push_back(y);
    ir::ValueId p = addOp(h, "aten::relu", "a", {y}, {2});
    p = addOp(h, "aten::tanh", "a.inner", {p}, {2});
    p = addOp(h, "aten::tanh", "b.inner", {p}, {2});
    p = addOp(h, "aten::relu", "b", {p}, {2});
    p = addOp(h, "aten::relu", "c", {p}, {2});
    addOp(h, "aten::tanh", "c.inner", {p}, {2});
    ScopeTree th(h);
    QVERIFY(th.scope(th.find("a")).structureKey != th.scope(th.find("b")).structureKey);
    QCOMPARE(th.scope(th.find("a")).structureKey, th.scope(th.find("c")).structureKey);
    QCOMPARE(th.scope(th.find("a.inner")).structureKey, th.scope(th.find("b.inner")).structureKey);

    ScopeTree empty{ir::Graph{}};
    QCOMPARE(empty.size(), 1);
    CollapseState st(empty);
    st.expandAll();
    st.collapseAll();
    QVERIFY(st.expanded(kRootScope));
    QCOMPARE(ScopeTree().size(), 0);
  }
};

QTEST_GUILESS_MAIN(TestScopeTree)
#include "tst_scope_tree.moc"
