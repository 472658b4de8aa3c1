// Executes one rank's part of a plan (../shared/DESIGN.md §5): the planned graph's nodes in the
// plan's step order, each through the JIT operator registry on this rank's local pieces with
// autograd on, the plan's conversions as differentiable collectives (collectives.h).
//
// Contract:
// - Exactness: forward() returns this rank's partial of the loss; the sum over ranks equals the
//   single-device program's loss, and after backward() every parameter piece's gradient equals
//   the matching piece of the single-device gradient (replicated parameters: the whole gradient,
//   bit-identical on every rank).
// - Every rank builds its executor from the same plan and calls forward()/backward() in lockstep;
//   the collectives of both happen in the same order on every rank. A replicated plan's executor
//   runs one machine's program on that machine's communicator; forward() returns its partial of
//   the machine's loss, and the cross-machine gradient sums are the caller's (trainer.cpp).
// - Random ops draw from the device's default generator, full size, in program order, so every
//   rank draws the same numbers as the single-device program on that device (on a GPU dropout
//   draws its mask as the fused kernel does); the caller seeds it identically on every rank
//   each iteration.
// - Lengths are the plan's (never re-rounded here). Where a rule's note asks for a local
//   adjustment (view sizes, global mean denominators, depthwise groups, ...), the executor makes
//   it; construction fails with RuntimeError naming the node when a step needs one it lacks.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/cost/bucketed_gradients.h"
#include "engine/import/model_tensors.h"
#include "engine/ir/graph.h"
#include "engine/plan/plan.h"
#include "runtime/comm/communicator.h"
#include "runtime/data/data.h"
#include "runtime/train/parameters.h"

