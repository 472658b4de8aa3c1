// Golden tests of the indexing family: topk/sort/cumulative ops along one dimension, one_hot,
// gather, index_select and scatter (the MoE gating ops of bert_moe among them).
#include <QtTest>

#include <cstdint>
#include <string>

#include "tests/engine/rules/rule_test_util.h"

using hap::ir::Arg;
using hap::ir::DType;
using hap::ir::NodeId;
using hap::ir::ValueId;
using hap::test::GraphBuilder;
using hap::test::variantLines;
using B = GraphBuilder;

namespace {

Arg num(const std::string& name, int64_t v) {
  return B::constant(name, v);
}

}  // namespace

class TestRulesIndexing : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // The MoE gate picks the top-2 experts of each token along the last dimension.
  void topk() {
    GraphBuilder b;
    ValueId logits = b.input("logits", {4, 16, 4});
    NodeId n = b.op("aten::topk",
                    {B::tensor("self", logits), num("k", 2), num("dim", -1),
                     B::constant("largest", true), B::constant("sorted", true)},
                    {{4, 16, 2}, {4, 16, 2}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I I",
                                       "dim0: G(0) -> G(0) G(0)",
                                       "dim1: G(1) -> G(1) G(1)",
                                   }));
  }

  void sortAndArgsort() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 4});
    NodeId sort =
        b.op("aten::sort", {B::tensor("self", x), num("dim", 1), B::constant("descending", false)},
             {{4, 16, 4}, {4, 16, 4}});
    QCOMPARE(variantLines(b.g, sort), (QStringList{
                                          "replicate: I -> I I",
                                          "dim0: G(0) -> G(0) G(0)",
                                          "dim2: G(2) -> G(2) G(2)",
                                      }));
    NodeId argsort = b.op("aten::argsort", {B::tensor("self", x), B::constant("descending", true)},
                          {{4, 16, 4}}, DType::Int64);  // dim defaults to -1
    QCOMPARE(variantLines(b.g, argsort), (QStringList{
                                             "replicate: I -> I",
                                             "dim0: G(0) -> G(0)",
                                             "dim1: G(1) -> G(1)",
                                         }));
  }

  // Positions of tokens in their expert's queue: a running count over the sequence.
  void cumulative() {
    GraphBuilder b;
    ValueId mask = b.input("mask", {4, 16, 4}, DType::Int64);
    NodeId sum =
        b.op("aten::cumsum",
             {B::tensor("self", mask), num("dim", 1), B::constant("dtype", std::monostate{})},
             {{4, 16, 4}}, DType::Int64);
    QCOMPARE(variantLines(b.g, sum), (QStringList{
                                         "replicate: I -> I",
                                         "dim0: G(0) -> G(0)",
                                         "dim2: G(2) -> G(2)",
                                         "partial: R -> R",
                                     }));
    NodeId prod =
        b.op("aten::cumprod",
             {B::tensor("self", mask), num("dim", 2), B::constant("dtype", std::monostate{})},
             {{4, 16, 4}}, DType::Int64);
    QCOMPARE(variantLines(b.g, prod), (QStringList{
                                          "replicate: I -> I",
                                          "dim0: G(0) -> G(0)",
                                          "dim1: G(1) -> G(1)",
                                      }));
  }

  void oneHot() {
    GraphBuilder b;
    ValueId experts = b.input("experts", {4, 16}, DType::Int64);
    NodeId n = b.op("aten::one_hot", {B::tensor("self", experts), num("num_classes", 4)},
                    {{4, 16, 4}}, DType::Int64);
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "dim0: G(0) -> G(0)",
                                       "dim1: G(1) -> G(1)",
                                   }));
    // The class count from the data would differ per device.
    NodeId inferred = b.op("aten::one_hot", {B::tensor("self", experts), num("num_classes", -1)},
                           {{4, 16, 4}}, DType::Int64);
    QCOMPARE(variantLines(b.g, inferred), QStringList{"replicate: I -> I"});
  }

  void gather() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 8});
    ValueId index = b.input("index", {4, 16, 2}, DType::Int64);
    NodeId n = b.op("aten::gather",
                    {B::tensor("self", x), num("dim", 2), B::tensor("index", index),
                     B::constant("sparse_grad", false)},
                    {{4, 16, 2}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "dim0: G(0) G(0) -> G(0)",
                                       "dim1: G(1) G(1) -> G(1)",
                                       "index: I G(2) -> G(2)",
                                       "partial: R I -> R",
                                   }));
    // An index shorter than self along 1 reads self's first 10 rows: no split there.
    ValueId shorter = b.input("shorter", {4, 10, 8}, DType::Int64);
    NodeId m = b.op("aten::gather",
                    {B::tensor("self", x), num("dim", 2), B::tensor("index", shorter),
                     B::constant("sparse_grad", false)},
                    {{4, 10, 8}});
    QCOMPARE(variantLines(b.g, m), (QStringList{
                                       "replicate: I I -> I",
                                       "dim0: G(0) G(0) -> G(0)",
                                       "index: I G(2) -> G(2)",
                                       "partial: R I -> R",
                                   }));
  }

  void indexSelect() {
    GraphBuilder b;
    ValueId table = b.param("table", {10, 32});
    ValueId index = b.input("index", {6}, DType::Int64);
    NodeId n =
        b.op("aten::index_select",
             {B::tensor("self", table), num("dim", 0), B::tensor("index", index)}, {{6, 32}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "dim1: G(1) I -> G(1)",
                                       "index: I G(0) -> G(0)",
                                       "partial: R I -> R",
                                   }));
  }

  void scatter() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    ValueId index = b.input("index", {4, 8}, DType::Int64);
    ValueId src = b.input("src", {4, 8});
    NodeId add = b.op(
        "aten::scatter_add",
        {B::tensor("self", x), num("dim", 1), B::tensor("index", index), B::tensor("src", src)},
        {{4, 8}});
    QCOMPARE(variantLines(b.g, add), (QStringList{
                                         "replicate: I I I -> I",
                                         "dim0: G(0) G(0) G(0) -> G(0)",
                                         "partial: R I R -> R",
                                     }));
    NodeId fill = b.op(
        "aten::scatter",
        {B::tensor("self", x), num("dim", 1), B::tensor("index", index), B::constant("value", 1.0)},
        {{4, 8}});
    QCOMPARE(variantLines(b.g, fill), (QStringList{
                                          "replicate: I I -> I",
                                          "dim0: G(0) G(0) -> G(0)",
                                      }));
    // An index with fewer rows than self writes only self's first rows: no split.
    ValueId rows = b.input("rows", {2, 8}, DType::Int64);
    ValueId rowSrc = b.input("row_src", {2, 8});
    NodeId partial = b.op(
        "aten::scatter_add",
        {B::tensor("self", x), num("dim", 1), B::tensor("index", rows), B::tensor("src", rowSrc)},
        {{4, 8}});
    QCOMPARE(variantLines(b.g, partial), (QStringList{
                                             "replicate: I I I -> I",
                                             "partial: R I R -> R",
                                         }));
  }
};

QTEST_GUILESS_MAIN(TestRulesIndexing)
#include "tst_rules_indexing.moc"
