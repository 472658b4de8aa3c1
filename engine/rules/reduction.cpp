// Reductions over some or all dimensions: sum, mean, amax, max/min (with indices), prod, norms,
// variance, logsumexp, argmax, any/all.
//
// Sharding a dimension that is not reduced is exact for every reduction: each rank reduces its
// own slices, and the output keeps the dimension (at its position after the reduced ones are
// dropped, unless keepdim). Sharding a reduced dimension is exact only for sums, whose local
// results are partial sums of the result; sums are also linear, so R passes through them.
#include "engine/rules/broadcast.h"
#include "engine/rules/families.h"

namespace hap::rules {
namespace {

enum class Kind : uint8_t {
  kSum,     // sharded reduced dimension → R, and R → R
  kNanSum,  // sharded reduced dimension → R (a NaN within one partial is not one of the sum)
  kMean,    // as kSum, dividing by the global reduced size
  kOther,   // only the dimensions that are not reduced shard
};

constexpr char kMeanNote[] =
    "mean over a sharded dimension: divide the local sum by the global reduced size";

void reduce(const ir::Graph& g, const ir::Node& n, Kind kind, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  int rank = x.rank();
  // The reduced dimensions: `dim` (an int, or a list), or all when absent, None or empty (as
  // PyTorch reduces sum(x, dim=[])). argmax(dim=None) indexes the flattened input: all dims.
  std::vector<bool> reduced(static_cast<size_t>(rank), true);
  if (std::vector<int64_t> dims = intListArg(n, "dim"); !dims.empty()) {
    reduced.assign(static_cast<size_t>(rank), false);
    for (int64_t d : dims) reduced[static_cast<size_t>(normalizeDim(d, rank))] = true;
  }
  bool keepdim = intArg(n, "keepdim", 0) != 0;
  bool sums = kind != Kind::kOther;
  int kept = 0;  // the output position of input dimension d
  for (int d = 0; d < rank; ++d) {
    bool isReduced = reduced[static_cast<size_t>(d)];
    if (shardable(x, d) && !isReduced) {
      out.push_back(makeVariant("keep", {rules::gather(d)},
                                std::vector(n.outputs.size(), rules::gather(keepdim ? d : kept))));
    } else if (shardable(x, d) && sums) {
      out.push_back(makeVariant("reduce", {rules::gather(d)},
                                std::vector(n.outputs.size(), rules::kReduce),
                                kind == Kind::kMean ? kMeanNote : ""));
      if (kind == Kind::kMean) out.back().execution = Execution::MeanOverCut;
    }
    kept += isReduced ? 0 : 1;
  }
  // A sum with an integer dtype truncates each element first: not linear in a floating input.
  bool linear = (kind == Kind::kSum || kind == Kind::kMean) && x.dtype != ir::DType::Bool &&
                (ir::isFloating(output(g, n).dtype) || !ir::isFloating(x.dtype));
  if (linear) out.push_back(makeVariant("partial", {rules::kReduce}, {rules::kReduce}));
}

void sumRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  reduce(g, n, Kind::kSum, out);
}
void nanSumRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  reduce(g, n, Kind::kNanSum, out);
}
void meanRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  reduce(g, n, Kind::kMean, out);
}
void otherRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  reduce(g, n, Kind::kOther, out);
}

// max(self, other) and min(self, other) are elementwise; the other overloads reduce.
void maxMinRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  if (n.tensorInputs().size() == 2)
    pointwiseRule(g, n, out);
  else
    otherRule(g, n, out);
}

constexpr RuleEntry kRules[] = {
    {"aten::sum", sumRule},         {"aten::nansum", nanSumRule},
    {"aten::mean", meanRule},       {"aten::amax", otherRule},
    {"aten::amin", otherRule},      {"aten::max", maxMinRule},
    {"aten::min", maxMinRule},      {"aten::prod", otherRule},
    {"aten::norm", otherRule},      {"aten::linalg_vector_norm", otherRule},
    {"aten::var", otherRule},       {"aten::std", otherRule},
    {"aten::var_mean", otherRule},  {"aten::std_mean", otherRule},
    {"aten::logsumexp", otherRule}, {"aten::argmax", otherRule},
    {"aten::argmin", otherRule},    {"aten::any", otherRule},
    {"aten::all", otherRule},
};

}  // namespace

std::span<const RuleEntry> reductionRules() {
  return kRules;
}

}  // namespace hap::rules
