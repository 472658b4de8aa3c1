// Golden tests of the normalisation rules: dimensions outside the statistics shard, affine
// parameters and running statistics are inputs (replicated, or sharded with their channels).
#include <QtTest>

#include "engine/rules/rule.h"
#include "tests/engine/rules/rule_test_util.h"

using hap::ir::Arg;
using hap::ir::NodeId;
using hap::ir::ValueId;
using hap::test::GraphBuilder;
using hap::test::variantLines;

namespace {

Arg none(const std::string& name) {
  return GraphBuilder::constant(name, std::monostate{});
}

// batch_norm-like op on x [8, 4, 6, 6], with affine parameters and running statistics [4].
NodeId batchNorm(GraphBuilder& b, const std::string& op, bool training,
                 std::vector<hap::ir::Shape> outs) {
  ValueId x = b.input("x", {8, 4, 6, 6});
  std::vector<Arg> args = {GraphBuilder::tensor("input", x)};
  for (const char* name : {"weight", "bias", "running_mean", "running_var"})
    args.push_back(GraphBuilder::tensor(name, b.param(name, {4})));
  for (Arg a : {GraphBuilder::constant("training", training),
                GraphBuilder::constant("momentum", 0.1), GraphBuilder::constant("eps", 1e-5)})
    args.push_back(std::move(a));
  return b.op(op, std::move(args), std::move(outs));
}

}  // namespace

