// One rank of the collectives check that tst_collectives starts as 1-4 processes on loopback
// (torchrun environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, HAP_TIMEOUT_S).
//
// Every rank builds the same seeded data, so each computes the expected result of every
// collective locally: forward results against the full tensors, each dual's gradient against the
// analytic gradient of the ranks' summed loss, sfbLinear against a single-device linear, and
// replicated results bitwise against rank 0's copy. Uneven cuts with a zero-length rank, both
// methods, float32/float64/int64, non-contiguous inputs.
//
// Mode `grid M`: the world is connected as M machines of WORLD_SIZE / M ranks behind a slow
// network, so every sum all-reduce runs hierarchically (cost::allReduceCost); then the checks of
// `all`, and the hierarchical all-reduces on their own (sizes that do not divide evenly, empty
// chunks, the gradient channel with several in flight) against locally computed sums, replicas
// bitwise, and the communicator's counts.
//
// Usage: comm_probe [all|grid M|allreduce|stall]. Exit 0: every check passed; 1: a check failed
// (the message names it); 3: a RuntimeError (its message is printed); 2: any other exception.
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/cost/cluster.h"
#include "runtime/comm/collectives.h"
#include "runtime/comm/communicator.h"
#include "runtime/core/runtime_error.h"

using namespace hap::runtime;

namespace {

struct CheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(bool ok, const std::string& what) {
  if (!ok) throw CheckFailed(what);
}

using Cut = std::vector<int64_t>;
const char* methodName(CommMethod m) { return m == CommMethod::Padded ? "padded" : "grouped"; }
const std::vector<CommMethod> kMethods{CommMethod::Padded, CommMethod::Grouped};

// The full shape every test cuts: distinct sizes so a cut of one dim cannot pass for another.
const std::vector<int64_t> kShape{6, 5, 7};

// Seeded data, identical on every rank; non-contiguous (a permuted buffer).
at::Tensor data(at::ScalarType dtype, uint64_t seed, std::vector<int64_t> shape = kShape) {
  at::manual_seed(seed);
  std::vector<int64_t> reversed(shape.rbegin(), shape.rend());
  at::Tensor t = at::isIntegralType(dtype, false) ? at::randint(-50, 50, reversed, at::TensorOptions(dtype))
                                                  : at::randn(reversed, at::TensorOptions(dtype));
  std::vector<int64_t> perm;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) perm.push_back(i);
  return t.permute(perm);
}

// Rank s's partial of a reduced tensor.
at::Tensor partialOf(at::ScalarType dtype, uint64_t seed, int s) { return data(dtype, seed + 1000 * (s + 1)); }

// Σ_s partialOf(s), summed locally in rank order.
at::Tensor sumOfPartials(at::ScalarType dtype, uint64_t seed, int world) {
  at::Tensor acc = partialOf(dtype, seed, 0).clone();
  for (int s = 1; s < world; ++s) acc.add_(partialOf(dtype, seed, s));
  return acc;
}

// Cuts of `size` among `world` ranks: one with rank 1 empty, an even one, a skewed one.
std::vector<Cut> cutsOf(int64_t size, int world) {
  if (world == 1) return {{size}};
  auto weighted = [&](std::vector<int64_t> w) {
    int64_t total = 0;
    for (int64_t x : w) total += x;
    Cut c(world);
    int64_t given = 0;
    for (int k = 0; k < world; ++k) given += c[k] = size * w[k] / total;
    c[0] += size - given;
    return c;
  };
  std::vector<int64_t> zero(world), even(world, 1), skew(world);
  for (int k = 0; k < world; ++k) zero[k] = k == 1 ? 0 : k + 1, skew[k] = k + 1;
  return {weighted(zero), weighted(even), weighted(skew)};
}

bool integral(const at::Tensor& t) { return at::isIntegralType(t.scalar_type(), false); }

