// The data behind an imported graph's source values, for the runtime (which executes the graph on
// real tensors). The one engine header that names a LibTorch type: only the runtime includes it;
// the planner never needs tensor data.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "engine/import/importer.h"

namespace hap::import {

struct ModelTensors {
  // Every parameter and buffer (the module's own tensor, detached; shares storage with the loaded
  // module) and every folded constant (a copy), by value id. Inputs and activations have none.
  std::unordered_map<ir::ValueId, at::Tensor> values;
  // The forward arguments as specified (hap/inputs.json with the overrides applied): shapes,
  // dtypes and the valid ranges of integer inputs, for the data sources.
  std::vector<InputSpec> inputs;
};

// The LibTorch scalar type of a dtype.
at::ScalarType toScalarType(ir::DType dtype);

// importModel() that also returns the tensors. Throws as importModel does.
ir::Graph importModel(const std::string& path, const ImportOptions& options, ModelTensors& tensors);

}  // namespace hap::import
