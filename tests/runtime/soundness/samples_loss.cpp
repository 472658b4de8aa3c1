// Samples of the loss family (engine/rules/loss.cpp) and of embedding (engine/rules/embedding.cpp):
// every reduction, ignored targets, class weights, label smoothing, class probabilities; lookups
// with and without a padding index.
#include "tests/runtime/soundness/op_samples.h"

namespace hap::test {
namespace {

ir::Shape anyShape(Rand& r, int lo, int hi) { return r.shape(static_cast<int>(r.range(lo, hi))); }

SampleEntry entry(std::string op, SampleFn make) { return {std::move(op), std::move(make)}; }

// Scores [N, C, d...] and class targets [N, d...] (a quarter ignored).
std::vector<std::pair<std::string, ArgValue>> classArgs(Rand& r, int spatial, bool logProbabilities) {
  ir::Shape x{r.dim(1, 7), r.dim(2, 6)};
  for (int k = 0; k < spatial; ++k) x.push_back(r.dim(1, 5));
  ir::Shape y{x[0]};
  y.insert(y.end(), x.begin() + 2, x.end());
  const int64_t ignore = r.coin() ? -100 : 0;
  TensorSpec scores = t(x);
  (void)logProbabilities;
  std::vector<std::pair<std::string, ArgValue>> a{{"self", scores}, {"target", targets(y, x[1], ignore)}};
  a.emplace_back("weight", r.coin(0.3) ? ArgValue(buffer({x[1]}, Domain::Positive)) : ArgValue(none()));  // class weights
  a.emplace_back("reduction", i(r.range(0, 2)));
  a.emplace_back("ignore_index", i(ignore));
  return a;
}

}  // namespace

std::vector<SampleEntry> lossSamples() {
  std::vector<SampleEntry> s;
  s.push_back(entry("aten::nll_loss", [](Rand& r) { return OpSample{"", "", classArgs(r, 0, true)}; }));
  s.push_back(entry("aten::nll_loss_nd", [](Rand& r) { return OpSample{"", "", classArgs(r, static_cast<int>(r.range(0, 2)), true)}; }));
  s.push_back(entry("aten::nll_loss2d", [](Rand& r) { return OpSample{"", "", classArgs(r, 2, true)}; }));
  s.push_back(entry("aten::cross_entropy_loss", [](Rand& r) {
    auto a = classArgs(r, static_cast<int>(r.range(0, 2)), false);
    if (r.coin(0.3)) a.emplace_back("label_smoothing", f(0.1));
    return OpSample{"", "", a};
  }));
  s.push_back(entry("aten::cross_entropy_loss", [](Rand& r) {  // class probabilities
    ir::Shape x{r.dim(1, 7), r.dim(2, 6)};
    if (r.coin()) x.push_back(r.dim(1, 5));
    return OpSample{"", "", {{"self", t(x)}, {"target", probability(x)}, {"reduction", i(r.range(0, 2))}}};
  }));
  for (const char* op : {"aten::mse_loss", "aten::l1_loss", "aten::smooth_l1_loss", "aten::huber_loss"}) {
    s.push_back(entry(op, [](Rand& r) {
      const ir::Shape x = anyShape(r, 1, 4);
      return OpSample{"", "", {{"self", t(x)}, {"target", t(x)}, {"reduction", i(r.range(0, 2))}}};
    }));
    s.push_back(entry(op, [](Rand& r) {  // a broadcast target (aten's own; torch.nn expands first)
      const ir::Shape x = anyShape(r, 1, 4);
      return OpSample{"", "", {{"self", t(x)}, {"target", t(r.broadcastable(x))}, {"reduction", i(r.range(0, 2))}}};
    }));
  }
  s.push_back(entry("aten::binary_cross_entropy", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    return OpSample{"", "", {{"self", probability(x)}, {"target", probability(x)},
                             {"weight", r.coin() ? ArgValue(buffer(r.broadcastable(x), Domain::Positive)) : ArgValue(none())},
                             {"reduction", i(r.range(0, 2))}}};
  }));
  s.push_back(entry("aten::binary_cross_entropy_with_logits", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    return OpSample{"", "", {{"self", t(x)}, {"target", probability(x)},
                             {"weight", r.coin() ? ArgValue(buffer(r.broadcastable(x), Domain::Positive)) : ArgValue(none())},
                             {"pos_weight", r.coin() ? ArgValue(buffer({x.back()}, Domain::Positive)) : ArgValue(none())},
                             {"reduction", i(r.range(0, 2))}}};
  }));
  // ctc_loss with length tensors (torchaudio's CTC models): log-probabilities [T, N, C], padded
  // targets [N, S] of non-blank classes (blank the last class), input lengths T, target lengths
  // in [0, S] (T > 2S, so every alignment exists).
  s.push_back(entry("aten::ctc_loss", [](Rand& r) {
    const int64_t batch = r.dim(1, 5), classes = r.dim(2, 5), longest = r.dim(1, 4);
    const int64_t steps = 2 * longest + r.dim(1, 3);
    TensorSpec lengths{{batch}, ir::DType::Int64, Domain::Full, steps};
    return OpSample{"", "Tensor", {{"log_probs", t({steps, batch, classes})}, {"targets", index({batch, longest}, classes - 1)},
                                   {"input_lengths", lengths}, {"target_lengths", index({batch}, longest + 1)},
                                   {"blank", i(classes - 1)}, {"reduction", i(r.range(0, 2))}, {"zero_infinity", b(r.coin())}}};
  }));
  return s;
}

