// Samples of the random family (engine/rules/random.cpp) and of the factories
// (engine/rules/factory.cpp). The test seeds the generator alike for the single-device op and
// every rank, as the trainer does each iteration.
#include "tests/runtime/soundness/op_samples.h"

namespace hap::test {
namespace {

constexpr int64_t kFloat64 = 7;  // ScalarType code

ir::Shape anyShape(Rand& r, int lo = 1, int hi = 4) { return r.shape(static_cast<int>(r.range(lo, hi))); }

SampleEntry entry(std::string op, SampleFn make) { return {std::move(op), std::move(make)}; }

}  // namespace

std::vector<SampleEntry> randomSamples() {
  std::vector<SampleEntry> s;
  for (const char* op : {"dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"}) {
    s.push_back(entry(std::string("aten::") + op, [](Rand& r) {
      return OpSample{"", "", {{"input", t(anyShape(r, 2, 4))}, {"p", f(0.3)}, {"train", b(true)}}};
    }));
    s.push_back(entry(std::string("aten::") + op + "_", [](Rand& r) {
      return OpSample{"", "", {{"self", t(anyShape(r, 2, 4))}, {"p", f(0.3)}, {"train", b(true)}}};
    }));
  }
  s.push_back(entry("aten::native_dropout", [](Rand& r) {
    return OpSample{"", "", {{"input", t(anyShape(r))}, {"p", f(0.4)}, {"train", b(true)}}};
  }));
  s.push_back(entry("aten::bernoulli", [](Rand& r) { return OpSample{"", "", {{"self", probability(anyShape(r))}}}; }));
  s.push_back(entry("aten::bernoulli", [](Rand& r) { return OpSample{"", "p", {{"self", t(anyShape(r))}, {"p", f(0.3)}}}; }));
  s.push_back(entry("aten::bernoulli_", [](Rand& r) { return OpSample{"", "float", {{"self", t(anyShape(r))}, {"p", f(0.7)}}}; }));
  s.push_back(entry("aten::uniform_", [](Rand& r) {
    return OpSample{"", "", {{"self", t(anyShape(r))}, {"from", f(-1.0)}, {"to", f(2.0)}}};
  }));
  s.push_back(entry("aten::normal", [](Rand& r) {
    return OpSample{"", "Tensor_float", {{"mean", t(anyShape(r))}, {"std", f(0.5)}}};
  }));
  s.push_back(entry("aten::normal_", [](Rand& r) { return OpSample{"", "", {{"self", t(anyShape(r))}, {"std", f(2.0)}}}; }));
  for (const char* op : {"rand", "randn"})
    s.push_back(entry(std::string("aten::") + op, [](Rand& r) {
      return OpSample{"", "", {{"size", ints(anyShape(r))}, {"dtype", i(kFloat64)}}};
    }));
  s.push_back(entry("aten::randint", [](Rand& r) {
    return OpSample{"", "", {{"high", i(9)}, {"size", ints(anyShape(r))}}};
  }));
  for (const char* op : {"rand_like", "randn_like"})
    s.push_back(entry(std::string("aten::") + op, [](Rand& r) { return OpSample{"", "", {{"self", t(anyShape(r))}}}; }));
  s.push_back(entry("aten::randint_like", [](Rand& r) {
    return OpSample{"", "", {{"self", t(anyShape(r))}, {"high", i(5)}}};
  }));
  return s;
}

std::vector<SampleEntry> factorySamples() {
  std::vector<SampleEntry> s;
  s.push_back(entry("aten::arange", [](Rand& r) {
    return OpSample{"", "start_step", {{"start", i(r.range(-3, 3))}, {"end", i(r.range(5, 20))}, {"step", i(r.range(1, 3))}}};
  }));
  s.push_back(entry("aten::linspace", [](Rand& r) {
    return OpSample{"", "", {{"start", f(-1.0)}, {"end", f(2.0)}, {"steps", i(r.range(2, 9))}, {"dtype", i(kFloat64)}}};
  }));
  s.push_back(entry("aten::eye", [](Rand& r) { return OpSample{"", "m", {{"n", i(r.dim(2, 7))}, {"m", i(r.dim(2, 7))}}}; }));
  for (const char* op : {"zeros", "ones"})
    s.push_back(entry(std::string("aten::") + op, [](Rand& r) {
      return OpSample{"", "", {{"size", ints(anyShape(r))}, {"dtype", i(kFloat64)}}};
    }));
  s.push_back(entry("aten::full", [](Rand& r) {
    return OpSample{"", "", {{"size", ints(anyShape(r))}, {"fill_value", f(2.5)}, {"dtype", i(kFloat64)}}};
  }));
  // empty's values are undefined: the sample fills them (the test compares shapes through a fill).
  s.push_back(entry("aten::empty", [](Rand& r) {
    return OpSample{"", "memory_format", {{"size", ints(anyShape(r))}, {"dtype", i(kFloat64)}}};
  }));
  s.push_back(entry("aten::empty_strided", [](Rand& r) {
    ir::Shape shape = anyShape(r, 1, 3);
    std::vector<int64_t> stride(shape.size(), 1);
    for (size_t k = shape.size() - 1; k > 0; --k) stride[k - 1] = stride[k] * shape[k];
    return OpSample{"", "", {{"size", ints(shape)}, {"stride", ints(stride)}, {"dtype", i(kFloat64)}}};
  }));
  s.push_back(entry("aten::scalar_tensor", [](Rand&) { return OpSample{"", "", {{"s", f(1.5)}, {"dtype", i(kFloat64)}}}; }));
  for (const char* op : {"new_zeros", "new_ones", "new_empty"})
    s.push_back(entry(std::string("aten::") + op, [](Rand& r) {
      return OpSample{"", "", {{"self", t({2})}, {"size", ints(anyShape(r))}}};
    }));
  s.push_back(entry("aten::new_full", [](Rand& r) {
    return OpSample{"", "", {{"self", t({2})}, {"size", ints(anyShape(r))}, {"fill_value", f(-1.0)}}};
  }));
  for (const char* op : {"zeros_like", "ones_like", "empty_like"})
    s.push_back(entry(std::string("aten::") + op, [](Rand& r) { return OpSample{"", "", {{"self", t(anyShape(r))}}}; }));
  s.push_back(entry("aten::full_like", [](Rand& r) {
    return OpSample{"", "", {{"self", t(anyShape(r))}, {"fill_value", f(3.0)}}};
  }));
  return s;
}

}  // namespace hap::test
