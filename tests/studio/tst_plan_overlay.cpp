// PlanOverlay on a real plan (bert-tiny on 2 A100 + 2 P100): every imported node's variant,
// segment, output form and per-device time equal its Compute step's; every Convert step lies on
// exactly one read; the graph view's edge annotations and edge key; the plan-mode colourings; the
// pin patterns of "Compute under variant".
#include <QtTest>

#include <QElapsedTimer>
#include <QRegularExpression>

#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "app/studio/core/display/units.h"
#include "app/studio/core/graph/graph_layout.h"
#include "app/studio/core/graph/plan_overlay.h"
#include "engine/ir/segments.h"
#include "engine/synth/search.h"
#include "tests/studio/plan_fixture.h"

using namespace hap;
using namespace hap::studio;

class TestPlanOverlay : public QObject {
  Q_OBJECT

 private:
  std::shared_ptr<const PlanDocument> m_doc;
  std::unique_ptr<PlanOverlay> m_overlay;
  std::shared_ptr<const ScopeTree> m_tree;

  // HAP_OVERLAY_DUMP=1: the program, one line per step (to see what the plan holds).
  void dump() {
    const plan::Plan& p = m_doc->p();
    const ir::Graph& pg = *m_doc->planned;
    qInfo("segments %zu, steps %zu, devices %zu", p.segments.size(), p.steps.size(),
          p.devices.size());
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const plan::PlanStep& s = p.steps[i];
      const ir::Node& n = pg.node(s.node);
      if (s.kind == plan::PlanStep::Kind::Compute)
        qInfo("%3zu compute %-20s %-10s seg %d out %s t %.3g", i, n.op.c_str(), s.variant.c_str(),
              s.segment, s.outputs.empty() ? "-" : rules::formatRel(s.outputs[0].rel).c_str(),
              s.seconds());
      else
        qInfo("%3zu convert %-20s %s %s %s->%s v%d->v%d t %.3g", i, n.op.c_str(),
              s.instruction.c_str(), s.method.c_str(), rules::formatRel(s.from.rel).c_str(),
              rules::formatRel(s.to.rel).c_str(), s.from.value, s.to.value, s.seconds());
    }
  }

 private Q_SLOTS:
  void initTestCase() {
    m_doc = testing::planWithCollectives();
    QVERIFY(m_doc);
    m_overlay = std::make_unique<PlanOverlay>(m_doc);
    m_tree = std::make_shared<const ScopeTree>(*m_doc->imported);
    QVERIFY(!m_overlay->empty());
    QCOMPARE(m_overlay->nodeCount(), static_cast<int>(m_doc->imported->nodes.size()));
    if (qEnvironmentVariableIsSet("HAP_OVERLAY_DUMP")) dump();
  }

  // Every imported node's variant, segment, output form and per-device times are its Compute
  // step's, through PlanDocument's own node map.
  void nodesEqualTheirComputeSteps() {
    const plan::Plan& p = m_doc->p();
    int computed = 0;
    for (const ir::Node& n : m_doc->imported->nodes) {
      const PlanNodeInfo& info = m_overlay->node(n.id);
      int compute = -1;
      for (int s : m_doc->stepsOfNode(n.id))
        if (p.steps[static_cast<size_t>(s)].kind == plan::PlanStep::Kind::Compute) compute = s;
      QCOMPARE(info.computeStep, compute);
      QCOMPARE(info.segment, p.importedNodeSegment[static_cast<size_t>(n.id)]);
      if (compute < 0) continue;
      ++computed;
      const plan::PlanStep& s = p.steps[static_cast<size_t>(compute)];
      QCOMPARE(info.variant, s.variant);
      QCOMPARE(s.node, m_doc->plannedNode[static_cast<size_t>(n.id)]);
      QVERIFY(info.hasOutputForm);
      QCOMPARE(info.outputForm, s.outputs.front().rel);
      for (int r = 0; r < m_overlay->rankCount(); ++r) {
        const size_t group = static_cast<size_t>(p.devices[static_cast<size_t>(r)].group);
        QCOMPARE(info.forwardByRank[static_cast<size_t>(r)], s.forwardByGroup[group]);
        QCOMPARE(info.backwardByRank[static_cast<size_t>(r)], s.backwardByGroup[group]);
        QCOMPARE(m_overlay->nodeSeconds(n.id, r),
                 s.forwardByGroup[group] + s.backwardByGroup[group]);
      }
    }
    QCOMPARE(computed, static_cast<int>(m_doc->imported->nodes.size()));
    // The two device types run the same node at different speeds somewhere.
    bool differ = false;
    for (const ir::Node& n : m_doc->imported->nodes)
      differ = differ || m_overlay->nodeSeconds(n.id, 0) != m_overlay->nodeSeconds(n.id, 3);
    QVERIFY(differ);
  }

  // Every Convert step (and every reshard's Compute step) lies on exactly one read, and a
  // conversion on the read of (v, c) prepares v (or its resharded copy) for c or for the reshard
  // in front of c.
  void everyConversionOnExactlyOneEdge() {
    const plan::Plan& p = m_doc->p();
    const ir::Graph& pg = *m_doc->planned;
    std::map<int, int> seen;
    int collectives = 0;
    for (const PlanEdgeInfo& e : m_overlay->edges()) {
      int counted = 0;
      for (int c : e.conversions) {
        ++seen[c];
        const plan::PlanStep& s = p.steps[static_cast<size_t>(c)];
        counted += isCollective(s);
        const ir::NodeId imported = m_doc->stepNode(c);
        if (imported != ir::kNone) {
          QCOMPARE(imported, e.consumer);
          QCOMPARE(s.kind, plan::PlanStep::Kind::Convert);
        } else {
          QCOMPARE(pg.node(s.node).op, std::string(ir::kReshardOp));
        }
        if (s.kind == plan::PlanStep::Kind::Convert) {
          ir::ValueId v = s.to.value;
          // A resharded copy stands for its value.
          if (static_cast<size_t>(v) >= m_doc->imported->values.size())
            v = pg.node(pg.value(v).producer).tensorInputs().front();
          QCOMPARE(v, e.value);
        }
      }
      QCOMPARE(e.collectives, counted);
      collectives += counted;
      if (!e.conversions.empty()) {
        // Conversions come in program order.
        QVERIFY(std::is_sorted(e.conversions.begin(), e.conversions.end()));
        QVERIFY(e.hasReadForm);
      }
    }
    int converts = 0, reshards = 0;
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const plan::PlanStep& s = p.steps[i];
      const bool reshard =
          s.kind == plan::PlanStep::Kind::Compute && pg.node(s.node).op == ir::kReshardOp;
      if (s.kind == plan::PlanStep::Kind::Convert || reshard) {
        QVERIFY2(seen[static_cast<int>(i)] == 1,
                 qPrintable(
                     QStringLiteral("step %1 on %2 edges").arg(i).arg(seen[static_cast<int>(i)])));
        (reshard ? reshards : converts)++;
      }
    }
    QVERIFY(converts > 0);
    QVERIFY(collectives > 0);
    qInfo("%d conversions, %d reshards, %d communicating, on %zu reads", converts, reshards,
          collectives, m_overlay->edges().size());
    // Every read the consumer's Compute step lists has its form.
    for (const ir::Node& n : m_doc->imported->nodes)
      for (ir::ValueId v : n.tensorInputs()) {
        const PlanEdgeInfo* e = m_overlay->edge(v, n.id);
        QVERIFY(e);
        QVERIFY(e->hasReadForm);
        QVERIFY(e->hasValueForm);
      }
  }

  // The read form of each edge is the form in the consumer's Compute step, with its exact lengths.
  void readFormsAreTheConsumersInputs() {
    const plan::Plan& p = m_doc->p();
    int sharded = 0;
    for (const PlanEdgeInfo& e : m_overlay->edges()) {
      const plan::PlanStep& s =
          p.steps[static_cast<size_t>(m_overlay->node(e.consumer).computeStep)];
      bool found = false;
      for (const plan::Form& f : s.inputs)
        if (f.rel == e.read.rel && f.lengths == e.read.lengths) found = true;
      QVERIFY(found);
      if (rules::isGather(e.read.rel)) {
        ++sharded;
        QCOMPARE(e.read.lengths.size(), size_t{4});
        const ir::Value& v = m_doc->imported->value(e.value);
        int64_t total = 0;
        for (int64_t l : e.read.lengths) total += l;
        QCOMPARE(total, v.shape[static_cast<size_t>(e.read.rel)]);
      }
    }
    QVERIFY(sharded > 0);
  }

  void texts() {
    plan::Form f;
    f.rel = rules::gather(0);
    f.lengths = {3, 3, 2, 0};
    QCOMPARE(formText(f), QStringLiteral("G(0) lengths 3, 3, 2, 0"));
    f.rel = rules::kReduce;
    QCOMPARE(formText(f), QStringLiteral("R (partial sum)"));
    QCOMPARE(formCategoryName(rules::gather(1)), QStringLiteral("sharded dim 1"));
    QCOMPARE(formCategoryName(rules::kIdentity), QStringLiteral("replicated"));
    QCOMPARE(formCategoryName(rules::kReduce), QStringLiteral("partial sum"));
    plan::PlanStep s;
    s.kind = plan::PlanStep::Kind::Convert;
    s.instruction = "all-gather";
    s.method = "padded";
    QCOMPARE(conversionText(s), QStringLiteral("all-gather (padded)"));
    QCOMPARE(conversionGlyph(s), QStringLiteral("AG"));
    s.instruction = "reduce-scatter";
    s.method.clear();
    QCOMPARE(conversionText(s), QStringLiteral("reduce-scatter"));
    QCOMPARE(conversionGlyph(s), QStringLiteral("RS"));
    s.instruction = "all-to-all";
    QCOMPARE(conversionGlyph(s), QStringLiteral("A2A"));
    s.instruction = "all-reduce";
    QCOMPARE(conversionGlyph(s), QStringLiteral("AR"));
    QCOMPARE(formatDuration(412e-6), QStringLiteral("412 µs"));
    QCOMPARE(formatDuration(1.25e-3), QStringLiteral("1.25 ms"));
  }

  void colourings() {
    const ir::Graph& g = *m_doc->imported;
    const ScopeTree& tree = *m_tree;
    // Sharding form: categories replicated, sharded dim 0..d, partial sum; each node's own form.
    const int maxDim = m_overlay->maxShardedDim();
    QVERIFY(maxDim >= 0);
    const NodeColouring forms = planColouring(*m_overlay, g, tree, ColourBy::ShardingForm);
    QCOMPARE(forms.mode(), ColourBy::ShardingForm);
    for (const ir::Node& n : g.nodes) {
      const PlanNodeInfo& info = m_overlay->node(n.id);
      QCOMPARE(forms.nodeCategory(n.id), formCategory(info.outputForm, maxDim));
    }
    // Variant: one category per variant the plan uses; the same colours for a partial program.
    const NodeColouring variants = planColouring(*m_overlay, g, tree, ColourBy::Variant);
    std::set<QString> legend;
    for (const auto& [label, colour] : variants.legend().entries) {
      legend.insert(label);
      QCOMPARE(colour, variantColour(label.toStdString()));
    }
    QCOMPARE(legend.size(), m_overlay->variantNames().size());
    std::vector<std::string> partial = m_overlay->variantByNode();
    for (size_t n = partial.size() / 2; n < partial.size(); ++n) partial[n].clear();
    const NodeColouring live = variantColouring(g, tree, partial);
    for (const ir::Node& n : g.nodes) {
      if (static_cast<size_t>(n.id) < partial.size() / 2)
        QCOMPARE(live.nodeColour(n.id), variants.nodeColour(n.id));
      else
        QCOMPARE(live.nodeColour(n.id), live.neutralColour());
    }
    // Segment: one category per segment.
    const NodeColouring segments = planColouring(*m_overlay, g, tree, ColourBy::Segment);
    for (const ir::Node& n : g.nodes)
      QCOMPARE(segments.nodeCategory(n.id),
               m_doc->p().importedNodeSegment[static_cast<size_t>(n.id)]);
    QCOMPARE(segments.legend().entries.size(), m_doc->p().segments.size());
    // Device cost: the node's time on the chosen device; default: the bottleneck.
    const int bottleneck = plan::bottleneckRank(m_doc->timeline);
    QCOMPARE(m_overlay->bottleneckRank(), bottleneck);
    const NodeColouring cost = planColouring(*m_overlay, g, tree, ColourBy::DeviceCost);
    const NodeColouring cost0 = planColouring(*m_overlay, g, tree, ColourBy::DeviceCost, 0);
    QVERIFY(cost.numeric());
    QVERIFY(cost.legend().title.contains(QStringLiteral("rank %1").arg(bottleneck)));
    for (const ir::Node& n : g.nodes) {
      QCOMPARE(cost.nodeValue(n.id), m_overlay->nodeSeconds(n.id, bottleneck));
      QCOMPARE(cost0.nodeValue(n.id), m_overlay->nodeSeconds(n.id, 0));
    }
    QVERIFY(cost.legend().maxLabel.endsWith(QStringLiteral("s")));
  }

  // The graph view's edge annotations, computed without a view: on the expanded graph each edge's
  // label, tooltip, dash and pill say the conversions before the reads its target box draws; on
  // the collapsed graph a bundle of reads is summed up; the legend's edge key lists the forms the
  // drawn edges carry. A plan for another graph annotates nothing.
  void edgeAnnotations() {
    const ir::Graph& g = *m_doc->imported;
    const plan::Plan& p = m_doc->p();
    CollapseState expanded(*m_tree);
    expanded.expandAll();
    const Layout l = layoutGraph(g, *m_tree, expanded);
    const std::vector<EdgeAnnotation> notes = annotateEdges(*m_overlay, g, *m_tree, expanded, l);
    QCOMPARE(notes.size(), l.edges.size());
    const QRegularExpression labelForm(
        QStringLiteral("^[A-Z0-9]+(×\\d+)?( [A-Z0-9]+(×\\d+)?)?…?$"));
    int converted = 0, collective = 0, allReduces = 0, single = 0;
    for (size_t i = 0; i < l.edges.size(); ++i) {
      const LayoutEdge& e = l.edges[i];
      const EdgeAnnotation& note = notes[i];
      QStringList expected;
      bool communicates = false;
      int reads = 0;
      for (ir::ValueId v : e.values)
        for (const PlanEdgeInfo* r : m_overlay->readsOf(v)) {
          if (l.boxOfNode(*m_tree, expanded, r->consumer) != e.to) continue;
          ++reads;
          for (int c : r->conversions) {
            const plan::PlanStep& s = p.steps[static_cast<size_t>(c)];
            if (conversionGlyph(s).isEmpty()) continue;
            expected << conversionText(s);
            communicates = communicates || isCollective(s);
          }
        }
      QVERIFY(note.stroke.isValid());  // every drawn value has a producer's form
      QCOMPARE(note.converted, !expected.isEmpty());
      QCOMPARE(note.collective, communicates);
      QCOMPARE(note.label.isEmpty(), expected.isEmpty());
      if (reads == 1) {
        ++single;
        QVERIFY2(note.toolTip.contains(QStringLiteral("read by ")), qPrintable(note.toolTip));
      }
      if (expected.isEmpty()) continue;
      ++converted;
      collective += communicates;
      QVERIFY2(labelForm.match(note.label).hasMatch(), qPrintable(note.label));
      for (const QString& text : expected)
        QVERIFY2(note.toolTip.contains(text), qPrintable(note.toolTip));
      if (expected.contains(QStringLiteral("all-reduce"))) {
        ++allReduces;
        QVERIFY2(note.label.contains(QStringLiteral("AR")), qPrintable(note.label));
      }
    }
    QVERIFY(converted >= 3);
    QVERIFY(collective >= 1);
    QVERIFY(allReduces >= 1);
    QVERIFY(single > 0);

    // The edge key: categories in order, each with its stroke colour; this plan's drawn values
    // come in more than one form.
    const std::vector<std::pair<QString, QColor>> key = edgeFormLegend(*m_overlay, l);
    QVERIFY(key.size() >= 2);
    const int maxDim = m_overlay->maxShardedDim();
    const std::vector<QString> labels = formCategoryLabels(maxDim);
    size_t at = 0;
    for (const auto& [label, colour] : key) {
      while (at < labels.size() && labels[at] != label) ++at;
      QVERIFY2(at < labels.size(), qPrintable(label));  // a category, in category order
      const rules::Rel r = at == 0                   ? rules::kIdentity
                           : at == labels.size() - 1 ? rules::kReduce
                                                     : rules::gather(static_cast<int>(at) - 1);
      QCOMPARE(colour, formStrokeColour(r));
    }

    // Collapsed: edges between scopes sum up their reads.
    const CollapseState collapsed(*m_tree);
    const Layout c = layoutGraph(g, *m_tree, collapsed);
    const std::vector<EdgeAnnotation> bundled = annotateEdges(*m_overlay, g, *m_tree, collapsed, c);
    QCOMPARE(bundled.size(), c.edges.size());
    int aggregated = 0;
    for (const EdgeAnnotation& note : bundled)
      aggregated += note.toolTip.contains(
          QRegularExpression(QStringLiteral("^\\d+ read\\(s\\) of \\d+ value")));
    QVERIFY(aggregated > 0);

    // No plan for this graph: nothing to annotate.
    QVERIFY(annotateEdges(PlanOverlay(), g, *m_tree, expanded, l).empty());
    QVERIFY(edgeFormLegend(PlanOverlay(), l).empty());
    ir::Graph other = g;
    other.nodes.pop_back();
    QVERIFY(annotateEdges(*m_overlay, other, *m_tree, expanded, l).empty());
  }

  // Pin patterns select exactly what was clicked where the glob can.
  void pins() {
    const ir::Graph& g = *m_doc->imported;
    QElapsedTimer t;
    t.start();
    const auto variants = ruleVariantNames(g);
    qInfo("rule variant names of bert-tiny (%zu nodes): %.1f ms", g.nodes.size(),
          static_cast<double>(t.nsecsElapsed()) / 1e6);
    QCOMPARE(variants.size(), g.nodes.size());
    // The plan's variant of every node is among its rule variants.
    for (const ir::Node& n : g.nodes) {
      const auto& names = variants[static_cast<size_t>(n.id)];
      QVERIFY(std::find(names.begin(), names.end(), m_overlay->node(n.id).variant) != names.end());
      QCOMPARE(names.front(), std::string("replicate"));
    }
    QVERIFY(hap::synth::globMatch("layers.1*", "layers.10.attn"));
    QVERIFY(!hap::synth::globMatch("layers.1.*", "layers.10.attn"));
    QVERIFY(hap::synth::globMatch("a?c", "abc"));
    QVERIFY(!hap::synth::globMatch("", "x"));
    // A linear in an attention scope: its scope.
    ir::NodeId linear = ir::kNone;
    for (const ir::Node& n : g.nodes)
      if (n.op == "aten::linear" && !n.scope.empty()) {
        linear = n.id;
        break;
      }
    QVERIFY(linear != ir::kNone);
    const PinChoice node = pinForNode(g, variants, linear, "column");
    QCOMPARE(node.pattern, g.node(linear).scope);
    QVERIFY(node.wanted == 1);
    // A scope: "path*" when no other scope's name starts with its path.
    const ScopeId layer0 = m_tree->find("layers.0");
    QVERIFY(layer0 > 0);
    const PinChoice scope = pinForScope(g, *m_tree, variants, layer0, "replicate");
    QCOMPARE(scope.pattern, std::string("layers.0*"));
    QVERIFY(scope.exact());
    int inside = 0;
    for (const ir::Node& n : g.nodes) inside += m_tree->contains(layer0, m_tree->scopeOfNode(n.id));
    QCOMPARE(scope.selected, inside);
  }

  // A graph whose scope names prefix each other: "b1*" would take "b10" too.
  void pinPatternsAvoidPrefixSiblings() {
    ir::Graph g;
    ir::ValueId v = g.addValue(ir::ValueKind::Input, "x", {4, 8}, ir::DType::Float32);
    g.inputs.push_back(v);
    for (const char* scope : {"b1.inner", "b1.inner", "b10.inner", "b1"}) {
      ir::Node n;
      n.op = "aten::relu";
      n.scope = scope;
      ir::Arg a;
      a.name = "self";
      a.type = "Tensor";
      a.kind = ir::Arg::Kind::Tensor;
      a.values = {v};
      n.args.push_back(a);
      v = g.addValue(ir::ValueKind::Activation, "v", {4, 8}, ir::DType::Float32);
      n.outputs = {v};
      g.addNode(std::move(n));
    }
    const ScopeTree tree(g);
    std::vector<std::vector<std::string>> variants(4, {"replicate", "dim0"});
    // b1 holds b1.inner and a node of its own: no glob takes exactly those three; "b1*" takes
    // them all with one other, the fewest of the candidates that take them all.
    PinChoice c = pinForScope(g, tree, variants, tree.find("b1"), "dim0");
    QCOMPARE(c.pattern, std::string("b1*"));
    QCOMPARE(c.wanted, 3);
    QCOMPARE(c.selected, 4);
    QVERIFY(!c.exact());
    // Without its own node, "b1.*" is exact.
    variants[3] = {"replicate"};
    c = pinForScope(g, tree, variants, tree.find("b1"), "dim0");
    QCOMPARE(c.pattern, std::string("b1.*"));
    QVERIFY(c.exact());
    // The node in b1 alone, by scope: exact.
    variants[3] = {"replicate", "dim0"};
    c = pinForNode(g, variants, 3, "dim0");
    QCOMPARE(c.pattern, std::string("b1"));
    QVERIFY(c.exact());
  }
};

QTEST_GUILESS_MAIN(TestPlanOverlay)
#include "tst_plan_overlay.moc"
