// Dropout whose mask comes from the counter-based generator (counter_rng.h): a rank draws the
// mask of its own piece of a tensor, never the whole mask, and the pieces of all ranks are
// exactly the mask the single-device program draws.
//
// Contract:
// - drawDropoutKey() takes one 64-bit number from LibTorch's default CPU generator (under its
//   lock): the key of one dropout op's execution. Every rank and the single-device reference seed
//   that generator alike each step (runtime/train/trainer.cpp, iterationSeed) and run the random
//   ops in program order, so an op's key is a function of (run seed, step, the op's place in the
//   program): the same on every rank and in the reference, different per step and per op. Other
//   random ops' draws are unchanged by it, except that each dropout consumes one number.
// - counterDropout(input, p, train, full, start, mask) computes dropout of `input`, the box of
//   a tensor of shape `full` starting at `start` (per dimension; the box's lengths are input's):
//   output = input · keep · scale, keep = keepMask(key, keepThreshold(1 − p)) of the box (element
//   e kept by word flatIndex(e) of the key's stream), scale = 1 / (1 − p) (0 when p = 1), and
//   with `mask` native_dropout's second output, keep as bool. Not training or p = 0: a copy of
//   the input (and an all-true mask), and no key is drawn. The mask is drawn on the CPU (in
//   parallel over rows by at::parallel_for) and moved to the input's device.
// - The JIT operators hap::dropout, hap::dropout_ and hap::native_dropout take aten's schemas
//   and run counterDropout on the whole input (dropout_ writes into it). useCounterDropout(m)
//   rewrites every aten::dropout, aten::dropout_ and aten::native_dropout of module m's methods
//   (submodules' included) into them, so that the module run whole draws the masks that the
//   runtime's pieces put together are. counterDropoutOp names the operator that stands for an
//   aten op ("" for any other op).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace hap::runtime {

uint64_t drawDropoutKey();

std::vector<at::Tensor> counterDropout(const at::Tensor& input, double p, bool train,
                                       const std::vector<int64_t>& full,
                                       const std::vector<int64_t>& start, bool mask);

// The keep mask (bool, on the CPU) of the box of `full` at `start` with `length`.
at::Tensor dropoutKeepMask(uint64_t key, double p, const std::vector<int64_t>& full,
                           const std::vector<int64_t>& start, const std::vector<int64_t>& length);

void useCounterDropout(torch::jit::Module& module);

std::string counterDropoutOp(std::string_view atenOp);

}  // namespace hap::runtime
