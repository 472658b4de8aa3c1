// One compute step of a rank's program: a reference node run under its rule variant on this
// rank's local pieces, through the JIT operator registry with autograd on (../shared/DESIGN.md §5).
//
// Contract:
// - Exactness: given the step's inputs in the forms its variant reads (plan::PlanStep::inputs:
//   I whole, G(d) this rank's piece of the plan's lengths, R this rank's partial), run() returns
//   the outputs in the variant's output forms, so that the rule's post-condition holds for the
//   op (rules/rule.h). What the kernel does beyond the op is what the rule declared for the
//   variant, read from plan::PlanStep::execution (rules::Execution) and sfb, never from op or
//   variant names: view sizes, the global denominators of means, depthwise groups, vocabulary
//   offsets, synchronised batch statistics, random draws, a reshard's all-to-all. A step whose
//   execution is not its variant's computes wrong values: the plan must come from the planner or
//   through plan::openPlan (plan::assignExecutions). tests/runtime/soundness/tst_rule_soundness.cpp
//   checks this against the single-device op for every registered op and variant.
// - Backward is autograd's; the collectives run() makes (a class loss's target count, an SFB
//   linear's factors, batch statistics, a reshard's all-to-all) are differentiable with exact
//   duals (collectives.h). Every rank runs the same collectives in the same order.
// - Random ops draw from the device's default generator, full size (the global batch's for a
//   replicated plan), and keep this rank's piece: the caller seeds every rank identically.
//   Dropout draws only its piece of a counter-based mask (counter_dropout.h), in every run.
// - Construction fails with RuntimeError naming the node when the runtime cannot run the step.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/plan/plan.h"
#include "runtime/comm/communicator.h"

namespace hap::runtime {

struct KernelContext {
  int rank = 0;                                  // this rank in the program's communicator
  c10::Device device = c10::Device(c10::kCPU);   // where its tensors live
  // A replicated plan's replication (null or machines == 1: none) and this rank's machine: random
  // ops then draw the global batch's numbers and keep the machine's rows.
  const plan::Replication* replication = nullptr;
  int machine = 0;
  // ExecutorOptions::floating: the dtype of every floating tensor, the ops' floating dtype
  // arguments included (Undefined: the model's own).
  at::ScalarType floating = at::ScalarType::Undefined;
  // ExecutorOptions::microBatches and the micro-batch being run (owned by the executor; null
  // when microBatches is 1): dropout draws its micro-batch's rows of the global batch's mask.
  int microBatches = 1;
  const int* microBatch = nullptr;
};

class StepKernel {
 public:
  // `step` is a compute step of a plan for graph `g` (its node and forms; the lengths are the
  // plan's). Both must outlive the kernel.
  StepKernel(const ir::Graph& g, const plan::PlanStep& step, const KernelContext& context);
  ~StepKernel();
  StepKernel(StepKernel&&) noexcept;
  StepKernel& operator=(StepKernel&&) noexcept;

  // Runs the step on this rank's inputs (one per tensor input, in the variant's order) and
  // returns its outputs (one per node output). `comm` is the program's communicator.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs, Communicator& comm);

  const std::string& label() const;  // the op without its namespace ("linear", "reshard")
  bool communication() const;        // a step that is a collective itself (a reshard)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hap::runtime
