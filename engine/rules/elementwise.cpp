// Elementwise ops: activations and other unary maths, arithmetic and comparisons with
// broadcasting, logic, where/masked_fill, clamps, casts, copies and fills.
//
// Every one passes G(d) through for every output dimension d, the inputs broadcast along d being
// replicated (appendPointwiseShards). An op that is linear in a group of its arguments, the others
// held fixed, also passes R: with the group's arguments partial sums and the others replicated,
// the local results add up to the result (add: R+R; mul: R×I and I×R; div: R/I). A scalar in a
// group would be counted once per device, so it must be zero (add(R, 1) has no R variant).
#include <algorithm>
#include <string>
#include <unordered_map>
#include <variant>

#include "engine/rules/broadcast.h"
#include "engine/rules/families.h"

namespace hap::rules {

std::vector<rules::Rel> broadcastInputs(const ir::Graph& g, const ir::Node& n,
                                        const ir::Shape& shape, int d) {
  std::vector<rules::Rel> rels;
  for (ir::ValueId id : n.tensorInputs()) {
    const ir::Shape& in = g.value(id).shape;
    int aligned = d - static_cast<int>(shape.size()) + static_cast<int>(in.size());
    bool sharded =
        aligned >= 0 && in[static_cast<size_t>(aligned)] == shape[static_cast<size_t>(d)];
    rels.push_back(sharded ? rules::gather(aligned) : rules::kIdentity);
  }
  return rels;
}

void appendPointwiseShards(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out,
                           std::string_view note) {
  const ir::Value& result = output(g, n);
  for (int d = 0; d < result.rank(); ++d) {
    if (!shardable(result, d)) continue;
    out.push_back(makeVariant("shard", broadcastInputs(g, n, result.shape, d),
                              std::vector<rules::Rel>(n.outputs.size(), rules::gather(d)),
                              std::string(note)));
    // Without tensor inputs nothing gives the piece's shape: made full size, the piece kept.
    if (n.tensorInputs().empty()) out.back().execution = Execution::FactoryPiece;
  }
}

void pointwiseRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  appendPointwiseShards(g, n, out);
}

namespace {

using Group = std::vector<std::string_view>;

struct OpSpec {
  std::string_view name;  // without "aten::"
  bool hasInplace;        // "aten::<name>_" exists: registered with the same rule
  // Groups of arguments in each of which the op is linear (jointly), the others held fixed.
  std::vector<Group> linear = {};
  // Linear only between floating dtypes: a cast to an integer type truncates. Between floating
  // types the partials are rounded separately, which differs from rounding the sum only by float
  // rounding (the tolerance of exactness).
  bool floatingOnly = false;
};

const std::vector<OpSpec>& specs() {
  static const std::vector<OpSpec> table = {
      // Not linear in any argument: G passes through only.
      // clang-format off
      {"relu", true}, {"relu6", true}, {"gelu", true}, {"tanh", true}, {"sigmoid", true},
      {"exp", true}, {"exp2", true}, {"expm1", true}, {"log", true}, {"log2", true},
      {"log10", true}, {"log1p", true}, {"sqrt", true}, {"rsqrt", true}, {"abs", true},
      {"sign", true}, {"silu", true}, {"erf", true}, {"erfc", true}, {"sin", true}, {"cos", true},
      {"reciprocal", true}, {"square", true}, {"floor", true}, {"ceil", true}, {"round", true},
      {"trunc", true}, {"frac", true}, {"hardtanh", true}, {"hardsigmoid", true},
      {"hardswish", true}, {"leaky_relu", true}, {"elu", true}, {"selu", true}, {"celu", true},
      {"mish", true}, {"threshold", true}, {"clamp", true}, {"clamp_min", true},
      {"clamp_max", true}, {"clip", true}, {"nan_to_num", true}, {"pow", true}, {"isnan", false},
      {"softplus", false}, {"maximum", false}, {"minimum", false}, {"floor_divide", true},
      {"remainder", true}, {"fmod", true}, {"eq", true}, {"ne", true}, {"lt", true}, {"le", true},
      {"gt", true}, {"ge", true}, {"logical_not", true}, {"logical_and", true},
      {"logical_or", true}, {"logical_xor", true}, {"bitwise_not", true}, {"bitwise_and", true},
      {"bitwise_or", true}, {"bitwise_xor", true}, {"__and__", false}, {"__or__", false},
      {"__xor__", false}, {"__iand__", false}, {"__ior__", false}, {"__ixor__", false},
      // clang-format on
      // Linear.
      {"neg", true, {{"self"}}},
      {"positive", false, {{"self"}}},
      {"detach", true, {{"self"}}},
      {"zero", true, {{"self"}}},  // 0·self
      {"add", true, {{"self", "other"}}},
      {"sub", true, {{"self", "other"}}},
      {"subtract", true, {{"self", "other"}}},
      {"rsub", false, {{"self", "other"}}},
      {"mul", true, {{"self"}, {"other"}}},
      {"multiply", true, {{"self"}, {"other"}}},
      {"div", true, {{"self"}}},
      {"divide", true, {{"self"}}},
      {"true_divide", true, {{"self"}}},
      {"addcmul", true, {{"self", "tensor1"}, {"self", "tensor2"}}},
      {"addcdiv", true, {{"self", "tensor1"}}},
      {"lerp", true, {{"self", "end"}}},  // (1 − weight)·self + weight·end
      {"where", false, {{"self", "other"}}},
      {"masked_fill", true, {{"self", "value"}}},
      {"copy", true, {{"self", "src", "other"}}},  // the result is src (other) broadcast
      {"fill", true, {{"self", "value"}}},         // the result is value broadcast
      {"to", false, {{"self"}}, true},
      {"_to_copy", false, {{"self"}}, true},
      {"type_as", false, {{"self"}}, true},  // `other` only gives the dtype
  };
  return table;
}

// A scalar in a linear group contributes once per device; only zero stays exact.
bool isZero(const ir::Constant& c) {
  if (auto* i = std::get_if<int64_t>(&c)) return *i == 0;
  if (auto* f = std::get_if<double>(&c)) return *f == 0;
  if (auto* b = std::get_if<bool>(&c)) return !*b;
  return false;
}

bool isInplace(const ir::Node& n) {
  return n.inplace || (n.op.ends_with('_') && !n.op.ends_with("__"));
}

// Appends R for the group: its tensors R, the other tensor inputs I. Not for a group without a
// tensor, with a nonzero scalar, or with a bool tensor (the sum of bools is not their "or").
void appendPartial(const ir::Graph& g, const ir::Node& n, const Group& group,
                   std::vector<Variant>& out) {
  std::vector<rules::Rel> ins;
  bool anyTensor = false;
  for (const ir::Arg& a : n.args) {
    bool inGroup = std::find(group.begin(), group.end(), a.name) != group.end();
    if (a.kind == ir::Arg::Kind::Constant) {
      if (inGroup && !isZero(a.constant)) return;
      continue;
    }
    for (ir::ValueId id : a.values) {
      if (inGroup && g.value(id).dtype == ir::DType::Bool) return;
      anyTensor |= inGroup;
      ins.push_back(inGroup ? rules::kReduce : rules::kIdentity);
    }
  }
  // The result of an in-place op is its first input, with that input's relation.
  if (!anyTensor || (isInplace(n) && ins.front() != rules::kReduce)) return;
  out.push_back(makeVariant("partial", std::move(ins),
                            std::vector<rules::Rel>(n.outputs.size(), rules::kReduce)));
}

struct Table {
  std::vector<std::string> names;  // qualified, in-place forms included
  std::vector<RuleEntry> entries;
  std::unordered_map<std::string_view, const OpSpec*> specByName;
};

void elementwiseRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out);

