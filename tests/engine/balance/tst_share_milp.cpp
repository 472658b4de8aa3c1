// Whole shard lengths by MILP (balance/share_milp.h): the optimum equals brute force over every
// integer length vector, it is never worse than the LP's shares after the plan's rounding, it
// respects memory, and no-fit is the LP's InfeasibleError.
#include <QtTest>

#include <fmt/format.h>

#include "engine/balance/alternation.h"
#include "engine/balance/share_lp.h"
#include "engine/balance/share_milp.h"
#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/ir/op_cost.h"
#include "engine/synth/memory.h"
#include "engine/synth/search.h"
#include "engine/synth/stages.h"
#include "../rules/rule_test_util.h"

using namespace hap;

namespace {

// One fast device (20 TFLOP/s) and `slow` slow ones (10 TFLOP/s), compute-bound, no overhead.
cost::Cluster fastAndSlow(int slow, const std::string& fastMemory = "80GiB") {
  return cost::parseCluster(fmt::format(R"(
name: mixed
device_types:
  fast: {{flops: {{float32: 20T}}, memory: {}, memory_bandwidth: 1000TB/s, op_overhead: 0us}}
  slow: {{flops: {{float32: 10T}}, memory: 80GiB, memory_bandwidth: 1000TB/s, op_overhead: 0us}}
machines:
  - {{name: a, host: 10.0.0.1, device_type: fast, count: 1, link: {{bandwidth: 100GB/s, latency: 1us}}}}
  - {{name: b, host: 10.0.0.1, device_type: slow, count: {}, link: {{bandwidth: 100GB/s, latency: 1us}}}}
network: {{bandwidth: 100GB/s, latency: 1us}}
)",
                                        fastMemory, slow),
                            "mixed");
}

// x[rows,2048] -> linear -> sum -> loss: the batch class has `rows` units.
ir::Graph linearGraph(int64_t rows) {
  test::GraphBuilder b;
  using GB = test::GraphBuilder;
  ir::ValueId x = b.input("x", {rows, 2048});
  ir::ValueId w = b.param("fc.weight", {2048, 2048});
  auto l = b.op("aten::linear", {GB::tensor("input", x), GB::tensor("weight", w), GB::constant("bias", std::monostate{})},
                {{rows, 2048}});
  auto s = b.op("aten::sum", {GB::tensor("self", b.out(l)), GB::constant("dtype", std::monostate{})}, {{}});
  b.g.loss = b.out(s);
  ir::annotateCosts(b.g);
  b.g.check();
  return std::move(b.g);
}

synth::Program batchParallel(const synth::CostTable& table) {
  synth::SearchOptions o;
  o.pins = {{"aten::linear", "batch"}};
  return synth::search(table, o);
}

// Calls f on every vector of n non-negative integers summing to total.
template <class F>
void compositions(int64_t total, int n, std::vector<int64_t>& v, F&& f) {
  if (static_cast<int>(v.size()) == n - 1) {
    v.push_back(total);
    f(v);
    v.pop_back();
    return;
  }
  for (int64_t k = 0; k <= total; ++k) {
    v.push_back(k);
    compositions(total - k, n, v, f);
    v.pop_back();
  }
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-15; }

}  // namespace

