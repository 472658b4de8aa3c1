// Golden tests of the reduction rules: kept dimensions shard (renumbered unless keepdim), reduced
// sharded dimensions give partial sums for sum and mean only, R passes through sum and mean.
#include <QtTest>

#include "engine/rules/rule.h"
#include "tests/engine/rules/rule_test_util.h"

using hap::ir::DType;
using hap::ir::NodeId;
using hap::ir::ValueId;
using hap::test::GraphBuilder;
using hap::test::variantLines;

namespace {

// op(self, dim, keepdim) on x [2, 3, 4].
NodeId reduction(GraphBuilder& b, const std::string& op, hap::ir::Constant dim, bool keepdim,
                 std::vector<hap::ir::Shape> outs) {
  ValueId x = b.input("x", {2, 3, 4});
  return b.op(op,
              {GraphBuilder::tensor("self", x), GraphBuilder::constant("dim", std::move(dim)),
               GraphBuilder::constant("keepdim", keepdim)},
              std::move(outs));
}

}  // namespace

class TstRulesReduction : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void sumKeepdim() {
    GraphBuilder b;
    auto n = reduction(b, "aten::sum", std::vector<int64_t>{1}, true, {{2, 1, 4}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "keep: G(0) -> G(0)",
                                       "reduce: G(1) -> R",
                                       "keep: G(2) -> G(2)",
                                       "partial: R -> R",
                                   }));
  }

  // Without keepdim the kept dimensions move up past the reduced ones; dims may be negative.
  void sumNegativeDimDropsIt() {
    GraphBuilder b;
    auto n = reduction(b, "aten::sum", std::vector<int64_t>{-2}, false, {{2, 4}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "keep: G(0) -> G(0)",
                                       "reduce: G(1) -> R",
                                       "keep: G(2) -> G(1)",
                                       "partial: R -> R",
                                   }));
  }

  // sum(self, dtype): every dimension is reduced.
  void sumOfAll() {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 3});
    auto n = b.op(
        "aten::sum",
        {GraphBuilder::tensor("self", x), GraphBuilder::constant("dtype", std::monostate{})}, {{}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "reduce: G(0) -> R",
                                       "reduce: G(1) -> R",
                                       "partial: R -> R",
                                   }));
  }

  // A mean over a sharded dimension divides by the global size: the variant says so.
  void meanNotesTheGlobalDivisor() {
    GraphBuilder b;
    auto n = reduction(b, "aten::mean", std::vector<int64_t>{0, 2}, false, {{3}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "reduce: G(0) -> R",
                                       "keep: G(1) -> G(0)",
                                       "reduce: G(2) -> R",
                                       "partial: R -> R",
                                   }));
    std::vector<hap::rules::Variant> vs = hap::rules::variantsFor(b.g, b.g.node(n));
    QVERIFY(vs[1].note.find("global reduced size") != std::string::npos);
    QVERIFY(vs[2].note.empty());
    QVERIFY(vs[4].note.empty());  // the mean of partial sums is the partial sum of means
    // The runtime divides by the global count only where the cut dimension is reduced.
    QCOMPARE(hap::test::executionNames(b.g, n),
             (QStringList{"plain", "mean-over-cut", "plain", "mean-over-cut", "plain"}));
  }

  // A sum over a cut dimension is a partial sum as it is: no adjustment.
  void sumOverCutIsPlain() {
    GraphBuilder b;
    auto n = reduction(b, "aten::sum", std::vector<int64_t>{0, 2}, false, {{3}});
    QCOMPARE(hap::test::executionNames(b.g, n),
             (QStringList{"plain", "plain", "plain", "plain", "plain"}));
  }

  // A max is not a sum: only the kept dimensions shard.
  void amaxKeepsOnly() {
    GraphBuilder b;
    auto n = reduction(b, "aten::amax", std::vector<int64_t>{1}, false, {{2, 4}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "keep: G(0) -> G(0)",
                                       "keep: G(2) -> G(1)",
                                   }));
  }

  // max.dim returns values and indices; the indices are along an unsharded dimension.
  void maxDimShardsBothOutputs() {
    GraphBuilder b;
    auto n = reduction(b, "aten::max", int64_t{-1}, true, {{2, 3, 1}, {2, 3, 1}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I I",
                                       "keep: G(0) -> G(0) G(0)",
                                       "keep: G(1) -> G(1) G(1)",
                                   }));
  }

  // max(self, other) is elementwise.
  void maxOfTwoTensors() {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 3});
    ValueId y = b.input("y", {3});
    auto n = b.op("aten::max", {GraphBuilder::tensor("self", x), GraphBuilder::tensor("other", y)},
                  {{2, 3}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "shard: G(0) I -> G(0)",
                                       "shard: G(1) G(0) -> G(1)",
                                   }));
  }

  // argmax(dim=None) indexes the flattened input: nothing shards.
  void argmaxOfAll() {
    GraphBuilder b;
    auto n = reduction(b, "aten::argmax", std::monostate{}, false, {{}});
    QCOMPARE(variantLines(b.g, n), QStringList{"replicate: I -> I"});
  }

  void varKeepsOnly() {
    GraphBuilder b;
    auto n = reduction(b, "aten::var", std::vector<int64_t>{2}, true, {{2, 3, 1}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "keep: G(0) -> G(0)",
                                       "keep: G(1) -> G(1)",
                                   }));
  }

  // Counting bools: sharding the counted dimension gives partial counts, but a bool cannot
  // hold a partial sum.
  void sumOfBools() {
    GraphBuilder b;
    ValueId x = b.input("x", {6}, DType::Bool);
    auto n =
        b.op("aten::sum",
             {GraphBuilder::tensor("self", x), GraphBuilder::constant("dtype", std::monostate{})},
             {{}}, DType::Int64);
    QCOMPARE(variantLines(b.g, n), (QStringList{"replicate: I -> I", "reduce: G(0) -> R"}));
  }
};

QTEST_GUILESS_MAIN(TstRulesReduction)
#include "tst_rules_reduction.moc"
