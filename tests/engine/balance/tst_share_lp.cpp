// The LP over sharding ratios and the Q/B alternation: hand-solvable optima, a binding memory
// constraint, the infeasibility explanation, and alternation that never returns a worse plan.
#include <QtTest>

#include <fmt/format.h>

#include "engine/balance/alternation.h"
#include "engine/balance/share_lp.h"
#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/ir/op_cost.h"
#include "engine/synth/memory.h"
#include "engine/synth/stages.h"
#include "engine/synth/search.h"
#include "../rules/rule_test_util.h"

using namespace hap;

namespace {

// One machine, a fast and a slow device (fast = 2x the FLOP/s), no per-op overhead and a memory
// bandwidth high enough that every op is compute-bound: the balanced shares are 2/3 and 1/3.
cost::Cluster twoDevices(const std::string& fastMemory = "80GiB") {
  return cost::parseCluster(fmt::format(R"(
name: two
device_types:
  fast: {{flops: {{float32: 20T}}, memory: {}, memory_bandwidth: 1000TB/s, op_overhead: 0us}}
  slow: {{flops: {{float32: 10T}}, memory: 80GiB, memory_bandwidth: 1000TB/s, op_overhead: 0us}}
machines:
  - {{name: a, host: 10.0.0.1, device_type: fast, count: 1, link: {{bandwidth: 100GB/s, latency: 1us}}}}
  - {{name: b, host: 10.0.0.1, device_type: slow, count: 1, link: {{bandwidth: 100GB/s, latency: 1us}}}}
network: {{bandwidth: 100GB/s, latency: 1us}}
)",
                                        fastMemory),
                            "two");
}

// x[B,I] -> linear -> sum -> loss, with a large batch (compute dominates).
ir::Graph linearGraph() {
  test::GraphBuilder b;
  using GB = test::GraphBuilder;
  ir::ValueId x = b.input("x", {8192, 1024});
  ir::ValueId w = b.param("fc.weight", {1024, 1024});
  auto l = b.op("aten::linear", {GB::tensor("input", x), GB::tensor("weight", w), GB::constant("bias", std::monostate{})},
                {{8192, 1024}});
  auto s = b.op("aten::sum", {GB::tensor("self", b.out(l)), GB::constant("dtype", std::monostate{})}, {{}});
  b.g.loss = b.out(s);
  ir::annotateCosts(b.g);
  b.g.check();
  return std::move(b.g);
}

// lin_a = linear(x[8192,1024], W) and lin_b = linear(z[2048,1024], W) read one parameter, so
// W's gradient all-reduce follows both in backward: each pass has them in one stage.
ir::Graph sharedStageGraph() {
  test::GraphBuilder b;
  using GB = test::GraphBuilder;
  ir::ValueId x = b.input("x", {8192, 1024});
  ir::ValueId z = b.input("z", {2048, 1024});
  ir::ValueId w = b.param("w", {1024, 1024});
  auto linear = [&](ir::ValueId in, int64_t rows, const char* scope) {
    auto l = b.op("aten::linear", {GB::tensor("input", in), GB::tensor("weight", w), GB::constant("bias", std::monostate{})},
                  {{rows, 1024}});
    b.g.node(l).scope = scope;
    return b.op("aten::sum", {GB::tensor("self", b.out(l)), GB::constant("dtype", std::monostate{})}, {{}});
  };
  auto a = linear(x, 8192, "a");
  auto c = linear(z, 2048, "b");
  auto add = b.op("aten::add", {GB::tensor("self", b.out(a)), GB::tensor("other", b.out(c)), GB::constant("alpha", int64_t{1})}, {{}});
  b.g.loss = b.out(add);
  ir::annotateCosts(b.g);
  b.g.check();
  return std::move(b.g);
}

synth::Program batchParallel(const synth::CostTable& table) {
  synth::SearchOptions o;
  o.pins = {{"aten::linear", "batch"}};
  return synth::search(table, o);
}

}  // namespace

