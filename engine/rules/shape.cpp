// Shape ops: views and reshapes (view_algebra.h), permutations, expand, broadcast_tensors and
// repeat, copies, select/slice/narrow, cat/stack, chunk/split/unbind.
//
// All of them move elements without arithmetic, so each is exact on a G(d) input when the
// dimension survives as one dimension whose every device range stays a contiguous range; and all
// are linear, so partial sums pass through (R → R, for several inputs only when all are R).
// Variants are named after the G dimension of the (first) input: "dim2".
#include <variant>
#include <algorithm>
#include <string>

#include "engine/rules/families.h"
#include "engine/rules/variant_util.h"
#include "engine/rules/view_algebra.h"

namespace hap::rules {
namespace {

using rules::gather;
using rules::kIdentity;
using rules::kReduce;
using rules::Rel;

constexpr const char* kLocalSizes = "size arguments use local lengths";
// A local piece of length 1 must survive: squeeze() and squeeze(dim) decide by local lengths.
constexpr const char* kSqueezeReference = "squeeze only the reference's length-1 dimensions";

std::string dimName(int d) { return "dim" + std::to_string(d); }

// Every input with relation `in`, every output with `outRel`.
Variant uniform(std::string name, const ir::Node& n, Rel in, Rel outRel) {
  Variant v;
  v.name = std::move(name);
  v.inputs.assign(n.tensorInputs().size(), in);
  v.outputs.assign(n.outputs.size(), outRel);
  return v;
}

void appendPartial(const ir::Node& n, std::vector<Variant>& out) {
  out.push_back(uniform("partial", n, kReduce, kReduce));
}

// view, reshape, _unsafe_view, flatten, unflatten, squeeze, unsqueeze, and view_as/reshape_as
// whose second input only gives the output shape (it then holds the output's relation, so that
// its local shape is the local output shape).
void viewRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& y = output(g, n);
  const bool like = n.tensorInputs().size() == 2;
  std::string note;
  if (n.arg("size") || n.arg("shape") || n.arg("sizes"))
    note = kLocalSizes;
  else if (n.op == "aten::squeeze" || n.op == "aten::squeeze_")
    note = kSqueezeReference;
  for (DimLink l : viewDimLinks(x.shape, y.shape)) {
    if (!shardable(x, l.in) || !shardable(y, l.out)) continue;
    Variant v = makeVariant(dimName(l.in), {gather(l.in)}, {gather(l.out)}, note);
    if (like) v.inputs.push_back(gather(l.out));
    v.execution = Execution::ReshapeToPiece;
    out.push_back(std::move(v));
  }
  Variant partial = makeVariant("partial", {kReduce}, {kReduce});
  if (like) partial.inputs.push_back(kIdentity);
  out.push_back(std::move(partial));
}

// Output dimension i is input dimension perm[i].
void appendPermutation(const ir::Graph& g, const ir::Node& n, const std::vector<int>& perm,
                       std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  for (int d = 0; d < x.rank(); ++d) {
    const int i = static_cast<int>(std::find(perm.begin(), perm.end(), d) - perm.begin());
    if (shardable(x, d) && shardable(output(g, n), i))
      out.push_back(makeVariant(dimName(d), {gather(d)}, {gather(i)}));
  }
  appendPartial(n, out);
}

std::vector<int> identityPermutation(int rank) {
  std::vector<int> perm(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) perm[static_cast<size_t>(d)] = d;
  return perm;
}

void permuteRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const int rank = tensorInput(g, n, 0).rank();
  std::vector<int> perm;
  for (int64_t d : intListArg(n, "dims")) perm.push_back(normalizeDim(d, rank));
  if (perm.size() != static_cast<size_t>(rank)) return;
  appendPermutation(g, n, perm, out);
}

// transpose(self, dim0, dim1), swapdims(self, dim0, dim1), swapaxes(self, axis0, axis1), t(self).
void transposeRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const int rank = tensorInput(g, n, 0).rank();
  std::vector<int> perm = identityPermutation(rank);
  if (rank >= 2) {
    const bool axes = n.arg("axis0") != nullptr;
    const int a = normalizeDim(intArg(n, axes ? "axis0" : "dim0", 0), rank);
    const int b = normalizeDim(intArg(n, axes ? "axis1" : "dim1", 1), rank);
    std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
  }
  appendPermutation(g, n, perm, out);
}

// movedim(self, source, destination): the moved dimensions land at their destinations, the
// others keep their order.
void movedimRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const int rank = tensorInput(g, n, 0).rank();
  const std::vector<int64_t> source = intListArg(n, "source");
  const std::vector<int64_t> destination = intListArg(n, "destination");
  if (source.size() != destination.size()) return;
  std::vector<int> perm(static_cast<size_t>(rank), -1);
  std::vector<bool> moved(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < source.size(); ++i) {
    const int s = normalizeDim(source[i], rank);
    perm[static_cast<size_t>(normalizeDim(destination[i], rank))] = s;
    moved[static_cast<size_t>(s)] = true;
  }
  int next = 0;
  for (int& p : perm) {
    if (p >= 0) continue;
    while (moved[static_cast<size_t>(next)]) ++next;
    p = next++;
  }
  appendPermutation(g, n, perm, out);
}

