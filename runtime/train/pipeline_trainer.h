// A pipelined plan's training run (../shared/DESIGN.md §3 "Pipeline stages", §5; docs/pipeline.md
// "Runtime"; the plan: engine/pipeline/pipeline_plan.h, its stage contract: stage_graph.h).
//
// Every world rank finds its stage (the group listing it) and its place in the group, joins the
// world and its group (Communicator::connectGroups: the stage program's collectives run inside
// the group only) and the point-to-point channels (point_to_point.h), and runs the stage's SPMD
// program (Executor, on the stage graph rebuilt from the model imported at micro-batch shapes)
// on one micro-batch at a time, in the order oneFOneBOrder() gives its stage:
//   F(i)  reads the model inputs at micro-batch i's rows (each rank its piece, as the stage plan
//         loads them), receives the boundary inputs "boundary.<name>", runs the program forward,
//         and sends its outputs on;
//   B(i)  seeds backward with the gradients the next stages send back for its outputs (non-final
//         stages: the marker sums are never back-propagated), or on the last stage with its
//         partial loss times micro-batch i's weight; sends its boundary inputs' gradients back.
// Gradients accumulate over the micro-batches; then the replicated parameters' gradients are
// summed inside each group (once), tied parameters' between the stages holding them, clipped by
// the global norm over all stages (a parameter counted once), and every stage steps its
// optimizer. The reported loss is the sum over the last stage's ranks and micro-batches.
//
// Transfers (the "gather on the sender" choice): every rank of the sending group makes the whole
// value (an I form as it is; G(d) all-gathered, R all-reduced inside the group, differentiably),
// and receiving rank q of the next group gets from sending rank q mod k (k: the sender group's
// size) exactly the piece its program loads: whole for I, its exact-length slice for G(d). Its
// gradient goes back the same way; each sending rank seeds its whole value with the sum of what
// its receivers sent (zero-padded slices; an I piece's gradient is a partial sum), so that the
// seeds summed over the sending group are the value's full gradient, as the duals of all-gather
// and all-reduce expect.
//
// Exactness (hap-worker --check): the micro-batches together compute the single-device step. The
// loss's micro-batch weight is 1/m for a mean over the batch (its reduced tensor's elements scale
// with the batch), 1 for a sum, and for a mean class loss whose targets may hold ignore_index the
// micro-batch's count of the other targets over the batch's (counted every step in the batch every
// rank reads whole; a micro-batch with every target ignored makes its loss NaN, as PyTorch's own
// mean does). A loss that is no linear combination of such reductions, random ops other than
// dropout (dropout draws each micro-batch's rows of the global mask:
// ExecutorOptions::microBatches) and batch statistics in training over m > 1 micro-batches are
// refused with PipelineRefused saying why: the runtime does not synchronise batch norm across
// micro-batches, whose statistics would then differ from the full batch's.
#pragma once

#include <string>

#include "runtime/core/runtime_error.h"
#include "runtime/core/worker_env.h"
#include "runtime/launch/worker_options.h"

namespace hap::runtime {

// A pipelined plan (or an option with one) that the runtime cannot run exactly: says what and why.
class PipelineRefused : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

// Whether the file at `planPath` is a pipelined plan (a JSON object with a "pipeline" object).
// False when it cannot be read or parsed: the ordinary plan reader then says why.
bool isPipelinePlan(const std::string& planPath);

// The number of ranks a pipelined plan runs on (every stage group's ranks). Throws plan::PlanError.
int pipelineWorldSize(const std::string& planPath);

// Runs one rank of the pipelined plan `options.planPath` (runWorker's contract: returns the exit
// status, throws hap::Error for expected failures).
int runPipelineWorker(const WorkerOptions& options, const WorkerEnv& env);

}  // namespace hap::runtime
