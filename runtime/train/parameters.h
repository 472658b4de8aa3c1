// Model parameters as one rank holds them (../shared/DESIGN.md §3 "Distributed tensor facts"):
// either the whole tensor on every rank (replicated, I) or this rank's range of one dimension
// (sharded, G(d)).
//
// Invariants the executor establishes and the training state relies on:
// - Every rank holds the same list, in the same order, with the same names, shapes, dims and
//   lengths; only the pieces differ. Collectives over parameters follow this order.
// - A replicated parameter's value and, after backward, its gradient are bit-identical on every
//   rank. A sharded piece's gradient is the gradient of that piece.
// - `value` is a leaf tensor; it keeps its identity for the whole run (checkpoints are loaded into
//   it in place), because the optimizer's state is attached to it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace hap::runtime {

class Communicator;

struct LocalParameter {
  std::string name;              // qualified name in the model file ("layers.0.attn.q.weight")
  ir::Shape fullShape;           // the single-device shape
  at::Tensor value;              // this rank's piece: a leaf tensor with requires_grad
  int dim = -1;                  // -1: replicated; else the cut dimension
  std::vector<int64_t> lengths;  // per rank, when cut (sum = fullShape[dim]); zero allowed
  bool replicated() const { return dim < 0; }
};

// A module buffer as one rank holds it (running statistics and other state the program writes in
// place): like a parameter, whole or this rank's piece of one cut, but with no gradient. A whole
// buffer is the same on every rank: the ops that write it run replicated or with synchronised
// statistics. Checkpoints and exports consolidate buffers as they do parameters.
using LocalBuffer = LocalParameter;

// Where rank `rank`'s piece starts along `p.dim` (the sum of the lengths before it).
int64_t pieceOffset(const LocalParameter& p, int rank);

// Rank `rank`'s piece of `full` (a tensor of p.fullShape): `full` itself when p is replicated,
// else a view of the range pieceOffset(p, rank) + [0, lengths[rank]) of p.dim.
at::Tensor pieceOf(const LocalParameter& p, const at::Tensor& full, int rank);

// The full tensor from every rank's `piece` (shaped like p.value): an all-gather along p.dim when
// p is sharded (every rank must call it, in the same parameter order), `piece` itself when
// replicated. The result is detached.
at::Tensor gatherFull(Communicator& comm, const LocalParameter& p, const at::Tensor& piece);

// Asserts that `p` is a consistent piece for rank `rank` of `worldSize` (a defined value, shape
// = fullShape with lengths[rank] on the cut dimension, lengths summing to the dimension): the
// executor builds these from a verified plan, so a violation is a bug (std::logic_error).
void checkLocalParameter(const LocalParameter& p, int rank, int worldSize);

}  // namespace hap::runtime
