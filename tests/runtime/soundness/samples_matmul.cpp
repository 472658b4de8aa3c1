// Samples of the matrix-product family (engine/rules/matmul.cpp) and of convolution and pooling
// (engine/rules/convolution.cpp).
#include "tests/runtime/soundness/op_samples.h"

namespace hap::test {
namespace {

ir::Shape anyShape(Rand& r, int lo, int hi) { return r.shape(static_cast<int>(r.range(lo, hi))); }

SampleEntry entry(std::string op, SampleFn make) { return {std::move(op), std::move(make)}; }

// Leading batch dimensions for matmul, broadcast against each other.
void batchDims(Rand& r, ir::Shape& a, ir::Shape& b) {
  const int64_t n = r.range(0, 2);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t d = r.dim(2, 4);
    a.insert(a.begin(), r.coin(0.2) ? 1 : d);
    if (r.coin(0.8)) b.insert(b.begin(), r.coin(0.2) ? 1 : d);
  }
}

}  // namespace

std::vector<SampleEntry> matmulSamples() {
  std::vector<SampleEntry> s;
  s.push_back(entry("aten::linear", [](Rand& r) {
    ir::Shape x = anyShape(r, 1, 4);
    const int64_t in = x.back(), out = r.dim(1, 7);
    return OpSample{"", "", {{"input", t(x)}, {"weight", param({out, in})},
                             {"bias", r.coin(0.7) ? ArgValue(param({out})) : ArgValue(none())}}};
  }));
  s.push_back(entry("aten::matmul", [](Rand& r) {
    const int64_t m = r.dim(), k = r.dim(), n = r.dim();
    ir::Shape a = r.coin(0.15) ? ir::Shape{k} : ir::Shape{m, k};
    ir::Shape b = r.coin(0.15) ? ir::Shape{k} : ir::Shape{k, n};
    if (a.size() == 2 && b.size() == 2) batchDims(r, a, b);
    return OpSample{"", "", {{"self", t(a)}, {"other", t(b)}}};
  }));
  s.push_back(entry("aten::mm", [](Rand& r) {
    const int64_t k = r.dim();
    return OpSample{"", "", {{"self", t({r.dim(), k})}, {"mat2", t({k, r.dim()})}}};
  }));
  s.push_back(entry("aten::bmm", [](Rand& r) {
    const int64_t b = r.dim(1, 4), k = r.dim();
    return OpSample{"", "", {{"self", t({b, r.dim(), k})}, {"mat2", t({b, k, r.dim()})}}};
  }));
  s.push_back(entry("aten::mv", [](Rand& r) {
    const int64_t k = r.dim();
    return OpSample{"", "", {{"self", t({r.dim(), k})}, {"vec", t({k})}}};
  }));
  s.push_back(entry("aten::dot", [](Rand& r) {
    const int64_t k = r.dim();
    return OpSample{"", "", {{"self", t({k})}, {"tensor", t({k})}}};
  }));
  s.push_back(entry("aten::outer", [](Rand& r) { return OpSample{"", "", {{"self", t({r.dim()})}, {"vec2", t({r.dim()})}}}; }));
  for (const char* op : {"aten::addmm", "aten::addmm_"})
    s.push_back(entry(op, [op](Rand& r) {
      const int64_t m = r.dim(), k = r.dim(), n = r.dim();
      const bool inplace = std::string(op).ends_with("_");
      return OpSample{"", "", {{"self", t(inplace ? ir::Shape{m, n} : r.broadcastable({m, n}))}, {"mat1", t({m, k})},
                               {"mat2", t({k, n})}, {"beta", f(0.5)}, {"alpha", f(2.0)}}};
    }));
  for (const char* op : {"aten::addmv", "aten::addmv_"})
    s.push_back(entry(op, [](Rand& r) {
      const int64_t m = r.dim(), k = r.dim();
      return OpSample{"", "", {{"self", t({m})}, {"mat", t({m, k})}, {"vec", t({k})}, {"beta", f(0.5)}}};
    }));
  for (const char* op : {"aten::baddbmm", "aten::baddbmm_"})
    s.push_back(entry(op, [op](Rand& r) {
      const int64_t b = r.dim(1, 4), m = r.dim(), k = r.dim(), n = r.dim();
      const bool inplace = std::string(op).ends_with("_");
      return OpSample{"", "", {{"self", t(inplace ? ir::Shape{b, m, n} : r.broadcastable({b, m, n}))}, {"batch1", t({b, m, k})},
                               {"batch2", t({b, k, n})}, {"alpha", f(0.25)}}};
    }));
  s.push_back(entry("aten::einsum", [](Rand& r) {
    const int64_t b = r.dim(1, 4), h = r.dim(1, 3), q = r.dim(), k = r.dim(), d = r.dim(), e = r.dim(1, 4);
    switch (r.range(0, 5)) {
      case 0: return OpSample{"", "", {{"equation", str("bij,bjk->bik")}, {"tensors", std::vector{t({b, q, d}), t({b, d, k})}}}};
      case 1: return OpSample{"", "", {{"equation", str("bhqd,bhkd->bhqk")}, {"tensors", std::vector{t({b, h, q, d}), t({b, h, k, d})}}}};
      case 2: return OpSample{"", "", {{"equation", str("edh,becd->bech")}, {"tensors", std::vector{t({e, d, h}), t({b, e, q, d})}}}};
      case 3: return OpSample{"", "", {{"equation", str("bsd,de->bse")}, {"tensors", std::vector{t({b, q, d}), t({d, e})}}}};
      case 4: return OpSample{"", "", {{"equation", str("ij,ij->i")}, {"tensors", std::vector{t({q, d}), t({q, d})}}}};
      default: return OpSample{"", "", {{"equation", str("i,j->ij")}, {"tensors", std::vector{t({q}), t({d})}}}};
    }
  }));
  return s;
}

