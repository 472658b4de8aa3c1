#include "runtime/comm/collectives.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>

#include "runtime/core/runtime_error.h"

// Each function below is a torch::autograd::Function: forward runs the collective (autograd is
// off inside it), backward runs the dual. Incoming gradients are materialised (zeros for an
// unused output), so every rank that recorded the function runs its dual: the ranks' collectives
// stay in the same order whether or not a rank's piece influenced its loss.
namespace hap::runtime::collective {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The communicator and cut a backward needs, kept in the context's saved data.
void keep(AutogradContext* ctx, Communicator& comm, int dim, const std::vector<int64_t>& lengths) {
  ctx->saved_data["comm"] = reinterpret_cast<int64_t>(&comm);
  ctx->saved_data["dim"] = static_cast<int64_t>(dim);
  ctx->saved_data["lengths"] = lengths;
}
Communicator& commOf(AutogradContext* ctx) {
  return *reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt());
}
int dimOf(AutogradContext* ctx, const char* key = "dim") { return static_cast<int>(ctx->saved_data[key].toInt()); }
std::vector<int64_t> lengthsOf(AutogradContext* ctx, const char* key = "lengths") {
  return ctx->saved_data[key].toIntVector();
}
CommMethod methodOf(AutogradContext* ctx) { return static_cast<CommMethod>(ctx->saved_data["method"].toInt()); }

// G(d) -> I; backward: reduce-scatter of the partial gradient with the same method.
struct AllGatherFn : torch::autograd::Function<AllGatherFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& local, Communicator* comm, int dim,
                            const std::vector<int64_t>& lengths, CommMethod method) {
    keep(ctx, *comm, dim, lengths);
    ctx->saved_data["method"] = static_cast<int64_t>(method);
    return comm->allGather(local, dim, lengths, method);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {commOf(ctx).reduceScatter(grads[0], dimOf(ctx), lengthsOf(ctx), methodOf(ctx)), {}, {}, {}, {}};
  }
};

// R -> G(d); backward: all-gather of the gradient pieces with the same method.
struct ReduceScatterFn : torch::autograd::Function<ReduceScatterFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& partial, Communicator* comm, int dim,
                            const std::vector<int64_t>& lengths, CommMethod method) {
    keep(ctx, *comm, dim, lengths);
    ctx->saved_data["method"] = static_cast<int64_t>(method);
    return comm->reduceScatter(partial, dim, lengths, method);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {commOf(ctx).allGather(grads[0], dimOf(ctx), lengthsOf(ctx), methodOf(ctx)), {}, {}, {}, {}};
  }
};

// The sum of a private contiguous copy over ranks (the argument is never modified; it may be an
// expanded gradient whose elements share memory).
at::Tensor summed(Communicator& comm, const at::Tensor& t) {
  at::Tensor out = t.clone(at::MemoryFormat::Contiguous);
  comm.allReduce(out);
  return out;
}

// R -> I; backward: all-reduce (the I output's gradient is a partial sum).
struct AllReduceFn : torch::autograd::Function<AllReduceFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& partial, Communicator* comm) {
    ctx->saved_data["comm"] = reinterpret_cast<int64_t>(comm);
    return summed(*comm, partial);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {summed(commOf(ctx), grads[0]), {}};
  }
};

// G(i) -> G(j); backward: the inverse re-cut.
struct AllToAllFn : torch::autograd::Function<AllToAllFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& local, Communicator* comm, int fromDim,
                            const std::vector<int64_t>& fromLengths, int toDim,
                            const std::vector<int64_t>& toLengths) {
    keep(ctx, *comm, fromDim, fromLengths);
    ctx->saved_data["toDim"] = static_cast<int64_t>(toDim);
    ctx->saved_data["toLengths"] = toLengths;
    return comm->allToAll(local, fromDim, fromLengths, toDim, toLengths);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor g = commOf(ctx).allToAll(grads[0], dimOf(ctx, "toDim"), lengthsOf(ctx, "toLengths"), dimOf(ctx),
                                        lengthsOf(ctx));
    return {g, {}, {}, {}, {}, {}};
  }
};

// I -> I; backward: all-reduce, so a replicated parameter receives its full gradient on every rank.
struct ReplicateFn : torch::autograd::Function<ReplicateFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& replica, Communicator* comm) {
    ctx->saved_data["comm"] = reinterpret_cast<int64_t>(comm);
    return replica;  // autograd returns it as a view with this function's history
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {summed(commOf(ctx), grads[0]), {}};
  }
};

// I -> G(d), local; backward: the gradient piece zero-padded to the full shape (a valid partial).
struct SliceFn : torch::autograd::Function<SliceFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& replica, Communicator* comm, int dim,
                            const std::vector<int64_t>& lengths) {
    keep(ctx, *comm, dim, lengths);
    ctx->saved_data["sizes"] = replica.sizes().vec();
    return localPiece(replica, dim, lengths, comm->rank()).clone(at::MemoryFormat::Contiguous);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor full = at::zeros(lengthsOf(ctx, "sizes"), grads[0].options());
    localPiece(full, dimOf(ctx), lengthsOf(ctx), commOf(ctx).rank()).copy_(grads[0]);
    return {full, {}, {}, {}};
  }
};

