// A* search: optimal against exhaustive enumeration, deterministic, cancellable, bounded.
#include <QtTest>

#include <fmt/format.h>

#include <functional>

#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/ir/op_cost.h"
#include "engine/synth/search.h"
#include "../rules/rule_test_util.h"

using namespace hap;

namespace {

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
  auto ce = b.op("aten::cross_entropy_loss",
                 {GB::tensor("self", b.out(l2)), GB::tensor("target", y), GB::constant("weight", std::monostate{}),
                  GB::constant("reduction", int64_t{1}), GB::constant("ignore_index", int64_t{-100}),
                  GB::constant("label_smoothing", 0.0)},
                 {{}});
  b.g.loss = b.out(ce);
  ir::annotateCosts(b.g);
  b.g.check();
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
    checkOptimal(ts::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/mlp-tiny.pt"), 1000);
  }

  // The heuristic never overestimates: A* returns the cost uniform-cost search (h = 0) finds, on
  // the tiny zoo models (graphs far beyond exhaustive enumeration; BERT-MoE's gating is beyond
  // uniform-cost search's 2M states too).
  void heuristicAdmissibleOnZoo_data() {
    QTest::addColumn<QString>("model");
    for (const char* m : {"mlp", "bert", "vit", "vgg19"}) QTest::newRow(m) << QString(m);
  }
  void heuristicAdmissibleOnZoo() {
    QFETCH(QString, model);
    ir::Graph g = ts::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + model.toStdString() +
                                  "-tiny.pt");
    cost::Cluster c = smallCluster();
    synth::Theory t(g);
    for (bool even : {false, true}) {
      synth::CostTable table(t, c, even ? std::vector<double>(4, 0.25) : proportional(c));
      synth::SearchOptions uniform;
      uniform.heuristic = false;
      uniform.beamWidth = 0;
      synth::SearchStats astar, dijkstra;
      synth::Program p = synth::search(table, {}, &astar);
      synth::Program q = synth::search(table, uniform, &dijkstra);
      QVERIFY(astar.provenOptimal);
      QVERIFY2(std::abs(p.seconds - q.seconds) <= 1e-12 * q.seconds,
               qPrintable(QString("A* %1 s, uniform-cost %2 s").arg(p.seconds).arg(q.seconds)));
      QVERIFY(astar.expanded <= dijkstra.expanded);
    }
  }

  // Megatron-style tensor parallelism, forced by pins, is a program: column-parallel q/k/v and
  // fc1, row-parallel out and fc2, and between each column layer and its row partner no
  // activation is communicated (head-parallel attention, sharded hidden layer).
  void pinsForceMegatron() {
    ir::Graph g = ts::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
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
    ir::Graph g = ts::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
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
    ir::Graph g = ts::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
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
    ir::Graph g = ts::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
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
    ir::Graph g = ts::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
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
