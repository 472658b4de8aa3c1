#include "engine/cost/profile.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <unordered_map>

namespace hap::cost {

namespace {

constexpr std::array<std::string_view, kOpFamilyCount> kFamilyNames = {
    "matmul", "convolution", "elementwise", "reduction", "normalization", "softmax", "embedding", "data_movement"};

// aten op (without the "aten::" prefix and a trailing "_" of in-place variants) → family. Ops that
// appear in op-costs.md's families and that a benchmark of the family stands for.
const std::unordered_map<std::string_view, OpFamily>& familyTable() {
  static const std::unordered_map<std::string_view, OpFamily> table = [] {
    std::unordered_map<std::string_view, OpFamily> t;
    for (std::string_view op : {"linear", "matmul", "mm", "bmm", "mv", "dot", "addmm", "addmv", "baddbmm", "addbmm", "einsum"})
      t[op] = OpFamily::MatMul;
    for (std::string_view op : {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                                "convolution", "_convolution"})
      t[op] = OpFamily::Convolution;
    for (std::string_view op :
         {"add", "sub", "mul", "div", "rsub", "neg", "reciprocal", "square", "abs", "sign", "floor", "ceil", "round",
          "trunc", "frac", "floor_divide", "remainder", "fmod", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
          "where", "clamp", "clamp_min", "clamp_max", "relu", "relu6", "leaky_relu", "hardtanh", "threshold",
          "masked_fill", "addcmul", "addcdiv", "lerp", "hardsigmoid", "exp", "exp2", "expm1", "log", "log2", "log10",
          "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "erfc", "sin", "cos", "pow", "hardswish", "silu", "elu",
          "selu", "celu", "gelu", "softplus", "mish", "dropout", "feature_dropout", "alpha_dropout",
          "feature_alpha_dropout", "native_dropout"})
      t[op] = OpFamily::Elementwise;
    for (std::string_view op : {"sum", "nansum", "mean", "amax", "amin", "max", "min", "prod", "norm",
                                "linalg_vector_norm", "argmax", "argmin", "cumsum", "cumprod", "all", "any", "var",
                                "std", "var_mean", "std_mean", "logsumexp"})
      t[op] = OpFamily::Reduction;
    for (std::string_view op : {"layer_norm", "native_layer_norm", "batch_norm", "native_batch_norm",
                                "_batch_norm_impl_index", "group_norm", "native_group_norm", "instance_norm"})
      t[op] = OpFamily::Normalization;
    for (std::string_view op : {"softmax", "log_softmax", "_softmax", "_log_softmax"}) t[op] = OpFamily::Softmax;
    for (std::string_view op : {"embedding", "embedding_bag", "index_select", "gather", "take"}) t[op] = OpFamily::Embedding;
    for (std::string_view op : {"contiguous", "clone", "to", "_to_copy", "cat", "concat", "stack", "copy", "repeat",
                                "tile", "roll", "flip", "pad", "constant_pad_nd"})
      t[op] = OpFamily::DataMovement;
    return t;
  }();
  return table;
}

}  // namespace

std::string_view opFamilyName(OpFamily f) { return kFamilyNames[static_cast<size_t>(f)]; }

std::optional<OpFamily> parseOpFamily(std::string_view name) {
  for (size_t i = 0; i < kFamilyNames.size(); ++i)
    if (kFamilyNames[i] == name) return static_cast<OpFamily>(i);
  return std::nullopt;
}

std::optional<OpFamily> opFamilyOf(std::string_view op) {
  if (op.starts_with("aten::")) op.remove_prefix(6);
  if (op.size() > 1 && op.back() == '_') op.remove_suffix(1);
  const auto& table = familyTable();
  const auto it = table.find(op);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

bool flopBound(OpFamily f) { return f == OpFamily::MatMul || f == OpFamily::Convolution; }

WorkLine OpThroughput::lineAt(double work) const {
  if (samples.empty()) return {};
  const OpSample& first = samples.front();
  if (samples.size() == 1) return {0, first.seconds / first.work};
  if (work <= first.work) return {first.seconds, 0};
  size_t i = 1;
  while (i + 1 < samples.size() && samples[i].work < work) ++i;
  const OpSample& a = samples[i - 1];
  const OpSample& b = samples[i];
  const double slope = (b.seconds - a.seconds) / (b.work - a.work);
  // A measured time that falls with size (noise) must not price a bigger piece as cheaper than
  // a smaller one: a falling segment is flat.
  if (slope <= 0) return {std::max(a.seconds, b.seconds), 0};
  return {a.seconds - slope * a.work, slope};
}

const OpThroughput* DeviceProfile::find(OpFamily f, ir::DType t) const {
  for (const OpThroughput& o : ops)
    if (o.family == f && o.dtype == t) return &o;
  return nullptr;
}

std::string_view linkClassName(LinkClass c) { return c == LinkClass::Intra ? "intra" : "inter"; }

std::optional<LinkClass> parseLinkClass(std::string_view name) {
  if (name == "intra") return LinkClass::Intra;
  if (name == "inter") return LinkClass::Inter;
  return std::nullopt;
}

const DeviceProfile* Profile::device(std::string_view deviceType) const {
  for (const DeviceProfile& d : devices)
    if (d.deviceType == deviceType) return &d;
  return nullptr;
}

const CollectiveFit* Profile::collective(Collective c, LinkClass k, std::string_view algorithm) const {
  const CollectiveFit* any = nullptr;
  for (const CollectiveFit& f : collectives) {
    if (f.collective != c || f.linkClass != k) continue;
    if (algorithm.empty() || f.algorithm == algorithm) return &f;
    if (!any) any = &f;
  }
  // A padded gather's fit does not price a grouped one (and back); all-reduce algorithms share.
  if (!algorithm.empty() && (c == Collective::AllGather || c == Collective::ReduceScatter)) return nullptr;
  return any;
}

MemoryCalibration memoryCalibration(const Cluster& cluster, int type) {
  if (!cluster.measured) return {};
  const DeviceProfile* d = cluster.measured->device(cluster.types[static_cast<size_t>(type)].name);
  if (!d) return {};
  return {d->baseMemoryBytes, d->memoryScale};
}

void validate(const Profile& p, const std::string& origin) {
  auto fail = [&](const std::string& what) {
    throw ClusterError(fmt::format("{}: profile '{}' v{}: {}; re-run hap profile or hap calibrate to make a new version",
                                   origin, p.name, p.version, what));
  };
  if (p.name.empty()) fail("no name");
  if (!(p.gradientExposure >= 0) || !std::isfinite(p.gradientExposure))
    fail(fmt::format("gradient exposure {} is not a non-negative number", p.gradientExposure));
  for (const DeviceProfile& d : p.devices) {
    if (d.deviceType.empty()) fail("a device profile without a device type");
    if (!(d.computeScale > 0) || !std::isfinite(d.computeScale))
      fail(fmt::format("device {}: compute scale {} is not positive", d.deviceType, d.computeScale));
    if (!(d.collectiveSlowdown > 0) || !std::isfinite(d.collectiveSlowdown))
      fail(fmt::format("device {}: collective slowdown {} is not positive", d.deviceType, d.collectiveSlowdown));
    if (!(d.memoryScale > 0) || !std::isfinite(d.memoryScale) || !(d.baseMemoryBytes >= 0))
      fail(fmt::format("device {}: memory scale must be > 0 and base memory ≥ 0", d.deviceType));
    if (d.memoryBandwidth < 0) fail(fmt::format("device {}: negative memory bandwidth", d.deviceType));
    for (const OpThroughput& o : d.ops) {
      const std::string what = fmt::format("device {}: {} {}", d.deviceType, opFamilyName(o.family), ir::dtypeName(o.dtype));
      if (o.samples.empty()) fail(what + ": no samples");
      for (size_t i = 0; i < o.samples.size(); ++i) {
        const OpSample& s = o.samples[i];
        if (!(s.work > 0) || !(s.seconds > 0) || !std::isfinite(s.work) || !std::isfinite(s.seconds))
          fail(fmt::format("{}: sample {} (work {}, {} s) is not positive", what, i, s.work, s.seconds));
        if (i > 0 && !(s.work > o.samples[i - 1].work))
          fail(fmt::format("{}: sample {} is not larger than the one before", what, i));
      }
    }
  }
  for (const CollectiveFit& f : p.collectives)
    if (!(f.link.bandwidth > 0) || !(f.link.latency >= 0) || !std::isfinite(f.link.latency))
      fail(fmt::format("{} ({}, {}): bandwidth must be > 0 and latency ≥ 0", collectiveName(f.collective), f.algorithm,
                       linkClassName(f.linkClass)));
}

}  // namespace hap::cost
