// Random ops: dropout and its variants, random fills and random factories.
//
// The runtime draws random numbers so that replicated random ops give identical results on all
// ranks (../shared/DESIGN.md §5): every rank draws the full-size values from the shared seed. A
// sharded variant keeps this rank's piece of them, so the pieces are exactly the single-device
// values and the split does not change the random stream. Dropout's mask is counter-based
// (runtime/core/counter_rng.h: each element's draw is a function of the seed and its index in the
// full tensor), so a rank draws only its piece of it, which is exactly that piece of the mask.
#include <algorithm>
#include <iterator>

#include "engine/rules/broadcast.h"
#include "engine/rules/families.h"

namespace hap::rules {
namespace {

constexpr char kPieceNote[] =
    "random: draw the full-size values from the shared seed and keep this rank's piece";

constexpr char kDropoutPieceNote[] =
    "random: draw this rank's piece of the counter-based mask (each element's draw keyed by its "
    "index in the full tensor)";

constexpr char kSameMaskNote[] =
    "random: every rank draws the same full-size mask from the shared seed";

// Ops whose draws are an element-wise mask of the input's shape (the runtime draws that mask).
constexpr std::string_view kElementMaskOps[] = {"aten::dropout", "aten::dropout_",
                                                "aten::native_dropout"};

// Every variant the rule appended from `first` on draws as the op does (randomExecution).
void drawing(const ir::Node& n, std::vector<Variant>& out, size_t first) {
  for (size_t i = first; i < out.size(); ++i) out[i].execution = randomExecution(n.op);
}

// Each output element is drawn from the input elements at its position (or from nothing).
void randomRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const size_t first = out.size();
  appendPointwiseShards(g, n, out, kPieceNote);
  drawing(n, out, first);
}

// dropout(x) = mask·x / (1 − p) is linear in x for a fixed mask: with every rank drawing the same
// full-size mask, partial sums stay partial sums. native_dropout also returns that mask.
void dropoutRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const size_t first = out.size();
  const bool elementMask = std::find(std::begin(kElementMaskOps), std::end(kElementMaskOps), n.op) !=
                           std::end(kElementMaskOps);
  appendPointwiseShards(g, n, out, elementMask ? kDropoutPieceNote : kPieceNote);
  std::vector<rules::Rel> outs(n.outputs.size(), rules::kIdentity);
  outs[0] = rules::kReduce;
  out.push_back(makeVariant("partial", {rules::kReduce}, std::move(outs), kSameMaskNote));
  drawing(n, out, first);
}

// rand_like(x) uses only the shape of x: a full-size input, replicated or partial, gives the same
// full-size values on every rank.
void randomLikeRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const size_t first = out.size();
  appendPointwiseShards(g, n, out, kPieceNote);
  out.push_back(makeVariant("like", {rules::kReduce}, {rules::kIdentity}));
  drawing(n, out, first);
}

constexpr RuleEntry kRules[] = {
    {"aten::dropout", dropoutRule},
    {"aten::dropout_", dropoutRule},
    {"aten::feature_dropout", dropoutRule},  // one draw per channel, broadcast: still linear
    {"aten::feature_dropout_", dropoutRule},
    {"aten::native_dropout", dropoutRule},
    // Alpha dropout sets dropped elements to a nonzero constant: affine, not linear.
    {"aten::alpha_dropout", randomRule},
    {"aten::alpha_dropout_", randomRule},
    {"aten::feature_alpha_dropout", randomRule},
    {"aten::feature_alpha_dropout_", randomRule},
    {"aten::bernoulli", randomRule},
    {"aten::bernoulli_", randomRule},
    {"aten::uniform_", randomRule},
    {"aten::normal", randomRule},
    {"aten::normal_", randomRule},
    {"aten::rand", randomRule},
    {"aten::randn", randomRule},
    {"aten::randint", randomRule},
    {"aten::rand_like", randomLikeRule},
    {"aten::randn_like", randomLikeRule},
    {"aten::randint_like", randomLikeRule},
};

}  // namespace

std::span<const RuleEntry> randomRules() {
  return kRules;
}

bool isRandomOp(std::string_view op) {
  for (const RuleEntry& e : kRules)
    if (e.op == op) return true;
  return false;
}

Execution randomExecution(std::string_view op) {
  if (!isRandomOp(op)) return Execution::Plain;
  for (std::string_view mask : kElementMaskOps)
    if (mask == op) return Execution::DropoutMask;
  return Execution::RandomDraws;
}

}  // namespace hap::rules
