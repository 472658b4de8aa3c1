// What the app has open: an imported model (its graph and scope tree), a cluster and a plan. Plain
// data shared read-only between the GUI thread and background jobs (hence shared_ptr<const>).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/studio/core/documents/plan_document.h"
#include "app/studio/core/graph/scope_tree.h"
#include "engine/import/importer.h"
#include "engine/import/input_spec.h"
#include "engine/ir/graph.h"
#include "engine/plan/plan.h"

namespace hap::studio {

struct ModelDocument {
  std::string path;
  std::vector<import::InputSpec> inputOverrides;  // what the user gave (--input or the inputs dialog)
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const ScopeTree> scopes;
  double importSeconds = 0;
};

// Why opening a file failed, for the app to choose what to offer: the message is the CLI's
// (file, field, node and source line).
struct OpenError {
  enum class Kind {
    Failed,         // the file is invalid; the message says why and what to do
    InputsMissing,  // a model without (complete) input shapes: ask for them
    Cancelled,      // the user stopped it
  };
  Kind kind = Kind::Failed;
  std::string message;
  // For InputsMissing: forward's arguments, with what the file gives for each.
  std::vector<import::ForwardArgument> arguments;
};

// Imports a model (blocking; call off the GUI thread). Throws nothing for bad input: a failure is
// returned as OpenError. `cancel` and `progress` as in import::ImportOptions.
struct ImportResult {
  std::shared_ptr<const ModelDocument> document;  // null on failure
  OpenError error;
};
ImportResult importDocument(const std::string& path, const std::vector<import::InputSpec>& inputOverrides,
                            const std::atomic<bool>* cancel = nullptr,
                            std::function<void(int, int)> progress = {});

// Opens a plan for the app through plan::openPlan (engine/plan/open_plan.h), as a worker does
// before it runs: reads it, locates the model (`modelPath`, else the plan's own model path or the
// file of that name beside the plan), checks its SHA-256, imports it with the plan's input shapes
// (shapes only) and verifies the plan against it. Blocking; call off the GUI thread. Failures are
// returned, classified (Cancelled, else Failed), with openPlan's message naming the plan file.
struct PlanResult {
  std::shared_ptr<const PlanDocument> plan;       // null on failure
  std::shared_ptr<const ModelDocument> model;     // the model as planned
  OpenError error;
};
PlanResult openPlan(const std::string& planPath, const std::string& modelPath,
                    const std::atomic<bool>* cancel = nullptr, std::function<void(int, int)> progress = {});

}  // namespace hap::studio
