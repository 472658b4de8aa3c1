// Golden tests of the convolution family: batch, output-channel and input-channel splits of
// plain, bias-free, depthwise, grouped, transposed and unbatched convolutions; pooling.
#include <QtTest>

#include <cstdint>
#include <string>

#include "tests/engine/rules/rule_test_util.h"

using hap::ir::Arg;
using hap::ir::NodeId;
using hap::ir::Shape;
using hap::ir::ValueId;
using hap::test::GraphBuilder;
using hap::test::variantLines;
using B = GraphBuilder;

namespace {

Arg ints(const std::string& name, std::vector<int64_t> v) {
  return B::constant(name, std::move(v));
}
Arg num(const std::string& name, int64_t v) {
  return B::constant(name, v);
}
Arg none(const std::string& name) {
  return B::constant(name, std::monostate{});
}

// aten::_convolution as TorchScript records nn.Conv2d (13 arguments), stride 1, padding 1.
NodeId convolution(GraphBuilder& b, ValueId x, ValueId w, Arg bias, bool transposed, int64_t groups,
                   Shape out) {
  return b.op(
      "aten::_convolution",
      {B::tensor("input", x), B::tensor("weight", w), std::move(bias), ints("stride", {1, 1}),
       ints("padding", {1, 1}), ints("dilation", {1, 1}), B::constant("transposed", transposed),
       ints("output_padding", {0, 0}), num("groups", groups), B::constant("benchmark", false),
       B::constant("deterministic", false), B::constant("cudnn_enabled", true),
       B::constant("allow_tf32", true)},
      {std::move(out)});
}

NodeId pool(GraphBuilder& b, const std::string& op, ValueId x, std::vector<Shape> outs) {
  return b.op(op,
              {B::tensor("self", x), ints("kernel_size", {2, 2}), ints("stride", {2, 2}),
               ints("padding", {0, 0}), ints("dilation", {1, 1}), B::constant("ceil_mode", false)},
              std::move(outs));
}

}  // namespace

