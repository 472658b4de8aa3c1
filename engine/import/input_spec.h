// Input specifications: the shapes and dtypes of forward's arguments, from the model file's
// hap/inputs.json or from `--input NAME=DIMxDIMx...[:DTYPE[:LOW..HIGH]]` (the command line wins).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/graph.h"

namespace hap::import {

struct InputSpec {
  std::string name;  // forward's argument name
  ir::Shape shape;
  ir::DType dtype = ir::DType::Float32;
  bool dtypeGiven = true;  // false for an --input without ":DTYPE" (keeps the file's dtype)
  // Valid values of an integer input, half-open [low, high) (token ids, class labels). Used to
  // draw real example inputs; absent means zeros.
  std::optional<int64_t> low, high;
};

struct ModelSpec {
  std::vector<InputSpec> inputs;
  std::string modelInfo;  // the "model" object as JSON text, or "" when absent
};

// Limits on a declared input shape, checked before any tensor of it is made (checkInputShape).
inline constexpr size_t kMaxInputRank = 64;                 // dimensions
inline constexpr int64_t kMaxInputBytes = int64_t{1} << 40;  // 1 TiB per input tensor

// Checks a declared input shape before anything allocates: at most kMaxInputRank dimensions,
// each non-negative, and the product of the dimensions (a zero dimension counted as one, so that
// strides stay representable too) times dtype's element size without int64 overflow and at most
// kMaxInputBytes. Throws InputSpecError starting with `context` ("--input 'x=...'",
// "M.pt:hap/inputs.json: field 'inputs[0].shape'"), e.g.
//   CONTEXT: dimension 0 is -4; dimensions must be non-negative
//   CONTEXT: shape [4294967296, 4294967296] has more elements than HAP can count (2^63); ...
//   CONTEXT: shape [65536, 65536, 65536] is 1.00 EiB as float32, more than HAP accepts for one
//   input (1.00 TiB); ...
void checkInputShape(const ir::Shape& shape, ir::DType dtype, const std::string& context);

// Parses the text of hap/inputs.json (format "hap-inputs", version 1). `origin` names the file
// in messages ("model.pt:hap/inputs.json"). Throws InputSpecError naming the field.
ModelSpec parseInputsJson(std::string_view text, const std::string& origin);

// Parses one --input argument, NAME=DIMxDIMx...[:DTYPE[:LOW..HIGH]] (LOW..HIGH: the half-open
// range of an integer input's values). Throws InputSpecError with the documented message:
//   --input 'ARG': expected NAME=DIMxDIMx...[:DTYPE[:LOW..HIGH]], e.g. x=64x3x32x32:float32
//   --input 'ARG': range 'R' is not LOW..HIGH with integers LOW < HIGH (...)
//   --input 'ARG': a range applies to integer inputs only, not float32
//   --input 'ARG': dimension 'D' is not a non-negative integer
//   --input 'ARG': unknown dtype 'T' (expected one of float32, ...)
//   --input 'ARG': shape ... (checkInputShape at the given dtype, or at 1 byte per element when
//   none is given; the importer checks again at the file's dtype)
// An empty dimension list ("lr=:float32") declares a 0-dim tensor.
InputSpec parseInputArg(std::string_view arg);

// Replaces the entries of `specs` named by `overrides` (keeping their dtype and range when the
// override gives no dtype) and appends the others.
void applyOverrides(std::vector<InputSpec>& specs, const std::vector<InputSpec>& overrides);

// Overrides that divide dimension 0 (the batch) of every input of `g` by `divisor`, rounding up:
// the model at the batch one of `divisor` data-parallel groups sees (the Megatron baseline).
std::vector<InputSpec> dividedBatch(const ir::Graph& g, int divisor);

}  // namespace hap::import
