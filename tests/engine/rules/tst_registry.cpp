// The rule registry: each op registered once, and every op of the zoo's models has a rule.
#include <QtTest>

#include <map>

#include "engine/import/importer.h"
#include "engine/rules/families.h"
#include "engine/synth/theory.h"

using namespace hap;

class TstRegistry : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void eachOpRegisteredOnce() {
    std::map<std::string, int> seen;
    for (std::span<const rules::RuleEntry> family :
         {rules::elementwiseRules(), rules::randomRules(), rules::reductionRules(),
          rules::normalizationRules(), rules::softmaxRules(), rules::lossRules(),
          rules::embeddingRules(), rules::factoryRules(), rules::shapeRules(), rules::matmulRules(),
          rules::convolutionRules(), rules::indexingRules()}) {
      QVERIFY(!family.empty());
      for (const rules::RuleEntry& e : family) {
        QVERIFY2(++seen[std::string(e.op)] == 1, std::string(e.op).c_str());
        QVERIFY(rules::findRule(e.op) == e.rule);
      }
    }
    QVERIFY(rules::findRule("aten::no_such_op") == nullptr);
  }

  void zooOpsAllHaveRules_data() {
    QTest::addColumn<QString>("model");
    for (const char* m : {"mlp", "bert", "vit", "vgg19", "bert_moe"}) QTest::newRow(m) << m;
  }
  void zooOpsAllHaveRules() {
    QFETCH(QString, model);
    ir::Graph g = import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" +
                                  model.toStdString() + "-tiny.pt");
    synth::Theory t(g);
    QStringList missing;
    for (const ir::Diagnostic& d : t.diagnostics()) missing << QString::fromStdString(d.message);
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join("\n")));
    // Every node has a sharded variant besides replicate (data parallelism needs them).
    for (const ir::Node& n : g.nodes) QVERIFY2(t.variants(n.id).size() >= 2, n.op.c_str());
  }
};

QTEST_GUILESS_MAIN(TstRegistry)
#include "tst_registry.moc"
