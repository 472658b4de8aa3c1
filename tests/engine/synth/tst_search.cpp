// A* search: optimal against exhaustive enumeration, deterministic, cancellable, bounded.
#include <QtTest>

#include <fmt/format.h>

#include <array>
#include <functional>
#include <memory>
#include <set>
#include <random>

#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/ir/op_cost.h"
#include "engine/synth/search.h"
#include "../rules/rule_test_util.h"

using namespace hap;

namespace {

// Ends a test graph: the mean cross-entropy of `logits` against `y` is the loss; costs annotated.
void finishWithLoss(test::GraphBuilder& b, ir::ValueId logits, ir::ValueId y) {
  using GB = test::GraphBuilder;
  auto ce = b.op("aten::cross_entropy_loss",
                 {GB::tensor("self", logits), GB::tensor("target", y), GB::constant("weight", std::monostate{}),
                  GB::constant("reduction", int64_t{1}), GB::constant("ignore_index", int64_t{-100}),
                  GB::constant("label_smoothing", 0.0)},
                 {{}});
  b.g.loss = b.out(ce);
  ir::annotateCosts(b.g);
  b.g.check();
}

// Two machines: 2 fast devices on NVLink and 2 slow ones on PCIe, a slow network between.
cost::Cluster smallCluster() {
  return cost::parseCluster(R"(
name: test-4
device_types:
  fast: {flops: {float32: 20T}, memory: 40GiB, memory_bandwidth: 1500GB/s, op_overhead: 10us}
  slow: {flops: {float32: 8T}, memory: 16GiB, memory_bandwidth: 700GB/s, op_overhead: 10us}
machines:
  - {name: a, host: 10.0.0.1, device_type: fast, count: 2, link: {bandwidth: 150GB/s, latency: 5us}}
  - {name: b, host: 10.0.0.2, device_type: slow, count: 2, link: {bandwidth: 16GB/s, latency: 8us}}
network: {bandwidth: 10Gbps, latency: 50us}
)",
                            "test-4");
}

// x[B,I] -> linear -> relu -> linear -> cross_entropy(y) -> loss
ir::Graph mlpGraph(int64_t batch, int64_t in, int64_t hidden, int64_t out) {
  test::GraphBuilder b;
  using GB = test::GraphBuilder;
  ir::ValueId x = b.input("x", {batch, in});
  ir::ValueId y = b.input("y", {batch}, ir::DType::Int64);
  ir::ValueId w1 = b.param("fc1.weight", {hidden, in}), b1 = b.param("fc1.bias", {hidden});
  ir::ValueId w2 = b.param("fc2.weight", {out, hidden}), b2 = b.param("fc2.bias", {out});
  auto l1 = b.op("aten::linear", {GB::tensor("input", x), GB::tensor("weight", w1), GB::tensor("bias", b1)},
                 {{batch, hidden}});
  auto r = b.op("aten::relu", {GB::tensor("self", b.out(l1))}, {{batch, hidden}});
  auto l2 = b.op("aten::linear", {GB::tensor("input", b.out(r)), GB::tensor("weight", w2), GB::tensor("bias", b2)},
                 {{batch, out}});
  finishWithLoss(b, b.out(l2), y);
  return std::move(b.g);
}

// Eight machines of one GPU each (2 fast + 6 slow), a 10.4 Gbps network: paper-testbed-8's shape.
cost::Cluster testbed8() {
  std::string yaml = R"(
name: test-8x1
device_types:
  fast: {flops: {float32: 15.7T}, memory: 16GiB, memory_bandwidth: 900GB/s, op_overhead: 10us}
  slow: {flops: {float32: 9.3T}, memory: 16GiB, memory_bandwidth: 732GB/s, op_overhead: 10us}
machines:
)";
  for (int m = 0; m < 8; ++m)
    yaml += fmt::format("  - {{name: m{}, host: 10.0.0.{}, device_type: {}, count: 1, link: {{bandwidth: 15GB/s, latency: 6us}}}}\n",
                        m, m + 1, m < 2 ? "fast" : "slow");
  yaml += "network: {bandwidth: 10.4Gbps, latency: 70us}\n";
  return cost::parseCluster(yaml, "test-8x1");
}

