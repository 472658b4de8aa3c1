// Samples of the reduction family (engine/rules/reduction.cpp) and of softmax
// (engine/rules/softmax.cpp): random ranks, reduced dimensions (negative ones too) and keepdim.
#include <algorithm>

#include "tests/runtime/soundness/op_samples.h"

namespace hap::test {
namespace {

constexpr int64_t kFloat64 = 7;

ir::Shape anyShape(Rand& r, int lo = 1, int hi = 4) { return r.shape(static_cast<int>(r.range(lo, hi))); }

// A random non-empty subset of the dimensions, some written negative.
std::vector<int64_t> someDims(Rand& r, int rank) {
  std::vector<int64_t> dims;
  for (int d = 0; d < rank; ++d)
    if (r.coin()) dims.push_back(r.coin(0.3) ? d - rank : d);
  if (dims.empty()) dims.push_back(r.range(0, rank - 1));
  return dims;
}

int64_t oneDim(Rand& r, int rank) { return r.range(-rank, rank - 1); }

SampleEntry entry(std::string op, SampleFn make) { return {std::move(op), std::move(make)}; }

// op(self, dim-list, keepdim) under `overload`, plus extra arguments.
SampleEntry dimList(const std::string& op, const std::string& overload, const char* dimName = "dim",
                    std::vector<std::pair<std::string, ArgValue>> extra = {}, Domain domain = Domain::Normal,
                    int64_t smallest = 1) {
  return entry(op, [=](Rand& r) {
    const ir::Shape shape = r.shape(static_cast<int>(r.range(1, 4)), smallest);
    TensorSpec x = t(shape);
    x.domain = domain;
    OpSample s{"", overload, {{"self", x}, {dimName, ints(someDims(r, static_cast<int>(shape.size())))}, {"keepdim", b(r.coin())}}};
    s.args.insert(s.args.end(), extra.begin(), extra.end());
    return s;
  });
}

// op(self, dim, keepdim) with one dimension.
SampleEntry oneDimOp(const std::string& op, const std::string& overload, ir::DType dtype = ir::DType::Float64) {
  return entry(op, [=](Rand& r) {
    const ir::Shape shape = anyShape(r);
    TensorSpec x = t(shape, dtype);
    if (dtype == ir::DType::Bool) x.domain = Domain::Mask;
    return OpSample{"", overload, {{"self", x}, {"dim", i(oneDim(r, static_cast<int>(shape.size())))}, {"keepdim", b(r.coin())}}};
  });
}

SampleEntry whole(const std::string& op, const std::string& overload, ir::DType dtype = ir::DType::Float64,
                  Domain domain = Domain::Normal) {
  return entry(op, [=](Rand& r) {
    TensorSpec x = t(anyShape(r), dtype);
    x.domain = dtype == ir::DType::Bool ? Domain::Mask : domain;
    return OpSample{"", overload, {{"self", x}}};
  });
}

}  // namespace

std::vector<SampleEntry> reductionSamples() {
  std::vector<SampleEntry> s;
  s.push_back(dimList("aten::sum", "dim_IntList"));
  s.push_back(whole("aten::sum", ""));
  s.push_back(dimList("aten::sum", "dim_IntList", "dim", {}, Domain::Integer));
  s.push_back(entry("aten::sum", [](Rand& r) {  // integers summed: exact and linear
    const ir::Shape shape = anyShape(r);
    return OpSample{"", "dim_IntList", {{"self", integer(shape)}, {"dim", ints(someDims(r, static_cast<int>(shape.size())))}}};
  }));
  s.push_back(entry("aten::sum", [](Rand& r) {  // a float summed into float64... and bools counted
    const ir::Shape shape = anyShape(r);
    return OpSample{"", "dim_IntList", {{"self", mask(shape)}, {"dim", ints(someDims(r, static_cast<int>(shape.size())))}}};
  }));
  s.push_back(dimList("aten::nansum", "", "dim"));
  s.push_back(dimList("aten::mean", "dim", "dim"));
  s.push_back(whole("aten::mean", ""));
  s.push_back(dimList("aten::mean", "dim", "dim", {{"dtype", i(kFloat64)}}));
  s.push_back(dimList("aten::amax", ""));
  s.push_back(dimList("aten::amin", ""));
  s.push_back(oneDimOp("aten::max", "dim"));
  s.push_back(whole("aten::max", ""));
  s.push_back(entry("aten::max", [](Rand& r) {
    const ir::Shape shape = anyShape(r);
    return OpSample{"", "other", {{"self", t(shape)}, {"other", t(r.broadcastable(shape))}}};
  }));
  s.push_back(oneDimOp("aten::min", "dim"));
  s.push_back(whole("aten::min", ""));
  s.push_back(oneDimOp("aten::prod", "dim_int"));
  s.push_back(whole("aten::prod", ""));
  s.push_back(entry("aten::norm", [](Rand& r) {
    const ir::Shape shape = anyShape(r);
    return OpSample{"", "ScalarOpt_dim", {{"self", t(shape)}, {"p", f(2.0)}, {"dim", ints(someDims(r, static_cast<int>(shape.size())))}, {"keepdim", b(r.coin())}}};
  }));
  s.push_back(whole("aten::norm", "Scalar"));
  s.push_back(dimList("aten::linalg_vector_norm", "", "dim", {{"ord", f(3.0)}}));
  // Variances over a single element are NaN (unbiased) with NaN-riddled gradients: at least two.
  for (const char* op : {"aten::var", "aten::std", "aten::var_mean", "aten::std_mean"}) {
    s.push_back(dimList(op, "dim", "dim", {{"unbiased", b(true)}}, Domain::Normal, 2));
    s.push_back(dimList(op, "correction", "dim", {{"correction", i(0)}}, Domain::Normal, 2));
    s.push_back(entry(op, [](Rand& r) { return OpSample{"", "", {{"self", t(r.shape(static_cast<int>(r.range(1, 4)), 2))}}}; }));
  }
  s.push_back(dimList("aten::logsumexp", ""));
  for (const char* op : {"aten::argmax", "aten::argmin"}) {
    s.push_back(entry(op, [](Rand& r) {
      const ir::Shape shape = anyShape(r);
      return OpSample{"", "", {{"self", t(shape)}, {"dim", i(oneDim(r, static_cast<int>(shape.size())))}, {"keepdim", b(r.coin())}}};
    }));
    s.push_back(whole(op, ""));
  }
  for (const char* op : {"aten::any", "aten::all"}) {
    s.push_back(oneDimOp(op, "dim", ir::DType::Bool));
    s.push_back(whole(op, "", ir::DType::Bool));
  }
  return s;
}

std::vector<SampleEntry> softmaxSamples() {
  std::vector<SampleEntry> s;
  for (const char* op : {"aten::softmax", "aten::log_softmax"})
    s.push_back(entry(op, [](Rand& r) {
      const ir::Shape shape = anyShape(r);
      return OpSample{"", "int", {{"self", t(shape)}, {"dim", i(oneDim(r, static_cast<int>(shape.size())))}}};
    }));
  for (const char* op : {"aten::_softmax", "aten::_log_softmax"})
    s.push_back(entry(op, [](Rand& r) {
      const ir::Shape shape = anyShape(r);
      return OpSample{"", "", {{"self", t(shape)}, {"dim", i(oneDim(r, static_cast<int>(shape.size())))}, {"half_to_float", b(false)}}};
    }));
  return s;
}

}  // namespace hap::test