// I -> R: rank 0 keeps the value, the others hold zeros. Its exact dual (the transpose of that
// per-rank map) keeps the R output's gradient (an I tensor) on rank 0 and zeros elsewhere: a
// partial sum of the input's gradient, as the invariant requires. (Every rank keeping the
// gradient would sum to n times it.)
struct ReplicaToPartialFn : torch::autograd::Function<ReplicaToPartialFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& replica, Communicator* comm) {
    ctx->saved_data["comm"] = reinterpret_cast<int64_t>(comm);
    return comm->rank() == 0 ? replica.clone(at::MemoryFormat::Contiguous)
                             : at::zeros(replica.sizes(), replica.options());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    if (commOf(ctx).rank() == 0) return {grads[0], {}};
    return {at::zeros(grads[0].sizes(), grads[0].options()), {}};
  }
};

// Backward of y = linear(x, W, b) on the local pieces of x and y (cut along `dim`, not the last):
// the gradients of x (local), W (full, formed from the all-gathered factors) and, when `hasBias`,
// b (this rank's partial).
variable_list sfbBackward(AutogradContext* ctx, const at::Tensor& gy, bool hasBias) {
  const variable_list saved = ctx->get_saved_variables();
  const at::Tensor& x = saved[0];
  const at::Tensor& weight = saved[1];
  at::Tensor gx, gw, gb;
  if (ctx->needs_input_grad(0)) gx = gy.matmul(weight);
  if (ctx->needs_input_grad(1)) {
    // The sufficient factors: every rank gathers the output gradient and the input (bit-identical
    // everywhere) and forms the full weight gradient itself, in the same order.
    Communicator& comm = commOf(ctx);
    const at::Tensor gyAll = comm.allGather(gy, dimOf(ctx), lengthsOf(ctx), CommMethod::Padded);
    const at::Tensor xAll = comm.allGather(x, dimOf(ctx), lengthsOf(ctx), CommMethod::Padded);
    gw = gyAll.reshape({-1, gy.size(-1)}).t().matmul(xAll.reshape({-1, x.size(-1)}));
  }
  if (hasBias && ctx->needs_input_grad(2)) gb = gy.reshape({-1, gy.size(-1)}).sum(0);
  return hasBias ? variable_list{gx, gw, gb, {}, {}, {}} : variable_list{gx, gw, {}, {}, {}};
}

// (LibTorch 1.13 cannot record an undefined tensor as a Function input, hence two functions.)
struct SfbLinearFn : torch::autograd::Function<SfbLinearFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, Communicator* comm, int dim, const std::vector<int64_t>& lengths) {
    keep(ctx, *comm, dim, lengths);
    ctx->save_for_backward({x, weight});
    return at::linear(x, weight, bias);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) { return sfbBackward(ctx, grads[0], true); }
};

struct SfbLinearNoBiasFn : torch::autograd::Function<SfbLinearNoBiasFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight, Communicator* comm,
                            int dim, const std::vector<int64_t>& lengths) {
    keep(ctx, *comm, dim, lengths);
    ctx->save_for_backward({x, weight});
    return at::linear(x, weight);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return sfbBackward(ctx, grads[0], false);
  }
};

}  // namespace

at::Tensor allGather(Communicator& comm, const at::Tensor& local, int dim, const std::vector<int64_t>& lengths,
                     CommMethod method) {
  return AllGatherFn::apply(local, &comm, dim, lengths, method);
}

at::Tensor reduceScatter(Communicator& comm, const at::Tensor& partial, int dim, const std::vector<int64_t>& lengths,
                         CommMethod method) {
  return ReduceScatterFn::apply(partial, &comm, dim, lengths, method);
}

at::Tensor allReduce(Communicator& comm, const at::Tensor& partial) { return AllReduceFn::apply(partial, &comm); }

at::Tensor allToAll(Communicator& comm, const at::Tensor& local, int fromDim, const std::vector<int64_t>& fromLengths,
                    int toDim, const std::vector<int64_t>& toLengths) {
  return AllToAllFn::apply(local, &comm, fromDim, fromLengths, toDim, toLengths);
}

at::Tensor replicate(Communicator& comm, const at::Tensor& replica) { return ReplicateFn::apply(replica, &comm); }

at::Tensor slice(Communicator& comm, const at::Tensor& replica, int dim, const std::vector<int64_t>& lengths) {
  return SliceFn::apply(replica, &comm, dim, lengths);
}

at::Tensor replicaToPartial(Communicator& comm, const at::Tensor& replica) {
  return ReplicaToPartialFn::apply(replica, &comm);
}

at::Tensor sfbLinear(Communicator& comm, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                     int dim, const std::vector<int64_t>& lengths) {
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  if (x.dim() < 2 || d < 0 || d >= x.dim() - 1)
    throw RuntimeError(fmt::format("sufficient-factor linear: the input of shape [{}] must have rank >= 2 and be "
                                   "cut along a dimension other than the last, not {}; the plan does not match "
                                   "the model",
                                   fmt::join(x.sizes(), ", "), dim));
  const bool known = comm.rank() < static_cast<int>(lengths.size());
  if (!known || x.size(d) != lengths[static_cast<size_t>(comm.rank())])
    throw RuntimeError(fmt::format("sufficient-factor linear: rank {} holds {} rows along dimension {}, the plan "
                                   "says [{}]",
                                   comm.rank(), x.size(d), d, fmt::join(lengths, ", ")));
  if (!bias.defined()) return SfbLinearNoBiasFn::apply(x, weight, &comm, static_cast<int>(d), lengths);
  return SfbLinearFn::apply(x, weight, bias, &comm, static_cast<int>(d), lengths);
}

}  // namespace hap::runtime::collective