// `layers` attention blocks on x[B, S, H·E] written as einsums (heads explicit, no views):
// q, k, v = x·W (W[H, D, E]), scores = q·kᵀ per head, relu, context = scores·v, out = context·Wo,
// x += out; then a pooled linear and a cross-entropy loss. q, k and v read x and meet again at
// the two joins: the diamond no forest of the heuristic sees whole.
ir::Graph attentionGraph(int layers, int64_t batch, int64_t seq, int64_t heads, int64_t headDim) {
  test::GraphBuilder b;
  using GB = test::GraphBuilder;
  const int64_t d = heads * headDim;
  ir::ValueId x = b.input("x", {batch, seq, d});
  const ir::ValueId y = b.input("y", {batch}, ir::DType::Int64);
  auto einsum = [&](const std::string& eq, std::vector<ir::ValueId> ops, ir::Shape out) {
    return b.out(b.op("aten::einsum", {GB::constant("equation", eq), GB::list("tensors", std::move(ops)),
                                        GB::constant("path", std::monostate{})},
                      {std::move(out)}));
  };
  for (int l = 0; l < layers; ++l) {
    auto weight = [&](const char* name, ir::Shape shape) {
      return b.param(fmt::format("layers.{}.{}", l, name), std::move(shape));
    };
    const ir::ValueId q = einsum("bsd,hde->bshe", {x, weight("q", {heads, d, headDim})}, {batch, seq, heads, headDim});
    const ir::ValueId k = einsum("bsd,hde->bshe", {x, weight("k", {heads, d, headDim})}, {batch, seq, heads, headDim});
    const ir::ValueId v = einsum("bsd,hde->bshe", {x, weight("v", {heads, d, headDim})}, {batch, seq, heads, headDim});
    const ir::ValueId scores = einsum("bshe,bthe->bhst", {q, k}, {batch, heads, seq, seq});
    const ir::ValueId probs = b.out(b.op("aten::relu", {GB::tensor("self", scores)}, {{batch, heads, seq, seq}}));
    const ir::ValueId context = einsum("bhst,bthe->bshe", {probs, v}, {batch, seq, heads, headDim});
    const ir::ValueId out = einsum("bshe,hed->bsd", {context, weight("out", {heads, headDim, d})}, {batch, seq, d});
    x = b.out(b.op("aten::add", {GB::tensor("self", x), GB::tensor("other", out), GB::constant("alpha", int64_t{1})},
                   {{batch, seq, d}}));
  }
  const ir::ValueId pooled = einsum("bsd->bd", {x}, {batch, d});
  const ir::ValueId w = b.param("head.weight", {16, d}), bias = b.param("head.bias", {16});
  const ir::ValueId logits = b.out(b.op(
      "aten::linear", {GB::tensor("input", pooled), GB::tensor("weight", w), GB::tensor("bias", bias)}, {{batch, 16}}));
  finishWithLoss(b, logits, y);
  return std::move(b.g);
}

