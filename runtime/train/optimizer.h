// The optimizer of a rank: LibTorch's SGD/Adam/AdamW applied to the local pieces, and gradient
// clipping by the true global norm (../shared/DESIGN.md §5, §7).
//
// Exactness: the three updates are element-wise, so updating every piece equals updating the
// full tensor and cutting it afterwards. A replicated parameter gets the same arithmetic on the
// same (bit-identical) gradient on every rank, so its copies stay bit-identical.
//
// Contract: `params` outlives the optimizer, is not resized, and its values keep their identity
// (the state is attached to the tensors). Every rank calls clipGradients at the same point.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/train/optimizer_options.h"
#include "runtime/train/parameters.h"

namespace hap::runtime {

class Communicator;

// What the optimizer keeps for one parameter's local piece.
struct ParameterState {
  // Updates applied to this parameter (PyTorch skips a parameter without a gradient, so it may
  // lag Optimizer::steps()); 0 means no state yet, which equals zero-filled state.
  int64_t step = 0;
  // By stateNames(): "momentum_buffer" (SGD with momentum), "exp_avg" and "exp_avg_sq" (Adam,
  // AdamW); each shaped like the piece.
  std::map<std::string, at::Tensor> tensors;
};

class Optimizer {
 public:
  // RuntimeError naming the option when an option is out of range.
  Optimizer(std::vector<LocalParameter>& params, OptimizerOptions options);
  ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Global L2 norm of all gradients over all ranks: the squared norms of the sharded pieces summed
  // over ranks (one all-reduce of one float64 scalar, always issued, even with no sharded
  // parameter), plus the replicated parameters' squared norm computed locally, so counted once.
  // Accumulated in float64; the result is bit-identical on every rank. When options.clipNorm > 0
  // and clipNorm / (norm + 1e-6) < 1, every gradient is scaled by that factor (PyTorch's
  // clip_grad_norm_, a NaN norm included). Returns the norm before clipping; a caller that wants to
  // skip a step with a non-finite norm checks it. Parameters without a gradient are skipped.
  double clipGradients(Communicator& comm);
  // One update of every local piece that has a gradient (exactly LibTorch's SGD/Adam/AdamW).
  void step();
  // Drops every gradient (PyTorch's set_to_none), so backward starts afresh.
  void zeroGrad();
  int64_t steps() const { return steps_; }
  void setSteps(int64_t steps) { steps_ = steps; }

  const OptimizerOptions& options() const { return options_; }
  void setLearningRate(double lr);
  const std::vector<LocalParameter>& parameters() const { return *params_; }

  // The names of the per-parameter state tensors of this kind (see ParameterState).
  std::vector<std::string> stateNames() const;
  // Parameter i's state; tensors are zero-filled (and step 0) before its first update. The
  // tensors are copies.
  ParameterState state(size_t i) const;
  int64_t parameterSteps(size_t i) const { return paramSteps_.at(i); }
  // Replaces parameter i's state (step 0 clears it). Tensors are copied onto the piece's device
  // and dtype; a missing name or a shape other than the piece's is a bug (std::logic_error).
  void setState(size_t i, const ParameterState& state);

 private:
  struct Impl;
  std::vector<LocalParameter>* params_;
  OptimizerOptions options_;
  int64_t steps_ = 0;
  std::vector<int64_t> paramSteps_;  // updates per parameter (SGD keeps no step of its own)
  std::unique_ptr<Impl> impl_;
};

}  // namespace hap::runtime
