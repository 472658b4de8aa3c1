// Ops that move or interpolate elements within a tensor's trailing (spatial) dimensions and leave
// its leading ones alone: upsampling (nearest, linear, bilinear, bicubic, trilinear; both
// align_corners), pixel shuffle and unshuffle, padding (every mode) and roll.
//
// Each output element of these ops reads input elements of the same leading indices only, so a
// cut along a leading dimension passes through: G(d) → G(d). The trailing dimensions they work on
// are never cut (an output position reads its neighbours, or a position elsewhere), except that
// pad and roll leave the dimensions they do not pad or roll alone, which may then be cut, and
// nearest upsampling by an integer factor cuts its spatial dimensions in whole groups. All but
// constant padding with a non-zero value are linear in their input, so partial sums pass through
// (R → R).
#include <variant>

#include "engine/rules/families.h"
#include "engine/rules/variant_util.h"

namespace hap::rules {
namespace {

// G(d) → G(d) for every shardable dimension d in `dims` of the input; R → R when `linear`.
void passThrough(const ir::Graph& g, const ir::Node& n, const std::vector<int>& dims, bool linear,
                 std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& y = output(g, n);
  for (int d : dims)
    if (shardable(x, d) && d < y.rank() && y.shape[static_cast<size_t>(d)] == x.shape[static_cast<size_t>(d)])
      out.push_back(makeVariant(d == 0 ? "batch" : "shard", {gather(d)}, {gather(d)}));
  if (linear) out.push_back(makeVariant("partial", {kReduce}, {kReduce}));
}

std::vector<int> leading(int rank, int trailing) {
  std::vector<int> dims;
  for (int d = 0; d < rank - trailing; ++d) dims.push_back(d);
  return dims;
}

// Upsampling over the last kSpatial dimensions of [N, C, spatial...]: each sample and channel is
// interpolated on its own, with weights that depend on positions only (linear in the input).
template <int kSpatial>
void upsampleRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  passThrough(g, n, leading(tensorInput(g, n, 0).rank(), kSpatial), true, out);
}

// Nearest upsampling by an integer factor s along a spatial dimension needs no halo: output
// positions [i·s, (i+1)·s) read input position i alone (floor(o / s), and for the _exact kind
// floor((o + 0.5) / s), agree), so a cut of the input passes to the output at s times its lengths,
// whole groups of s (the two dimensions are linked at that ratio, synth/dim_classes.h). Only the
// .vec overload without output_size (F.interpolate(scale_factor=s)): each rank's kernel then
// scales its own piece; a constant output_size would be the whole tensor's.
template <int kSpatial>
void upsampleNearestRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  upsampleRule<kSpatial>(g, n, out);
  const ir::Arg* size = n.arg("output_size");
  const ir::Arg* scales = n.arg("scale_factors");
  if (n.overload != "vec" || !size || !std::holds_alternative<std::monostate>(size->constant) || !scales) return;
  const auto* factors = std::get_if<std::vector<double>>(&scales->constant);
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& y = output(g, n);
  if (!factors || static_cast<int>(factors->size()) != kSpatial || x.rank() != y.rank()) return;
  for (int k = 0; k < kSpatial; ++k) {
    const double f = (*factors)[static_cast<size_t>(k)];
    const int d = x.rank() - kSpatial + k;
    const int64_t factor = static_cast<int64_t>(f);
    if (f < 1 || static_cast<double>(factor) != f || y.shape[static_cast<size_t>(d)] != factor * x.shape[static_cast<size_t>(d)])
      continue;
    if (shardable(x, d))
      out.push_back(makeVariant("spatial", {gather(d)}, {gather(d)}, "whole groups of the integer scale factor"));
  }
}

// pixel_shuffle: [*, C·r², H, W] → [*, C, H·r, W·r]; pixel_unshuffle the reverse. An output
// channel reads a group of r² input channels: the channel dimension is not cut (its lengths
// would have to be whole groups), the dimensions before it are.
void pixelShuffleRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  passThrough(g, n, leading(tensorInput(g, n, 0).rank(), 3), true, out);
}

