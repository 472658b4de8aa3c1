// Collectives as autograd functions with exact duals (../shared/DESIGN.md §3 "Backward"):
//   allGather      G(d) -> I     backward: reduce-scatter of the (partial) gradient
//   reduceScatter  R -> G(d)     backward: all-gather
//   allReduce      R -> I        backward: all-reduce
//   allToAll       G(i) -> G(j)  backward: the inverse all-to-all
//   replicate      I -> I        identity; backward all-reduces the gradient (a replicated
//                                parameter's gradient is a partial sum on every rank)
//   slice          I -> G(d)     local narrow; backward zero-pads (the gradient stays partial)
//   replicaToPartial I -> R      rank 0 keeps the value, the others zeros; backward: rank 0 keeps
//                                the gradient, the others zeros (a partial sum of it; every rank
//                                keeping it would sum to n times the gradient)
// Gradients follow the invariant: the gradient of an I tensor is a partial sum, of G(d) a G(d)
// piece, of R an I tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "runtime/comm/communicator.h"

namespace hap::runtime::collective {

at::Tensor allGather(Communicator& comm, const at::Tensor& local, int dim, const std::vector<int64_t>& lengths,
                     CommMethod method);
at::Tensor reduceScatter(Communicator& comm, const at::Tensor& partial, int dim,
                         const std::vector<int64_t>& lengths, CommMethod method);
at::Tensor allReduce(Communicator& comm, const at::Tensor& partial);
at::Tensor allToAll(Communicator& comm, const at::Tensor& local, int fromDim, const std::vector<int64_t>& fromLengths,
                    int toDim, const std::vector<int64_t>& toLengths);
at::Tensor replicate(Communicator& comm, const at::Tensor& replica);
at::Tensor slice(Communicator& comm, const at::Tensor& replica, int dim, const std::vector<int64_t>& lengths);
at::Tensor replicaToPartial(Communicator& comm, const at::Tensor& replica);

// Sufficient-factor broadcasting for y = linear(x, W, b) with x and y cut along `dim` (not the
// last) by `lengths` and W replicated: forward is the local linear; backward gives x its local
// gradient, and W the full gradient on every rank, formed from the all-gathered factors (the
// output gradient and x) instead of an all-reduce. b (may be undefined) gets its local partial.
at::Tensor sfbLinear(Communicator& comm, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                     int dim, const std::vector<int64_t>& lengths);

}  // namespace hap::runtime::collective
