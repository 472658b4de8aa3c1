// Index algebra for multilinear ops: einsum, and matmul, mm, bmm, mv, dot, outer through the
// equations they are instances of.
//
// An einsum output element is a sum, over the indices missing from the output, of products of one
// element per operand. Sharding one index i the same way in every operand that has it is
// therefore exact: each device computes the output restricted to its range of i when i is in the
// output (G on i's output dimension), or the partial sum over its range of i when it is not (R).
// Operands without i (or that broadcast it from length 1) are needed whole (I). And the result is
// linear in each operand, so R in one operand with I in all others gives R.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/rules/rule.h"

namespace hap::rules {

struct EinsumIndex {
  enum class Kind : uint8_t {
    Batch,     // in the output and in more than one operand
    Free,      // in the output and in one operand
    Contract,  // summed: in no output dimension
  };
  // The letter, or "..." and the position inside the ellipsis (outermost first): "...0".
  std::string label;
  Kind kind = Kind::Batch;
  // Per operand: the dimension holding the index, -1 when absent or broadcast from length 1.
  std::vector<int> operandDims;
  int outputDim = -1;  // -1 for a contracted index
  // False when an operand holds the index twice (a diagonal), or it cannot be sharded (length 1,
  // dimension beyond rules::kMaxShardedRank).
  bool shardable = true;
};

// The indices of `equation` resolved against the operand and output shapes, output indices first
// (in output order), then contracted ones (in order of first appearance). Ellipses broadcast
// right-aligned; an implicit output ("ij,jk") is the ellipsis followed by the letters used once,
// in alphabetical order. nullopt when the equation does not fit the shapes.
std::optional<std::vector<EinsumIndex>> analyzeEinsum(std::string_view equation,
                                                      const std::vector<ir::Shape>& operands,
                                                      const ir::Shape& output);

// The exact variants of an einsum over `indices` (see the file comment): one per shardable index,
// named by `name`, then "partial" per operand. Inputs are the operands in order; one output.
std::vector<Variant> einsumVariants(const std::vector<EinsumIndex>& indices, size_t operands,
                                    std::string (*name)(const EinsumIndex&));

}  // namespace hap::rules