class TstShareLp : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // A solver that stops without a solution is an input problem named by the cluster's extreme
  // values, never "a bug" (issue 32).
  void solverFailureNamesExtremes() {
    const QString m = QString::fromStdString(
        balance::solverFailure("the LP over sharding ratios", "CLP status 4, 10 rows, 5 columns", twoDevices()));
    QVERIFY2(m.startsWith("the LP over sharding ratios did not solve (CLP status 4, 10 rows, 5 columns): "), qPrintable(m));
    QVERIFY2(m.contains("Check the extreme values of two: FLOP/s 10 TFLOP/s (device_types.slow.flops.float32) to "
                        "20 TFLOP/s (device_types.fast.flops.float32)"),
             qPrintable(m));
    QVERIFY2(m.contains("docs/cost-model.md, \"Ranges\""), qPrintable(m));
    QVERIFY2(!m.contains("bug"), qPrintable(m));
  }

  void balancesComputeBoundOps() {
    ir::Graph g = linearGraph();
    cost::Cluster c = twoDevices();
    synth::Theory t(g);
    synth::CostTable even(t, c, {0.5, 0.5});
    synth::Program p = batchParallel(even);
    balance::ShareLpResult r = balance::optimiseShares(even, p);
    QVERIFY2(std::abs(r.shares[0][0] - 2.0 / 3) < 1e-9, qPrintable(QString::number(r.shares[0][0])));
    QVERIFY(std::abs(r.shares[0][1] - 1.0 / 3) < 1e-9);
    // The LP's optimum is the program's cost at its shares, as the stage model prices it.
    synth::CostTable at(t, c, r.shares);
    const double priced = synth::iterationSeconds(at, synth::buildProgram(at, p.variantOf));
    QVERIFY2(std::abs(r.seconds - priced) <= 1e-9 * priced, qPrintable(QString("%1 vs %2").arg(r.seconds).arg(priced)));
    QVERIFY(r.seconds < p.seconds);
    // By hand: 3 x (forward matmul FLOPs x 2/3 / 20 TFLOP/s) for the linear, plus the rest.
    const double linear = 3 * 2.0 * 8192 * 1024 * 1024 * (2.0 / 3) / 20e12;
    QVERIFY(at.deviceSeconds(0, p.variantOf[0], 0) > 0);
    QVERIFY2(std::abs(at.seconds(0, p.variantOf[0]) - linear) <= 1e-9 * linear,
             qPrintable(QString("%1 vs %2").arg(at.seconds(0, p.variantOf[0])).arg(linear)));
  }

  // The exact stage model lets the fast device take more of the batch-parallel linear while both
  // devices run the replicated one in the same stage: balance s·A/20 + B/20 = (1−s)·A/10 + B/10
  // with B = A/4 gives s = 2/3 + B/(3A) = 3/4. The per-op model would stop at 2/3.
  void stageModelShiftsWorkToTheFastDevice() {
    ir::Graph g = sharedStageGraph();
    cost::Cluster c = twoDevices();
    synth::Theory t(g);
    synth::CostTable even(t, c, {0.5, 0.5});
    synth::SearchOptions o;
    o.pins = {{"a", "batch"}, {"b", "replicate"}};
    synth::Program p = synth::search(even, o);
    balance::ShareLpResult r = balance::optimiseShares(even, p);
    QVERIFY2(std::abs(r.shares[0][0] - 0.75) < 1e-3, qPrintable(QString::number(r.shares[0][0])));
    synth::CostTable at(t, c, r.shares);
    const synth::Program same = synth::buildProgram(at, p.variantOf);
    const double exact = synth::iterationSeconds(at, same);
    QVERIFY2(std::abs(r.seconds - exact) <= 1e-9 * exact, qPrintable(QString("%1 vs %2").arg(r.seconds).arg(exact)));
    QVERIFY(exact < same.seconds);  // below the per-op sum the search adds up
    // Forward and backward each hold both linears in one stage.
    const synth::StageModel m = synth::stageModel(at, same);
    int together = 0;
    for (const synth::StageCost& st : m.stages) {
      int linears = 0;
      for (int i : st.steps)
        linears += same.steps[static_cast<size_t>(i)].kind == synth::Step::Kind::Compute &&
                   g.node(same.steps[static_cast<size_t>(i)].node).op == "aten::linear";
      together += linears == 2;
    }
    QCOMPARE(together, 2);
  }

  void memoryConstraintBinds() {
    ir::Graph g = linearGraph();
    synth::Theory t(g);
    cost::Cluster roomy = twoDevices();
    synth::CostTable even(t, roomy, {0.5, 0.5});
    synth::Program p = batchParallel(even);
    const synth::Affine memory = synth::total(synth::memoryTerms(even, p, {}));
    QVERIFY(memory.perShare > 0);
    // Give the fast device exactly the memory of a 0.55 share: the LP stops there.
    const double capacity = memory.at(0.55);
    cost::Cluster tight = twoDevices(fmt::format("{:.0f}", capacity));
    synth::CostTable table(t, tight, {0.5, 0.5});
    balance::ShareLpResult r = balance::optimiseShares(table, p);
    QVERIFY2(std::abs(r.shares[0][0] - 0.55) < 1e-6, qPrintable(QString::number(r.shares[0][0])));

    // Less than the replicated tensors alone: no ratios fit, and the message says why.
    cost::Cluster tiny = twoDevices(fmt::format("{:.0f}", memory.constant / 2));
    synth::CostTable none(t, tiny, {0.5, 0.5});
    QString message;
    try {
      balance::optimiseShares(none, p);
    } catch (const balance::InfeasibleError& e) {
      message = e.what();
    }
    QVERIFY2(message.contains("no sharding ratios fit this program in memory") && message.contains("fast needs") &&
                 message.contains("replicated tensors alone") && message.contains("fc.weight"),
             qPrintable(message));
  }

  void alternationNeverWorse_data() {
    QTest::addColumn<QString>("model");
    for (const char* m : {"mlp", "bert", "vgg19"}) QTest::newRow(m) << QString(m);
  }
  void alternationNeverWorse() {
    QFETCH(QString, model);
    ir::Graph g = import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + model.toStdString() +
                                  "-tiny.pt");
    cost::Cluster c = cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                                        "/resources/clusters/a100-p100-4.yaml");
    synth::Theory t(g);
    const std::vector<double> start{0.4, 0.4, 0.1, 0.1};
    balance::AlternationResult r = balance::alternate(t, c, start, {});
    QVERIFY(!r.history.empty());
    QCOMPARE(r.history.front().step, std::string("search"));
    QVERIFY(r.seconds <= r.history.front().seconds * (1 + 1e-12));
    QVERIFY(r.history.size() <= 1 + 2 * 10);
    // The emitted shares, rounded to the lengths the ranks execute, price the emitted program at
    // its predicted cost.
    synth::CostTable at(t, c, r.shares());
    const balance::Executed e = balance::executed(at, synth::buildProgram(at, r.program.variantOf));
    QVERIFY(e.table);
    QVERIFY(std::abs(synth::iterationSeconds(*e.table, e.program) - r.seconds) <= 1e-12 * r.seconds);
    double sum = 0;
    for (double s : r.shares()[0]) sum += s;
    QVERIFY(std::abs(sum - 1) < 1e-9);
    // Every step but the last strictly improved on the best before it.
    for (size_t i = 1; i + 1 < r.history.size(); ++i)
      QVERIFY(r.history[i].seconds <= r.history[i - 1].seconds * (1 + 1e-12) || !r.history[i - 1].fits);
  }

  // A further start that searches better is where the alternation goes on from: with no LP
  // rounds, a skewed start against even shares on equal machines returns the even search.
  void betterFurtherStartWins() {
    ir::Graph g = import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt");
    cost::Cluster c = cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                                        "/resources/clusters/local-cpu-4.yaml");
    synth::Theory t(g);
    balance::AlternationOptions o;
    o.maxRounds = 0;
    o.moreStarts = {{"even", {0.25, 0.25, 0.25, 0.25}}};
    balance::AlternationResult r = balance::alternate(t, c, {0.97, 0.01, 0.01, 0.01}, o);
    QCOMPARE(r.history.size(), size_t{2});
    QCOMPARE(r.history[1].step, std::string("search from even"));
    QVERIFY2(r.history[1].seconds < r.history[0].seconds,
             qPrintable(QString("even %1 s, skewed %2 s").arg(r.history[1].seconds).arg(r.history[0].seconds)));
    QCOMPARE(r.seconds, r.history[1].seconds);
    for (double share : r.shares()[0]) QCOMPARE(share, 0.25);
    // With the LP rounds, the result is never worse than any start.
    o.maxRounds = 10;
    balance::AlternationResult full = balance::alternate(t, c, {0.97, 0.01, 0.01, 0.01}, o);
    QVERIFY(full.seconds <= r.seconds * (1 + 1e-12));
  }
};

QTEST_GUILESS_MAIN(TstShareLp)
#include "tst_share_lp.moc"
