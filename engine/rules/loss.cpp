// Losses: nll_loss (and its nd/2d forms), cross_entropy_loss, the pointwise losses (mse, l1,
// smooth l1, huber, binary cross-entropy), and ctc_loss.
//
// Each position's loss depends only on the inputs at that position (and, for the class losses,
// on the whole class dimension there). Sharding positions is therefore exact: with
// reduction='none' the output is sharded like them; with 'sum' the local sums are partial sums of
// the loss; with 'mean' too, provided each rank divides its local sum by the global denominator.
// The class dimension does not shard: the log-softmax over it would need a distributed
// log-sum-exp.
#include <algorithm>

#include "engine/rules/broadcast.h"
#include "engine/rules/families.h"

namespace hap::rules {
namespace {

// The `reduction` argument.
constexpr int64_t kNoReduction = 0;
constexpr int64_t kMean = 1;

constexpr char kClassMeanNote[] =
    "mean: divide the local sum by the global number of non-ignored targets (weighted: their "
    "global class-weight sum), all-reduced by the runtime";
constexpr char kProbabilityMeanNote[] =
    "mean: divide the local sum by the global number of positions (N·d1·…·dk)";
constexpr char kPointwiseMeanNote[] = "mean: divide the local sum by the global number of elements";

// The output relation for positions sharded along output dimension d.
rules::Rel reducedOutput(int64_t reduction, int d) {
  return reduction == kNoReduction ? rules::gather(d) : rules::kReduce;
}

// nll_loss, nll_loss_nd, nll_loss2d, cross_entropy_loss: self [N, C, d1..dk] of scores, target
// [N, d1..dk] of class indices (or, for cross_entropy, [N, C, d1..dk] of class probabilities),
// an optional weight [C] of class weights (replicated). An unbatched self [C] has nothing to shard.
void classLossRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& self = tensorInput(g, n, 0);
  int rank = self.rank();
  if (rank < 2) return;
  bool probabilities = tensorInput(g, n, 1).rank() == rank;
  int64_t reduction = intArg(n, "reduction", kMean);
  for (int d = 0; d < rank; ++d) {
    if (d == 1 || !shardable(self, d)) continue;  // 1: the class dimension
    int position = d == 0 ? 0 : d - 1;  // in the target of class indices and in the output
    std::vector<rules::Rel> ins;
    for (const ir::Arg& a : n.args) {
      if (a.kind == ir::Arg::Kind::Constant) continue;
      rules::Rel r = rules::kIdentity;
      if (a.name == "self") r = rules::gather(d);
      if (a.name == "target") r = rules::gather(probabilities ? d : position);
      ins.insert(ins.end(), a.values.size(), r);
    }
    Variant& v = out.emplace_back(makeVariant(reduction == kNoReduction ? "shard" : "reduce",
                                              std::move(ins), {reducedOutput(reduction, position)},
                                              reduction != kMean ? ""
                                              : probabilities    ? kProbabilityMeanNote
                                                                 : kClassMeanNote));
    if (reduction == kMean)
      v.execution = probabilities ? Execution::ProbabilityLossMean : Execution::ClassLossMean;
  }
}

// The shape all tensor inputs broadcast to.
ir::Shape broadcastShape(const ir::Graph& g, const ir::Node& n) {
  ir::Shape shape;
  for (ir::ValueId id : n.tensorInputs()) {
    const ir::Shape& in = g.value(id).shape;
    if (in.size() > shape.size()) shape.insert(shape.begin(), in.size() - shape.size(), 1);
    size_t offset = shape.size() - in.size();
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] != 1) shape[offset + i] = in[i];
  }
  return shape;
}

// mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy(_with_logits): one loss per
// element of the broadcast inputs (weight and pos_weight broadcast too).
void pointwiseLossRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  ir::Shape shape = broadcastShape(g, n);
  // aten's mean-reduced mse/l1/smooth-l1/huber losses give a target that broadcasts against self
  // a gradient scaled by the broadcast factor (PyTorch 1.13); torch.nn.functional expands the
  // target first, so traced models pass equal shapes. Other shapes keep the single-device op.
  const bool weighted = n.op.starts_with("aten::binary_cross_entropy");
  if (!weighted && tensorInput(g, n, 0).shape != tensorInput(g, n, 1).shape) return;
  int64_t reduction = intArg(n, "reduction", kMean);
  for (int d = 0; d < std::min(static_cast<int>(shape.size()), rules::kMaxShardedRank); ++d) {
    if (shape[static_cast<size_t>(d)] <= 1) continue;  // as shardable()
    out.push_back(makeVariant(reduction == kNoReduction ? "shard" : "reduce",
                              broadcastInputs(g, n, shape, d), {reducedOutput(reduction, d)},
                              reduction == kMean ? kPointwiseMeanNote : ""));
    if (reduction == kMean) out.back().execution = Execution::PointwiseLossMean;
  }
}

// ctc_loss(log_probs [T, N, C], targets [N, S], input_lengths [N], target_lengths [N], blank,
// reduction, zero_infinity), the overload with length tensors: each sample's loss depends on its
// own inputs only, so the batch cuts through all four. 'mean' divides each loss by its target
// length and averages over the batch: the local op's mean, times the local over the global batch.
// Concatenated 1-D targets (their cut would follow the lengths' values) and length lists
// (constants) have no rule.
void ctcLossRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  if (n.overload != "Tensor" || n.tensorInputs().size() != 4) return;
  const ir::Value& logProbs = tensorInput(g, n, 0);
  if (logProbs.rank() != 3 || tensorInput(g, n, 1).rank() != 2 || !shardable(logProbs, 1)) return;
  const int64_t reduction = intArg(n, "reduction", kMean);
  Variant& v = out.emplace_back(makeVariant(
      reduction == kNoReduction ? "shard" : "reduce",
      {rules::gather(1), rules::gather(0), rules::gather(0), rules::gather(0)},
      {reducedOutput(reduction, 0)},
      reduction == kMean ? "mean: the local mean times the local over the global batch" : ""));
  if (reduction == kMean) v.execution = Execution::ScaledMean;
}

constexpr RuleEntry kRules[] = {
    {"aten::ctc_loss", ctcLossRule},
    {"aten::nll_loss", classLossRule},
    {"aten::nll_loss_nd", classLossRule},
    {"aten::nll_loss2d", classLossRule},
    {"aten::cross_entropy_loss", classLossRule},
    {"aten::mse_loss", pointwiseLossRule},
    {"aten::l1_loss", pointwiseLossRule},
    {"aten::smooth_l1_loss", pointwiseLossRule},
    {"aten::huber_loss", pointwiseLossRule},
    {"aten::binary_cross_entropy", pointwiseLossRule},
    {"aten::binary_cross_entropy_with_logits", pointwiseLossRule},
};

}  // namespace

std::span<const RuleEntry> lossRules() {
  return kRules;
}

LossKind lossKind(std::string_view op) {
  for (const RuleEntry& e : kRules)
    if (e.op == op) return e.rule == classLossRule ? LossKind::Class : LossKind::Pointwise;
  return LossKind::None;
}

}  // namespace hap::rules