class TestRulesConvolution : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void convolutionWithBias() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 3, 16, 16});
    ValueId w = b.param("conv.weight", {8, 3, 3, 3});
    ValueId bias = b.param("conv.bias", {8});
    NodeId n = convolution(b, x, w, B::tensor("bias", bias), false, 1, {4, 8, 16, 16});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "batch: G(0) I I -> G(0)",
                                       "out-channel: I G(0) G(0) -> G(1)",
                                       "in-channel: G(1) G(1) R -> R",
                                       "partial: R I R -> R",
                                   }));
  }

  void conv2dWithoutBias() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8, 8, 8});
    ValueId w = b.param("conv.weight", {16, 8, 3, 3});
    NodeId n =
        b.op("aten::conv2d",
             {B::tensor("input", x), B::tensor("weight", w), none("bias"), ints("stride", {1, 1}),
              ints("padding", {1, 1}), ints("dilation", {1, 1}), num("groups", 1)},
             {{4, 16, 8, 8}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "batch: G(0) I -> G(0)",
                                       "out-channel: I G(0) -> G(1)",
                                       "in-channel: G(1) G(1) -> R",
                                       "partial: R I -> R",
                                   }));
  }

  // groups = C_in = C_out: channel c only reads channel c.
  void depthwise() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8, 8, 8});
    ValueId w = b.param("conv.weight", {8, 1, 3, 3});
    ValueId bias = b.param("conv.bias", {8});
    NodeId n = convolution(b, x, w, B::tensor("bias", bias), false, 8, {4, 8, 8, 8});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "batch: G(0) I I -> G(0)",
                                       "depthwise: G(1) G(0) G(0) -> G(1)",
                                       "partial: R I R -> R",
                                   }));
    QCOMPARE(hap::rules::variantsFor(b.g, b.g.node(n))[2].note,
             std::string("groups = local channel count"));
    QCOMPARE(hap::test::executionNames(b.g, n),
             (QStringList{"plain", "plain", "depthwise-groups", "plain"}));
  }

  // Two groups of 4 channels: a cut inside a group would split its sum.
  void groupedSplitsBatchOnly() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8, 8, 8});
    ValueId w = b.param("conv.weight", {8, 4, 3, 3});
    NodeId n = convolution(b, x, w, none("bias"), false, 2, {4, 8, 8, 8});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I",
                                       "batch: G(0) I -> G(0)",
                                       "partial: R I -> R",
                                   }));
  }

  // Transposed weights are [C_in, C_out / groups, k...].
  void transposed() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8, 8, 8});
    ValueId w = b.param("deconv.weight", {8, 4, 3, 3});
    ValueId bias = b.param("deconv.bias", {4});
    NodeId n = convolution(b, x, w, B::tensor("bias", bias), true, 1, {4, 4, 8, 8});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "batch: G(0) I I -> G(0)",
                                       "out-channel: I G(1) G(0) -> G(1)",
                                       "in-channel: G(1) G(0) R -> R",
                                       "partial: R I R -> R",
                                   }));
    NodeId t = b.op("aten::conv_transpose2d",
                    {B::tensor("input", x), B::tensor("weight", w), B::tensor("bias", bias),
                     ints("stride", {1, 1}), ints("padding", {1, 1}),
                     ints("output_padding", {0, 0}), num("groups", 1), ints("dilation", {1, 1})},
                    {{4, 4, 8, 8}});
    QCOMPARE(variantLines(b.g, t), variantLines(b.g, n));
  }

  void unbatchedConv1d() {
    GraphBuilder b;
    ValueId x = b.input("x", {3, 16});
    ValueId w = b.param("conv.weight", {8, 3, 3});
    ValueId bias = b.param("conv.bias", {8});
    NodeId n =
        b.op("aten::conv1d",
             {B::tensor("input", x), B::tensor("weight", w), B::tensor("bias", bias),
              ints("stride", {1}), ints("padding", {0}), ints("dilation", {1}), num("groups", 1)},
             {{8, 14}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "out-channel: I G(0) G(0) -> G(0)",
                                       "in-channel: G(0) G(1) R -> R",
                                       "partial: R I R -> R",
                                   }));
  }

  void pooling() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 8, 16, 16});
    NodeId max = pool(b, "aten::max_pool2d", x, {{4, 8, 8, 8}});
    QCOMPARE(variantLines(b.g, max), (QStringList{
                                         "replicate: I -> I",
                                         "batch: G(0) -> G(0)",
                                         "channel: G(1) -> G(1)",
                                     }));
    NodeId indices = pool(b, "aten::max_pool2d_with_indices", x, {{4, 8, 8, 8}, {4, 8, 8, 8}});
    QCOMPARE(variantLines(b.g, indices), (QStringList{
                                             "replicate: I -> I I",
                                             "batch: G(0) -> G(0) G(0)",
                                             "channel: G(1) -> G(1) G(1)",
                                         }));
    ValueId y = b.input("y", {4, 32, 1, 1});
    NodeId adaptive = b.op("aten::adaptive_avg_pool2d",
                           {B::tensor("self", y), ints("output_size", {2, 2})}, {{4, 32, 2, 2}});
    QCOMPARE(variantLines(b.g, adaptive), (QStringList{
                                              "replicate: I -> I",
                                              "batch: G(0) -> G(0)",
                                              "channel: G(1) -> G(1)",
                                              "partial: R -> R",
                                          }));
    ValueId z = b.input("z", {8, 16});  // unbatched [C, L]
    NodeId avg =
        b.op("aten::avg_pool1d", {B::tensor("self", z), ints("kernel_size", {2})}, {{8, 8}});
    QCOMPARE(variantLines(b.g, avg), (QStringList{
                                         "replicate: I -> I",
                                         "channel: G(0) -> G(0)",
                                         "partial: R -> R",
                                     }));
  }
};

QTEST_GUILESS_MAIN(TestRulesConvolution)
#include "tst_rules_convolution.moc"