std::vector<SampleEntry> convolutionSamples() {
  std::vector<SampleEntry> s;
  // conv with `spatial` dimensions: groups 1, depthwise, or grouped; stride, padding, dilation.
  auto conv = [](Rand& r, int spatial, bool transposed, bool batched, std::string schema) {
    const int64_t kind = r.range(0, 2);  // 0: groups 1, 1: depthwise, 2: grouped
    const int64_t groups = kind == 0 ? 1 : kind == 1 ? r.dim(2, 5) : r.dim(2, 3);
    const int64_t cin = kind == 1 ? groups : groups * r.dim(1, 3);
    const int64_t cout = kind == 1 ? groups : groups * r.dim(1, 3);
    ir::Shape x;
    if (batched) x.push_back(r.dim(1, 5));
    x.push_back(cin);
    ir::Shape w = transposed ? ir::Shape{cin, cout / groups} : ir::Shape{cout, cin / groups};
    const int64_t k = r.dim(1, 3);
    for (int d = 0; d < spatial; ++d) {
      x.push_back(r.dim(3, 7));
      w.push_back(k);
    }
    std::vector<int64_t> stride(static_cast<size_t>(spatial), r.dim(1, 2)), padding(static_cast<size_t>(spatial), r.range(0, 1)),
        dilation(static_cast<size_t>(spatial), 1);
    OpSample sample{"", "", {{"input", t(x)}, {"weight", param(w)},
                             {"bias", r.coin(0.7) ? ArgValue(param({cout})) : ArgValue(none())},
                             {"stride", ints(stride)}, {"padding", ints(padding)}, {"groups", i(groups)}}};
    if (schema == "convolution" || schema == "_convolution") {
      sample.args.push_back({"dilation", ints(dilation)});
      sample.args.push_back({"transposed", b(transposed)});
      sample.args.push_back({"output_padding", ints(std::vector<int64_t>(static_cast<size_t>(spatial), 0))});
      if (schema == "_convolution")
        for (const char* flag : {"benchmark", "deterministic", "cudnn_enabled", "allow_tf32"}) sample.args.push_back({flag, b(false)});
    } else if (!transposed) {
      sample.args.push_back({"dilation", ints(dilation)});
    }
    return sample;
  };
  for (int d = 1; d <= 3; ++d) {
    s.push_back(entry("aten::conv" + std::to_string(d) + "d", [conv, d](Rand& r) { return conv(r, d, false, r.coin(0.8), "conv"); }));
    s.push_back(entry("aten::conv_transpose" + std::to_string(d) + "d", [conv, d](Rand& r) {
      OpSample sample = conv(r, d, true, true, "conv");
      if (d > 1) sample.overload = "input";
      return sample;
    }));
  }
  s.push_back(entry("aten::convolution", [conv](Rand& r) { return conv(r, 2, r.coin(0.3), true, "convolution"); }));
  s.push_back(entry("aten::_convolution", [conv](Rand& r) { return conv(r, static_cast<int>(r.range(1, 2)), r.coin(0.3), true, "_convolution"); }));
  // Pooling over [N, C, spatial...] (or unbatched [C, spatial...]).
  auto pooled = [](Rand& r, int spatial) {
    ir::Shape x;
    if (r.coin(0.8)) x.push_back(r.dim(1, 5));
    x.push_back(r.dim(1, 5));
    for (int d = 0; d < spatial; ++d) x.push_back(r.dim(3, 7));
    return x;
  };
  for (int d = 1; d <= 3; ++d) {
    const std::string n = std::to_string(d);
    for (std::string op : {"aten::max_pool" + n + "d", "aten::max_pool" + n + "d_with_indices", "aten::avg_pool" + n + "d"})
      s.push_back(entry(op, [pooled, d, op](Rand& r) {
        const std::vector<int64_t> kernel(static_cast<size_t>(d), r.dim(1, 3)), stride(static_cast<size_t>(d), r.dim(1, 2)),
            padding(static_cast<size_t>(d), r.coin(0.3) ? 1 : 0);
        OpSample sample{"", "", {{"self", t(pooled(r, d))}, {"kernel_size", ints(kernel)}, {"stride", ints(stride)},
                                 {"ceil_mode", b(r.coin(0.3))}}};
        if (kernel[0] >= 2) sample.args.push_back({"padding", ints(padding)});
        if (op.find("avg") != std::string::npos) sample.args.push_back({"count_include_pad", b(r.coin())});
        return sample;
      }));
    for (std::string op : {"aten::adaptive_max_pool" + n + "d", "aten::adaptive_avg_pool" + n + "d"})
      s.push_back(entry(op, [pooled, d](Rand& r) {
        return OpSample{"", "", {{"self", t(pooled(r, d))}, {"output_size", ints(std::vector<int64_t>(static_cast<size_t>(d), r.dim(1, 3)))}}};
      }));
  }
  s.push_back(entry("aten::_adaptive_avg_pool2d", [pooled](Rand& r) {
    return OpSample{"", "", {{"self", t(pooled(r, 2))}, {"output_size", ints({r.dim(1, 3), r.dim(1, 3)})}}};
  }));
  return s;
}

}  // namespace hap::test
