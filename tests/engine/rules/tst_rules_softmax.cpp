// Golden tests of the softmax rules: every dimension but the normalised one shards.
#include <QtTest>

#include "engine/rules/rule.h"
#include "tests/engine/rules/rule_test_util.h"

using hap::ir::ValueId;
using hap::test::GraphBuilder;
using hap::test::variantLines;

class TstRulesSoftmax : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void softmaxOverLastDim() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 2, 16, 16});
    auto n = b.op("aten::softmax",
                  {GraphBuilder::tensor("self", x), GraphBuilder::constant("dim", int64_t{-1}),
                   GraphBuilder::constant("dtype", std::monostate{})},
                  {{4, 2, 16, 16}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "shard: G(0) -> G(0)",
                                       "shard: G(1) -> G(1)",
                                       "shard: G(2) -> G(2)",
                                   }));
  }

  void logSoftmaxOverMiddleDim() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 10, 5});
    auto n = b.op("aten::_log_softmax",
                  {GraphBuilder::tensor("self", x), GraphBuilder::constant("dim", int64_t{1}),
                   GraphBuilder::constant("half_to_float", false)},
                  {{4, 10, 5}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "shard: G(0) -> G(0)",
                                       "shard: G(2) -> G(2)",
                                   }));
    QVERIFY(hap::rules::findRule("aten::log_softmax") != nullptr);
    QVERIFY(hap::rules::findRule("aten::_softmax") != nullptr);
  }
};

QTEST_GUILESS_MAIN(TstRulesSoftmax)
#include "tst_rules_softmax.moc"
