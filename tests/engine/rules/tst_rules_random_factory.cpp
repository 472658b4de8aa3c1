// Golden tests of the random and factory rules: random values are drawn full-size from the
// shared seed (sharded variants keep a piece, noted), dropout passes partial sums, factories
// create their local piece, *_like ops follow the shape of their input.
#include <QtTest>

#include "engine/rules/rule.h"
#include "tests/engine/rules/rule_test_util.h"

using hap::ir::NodeId;
using hap::ir::ValueId;
using hap::test::GraphBuilder;
using hap::test::variantLines;

namespace {

NodeId dropout(GraphBuilder& b, const std::string& op, std::vector<hap::ir::Shape> outs) {
  ValueId x = b.input("x", {4, 16, 32});
  return b.op(op,
              {GraphBuilder::tensor("input", x), GraphBuilder::constant("p", 0.1),
               GraphBuilder::constant("train", true)},
              std::move(outs));
}

}  // namespace

class TstRulesRandomFactory : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void dropoutShardsAndPassesPartial() {
    GraphBuilder b;
    NodeId n = dropout(b, "aten::dropout", {{4, 16, 32}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "shard: G(0) -> G(0)",
                                       "shard: G(1) -> G(1)",
                                       "shard: G(2) -> G(2)",
                                       "partial: R -> R",
                                   }));
    std::vector<hap::rules::Variant> vs = hap::rules::variantsFor(b.g, b.g.node(n));
    QVERIFY(vs[1].note.find("this rank's piece of the counter-based mask") != std::string::npos);
    QVERIFY(vs[4].note.find("same full-size mask") != std::string::npos);
    QVERIFY(hap::rules::findRule("aten::dropout_") != nullptr);
    // Every variant draws the single-device mask, the replicate one too (in a replicated plan,
    // the global batch's).
    QCOMPARE(hap::test::executionNames(b.g, n),
             (QStringList{"dropout-mask", "dropout-mask", "dropout-mask", "dropout-mask",
                          "dropout-mask"}));
  }

  // native_dropout also returns the mask: full on every rank for a partial input.
  void nativeDropoutMask() {
    GraphBuilder b;
    NodeId n = dropout(b, "aten::native_dropout", {{4, 16, 32}, {4, 16, 32}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I I",
                                       "shard: G(0) -> G(0) G(0)",
                                       "shard: G(1) -> G(1) G(1)",
                                       "shard: G(2) -> G(2) G(2)",
                                       "partial: R -> R I",
                                   }));
  }

  // Alpha dropout is affine: no partial sums.
  void alphaDropoutShardsOnly() {
    GraphBuilder b;
    NodeId n = dropout(b, "aten::alpha_dropout", {{4, 16, 32}});
    QCOMPARE(variantLines(b.g, n).size(), 4);
  }

  void randomFactoryAndLike() {
    GraphBuilder b;
    NodeId rand =
        b.op("aten::rand", {GraphBuilder::constant("size", std::vector<int64_t>{4, 8})}, {{4, 8}});
    QCOMPARE(variantLines(b.g, rand), (QStringList{
                                          "replicate: -> I",
                                          "shard: -> G(0)",
                                          "shard: -> G(1)",
                                      }));
    ValueId x = b.input("x", {4, 8});
    NodeId like = b.op("aten::randn_like", {GraphBuilder::tensor("self", x)}, {{4, 8}});
    QCOMPARE(variantLines(b.g, like), (QStringList{
                                          "replicate: I -> I",
                                          "shard: G(0) -> G(0)",
                                          "shard: G(1) -> G(1)",
                                          "like: R -> I",
                                      }));
    QCOMPARE(hap::test::executionNames(b.g, rand),
             (QStringList{"random-draws", "random-draws", "random-draws"}));
    QCOMPARE(hap::test::executionNames(b.g, like),
             (QStringList{"random-draws", "random-draws", "random-draws", "random-draws"}));
  }

  void factoriesCreateTheirPiece() {
    GraphBuilder b;
    NodeId arange = b.op("aten::arange", {GraphBuilder::constant("end", int64_t{10})}, {{10}});
    QCOMPARE(variantLines(b.g, arange), (QStringList{"replicate: -> I", "local: -> G(0)"}));
    QVERIFY(hap::rules::variantsFor(b.g, b.g.node(arange))[1].note.find("local shape") !=
            std::string::npos);
    NodeId zeros =
        b.op("aten::zeros", {GraphBuilder::constant("size", std::vector<int64_t>{2, 3})}, {{2, 3}});
    QCOMPARE(variantLines(b.g, zeros),
             (QStringList{"replicate: -> I", "local: -> G(0)", "local: -> G(1)"}));
    // new_zeros takes only the dtype of self.
    ValueId x = b.input("x", {5});
    NodeId newZeros = b.op("aten::new_zeros",
                           {GraphBuilder::tensor("self", x),
                            GraphBuilder::constant("size", std::vector<int64_t>{2, 3})},
                           {{2, 3}});
    QCOMPARE(variantLines(b.g, newZeros),
             (QStringList{"replicate: I -> I", "local: I -> G(0)", "local: I -> G(1)"}));
    QCOMPARE(hap::test::executionNames(b.g, newZeros),
             (QStringList{"plain", "factory-piece", "factory-piece"}));
    bool hasRule = false;
    NodeId scalar = b.op("aten::scalar_tensor", {GraphBuilder::constant("s", 1.0)}, {{}});
    hap::rules::variantsFor(b.g, b.g.node(scalar), &hasRule);
    QVERIFY(hasRule);
  }

  // *_like ops use the input's shape only: a full-size input of any relation gives the full
  // output on every rank.
  void likeFollowsTheShape() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    NodeId n = b.op("aten::ones_like", {GraphBuilder::tensor("self", x)}, {{4, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "shard: G(0) -> G(0)",
                                       "shard: G(1) -> G(1)",
                                       "like: R -> I",
                                   }));
  }
};

QTEST_GUILESS_MAIN(TstRulesRandomFactory)
#include "tst_rules_random_factory.moc"
