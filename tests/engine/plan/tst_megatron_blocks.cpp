// Megatron's blocks found by the graph's structure (plan/baselines.h findMegatronBlocks), not by
// module names: on the zoo they are exactly the linears the names *.attn.{q,k,v,out} and
// *.ffn.{fc1,fc2} select (so the zoo's Megatron figures are unchanged); models written by others
// (torch.nn.TransformerEncoder, a hand-written GPT-style and Llama-style decoder) get a Megatron
// plan that verifies; models without attention or a transformer MLP say which structure is missing.
// tests/runtime/tst_exactness runs these plans and checks them exact.
#include <QtTest>

#include <set>
#include <string>
#include <vector>

#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/import/input_spec.h"
#include "engine/plan/baselines.h"
#include "engine/plan/planner.h"
#include "engine/plan/replication.h"
#include "engine/plan/verifier.h"
#include "engine/synth/search.h"

using namespace hap;

namespace {

cost::Cluster cluster(const char* name) {
  return cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() + "/resources/clusters/" + name +
                           ".yaml");
}

ir::Graph zoo(const QString& name) {
  return import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + name.toStdString() +
                             "-tiny.pt");
}

// A fixture saved by plain torch.jit.save (no hap/inputs.json): its two int64 [batch, 8] inputs.
ir::Graph fixture(const QString& file, int batch = 4) {
  const std::string first = file.startsWith("torch_encoder") ? "tokens" : "idx";
  import::ImportOptions o;
  o.inputOverrides = {import::parseInputArg(first + "=" + std::to_string(batch) + "x8:int64:0..32"),
                      import::parseInputArg("targets=" + std::to_string(batch) + "x8:int64:0..32")};
  return import::importModel(qEnvironmentVariable("HAP_FIXTURE_DIR").toStdString() + "/" + file.toStdString(), o);
}

struct Named {
  ir::NodeId node;
  std::string variant;
  bool operator<(const Named& o) const { return node != o.node ? node < o.node : variant < o.variant; }
  bool operator==(const Named& o) const { return node == o.node && variant == o.variant; }
};

// What the module-name pins selected before (the linears among the nodes whose scope matches).
std::vector<Named> byNames(const ir::Graph& g) {
  const std::vector<std::pair<const char*, const char*>> pins{{"*.attn.q", "column"}, {"*.attn.k", "column"},
                                                              {"*.attn.v", "column"}, {"*.attn.out", "row"},
                                                              {"*.ffn.fc1", "column"}, {"*.ffn.fc2", "row"}};
  std::set<Named> out;
  for (const ir::Node& n : g.nodes)
    for (const auto& [pattern, variant] : pins)
      if (n.op == "aten::linear" && synth::globMatch(pattern, n.scope)) out.insert({n.id, variant});
  return {out.begin(), out.end()};
}

std::vector<Named> found(const plan::MegatronBlocks& b) {
  std::set<Named> out;
  for (const plan::MegatronBlocks::Split& s : b.splits) out.insert({s.node, s.variant});
  return {out.begin(), out.end()};
}

QString describe(const ir::Graph& g, const std::vector<Named>& v) {
  QStringList out;
  for (const Named& n : v) out << QString::fromStdString(g.node(n.node).scope + "=" + n.variant);
  return out.join(", ");
}

}  // namespace