// A small random graph from the zoo's op families on [B, D] activations: linears, relus,
// residual adds, and MoE blocks (dispatch einsum joining an activation with a gating mask that
// the combine einsum reads again, the experts' einsum between), ending in a linear and a
// cross-entropy loss. Deterministic in `seed`; `combinations` is the product of the nodes'
// variant counts (what exhaustive enumeration replays).
ir::Graph randomGraph(uint32_t seed, int64_t* combinations) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  const int64_t batch = std::array<int64_t, 3>{8, 64, 512}[static_cast<size_t>(pick(3))];
  const int64_t d = std::array<int64_t, 3>{32, 256, 2048}[static_cast<size_t>(pick(3))];
  const int64_t experts = 4, capacity = std::max<int64_t>(2, batch / 2), classes = 16;
  test::GraphBuilder b;
  using GB = test::GraphBuilder;
  std::vector<ir::ValueId> pool{b.input("x", {batch, d})};
  const ir::ValueId y = b.input("y", {batch}, ir::DType::Int64);
  int params = 0;
  auto linear = [&](ir::ValueId in, int64_t out) {
    const std::string name = fmt::format("fc{}", params++);
    ir::ValueId w = b.param(name + ".weight", {out, d}), bias = b.param(name + ".bias", {out});
    return b.out(b.op("aten::linear", {GB::tensor("input", in), GB::tensor("weight", w), GB::tensor("bias", bias)},
                      {{batch, out}}));
  };
  auto einsum = [&](const std::string& eq, std::vector<ir::ValueId> ops, ir::Shape out) {
    return b.out(b.op("aten::einsum", {GB::constant("equation", eq), GB::list("tensors", std::move(ops)),
                                        GB::constant("path", std::monostate{})},
                      {std::move(out)}));
  };
  const int steps = 2 + pick(3);
  for (int i = 0; i < steps; ++i) {
    const ir::ValueId v = pool[static_cast<size_t>(pick(static_cast<int>(pool.size())))];
    switch (pick(4)) {
      case 0: pool.push_back(linear(v, d)); break;
      case 1: pool.push_back(b.out(b.op("aten::relu", {GB::tensor("self", v)}, {{batch, d}}))); break;
      case 2: {
        const ir::ValueId w = pool[static_cast<size_t>(pick(static_cast<int>(pool.size())))];
        pool.push_back(b.out(b.op("aten::add", {GB::tensor("self", v), GB::tensor("other", w),
                                                GB::constant("alpha", int64_t{1})},
                                  {{batch, d}})));
        break;
      }
      default: {
        const ir::ValueId mask = b.input(fmt::format("mask{}", i), {batch, experts, capacity});
        const ir::ValueId w = b.param(fmt::format("experts{}", i), {experts, d, d});
        const ir::ValueId dispatched = einsum("bd,bec->ecd", {v, mask}, {experts, capacity, d});
        const ir::ValueId expert = einsum("ecd,edh->ech", {dispatched, w}, {experts, capacity, d});
        pool.push_back(einsum("ech,bec->bh", {expert, mask}, {batch, d}));
        break;
      }
    }
  }
  const ir::ValueId logits = linear(pool.back(), classes);
  finishWithLoss(b, logits, y);
  synth::Theory t(b.g);
  *combinations = 1;
  for (const ir::Node& n : b.g.nodes) *combinations *= static_cast<int64_t>(t.variants(n.id).size());
  return std::move(b.g);
}

// The cheapest program over every combination of variants (the same conversion replay).
double exhaustiveOptimum(const synth::CostTable& table, int64_t* combinations) {
  const ir::Graph& g = table.theory().graph();
  std::vector<int> choice(g.nodes.size(), 0);
  double best = std::numeric_limits<double>::infinity();
  *combinations = 0;
  std::function<void(size_t)> rec = [&](size_t k) {
    if (k == g.nodes.size()) {
      ++*combinations;
      try {
        best = std::min(best, synth::buildProgram(table, choice).seconds);
      } catch (const std::logic_error&) {  // a choice whose forms cannot be obtained
      }
      return;
    }
    for (size_t v = 0; v < table.theory().variants(static_cast<ir::NodeId>(k)).size(); ++v) {
      choice[k] = static_cast<int>(v);
      rec(k + 1);
    }
  };
  rec(0);
  return best;
}

std::vector<double> proportional(const cost::Cluster& c) {
  std::vector<double> s;
  double total = 0;
  for (int j = 0; j < c.size(); ++j) total += c.type(j).flops32;
  for (int j = 0; j < c.size(); ++j) s.push_back(c.type(j).flops32 / total);
  return s;
}

