// A measured profile in the cost model (engine/cost/profile.h): interpolation of measured op times,
// the op families, validation, collectives priced by fitted links, the cost table pricing a node by
// its family's measured time at the size of each device's piece, and --explain's pricing sources.
#include <QtTest>

#include <fmt/format.h>

#include <cmath>

#include "engine/cost/collective_cost.h"
#include "engine/cost/pricing.h"
#include "engine/cost/profile.h"
#include "engine/ir/op_cost.h"
#include "engine/synth/cost_table.h"
#include "../rules/rule_test_util.h"

using namespace hap;

namespace {

cost::Cluster twoTypes() {
  return cost::parseCluster(R"(
name: two-types
device_types:
  fast: {flops: {float32: 100G}, memory: 16GiB, memory_bandwidth: 20GB/s, op_overhead: 5us}
  slow: {flops: {float32: 50G}, memory: 16GiB, memory_bandwidth: 10GB/s, op_overhead: 5us}
machines:
  - {name: a, device_type: fast, count: 1}
  - {name: b, device_type: slow, count: 1}
network: {bandwidth: 1GB/s, latency: 100us}
)",
                            "two-types.yaml");
}

cost::Cluster oneMachine(int n) {
  return cost::parseCluster(fmt::format(R"(
name: one
device_types:
  cpu: {{flops: {{float32: 50G}}, memory: 16GiB, memory_bandwidth: 10GB/s}}
machines:
  - {{name: m, device_type: cpu, count: {}, link: {{bandwidth: 1GB/s, latency: 100us}}}}
)",
                                        n),
                            "one.yaml");
}

// Matmul: 2 ms launch floor up to 1 MFLOP, then 1 GFLOP/s at 1..10 MFLOP and 2 GFLOP/s beyond:
// small pieces are less efficient per FLOP.
cost::OpThroughput matmulSamples() {
  return {cost::OpFamily::MatMul, ir::DType::Float32, {{1e6, 2e-3}, {1e7, 11e-3}, {1e9, 506e-3}}};
}

// x[B,I] -> linear -> relu -> sum -> loss
ir::Graph linearGraph(int64_t batch, int64_t in, int64_t out) {
  test::GraphBuilder b;
  using GB = test::GraphBuilder;
  ir::ValueId x = b.input("x", {batch, in});
  ir::ValueId w = b.param("fc.weight", {out, in});
  auto l = b.op("aten::linear", {GB::tensor("input", x), GB::tensor("weight", w), GB::constant("bias", std::monostate{})},
                {{batch, out}});
  auto r = b.op("aten::relu", {GB::tensor("self", b.out(l))}, {{batch, out}});
  auto s = b.op("aten::sum", {GB::tensor("self", b.out(r)), GB::constant("dtype", std::monostate{})}, {{}});
  b.g.loss = b.out(s);
  ir::annotateCosts(b.g);
  b.g.check();
  return std::move(b.g);
}

int variantNamed(const synth::Theory& t, ir::NodeId n, const std::string& name) {
  const auto& vs = t.variants(n);
  for (size_t i = 0; i < vs.size(); ++i)
    if (vs[i].name == name) return static_cast<int>(i);
  return -1;
}

// The variant that shards n's output along dimension 0 (the batch).
int batchVariant(const synth::Theory& t, ir::NodeId n) {
  const auto& vs = t.variants(n);
  for (size_t i = 0; i < vs.size(); ++i)
    if (vs[i].outputs[0] == rules::gather(0)) return static_cast<int>(i);
  return -1;
}

ir::NodeId nodeWithOp(const ir::Graph& g, const std::string& op) {
  for (const ir::Node& n : g.nodes)
    if (n.op == op) return n.id;
  return ir::kNone;
}

}  // namespace

