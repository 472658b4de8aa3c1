// Opening a plan: the one way every program does it (the worker, the launch preflight, the app,
// `hap simulate`, the benchmarks). In order: read the plan file, locate its model, check the
// model's SHA-256 against the plan's, import the model at the plan's input shapes, verify the plan
// against the imported graph (plan/verifier.h), take each compute step's execution from its rule
// (assignExecutions), and build the planned graph the plan's ids refer to (planGraph).
//
// Contract: every failure is a typed error whose message starts with the plan file's path and
// says what to do: PlanError for the plan, its model's location, its hash and its verification;
// ImportError (and ImportCancelled) from the importer, as it throws them. A plan that opens is
// one the runtime can execute: no caller verifies again, and no caller skips a step.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "engine/ir/graph.h"
#include "engine/plan/plan.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/verifier.h"

namespace hap::import {
struct ModelTensors;  // engine/import/model_tensors.h (LibTorch): only the runtime asks for them
}

namespace hap::plan {

// The model file is there but is not the one the plan was made for (its SHA-256 differs): a
// PlanError of its own, so that a caller that can do without the model (hap simulate) tells it
// from a plan that does not verify without hashing the file twice.
class ModelMismatchError : public PlanError {
 public:
  using PlanError::PlanError;
};

struct OpenPlanOptions {
  // The model file (--model, or the model open in the app). Empty: the plan's model path as
  // written, else the file of that name beside the plan.
  std::string modelPath;
  // Import shapes only, reading no weights where the importer can (the app, the simulator).
  bool metaWeights = false;
  // The parameters', buffers' and constants' data (the runtime's executor needs them); null: none.
  import::ModelTensors* tensors = nullptr;
  const std::atomic<bool>* cancel = nullptr;    // ImportOptions::cancel
  std::function<void(int done, int total)> progress;  // ImportOptions::progress
};

struct OpenedPlan {
  Plan plan;              // as read, each compute step's execution set from its rule
  std::string planPath;   // as given
  std::string modelPath;  // the model file found (OpenPlanOptions::modelPath, or located)
  ir::Graph imported;     // the model imported at the plan's inputs (importOptionsFor)
  ir::Graph planned;      // planGraph(imported, plan): the graph the plan's node and value ids name
  double importSeconds = 0;
};

// The model file of `plan` (read from `planPath`): `modelPath` when given, else the plan's model
// path as written when that file exists, else the file of that name beside the plan; nullopt when
// none is there (a given `modelPath` is returned as it is: openPlan says when it is missing).
std::optional<std::string> locatePlanModel(const Plan& plan, const std::string& planPath,
                                           const std::string& modelPath = {});

// PlanError naming the plan file when `modelPath` is not there; ModelMismatchError when its SHA-256
// is not the plan's model.sha256.
void checkPlanModel(const Plan& plan, const std::string& planPath, const std::string& modelPath,
                    const std::atomic<bool>* cancel = nullptr);

// The verifier's shape function (plan/verifier.h) that openPlan and planModel use: LibTorch's own
// output shapes of a node on local input shapes (import::localOutputShapes).
ShapeFunction shapeFunction();

// Reads, locates, checks, imports and verifies (see the file's comment). Throws as it says there.
OpenedPlan openPlan(const std::string& planPath, const OpenPlanOptions& options = {});

// openPlan() for a plan already read from `planPath` (hap launch reads it first to check the
// devices before any import).
OpenedPlan openPlan(Plan plan, const std::string& planPath, const OpenPlanOptions& options = {});

}  // namespace hap::plan
