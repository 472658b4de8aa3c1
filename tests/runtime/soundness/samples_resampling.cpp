// Samples of the resampling family (engine/rules/resampling.cpp: upsampling, pixel shuffle, pad,
// roll), of the activations that are not elementwise (engine/rules/activation.cpp: prelu, glu)
// and of the recurrent layers (engine/rules/recurrent.cpp).
#include "tests/runtime/soundness/op_samples.h"

namespace hap::test {
namespace {

SampleEntry entry(std::string op, SampleFn make) { return {std::move(op), std::move(make)}; }

// [N, C, spatial...] with N, C in 1..5 (N sometimes left out: unbatched, where the op allows it).
ir::Shape spatialShape(Rand& r, int spatial, bool unbatched = false, int64_t lo = 2, int64_t hi = 6) {
  ir::Shape x;
  if (!unbatched || r.coin(0.8)) x.push_back(r.dim(1, 5));
  x.push_back(r.dim(1, 5));
  for (int d = 0; d < spatial; ++d) x.push_back(r.dim(lo, hi));
  return x;
}

std::vector<int64_t> outputSize(Rand& r, const ir::Shape& x, int spatial) {
  std::vector<int64_t> size;
  for (int d = 0; d < spatial; ++d) size.push_back(x[x.size() - static_cast<size_t>(spatial - d)] * r.range(1, 3) - r.range(0, 1));
  return size;
}

// A pad list for the last `k` dimensions of `x`: 2k values in [-1, 2], a dimension sometimes left
// unpadded (both zero), reflection needing pads below the dimension's length.
std::vector<int64_t> padList(Rand& r, const ir::Shape& x, int k, bool reflect) {
  std::vector<int64_t> pad;
  for (int j = 0; j < k; ++j) {
    const int64_t len = x[x.size() - 1 - static_cast<size_t>(j)];
    const bool untouched = r.coin(0.35);
    for (int side = 0; side < 2; ++side)
      pad.push_back(untouched ? 0 : reflect ? r.range(0, std::min<int64_t>(2, len - 1)) : r.range(r.coin(0.2) ? -1 : 0, 2));
  }
  return pad;
}

}  // namespace

std::vector<SampleEntry> resamplingSamples() {
  std::vector<SampleEntry> s;
  struct Up {
    const char* op;
    int spatial;
    bool alignCorners;  // takes align_corners
  };
  for (Up u : {Up{"aten::upsample_nearest1d", 1, false}, Up{"aten::upsample_nearest2d", 2, false},
               Up{"aten::upsample_nearest3d", 3, false}, Up{"aten::_upsample_nearest_exact1d", 1, false},
               Up{"aten::_upsample_nearest_exact2d", 2, false}, Up{"aten::_upsample_nearest_exact3d", 3, false},
               Up{"aten::upsample_linear1d", 1, true}, Up{"aten::upsample_bilinear2d", 2, true},
               Up{"aten::upsample_bicubic2d", 2, true}, Up{"aten::upsample_trilinear3d", 3, true}}) {
    s.push_back(entry(u.op, [u](Rand& r) {
      const ir::Shape x = spatialShape(r, u.spatial, false, 2, u.spatial == 3 ? 4 : 6);
      // Half the samples through the .vec overload, which traces of F.interpolate call.
      const bool vec = r.coin();
      OpSample sample{"", vec ? "vec" : "",
                      {{vec ? "input" : "self", t(x)}, {"output_size", ints(outputSize(r, x, u.spatial))}}};
      if (vec) sample.args.push_back({"scale_factors", none()});
      if (u.alignCorners) sample.args.push_back({"align_corners", b(r.coin())});
      return sample;
    }));
  }
  // Nearest upsampling as F.interpolate(scale_factor=s) traces it: output_size None, integer
  // factors (the spatial variant's case; a fractional one leaves it out).
  for (Up u : {Up{"aten::upsample_nearest1d", 1, false}, Up{"aten::upsample_nearest2d", 2, false},
               Up{"aten::upsample_nearest3d", 3, false}, Up{"aten::_upsample_nearest_exact1d", 1, false},
               Up{"aten::_upsample_nearest_exact2d", 2, false}, Up{"aten::_upsample_nearest_exact3d", 3, false}}) {
    s.push_back(entry(u.op, [u](Rand& r) {
      const ir::Shape x = spatialShape(r, u.spatial, false, 1, u.spatial == 3 ? 4 : 6);
      std::vector<double> factors;
      for (int d = 0; d < u.spatial; ++d) factors.push_back(r.coin(0.85) ? static_cast<double>(r.range(1, 3)) : 1.5);
      return OpSample{"", "vec", {{"input", t(x)}, {"output_size", none()}, {"scale_factors", ir::Constant(factors)}}};
    }));
  }
  for (const char* op : {"aten::pixel_shuffle", "aten::pixel_unshuffle"}) {
    const bool shuffle = std::string(op) == "aten::pixel_shuffle";
    s.push_back(entry(op, [shuffle](Rand& r) {
      const int64_t f = r.range(1, 3);
      ir::Shape x;
      for (int64_t k = r.range(0, 2); k > 0; --k) x.push_back(r.dim(1, 4));
      if (shuffle) {
        x.insert(x.end(), {r.dim(1, 3) * f * f, r.dim(1, 4), r.dim(1, 4)});
      } else {
        x.insert(x.end(), {r.dim(1, 3), r.dim(1, 3) * f, r.dim(1, 3) * f});
      }
      return OpSample{"", "", {{"self", t(x)}, {shuffle ? "upscale_factor" : "downscale_factor", i(f)}}};
    }));
  }
  s.push_back(entry("aten::constant_pad_nd", [](Rand& r) {
    const ir::Shape x = r.shape(static_cast<int>(r.range(1, 4)), 2, 5);
    const int k = static_cast<int>(r.range(1, static_cast<int64_t>(x.size())));
    return OpSample{"", "", {{"self", t(x)}, {"pad", ints(padList(r, x, k, false))}, {"value", f(r.coin() ? 0.0 : 1.5)}}};
  }));
  s.push_back(entry("aten::pad", [](Rand& r) {
    static const char* modes[] = {"constant", "reflect", "replicate", "circular"};
    const std::string mode = modes[r.range(0, 3)];
    // reflect/replicate/circular pad the last 1-3 dimensions of a [N, C, ...] or [C, ...] input.
    const int k = static_cast<int>(r.range(1, mode == "constant" ? 3 : 2));
    ir::Shape x = mode == "constant" ? r.shape(static_cast<int>(r.range(k, 4)), 2, 5) : spatialShape(r, k, true, 3, 5);
    OpSample sample{"", "", {{"self", t(x)}, {"pad", ints(padList(r, x, k, mode != "constant"))}, {"mode", str(mode)}}};
    // The value: left out (None, the schema's default) half the time.
    if (mode == "constant" && r.coin()) sample.args.emplace_back("value", f(r.coin() ? 0.0 : -2.0));
    return sample;
  }));
  for (int k = 1; k <= 3; ++k) {
    const std::string n = std::to_string(k);
    for (const std::string& op : {"aten::reflection_pad" + n + "d", "aten::replication_pad" + n + "d"})
      s.push_back(entry(op, [k, op](Rand& r) {
        const ir::Shape x = spatialShape(r, k, true, 3, k == 3 ? 4 : 5);
        return OpSample{"", "", {{"self", t(x)}, {"padding", ints(padList(r, x, k, true))}}};
      }));
  }
  s.push_back(entry("aten::roll", [](Rand& r) {
    const ir::Shape x = r.shape(static_cast<int>(r.range(1, 4)), 1, 6);
    std::vector<int64_t> shifts, dims;
    if (r.coin(0.85)) {
      for (int d = 0; d < static_cast<int>(x.size()); ++d)
        if (r.coin(0.5)) {
          dims.push_back(r.coin(0.3) ? d - static_cast<int>(x.size()) : d);
          shifts.push_back(r.range(-3, 7));
        }
      if (dims.empty()) {
        dims.push_back(0);
        shifts.push_back(1);
      }
    } else {
      shifts.push_back(r.range(-3, 7));
    }
    return OpSample{"", "", {{"self", t(x)}, {"shifts", ints(shifts)}, {"dims", ints(dims)}}};
  }));
  return s;
}

std::vector<SampleEntry> activationSamples() {
  std::vector<SampleEntry> s;
  s.push_back(entry("aten::prelu", [](Rand& r) {
    const ir::Shape x = r.shape(static_cast<int>(r.range(1, 4)), 1, 6);
    const int64_t channels = x.size() >= 2 ? x[1] : 1;  // a 1-D input has one slope
    return OpSample{"", "", {{"self", t(x)}, {"weight", param({r.coin() ? channels : 1})}}};
  }));
  s.push_back(entry("aten::glu", [](Rand& r) {
    ir::Shape x = r.shape(static_cast<int>(r.range(1, 4)), 1, 5);
    const int64_t dim = r.range(-static_cast<int64_t>(x.size()), static_cast<int64_t>(x.size()) - 1);
    x[static_cast<size_t>(dim < 0 ? dim + static_cast<int64_t>(x.size()) : dim)] = 2 * r.dim(1, 3);
    return OpSample{"", "", {{"self", t(x)}, {"dim", i(dim)}}};
  }));
  return s;
}

}  // namespace hap::test

