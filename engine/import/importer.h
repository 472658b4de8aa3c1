// TorchScript -> ir::Graph (../shared/DESIGN.md §2, data flow step 1).
//
// The importer loads a TorchScript archive, inlines every call, and walks forward node by node
// on *meta* tensors: shape arithmetic (aten::size, aten::Int, prim::NumToTensor, integer math,
// size lists), static `if` conditions and constant-trip loops are folded away, so the resulting
// graph holds tensor operations only, each value with a static shape and dtype. Ops without a
// meta kernel run on CPU on zero inputs of the same shape (embedding is computed directly, so
// large tables are never materialised).
//
// This header exposes plain engine types only; LibTorch stays inside importer.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/import/input_spec.h"
#include "engine/ir/graph.h"

namespace hap::import {

struct ImportOptions {
  // Input shapes from --input; they replace the file's hap/inputs.json entries of the same name.
  std::vector<InputSpec> inputOverrides;

  enum class Execution {
    Meta,  // shapes from meta tensors (the default: no tensor data is allocated)
    Real,  // run the graph once on real CPU tensors with the file's weights and random inputs
           // (drawn within each input's [low, high)); for tests that cross-check Meta
  };
  Execution execution = Execution::Meta;

  // Largest total input size, in bytes, of an op that has no meta kernel and is therefore run on
  // CPU zeros. Beyond it the import fails naming the node instead of allocating.
  int64_t cpuFallbackLimitBytes = int64_t{512} << 20;
  // Load the module's parameters and buffers on the meta device (shapes only, no data read): for
  // looking at and planning a model (the app); a third of the time for a 400 MB model. Best
  // effort: when the archive cannot load onto meta or the import needs a weight's values, the
  // import runs again with the data, so the graph is always the one real weights give. Ignored
  // for Execution::Real and when the caller asks for the tensors.
  bool metaWeights = false;
  // Raised by another thread to stop the import: the importer polls it between TorchScript nodes
  // and throws ImportCancelled. May be null. (Loading the archive itself is not interruptible.)
  const std::atomic<bool>* cancel = nullptr;
  // Called on the importing thread as nodes are walked: (nodes walked, nodes in the inlined
  // forward); `done` never exceeds `total`. May be empty.
  std::function<void(int done, int total)> progress;
};

// The import was stopped through ImportOptions::cancel.
class ImportCancelled : public hap::ImportError {
 public:
  using hap::ImportError::ImportError;
};

// One argument of forward, for asking the user for the shapes a file does not give.
struct ForwardArgument {
  std::string name;  // "input_ids"
  std::string type;  // TorchScript type: "Tensor", "Optional[Tensor]", "int"
  // The file's hap/inputs.json entry for it, when there is one.
  std::optional<InputSpec> spec;
};

// forward's arguments (without self), in order. Throws ImportError when the file is not a
// TorchScript archive with a forward method, InputSpecError for a malformed hap/inputs.json.
std::vector<ForwardArgument> forwardArguments(const std::string& path);

// Imports `path`. Throws ImportError (file, construct or node named; see docs/cli.md "Errors") or
// InputSpecError (a malformed or missing input specification).
ir::Graph importModel(const std::string& path, const ImportOptions& options = {});

}  // namespace hap::import
