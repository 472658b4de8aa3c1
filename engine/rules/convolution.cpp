// Convolutions and pooling. A spatial dimension is never split: an output position reads a
// window of input positions that may straddle two devices' ranges (a halo exchange, which no
// variant here performs).
#include <string>

#include "engine/rules/families.h"
#include "engine/rules/variant_util.h"

namespace hap::rules {
namespace {

using rules::gather;
using rules::kIdentity;
using rules::kReduce;
using rules::Rel;

// conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups),
// conv_transpose1d/2d/3d(input, weight, bias, stride, padding, output_padding, groups, dilation),
// convolution/_convolution(input, weight, bias, stride, padding, dilation, transposed, ...,
// groups, ...). The weight is [C_out, C_in/groups, k...], transposed [C_in, C_out/groups, k...];
// the input is [N, C_in, ...] or unbatched [C_in, ...].
//   batch: samples are independent.
//   out-channel (groups = 1): each output channel reads its own filter and bias element.
//   in-channel (groups = 1): input channels are summed over, giving partial sums; the bias must
//     be added once (R).
//   depthwise (groups = C_in = C_out): channel c reads input channel c and filter c only; the
//     local op runs with groups = its local channel count.
//   partial: linear in (input, bias) together.
void convolutionRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& w = tensorInput(g, n, 1);
  const ir::Value& y = output(g, n);
  if (w.rank() < 3 || x.rank() < w.rank() - 1 || x.rank() > w.rank()) return;
  const bool bias = n.tensorInputs().size() == 3;
  const bool transposed =
      n.op.starts_with("aten::conv_transpose") || intArg(n, "transposed", 0) != 0;
  const int64_t groups = intArg(n, "groups", 1);
  const bool batched = x.rank() == w.rank();
  const int c = batched ? 1 : 0;  // the channel dimension of input and output
  const int wOut = transposed ? 1 : 0;
  const int wIn = transposed ? 0 : 1;
  auto add = [&](std::string name, Rel xr, Rel wr, Rel br, Rel yr) -> Variant& {
    Variant v = makeVariant(std::move(name), {xr, wr}, {yr});
    if (bias) v.inputs.push_back(br);
    return out.emplace_back(std::move(v));
  };
  if (batched && shardable(x, 0)) add("batch", gather(0), kIdentity, kIdentity, gather(0));
  if (groups == 1) {
    if (shardable(w, wOut) && shardable(y, c))
      add("out-channel", kIdentity, gather(wOut), gather(0), gather(c));
    if (shardable(x, c) && shardable(w, wIn))
      add("in-channel", gather(c), gather(wIn), kReduce, kReduce);
  } else if (groups == x.shape[static_cast<size_t>(c)] &&
             groups == y.shape[static_cast<size_t>(c)] && shardable(x, c)) {
    // Weight dimension 0 has the C channels in both layouts ([C, 1, k...]).
    Variant& v = add("depthwise", gather(c), gather(0), gather(0), gather(c));
    v.note = "groups = local channel count";
    v.execution = Execution::DepthwiseGroups;
  }
  add("partial", kReduce, kIdentity, kReduce, kReduce);
}

// Pooling over the last kSpatial dimensions of [N, C, spatial...] (or unbatched [C, spatial...]):
// every sample and channel is pooled on its own. Average pooling is linear (R → R); max pooling
// is not. All outputs (values, and indices within the spatial plane) follow the input.
template <int kSpatial, bool kLinear>
void poolRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const int channel = x.rank() - kSpatial - 1;
  for (int d = 0; d <= channel; ++d) {
    if (!shardable(x, d)) continue;
    out.push_back(makeVariant(d == channel ? "channel" : "batch", {gather(d)},
                              std::vector<Rel>(n.outputs.size(), gather(d))));
  }
  if (kLinear) out.push_back(makeVariant("partial", {kReduce}, {kReduce}));
}

constexpr RuleEntry kRules[] = {
    {"aten::conv1d", convolutionRule},
    {"aten::conv2d", convolutionRule},
    {"aten::conv3d", convolutionRule},
    {"aten::conv_transpose1d", convolutionRule},
    {"aten::conv_transpose2d", convolutionRule},
    {"aten::conv_transpose3d", convolutionRule},
    {"aten::convolution", convolutionRule},
    {"aten::_convolution", convolutionRule},
    {"aten::max_pool1d", poolRule<1, false>},
    {"aten::max_pool2d", poolRule<2, false>},
    {"aten::max_pool3d", poolRule<3, false>},
    {"aten::max_pool1d_with_indices", poolRule<1, false>},
    {"aten::max_pool2d_with_indices", poolRule<2, false>},
    {"aten::max_pool3d_with_indices", poolRule<3, false>},
    {"aten::adaptive_max_pool1d", poolRule<1, false>},
    {"aten::adaptive_max_pool2d", poolRule<2, false>},
    {"aten::adaptive_max_pool3d", poolRule<3, false>},
    {"aten::avg_pool1d", poolRule<1, true>},
    {"aten::avg_pool2d", poolRule<2, true>},
    {"aten::avg_pool3d", poolRule<3, true>},
    {"aten::adaptive_avg_pool1d", poolRule<1, true>},
    {"aten::adaptive_avg_pool2d", poolRule<2, true>},
    {"aten::adaptive_avg_pool3d", poolRule<3, true>},
    {"aten::_adaptive_avg_pool2d", poolRule<2, true>},
};

}  // namespace

std::span<const RuleEntry> convolutionRules() { return kRules; }

}  // namespace hap::rules
