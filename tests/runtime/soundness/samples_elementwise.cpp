// Samples of the elementwise family (engine/rules/elementwise.cpp): unary maths and activations,
// arithmetic and comparisons with broadcasting, logic, where/masked_fill, clamps, casts, copies
// and fills, tril/triu. Each op's in-place form gets the same samples.
#include "tests/runtime/soundness/op_samples.h"

namespace hap::test {
namespace {

constexpr int64_t kFloat32 = 6;  // ScalarType codes of dtype arguments
constexpr int64_t kFloat64 = 7;

using Args = std::vector<std::pair<std::string, ArgValue>>;
using Make = std::function<Args(Rand&, const ir::Shape&)>;

// Adds op (and op_ when `inplace`) with overload `overload`, its arguments made by `make` for a
// random shape of rank 1-4.
void add(std::vector<SampleEntry>& out, const std::string& name, const std::string& overload, bool inplace, Make make) {
  for (int form = 0; form < (inplace ? 2 : 1); ++form) {
    const std::string op = "aten::" + name + (form ? "_" : "");
    out.push_back({op, [overload, make](Rand& r) {
                     const ir::Shape shape = r.shape(static_cast<int>(r.range(1, 4)));
                     return OpSample{"", overload, make(r, shape)};
                   }});
  }
}

Make self(Domain domain = Domain::Normal) {
  return [domain](Rand&, const ir::Shape& s) {
    TensorSpec x = t(s);
    x.domain = domain;
    return Args{{"self", x}};
  };
}

Make selfWith(Args extra, Domain domain = Domain::Normal) {
  return [extra, domain](Rand&, const ir::Shape& s) {
    TensorSpec x = t(s);
    x.domain = domain;
    Args a{{"self", x}};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
}

// self and a broadcast `other` (either side may be the smaller one; in-place forms keep self full).
Make binary(Domain domain = Domain::Normal, Domain otherDomain = Domain::Normal, Args extra = {},
            ir::DType dtype = ir::DType::Float64, const char* otherName = "other") {
  return [=](Rand& r, const ir::Shape& s) {
    TensorSpec x = t(s, dtype), y = t(r.broadcastable(s), dtype);
    x.domain = domain;
    y.domain = otherDomain;
    if (dtype == ir::DType::Bool) x.domain = y.domain = Domain::Mask;
    Args a{{"self", x}, {otherName, y}};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
}

Make withScalar(ir::Constant other, Args extra = {}, Domain domain = Domain::Normal, ir::DType dtype = ir::DType::Float64) {
  return [=](Rand&, const ir::Shape& s) {
    TensorSpec x = t(s, dtype);
    x.domain = dtype == ir::DType::Bool ? Domain::Mask : domain;
    Args a{{"self", x}, {"other", other}};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
}

}  // namespace

std::vector<SampleEntry> elementwiseSamples() {
  std::vector<SampleEntry> s;
  // Unary, not linear.
  for (const char* op : {"relu", "relu6", "gelu", "tanh", "sigmoid", "exp", "exp2", "expm1", "abs", "sign", "silu",
                         "erf", "erfc", "sin", "cos", "square", "floor", "ceil", "round", "trunc", "frac",
                         "hardsigmoid", "hardswish", "selu", "mish"})
    add(s, op, "", true, self());
  for (const char* op : {"log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal"})
    add(s, op, "", true, self(Domain::Positive));
  add(s, "gelu", "", false, selfWith({{"approximate", str("tanh")}}));
  add(s, "round", "decimals", true, selfWith({{"decimals", i(1)}}));
  add(s, "hardtanh", "", true, selfWith({{"min_val", f(-0.5)}, {"max_val", f(0.7)}}));
  add(s, "leaky_relu", "", true, selfWith({{"negative_slope", f(0.2)}}));
  add(s, "elu", "", true, selfWith({{"alpha", f(1.3)}}));
  add(s, "celu", "", true, selfWith({{"alpha", f(0.7)}}));
  add(s, "threshold", "", true, selfWith({{"threshold", f(0.1)}, {"value", f(-2.0)}}));
  add(s, "clamp", "", true, selfWith({{"min", f(-0.5)}, {"max", f(0.8)}}));
  add(s, "clamp", "Tensor", true, [](Rand& r, const ir::Shape& sh) {
    return Args{{"self", t(sh)}, {"min", t(r.broadcastable(sh))}};
  });
  add(s, "clamp_min", "", true, selfWith({{"min", f(-0.3)}}));
  add(s, "clamp_max", "", true, selfWith({{"max", f(0.3)}}));
  add(s, "clip", "", true, selfWith({{"min", f(-0.5)}, {"max", f(0.5)}}));
  add(s, "nan_to_num", "", true, selfWith({{"nan", f(0.0)}}));
  add(s, "pow", "Tensor_Scalar", false, selfWith({{"exponent", f(2.5)}}, Domain::Positive));
  add(s, "pow", "Tensor_Tensor", false, binary(Domain::Positive, Domain::Normal, {}, ir::DType::Float64, "exponent"));
  s.push_back({"aten::pow_", [](Rand& r) {  // in place: pow_.Scalar and pow_.Tensor
                 const ir::Shape sh = r.shape(static_cast<int>(r.range(1, 4)));
                 if (r.coin()) return OpSample{"", "Scalar", {{"self", positive(sh)}, {"exponent", f(1.5)}}};
                 return OpSample{"", "Tensor", {{"self", positive(sh)}, {"exponent", t(r.broadcastable(sh))}}};
               }});
  add(s, "isnan", "", false, self());
  add(s, "softplus", "", false, selfWith({{"beta", f(2.0)}, {"threshold", f(1.0)}}));
  add(s, "maximum", "", false, binary());
  add(s, "minimum", "", false, binary());
  add(s, "floor_divide", "", false, binary(Domain::Normal, Domain::Positive));
  add(s, "floor_divide_", "Tensor", false, binary(Domain::Normal, Domain::Positive));
  add(s, "remainder", "Tensor", true, binary(Domain::Normal, Domain::Positive));
  add(s, "fmod", "Scalar", true, withScalar(f(0.7)));
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    add(s, op, "Tensor", true, binary(Domain::Integer, Domain::Integer));
    add(s, op, "Scalar", true, withScalar(f(0.0)));
  }
  add(s, "logical_not", "", true, self());
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) add(s, op, "", true, binary());
  add(s, "bitwise_not", "", true, [](Rand&, const ir::Shape& sh) { return Args{{"self", mask(sh)}}; });
  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor"})
    add(s, op, "Tensor", true, binary(Domain::Mask, Domain::Mask, {}, ir::DType::Bool));
  for (const char* op : {"__and__", "__or__", "__xor__", "__iand__", "__ior__", "__ixor__"})
    add(s, op, "Tensor", false, binary(Domain::Mask, Domain::Mask, {}, ir::DType::Bool));

  // Linear in some arguments.
  add(s, "neg", "", true, self());
  add(s, "positive", "", false, self());
  add(s, "detach", "", true, self());
  add(s, "zero", "", true, self());
  for (const char* op : {"add", "sub", "subtract"}) {
    add(s, op, "Tensor", true, binary(Domain::Normal, Domain::Normal, {{"alpha", f(0.5)}}));
    add(s, op, "Scalar", true, withScalar(f(1.5)));
    add(s, op, "Scalar", true, withScalar(f(0.0)));  // a zero scalar keeps partial sums exact
  }
  add(s, "rsub", "Tensor", false, binary(Domain::Normal, Domain::Normal, {{"alpha", f(2.0)}}));
  add(s, "rsub", "Scalar", false, withScalar(f(1.0)));
  for (const char* op : {"mul", "multiply"}) {
    add(s, op, "Tensor", true, binary());
    add(s, op, "Scalar", true, withScalar(f(-1.5)));
  }
  for (const char* op : {"div", "divide"}) {
    add(s, op, "Tensor", true, binary(Domain::Normal, Domain::Positive));
    add(s, op, "Scalar", true, withScalar(f(3.0)));
    add(s, op, "Tensor_mode", true, binary(Domain::Normal, Domain::Positive, {{"rounding_mode", str("floor")}}));
  }
  add(s, "true_divide", "Tensor", true, binary(Domain::Normal, Domain::Positive));
  add(s, "addcmul", "", true, [](Rand& r, const ir::Shape& sh) {
    return Args{{"self", t(sh)}, {"tensor1", t(r.broadcastable(sh))}, {"tensor2", t(r.broadcastable(sh))}, {"value", f(0.5)}};
  });
  add(s, "addcdiv", "", true, [](Rand& r, const ir::Shape& sh) {
    return Args{{"self", t(sh)}, {"tensor1", t(r.broadcastable(sh))}, {"tensor2", positive(r.broadcastable(sh))},
                {"value", f(0.5)}};
  });
  add(s, "lerp", "Scalar", true, [](Rand& r, const ir::Shape& sh) {
    return Args{{"self", t(sh)}, {"end", t(r.broadcastable(sh))}, {"weight", f(0.3)}};
  });
  add(s, "lerp", "Tensor", true, [](Rand& r, const ir::Shape& sh) {
    return Args{{"self", t(sh)}, {"end", t(sh)}, {"weight", t(r.broadcastable(sh))}};
  });
  add(s, "where", "self", false, [](Rand& r, const ir::Shape& sh) {
    return Args{{"condition", mask(r.broadcastable(sh))}, {"self", t(sh)}, {"other", t(r.broadcastable(sh))}};
  });
  add(s, "where", "ScalarOther", false, [](Rand& r, const ir::Shape& sh) {
    return Args{{"condition", mask(r.broadcastable(sh))}, {"self", t(sh)}, {"other", f(-1.0)}};
  });
  add(s, "masked_fill", "Scalar", true, [](Rand& r, const ir::Shape& sh) {
    return Args{{"self", t(sh)}, {"mask", mask(r.broadcastable(sh))}, {"value", f(r.coin() ? 0.0 : -1e4)}};
  });
  add(s, "masked_fill", "Tensor", true, [](Rand& r, const ir::Shape& sh) {
    return Args{{"self", t(sh)}, {"mask", mask(r.broadcastable(sh))}, {"value", t({})}};
  });
  s.push_back({"aten::copy_", [](Rand& r) {
                 const ir::Shape sh = r.shape(static_cast<int>(r.range(1, 4)));
                 return OpSample{"", "", {{"self", t(sh)}, {"src", t(r.broadcastable(sh))}}};
               }});
  s.push_back({"aten::copy", [](Rand& r) {
                 const ir::Shape sh = r.shape(static_cast<int>(r.range(1, 4)));
                 return OpSample{"", "", {{"self", t(sh)}, {"src", t(r.broadcastable(sh))}}};
               }});
  add(s, "fill", "Scalar", true, selfWith({{"value", f(0.25)}}));
  add(s, "fill", "Tensor", true, selfWith({{"value", t({})}}));
  add(s, "to", "dtype", false, selfWith({{"dtype", i(kFloat32)}}));
  add(s, "to", "other", false, [](Rand&, const ir::Shape& sh) { return Args{{"self", t(sh)}, {"other", t({})}}; });
  add(s, "_to_copy", "", false, selfWith({{"dtype", i(kFloat64)}}));
  add(s, "type_as", "", false, [](Rand&, const ir::Shape& sh) {
    return Args{{"self", t(sh, ir::DType::Float32)}, {"other", t({2})}};
  });

  // tril/triu over the last two dimensions.
  for (const char* op : {"tril", "triu"})
    for (int form = 0; form < 2; ++form)
      s.push_back({std::string("aten::") + op + (form ? "_" : ""), [](Rand& r) {
                     ir::Shape sh = r.shape(static_cast<int>(r.range(2, 4)));
                     return OpSample{"", "", {{"self", t(sh)}, {"diagonal", i(r.range(-1, 1))}}};
                   }});
  return s;
}

}  // namespace hap::test
