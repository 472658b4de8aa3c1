// Matrix products: linear (with its data, sequence, column and row parallel forms and SFB),
// matmul, mm, bmm, mv, dot, outer and einsum by index algebra (einsum.h), and the fused
// addmm/addmv/baddbmm whose addend follows the product.
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/rules/einsum.h"
#include "engine/rules/families.h"
#include "engine/rules/variant_util.h"

namespace hap::rules {
namespace {

using rules::gather;
using rules::kIdentity;
using rules::kIdentitySfb;
using rules::kReduce;
using rules::Rel;

// linear(input [..., I], weight [O, I], bias [O]?) = input·weightᵀ + bias.
//   batch/seq: rows of the input are independent, so any input dimension but the last may be
//     split with the weight and bias whole; "+sfb" is the same with the weight's gradient formed
//     from all-gathered factors (input and output gradient) instead of all-reduced.
//   column: output features are independent: weight and bias rows split, input whole.
//   row: the input features are contracted, so splitting them in input and weight gives partial
//     sums; the bias must then be added once (R).
//   partial: linear in (input, bias) together.
void linearRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& x = tensorInput(g, n, 0);
  const ir::Value& w = tensorInput(g, n, 1);
  const ir::Value& y = output(g, n);
  if (x.rank() == 0 || w.rank() != 2) return;
  const bool bias = n.tensorInputs().size() == 3;
  auto add = [&](std::string name, Rel xr, Rel wr, Rel br, Rel yr, bool sfb) {
    Variant v = makeVariant(std::move(name), {xr, wr}, {yr});
    v.sfb = sfb;
    if (bias) v.inputs.push_back(br);
    out.push_back(std::move(v));
  };
  const int last = x.rank() - 1;
  for (int d = 0; d < last; ++d) {
    if (!shardable(x, d)) continue;
    const std::string name = d == 0 ? "batch" : "seq";
    add(name, gather(d), kIdentity, kIdentity, gather(d), false);
    if (w.kind == ir::ValueKind::Parameter)
      add(name + "+sfb", gather(d), kIdentitySfb, kIdentity, gather(d), true);
  }
  if (shardable(w, 0) && shardable(y, y.rank() - 1))
    add("column", kIdentity, gather(0), gather(0), gather(y.rank() - 1), false);
  if (shardable(x, last) && shardable(w, 1))
    add("row", gather(last), gather(1), kReduce, kReduce, false);
  add("partial", kReduce, kIdentity, kReduce, kReduce, false);
}

// Names of the indices of matmulEquation(): batch dimensions, rows of the first operand,
// columns of the second, and the contracted inner dimension.
std::string matmulName(const EinsumIndex& index) {
  if (index.label.starts_with("...")) return "batch";
  switch (index.label[0]) {
    case 'i': return "row";
    case 'j': return "inner";
    default: return "col";
  }
}

// torch.matmul's semantics as an einsum: 1-D operands are a vector on their side, batch
// dimensions broadcast. mm, bmm, mv and dot are its instances.
std::string matmulEquation(int rankA, int rankB) {
  if (rankA == 1 && rankB == 1) return "j,j->";
  if (rankA == 1) return "j,...jk->...k";
  if (rankB == 1) return "...ij,j->...i";
  return "...ij,...jk->...ik";
}

// The product variants of operands tensorInputs()[first, first + 2).
std::vector<Variant> productVariants(const ir::Graph& g, const ir::Node& n, size_t first,
                                     std::string_view equation) {
  const ir::Value& a = tensorInput(g, n, first);
  const ir::Value& b = tensorInput(g, n, first + 1);
  auto indices = analyzeEinsum(equation, {a.shape, b.shape}, output(g, n).shape);
  if (!indices) return {};
  return einsumVariants(*indices, 2, matmulName);
}

void matmulRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const std::string eq = matmulEquation(tensorInput(g, n, 0).rank(), tensorInput(g, n, 1).rank());
  for (Variant& v : productVariants(g, n, 0, eq)) out.push_back(std::move(v));
}

void outerRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  for (Variant& v : productVariants(g, n, 0, "i,k->ik")) out.push_back(std::move(v));
}

// The relation of the addend of addmm(self, mat1, mat2) = β·self + α·mat1·mat2 (and addmv,
// baddbmm) when the product holds `product`: a partial product needs the addend once (R); a
// product split along an output dimension needs the addend's matching slice, or all of it where
// the addend broadcasts.
Rel addendRel(const ir::Value& addend, const ir::Value& out, Rel product) {
  if (!rules::isGather(product)) return product;
  const int d = product - (out.rank() - addend.rank());
  if (d >= 0 && addend.shape[static_cast<size_t>(d)] == out.shape[static_cast<size_t>(product)])
    return gather(d);
  return kIdentity;
}

void addProductRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Value& addend = tensorInput(g, n, 0);
  const std::string eq = matmulEquation(tensorInput(g, n, 1).rank(), tensorInput(g, n, 2).rank());
  for (Variant& v : productVariants(g, n, 1, eq)) {
    v.inputs.insert(v.inputs.begin(), addendRel(addend, output(g, n), v.outputs[0]));
    out.push_back(std::move(v));
  }
}

std::string einsumName(const EinsumIndex& index) {
  switch (index.kind) {
    case EinsumIndex::Kind::Batch: return "batch(" + index.label + ")";
    case EinsumIndex::Kind::Free: return "free(" + index.label + ")";
    case EinsumIndex::Kind::Contract: break;
  }
  return "contract(" + index.label + ")";
}

// einsum(equation, tensors, path). MoE experts are a batch index (e in "edh,becd->bech"), so
// expert parallelism is its batch variant.
void einsumRule(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out) {
  const ir::Arg* eq = n.arg("equation");
  const auto* text = eq ? std::get_if<std::string>(&eq->constant) : nullptr;
  if (!text) return;
  std::vector<ir::Shape> shapes;
  for (ir::ValueId id : n.tensorInputs()) shapes.push_back(g.value(id).shape);
  auto indices = analyzeEinsum(*text, shapes, output(g, n).shape);
  if (!indices) return;
  for (Variant& v : einsumVariants(*indices, shapes.size(), einsumName))
    out.push_back(std::move(v));
}

constexpr RuleEntry kRules[] = {
    {"aten::linear", linearRule},
    {"aten::matmul", matmulRule},
    {"aten::mm", matmulRule},
    {"aten::bmm", matmulRule},
    {"aten::mv", matmulRule},
    {"aten::dot", matmulRule},
    {"aten::outer", outerRule},
    {"aten::addmm", addProductRule},
    {"aten::addmm_", addProductRule},
    {"aten::addmv", addProductRule},
    {"aten::addmv_", addProductRule},
    {"aten::baddbmm", addProductRule},
    {"aten::baddbmm_", addProductRule},
    {"aten::einsum", einsumRule},
};

}  // namespace

std::span<const RuleEntry> matmulRules() { return kRules; }

}  // namespace hap::rules
