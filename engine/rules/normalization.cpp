// Normalisation layers: layer norm, batch norm, instance norm, group norm.
//
// A dimension shards when the statistics do not reduce over it: each rank then computes exactly
// the statistics the single-device op computes for its slices. The affine parameters (and running
// statistics) are real inputs: replicated, or sharded with the channels they belong to.
#include "engine/rules/broadcast.h"
#include "engine/rules/families.h"

namespace hap::rules {
namespace {

// The relations of the node's tensor inputs: `data` for `input`, `rest` for the others (weight,
// bias, running statistics; the absent ones are None constants, not inputs).
std::vector<rules::Rel> inputsAs(const ir::Node& n, rules::Rel data, rules::Rel rest) {
  std::vector<rules::Rel> rels;
  for (const ir::Arg& a : n.args) {
    if (a.kind != ir::Arg::Kind::Constant)
      rels.insert(rels.end(), a.values.size(), a.name == "input" ? data : rest);
  }
  return rels;
}

// layer_norm normalises over the last len(normalized_shape) dimensions; native_layer_norm also
// returns the mean and rstd, shaped like the input with those dimensions set to 1.
void layerNormRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  int normalised = static_cast<int>(intListArg(n, "normalized_shape").size());
  for (int d = 0; d < x.rank() - normalised; ++d) {
    if (!shardable(x, d)) continue;
    out.push_back(makeVariant("shard", inputsAs(n, rules::gather(d), rules::kIdentity),
                              std::vector(n.outputs.size(), rules::gather(d))));
  }
}

// Channel parallelism for the per-channel norms (input [N, C, *], parameters and running
// statistics [C]): every statistic belongs to one channel. Extra outputs (native_batch_norm's
// saved mean and inverse std, _batch_norm_impl_index's reserve space) are per channel or empty;
// another shape has no known split, so there is no variant.
void appendChannel(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  if (!shardable(tensorInput(g, n, 0), 1)) return;
  int64_t channels = tensorInput(g, n, 0).shape[1];
  std::vector<rules::Rel> outs = {rules::gather(1)};
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    const ir::Value& extra = output(g, n, i);
    if (extra.shape == ir::Shape{channels})
      outs.push_back(rules::gather(0));
    else if (extra.numel() == 0)
      outs.push_back(rules::kIdentity);
    else
      return;
  }
  out.push_back(
      makeVariant("channel", inputsAs(n, rules::gather(1), rules::gather(0)), std::move(outs)));
}

// Appends G(d) for input dimension d with replicated parameters. Extra outputs are I: used only
// where they do not depend on the input (evaluation mode).
void appendShard(const ir::Graph& g, const ir::Node& n, int d, std::vector<Variant>& out) {
  if (!shardable(tensorInput(g, n, 0), d)) return;
  std::vector<rules::Rel> outs(n.outputs.size(), rules::kIdentity);
  outs[0] = rules::gather(d);
  out.push_back(
      makeVariant("shard", inputsAs(n, rules::gather(d), rules::kIdentity), std::move(outs)));
}

constexpr char kSyncNote[] =
    "synchronised statistics: each rank sums its pieces' values and squares per channel, the sums are "
    "all-reduced (in backward too), and every rank normalises with the global mean and variance and "
    "updates the running statistics with them";

// batch_norm and native_batch_norm in training: statistics reduce over every dimension but the
// channel, so another dimension shards only with the statistics summed over the ranks (as
// SyncBatchNorm does), never with local ones. The affine parameters and running statistics are
// replicated; native_batch_norm's saved mean and inverse std are the global ones, on every rank.
void appendSynchronised(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  std::vector<rules::Rel> outs(n.outputs.size(), rules::kIdentity);
  for (int d = 0; d < x.rank(); ++d) {
    if (d == 1 || !shardable(x, d)) continue;
    outs[0] = rules::gather(d);
    Variant v = makeVariant("sync", inputsAs(n, rules::gather(d), rules::kIdentity), outs, kSyncNote);
    v.syncBytes = 2 * x.shape[1] * static_cast<int64_t>(sizeof(double));  // sums and sums of squares
    v.execution = Execution::SyncStatistics;
    out.push_back(std::move(v));
  }
}

// batch_norm, native_batch_norm, _batch_norm_impl_index. In training, channels shard (each rank
// computes its channels' statistics exactly), and batch_norm and native_batch_norm shard any
// other dimension with synchronised statistics. In evaluation the running statistics make the op
// a per-channel affine map, and every dimension shards.
void batchNormRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  int rank = tensorInput(g, n, 0).rank();
  if (rank < 2) return;
  appendChannel(g, n, out);
  if (intArg(n, "training", 1) != 0) {
    if (n.op != "aten::_batch_norm_impl_index") appendSynchronised(g, n, out);
    return;
  }
  for (int d = 0; d < rank; ++d)
    if (d != 1) appendShard(g, n, d, out);
}

// instance_norm: statistics per sample and channel over the spatial dimensions. The batch shards
// unless batch-averaged running statistics are updated; in evaluation (use_input_stats false)
// every dimension shards, as for batch_norm.
void instanceNormRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  int rank = tensorInput(g, n, 0).rank();
  if (rank < 2) return;
  appendChannel(g, n, out);
  const ir::Arg* running = n.arg("running_mean");
  bool updatesRunning = running && running->kind != ir::Arg::Kind::Constant;
  bool inputStats = intArg(n, "use_input_stats", 1) != 0;
  for (int d = 0; d < rank; ++d) {
    if (d != 1 && (!inputStats || (d == 0 && !updatesRunning))) appendShard(g, n, d, out);
  }
}

// group_norm: statistics per sample over groups of channels and the spatial dimensions. Channels
// would shard only at group boundaries, which a variant cannot require: the batch only.
void groupNormRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  appendShard(g, n, 0, out);
}

constexpr RuleEntry kRules[] = {
    {"aten::layer_norm", layerNormRule},
    {"aten::native_layer_norm", layerNormRule},
    {"aten::batch_norm", batchNormRule},
    {"aten::native_batch_norm", batchNormRule},
    {"aten::_batch_norm_impl_index", batchNormRule},
    {"aten::instance_norm", instanceNormRule},
    {"aten::group_norm", groupNormRule},
};

}  // namespace

std::span<const RuleEntry> normalizationRules() {
  return kRules;
}

}  // namespace hap::rules