// A table at whole lengths (the integer balance, balance/share_milp.h): every dimension class of
// the theory cut into whole units by `shares` rounded (DimClasses::roundUnits), in its segment.
std::unique_ptr<synth::CostTable> wholeTable(const synth::Theory& t, const cost::Cluster& c,
                                             const std::vector<double>& shares) {
  std::vector<synth::ClassCut> cuts;
  std::set<int> seen;
  const ir::Graph& g = t.graph();
  for (const ir::Value& v : g.values)
    for (int d = 0; d < v.rank(); ++d) {
      const int cls = t.classes().classOf({v.id, d});
      const int64_t units = t.classes().units(cls);
      if (units > 0 && seen.insert(cls).second)
        cuts.push_back({t.valueSegment(v.id), cls, synth::DimClasses::roundUnits(units, shares)});
    }
  return std::make_unique<synth::CostTable>(t, c, synth::Shares(static_cast<size_t>(t.segmentCount()), shares),
                                            synth::CostOptions{}, std::move(cuts));
}

// A* finds the exhaustive optimum over more than `minCombinations` variant choices, and the
// program's cost is the replay of its choice.
void checkOptimal(const ir::Graph& g, int64_t minCombinations) {
  cost::Cluster c = smallCluster();
  synth::Theory t(g);
  synth::CostTable table(t, c, proportional(c));
  synth::Program p = synth::search(table);
  int64_t combinations = 0;
  const double optimum = exhaustiveOptimum(table, &combinations);
  QVERIFY(combinations > minCombinations);
  QVERIFY2(std::abs(p.seconds - optimum) <= 1e-12 * optimum,
           qPrintable(QString("A* %1 s, exhaustive %2 s").arg(p.seconds).arg(optimum)));
  QCOMPARE(synth::buildProgram(table, p.variantOf).seconds, p.seconds);
}

struct Recorder : synth::SearchListener {
  std::vector<synth::SearchProgress> events;
  int openWanted = 0;
  int started = 0, finished = 0;
  std::string error;
  std::vector<synth::BeamFallback> fallbacks;
  void onSearchStarted(const synth::Theory&) override { ++started; }
  void onProgress(const synth::SearchProgress& p) override { events.push_back(p); }
  int openStatesWanted() const override { return openWanted; }
  void onBeamFallback(const synth::BeamFallback& f) override { fallbacks.push_back(f); }
  void onSearchFinished(const synth::SearchStats&, const std::string& e) override {
    ++finished;
    error = e;
  }
};

}  // namespace