// expand(self, size), broadcast_to(self, size), expand_as(self, other): leading new dimensions
// and length-1 dimensions are broadcast and cannot be split; a dimension kept at its length
// passes G. expand_as's `other` holds the output's relation (its shape is the output shape).
void expandRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& y = output(g, n);
  const bool like = n.tensorInputs().size() == 2;
  const int offset = y.rank() - x.rank();
  for (int d = 0; d < x.rank(); ++d) {
    const int o = d + offset;
    if (!shardable(x, d) || !shardable(y, o) ||
        x.shape[static_cast<size_t>(d)] != y.shape[static_cast<size_t>(o)])
      continue;
    Variant v = makeVariant(dimName(d), {gather(d)}, {gather(o)});
    if (like)
      v.inputs.push_back(gather(o));
    else
      v.note = kLocalSizes;
    v.execution = Execution::ExpandToPiece;
    out.push_back(std::move(v));
  }
  Variant partial = makeVariant("partial", {kReduce}, {kReduce});
  if (like) partial.inputs.push_back(kIdentity);
  out.push_back(std::move(partial));
}

// repeat(self, repeats): a dimension repeated once passes G; a tiled one interleaves copies.
void repeatRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& y = output(g, n);
  const std::vector<int64_t> repeats = intListArg(n, "repeats");
  const int offset = static_cast<int>(repeats.size()) - x.rank();
  if (offset < 0) return;
  for (int d = 0; d < x.rank(); ++d) {
    const int o = d + offset;
    if (shardable(x, d) && shardable(y, o) && repeats[static_cast<size_t>(o)] == 1)
      out.push_back(makeVariant(dimName(d), {gather(d)}, {gather(o)}));
  }
  appendPartial(n, out);
}

// repeat_interleave(self, repeats: int, dim): each element repeated along `dim`; any other
// dimension passes G. `dim` itself passes G by whole groups (grouped-query attention's K/V heads):
// input element i becomes output elements [i*r, (i+1)*r), so the output's dimension (r times
// the input's) is linked to the input's and cut at multiples of r, at the same relative
// positions (synth/dim_classes.h), and each rank repeats its own elements. Without dim the
// tensor is flattened first: partial only. A tensor of repeats (data-dependent lengths) and the
// repeats-only overload have no rule.
void repeatInterleaveRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  if (n.overload != "self_int") return;
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Arg* dim = n.arg("dim");
  const bool flattened = !dim || std::holds_alternative<std::monostate>(dim->constant);
  if (!flattened && x.rank() > 0) {
    const int k = normalizeDim(intArg(n, "dim", 0), x.rank());
    for (int d = 0; d < x.rank(); ++d)
      if (d != k && shardable(x, d)) out.push_back(makeVariant(dimName(d), {gather(d)}, {gather(d)}));
    if (shardable(x, k) && shardable(output(g, n), k))
      out.push_back(makeVariant("groups", {gather(k)}, {gather(k)},
                                "the repeated dimension by whole groups of repeats"));
  }
  appendPartial(n, out);
}

// contiguous, clone: copies.
void copyRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  for (int d = 0; d < x.rank(); ++d)
    if (shardable(x, d)) out.push_back(uniform(dimName(d), n, gather(d), gather(d)));
  appendPartial(n, out);
}

// select(self, dim, index): any other dimension passes G, shifted down past `dim`.
void selectRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const int k = normalizeDim(intArg(n, "dim", 0), x.rank());
  for (int d = 0; d < x.rank(); ++d) {
    const int o = d < k ? d : d - 1;
    if (d != k && shardable(x, d) && shardable(output(g, n), o))
      out.push_back(makeVariant(dimName(d), {gather(d)}, {gather(o)}));
  }
  appendPartial(n, out);
}

// slice(self, dim, start, end, step), narrow(self, dim, start, length): any other dimension
// passes G; the sliced dimension only when the slice keeps all of it (then each device keeps
// all of its own range).
void sliceRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& y = output(g, n);
  const int k = normalizeDim(intArg(n, "dim", 0), x.rank());
  for (int d = 0; d < x.rank(); ++d) {
    if (!shardable(x, d) || !shardable(y, d)) continue;
    const bool whole = x.shape[static_cast<size_t>(d)] == y.shape[static_cast<size_t>(d)];
    if (d == k && !whole) continue;
    Variant v = makeVariant(dimName(d), {gather(d)}, {gather(d)});
    if (d == k) {
      v.note = "slice keeps the sharded dimension whole: take each local range whole";
      v.execution = Execution::WholeCutPiece;
    }
    out.push_back(std::move(v));
  }
  appendPartial(n, out);
}