const Table& opTable() {
  static const Table table = [] {
    Table t;
    std::vector<const OpSpec*> specOfName;
    for (const OpSpec& s : specs()) {
      t.names.push_back("aten::" + std::string(s.name));
      specOfName.push_back(&s);
      if (s.hasInplace) {
        t.names.push_back(t.names.back() + "_");
        specOfName.push_back(&s);
      }
    }
    for (size_t i = 0; i < t.names.size(); ++i) {  // names no longer move: views stay valid
      t.entries.push_back({t.names[i], elementwiseRule});
      t.specByName.emplace(t.names[i], specOfName[i]);
    }
    return t;
  }();
  return table;
}

void elementwiseRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  appendPointwiseShards(g, n, out);
  const OpSpec& spec = *opTable().specByName.at(n.op);
  ir::DType result = output(g, n).dtype;
  if (result == ir::DType::Bool) return;
  // div with rounding_mode "floor" or "trunc" rounds each partial.
  const ir::Arg* rounding = n.arg("rounding_mode");
  if (rounding && std::holds_alternative<std::string>(rounding->constant)) return;
  if (spec.floatingOnly && !(ir::isFloating(tensorInput(g, n, 0).dtype) && ir::isFloating(result)))
    return;
  for (const Group& group : spec.linear) appendPartial(g, n, group, out);
}

// tril/triu keep the elements on one side of a diagonal of the last two dimensions: which ones
// depends on the global position there, so only the leading (batch) dimensions shard. Linear.
void triangleRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& result = output(g, n);
  for (int d = 0; d < result.rank() - 2; ++d)
    if (shardable(result, d))
      out.push_back(makeVariant("shard", {rules::gather(d)}, {rules::gather(d)}));
  if (result.dtype != ir::DType::Bool)
    out.push_back(makeVariant("partial", {rules::kReduce}, {rules::kReduce}));
}

constexpr RuleEntry kTriangleRules[] = {
    {"aten::tril", triangleRule},
    {"aten::tril_", triangleRule},
    {"aten::triu", triangleRule},
    {"aten::triu_", triangleRule},
};

}  // namespace

std::span<const RuleEntry> elementwiseRules() {
  static const std::vector<RuleEntry> entries = [] {
    std::vector<RuleEntry> all = opTable().entries;
    all.insert(all.end(), std::begin(kTriangleRules), std::end(kTriangleRules));
    return all;
  }();
  return entries;
}

}  // namespace hap::rules
