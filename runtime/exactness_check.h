// The exactness check of a run (hap-worker --check; DESIGN.md §3 "Exactness"). Beside the
// distributed program, every rank runs the single-device program: the TorchScript module on the
// whole batch, with the same seeds, stepped by LibTorch's own optimizer (and its float64 shadow,
// below). The check compares what
// the two optimizers apply, every step:
//   - the loss;
//   - every parameter's gradient after every reduction (gradient buckets, sums across machines,
//     clipping): the full gradient, this rank's piece against the same piece of the reference;
//   - every parameter and every buffer (running statistics) after the optimizer step;
// and at the end that replicated copies are bit-identical on every rank.
//
// Each step is checked from the same state: after the comparison the reference takes the run's
// parameters and buffers, so a float difference of one step (a max-pool or ReLU tie decided the
// other way by a reordered sum) is judged in that step and never compounds over the next ones.
//
// Tolerance. Both programs compute in float32 and approximate the same exact values; a float64
// shadow of the single-device program (the module in float64, same seeds) stands for those. A
// tensor a of the run passes when its distance from the float64 values x is within what float32
// itself costs there, or a relative bound, over norms (torch.testing's form, where single
// elements are float noise):
//     ‖a − x‖₂ ≤ max(noise·‖s − x‖₂, rtol·‖x‖₂) + atol·√n
// with s the float32 single-device program's tensor and n its elements. The first term admits
// the float noise of sums that cancel (a gradient that is zero in exact arithmetic, such as a
// bias followed by a batch norm), which no fixed tolerance separates from a bug; a wrong program
// is off by far more than float32's own error. Integer buffers must be equal. Where the float64
// shadow draws other random numbers than the float32 program (their losses differ beyond float
// rounding), the check compares with the float32 program under rtol and atol alone, and says so.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/optimizer.h"
#include "runtime/parameters.h"

namespace hap::rt {

class Communicator;

struct CheckTolerance {
  double noise = 10;  // times the float32 single-device program's own distance from float64
  double rtol = 1e-5;  // relative (about 80 ulp of float32: the reordered sums of a distributed run)
  double atol = 1e-6;  // absolute, per element
};

class ExactnessCheck {
 public:
  // `programRank`: this rank's place among the program's ranks (whose pieces the parameters
  // hold); `program` their communicator, `world` every rank's.
  ExactnessCheck(const std::string& modelPath, const OptimizerOptions& optimizer, c10::Device device,
                 CheckTolerance tolerance, int programRank, Communicator& program, Communicator& world);
  ~ExactnessCheck();

  // After the run's backward and every reduction, before its optimizer step: runs the reference
  // forward and backward on the whole batch (seed `seed`), clips as the run does, and compares
  // the global loss (the sum of every rank's `partialLoss`) and every gradient.
  void compareGradients(int64_t step, uint64_t seed, const std::vector<at::Tensor>& wholeBatch,
                        const at::Tensor& partialLoss, const std::vector<LocalParameter>& params);
  // After the run's optimizer step: steps the reference, compares parameters and buffers, and
  // gives the reference the run's values for the next step.
  void compareState(int64_t step, const std::vector<LocalParameter>& params, const std::vector<LocalBuffer>& buffers);
  // Checks that replicated copies are bit-identical (on `peers` too: a replicated plan's other
  // machines, or null), prints this rank's verdict ("check rank R: ... PASS|FAIL") and returns
  // whether every comparison of every rank passed.
  bool finish(const std::string& who, int64_t steps, const std::vector<LocalParameter>& params,
              Communicator* peers);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hap::rt