class TstSearch : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void optimalOnHandBuiltGraphs_data() {
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("hidden");
    QTest::newRow("small batch, wide layers") << 8 << 4096;  // model parallelism pays
    QTest::newRow("large batch, narrow layers") << 4096 << 64;  // data parallelism pays
    QTest::newRow("balanced") << 256 << 512;
  }
  void optimalOnHandBuiltGraphs() {
    QFETCH(int, batch);
    QFETCH(int, hidden);
    checkOptimal(mlpGraph(batch, 1024, hidden, 16), 100);
  }

  void optimalOnZooMlp() {
    checkOptimal(import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/mlp-tiny.pt"), 1000);
  }

  // A* equals exhaustive enumeration on random graphs of the zoo's op families (MoE joins
  // included), at proportional, even and uneven fractional shares, and at the whole lengths
  // those shares round to (the integer balance's tables).
  void optimalOnRandomGraphs() {
    cost::Cluster c = smallCluster();
    int checked = 0, moe = 0;
    for (uint32_t seed = 1; checked < 12 && seed < 200; ++seed) {
      int64_t combinations = 0;
      ir::Graph g = randomGraph(seed, &combinations);
      if (combinations > 60'000) continue;  // keep enumeration bounded
      ++checked;
      bool hasEinsum = false;
      for (const ir::Node& n : g.nodes) hasEinsum = hasEinsum || n.op == "aten::einsum";
      moe += hasEinsum;
      synth::Theory t(g);
      const std::vector<std::vector<double>> sharings{proportional(c), std::vector<double>(4, 0.25),
                                                      {0.4, 0.3, 0.2, 0.1}};
      for (const auto& [shares, whole] : std::vector<std::pair<std::vector<double>, bool>>{
               {sharings[0], false}, {sharings[1], false}, {sharings[2], false}, {sharings[0], true},
               {sharings[2], true}}) {
        std::unique_ptr<synth::CostTable> owned =
            whole ? wholeTable(t, c, shares) : std::make_unique<synth::CostTable>(t, c, shares);
        const synth::CostTable& table = *owned;
        if (whole) QVERIFY(!table.cuts().empty());
        synth::SearchStats stats;
        synth::Program p = synth::search(table, {}, &stats);
        int64_t enumerated = 0;
        const double optimum = exhaustiveOptimum(table, &enumerated);
        QCOMPARE(enumerated, combinations);
        QVERIFY(stats.provenOptimal);
        QVERIFY2(std::abs(p.seconds - optimum) <= 1e-12 * optimum,
                 qPrintable(QString("seed %1: A* %2 s, exhaustive %3 s").arg(seed).arg(p.seconds).arg(optimum)));
      }
    }
    QCOMPARE(checked, 12);
    QVERIFY(moe >= 3);
  }

  // The heuristic never overestimates: A* returns the cost uniform-cost search (h = 0) finds, on
  // every tiny zoo model (graphs far beyond exhaustive enumeration; uniform-cost search enumerates
  // every state, BERT-MoE's gating needs about a million of them).
  void heuristicAdmissibleOnZoo_data() {
    QTest::addColumn<QString>("model");
    for (const char* m : {"mlp", "bert", "vit", "vgg19", "bert_moe"}) QTest::newRow(m) << QString(m);
  }
  void heuristicAdmissibleOnZoo() {
    QFETCH(QString, model);
    ir::Graph g = import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + model.toStdString() +
                                  "-tiny.pt");
    cost::Cluster c = smallCluster();
    synth::Theory t(g);
    for (int kind = 0; kind < 3; ++kind) {  // even, proportional, proportional in whole lengths
      const std::vector<double> shares = kind == 0 ? std::vector<double>(4, 0.25) : proportional(c);
      std::unique_ptr<synth::CostTable> owned =
          kind == 2 ? wholeTable(t, c, shares) : std::make_unique<synth::CostTable>(t, c, shares);
      const synth::CostTable& table = *owned;
      synth::SearchOptions uniform;
      uniform.heuristic = false;
      uniform.beamWidth = 0;
      uniform.maxStates = 8'000'000;
      synth::SearchStats astar, dijkstra;
      synth::Program p = synth::search(table, {}, &astar);
      synth::Program q = synth::search(table, uniform, &dijkstra);
      QVERIFY(astar.provenOptimal);
      QVERIFY2(std::abs(p.seconds - q.seconds) <= 1e-12 * q.seconds,
               qPrintable(QString("A* %1 s, uniform-cost %2 s").arg(p.seconds).arg(q.seconds)));
      QVERIFY(astar.expanded <= dijkstra.expanded);
    }
  }

  // Attention's diamonds (q, k, v read x; q·kᵀ and scores·v join them again) on 8 heterogeneous
  // GPUs: the forests alone let two of the linears go column-parallel behind one all-gather, for
  // free at the joins, and A* stored ~4,800 states for the 67 nodes. The Lagrangian multipliers
  // on the dropped edges close the gap: proven within 10 states per node, at the cost
  // uniform-cost search (h = 0) finds, at even, proportional and whole-length shares.
  void provenOnAttentionDiamonds() {
    const ir::Graph g = attentionGraph(8, 16, 128, 8, 128);
    const cost::Cluster c = testbed8();
    synth::Theory t(g);
    for (int kind = 0; kind < 3; ++kind) {
      const std::vector<double> shares = kind == 0 ? std::vector<double>(8, 0.125) : proportional(c);
      std::unique_ptr<synth::CostTable> owned =
          kind == 2 ? wholeTable(t, c, shares) : std::make_unique<synth::CostTable>(t, c, shares);
      const synth::CostTable& table = *owned;
      synth::SearchOptions budget;
      budget.maxStates = 10 * static_cast<int64_t>(g.nodes.size());
      budget.beamWidth = 0;  // over the budget: a SearchError
      synth::SearchOptions uniform;
      uniform.heuristic = false;
      uniform.beamWidth = 0;
      synth::SearchStats astar;
      synth::Program p = synth::search(table, budget, &astar);
      synth::Program q = synth::search(table, uniform);
      QVERIFY(astar.provenOptimal);
      QVERIFY2(std::abs(p.seconds - q.seconds) <= 1e-12 * q.seconds,
               qPrintable(QString("kind %1: A* %2 s, uniform-cost %3 s").arg(kind).arg(p.seconds).arg(q.seconds)));
    }
  }

  // Megatron-style tensor parallelism, forced by pins, is a program: column-parallel q/k/v and
  // fc1, row-parallel out and fc2, and between each column layer and its row partner no
  // activation is communicated (head-parallel attention, sharded hidden layer).
  void pinsForceMegatron() {
    ir::Graph g = import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
    cost::Cluster c = smallCluster();
    synth::Theory t(g);
    synth::CostTable table(t, c, proportional(c));
    synth::SearchOptions o;
    for (const char* col : {"q", "k", "v"}) o.pins.push_back({fmt::format("layers.*.attn.{}", col), "column"});
    o.pins.push_back({"layers.*.attn.out", "row"});
    o.pins.push_back({"layers.*.ffn.fc1", "column"});
    o.pins.push_back({"layers.*.ffn.fc2", "row"});
    synth::SearchStats stats;
    synth::Program p = synth::search(table, o, &stats);
    QVERIFY(stats.provenOptimal);
    int pinned = 0;
    for (const ir::Node& n : g.nodes) {
      const std::string& chosen = t.variants(n.id)[static_cast<size_t>(p.variantOf[static_cast<size_t>(n.id)])].name;
      const bool column = n.scope.ends_with(".q") || n.scope.ends_with(".k") || n.scope.ends_with(".v") ||
                          n.scope.ends_with(".fc1");
      const bool row = n.scope.ends_with(".out") || n.scope.ends_with(".fc2");
      if (n.op != "aten::linear" || !n.scope.starts_with("layers.")) continue;
      QCOMPARE(chosen, std::string(column ? "column" : row ? "row" : "?"));
      ++pinned;
    }
    QCOMPARE(pinned, 12);
    int gathersForColumns = 0;
    for (const synth::Step& s : p.steps) {
      if (s.kind != synth::Step::Kind::Convert || !s.conversion.communicates()) continue;
      if (g.value(s.value).kind != ir::ValueKind::Activation) continue;
      const ir::Node& consumer = g.node(s.node);
      const bool inBlock = consumer.scope.find(".attn") != std::string::npos ||
                           consumer.scope.find(".ffn") != std::string::npos;
      if (!inBlock) continue;
      // Only the column layers' input may be gathered (once per block: q's conversion serves k, v).
      QVERIFY2(consumer.op == "aten::linear" &&
                   (consumer.scope.ends_with(".q") || consumer.scope.ends_with(".fc1")),
               qPrintable(QString::fromStdString(g.describe(consumer.id))));
      ++gathersForColumns;
    }
    QVERIFY(gathersForColumns <= 4);
  }

  // Expected failures are errors that name what to change.
  void pinErrors() {
    ir::Graph g = mlpGraph(64, 128, 64, 16);
    cost::Cluster c = smallCluster();
    synth::Theory t(g);
    synth::CostTable table(t, c, proportional(c));
    QVERIFY_THROWS_EXCEPTION(Error, synth::parsePin("fc1"));
    QVERIFY_THROWS_EXCEPTION(Error, synth::parsePin("=column"));
    QCOMPARE(synth::parsePin("layers.*.fc1=column").pattern, std::string("layers.*.fc1"));

    synth::SearchOptions o;
    o.pins = {{"fc*", "diagonal"}};
    QString message;
    try {
      synth::search(table, o);
    } catch (const synth::SearchError& e) {
      message = e.what();
    }
    QVERIFY2(message.contains("pin 'fc*=diagonal' selects no node"), qPrintable(message));

    // No program: the linears are pinned to their SFB variant, which reads the weight as I*,
    // and the search may not use SFB. The error names the node, the variant, the tensor and form.
    table.restrict({.parameterShards = true, .sfb = false, .inputShardsOnBatchOnly = false});
    o.pins = {{"aten::linear", "batch+sfb"}};
    message.clear();
    try {
      synth::search(table, o);
    } catch (const synth::SearchError& e) {
      message = e.what();
    }
    QVERIFY2(message.contains("no distributed program exists") && message.contains("aten::linear") &&
                 message.contains("'batch+sfb'") && message.contains("fc1.weight") && message.contains("form I*"),
             qPrintable(message));
  }

  void deterministic() {
    ir::Graph g = import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
    cost::Cluster c = smallCluster();
    synth::Theory t(g);
    synth::CostTable table(t, c, proportional(c));
    synth::SearchStats a, b;
    synth::Program p1 = synth::search(table, {}, &a);
    synth::Program p2 = synth::search(table, {}, &b);
    QCOMPARE(p1.variantOf, p2.variantOf);
    QCOMPARE(p1.seconds, p2.seconds);
    QCOMPARE(a.expanded, b.expanded);
  }

  void cancellable() {
    ir::Graph g = import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
    cost::Cluster c = smallCluster();
    synth::Theory t(g);
    synth::CostTable table(t, c, proportional(c));
    std::atomic<bool> cancel{true};
    synth::SearchOptions o;
    o.cancel = &cancel;
    bool threw = false;
    try {
      synth::search(table, o);
    } catch (const synth::SearchError& e) {
      threw = QString(e.what()).contains("cancelled");
    }
    QVERIFY(threw);  // the flag is read before the first expansion and every 128 after
  }

  void memoryBounded() {
    ir::Graph g = mlpGraph(256, 1024, 512, 16);
    cost::Cluster c = smallCluster();
    synth::Theory t(g);
    synth::CostTable table(t, c, proportional(c));
    synth::SearchOptions o;
    o.maxStates = 5;
    o.beamWidth = 0;  // no fallback: a clear error
    QString message;
    try {
      synth::search(table, o);
    } catch (const synth::SearchError& e) {
      message = e.what();
    }
    QVERIFY2(message.contains("memory bound of 5 states"), qPrintable(message));

    // With the fallback, a beam search returns a program, flagged as not proven optimal, never
    // cheaper than the optimum.
    o.beamWidth = 3;
    synth::SearchStats beam, exact;
    synth::Program p = synth::search(table, o, &beam);
    synth::Program best = synth::search(table, {}, &exact);
    QVERIFY(!beam.provenOptimal);
    QVERIFY(exact.provenOptimal);
    QVERIFY(p.seconds >= best.seconds * (1 - 1e-12));
    QCOMPARE(synth::buildProgram(table, p.variantOf).seconds, p.seconds);
  }

  void reportsProgress() {
    ir::Graph g = import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
    cost::Cluster c = smallCluster();
    synth::Theory t(g);
    synth::CostTable table(t, c, proportional(c));
    Recorder r;
    synth::SearchOptions o;
    o.listener = &r;
    o.progressIntervalSeconds = 0;
    synth::Program p = synth::search(table, o);
    QVERIFY(!r.events.empty());
    const synth::SearchProgress& last = r.events.back();
    QCOMPARE(last.bestSeconds, p.seconds);  // the final event carries the complete program
    QCOMPARE(last.partial, p.variantOf);
    for (const synth::SearchProgress& e : r.events) QVERIFY(e.boundSeconds <= p.seconds * (1 + 1e-12));
  }

  // The listener's other events: search start and end in pairs, the best open states sampled from
  // the open set (lowest f first, each a real partial program), the beam fallback announced.
  void reportsOpenStatesAndFallback() {
    ir::Graph g = import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
    cost::Cluster c = smallCluster();
    synth::Theory t(g);
    synth::CostTable table(t, c, proportional(c));
    Recorder r;
    r.openWanted = 5;
    synth::SearchOptions o;
    o.listener = &r;
    o.progressIntervalSeconds = 0;
    o.heuristic = false;  // uniform cost: a wide open set to sample from
    synth::SearchStats stats;
    synth::Program p = synth::search(table, o, &stats);
    QCOMPARE(r.started, 1);
    QCOMPARE(r.finished, 1);
    QVERIFY(r.error.empty());
    QVERIFY(stats.notOptimal.empty());
    bool sampled = false;
    double lastBest = -1;
    for (const synth::SearchProgress& e : r.events) {
      QVERIFY(e.open.size() <= 5);
      for (size_t i = 0; i < e.open.size(); ++i) {
        const synth::OpenState& s = e.open[i];
        QCOMPARE(static_cast<int>(s.partial.size()), s.depth);
        if (i > 0) QVERIFY(s.f() >= e.open[i - 1].f() - 1e-15);  // best first
        QVERIFY(s.f() >= e.boundSeconds - 1e-12);  // nothing open below the bound just expanded
        for (int n = 0; n < s.depth; ++n)
          QVERIFY(s.partial[static_cast<size_t>(n)] >= 0 &&
                  s.partial[static_cast<size_t>(n)] < static_cast<int>(t.variants(n).size()));
      }
      sampled = sampled || e.open.size() == 5;
      if (lastBest >= 0) QVERIFY(e.bestSeconds >= 0 && e.bestSeconds <= lastBest);  // never worse
      if (e.bestSeconds >= 0) lastBest = e.bestSeconds;
    }
    QVERIFY(sampled);
    QCOMPARE(lastBest, p.seconds);

    // A budget too small for A*: the fallback is announced, and the stats say why not optimal.
    Recorder beam;
    synth::SearchOptions small;
    small.listener = &beam;
    small.maxStates = 5;
    small.beamWidth = 4;
    synth::SearchStats beamStats;
    synth::search(table, small, &beamStats);
    QCOMPARE(beam.fallbacks.size(), size_t{1});
    QCOMPARE(beam.fallbacks[0].maxStates, int64_t{5});
    QCOMPARE(beam.fallbacks[0].beamWidth, 4);
    QVERIFY(!beamStats.provenOptimal);
    QVERIFY2(beamStats.notOptimal.find("budget of 5 states") != std::string::npos, beamStats.notOptimal.c_str());
    QVERIFY(!beam.events.empty() && beam.events.back().beam);

    // A cancelled search ends with its error.
    Recorder cancelled;
    std::atomic<bool> flag{true};
    synth::SearchOptions stop;
    stop.listener = &cancelled;
    stop.cancel = &flag;
    QVERIFY_THROWS_EXCEPTION(synth::SearchError, synth::search(table, stop));
    QCOMPARE(cancelled.finished, 1);
    QVERIFY(cancelled.error.find("cancelled") != std::string::npos);
  }
};

QTEST_GUILESS_MAIN(TstSearch)
#include "tst_search.moc"
