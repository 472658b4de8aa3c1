// The exactness check of a run (hap-worker --check; ../shared/DESIGN.md §3 "Exactness"). Beside the
// distributed program, world rank 0 runs the single-device program: the TorchScript module on the
// whole batch, with the same seeds, stepped by LibTorch's own optimizer (and its float64 shadow,
// below); the other ranks hand it their pieces. The check compares what
// the two optimizers apply, every step:
//   - the loss;
//   - every parameter's gradient after every reduction (gradient buckets, sums across machines,
//     clipping): the full gradient, this rank's piece against the same piece of the reference;
//   - every parameter and every buffer (running statistics) after the optimizer step;
// and at the end that replicated copies are bit-identical on every rank.
//
// Each step is checked from the same state: after the comparison the reference takes the run's
// parameters and buffers, so a float difference of one step never compounds over the next ones.
//
// Precision. By default both programs compute in float64 (ExecutorOptions::floating; the module's
// floating tensors and dtype constants converted alike), where a tie decided the other way by
// rounding (a ReLU or max-pool input within float32 rounding of its threshold, which changes
// every gradient upstream of it) does not happen, and a wrong program stands out by many orders
// of magnitude. A tensor a passes against the reference x when, over norms (torch.testing's form,
// where single elements are float noise),
//     ‖a − x‖₂ ≤ rtol·‖x‖₂ + atol·√n        (n elements; float64: rtol = atol = 1e-7)
// The check can also run in the model's float32 (`--check-dtype float32`): then both float32
// programs are compared with a float64 shadow of the single-device program (same seeds), which
// stands for the exact values, and a tensor passes when
//     ‖a − x‖₂ ≤ max(noise·‖s − x‖₂, rtol·‖x‖₂) + atol·√n   (noise 10, rtol 1e-5, atol 1e-6)
// with s the float32 single-device tensor: the first term admits sums that cancel (a gradient
// that is zero in exact arithmetic, such as a bias followed by a batch norm). In float32 a rare
// tie decided the other way can still fail a correct run (the verdict names the step); where
// the shadow draws other random numbers than the float32 program (their losses differ beyond
// rounding), the comparison is with the float32 program under rtol and atol alone, and says so.
// Integer buffers must be equal.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/train/optimizer.h"
#include "runtime/train/parameters.h"

namespace hap::runtime {

class Communicator;

struct CheckTolerance {
  double noise = 0;   // times the float32 single-device program's own distance from float64
  double rtol = 1e-7;  // relative
  double atol = 1e-7;  // absolute, per element
  // The defaults of a check in `dtype` (float64, or float32 against the float64 shadow).
  static CheckTolerance forDtype(at::ScalarType dtype);
};

class ExactnessCheck {
 public:
  // `programRank`: this rank's place among the program's ranks (whose pieces the parameters
  // hold); `program` their communicator, `world` every rank's.
  // `dtype`: what the run computes in (its ExecutorOptions::floating, or float32).
  ExactnessCheck(const std::string& modelPath, const OptimizerOptions& optimizer, c10::Device device,
                 at::ScalarType dtype, CheckTolerance tolerance, int programRank, Communicator& program,
                 Communicator& world);
  ~ExactnessCheck();

  // After the run's backward and every reduction, before its optimizer step: runs the reference
  // forward and backward on the whole batch (seed `seed`; only world rank 0 reads `wholeBatch`),
  // clips as the run does, and compares the global loss (the sum of every rank's `partialLoss`)
  // and every gradient. Every rank calls it (and compareState) at the same point.
  void compareGradients(int64_t step, uint64_t seed, const std::vector<at::Tensor>& wholeBatch,
                        const at::Tensor& partialLoss, const std::vector<LocalParameter>& params);
  // After the run's optimizer step: steps the reference, compares parameters and buffers, and
  // gives the reference the run's values for the next step.
  void compareState(int64_t step, const std::vector<LocalParameter>& params, const std::vector<LocalBuffer>& buffers);
  // Checks that replicated copies are bit-identical (on `peers` too: a replicated plan's other
  // machines, or null), prints this rank's verdict ("check rank R: ... PASS|FAIL"; rank 0's names
  // the worst tensors) and returns whether every comparison passed.
  bool finish(const std::string& who, int64_t steps, const std::vector<LocalParameter>& params,
              Communicator* peers);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hap::runtime
