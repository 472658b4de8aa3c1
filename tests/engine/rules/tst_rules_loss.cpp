// Golden tests of the loss rules: positions (batch, spatial) shard, classes never; the output is
// sharded (reduction none) or a partial sum (sum, and mean with the global divisor noted).
#include <QtTest>

#include "engine/rules/rule.h"
#include "tests/engine/rules/rule_test_util.h"

using hap::ir::Arg;
using hap::ir::DType;
using hap::ir::NodeId;
using hap::ir::ValueId;
using hap::test::GraphBuilder;
using hap::test::variantLines;

namespace {

// op(self, target, weight, reduction, ignore_index[, label_smoothing]).
NodeId classLoss(GraphBuilder& b, const std::string& op, hap::ir::Shape self, hap::ir::Shape target,
                 int64_t reduction, hap::ir::Shape out, DType targetType = DType::Int64) {
  ValueId x = b.input("x", std::move(self));
  ValueId t = b.input("t", std::move(target), targetType);
  std::vector<Arg> args = {GraphBuilder::tensor("self", x), GraphBuilder::tensor("target", t),
                           GraphBuilder::constant("weight", std::monostate{}),
                           GraphBuilder::constant("reduction", reduction),
                           GraphBuilder::constant("ignore_index", int64_t{-100})};
  if (op == "aten::cross_entropy_loss")
    args.push_back(GraphBuilder::constant("label_smoothing", 0.0));
  return b.op(op, std::move(args), {std::move(out)});
}

std::string noteOf(const GraphBuilder& b, NodeId n, int i) {
  return hap::rules::variantsFor(b.g, b.g.node(n)).at(static_cast<size_t>(i)).note;
}

}  // namespace

class TstRulesLoss : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // The BERT head: cross_entropy over [N, C] with the default mean reduction.
  void crossEntropyMean() {
    GraphBuilder b;
    auto n = classLoss(b, "aten::cross_entropy_loss", {64, 128}, {64}, 1, {});
    QCOMPARE(variantLines(b.g, n), (QStringList{"replicate: I I -> I", "reduce: G(0) G(0) -> R"}));
    QVERIFY(noteOf(b, n, 1).find("global number of non-ignored targets") != std::string::npos);
    QCOMPARE(hap::test::executionNames(b.g, n), (QStringList{"plain", "class-loss-mean"}));
  }

  void crossEntropySumHasNoNote() {
    GraphBuilder b;
    auto n = classLoss(b, "aten::cross_entropy_loss", {64, 128}, {64}, 2, {});
    QCOMPARE(variantLines(b.g, n), (QStringList{"replicate: I I -> I", "reduce: G(0) G(0) -> R"}));
    QVERIFY(noteOf(b, n, 1).empty());
    QCOMPARE(hap::test::executionNames(b.g, n), (QStringList{"plain", "plain"}));  // sums add up
  }

  // Spatial positions: self dimension k+2 goes with target dimension k+1.
  void nllSpatialSum() {
    GraphBuilder b;
    auto n = classLoss(b, "aten::nll_loss_nd", {4, 10, 5, 6}, {4, 5, 6}, 2, {});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "reduce: G(0) G(0) -> R",
                                       "reduce: G(2) G(1) -> R",
                                       "reduce: G(3) G(2) -> R",
                                   }));
  }

  void nllNoReductionShardsTheOutput() {
    GraphBuilder b;
    auto n = classLoss(b, "aten::nll_loss2d", {4, 10, 5}, {4, 5}, 0, {4, 5});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "shard: G(0) G(0) -> G(0)",
                                       "shard: G(2) G(1) -> G(1)",
                                   }));
  }

  // Class weights are an input, replicated.
  void nllWithClassWeights() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 10});
    ValueId t = b.input("t", {4}, DType::Int64);
    ValueId w = b.param("w", {10});
    auto n =
        b.op("aten::nll_loss",
             {GraphBuilder::tensor("self", x), GraphBuilder::tensor("target", t),
              GraphBuilder::tensor("weight", w), GraphBuilder::constant("reduction", int64_t{1}),
              GraphBuilder::constant("ignore_index", int64_t{-100})},
             {{}});
    QCOMPARE(variantLines(b.g, n),
             (QStringList{"replicate: I I I -> I", "reduce: G(0) G(0) I -> R"}));
  }

  // Class-probability targets have the scores' layout; the mean divides by the positions.
  void crossEntropyWithProbabilities() {
    GraphBuilder b;
    auto n =
        classLoss(b, "aten::cross_entropy_loss", {4, 10, 5}, {4, 10, 5}, 1, {}, DType::Float32);
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "reduce: G(0) G(0) -> R",
                                       "reduce: G(2) G(2) -> R",
                                   }));
    QVERIFY(noteOf(b, n, 1).find("global number of positions") != std::string::npos);
    QCOMPARE(hap::test::executionNames(b.g, n),
             (QStringList{"plain", "probability-loss-mean", "probability-loss-mean"}));
  }

  // Unbatched scores [C]: only the class dimension, which does not shard.
  void unbatchedHasNothingToShard() {
    GraphBuilder b;
    auto n = classLoss(b, "aten::cross_entropy_loss", {10}, {}, 1, {});
    QCOMPARE(variantLines(b.g, n), QStringList{"replicate: I I -> I"});
  }

  void mseMean() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    ValueId y = b.input("y", {4, 8});
    auto n = b.op("aten::mse_loss",
                  {GraphBuilder::tensor("self", x), GraphBuilder::tensor("target", y),
                   GraphBuilder::constant("reduction", int64_t{1})},
                  {{}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "reduce: G(0) G(0) -> R",
                                       "reduce: G(1) G(1) -> R",
                                   }));
    QVERIFY(noteOf(b, n, 1).find("global number of elements") != std::string::npos);
    QCOMPARE(hap::test::executionNames(b.g, n),
             (QStringList{"plain", "pointwise-loss-mean", "pointwise-loss-mean"}));
  }

  // pos_weight [C] broadcasts along the last dimension.
  void bceWithLogitsBroadcastsPosWeight() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    ValueId y = b.input("y", {4, 8});
    ValueId pw = b.param("pw", {8});
    auto n = b.op(
        "aten::binary_cross_entropy_with_logits",
        {GraphBuilder::tensor("self", x), GraphBuilder::tensor("target", y),
         GraphBuilder::constant("weight", std::monostate{}), GraphBuilder::tensor("pos_weight", pw),
         GraphBuilder::constant("reduction", int64_t{0})},
        {{4, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "shard: G(0) G(0) I -> G(0)",
                                       "shard: G(1) G(1) G(0) -> G(1)",
                                   }));
  }
};

QTEST_GUILESS_MAIN(TstRulesLoss)
#include "tst_rules_loss.moc"
