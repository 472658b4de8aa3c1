// Functionalization of in-place writes (issue 33), as PyTorch's functionalization does it. Used by
// the importer only (it names LibTorch types; no other engine header includes it).
//
// The importer runs every in-place op out of place: `y.zero_()` becomes a node whose output is the
// new content of `y`, and later readers of the TorchScript value `y` read that output. Values that
// share y's storage (the tensor y is a view of, other views of that tensor) are kept in step here:
//
//   - Storage. Every tensor that is not a view of another owns a storage, whose *base* is the value
//     that currently holds its content. A view (slice, select, narrow, diagonal, view/reshape/
//     flatten/squeeze/unsqueeze, transpose/permute/t, chunk/split/unbind pieces, contiguous/to/alias
//     when they return their input, detach) records its parent and the step that derives it.
//     Nested views form a chain up to the base.
//   - Write. An in-place op writing a view U of base B with the chain B -> V1 -> ... -> U has
//     computed U' (the op's output). Walking the chain back, each parent gets its new content as
//     an out-of-place *scatter* of the child's new content into the parent: aten::slice_scatter
//     (slice, narrow, chunk/split pieces), aten::select_scatter (select, unbind pieces),
//     aten::diagonal_scatter (diagonal), aten::reshape to the parent's shape (view-like ops),
//     aten::permute by the inverse permutation (transpose/permute), the value itself (identity
//     and detach). The last scatter is B', the storage's new base. B', the intermediate scatters
//     and U' are the storage's up-to-date values (no as_strided anywhere).
//   - Read. Before a node reads a tensor, read() returns its up-to-date value: the value itself
//     when no write touched its storage since it was made, otherwise the new base with the
//     value's view chain replayed on it (the canonical view ops above, or the original op with
//     its arguments for other views such as expand or unfold), emitted once per storage version.
//
// What cannot be expressed is refused by checkWrite() with an ImportError naming the node, its
// scope and source line: a write into a parameter or a model input, or through a view of one
// (forward must be a pure function of them), a write through a view of a buffer (the runtime
// writes back whole buffers only; a direct write such as num_batches_tracked.add_(1) stays as it
// was: an in-place node whose result the runtime writes back), and a write through a view that
// has no scatter form (expand, as_strided, unfold, view as another dtype). A stale read of an
// as_strided view (no replay is exact on a new base) is refused too.
//
// Emitted nodes carry the scope and source line of the node that caused them; their shapes come
// from running the op on the carriers (meta tensors, or CPU tensors in Execution::Real).
#pragma once

#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "engine/ir/graph.h"

namespace hap::import {

// A graph tensor as the importer carries it: its IR value and a meta (Execution::Real: CPU)
// tensor of its shape, dtype and storage.
struct Carried {
  ir::ValueId id = ir::kNone;
  at::Tensor carrier;
};

// The TorchScript node being imported: scope and source line for the nodes emitted on its behalf,
// and its description ("model.pt: node %h = aten::zero_ (scope block, model.py:12)") for errors.
struct Site {
  std::string scope;
  ir::SourceLoc loc;
  std::string where;
};

class Functionalizer {
 public:
  explicit Functionalizer(ir::Graph& g) : g_(g) {}

  // The up-to-date value to read in place of `t` (t itself unless a write changed its storage
  // since t was made; then its view chain replayed on the storage's base).
  Carried read(const Carried& t, const Site& site);

  // A node `op` (its schema and argument values, tensors among them) whose `outputs` share the
  // storage of argument `selfArg` (`self`): records them as views of it.
  void view(const Carried& self, size_t selfArg, const std::string& op,
            const c10::FunctionSchema& schema, const std::vector<c10::IValue>& args,
            const std::vector<Carried>& outputs, const Site& site);

  // Throws ImportError (see the file comment) when an in-place write into `target` cannot be
  // expressed. Call before the op runs (in Execution::Real it writes the carrier).
  void checkWrite(const Carried& target, const std::string& op, const Site& site) const;

  // After an in-place op: `result` is the new content of `target` (which read() returned). Emits
  // the scatters into target's base and makes result, the scatters and the new base current.
  void write(const Carried& target, const Carried& result, const Site& site);

 private:
  // How a view derives from its parent, and how its new content goes back into the parent.
  struct Step {
    enum class Kind { Slice, Select, Diagonal, Reshape, Permute, Identity, Detach, Other };
    Kind kind = Kind::Other;
    std::string op;                    // the view op as imported ("aten::narrow")
    int64_t dim = 0, index = 0;        // Slice, Select (dim); Select (index); Diagonal (offset)
    std::optional<int64_t> start, end;  // Slice (None: the whole range)
    int64_t step = 1;                  // Slice
    int64_t dim1 = 0, dim2 = 1;        // Diagonal
    std::vector<int64_t> sizes;        // Reshape: the view's shape; Permute: the permutation
    // Other: the op to replay with its arguments, the parent's place among them; none when no
    // replay is exact (as_strided, a list result).
    std::string overload;
    std::vector<c10::IValue> args;
    size_t selfArg = 0;
    bool replayable = false;
  };
  struct Storage {
    Carried base;                       // the value holding the storage's content now
    ir::ValueId origin = ir::kNone;     // the value that first owned it (input, parameter, ...)
    int version = 0;                    // writes so far
  };
  struct Alias {
    int storage = 0;
    int version = 0;                 // the storage's version this value reflects
    ir::ValueId parent = ir::kNone;  // none: a base
    int step = -1;                   // into steps_
    at::Tensor carrier;
  };

  Alias& aliasOf(const Carried& t);  // registers t as the base of a new storage if it is unknown
  Step classify(const std::string& op, const c10::FunctionSchema& schema,
                const std::vector<c10::IValue>& args, size_t selfArg, const at::Tensor& self,
                const at::Tensor& out, size_t outIndex, const std::vector<Carried>& outputs) const;
  Carried replay(const Step& s, const Carried& parent, const Site& site);
  Carried scatter(const Step& s, const Carried& parent, const Carried& updated, const Site& site);
  // op.overload on `args` (a Carried is a graph tensor, an IValue a constant) as a new node.
  using Operand = std::variant<Carried, c10::IValue>;
  Carried emit(const std::string& op, const std::string& overload,
               const std::vector<Operand>& args, const Site& site);
  std::string describeChain(ir::ValueId v) const;

  ir::Graph& g_;
  std::vector<Storage> storages_;
  std::vector<Step> steps_;
  std::unordered_map<ir::ValueId, Alias> aliases_;
  std::map<std::pair<ir::ValueId, int>, Carried> replayed_;  // (stale value, version) -> replay
};

}  // namespace hap::import