class TstMegatronBlocks : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // The zoo's blocks by structure are the ones its module names gave: the same pins, the same
  // search, the same Megatron figures. MLP and VGG19 (a classifier's stack of linears, no
  // residual sublayer) have none.
  void zooBlocksAreTheNamedOnes_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("attention");
    QTest::addColumn<int>("mlp");
    QTest::newRow("bert") << "bert" << 2 << 2;
    QTest::newRow("vit") << "vit" << 2 << 2;
    QTest::newRow("bert_moe") << "bert_moe" << -1 << -1;  // counts not fixed: compared with the names
    QTest::newRow("mlp") << "mlp" << 0 << 0;
    QTest::newRow("vgg19") << "vgg19" << 0 << 0;
  }
  void zooBlocksAreTheNamedOnes() {
    QFETCH(QString, model);
    QFETCH(int, attention);
    QFETCH(int, mlp);
    const ir::Graph g = zoo(model);
    const plan::MegatronBlocks b = plan::findMegatronBlocks(g);
    const std::vector<Named> named = byNames(g), structural = found(b);
    QVERIFY2(named == structural, qPrintable("by names: " + describe(g, named) + "\nby structure: " +
                                             describe(g, structural)));
    if (attention >= 0) QCOMPARE(b.attention, attention);
    if (mlp >= 0) QCOMPARE(b.mlp, mlp);
    if (named.empty()) {
      const QString why = QString::fromStdString(b.notFound());
      QVERIFY2(why.contains("found no attention block") && why.contains("no MLP"), qPrintable(why));
      if (model == "vgg19" || model == "mlp") QVERIFY2(why.contains("not a residual sublayer"), qPrintable(why));
    }
  }

  // The fixture with Megatron's module names but one head and no view into heads.
  void singleHeadAttention() {
    const ir::Graph g = import::importModel(qEnvironmentVariable("HAP_FIXTURE_DIR").toStdString() + "/ignore_block.pt");
    const plan::MegatronBlocks b = plan::findMegatronBlocks(g);
    QCOMPARE(b.attention, 1);
    QCOMPARE(b.mlp, 1);
    QVERIFY(byNames(g) == found(b));
  }

  // Models written by others: the projections, whatever they are called.
  void modelsWrittenByOthers_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QStringList>("columns");  // module scopes (each layer) of the column-parallel ones
    QTest::addColumn<QStringList>("rows");
    QTest::newRow("nn.TransformerEncoder") << "torch_encoder.pt"
                                           << QStringList{"encoder.layers.0.self_attn", "encoder.layers.0.linear1"}
                                           << QStringList{"encoder.layers.0.self_attn", "encoder.layers.0.linear2"};
    QTest::newRow("GPT-style") << "gpt_decoder.pt" << QStringList{"h.0.c_attn", "h.0.up"}
                               << QStringList{"h.0.c_proj", "h.0.down"};
    QTest::newRow("Llama-style") << "llama_decoder.pt" << QStringList{"h.0.wq", "h.0.wk", "h.0.wv", "h.0.w1", "h.0.w3"}
                                 << QStringList{"h.0.wo", "h.0.w2"};
  }
  void modelsWrittenByOthers() {
    QFETCH(QString, file);
    QFETCH(QStringList, columns);
    QFETCH(QStringList, rows);
    const ir::Graph g = fixture(file);
    const plan::MegatronBlocks b = plan::findMegatronBlocks(g);
    QCOMPARE(b.attention, 2);
    QCOMPARE(b.mlp, 2);
    QStringList column, row;
    for (const plan::MegatronBlocks::Split& s : b.splits) {
      const ir::Node& n = g.node(s.node);
      QCOMPARE(QString::fromStdString(n.op), QString("aten::linear"));
      QCOMPARE(QString::fromStdString(s.variant), QString(s.column ? "column" : "row"));
      if (QString::fromStdString(n.scope).contains(".0.")) (s.column ? column : row) << QString::fromStdString(n.scope);
    }
    QCOMPARE(column, columns);
    QCOMPARE(row, rows);
    QVERIFY(byNames(g).empty());  // none of Megatron's old module names

    // The executable plan, tensor parallel on one machine of 3 CPU ranks, verifies; its
    // projections run under the variants found.
    const plan::Plan p = plan::makeMegatronPlan(g, g, cluster("local-cpu-3"), {});
    QCOMPARE(p.strategy, std::string("megatron"));
    QStringList problems;
    for (const std::string& s : plan::verifyPlan(g, p)) problems << QString::fromStdString(s);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join("\n")));
    std::set<Named> ran;
    for (const plan::PlanStep& s : p.steps)
      if (s.kind == plan::PlanStep::Kind::Compute) ran.insert({s.node, s.variant});
    for (const Named& n : found(b))
      QVERIFY2(ran.count(n), qPrintable(QString::fromStdString(g.describe(n.node) + " not run as " + n.variant)));

    // The Megatron baseline applies on 2 machines (the model at a machine's batch).
    const plan::Plan::Baseline baseline = plan::megatronBaseline(fixture(file, 2), cluster("a100-p100-4"), {});
    QVERIFY2(baseline.applicable && baseline.estimate.iterationSeconds > 0, baseline.note.c_str());
  }

  // A convolutional network: no attention, no MLP; the baseline says which structure is missing.
  void notApplicableSaysWhatIsMissing() {
    ir::Graph g = zoo("vgg19");
    import::ImportOptions half;
    half.inputOverrides = import::dividedBatch(g, 2);
    const plan::Plan::Baseline b =
        plan::megatronBaseline(import::importModel(g.sourceFile, half), cluster("a100-p100-4"), {});
    QVERIFY(!b.applicable);
    QVERIFY2(QString::fromStdString(b.note).startsWith("not applicable: found no attention block"), b.note.c_str());
  }
};

QTEST_GUILESS_MAIN(TstMegatronBlocks)
#include "tst_megatron_blocks.moc"