std::vector<SampleEntry> embeddingSamples() {
  std::vector<SampleEntry> s;
  s.push_back(entry("aten::embedding", [](Rand& r) {
    const int64_t vocab = r.dim(2, 9);
    const bool padding = r.coin(0.3);
    return OpSample{"", "", {{"weight", param({vocab, r.dim(1, 6)})}, {"indices", index(anyShape(r, 1, 3), vocab)},
                             {"padding_idx", i(padding ? r.range(0, vocab - 1) : -1)},
                             {"scale_grad_by_freq", b(r.coin(0.2))}}};
  }));
  // embedding_bag as nn.EmbeddingBag traces it (1-D indices with sorted offsets; a 2-D input
  // arrives so, with offsets arange(0, N, L)): sum, mean, max; empty bags; per-sample weights
  // (sum only); include_last_offset (the last offset the index count); padding_idx.
  auto bag = [](Rand& r, const std::string& overload) {
    const int64_t vocab = r.dim(2, 9);
    const int64_t count = r.dim(1, 12), bags = r.dim(1, 6);
    const int64_t mode = r.range(0, 2);
    const bool last = r.coin(0.3);
    OpSample sample{"", overload, {{"weight", param({vocab, r.dim(1, 6)})}, {"indices", index({count}, vocab)},
                                   {"offsets", offsets(bags + (last ? 1 : 0), count, last)},
                                   {"scale_grad_by_freq", b(r.coin(0.15))}, {"mode", i(mode)}, {"sparse", b(false)},
                                   {"include_last_offset", b(last)}}};
    if (mode == 0 && r.coin()) sample.args.emplace_back("per_sample_weights", t({count}));
    if (overload == "padding_idx") sample.args.emplace_back("padding_idx", r.coin(0.3) ? i(r.range(0, vocab - 1)) : none());
    return sample;
  };
  s.push_back(entry("aten::embedding_bag", [bag](Rand& r) { return bag(r, ""); }));
  s.push_back(entry("aten::embedding_bag", [bag](Rand& r) { return bag(r, "padding_idx"); }));
  s.push_back(entry("aten::_embedding_bag", [bag](Rand& r) { return bag(r, ""); }));
  return s;
}

}  // namespace hap::test