// Whether `n` pads with a constant: constant_pad_nd, or pad in mode "constant" (its default).
bool padsConstant(const ir::Node& n) {
  if (n.op == "aten::constant_pad_nd") return true;
  const ir::Arg* mode = n.arg("mode");
  if (!mode || mode->kind != ir::Arg::Kind::Constant) return false;
  const std::string* m = std::get_if<std::string>(&mode->constant);
  return !m || *m == "constant";
}

// Whether the constant `value` is zero (absent or None: the schema's default, zero).
bool padsWithZero(const ir::Node& n) {
  const ir::Arg* value = n.arg("value");
  if (!value || std::holds_alternative<std::monostate>(value->constant)) return true;
  if (const auto* d = std::get_if<double>(&value->constant)) return *d == 0;
  if (const auto* i = std::get_if<int64_t>(&value->constant)) return *i == 0;
  return false;
}

// Padding of the last k dimensions: k = half the pad list's length (pad, constant_pad_nd) or the
// op's own (reflection_padNd, replication_padNd). A dimension whose two pads are both zero is not
// padded (its length is kept) and may be cut like the leading ones.
template <int kPadded>
void padRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  std::vector<int64_t> pad = intListArg(n, "pad");
  if (pad.empty()) pad = intListArg(n, "padding");
  const int padded = kPadded > 0 ? kPadded : static_cast<int>(pad.size() / 2);
  std::vector<int> dims;
  for (int d = 0; d < x.rank(); ++d) {
    const int fromLast = x.rank() - 1 - d;  // pad[2·fromLast], pad[2·fromLast + 1] pad dimension d
    const bool untouched = fromLast >= padded ||
                           (2 * fromLast + 1 < static_cast<int>(pad.size()) &&
                            pad[static_cast<size_t>(2 * fromLast)] == 0 && pad[static_cast<size_t>(2 * fromLast + 1)] == 0);
    if (untouched) dims.push_back(d);
  }
  // Constant padding is linear only when it pads with zeros (each partial would add the value).
  const bool linear = !padsConstant(n) || padsWithZero(n);
  passThrough(g, n, dims, linear, out);
}

// roll(self, shifts, dims): the rolled dimensions are not cut; without dims the tensor is rolled
// flattened, and nothing is.
void rollRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const std::vector<int64_t> rolled = intListArg(n, "dims");
  if (rolled.empty()) {
    out.push_back(makeVariant("partial", {kReduce}, {kReduce}));
    return;
  }
  std::vector<bool> isRolled(static_cast<size_t>(x.rank()), false);
  for (int64_t d : rolled) isRolled[static_cast<size_t>(normalizeDim(d, x.rank()))] = true;
  std::vector<int> dims;
  for (int d = 0; d < x.rank(); ++d)
    if (!isRolled[static_cast<size_t>(d)]) dims.push_back(d);
  passThrough(g, n, dims, true, out);
}

constexpr RuleEntry kRules[] = {
    {"aten::upsample_nearest1d", upsampleNearestRule<1>},
    {"aten::upsample_nearest2d", upsampleNearestRule<2>},
    {"aten::upsample_nearest3d", upsampleNearestRule<3>},
    {"aten::_upsample_nearest_exact1d", upsampleNearestRule<1>},
    {"aten::_upsample_nearest_exact2d", upsampleNearestRule<2>},
    {"aten::_upsample_nearest_exact3d", upsampleNearestRule<3>},
    {"aten::upsample_linear1d", upsampleRule<1>},
    {"aten::upsample_bilinear2d", upsampleRule<2>},
    {"aten::upsample_bicubic2d", upsampleRule<2>},
    {"aten::upsample_trilinear3d", upsampleRule<3>},
    {"aten::pixel_shuffle", pixelShuffleRule},
    {"aten::pixel_unshuffle", pixelShuffleRule},
    {"aten::pad", padRule<0>},
    {"aten::constant_pad_nd", padRule<0>},
    {"aten::reflection_pad1d", padRule<1>},
    {"aten::reflection_pad2d", padRule<2>},
    {"aten::reflection_pad3d", padRule<3>},
    {"aten::replication_pad1d", padRule<1>},
    {"aten::replication_pad2d", padRule<2>},
    {"aten::replication_pad3d", padRule<3>},
    {"aten::roll", rollRule},
};

}  // namespace

std::span<const RuleEntry> resamplingRules() { return kRules; }

}  // namespace hap::rules