namespace hap::runtime {

struct ExecutorOptions {
  // Where every piece, buffer and intermediate lives. On a GPU the program is taken as
  // device-agnostic: its device arguments (a traced `device="cpu"`, a factory's None) name this
  // device. forward() moves batch pieces there.
  c10::Device device = c10::Device(c10::kCPU);
  // The replicated parameters' gradients are all-reduced while backward runs, in buckets of
  // about this many bytes (gradient_buckets.h); <= 0: one bucket, started when backward has
  // produced every gradient (no overlap).
  int64_t bucketBytes = cost::kGradientBucketBytes;
  // A replicated plan (plan::Replication): this rank's machine, 0 .. machines-1. Its random ops
  // draw the global batch's numbers and keep this machine's rows, so that the machines together
  // draw what the single-device program draws.
  int machine = 0;
  // The dtype every floating tensor is computed in (parameters, buffers, constants, batch pieces,
  // and the ops' dtype arguments), or Undefined for the model's own. The exactness check runs in
  // float64 (exactness_check.h), where ties decided the other way by float32 rounding vanish.
  at::ScalarType floating = at::ScalarType::Undefined;
  // An emulated slower device (>= 1; 1: off): every compute step that is no collective itself
  // makes the rank owe (slowdown - 1) times its own measured time, in forward, and in backward
  // every autograd node those steps made (timed by node hooks) but the collectives' duals; so the
  // rank computes `slowdown` times slower while its collectives, the gradient buckets'
  // all-reduces and the optimizer run at full speed. It pays by sleeping, not spinning (a slower
  // GPU leaves its host's CPU free, and the other ranks of an emulation on fewer cores than ranks
  // keep theirs): whenever it owes 100 us or more, all of it before each collective of the
  // forward pass and at the end of backward; a collective inside backward may start with less
  // than 100 us unpaid, and a sleep's overshoot counts as paid. A compute step whose rule
  // makes a collective inside (an SFB linear, synchronised batch statistics, a class loss's
  // target count) is stretched whole in forward, that collective included. Host times: meant for
  // CPU runs (on a GPU the ops' host launch times would be stretched, not their kernels).
  double slowdown = 1;
  // A pipeline stage (runtime/train/pipeline_trainer.h) runs its program on one micro-batch of
  // `microBatches` at a time (setMicroBatch): dropout then draws that micro-batch's rows of the
  // global batch's mask (the input's dimension 0 taken as the batch's, batch-major, as the
  // pipeline's micro-batches are), so that the micro-batches together draw the single-device
  // program's mask. Other random ops cannot be split so: construction refuses them.
  int microBatches = 1;
};

// The forward arguments program rank `rank` of `plan` reads (Executor::inputPieces, without
// building the executor): an input is whole when any step of the plan loads it whole, else the
// piece of its one cut; ranges of integer inputs from `specs` (import::ModelTensors::inputs).
// `planned` is plan::planGraph(imported, plan).
std::vector<InputPiece> planInputPieces(const plan::Plan& plan, const ir::Graph& planned,
                                        const std::vector<import::InputSpec>& specs, int rank);

class Executor {
 public:
  // `planned` is plan::planGraph(imported, plan); `tensors` holds the imported graph's parameter,
  // buffer and constant data (import::importModel with ModelTensors). Parameters are copied: the
  // executor owns its pieces.
  Executor(const plan::Plan& plan, const ir::Graph& planned, const import::ModelTensors& tensors, Communicator& comm,
           const ExecutorOptions& options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // The forward arguments as this rank needs them (whole, or its range of one dimension), in the
  // order forward() takes them.
  const std::vector<InputPiece>& inputPieces() const;
  // This rank's parameter pieces (leaves with requires_grad), in the graph's parameter order.
  std::vector<LocalParameter>& parameters();
  // This rank's buffers (whole, or its piece where every use reads one piece), in the graph's
  // buffer order: state the program writes in place (batch norm's running statistics) keeps its
  // values across steps here, as the single-device module's buffers do.
  std::vector<LocalBuffer>& buffers();

  // Runs the rank's program forward on its batch pieces; returns its partial of the loss.
  at::Tensor forward(const std::vector<at::Tensor>& batch);
  // Back-propagates the partial loss with seed 1 (the collectives' duals run inside) while
  // all-reducing the gradients of replicated parameters in buckets (ExecutorOptions::bucketBytes);
  // returns when every gradient is final.
  void backward(const at::Tensor& partialLoss);

  // Pipeline stages (runtime/train/pipeline_trainer.h). setMicroBatch: the micro-batch (0 ..
  // ExecutorOptions::microBatches - 1) the next forward() runs. held: the forms of value `v` the
  // last forward() computed (rel as rules::Rel: -1 I, -2 R, -3 I for SFB, d >= 0 G(d) with the
  // plan's lengths), this rank's tensors, in the autograd graph. backwardSeeded: back-propagates
  // the sum of <roots[k], seeds[k]> (a stage's outputs seeded with the gradients the next stage
  // sent back, or the last stage's partial loss with its micro-batch weight), accumulating into
  // the parameters' gradients WITHOUT summing the replicated parameters' over ranks;
  // sumGradients() does that once, after the last micro-batch (one all-reduce per dtype), and
  // gives parameters that got no gradient zeros.
  void setMicroBatch(int index);
  struct HeldForm {
    int rel = -1;
    std::vector<int64_t> lengths;
    at::Tensor tensor;
  };
  std::vector<HeldForm> held(ir::ValueId v) const;
  void backwardSeeded(const std::vector<at::Tensor>& roots, const std::vector<at::Tensor>& seeds);
  void sumGradients();

  // What the last forward() and backward() did, for measured traces: one span per step that took
  // measurable time (computation or communication), backward as a whole, and each gradient
  // bucket's all-reduce from its start to the return of its wait.
  struct Span {
    std::string name;
    bool communication = false;
    double start = 0, end = 0;  // seconds since the executor was created
  };
  const std::vector<Span>& spans() const;
  double now() const;  // seconds since the executor was created (the spans' clock)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hap::runtime
