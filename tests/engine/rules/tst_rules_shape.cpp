// Golden tests of the shape family and its view algebra: views that split and merge dimensions
// (granularity), flatten/squeeze/unsqueeze, permutations, expand/repeat, copies,
// select/slice, cat/stack, chunk/split/unbind.
#include <QtTest>

#include <cstdint>
#include <limits>
#include <string>

#include "engine/rules/families.h"
#include "engine/rules/view_algebra.h"
#include "tests/engine/rules/rule_test_util.h"

using hap::ir::NodeId;
using hap::ir::Shape;
using hap::ir::ValueId;
using hap::test::GraphBuilder;
using hap::test::variantLines;
using B = GraphBuilder;

namespace {

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();  // slice's "to the end"

// "G(in)->G(out)" per link, for compact view algebra goldens.
QStringList links(const Shape& in, const Shape& out) {
  QStringList s;
  for (hap::rules::DimLink l : hap::rules::viewDimLinks(in, out))
    s << QStringLiteral("%1->%2").arg(l.in).arg(l.out);
  return s;
}

NodeId unary(GraphBuilder& b, const std::string& op, ValueId x, std::vector<hap::ir::Arg> consts,
             std::vector<Shape> outs) {
  std::vector<hap::ir::Arg> args{B::tensor("self", x)};
  for (auto& a : consts) args.push_back(std::move(a));
  return b.op(op, std::move(args), std::move(outs));
}

hap::ir::Arg ints(const std::string& name, std::vector<int64_t> v) {
  return B::constant(name, std::move(v));
}
hap::ir::Arg num(const std::string& name, int64_t v) {
  return B::constant(name, v);
}

}  // namespace