class TstRulesNormalization : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // The affine weight and bias are inputs, replicated (never dropped).
  void layerNormWithAffine() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 32});
    auto n =
        b.op("aten::layer_norm",
             {GraphBuilder::tensor("input", x),
              GraphBuilder::constant("normalized_shape", std::vector<int64_t>{32}),
              GraphBuilder::tensor("weight", b.param("w", {32})),
              GraphBuilder::tensor("bias", b.param("b", {32})), GraphBuilder::constant("eps", 1e-5),
              GraphBuilder::constant("cudnn_enable", true)},
             {{4, 16, 32}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "shard: G(0) I I -> G(0)",
                                       "shard: G(1) I I -> G(1)",
                                   }));
  }

  void layerNormWithoutAffineOverTwoDims() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 32});
    auto n = b.op("aten::layer_norm",
                  {GraphBuilder::tensor("input", x),
                   GraphBuilder::constant("normalized_shape", std::vector<int64_t>{16, 32}),
                   none("weight"), none("bias"), GraphBuilder::constant("eps", 1e-5),
                   GraphBuilder::constant("cudnn_enable", true)},
                  {{4, 16, 32}});
    QCOMPARE(variantLines(b.g, n), (QStringList{"replicate: I -> I", "shard: G(0) -> G(0)"}));
  }

  // native_layer_norm's mean and rstd [4, 16, 1] shard with the output.
  void nativeLayerNormStatistics() {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 16, 32});
    auto n = b.op("aten::native_layer_norm",
                  {GraphBuilder::tensor("input", x),
                   GraphBuilder::constant("normalized_shape", std::vector<int64_t>{32}),
                   GraphBuilder::tensor("weight", b.param("w", {32})), none("bias"),
                   GraphBuilder::constant("eps", 1e-5)},
                  {{4, 16, 32}, {4, 16, 1}, {4, 16, 1}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I -> I I I",
                                       "shard: G(0) I -> G(0) G(0) G(0)",
                                       "shard: G(1) I -> G(1) G(1) G(1)",
                                   }));
  }

  // Training statistics reduce over every dimension but the channel: channels shard with their
  // parameters; any other dimension only with synchronised statistics (replicated parameters and
  // running statistics, priced as two per-channel sums all-reduced).
  void batchNormTrainingIsChannelParallelOrSynchronised() {
    GraphBuilder b;
    auto n = batchNorm(b, "aten::batch_norm", true, {{8, 4, 6, 6}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I I I -> I",
                                       "channel: G(1) G(0) G(0) G(0) G(0) -> G(1)",
                                       "sync: G(0) I I I I -> G(0)",
                                       "sync: G(2) I I I I -> G(2)",
                                       "sync: G(3) I I I I -> G(3)",
                                   }));
    for (const hap::rules::Variant& v : hap::rules::variantsFor(b.g, b.g.node(n)))
      QCOMPARE(v.syncBytes, v.name == "sync" ? int64_t{2 * 4 * 8} : int64_t{0});
    QCOMPARE(
        hap::test::executionNames(b.g, n),
        (QStringList{"plain", "plain", "sync-statistics", "sync-statistics", "sync-statistics"}));
  }

  // _batch_norm_impl_index's extra outputs have no synchronised form: channels only.
  void batchNormImplIndexIsChannelParallel() {
    GraphBuilder b;
    auto n = batchNorm(b, "aten::_batch_norm_impl_index", true, {{8, 4, 6, 6}, {4}, {4}, {0}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I I I -> I I I I",
                                       "channel: G(1) G(0) G(0) G(0) G(0) -> G(1) G(0) G(0) I",
                                   }));
  }

  // With running statistics the op is a per-channel affine map: every dimension shards.
  void batchNormEvaluationShardsAll() {
    GraphBuilder b;
    auto n = batchNorm(b, "aten::batch_norm", false, {{8, 4, 6, 6}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I I I -> I",
                                       "channel: G(1) G(0) G(0) G(0) G(0) -> G(1)",
                                       "shard: G(0) I I I I -> G(0)",
                                       "shard: G(2) I I I I -> G(2)",
                                       "shard: G(3) I I I I -> G(3)",
                                   }));
  }

  // native_batch_norm's saved mean and inverse std are per channel.
  void nativeBatchNormSavedStatistics() {
    GraphBuilder b;
    auto n = batchNorm(b, "aten::native_batch_norm", true, {{8, 4, 6, 6}, {4}, {4}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I I I -> I I I",
                                       "channel: G(1) G(0) G(0) G(0) G(0) -> G(1) G(0) G(0)",
                                       "sync: G(0) I I I I -> G(0) I I",
                                       "sync: G(2) I I I I -> G(2) I I",
                                       "sync: G(3) I I I I -> G(3) I I",
                                   }));
  }

  // Without affine parameters or running statistics the input is the only tensor.
  void batchNormWithoutParameters() {
    GraphBuilder b;
    ValueId x = b.input("x", {8, 4});
    auto n =
        b.op("aten::batch_norm",
             {GraphBuilder::tensor("input", x), none("weight"), none("bias"), none("running_mean"),
              none("running_var"), GraphBuilder::constant("training", true),
              GraphBuilder::constant("momentum", 0.1), GraphBuilder::constant("eps", 1e-5),
              GraphBuilder::constant("cudnn_enabled", true)},
             {{8, 4}});
    QCOMPARE(variantLines(b.g, n), (QStringList{"replicate: I -> I", "channel: G(1) -> G(1)", "sync: G(0) -> G(0)"}));
  }

  // Instance statistics are per sample: the batch shards when no running statistics are kept.
  void instanceNormWithoutRunningStatistics() {
    GraphBuilder b;
    ValueId x = b.input("x", {8, 4, 6});
    auto n = b.op(
        "aten::instance_norm",
        {GraphBuilder::tensor("input", x), GraphBuilder::tensor("weight", b.param("w", {4})),
         GraphBuilder::tensor("bias", b.param("b", {4})), none("running_mean"), none("running_var"),
         GraphBuilder::constant("use_input_stats", true), GraphBuilder::constant("momentum", 0.1),
         GraphBuilder::constant("eps", 1e-5), GraphBuilder::constant("cudnn_enabled", true)},
        {{8, 4, 6}});
    QCOMPARE(variantLines(b.g, n), (QStringList{
                                       "replicate: I I I -> I",
                                       "channel: G(1) G(0) G(0) -> G(1)",
                                       "shard: G(0) I I -> G(0)",
                                   }));
  }

  void groupNormShardsTheBatch() {
    GraphBuilder b;
    ValueId x = b.input("x", {8, 4, 6});
    auto n =
        b.op("aten::group_norm",
             {GraphBuilder::tensor("input", x), GraphBuilder::constant("num_groups", int64_t{2}),
              GraphBuilder::tensor("weight", b.param("w", {4})),
              GraphBuilder::tensor("bias", b.param("b", {4})), GraphBuilder::constant("eps", 1e-5),
              GraphBuilder::constant("cudnn_enabled", true)},
             {{8, 4, 6}});
    QCOMPARE(variantLines(b.g, n),
             (QStringList{"replicate: I I I -> I", "shard: G(0) I I -> G(0)"}));
  }
};

QTEST_GUILESS_MAIN(TstRulesNormalization)
#include "tst_rules_normalization.moc"
