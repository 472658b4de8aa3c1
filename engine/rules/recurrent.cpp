// Recurrent layers: rnn_tanh, rnn_relu, gru and lstm (the `.input` overloads that traces of
// nn.RNN, nn.GRU and nn.LSTM call; packed sequences, the `.data` overloads, have no rule).
//
// Every sequence of the batch runs through the layers on its own, with the same weights: a cut of
// the batch passes through. The input is [T, N, F] ([N, T, F] with batch_first), the states
// hx (and lstm's cx) [layers · directions, N, H] cut along N likewise, the weights whole; the
// output and the final states come out cut along N. (The ops take batched inputs only: the modules
// unsqueeze an unbatched one first. The `.data` overloads' packed input is 2-D: no variant.)
// Dropout between layers in training draws random numbers for the whole batch, which a rank's
// piece would not reproduce: then no variant but replicate.
#include <variant>

#include "engine/rules/families.h"
#include "engine/rules/variant_util.h"

namespace hap::rules {
namespace {

double doubleArg(const ir::Node& n, std::string_view name) {
  const ir::Arg* a = n.arg(name);
  if (!a || a->kind != ir::Arg::Kind::Constant) return 0;
  if (const auto* d = std::get_if<double>(&a->constant)) return *d;
  if (const auto* i = std::get_if<int64_t>(&a->constant)) return static_cast<double>(*i);
  return 0;
}

void recurrentRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  if (x.rank() != 3) return;
  if (doubleArg(n, "dropout") > 0 && intArg(n, "train", 1) != 0) return;
  const int batch = intArg(n, "batch_first", 0) != 0 ? 0 : 1;
  if (!shardable(x, batch)) return;
  // Tensor inputs: input, then hx (one tensor, or lstm's [h0, c0]), then the weights.
  const ir::Arg* hx = n.arg("hx");
  const size_t states = hx ? hx->values.size() : 0;
  std::vector<Rel> inputs(n.tensorInputs().size(), kIdentity);
  inputs[0] = gather(batch);
  for (size_t k = 1; k <= states && k < inputs.size(); ++k) inputs[k] = gather(1);
  std::vector<Rel> outputs(n.outputs.size(), gather(1));
  outputs[0] = gather(batch);
  out.push_back(makeVariant("batch", std::move(inputs), std::move(outputs)));
}

constexpr RuleEntry kRules[] = {
    {"aten::rnn_tanh", recurrentRule},
    {"aten::rnn_relu", recurrentRule},
    {"aten::gru", recurrentRule},
    {"aten::lstm", recurrentRule},
};

}  // namespace

std::span<const RuleEntry> recurrentRules() { return kRules; }

}  // namespace hap::rules