// cat(tensors, dim): all inputs split alike along another dimension concatenate to the output's
// slices. Splitting along `dim` itself would interleave the inputs' pieces.
void catRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& y = output(g, n);
  const std::vector<ir::ValueId> inputs = n.tensorInputs();
  const bool sameRank = std::all_of(inputs.begin(), inputs.end(),
                                    [&](ir::ValueId id) { return g.value(id).rank() == y.rank(); });
  if (sameRank && y.rank() > 0) {
    const int k = normalizeDim(intArg(n, "dim", 0), y.rank());
    for (int d = 0; d < y.rank(); ++d) {
      const bool split = d != k && std::all_of(inputs.begin(), inputs.end(), [&](ir::ValueId id) {
                           return shardable(g.value(id), d);
                         });
      if (split) out.push_back(uniform(dimName(d), n, gather(d), gather(d)));
    }
  }
  appendPartial(n, out);
}

// stack(tensors, dim): input dimensions shift up past the new one.
void stackRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& y = output(g, n);
  const ir::Value& x = tensorInput(g, n, 0);
  const int k = normalizeDim(intArg(n, "dim", 0), y.rank());
  for (int d = 0; d < x.rank(); ++d) {
    const int o = d < k ? d : d + 1;
    if (shardable(x, d) && shardable(y, o))
      out.push_back(uniform(dimName(d), n, gather(d), gather(o)));
  }
  appendPartial(n, out);
}

// chunk, split, split_with_sizes, tensor_split (sections or int indices) along `dim`,
// unbind(self, dim): another dimension passes G to every piece (shifted down past `dim` for
// unbind, which drops it). tensor_split by a tensor of indices has no rule.
void splitRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  if (n.tensorInputs().size() != 1) return;
  const ir::Value& x = tensorInput(g, n, 0);
  const int k = normalizeDim(intArg(n, "dim", 0), x.rank());
  const bool drops = n.op == "aten::unbind";
  for (int d = 0; d < x.rank(); ++d) {
    const int o = drops && d > k ? d - 1 : d;
    const bool split = d != k && shardable(x, d) &&
                       std::all_of(n.outputs.begin(), n.outputs.end(),
                                   [&](ir::ValueId id) { return shardable(g.value(id), o); });
    if (split) out.push_back(uniform(dimName(d), n, gather(d), gather(o)));
  }
  appendPartial(n, out);
}

// broadcast_tensors(tensors): every output is its input expanded to the common shape. A dimension
// of the common shape shards every output, each input sharded along its aligned dimension where
// it has the common length there and replicated where it broadcasts (length 1, or absent).
void broadcastTensorsRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& y = output(g, n);
  for (int d = 0; d < y.rank(); ++d) {
    if (!shardable(y, d)) continue;
    Variant v = makeVariant(dimName(d), {}, std::vector<Rel>(n.outputs.size(), gather(d)));
    for (ir::ValueId id : n.tensorInputs()) {
      const ir::Value& x = g.value(id);
      const int aligned = d - (y.rank() - x.rank());
      v.inputs.push_back(aligned >= 0 && x.shape[static_cast<size_t>(aligned)] == y.shape[static_cast<size_t>(d)]
                             ? gather(aligned)
                             : kIdentity);
    }
    out.push_back(std::move(v));
  }
  appendPartial(n, out);
}

constexpr RuleEntry kRules[] = {
    {"aten::broadcast_tensors", broadcastTensorsRule},
    {"aten::view", viewRule},
    {"aten::reshape", viewRule},
    {"aten::_unsafe_view", viewRule},
    {"aten::view_as", viewRule},
    {"aten::reshape_as", viewRule},
    {"aten::flatten", viewRule},
    {"aten::unflatten", viewRule},
    {"aten::squeeze", viewRule},
    {"aten::squeeze_", viewRule},
    {"aten::unsqueeze", viewRule},
    {"aten::unsqueeze_", viewRule},
    {"aten::permute", permuteRule},
    {"aten::transpose", transposeRule},
    {"aten::transpose_", transposeRule},
    {"aten::swapaxes", transposeRule},
    {"aten::swapdims", transposeRule},
    {"aten::t", transposeRule},
    {"aten::t_", transposeRule},
    {"aten::movedim", movedimRule},
    {"aten::expand", expandRule},
    {"aten::expand_as", expandRule},
    {"aten::broadcast_to", expandRule},
    {"aten::repeat", repeatRule},
    {"aten::repeat_interleave", repeatInterleaveRule},
    {"aten::contiguous", copyRule},
    {"aten::clone", copyRule},
    {"aten::select", selectRule},
    {"aten::slice", sliceRule},
    {"aten::narrow", sliceRule},
    {"aten::cat", catRule},
    {"aten::concat", catRule},
    {"aten::concatenate", catRule},
    {"aten::stack", stackRule},
    {"aten::chunk", splitRule},
    {"aten::split", splitRule},
    {"aten::split_with_sizes", splitRule},
    {"aten::tensor_split", splitRule},
    {"aten::unbind", splitRule},
};

}  // namespace

std::span<const RuleEntry> shapeRules() { return kRules; }

bool isViewOp(std::string_view op) {
  for (const RuleEntry& e : kRules)
    if (e.op == op) return e.rule == viewRule;
  return false;
}

}  // namespace hap::rules
