// Golden tests of the elementwise rules: G(d) through every dimension with broadcast inputs
// replicated, R only through ops linear in the partial arguments, in-place forms registered.
#include <QtTest>

#include "engine/rules/rule.h"
#include "tests/engine/rules/rule_test_util.h"

using hap::ir::DType;
using hap::ir::ValueId;
using hap::ir::ValueKind;
using hap::test::GraphBuilder;
using hap::test::variantLines;

namespace {

ValueId constantTensor(GraphBuilder& b, hap::ir::Shape shape, DType t = DType::Float32) {
  ValueId id = b.g.addValue(ValueKind::Constant, "c", std::move(shape), t);
  b.g.constants.push_back(id);
  return id;
}

}  // namespace

class TstRulesElementwise : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void nonLinearUnaryShardsEveryDim() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8, 2});
    auto n = b.op("aten::gelu",
                  {GraphBuilder::tensor("self", x),
                   GraphBuilder::constant("approximate", std::string("none"))},
                  {{4, 8, 2}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "shard: G(0) -> G(0)",
                                       "shard: G(1) -> G(1)",
                                       "shard: G(2) -> G(2)",
                                   }));
  }

  // A length-1 dimension never shards (one device would hold it all).
  void lengthOneDimDoesNotShard() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 1, 8});
    ValueId y = b.input("y", {8});
    auto n = b.op("aten::sub",
                  {GraphBuilder::tensor("self", x), GraphBuilder::tensor("other", y),
                   GraphBuilder::constant("alpha", int64_t{1})},
                  {{4, 1, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "shard: G(0) I -> G(0)",
                                       "shard: G(2) G(0) -> G(2)",
                                       "partial: R R -> R",
                                   }));
  }

  void linearUnaryPassesPartial() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    auto n = b.op("aten::neg", {GraphBuilder::tensor("self", x)}, {{4, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "shard: G(0) -> G(0)",
                                       "shard: G(1) -> G(1)",
                                       "partial: R -> R",
                                   }));
  }

  void inplaceFormsAreRegistered() {
    QVERIFY(hap::rules::findRule("aten::relu_") != nullptr);
    QVERIFY(hap::rules::findRule("aten::add_") != nullptr);
    QVERIFY(hap::rules::findRule("aten::masked_fill_") != nullptr);
    QVERIFY(hap::rules::findRule("aten::tril_") != nullptr);
    QVERIFY(hap::rules::findRule("aten::copy_") != nullptr);
    // Only forms that exist in ATen.
    QVERIFY(hap::rules::findRule("aten::where_") == nullptr);
    QVERIFY(hap::rules::findRule("aten::maximum_") == nullptr);

    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    auto n = b.op("aten::relu_", {GraphBuilder::tensor("self", x)}, {{4, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "shard: G(0) -> G(0)",
                                       "shard: G(1) -> G(1)",
                                   }));
  }

  void addSameShape() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    ValueId y = b.input("y", {4, 8});
    auto n = b.op("aten::add",
                  {GraphBuilder::tensor("self", x), GraphBuilder::tensor("other", y),
                   GraphBuilder::constant("alpha", int64_t{1})},
                  {{4, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "shard: G(0) G(0) -> G(0)",
                                       "shard: G(1) G(1) -> G(1)",
                                       "partial: R R -> R",
                                   }));
  }

  // [B,S,E] + [1,S,E]: the size-1 batch dimension is broadcast, so replicated when the batch
  // shards; the others are linked one to one.
  void addBroadcastLeadingOne() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 32});
    ValueId pe = b.param("pe", {1, 16, 32});
    auto n = b.op("aten::add",
                  {GraphBuilder::tensor("self", x), GraphBuilder::tensor("other", pe),
                   GraphBuilder::constant("alpha", int64_t{1})},
                  {{4, 16, 32}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "shard: G(0) I -> G(0)",
                                       "shard: G(1) G(1) -> G(1)",
                                       "shard: G(2) G(2) -> G(2)",
                                       "partial: R R -> R",
                                   }));
  }

  // [B,S,E] + [E]: the bias has one dimension, aligned with the last one.
  void addBroadcastFewerDims() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 32});
    ValueId bias = b.param("bias", {32});
    auto n = b.op("aten::add_",
                  {GraphBuilder::tensor("self", x), GraphBuilder::tensor("other", bias),
                   GraphBuilder::constant("alpha", int64_t{1})},
                  {{4, 16, 32}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "shard: G(0) I -> G(0)",
                                       "shard: G(1) I -> G(1)",
                                       "shard: G(2) G(0) -> G(2)",
                                       "partial: R R -> R",
                                   }));
  }

  // Adding a nonzero scalar to a partial sum would add it once per device.
  void addScalarIsNotLinear() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    auto n = b.op("aten::add",
                  {GraphBuilder::tensor("self", x), GraphBuilder::constant("other", 1.0),
                   GraphBuilder::constant("alpha", int64_t{1})},
                  {{4, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "shard: G(0) -> G(0)",
                                       "shard: G(1) -> G(1)",
                                   }));
    auto zero = b.op("aten::sub",
                     {GraphBuilder::tensor("self", x), GraphBuilder::constant("other", int64_t{0}),
                      GraphBuilder::constant("alpha", int64_t{1})},
                     {{4, 8}});
    QCOMPARE(variantLines(b.g, zero).last(), QString("partial: R -> R"));
  }

  // A 0-dim constant tensor broadcasts like a scalar: replicated in every shard.
  void mulByZeroDimConstant() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    ValueId c = constantTensor(b, {});
    auto n = b.op("aten::mul", {GraphBuilder::tensor("self", x), GraphBuilder::tensor("other", c)},
                  {{4, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "shard: G(0) I -> G(0)",
                                       "shard: G(1) I -> G(1)",
                                       "partial: R I -> R",
                                       "partial: I R -> R",
                                   }));
  }

  void mulByScalar() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    auto n =
        b.op("aten::mul", {GraphBuilder::tensor("self", x), GraphBuilder::constant("other", 0.5)},
             {{4, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "shard: G(0) -> G(0)",
                                       "shard: G(1) -> G(1)",
                                       "partial: R -> R",
                                   }));
  }

  // An in-place result has its first input's relation: mul_(I, R) -> R is not offered.
  void inplaceMulKeepsSelfRelation() {
    GraphBuilder b;
    ValueId x = b.input("x", {8});
    ValueId y = b.input("y", {8});
    auto n = b.op("aten::mul_", {GraphBuilder::tensor("self", x), GraphBuilder::tensor("other", y)},
                  {{8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "shard: G(0) G(0) -> G(0)",
                                       "partial: R I -> R",
                                   }));
  }

  void divPartialNumeratorOnly() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    ValueId y = b.input("y", {4, 1});
    auto n = b.op("aten::div", {GraphBuilder::tensor("self", x), GraphBuilder::tensor("other", y)},
                  {{4, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "shard: G(0) G(0) -> G(0)",
                                       "shard: G(1) I -> G(1)",
                                       "partial: R I -> R",
                                   }));
    // Rounding each partial is not rounding the sum.
    auto floor = b.op("aten::div",
                      {GraphBuilder::tensor("self", x), GraphBuilder::tensor("other", y),
                       GraphBuilder::constant("rounding_mode", std::string("floor"))},
                      {{4, 8}});
    QCOMPARE(variantLines(b.g, floor).size(), 3);
  }

  void comparisonShardsOnly() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    auto n =
        b.op("aten::gt", {GraphBuilder::tensor("self", x), GraphBuilder::constant("other", 0.0)},
             {{4, 8}}, DType::Bool);
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "shard: G(0) -> G(0)",
                                       "shard: G(1) -> G(1)",
                                   }));
  }

  // Adding bools is a logical or: not a sum of partials.
  void boolAddHasNoPartial() {
    GraphBuilder b;
    ValueId x = b.input("x", {8}, DType::Bool);
    ValueId y = b.input("y", {8}, DType::Bool);
    auto n = b.op("aten::add",
                  {GraphBuilder::tensor("self", x), GraphBuilder::tensor("other", y),
                   GraphBuilder::constant("alpha", int64_t{1})},
                  {{8}}, DType::Bool);
    QCOMPARE(variantLines(b.g, n),
             (QStringList{"replicate: I I -> I", "shard: G(0) G(0) -> G(0)"}));
  }

  // where(cond, a, b) is linear in (a, b) for a fixed condition.
  void whereWithBroadcastCondition() {
    GraphBuilder b;
    ValueId cond = b.input("cond", {4, 1}, DType::Bool);
    ValueId x = b.input("x", {4, 8});
    ValueId y = b.input("y", {4, 8});
    auto n = b.op("aten::where",
                  {GraphBuilder::tensor("condition", cond), GraphBuilder::tensor("self", x),
                   GraphBuilder::tensor("other", y)},
                  {{4, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "shard: G(0) G(0) G(0) -> G(0)",
                                       "shard: I G(1) G(1) -> G(1)",
                                       "partial: I R R -> R",
                                   }));
  }

  void maskedFillPartialOnlyWithZero() {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 4, 4});
    ValueId mask = b.input("mask", {4, 4}, DType::Bool);
    auto inf = b.op("aten::masked_fill",
                    {GraphBuilder::tensor("self", x), GraphBuilder::tensor("mask", mask),
                     GraphBuilder::constant("value", -1e9)},
                    {{2, 4, 4}});
    QCOMPARE(variantLines(b.g, inf), (QStringList{
                                         "replicate: I I -> I",
                                         "shard: G(0) I -> G(0)",
                                         "shard: G(1) G(0) -> G(1)",
                                         "shard: G(2) G(1) -> G(2)",
                                     }));
    auto zero = b.op("aten::masked_fill_",
                     {GraphBuilder::tensor("self", x), GraphBuilder::tensor("mask", mask),
                      GraphBuilder::constant("value", 0.0)},
                     {{2, 4, 4}});
    QCOMPARE(variantLines(b.g, zero).last(), QString("partial: R I -> R"));
  }

  // Casts between floating types pass R (up to rounding); to an integer type they truncate.
  void castsPassPartialBetweenFloatingTypes() {
    GraphBuilder b;
    ValueId x = b.input("x", {4});
    auto half = b.op("aten::to",
                     {GraphBuilder::tensor("self", x), GraphBuilder::constant("dtype", int64_t{5})},
                     {{4}}, DType::Float16);
    QCOMPARE(variantLines(b.g, half),
             (QStringList{"replicate: I -> I", "shard: G(0) -> G(0)", "partial: R -> R"}));
    auto toInt = b.op(
        "aten::to", {GraphBuilder::tensor("self", x), GraphBuilder::constant("dtype", int64_t{4})},
        {{4}}, DType::Int64);
    QCOMPARE(variantLines(b.g, toInt), (QStringList{"replicate: I -> I", "shard: G(0) -> G(0)"}));

    // type_as: `other` gives only the dtype; it is replicated in the partial variant.
    ValueId y = b.input("y", {4}, DType::Float64);
    auto typeAs =
        b.op("aten::type_as", {GraphBuilder::tensor("self", x), GraphBuilder::tensor("other", y)},
             {{4}}, DType::Float64);
    QCOMPARE(variantLines(b.g, typeAs), (QStringList{
                                            "replicate: I I -> I",
                                            "shard: G(0) G(0) -> G(0)",
                                            "partial: R I -> R",
                                        }));
  }

  // copy_ and fill_ produce their source (value) broadcast: linear in it.
  void copyAndFill() {
    GraphBuilder b;
    ValueId dst = b.input("dst", {4, 8});
    ValueId src = b.input("src", {8});
    auto copy = b.op("aten::copy_",
                     {GraphBuilder::tensor("self", dst), GraphBuilder::tensor("src", src),
                      GraphBuilder::constant("non_blocking", false)},
                     {{4, 8}});
    QCOMPARE(variantLines(b.g, copy), (QStringList{
                                          "replicate: I I -> I",
                                          "shard: G(0) I -> G(0)",
                                          "shard: G(1) G(0) -> G(1)",
                                          "partial: R R -> R",
                                      }));
    auto fill =
        b.op("aten::fill_",
             {GraphBuilder::tensor("self", dst), GraphBuilder::constant("value", 1.0)}, {{4, 8}});
    QCOMPARE(variantLines(b.g, fill).size(), 3);  // no partial: 1 would be added per device
    auto zero = b.op("aten::zero_", {GraphBuilder::tensor("self", dst)}, {{4, 8}});
    QCOMPARE(variantLines(b.g, zero).last(), QString("partial: R -> R"));
  }

  // tril/triu depend on positions in the last two dimensions: only batch dimensions shard.
  void triangleShardsBatchDims() {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 3, 8, 8});
    auto n = b.op("aten::triu",
                  {GraphBuilder::tensor("self", x), GraphBuilder::constant("diagonal", int64_t{1})},
                  {{2, 3, 8, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "shard: G(0) -> G(0)",
                                       "shard: G(1) -> G(1)",
                                       "partial: R -> R",
                                   }));
  }
};

QTEST_GUILESS_MAIN(TstRulesElementwise)
#include "tst_rules_elementwise.moc"