class TestRulesShape : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void viewAlgebra() {
    QCOMPARE(links({4, 16, 32}, {4, 16, 2, 16}), (QStringList{"0->0", "1->1", "2->2"}));
    QCOMPARE(links({4, 16, 2, 16}, {4, 16, 32}), (QStringList{"0->0", "1->1", "2->2"}));
    QCOMPARE(links({4, 16, 128}, {64, 128}), (QStringList{"0->0", "2->1"}));
    QCOMPARE(links({64, 128}, {4, 16, 128}), (QStringList{"0->0", "1->2"}));
    QCOMPARE(links({6, 4}, {3, 8}), QStringList{"0->0"});  // 3 output rows = 6 input rows
    QCOMPARE(links({6, 4}, {4, 6}), QStringList{});        // rows straddle
    QCOMPARE(links({4, 1, 32}, {4, 32, 1}), (QStringList{"0->0", "2->1"}));
    QCOMPARE(links({1, 1}, {1}), QStringList{});
    QCOMPARE(links({4, 0}, {0, 4}), QStringList{});
    QCOMPARE(links({4, 6}, {4, 5}), QStringList{});  // not a view
  }

  // Attention heads: E viewed as [heads, head size] links E with heads (E is then cut at
  // multiples of the head size); the head size itself cannot be split.
  void viewSplitsHeads() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 32});
    NodeId n = unary(b, "aten::view", x, {ints("size", {-1, 16, 2, 16})}, {{4, 16, 2, 16}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "dim0: G(0) -> G(0)",
                                       "dim1: G(1) -> G(1)",
                                       "dim2: G(2) -> G(2)",
                                       "partial: R -> R",
                                   }));
    const auto variants = hap::rules::variantsFor(b.g, b.g.node(n));
    QCOMPARE(variants[3].note, std::string("size arguments use local lengths"));
    QCOMPARE(variants[4].note, std::string());
    QCOMPARE(hap::test::executionNames(b.g, n),
             (QStringList{"plain", "reshape-to-piece", "reshape-to-piece", "reshape-to-piece",
                          "plain"}));
    QVERIFY(hap::rules::isViewOp("aten::view") && hap::rules::isViewOp("aten::squeeze_"));
    QVERIFY(!hap::rules::isViewOp("aten::permute") && !hap::rules::isViewOp("aten::expand"));

    NodeId back = unary(b, "aten::reshape", b.out(n), {ints("shape", {-1, 16, 32})}, {{4, 16, 32}});
    QCOMPARE(variantLines(b.g, back), (QStringList{
                                          "replicate: I -> I",
                                          "dim0: G(0) -> G(0)",
                                          "dim1: G(1) -> G(1)",
                                          "dim2: G(2) -> G(2)",
                                          "partial: R -> R",
                                      }));
  }

  // Merging [B, S] keeps B's split (B·S cut at multiples of S), never S's.
  void reshapeMergesAndSplitsTokens() {
    GraphBuilder b;
    ValueId logits = b.input("logits", {4, 16, 128});
    NodeId merge = unary(b, "aten::reshape", logits, {ints("shape", {-1, 128})}, {{64, 128}});
    QCOMPARE(variantLines(b.g, merge), (QStringList{
                                           "replicate: I -> I",
                                           "dim0: G(0) -> G(0)",
                                           "dim2: G(2) -> G(1)",
                                           "partial: R -> R",
                                       }));
    NodeId split =
        unary(b, "aten::view", b.out(merge), {ints("size", {4, 16, 128})}, {{4, 16, 128}});
    QCOMPARE(variantLines(b.g, split), (QStringList{
                                           "replicate: I -> I",
                                           "dim0: G(0) -> G(0)",
                                           "dim1: G(1) -> G(2)",
                                           "partial: R -> R",
                                       }));
    ValueId labels = b.input("labels", {4, 16}, hap::ir::DType::Int64);
    NodeId flat = unary(b, "aten::reshape", labels, {ints("shape", {-1})}, {{64}});
    QCOMPARE(variantLines(b.g, flat),
             (QStringList{"replicate: I -> I", "dim0: G(0) -> G(0)", "partial: R -> R"}));
    ValueId odd = b.input("odd", {6, 4});
    NodeId straddle = unary(b, "aten::view", odd, {ints("size", {4, 6})}, {{4, 6}});
    QCOMPARE(variantLines(b.g, straddle), (QStringList{"replicate: I -> I", "partial: R -> R"}));
  }

  void flattenSqueezeUnsqueeze() {
    GraphBuilder b;
    ValueId patches = b.input("patches", {4, 32, 4, 4});
    NodeId vit = unary(b, "aten::flatten", patches, {num("start_dim", 2), num("end_dim", -1)},
                       {{4, 32, 16}});
    QCOMPARE(variantLines(b.g, vit), (QStringList{
                                         "replicate: I -> I",
                                         "dim0: G(0) -> G(0)",
                                         "dim1: G(1) -> G(1)",
                                         "dim2: G(2) -> G(2)",
                                         "partial: R -> R",
                                     }));
    QCOMPARE(hap::rules::variantsFor(b.g, b.g.node(vit))[1].note, std::string());
    ValueId features = b.input("features", {4, 32, 2, 2});
    NodeId vgg =
        unary(b, "aten::flatten", features, {num("start_dim", 1), num("end_dim", -1)}, {{4, 128}});
    QCOMPARE(variantLines(b.g, vgg), (QStringList{
                                         "replicate: I -> I",
                                         "dim0: G(0) -> G(0)",
                                         "dim1: G(1) -> G(1)",
                                         "partial: R -> R",
                                     }));
    ValueId x = b.input("x", {4, 16});
    NodeId unsq = unary(b, "aten::unsqueeze", x, {num("dim", -1)}, {{4, 16, 1}});
    QCOMPARE(variantLines(b.g, unsq), (QStringList{
                                          "replicate: I -> I",
                                          "dim0: G(0) -> G(0)",
                                          "dim1: G(1) -> G(1)",
                                          "partial: R -> R",
                                      }));
    ValueId y = b.input("y", {4, 1, 32});
    NodeId sq = unary(b, "aten::squeeze", y, {num("dim", 1)}, {{4, 32}});
    QCOMPARE(variantLines(b.g, sq), (QStringList{
                                        "replicate: I -> I",
                                        "dim0: G(0) -> G(0)",
                                        "dim2: G(2) -> G(1)",
                                        "partial: R -> R",
                                    }));
    // squeeze() would also drop a device's piece of length 1.
    ValueId pooled = b.input("pooled", {4, 32, 1, 1});
    NodeId all = unary(b, "aten::squeeze", pooled, {}, {{4, 32}});
    QCOMPARE(variantLines(b.g, all), (QStringList{
                                         "replicate: I -> I",
                                         "dim0: G(0) -> G(0)",
                                         "dim1: G(1) -> G(1)",
                                         "partial: R -> R",
                                     }));
    QCOMPARE(hap::rules::variantsFor(b.g, b.g.node(all))[1].note,
             std::string("squeeze only the reference's length-1 dimensions"));
  }

  void permutations() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 2, 16});
    NodeId tr = unary(b, "aten::transpose", x, {num("dim0", 1), num("dim1", 2)}, {{4, 2, 16, 16}});
    QCOMPARE(variantLines(b.g, tr), (QStringList{
                                        "replicate: I -> I",
                                        "dim0: G(0) -> G(0)",
                                        "dim1: G(1) -> G(2)",
                                        "dim2: G(2) -> G(1)",
                                        "dim3: G(3) -> G(3)",
                                        "partial: R -> R",
                                    }));
    ValueId y = b.input("y", {4, 16, 32});
    NodeId perm = unary(b, "aten::permute", y, {ints("dims", {2, 0, -2})}, {{32, 4, 16}});
    QCOMPARE(variantLines(b.g, perm), (QStringList{
                                          "replicate: I -> I",
                                          "dim0: G(0) -> G(1)",
                                          "dim1: G(1) -> G(2)",
                                          "dim2: G(2) -> G(0)",
                                          "partial: R -> R",
                                      }));
    ValueId w = b.param("w", {8, 16});
    NodeId t = unary(b, "aten::t", w, {}, {{16, 8}});
    QCOMPARE(variantLines(b.g, t), (QStringList{
                                       "replicate: I -> I",
                                       "dim0: G(0) -> G(1)",
                                       "dim1: G(1) -> G(0)",
                                       "partial: R -> R",
                                   }));
    ValueId z = b.input("z", {2, 3, 4});
    NodeId moved =
        unary(b, "aten::movedim", z, {num("source", 0), num("destination", -1)}, {{3, 4, 2}});
    QCOMPARE(variantLines(b.g, moved), (QStringList{
                                           "replicate: I -> I",
                                           "dim0: G(0) -> G(2)",
                                           "dim1: G(1) -> G(0)",
                                           "dim2: G(2) -> G(1)",
                                           "partial: R -> R",
                                       }));
  }

  // ViT's class token [1, 1, E] expanded over the batch: only E can be split.
  void expandClassToken() {
    GraphBuilder b;
    ValueId cls = b.param("cls_token", {1, 1, 32});
    NodeId n = unary(b, "aten::expand", cls,
                     {ints("size", {4, -1, -1}), B::constant("implicit", false)}, {{4, 1, 32}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I -> I",
                                       "dim2: G(2) -> G(2)",
                                       "partial: R -> R",
                                   }));
    QCOMPARE(hap::test::executionNames(b.g, n), (QStringList{"plain", "expand-to-piece", "plain"}));
    ValueId mask = b.input("mask", {4, 1});
    ValueId scores = b.input("scores", {2, 4, 8});
    NodeId as =
        b.op("aten::expand_as", {B::tensor("self", mask), B::tensor("other", scores)}, {{2, 4, 8}});
    QCOMPARE(variantLines(b.g, as), (QStringList{
                                        "replicate: I I -> I",
                                        "dim0: G(0) G(1) -> G(1)",
                                        "partial: R I -> R",
                                    }));
  }

  void repeatAndCopies() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8});
    NodeId tiled = unary(b, "aten::repeat", x, {ints("repeats", {2, 1, 3})}, {{2, 4, 24}});
    QCOMPARE(variantLines(b.g, tiled),
             (QStringList{"replicate: I -> I", "dim0: G(0) -> G(1)", "partial: R -> R"}));
    NodeId copy = unary(b, "aten::contiguous", x, {num("memory_format", 0)}, {{4, 8}});
    QCOMPARE(variantLines(b.g, copy), (QStringList{
                                          "replicate: I -> I",
                                          "dim0: G(0) -> G(0)",
                                          "dim1: G(1) -> G(1)",
                                          "partial: R -> R",
                                      }));
  }

  void selectAndSlice() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 17, 32});
    NodeId sel = unary(b, "aten::select", x, {num("dim", 1), num("index", 0)}, {{4, 32}});
    QCOMPARE(variantLines(b.g, sel), (QStringList{
                                         "replicate: I -> I",
                                         "dim0: G(0) -> G(0)",
                                         "dim2: G(2) -> G(1)",
                                         "partial: R -> R",
                                     }));
    NodeId whole =
        unary(b, "aten::slice", x,
              {num("dim", 0), num("start", 0), num("end", kEnd), num("step", 1)}, {{4, 17, 32}});
    QCOMPARE(variantLines(b.g, whole), (QStringList{
                                           "replicate: I -> I",
                                           "dim0: G(0) -> G(0)",
                                           "dim1: G(1) -> G(1)",
                                           "dim2: G(2) -> G(2)",
                                           "partial: R -> R",
                                       }));
    const auto variants = hap::rules::variantsFor(b.g, b.g.node(whole));
    QVERIFY(!variants[1].note.empty());  // the sliced dimension itself
    QVERIFY(variants[2].note.empty());
    QCOMPARE(hap::test::executionNames(b.g, whole),
             (QStringList{"plain", "whole-cut-piece", "plain", "plain", "plain"}));
    NodeId tokens =
        unary(b, "aten::slice", x,
              {num("dim", 1), num("start", 1), num("end", kEnd), num("step", 1)}, {{4, 16, 32}});
    QCOMPARE(variantLines(b.g, tokens), (QStringList{
                                            "replicate: I -> I",
                                            "dim0: G(0) -> G(0)",
                                            "dim2: G(2) -> G(2)",
                                            "partial: R -> R",
                                        }));
  }

  // ViT prepends the class token: [4, 1, 32] ++ [4, 16, 32] along 1.
  void catAndStack() {
    GraphBuilder b;
    ValueId cls = b.input("cls", {4, 1, 32});
    ValueId patches = b.input("patches", {4, 16, 32});
    NodeId cat =
        b.op("aten::cat", {B::list("tensors", {cls, patches}), num("dim", 1)}, {{4, 17, 32}});
    QCOMPARE(variantLines(b.g, cat), (QStringList{
                                         "replicate: I I -> I",
                                         "dim0: G(0) G(0) -> G(0)",
                                         "dim2: G(2) G(2) -> G(2)",
                                         "partial: R R -> R",
                                     }));
    ValueId u = b.input("u", {4, 8});
    ValueId v = b.input("v", {4, 8});
    NodeId stack = b.op("aten::stack", {B::list("tensors", {u, v}), num("dim", -2)}, {{4, 2, 8}});
    QCOMPARE(variantLines(b.g, stack), (QStringList{
                                           "replicate: I I -> I",
                                           "dim0: G(0) G(0) -> G(0)",
                                           "dim1: G(1) G(1) -> G(2)",
                                           "partial: R R -> R",
                                       }));
  }

  void chunkSplitUnbind() {
    GraphBuilder b;
    ValueId qkv = b.input("qkv", {4, 16, 96});
    NodeId chunk = unary(b, "aten::chunk", qkv, {num("chunks", 3), num("dim", -1)},
                         {{4, 16, 32}, {4, 16, 32}, {4, 16, 32}});
    QCOMPARE(variantLines(b.g, chunk), (QStringList{
                                           "replicate: I -> I I I",
                                           "dim0: G(0) -> G(0) G(0) G(0)",
                                           "dim1: G(1) -> G(1) G(1) G(1)",
                                           "partial: R -> R R R",
                                       }));
    NodeId sizes =
        unary(b, "aten::split_with_sizes", qkv, {ints("split_sizes", {64, 32}), num("dim", 2)},
              {{4, 16, 64}, {4, 16, 32}});
    QCOMPARE(variantLines(b.g, sizes), (QStringList{
                                           "replicate: I -> I I",
                                           "dim0: G(0) -> G(0) G(0)",
                                           "dim1: G(1) -> G(1) G(1)",
                                           "partial: R -> R R",
                                       }));
    ValueId x = b.input("x", {3, 4, 8});
    NodeId unbind = unary(b, "aten::unbind", x, {num("dim", 0)}, {{4, 8}, {4, 8}, {4, 8}});
    QCOMPARE(variantLines(b.g, unbind), (QStringList{
                                            "replicate: I -> I I I",
                                            "dim1: G(1) -> G(0) G(0) G(0)",
                                            "dim2: G(2) -> G(1) G(1) G(1)",
                                            "partial: R -> R R R",
                                        }));
  }
};

QTEST_GUILESS_MAIN(TestRulesShape)
#include "tst_rules_shape.moc"