// Equal up to float rounding (exact for integers), same shape and dtype.
bool close(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  if (integral(a)) return at::equal(a, b);
  const double tol = a.scalar_type() == at::kFloat ? 1e-5 : 1e-12;
  return at::allclose(a, b, tol, tol);
}

// Same shape, dtype and bits.
bool bitwise(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  const auto asInt = [](const at::Tensor& t) {
    switch (t.element_size()) {
      case 8: return t.contiguous().view(at::kLong);
      case 4: return t.contiguous().view(at::kInt);
      case 2: return t.contiguous().view(at::kShort);
      default: return t.contiguous().view(at::kByte);
    }
  };
  return at::equal(asInt(a), asInt(b));
}

std::string describe(const at::Tensor& t) {
  return fmt::format("{} [{}]", std::string(c10::toString(t.scalar_type())), fmt::join(t.sizes(), ", "));
}

class Probe {
 public:
  explicit Probe(Communicator& comm) : comm_(comm), r_(comm.rank()), n_(comm.size()) {}

  // `t` is bit-identical on every rank (checked against rank 0's broadcast copy).
  void replicated(const at::Tensor& t, const std::string& what) {
    at::Tensor ref = t.detach().clone(at::MemoryFormat::Contiguous);
    comm_.broadcast(ref, 0);
    check(bitwise(ref, t.detach()), what + ": the replicated result differs from rank 0's bits");
  }