namespace hap::test {

// rnn_tanh, rnn_relu, gru, lstm (.input): 1-2 layers, one or two directions, with and without
// biases, batch first or not, dropout 0 (or in evaluation). The ops take batched inputs only
// (nn.RNN and its kin unsqueeze an unbatched one before calling them).
std::vector<SampleEntry> recurrentSamples() {
  std::vector<SampleEntry> s;
  struct Layer {
    const char* op;
    int64_t gates;
  };
  for (Layer l : {Layer{"aten::rnn_tanh", 1}, Layer{"aten::rnn_relu", 1}, Layer{"aten::gru", 3}, Layer{"aten::lstm", 4}}) {
    s.push_back({l.op, [l](Rand& r) {
                   const int64_t steps = r.dim(1, 4), batch = r.dim(1, 5), features = r.dim(1, 4), hidden = r.dim(1, 4);
                   const int64_t layers = r.range(1, 2), directions = r.coin() ? 2 : 1;
                   const bool biases = r.coin(0.7), batchFirst = r.coin();
                   const ir::Shape x = batchFirst ? ir::Shape{batch, steps, features} : ir::Shape{steps, batch, features};
                   const ir::Shape h{layers * directions, batch, hidden};
                   std::vector<TensorSpec> params;
                   for (int64_t k = 0; k < layers; ++k)
                     for (int64_t d = 0; d < directions; ++d) {
                       const int64_t in = k == 0 ? features : hidden * directions;
                       params.push_back(param({l.gates * hidden, in}));
                       params.push_back(param({l.gates * hidden, hidden}));
                       if (biases) {
                         params.push_back(param({l.gates * hidden}));
                         params.push_back(param({l.gates * hidden}));
                       }
                     }
                   OpSample sample{"", "input", {{"input", t(x)}}};
                   if (std::string(l.op) == "aten::lstm")
                     sample.args.emplace_back("hx", std::vector<TensorSpec>{t(h), t(h)});
                   else
                     sample.args.emplace_back("hx", t(h));
                   sample.args.emplace_back("params", std::move(params));
                   sample.args.emplace_back("has_biases", b(biases));
                   sample.args.emplace_back("num_layers", i(layers));
                   const bool train = r.coin();
                   sample.args.emplace_back("dropout", f(train || layers == 1 ? 0.0 : 0.5));
                   sample.args.emplace_back("train", b(train));
                   sample.args.emplace_back("bidirectional", b(directions == 2));
                   sample.args.emplace_back("batch_first", b(batchFirst));
                   return sample;
                 }});
  }
  return s;
}

}  // namespace hap::test
