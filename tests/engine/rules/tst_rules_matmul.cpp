// Golden tests of the matmul family: linear's parallel forms and SFB, matmul/mm/bmm/mv/dot by
// index algebra (broadcasting, 1-D operands, attention), addmm/baddbmm addends, einsum (the MoE
// equations, ellipses, implicit output) and the einsum analyser itself.
#include <QtTest>

#include <cstdint>
#include <string>

#include "engine/rules/einsum.h"
#include "tests/engine/rules/rule_test_util.h"

using hap::ir::NodeId;
using hap::ir::ValueId;
using hap::test::GraphBuilder;
using hap::test::variantLines;
using B = GraphBuilder;

namespace {

ValueId activation(GraphBuilder& b, const hap::ir::Shape& shape) {
  // An activation produced by a node with no rule (its own variants do not matter here).
  return b.out(b.op("test::source", {}, {shape}));
}

}  // namespace

class TestRulesMatmul : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void linear3dWithBias() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 32});
    ValueId w = b.param("fc.weight", {64, 32});
    ValueId bias = b.param("fc.bias", {64});
    NodeId n = b.op("aten::linear",
                    {B::tensor("input", x), B::tensor("weight", w), B::tensor("bias", bias)},
                    {{4, 16, 64}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "batch: G(0) I I -> G(0)",
                                       "batch+sfb: G(0) I* I -> G(0) [sfb]",
                                       "seq: G(1) I I -> G(1)",
                                       "seq+sfb: G(1) I* I -> G(1) [sfb]",
                                       "column: I G(0) G(0) -> G(2)",
                                       "row: G(2) G(1) R -> R",
                                       "partial: R I R -> R",
                                   }));
  }

  void linear2dWithoutBias() {
    GraphBuilder b;
    ValueId x = b.input("x", {8, 16});
    ValueId w = b.param("fc.weight", {4, 16});
    NodeId n =
        b.op("aten::linear",
             {B::tensor("input", x), B::tensor("weight", w), B::constant("bias", std::monostate{})},
             {{8, 4}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "batch: G(0) I -> G(0)",
                                       "batch+sfb: G(0) I* -> G(0) [sfb]",
                                       "column: I G(0) -> G(1)",
                                       "row: G(1) G(1) -> R",
                                       "partial: R I -> R",
                                   }));
  }

  // SFB broadcasts the factors of a parameter's gradient: an activation weight has none.
  void linearActivationWeightHasNoSfb() {
    GraphBuilder b;
    ValueId x = b.input("x", {8, 16});
    ValueId w = activation(b, {4, 16});
    NodeId n =
        b.op("aten::linear",
             {B::tensor("input", x), B::tensor("weight", w), B::constant("bias", std::monostate{})},
             {{8, 4}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "batch: G(0) I -> G(0)",
                                       "column: I G(0) -> G(1)",
                                       "row: G(1) G(1) -> R",
                                       "partial: R I -> R",
                                   }));
  }

  void linear1dInput() {
    GraphBuilder b;
    ValueId x = b.input("x", {16});
    ValueId w = b.param("fc.weight", {4, 16});
    ValueId bias = b.param("fc.bias", {4});
    NodeId n =
        b.op("aten::linear",
             {B::tensor("input", x), B::tensor("weight", w), B::tensor("bias", bias)}, {{4}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "column: I G(0) G(0) -> G(0)",
                                       "row: G(0) G(1) R -> R",
                                       "partial: R I R -> R",
                                   }));
  }

  // A length-1 dimension is never split.
  void linearSingleRowAndFeature() {
    GraphBuilder b;
    ValueId x = b.input("x", {1, 16});
    ValueId w = b.param("fc.weight", {1, 16});
    NodeId n =
        b.op("aten::linear",
             {B::tensor("input", x), B::tensor("weight", w), B::constant("bias", std::monostate{})},
             {{1, 1}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "row: G(1) G(1) -> R",
                                       "partial: R I -> R",
                                   }));
  }

  // Attention scores q·kᵀ: [B, h, S, d] × [B, h, d, S].
  void matmulAttentionScores() {
    GraphBuilder b;
    ValueId q = b.input("q", {4, 2, 16, 8});
    ValueId k = b.input("kT", {4, 2, 8, 16});
    NodeId n =
        b.op("aten::matmul", {B::tensor("self", q), B::tensor("other", k)}, {{4, 2, 16, 16}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "batch: G(0) G(0) -> G(0)",
                                       "batch: G(1) G(1) -> G(1)",
                                       "row: G(2) I -> G(2)",
                                       "col: I G(3) -> G(3)",
                                       "inner: G(3) G(2) -> R",
                                       "partial: R I -> R",
                                       "partial: I R -> R",
                                   }));
  }

  // The MoE gate: [B, S, D] × [D, E]; the weight has no batch dimensions.
  void matmulBroadcastsMissingBatchDims() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 32});
    ValueId w = b.param("gate", {32, 4});
    NodeId n = b.op("aten::matmul", {B::tensor("self", x), B::tensor("other", w)}, {{4, 16, 4}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "batch: G(0) I -> G(0)",
                                       "row: G(1) I -> G(1)",
                                       "col: I G(1) -> G(2)",
                                       "inner: G(2) G(0) -> R",
                                       "partial: R I -> R",
                                       "partial: I R -> R",
                                   }));
  }

  // A batch dimension of length 1 broadcasts: that operand is needed whole.
  void matmulBroadcastsLengthOneBatchDims() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 1, 8, 16});
    ValueId y = b.input("y", {1, 3, 16, 8});
    NodeId n = b.op("aten::matmul", {B::tensor("self", x), B::tensor("other", y)}, {{4, 3, 8, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "batch: G(0) I -> G(0)",
                                       "batch: I G(1) -> G(1)",
                                       "row: G(2) I -> G(2)",
                                       "col: I G(3) -> G(3)",
                                       "inner: G(3) G(2) -> R",
                                       "partial: R I -> R",
                                       "partial: I R -> R",
                                   }));
  }

  void matmulVectorOperands() {
    GraphBuilder b;
    ValueId v = b.input("v", {16});
    ValueId m = b.input("m", {4, 16, 8});
    NodeId vm = b.op("aten::matmul", {B::tensor("self", v), B::tensor("other", m)}, {{4, 8}});
    QCOMPARE(variantLines(b.g, vm), (QStringList{
                                        "replicate: I I -> I",
                                        "batch: I G(0) -> G(0)",
                                        "col: I G(2) -> G(1)",
                                        "inner: G(0) G(1) -> R",
                                        "partial: R I -> R",
                                        "partial: I R -> R",
                                    }));
    ValueId a = b.input("a", {8, 16});
    NodeId mv = b.op("aten::mv", {B::tensor("self", a), B::tensor("vec", v)}, {{8}});
    QCOMPARE(variantLines(b.g, mv), (QStringList{
                                        "replicate: I I -> I",
                                        "row: G(0) I -> G(0)",
                                        "inner: G(1) G(0) -> R",
                                        "partial: R I -> R",
                                        "partial: I R -> R",
                                    }));
    NodeId dot = b.op("aten::dot", {B::tensor("self", v), B::tensor("tensor", v)}, {{}});
    QCOMPARE(variantLines(b.g, dot), (QStringList{
                                         "replicate: I I -> I",
                                         "inner: G(0) G(0) -> R",
                                         "partial: R I -> R",
                                         "partial: I R -> R",
                                     }));
  }

  void bmmAndMm() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8, 16});
    ValueId y = b.input("y", {4, 16, 32});
    NodeId bmm = b.op("aten::bmm", {B::tensor("self", x), B::tensor("mat2", y)}, {{4, 8, 32}});
    QCOMPARE(variantLines(b.g, bmm), (QStringList{
                                         "replicate: I I -> I",
                                         "batch: G(0) G(0) -> G(0)",
                                         "row: G(1) I -> G(1)",
                                         "col: I G(2) -> G(2)",
                                         "inner: G(2) G(1) -> R",
                                         "partial: R I -> R",
                                         "partial: I R -> R",
                                     }));
    ValueId p = b.input("p", {8, 16});
    ValueId q = b.input("q", {16, 32});
    NodeId mm = b.op("aten::mm", {B::tensor("self", p), B::tensor("mat2", q)}, {{8, 32}});
    QCOMPARE(variantLines(b.g, mm), (QStringList{
                                        "replicate: I I -> I",
                                        "row: G(0) I -> G(0)",
                                        "col: I G(1) -> G(1)",
                                        "inner: G(1) G(0) -> R",
                                        "partial: R I -> R",
                                        "partial: I R -> R",
                                    }));
  }

  void outer() {
    GraphBuilder b;
    ValueId u = b.input("u", {8});
    ValueId v = b.input("v", {4});
    NodeId n = b.op("aten::outer", {B::tensor("self", u), B::tensor("vec2", v)}, {{8, 4}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "row: G(0) I -> G(0)",
                                       "col: I G(0) -> G(1)",
                                       "partial: R I -> R",
                                       "partial: I R -> R",
                                   }));
  }

  // addmm(self, mat1, mat2): a bias-like addend is whole for split rows, split with the columns,
  // and added once (R) to partial products.
  void addmmBroadcastAddend() {
    GraphBuilder b;
    ValueId bias = b.param("bias", {32});
    ValueId x = b.input("x", {8, 16});
    ValueId w = b.param("w", {16, 32});
    NodeId n = b.op("aten::addmm",
                    {B::tensor("self", bias), B::tensor("mat1", x), B::tensor("mat2", w),
                     B::constant("beta", int64_t{1}), B::constant("alpha", int64_t{1})},
                    {{8, 32}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "row: I G(0) I -> G(0)",
                                       "col: G(0) I G(1) -> G(1)",
                                       "inner: R G(1) G(0) -> R",
                                       "partial: R R I -> R",
                                       "partial: R I R -> R",
                                   }));
  }

  void baddbmmFullAddend() {
    GraphBuilder b;
    ValueId c = b.input("c", {4, 8, 32});
    ValueId x = b.input("x", {4, 8, 16});
    ValueId y = b.input("y", {4, 16, 32});
    NodeId n = b.op("aten::baddbmm",
                    {B::tensor("self", c), B::tensor("batch1", x), B::tensor("batch2", y),
                     B::constant("beta", int64_t{1}), B::constant("alpha", int64_t{1})},
                    {{4, 8, 32}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "batch: G(0) G(0) G(0) -> G(0)",
                                       "row: G(1) G(1) I -> G(1)",
                                       "col: G(2) I G(2) -> G(2)",
                                       "inner: R G(2) G(1) -> R",
                                       "partial: R R I -> R",
                                       "partial: R I R -> R",
                                   }));
  }

  // The four einsums of a top-2 MoE layer (bert_moe): dispatch, two expert FFN products with
  // expert parallelism as the batch index e, combine.
  void einsumMoeDispatch() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 32});
    ValueId dispatch = b.input("dispatch", {4, 16, 4, 8});
    NodeId n = einsum(b, "bsd,bsec->becd", {x, dispatch}, {4, 4, 8, 32});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "batch(b): G(0) G(0) -> G(0)",
                                       "free(e): I G(2) -> G(1)",
                                       "free(c): I G(3) -> G(2)",
                                       "free(d): G(2) I -> G(3)",
                                       "contract(s): G(1) G(1) -> R",
                                       "partial: R I -> R",
                                       "partial: I R -> R",
                                   }));
  }

  void einsumMoeExperts() {
    GraphBuilder b;
    ValueId w1 = b.param("experts.w1", {4, 32, 48});
    ValueId in = b.input("in", {4, 4, 8, 32});
    NodeId up = einsum(b, "edh,becd->bech", {w1, in}, {4, 4, 8, 48});
    QCOMPARE(variantLines(b.g, up), (QStringList{
                                        "replicate: I I -> I",
                                        "free(b): I G(0) -> G(0)",
                                        "batch(e): G(0) G(1) -> G(1)",
                                        "free(c): I G(2) -> G(2)",
                                        "free(h): G(2) I -> G(3)",
                                        "contract(d): G(1) G(3) -> R",
                                        "partial: R I -> R",
                                        "partial: I R -> R",
                                    }));
    ValueId w2 = b.param("experts.w2", {4, 48, 32});
    NodeId down = einsum(b, "ehd,bech->becd", {w2, b.out(up)}, {4, 4, 8, 32});
    QCOMPARE(variantLines(b.g, down), (QStringList{
                                          "replicate: I I -> I",
                                          "free(b): I G(0) -> G(0)",
                                          "batch(e): G(0) G(1) -> G(1)",
                                          "free(c): I G(2) -> G(2)",
                                          "free(d): G(2) I -> G(3)",
                                          "contract(h): G(1) G(3) -> R",
                                          "partial: R I -> R",
                                          "partial: I R -> R",
                                      }));
  }

  void einsumMoeCombine() {
    GraphBuilder b;
    ValueId y = b.input("y", {4, 4, 8, 32});
    ValueId combine = b.input("combine", {4, 16, 4, 8});
    NodeId n = einsum(b, "becd,bsec->bsd", {y, combine}, {4, 16, 32});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "batch(b): G(0) G(0) -> G(0)",
                                       "free(s): I G(1) -> G(1)",
                                       "free(d): G(3) I -> G(2)",
                                       "contract(e): G(1) G(2) -> R",
                                       "contract(c): G(2) G(3) -> R",
                                       "partial: R I -> R",
                                       "partial: I R -> R",
                                   }));
  }

  // Spaces, an ellipsis that broadcasts, an implicit output, a single operand.
  void einsumForms() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8, 16});
    ValueId y = b.input("y", {16, 2});
    NodeId ellipsis = einsum(b, " ...ij , jk -> ...ik", {x, y}, {4, 8, 2});
    QCOMPARE(variantLines(b.g, ellipsis), (QStringList{
                                              "replicate: I I -> I",
                                              "free(...0): G(0) I -> G(0)",
                                              "free(i): G(1) I -> G(1)",
                                              "free(k): I G(1) -> G(2)",
                                              "contract(j): G(2) G(0) -> R",
                                              "partial: R I -> R",
                                              "partial: I R -> R",
                                          }));
    ValueId p = b.input("p", {8, 16});
    ValueId q = b.input("q", {16, 2});
    NodeId implicit = einsum(b, "kj,ji", {p, q}, {2, 8});  // output "ik": alphabetical
    QCOMPARE(variantLines(b.g, implicit), (QStringList{
                                              "replicate: I I -> I",
                                              "free(i): I G(1) -> G(0)",
                                              "free(k): G(0) I -> G(1)",
                                              "contract(j): G(1) G(0) -> R",
                                              "partial: R I -> R",
                                              "partial: I R -> R",
                                          }));
    NodeId rowSums = einsum(b, "ij->i", {p}, {8});
    QCOMPARE(variantLines(b.g, rowSums), (QStringList{
                                             "replicate: I -> I",
                                             "free(i): G(0) -> G(0)",
                                             "contract(j): G(1) -> R",
                                             "partial: R -> R",
                                         }));
  }

  // An equation that does not fit the shapes, or an operand's diagonal: no split.
  void einsumRefusals() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    ValueId y = b.input("y", {16, 2});
    NodeId mismatch = einsum(b, "ij,jk->ik", {x, y}, {4, 2});
    QCOMPARE(variantLines(b.g, mismatch), QStringList{"replicate: I I -> I"});
    NodeId wrongOutput = einsum(b, "ij->ij", {x}, {8, 4});
    QCOMPARE(variantLines(b.g, wrongOutput), QStringList{"replicate: I -> I"});
    ValueId square = b.input("square", {8, 8});
    NodeId diagonal = einsum(b, "ii->i", {square}, {8});
    QCOMPARE(variantLines(b.g, diagonal), (QStringList{"replicate: I -> I", "partial: R -> R"}));
  }

  void analyzer() {
    using hap::rules::analyzeEinsum;
    using Kind = hap::rules::EinsumIndex::Kind;
    auto indices = analyzeEinsum("b...i,bij->b...j", {{2, 3, 5, 4}, {2, 4, 6}}, {2, 3, 5, 6});
    QVERIFY(indices.has_value());
    QCOMPARE(indices->size(), size_t{5});
    const auto& e = *indices;
    QCOMPARE(e[0].label, std::string("b"));
    QCOMPARE(e[0].kind, Kind::Batch);
    QCOMPARE(e[0].operandDims, (std::vector<int>{0, 0}));
    QCOMPARE(e[1].label, std::string("...0"));
    QCOMPARE(e[1].kind, Kind::Free);
    QCOMPARE(e[1].operandDims, (std::vector<int>{1, -1}));
    QCOMPARE(e[2].label, std::string("...1"));
    QCOMPARE(e[2].outputDim, 2);
    QCOMPARE(e[3].label, std::string("j"));
    QCOMPARE(e[3].operandDims, (std::vector<int>{-1, 2}));
    QCOMPARE(e[4].label, std::string("i"));
    QCOMPARE(e[4].kind, Kind::Contract);
    QCOMPARE(e[4].outputDim, -1);
    QCOMPARE(e[4].operandDims, (std::vector<int>{3, 1}));
    QVERIFY(!analyzeEinsum("ij,jk->ik", {{2, 3}}, {2, 3}).has_value());  // operand count
    QVERIFY(!analyzeEinsum("i.j->ij", {{2, 3}}, {2, 3}).has_value());    // stray character
    QVERIFY(!analyzeEinsum("ij->ii", {{2, 2}}, {2, 2}).has_value());     // repeated output
    QVERIFY(!analyzeEinsum("ij->k", {{2, 3}}, {4}).has_value());         // unknown label
    QVERIFY(!analyzeEinsum("...i...->i", {{2, 3}}, {3}).has_value());    // two ellipses
  }

 private:
  static NodeId einsum(GraphBuilder& b, const std::string& equation, std::vector<ValueId> operands,
                       hap::ir::Shape out) {
    return b.op("aten::einsum",
                {B::constant("equation", equation), B::list("tensors", std::move(operands)),
                 B::constant("path", std::monostate{})},
                {std::move(out)});
  }
};

QTEST_GUILESS_MAIN(TestRulesMatmul)
#include "tst_rules_matmul.moc"