  void forward() {
    for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kLong}) {
      const std::string ty = c10::toString(dtype);
      for (int d = 0; d < 3; ++d)
        for (const Cut& cut : cutsOf(kShape[d], n_))
          for (CommMethod m : kMethods) {
            const std::string where = fmt::format("{} dim {} cut [{}] {}", ty, d, fmt::join(cut, ","), methodName(m));
            // all-gather: the full tensor, exactly, on every rank.
            const at::Tensor full = data(dtype, 11);
            const at::Tensor local = localPiece(full, d, cut, r_);
            const at::Tensor gathered = comm_.allGather(local, d, cut, m);
            check(bitwise(gathered, full), "all-gather " + where + ": got " + describe(gathered));
            replicated(gathered, "all-gather " + where);
            // reduce-scatter: this rank's piece of the sum of the partials.
            const at::Tensor piece = comm_.reduceScatter(partialOf(dtype, 12, r_), d, cut, m);
            check(close(piece, localPiece(sumOfPartials(dtype, 12, n_), d, cut, r_)),
                  "reduce-scatter " + where + ": got " + describe(piece));
          }

      at::Tensor summed = partialOf(dtype, 13, r_);
      comm_.allReduce(summed);
      check(close(summed, sumOfPartials(dtype, 13, n_)), "all-reduce " + ty);
      replicated(summed, "all-reduce " + ty);
      // In place on a non-contiguous view: only the viewed elements change.
      at::Tensor base = partialOf(dtype, 14, r_).contiguous();
      at::Tensor view = base.select(1, 2);
      comm_.allReduce(view);
      check(close(base.select(1, 2), sumOfPartials(dtype, 14, n_).select(1, 2)) &&
                at::equal(base.select(1, 1), partialOf(dtype, 14, r_).select(1, 1)),
            "all-reduce of a non-contiguous view " + ty);

      at::Tensor largest = partialOf(dtype, 15, r_);
      comm_.allReduceMax(largest);
      at::Tensor expected = partialOf(dtype, 15, 0).clone();
      for (int s = 1; s < n_; ++s) expected = at::maximum(expected, partialOf(dtype, 15, s));
      check(bitwise(largest, expected), "all-reduce max " + ty);

      at::Tensor broadcast = partialOf(dtype, 16, r_);
      comm_.broadcast(broadcast, n_ - 1);
      check(bitwise(broadcast, partialOf(dtype, 16, n_ - 1)), "broadcast " + ty);

      // all-to-all: between every pair of cuts for float64; for the other dtypes (the same
      // bytes moved) a re-cut of one dimension and a move between two.
      const at::Tensor full = data(dtype, 17);
      for (int fd = 0; fd < 3; ++fd)
        for (int td = 0; td < 3; ++td)
          for (const Cut& from : cutsOf(kShape[fd], n_))
            for (const Cut& to : cutsOf(kShape[td], n_)) {
              if (dtype != at::kDouble && !((fd == 2 && td == 2) || (fd == 0 && td == 1))) continue;
              const at::Tensor local = localPiece(full, fd, from, r_);
              const at::Tensor moved = comm_.allToAll(local, fd, from, td, to);
              const std::string where = fmt::format("all-to-all {} dim {} [{}] -> dim {} [{}]", ty, fd,
                                                    fmt::join(from, ","), td, fmt::join(to, ","));
              check(bitwise(moved, localPiece(full, td, to, r_)), where + ": got " + describe(moved));
              if (fd == td && from == to) check(moved.is_same(local), where + ": an unchanged cut must return local");
            }
    }
    // Nothing to move: a dimension of size 0 elsewhere, and every piece empty.
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{6, 0, 7}, std::vector<int64_t>{0, 5, 7}}) {
      const at::Tensor empty = data(at::kFloat, 18, shape);
      const Cut cut = cutsOf(shape[0], n_).front();
      for (CommMethod m : kMethods) {
        check(bitwise(comm_.allGather(localPiece(empty, 0, cut, r_), 0, cut, m), empty), "all-gather of nothing");
        check(comm_.reduceScatter(empty, 0, cut, m).sizes() == localPiece(empty, 0, cut, r_).sizes(),
              "reduce-scatter of nothing");
      }
      const Cut to = cutsOf(shape[2], n_).back();
      check(bitwise(comm_.allToAll(localPiece(empty, 0, cut, r_), 0, cut, 2, to), localPiece(empty, 2, to, r_)),
            "all-to-all of nothing");
      at::Tensor copy = empty.clone();
      comm_.allReduce(copy);
      comm_.broadcast(copy, 0);
    }
    // bfloat16 travels as 16-bit integers where only data moves.
    {
      const at::Tensor full = data(at::kFloat, 19).to(at::kBFloat16);
      const Cut cut = cutsOf(kShape[1], n_).front(), to = cutsOf(kShape[2], n_).back();
      for (CommMethod m : kMethods)
        check(bitwise(comm_.allGather(localPiece(full, 1, cut, r_), 1, cut, m), full), "all-gather of bfloat16");
      check(bitwise(comm_.allToAll(localPiece(full, 1, cut, r_), 1, cut, 2, to), localPiece(full, 2, to, r_)),
            "all-to-all of bfloat16");
    }
    comm_.barrier();
  }

  // Sum all-reduces of every size class on a machine grid (connect's cluster): sizes below,
  // at, and off a multiple of the ranks per machine (zero-padded chunks), a scalar, three dtypes;
  // then gradient-channel all-reduces, several in flight and waited for out of order. Each is
  // checked against the local sum and bitwise against rank 0, and every one must have run
  // hierarchically.
  void hierarchical() {
    const Communicator::AllReduceCounts before = comm_.allReduceCounts();
    check(before.machines >= 2 && before.perMachine >= 2,
          fmt::format("the communicator has no machine grid ({} x {})", before.machines, before.perMachine));
    int64_t issued = 0;
    for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kLong})
      for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1}, std::vector<int64_t>{}, std::vector<int64_t>{5},
                                                std::vector<int64_t>{6, 5, 7}, std::vector<int64_t>{1000, 33}}) {
        const std::string where = fmt::format("hierarchical all-reduce {} [{}]", c10::toString(dtype), fmt::join(shape, ","));
        // Rank s's partial of that shape: its kShape partial's elements, repeated.
        const auto partial = [&](int s) {
          const int64_t numel = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
          return partialOf(dtype, 31, s).reshape({-1}).repeat({200}).narrow(0, 0, numel).reshape(shape).contiguous();
        };
        at::Tensor t = partial(r_);
        at::Tensor expected = partial(0);
        for (int s = 1; s < n_; ++s) expected.add_(partial(s));
        comm_.allReduce(t);
        ++issued;
        check(close(t, expected), where + ": wrong sum");
        replicated(t, where);
      }
    // The gradient channel: four buffers in flight at once, waited for in reverse.
    std::vector<at::Tensor> buffers, expected;
    for (int64_t numel : {int64_t{7}, int64_t{4096}, int64_t{1}, int64_t{100003}}) {
      at::manual_seed(static_cast<uint64_t>(numel));
      std::vector<at::Tensor> partials;
      for (int s = 0; s < n_; ++s) partials.push_back(at::randn({numel}));
      at::Tensor sum = partials[0].clone();
      for (int s = 1; s < n_; ++s) sum.add_(partials[static_cast<size_t>(s)]);
      buffers.push_back(partials[static_cast<size_t>(r_)].clone());
      expected.push_back(sum);
    }
    std::vector<std::unique_ptr<Communicator::Pending>> pending;
    for (at::Tensor& b : buffers) pending.push_back(comm_.allReduceAsync(b));
    issued += static_cast<int64_t>(buffers.size());
    for (size_t i = pending.size(); i-- > 0;) pending[i]->wait();
    for (size_t i = 0; i < buffers.size(); ++i) {
      const std::string where = fmt::format("hierarchical gradient all-reduce of {} elements", buffers[i].numel());
      check(close(buffers[i], expected[i]), where + ": wrong sum");
      replicated(buffers[i], where);
    }
    const Communicator::AllReduceCounts after = comm_.allReduceCounts();
    check(after.hierarchical - before.hierarchical == issued && after.flat == before.flat,
          fmt::format("{} sum all-reduces: {} ran hierarchically, {} flat", issued,
                      after.hierarchical - before.hierarchical, after.flat - before.flat));
    comm_.barrier();
  }

  // Each dual: the ranks' losses L_r = <output_r, w_r> sum to a loss with a known gradient.
  void backward() {
    const at::ScalarType f64 = at::kDouble;
    for (int d = 0; d < 3; ++d)
      for (const Cut& cut : cutsOf(kShape[d], n_))
        for (CommMethod m : kMethods) {
          const std::string where = fmt::format("dim {} cut [{}] {}", d, fmt::join(cut, ","), methodName(m));
          // all-gather G -> I: Σ_r <y, w_r> has gradient Σ_r w_r; rank r holds its piece of it.
          {
            at::Tensor x = localPiece(data(f64, 21), d, cut, r_).clone().requires_grad_(true);
            at::Tensor y = collective::allGather(comm_, x, d, cut, m);
            (y * partialOf(f64, 22, r_)).sum().backward();
            check(close(x.grad(), localPiece(sumOfPartials(f64, 22, n_), d, cut, r_)),
                  "all-gather backward " + where);
          }
          // reduce-scatter R -> G: Σ_r <piece_r(Σ_s p_s), piece_r(W)> has gradient W for every p_s.
          {
            at::Tensor p = partialOf(f64, 23, r_).requires_grad_(true);
            at::Tensor y = collective::reduceScatter(comm_, p, d, cut, m);
            check(close(y, localPiece(sumOfPartials(f64, 23, n_), d, cut, r_)), "reduce-scatter forward " + where);
            (y * localPiece(data(f64, 24), d, cut, r_)).sum().backward();
            check(close(p.grad(), data(f64, 24)), "reduce-scatter backward " + where);
          }
          // slice I -> G: the gradient is the zero-padded piece; the ranks' gradients sum to W.
          if (m == CommMethod::Padded) {
            at::Tensor x = data(f64, 25).requires_grad_(true);
            at::Tensor y = collective::slice(comm_, x, d, cut);
            check(bitwise(y, localPiece(data(f64, 25), d, cut, r_)), "slice forward " + where);
            (y * localPiece(data(f64, 26), d, cut, r_)).sum().backward();
            at::Tensor expected = at::zeros_like(data(f64, 26));
            localPiece(expected, d, cut, r_).copy_(localPiece(data(f64, 26), d, cut, r_));
            check(bitwise(x.grad(), expected), "slice backward " + where);
            at::Tensor total = x.grad().clone();
            comm_.allReduce(total);
            check(close(total, data(f64, 26)), "slice backward, summed over ranks " + where);
          }
        }

    // all-to-all G(i) -> G(j): Σ_r <y_r, piece_r(W)> = <x, W>; x's piece gets its piece of W.
    for (int fd = 0; fd < 3; ++fd)
      for (int td = 0; td < 3; ++td) {
        const Cut from = cutsOf(kShape[fd], n_).front(), to = cutsOf(kShape[td], n_).back();
        at::Tensor x = localPiece(data(f64, 27), fd, from, r_).clone().requires_grad_(true);
        at::Tensor y = collective::allToAll(comm_, x, fd, from, td, to);
        (y * localPiece(data(f64, 28), td, to, r_)).sum().backward();
        check(bitwise(x.grad(), localPiece(data(f64, 28), fd, from, r_)),
              fmt::format("all-to-all backward dim {} -> dim {}", fd, td));
      }
    {  // an unchanged cut: identity both ways
      const Cut cut = cutsOf(kShape[1], n_).front();
      at::Tensor x = localPiece(data(f64, 27), 1, cut, r_).clone().requires_grad_(true);
      (collective::allToAll(comm_, x, 1, cut, 1, cut) * 3.0).sum().backward();
      check(bitwise(x.grad(), at::full_like(x, 3.0)), "all-to-all backward of an unchanged cut");
    }

    // all-reduce R -> I: Σ_r <Σ_s p_s, w_r> has gradient Σ_r w_r for every p_s (replicated).
    {
      at::Tensor p = partialOf(f64, 31, r_).requires_grad_(true);
      at::Tensor y = collective::allReduce(comm_, p);
      check(close(y, sumOfPartials(f64, 31, n_)), "all-reduce forward");
      check(bitwise(p.detach(), partialOf(f64, 31, r_)), "all-reduce must not modify its input");
      replicated(y, "all-reduce forward");
      (y * partialOf(f64, 32, r_)).sum().backward();
      check(close(p.grad(), sumOfPartials(f64, 32, n_)), "all-reduce backward");
      replicated(p.grad(), "all-reduce backward");
    }
    // replicate I -> I: a replicated parameter gets the full gradient on every rank.
    {
      at::Tensor b = data(f64, 33).requires_grad_(true);
      at::Tensor y = collective::replicate(comm_, b);
      check(bitwise(y, b.detach()), "replicate forward");
      (y * partialOf(f64, 34, r_)).sum().backward();
      check(close(b.grad(), sumOfPartials(f64, 34, n_)), "replicate backward");
      replicated(b.grad(), "replicate backward");
    }
    // replicaToPartial I -> R: the partials sum to the value; the gradient, as a partial sum
    // (and through replicate, in full on every rank), is the true one.
    {
      at::Tensor b = data(f64, 35).requires_grad_(true);
      at::Tensor y = collective::replicaToPartial(comm_, b);
      check(bitwise(y, r_ == 0 ? data(f64, 35) : at::zeros_like(data(f64, 35))), "replicaToPartial forward");
      at::Tensor z = collective::allReduce(comm_, y);
      check(bitwise(z, data(f64, 35)), "replicaToPartial forward, summed");
      (z * partialOf(f64, 36, r_)).sum().backward();
      at::Tensor total = b.grad().clone();
      comm_.allReduce(total);
      check(close(total, sumOfPartials(f64, 36, n_)), "replicaToPartial backward, summed over ranks");

      at::Tensor b2 = data(f64, 35).requires_grad_(true);
      at::Tensor y2 = collective::replicaToPartial(comm_, collective::replicate(comm_, b2));
      at::Tensor z2 = collective::allReduce(comm_, y2);
      (z2 * partialOf(f64, 36, r_)).sum().backward();
      check(close(b2.grad(), sumOfPartials(f64, 36, n_)), "replicate + replicaToPartial backward");
    }
    // Undefined gradients: nothing requires grad, so no function is recorded and no rank
    // communicates in backward; the forward still works.
    {
      at::NoGradGuard noGrad;
      const Cut cut = cutsOf(kShape[0], n_).front();
      at::Tensor y = collective::allGather(comm_, localPiece(data(f64, 37), 0, cut, r_), 0, cut, CommMethod::Grouped);
      check(bitwise(y, data(f64, 37)) && !y.requires_grad(), "all-gather without autograd");
    }
    comm_.barrier();
  }

  // sfbLinear against a single-device linear: y, and the gradients of x (local piece), W (full,
  // bit-identical on every rank) and b (through replicate: full on every rank).
  void sfbLinear() {
    struct Case {
      std::vector<int64_t> xShape;
      int dim;
      bool bias, xNeedsGrad;
      at::ScalarType dtype;
    };
    const std::vector<Case> cases{{{6, 5, 4}, 0, true, true, at::kDouble},  {{6, 5, 4}, 1, true, true, at::kDouble},
                                  {{6, 5, 4}, 0, false, true, at::kDouble}, {{6, 5, 4}, 1, true, false, at::kDouble},
                                  {{7, 4}, 0, true, true, at::kDouble},     {{6, 5, 4}, 0, true, true, at::kFloat}};
    for (const Case& c : cases) {
      const int64_t out = 3, in = c.xShape.back();
      std::vector<int64_t> yShape = c.xShape;
      yShape.back() = out;
      const at::Tensor x = data(c.dtype, 41, c.xShape), w = data(c.dtype, 42, {out, in}),
                       b = data(c.dtype, 43, {out}), g = data(c.dtype, 44, yShape);
      // Single device.
      at::Tensor xr = x.clone().requires_grad_(c.xNeedsGrad), wr = w.clone().requires_grad_(true),
                 br = b.clone().requires_grad_(c.bias);
      at::Tensor yr = at::linear(xr, wr, c.bias ? br : at::Tensor());
      (yr * g).sum().backward();

      for (const Cut& cut : cutsOf(c.xShape[c.dim], n_)) {
        const std::string where = fmt::format("sfbLinear x [{}] dim {} cut [{}]{}{} {}", fmt::join(c.xShape, ","),
                                              c.dim, fmt::join(cut, ","), c.bias ? "" : " no bias",
                                              c.xNeedsGrad ? "" : " x without grad", c10::toString(c.dtype));
        at::Tensor xl = localPiece(x, c.dim, cut, r_).clone().requires_grad_(c.xNeedsGrad);
        at::Tensor wl = w.clone().requires_grad_(true), bl = b.clone().requires_grad_(c.bias);
        at::Tensor y = collective::sfbLinear(comm_, xl, wl, c.bias ? collective::replicate(comm_, bl) : at::Tensor(),
                                             c.dim, cut);
        check(close(y, localPiece(yr.detach(), c.dim, cut, r_)), where + ": forward");
        (y * localPiece(g, c.dim, cut, r_)).sum().backward();
        check(close(wl.grad(), wr.grad()), where + ": W gradient");
        replicated(wl.grad(), where + ": W gradient");
        if (c.xNeedsGrad) check(close(xl.grad(), localPiece(xr.grad(), c.dim, cut, r_)), where + ": x gradient");
        else check(!xl.grad().defined(), where + ": x needs no gradient");
        if (c.bias) check(close(bl.grad(), br.grad()), where + ": b gradient");
        {  // without autograd: no function recorded, no backward communication
          at::NoGradGuard noGrad;
          at::Tensor y0 = collective::sfbLinear(comm_, localPiece(x, c.dim, cut, r_), w, c.bias ? b : at::Tensor(),
                                                c.dim, cut);
          check(close(y0, localPiece(yr.detach(), c.dim, cut, r_)) && !y0.requires_grad(), where + ": no grad");
        }
      }
    }
    comm_.barrier();
  }

 private:
  Communicator& comm_;
  int r_, n_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "all";
  int rank = -1, world = 0;
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point a, Clock::time_point b) {
    return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count());
  };
  const auto start = Clock::now();
  try {
    const WorkerEnv env = WorkerEnv::fromEnvironment();
    rank = env.rank;
    world = env.worldSize;
    // `grid M`: M machines of WORLD_SIZE / M ranks, on a network slow enough (10 MB/s, 1 ms)
    // that the cost model prices every all-reduce cheapest as hierarchical.
    hap::cost::Cluster grid;
    if (mode == "grid") {
      const int machines = argc > 2 ? std::atoi(argv[2]) : 0;
      if (machines < 2 || env.worldSize % machines != 0) throw CheckFailed("grid M: M must divide WORLD_SIZE");
      std::string yaml =
          "name: grid\ndevice_types: {cpu: {flops: {float32: 50G}, memory: 4GiB, memory_bandwidth: 10GB/s}}\n"
          "network: {bandwidth: 10MB/s, latency: 1ms}\nmachines:\n";
      for (int m = 0; m < machines; ++m)
        yaml += fmt::format("  - {{name: m{}, host: 127.0.0.1, device_type: cpu, count: {}, link: {{bandwidth: 1GB/s, "
                            "latency: 100us}}}}\n",
                            m, env.worldSize / machines);
      grid = hap::cost::parseCluster(yaml, "comm_probe grid");
    }
    std::unique_ptr<Communicator> comm = Communicator::connect(env, false, mode == "grid" ? &grid : nullptr);
    if (comm->rank() != env.rank || comm->size() != env.worldSize) throw CheckFailed("rank or size mismatch");
    if (mode == "stall") {  // connected, then silent: the others' next collective must time out
      std::this_thread::sleep_for(std::chrono::seconds(120));
      return 0;
    }
    if (mode == "allreduce") {
      at::Tensor t = at::ones({4});
      comm->allReduce(t);
      return 0;
    }
    Probe probe(*comm);
    if (mode == "grid") {
      probe.hierarchical();
      const Communicator::AllReduceCounts c = comm->allReduceCounts();
      std::printf("rank %d/%d: hierarchical checks passed (%d machines x %d ranks, %lld all-reduces)\n", rank, world,
                  c.machines, c.perMachine, static_cast<long long>(c.hierarchical));
    }
    const auto t0 = Clock::now();
    probe.forward();
    const auto t1 = Clock::now();
    probe.backward();
    const auto t2 = Clock::now();
    probe.sfbLinear();
    const auto t3 = Clock::now();
    std::printf("rank %d/%d: all checks passed (connect %ld ms, forward %ld ms, backward %ld ms, sfbLinear %ld ms)\n",
                rank, world, ms(start, t0), ms(t0, t1), ms(t1, t2), ms(t2, t3));
    return 0;
  } catch (const CheckFailed& e) {
    std::fprintf(stderr, "rank %d/%d: CHECK FAILED: %s\n", rank, world, e.what());
    return 1;
  } catch (const RuntimeError& e) {
    std::fprintf(stderr, "rank %d/%d: RuntimeError after %ld ms: %s\n", rank, world, ms(start, Clock::now()), e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d/%d: unexpected exception: %s\n", rank, world, e.what());
    return 2;
  }
}
