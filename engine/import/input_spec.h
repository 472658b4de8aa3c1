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
// An empty dimension list ("lr=:float32") declares a 0-dim tensor.
InputSpec parseInputArg(std::string_view arg);

// Replaces the entries of `specs` named by `overrides` (keeping their dtype and range when the
// override gives no dtype) and appends the others.
void applyOverrides(std::vector<InputSpec>& specs, const std::vector<InputSpec>& overrides);

// Overrides that divide dimension 0 (the batch) of every input of `g` by `divisor`, rounding up:
// the model at the batch one of `divisor` data-parallel groups sees (the Megatron baseline).
std::vector<InputSpec> dividedBatch(const ir::Graph& g, int divisor);

}  // namespace hap::import
