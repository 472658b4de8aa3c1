// Samples of the normalisation family (engine/rules/normalization.cpp): layer norm over the last
// one or two dimensions, batch norm in training (running statistics written in place) and in
// evaluation, instance norm with and without running statistics, group norm.
#include "tests/runtime/soundness/op_samples.h"

namespace hap::test {
namespace {

ir::Shape anyShape(Rand& r, int lo, int hi) { return r.shape(static_cast<int>(r.range(lo, hi))); }

SampleEntry entry(std::string op, SampleFn make) { return {std::move(op), std::move(make)}; }

// [N, C, spatial...] with N >= 2 (a batch norm of one sample has no variance to speak of).
ir::Shape channelsShape(Rand& r) {
  ir::Shape s = anyShape(r, 2, 4);
  s[0] = r.dim(2, 7);
  return s;
}

// batch_norm-like arguments: affine parameters and running statistics (buffers), or None.
std::vector<std::pair<std::string, ArgValue>> normArgs(Rand& r, const ir::Shape& x, bool affine, bool running) {
  const int64_t c = x[1];
  std::vector<std::pair<std::string, ArgValue>> a{{"input", t(x)}};
  a.emplace_back("weight", affine ? ArgValue(param({c})) : ArgValue(none()));
  a.emplace_back("bias", affine ? ArgValue(param({c})) : ArgValue(none()));
  a.emplace_back("running_mean", running ? ArgValue(buffer({c})) : ArgValue(none()));
  a.emplace_back("running_var", running ? ArgValue(buffer({c}, Domain::Positive)) : ArgValue(none()));
  a.emplace_back("momentum", f(r.coin() ? 0.1 : 0.3));
  a.emplace_back("eps", f(1e-5));
  return a;
}

}  // namespace

std::vector<SampleEntry> normalizationSamples() {
  std::vector<SampleEntry> s;
  s.push_back(entry("aten::layer_norm", [](Rand& r) {
    const ir::Shape x = anyShape(r, 1, 4);
    const size_t k = r.coin(0.7) || x.size() == 1 ? 1 : 2;
    const ir::Shape normalised(x.end() - static_cast<long>(k), x.end());
    const bool affine = r.coin(0.7);
    return OpSample{"", "", {{"input", t(x)}, {"normalized_shape", ints(normalised)},
                             {"weight", affine ? ArgValue(param(normalised)) : ArgValue(none())},
                             {"bias", affine ? ArgValue(param(normalised)) : ArgValue(none())}}};
  }));
  s.push_back(entry("aten::native_layer_norm", [](Rand& r) {
    const ir::Shape x = anyShape(r, 2, 4);
    const ir::Shape normalised{x.back()};
    return OpSample{"", "", {{"input", t(x)}, {"normalized_shape", ints(normalised)}, {"weight", param(normalised)},
                             {"bias", param(normalised)}, {"eps", f(1e-5)}}};
  }));
  for (const char* op : {"aten::batch_norm", "aten::_batch_norm_impl_index"})
    s.push_back(entry(op, [](Rand& r) {
      const ir::Shape x = channelsShape(r);
      const bool training = r.coin(0.7);
      auto a = normArgs(r, x, r.coin(0.8), training ? r.coin(0.8) : true);
      a.emplace_back("training", b(training));
      a.emplace_back("cudnn_enabled", b(true));
      return OpSample{"", "", a};
    }));
  s.push_back(entry("aten::native_batch_norm", [](Rand& r) {
    const ir::Shape x = channelsShape(r);
    const bool training = r.coin(0.7);
    auto a = normArgs(r, x, true, training ? r.coin(0.8) : true);
    a.emplace_back("training", b(training));
    return OpSample{"", "", a};
  }));
  s.push_back(entry("aten::instance_norm", [](Rand& r) {
    const ir::Shape x = channelsShape(r);
    const bool inputStats = r.coin(0.7);
    auto a = normArgs(r, x, r.coin(), inputStats ? r.coin() : true);
    a.emplace_back("use_input_stats", b(inputStats));
    a.emplace_back("cudnn_enabled", b(true));
    return OpSample{"", "", a};
  }));
  s.push_back(entry("aten::group_norm", [](Rand& r) {
    ir::Shape x = channelsShape(r);
    const int64_t groups = r.dim(1, 3);
    x[1] = groups * r.dim(1, 3);
    const bool affine = r.coin(0.7);
    return OpSample{"", "", {{"input", t(x)}, {"num_groups", i(groups)},
                             {"weight", affine ? ArgValue(param({x[1]})) : ArgValue(none())},
                             {"bias", affine ? ArgValue(param({x[1]})) : ArgValue(none())}}};
  }));
  return s;
}

}  // namespace hap::test