class TestProfile : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void interpolatesMeasuredTimes() {
    const cost::OpThroughput m = matmulSamples();
    QCOMPARE(m.seconds(1e6), 2e-3);
    QCOMPARE(m.seconds(1e7), 11e-3);
    QVERIFY(std::abs(m.seconds(5.5e6) - 6.5e-3) < 1e-12);  // halfway
    QCOMPARE(m.seconds(1e3), 2e-3);                          // below the first: its time
    QVERIFY(std::abs(m.seconds(2e9) - 1006e-3) < 1e-9);       // beyond the last: its rate
    // The line at a size is exact there and has the local rate.
    const cost::WorkLine line = m.lineAt(5e8);
    QVERIFY(std::abs(line.at(5e8) - m.seconds(5e8)) < 1e-12);
    QVERIFY(std::abs(line.slope - 0.5e-9) < 1e-18);
    // A time that falls with size (noise) never prices more work as cheaper.
    const cost::OpThroughput noisy{cost::OpFamily::Elementwise, ir::DType::Float32, {{1e3, 3e-6}, {1e4, 2e-6}, {1e5, 20e-6}}};
    QVERIFY(noisy.seconds(5e3) >= noisy.seconds(1e3));
    // One sample: proportional.
    const cost::OpThroughput one{cost::OpFamily::Softmax, ir::DType::Float32, {{1e6, 1e-3}}};
    QCOMPARE(one.seconds(2e6), 2e-3);
  }

  void familiesOfOps() {
    QCOMPARE(cost::opFamilyOf("aten::linear"), std::optional(cost::OpFamily::MatMul));
    QCOMPARE(cost::opFamilyOf("aten::relu_"), std::optional(cost::OpFamily::Elementwise));
    QCOMPARE(cost::opFamilyOf("aten::conv2d"), std::optional(cost::OpFamily::Convolution));
    QCOMPARE(cost::opFamilyOf("aten::layer_norm"), std::optional(cost::OpFamily::Normalization));
    QCOMPARE(cost::opFamilyOf("aten::view"), std::nullopt);
    for (int f = 0; f < cost::kOpFamilyCount; ++f)
      QCOMPARE(cost::parseOpFamily(cost::opFamilyName(static_cast<cost::OpFamily>(f))),
               std::optional(static_cast<cost::OpFamily>(f)));
    QVERIFY(cost::flopBound(cost::OpFamily::MatMul) && !cost::flopBound(cost::OpFamily::Softmax));
  }

  void validateNamesTheProblem() {
    cost::Profile p{.name = "lab", .version = 2};
    p.devices.push_back({.deviceType = "cpu"});
    p.devices[0].ops.push_back({cost::OpFamily::MatMul, ir::DType::Float32, {{1e6, 1e-3}, {1e5, 2e-3}}});
    try {
      cost::validate(p, "store.db");
      QFAIL("unsorted samples accepted");
    } catch (const cost::ClusterError& e) {
      const QString m = e.what();
      QVERIFY2(m.contains("store.db") && m.contains("'lab' v2") && m.contains("matmul float32"), e.what());
    }
    p.devices[0].ops[0].samples = {{1e5, 1e-3}, {1e6, 2e-3}};
    cost::validate(p, "store.db");  // fine now
    p.collectives.push_back({.collective = cost::Collective::AllReduce, .link = {0, 1e-5}});
    QVERIFY_THROWS_EXCEPTION(cost::ClusterError, cost::validate(p, "store.db"));
  }

  // A fitted link replaces the inventory's for its collective and link class; a slowdown scales
  // every collective; without a profile nothing changes.
  void collectivesUseFittedLinks() {
    cost::Cluster c = oneMachine(3);
    const double bytes = 4e6;
    const double inventoryRing = 2.0 * 2 * (100e-6 + bytes / (3 * 1e9));
    QVERIFY(std::abs(cost::allReduceSeconds(c, bytes) - inventoryRing) < 1e-12);

    auto p = std::make_shared<cost::Profile>();
    p->name = "m";
    p->version = 1;
    p->devices.push_back({.deviceType = "cpu"});
    p->collectives.push_back({.collective = cost::Collective::AllReduce, .algorithm = "ring",
                              .linkClass = cost::LinkClass::Intra, .link = {5e8, 40e-6}});
    p->collectives.push_back({.collective = cost::Collective::AllReduce, .algorithm = "tree",
                              .linkClass = cost::LinkClass::Intra, .link = {1e8, 1e-3}});
    p->collectives.push_back({.collective = cost::Collective::AllGather, .algorithm = "padded",
                              .linkClass = cost::LinkClass::Intra, .link = {2e8, 10e-6}});
    c.measured = p;
    const double fittedRing = 2.0 * 2 * (40e-6 + bytes / (3 * 5e8));
    const cost::AllReduceCost ar = cost::allReduceCost(c, bytes);
    QCOMPARE(ar.algorithm, cost::AllReduceAlgorithm::Ring);
    QVERIFY(std::abs(ar.seconds - fittedRing) < 1e-12);
    // The padded all-gather's fit prices padded gathers only; grouped ones keep the inventory.
    const std::vector<double> shards{1e6, 1e6, 2e6};
    QVERIFY(std::abs(cost::allGatherSeconds(c, cost::Method::Padded, shards) - 2 * (10e-6 + 2e6 / 2e8)) < 1e-12);
    const double grouped = 1e6 / 1e9 + 1e6 / 1e9 + 2e6 / 1e9 + 3 * 2 * 100e-6;
    QVERIFY(std::abs(cost::allGatherSeconds(c, cost::Method::Grouped, shards) - grouped) < 1e-12);
    // A device type that slows its collectives down by 2 doubles each of them.
    p->devices[0].collectiveSlowdown = 2;
    QVERIFY(std::abs(cost::allReduceSeconds(c, bytes) - 2 * fittedRing) < 1e-12);
    QVERIFY(std::abs(cost::allGatherSeconds(c, cost::Method::Grouped, shards) - 2 * grouped) < 1e-12);
  }

  // The cost table prices a measured family from the measured time at the size of each device's
  // piece: the slow device's quarter of the batch costs more than a quarter of the whole (the
  // launch floor), the unmeasured type keeps the roofline, and the LP's line at the table's
  // shares is exact there.
  void costTablePricesPiecesByMeasuredTime() {
    const ir::Graph g = linearGraph(64, 512, 512);  // linear: 2*64*512*512 = 33.5 MFLOP
    const synth::Theory theory(g);
    cost::Cluster c = twoTypes();
    const ir::NodeId lin = nodeWithOp(g, "aten::linear");
    const int batch = variantNamed(theory, lin, "batch");
    QVERIFY(batch >= 0);
    const double flops = g.node(lin).cost.flops;
    QCOMPARE(flops, 2.0 * 64 * 512 * 512);

    const std::vector<double> shares{0.75, 0.25};
    const cost::Cluster plain = c;  // a CostTable keeps a reference to its cluster
    const synth::CostTable roofline(theory, plain, shares);
    auto p = std::make_shared<cost::Profile>();
    p->name = "lab";
    p->version = 1;
    p->devices.push_back({.deviceType = "slow", .ops = {matmulSamples()}});
    c.measured = p;
    const synth::CostTable table(theory, c, shares);
    const int fast = table.groupOf(0), slow = table.groupOf(1);

    // The fast type has no device profile: the roofline, unchanged.
    QCOMPARE(table.groupSeconds(lin, batch, fast, synth::Pass::Both),
             roofline.groupSeconds(lin, batch, fast, synth::Pass::Both));
    // The slow type: forward = measured time of its piece (0.25 of the FLOPs); backward twice that.
    const double forward = matmulSamples().seconds(0.25 * flops);
    QVERIFY(std::abs(table.groupSeconds(lin, batch, slow, synth::Pass::Forward) - forward) < 1e-12);
    QVERIFY(std::abs(table.groupSeconds(lin, batch, slow, synth::Pass::Both) - 3 * forward) < 1e-12);
    // Less efficient per FLOP than the whole: a quarter of the work costs more than a quarter.
    QVERIFY(forward > 0.25 * matmulSamples().seconds(flops) * 1.05);
    // The LP's piece for the slow type, taken at the table's share, is exact there.
    const std::vector<synth::Affine> pieces = table.nodePieces(lin, batch, c.devices[1].type, synth::Pass::Forward);
    QCOMPARE(pieces.size(), size_t{1});
    QVERIFY(std::abs(pieces[0].at(0.25) - forward) < 1e-12);
    // A calibrated compute scale multiplies measured and roofline times alike.
    p->devices[0].computeScale = 1.5;
    const synth::CostTable scaled(theory, c, shares);
    QVERIFY(std::abs(scaled.groupSeconds(lin, batch, slow, synth::Pass::Forward) - 1.5 * forward) < 1e-12);
    const ir::NodeId relu = nodeWithOp(g, "aten::relu");
    const int reluBatch = batchVariant(theory, relu);
    QVERIFY(reluBatch >= 0);
    const double reluRoofline = roofline.groupSeconds(relu, reluBatch, slow, synth::Pass::Both);
    QVERIFY(reluRoofline > 0);
    QVERIFY2(std::abs(scaled.groupSeconds(relu, reluBatch, slow, synth::Pass::Both) / reluRoofline - 1.5) < 1e-12,
             qPrintable(QString::number(scaled.groupSeconds(relu, reluBatch, slow, synth::Pass::Both) / reluRoofline)));
  }

  // An op no family stands for (a loss) keeps the roofline, scaled by its type's calibration.
  void calibrationScalesOpsWithoutAFamily() {
    test::GraphBuilder b;
    using GB = test::GraphBuilder;
    ir::ValueId x = b.input("x", {64, 256}), y = b.input("y", {64, 256});
    ir::ValueId w = b.param("fc.weight", {256, 256});
    auto l = b.op("aten::linear", {GB::tensor("input", x), GB::tensor("weight", w), GB::constant("bias", std::monostate{})},
                  {{64, 256}});
    auto loss = b.op("aten::mse_loss", {GB::tensor("self", b.out(l)), GB::tensor("target", y),
                                        GB::constant("reduction", int64_t{1})},
                     {{}});
    b.g.loss = b.out(loss);
    ir::annotateCosts(b.g);
    b.g.check();
    const synth::Theory theory(b.g);
    const ir::NodeId mse = nodeWithOp(b.g, "aten::mse_loss");
    QVERIFY(!cost::opFamilyOf("aten::mse_loss"));
    QVERIFY(b.g.node(mse).cost.bytesRead > 0);
    const cost::Cluster plain = twoTypes();
    cost::Cluster c = plain;
    auto p = std::make_shared<cost::Profile>();
    p->name = "lab";
    p->devices.push_back({.deviceType = "slow", .computeScale = 2});
    c.measured = p;
    const std::vector<double> shares{0.5, 0.5};
    const synth::CostTable before(theory, plain, shares), after(theory, c, shares);
    const int slow = after.groupOf(1);
    for (int v = 0; v < static_cast<int>(theory.variants(mse).size()); ++v) {
      const double t = before.groupSeconds(mse, v, slow, synth::Pass::Both);
      QVERIFY(t > 0);
      QVERIFY(std::abs(after.groupSeconds(mse, v, slow, synth::Pass::Both) / t - 2) < 1e-12);
    }
  }

  void explainSaysWhereFiguresComeFrom() {
    const ir::Graph g = linearGraph(64, 512, 512);
    cost::Cluster c = twoTypes();
    QVERIFY(QString::fromStdString(cost::formatPricing(g, c)).contains("no profile"));
    auto p = std::make_shared<cost::Profile>();
    p->name = "lab";
    p->version = 3;
    p->note = "hap profile --quick";
    p->devices.push_back({.deviceType = "slow", .ops = {matmulSamples()}});
    p->collectives.push_back({.collective = cost::Collective::AllToAll, .linkClass = cost::LinkClass::Inter,
                              .link = {5e8, 40e-6}, .ranks = 2, .samples = 6, .relativeResidual = 0.03});
    c.measured = p;
    const QString text = QString::fromStdString(cost::formatPricing(g, c));
    QVERIFY2(text.contains("profile lab v3"), qPrintable(text));
    QVERIFY2(text.contains("fast: roofline (profile lab has no device type 'fast')"), qPrintable(text));
    QVERIFY2(text.contains(QRegularExpression("matmul float32 +1 nodes +measured, 3 sizes")), qPrintable(text));
    QVERIFY2(text.contains(QRegularExpression("elementwise float32 +1 nodes +roofline \\(not measured")), qPrintable(text));
    QVERIFY2(text.contains(QRegularExpression("all_to_all \\(inter\\) +profile fit: latency 40 us")), qPrintable(text));
    QVERIFY2(text.contains(QRegularExpression("all_reduce ring \\(inter\\) +inventory: latency 100 us")), qPrintable(text));
  }
};

QTEST_GUILESS_MAIN(TestProfile)
#include "tst_profile.moc"