class TstShareMilp : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void equalsBruteForce_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("slow");
    for (auto [rows, slow] : {std::pair{5, 2}, {7, 2}, {9, 2}, {6, 3}, {11, 3}})
      QTest::newRow(qPrintable(QString("%1 rows, 1+%2 devices").arg(rows).arg(slow))) << rows << slow;
  }
  // Brute force prices every integer length vector with the stage model itself
  // (synth::iterationSeconds at shares lengths/U); the MILP's optimum equals the best of them,
  // with and without the symmetry-breaking order.
  void equalsBruteForce() {
    QFETCH(int, rows);
    QFETCH(int, slow);
    ir::Graph g = linearGraph(rows);
    synth::Theory t(g);
    cost::Cluster c = fastAndSlow(slow);
    const int n = c.size();
    synth::CostTable start(t, c, std::vector<double>(static_cast<size_t>(n), 1.0 / n));
    const synth::Program p = batchParallel(start);
    const std::vector<balance::DimCut> shape = balance::roundedCuts(start, p, start.shares());
    QCOMPARE(shape.size(), size_t{1});  // one class: the batch
    QCOMPARE(shape[0].units, int64_t{rows});
    double best = std::numeric_limits<double>::infinity();
    int vectors = 0;
    std::vector<int64_t> v;
    compositions(rows, n, v, [&](const std::vector<int64_t>& lengths) {
      std::vector<double> shares;
      for (int64_t l : lengths) shares.push_back(static_cast<double>(l) / rows);
      synth::CostTable at(t, c, shares);
      const double s = synth::iterationSeconds(at, synth::buildProgram(at, p.variantOf));
      // The MILP's model at these lengths is the stage model.
      std::vector<balance::DimCut> cuts = shape;
      cuts[0].lengths = lengths;
      const double priced = balance::priceCuts(start, p, cuts).seconds;
      QVERIFY2(near(priced, s), qPrintable(QString("model %1 s, stage model %2 s").arg(priced).arg(s)));
      best = std::min(best, s);
      ++vectors;
    });
    QVERIFY(vectors > 10);
    for (bool symmetry : {true, false}) {
      balance::ShareMilpOptions o;
      o.breakSymmetry = symmetry;
      o.warmStart = symmetry;
      const balance::ShareMilpResult r = balance::optimiseLengths(start, p, {}, o);
      QVERIFY(r.status == balance::ShareMilpResult::Status::Optimal);
      QVERIFY2(near(r.seconds, best), qPrintable(QString("MILP %1 s, brute force %2 s").arg(r.seconds).arg(best)));
      int64_t sum = 0;
      for (int64_t l : r.cuts.at(0).lengths) sum += l;
      QCOMPARE(sum, int64_t{rows});
      QVERIFY(near(balance::priceCuts(start, p, r.cuts).seconds, r.seconds));
    }
  }

  void neverWorseThanRoundedLp_data() {
    QTest::addColumn<QString>("model");
    for (const char* m : {"mlp", "bert", "vgg19", "vit", "bert_moe"}) QTest::newRow(m) << QString(m);
  }
  // On the alternation's final program for each tiny zoo model: the MILP (which starts from the
  // rounded LP) is at most the rounded LP's price, fits, and its cuts price at its objective.
  void neverWorseThanRoundedLp() {
    QFETCH(QString, model);
    ir::Graph g = import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + model.toStdString() +
                                  "-tiny.pt");
    cost::Cluster c = cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                                        "/resources/clusters/a100-p100-4.yaml");
    synth::Theory t(g);
    balance::AlternationResult a = balance::alternate(t, c, {0.4, 0.4, 0.1, 0.1}, {});
    const balance::ShareLpResult lp = balance::optimiseShares(*a.table, a.program);
    const balance::CutPrice rounded = balance::priceCuts(*a.table, a.program, balance::roundedCuts(*a.table, a.program, lp.shares));
    balance::ShareMilpOptions o;
    o.timeLimitSeconds = 10;
    const balance::ShareMilpResult r = balance::optimiseLengths(*a.table, a.program, {}, o);
    const balance::CutPrice own = balance::priceCuts(*a.table, a.program, r.cuts);
    QVERIFY(own.fits);
    QVERIFY2(near(own.seconds, r.seconds), qPrintable(QString("%1 vs %2").arg(own.seconds).arg(r.seconds)));
    if (rounded.fits)
      QVERIFY2(r.seconds <= rounded.seconds * (1 + 1e-9),
               qPrintable(QString("MILP %1 s, rounded LP %2 s").arg(r.seconds).arg(rounded.seconds)));
    // Never below the relaxation (the LP optimises over a superset when all cuts share a class).
    QVERIFY(r.bound <= r.seconds * (1 + 1e-9));
    for (const balance::DimCut& cut : r.cuts) {
      int64_t sum = 0;
      for (int64_t l : cut.lengths) sum += l;
      QCOMPARE(sum, cut.units);
    }
    qInfo("%s: rounded LP %.4f ms, MILP %.4f ms (%s, %.3f s, %d cuts)", qPrintable(model), rounded.seconds * 1e3,
          r.seconds * 1e3, r.status == balance::ShareMilpResult::Status::Optimal ? "optimal" : "time limit",
          r.solveSeconds, static_cast<int>(r.cuts.size()));
  }

  // The fast device can hold 11 of 20 rows; compute alone would give it 13 or 14.
  void respectsMemory() {
    ir::Graph g = linearGraph(20);
    synth::Theory t(g);
    cost::Cluster roomy = fastAndSlow(1);
    synth::CostTable even(t, roomy, {0.5, 0.5});
    const synth::Program p = batchParallel(even);
    const synth::Affine memory = synth::total(synth::memoryTerms(even, p, {}));
    QVERIFY(memory.perShare > 0);
    const balance::ShareMilpResult free = balance::optimiseLengths(even, p);
    QVERIFY2(free.cuts.at(0).lengths[0] >= 13, qPrintable(QString::number(free.cuts.at(0).lengths[0])));
    cost::Cluster tight = fastAndSlow(1, fmt::format("{:.0f}", memory.at(11.5 / 20)));
    synth::CostTable table(t, tight, {0.5, 0.5});
    const balance::ShareMilpResult r = balance::optimiseLengths(table, p);
    QCOMPARE(r.cuts.at(0).lengths, (std::vector<int64_t>{11, 9}));
    QVERIFY(balance::priceCuts(table, p, r.cuts).fits);
    std::vector<balance::DimCut> over = r.cuts;
    over[0].lengths = {12, 8};
    QVERIFY(!balance::priceCuts(table, p, over).fits);
  }

  void infeasibleNamesTheType() {
    ir::Graph g = linearGraph(20);
    synth::Theory t(g);
    const cost::Cluster roomy = fastAndSlow(1);
    synth::CostTable even(t, roomy, {0.5, 0.5});
    const synth::Program p = batchParallel(even);
    const synth::Affine memory = synth::total(synth::memoryTerms(even, p, {}));
    cost::Cluster tiny = fastAndSlow(1, fmt::format("{:.0f}", memory.constant / 2));
    synth::CostTable none(t, tiny, {0.5, 0.5});
    QString message;
    try {
      balance::optimiseLengths(none, p);
    } catch (const balance::InfeasibleError& e) {
      message = e.what();
    }
    QVERIFY2(message.contains("fast needs") && message.contains("fc.weight"), qPrintable(message));
  }
};

QTEST_GUILESS_MAIN(TstShareMilp)
#include "tst_share_milp.moc"
