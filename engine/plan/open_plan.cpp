#include "engine/plan/open_plan.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "engine/import/importer.h"
#include "engine/import/model_tensors.h"
#include "engine/import/shape_check.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "engine/plan/verifier.h"

namespace hap::plan {

namespace fs = std::filesystem;

std::optional<std::string> locatePlanModel(const Plan& plan, const std::string& planPath,
                                           const std::string& modelPath) {
  if (!modelPath.empty()) return modelPath;
  std::error_code ec;
  if (fs::is_regular_file(plan.modelPath, ec)) return plan.modelPath;
  const fs::path beside = fs::path(planPath).parent_path() / fs::path(plan.modelPath).filename();
  if (fs::is_regular_file(beside, ec)) return beside.string();
  return std::nullopt;
}

void checkPlanModel(const Plan& plan, const std::string& planPath, const std::string& modelPath,
                    const std::atomic<bool>* cancel) {
  std::error_code ec;
  if (!fs::is_regular_file(modelPath, ec))
    throw PlanError(fmt::format("{}: the model {} is not there; name the model the plan was made for (--model)",
                                planPath, modelPath));
  if (sha256File(modelPath, cancel) != plan.modelSha256)
    throw ModelMismatchError(fmt::format("{}: {} is not the model this plan was made for (its SHA-256 differs from the "
                                "plan's model.sha256); re-plan with `hap plan` or name the right model (--model)",
                                planPath, modelPath));
}

ShapeFunction shapeFunction() {
  return [](const ir::Graph& g, const ir::Node& n, const std::vector<ir::Shape>& inputs) {
    return import::localOutputShapes(g, n, inputs);
  };
}

OpenedPlan openPlan(Plan plan, const std::string& planPath, const OpenPlanOptions& options) {
  OpenedPlan opened;
  opened.planPath = planPath;
  const std::optional<std::string> model = locatePlanModel(plan, planPath, options.modelPath);
  if (!model)
    throw PlanError(fmt::format("{}: the plan's model {} is not there (nor beside the plan); name it with --model",
                                planPath, plan.modelPath));
  opened.modelPath = *model;
  checkPlanModel(plan, planPath, opened.modelPath);

  import::ImportOptions importOptions = importOptionsFor(plan);
  importOptions.metaWeights = options.metaWeights;
  importOptions.cancel = options.cancel;
  importOptions.progress = options.progress;
  const auto start = std::chrono::steady_clock::now();
  opened.imported = options.tensors ? import::importModel(opened.modelPath, importOptions, *options.tensors)
                                    : import::importModel(opened.modelPath, importOptions);
  opened.importSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // With LibTorch's own shapes of every plain step on every rank (import::localOutputShapes): a
  // plan the worker's kernels would stop at step 1 on is refused here, naming node and rank.
  if (const std::vector<std::string> problems = verifyPlan(opened.imported, plan, shapeFunction());
      !problems.empty())
    throw PlanError(fmt::format("{}: the plan does not verify against {} ({} problems; first: {})", planPath,
                                opened.modelPath, problems.size(), problems.front()));
  assignExecutions(opened.imported, plan);
  opened.planned = planGraph(opened.imported, plan);
  opened.plan = std::move(plan);
  return opened;
}

OpenedPlan openPlan(const std::string& planPath, const OpenPlanOptions& options) {
  return openPlan(readPlan(planPath), planPath, options);
}

}  // namespace hap::plan
