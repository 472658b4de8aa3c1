#include "app/studio/core/documents/model_document.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "engine/base/error.h"
#include "engine/import/importer.h"
#include "engine/plan/open_plan.h"
#include "engine/plan/planner.h"

namespace hap::studio {
namespace {

std::shared_ptr<const ModelDocument> makeDocument(const std::string& path, std::vector<import::InputSpec> overrides,
                                                  std::shared_ptr<const ir::Graph> g, double seconds) {
  auto doc = std::make_shared<ModelDocument>();
  doc->path = path;
  doc->inputOverrides = std::move(overrides);
  doc->scopes = std::make_shared<const ScopeTree>(*g);
  doc->graph = std::move(g);
  doc->importSeconds = seconds;
  return doc;
}

// The error of a failed import, classified: a missing input specification asks for shapes.
OpenError importError(const std::exception& e) {
  if (dynamic_cast<const import::ImportCancelled*>(&e)) return {OpenError::Kind::Cancelled, e.what(), {}};
  if (dynamic_cast<const MissingInputSpecError*>(&e)) return {OpenError::Kind::InputsMissing, e.what(), {}};
  return {OpenError::Kind::Failed, e.what(), {}};
}

}  // namespace

ImportResult importDocument(const std::string& path, const std::vector<import::InputSpec>& inputOverrides,
                            const std::atomic<bool>* cancel, std::function<void(int, int)> progress) {
  import::ImportOptions options;
  options.inputOverrides = inputOverrides;
  options.cancel = cancel;
  options.progress = std::move(progress);
  options.metaWeights = true;  // the app shows shapes; weights stay unread where the importer can do without
  const auto start = std::chrono::steady_clock::now();
  try {
    ir::Graph g = import::importModel(path, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return {makeDocument(path, inputOverrides, std::make_shared<const ir::Graph>(std::move(g)), seconds), {}};
  } catch (const Error& e) {
    ImportResult r{nullptr, importError(e)};
    if (r.error.kind == OpenError::Kind::InputsMissing) {
      try {
        r.error.arguments = import::forwardArguments(path);
      } catch (const Error& again) {
        r.error = {OpenError::Kind::Failed, again.what(), {}};
      }
    }
    return r;
  } catch (const std::exception& e) {
    // The importer promises typed errors for bad input; anything else is still reported, not fatal.
    return {nullptr, {OpenError::Kind::Failed, fmt::format("{}: {}", path, e.what()), {}}};
  }
}

PlanResult openPlan(const std::string& planPath, const std::string& modelPath, const std::atomic<bool>* cancel,
                    std::function<void(int, int)> progress) {
  PlanResult r;
  try {
    plan::OpenPlanOptions options;
    options.modelPath = modelPath;
    options.metaWeights = true;  // the app shows shapes; weights stay unread where the importer can do without
    options.cancel = cancel;
    options.progress = std::move(progress);
    plan::OpenedPlan opened = plan::openPlan(planPath, options);
    auto g = std::make_shared<const ir::Graph>(std::move(opened.imported));
    r.plan = makePlanDocument(std::move(opened.plan), g, planPath, std::filesystem::path(planPath).filename().string());
    r.model = makeDocument(opened.modelPath, plan::importOptionsFor(r.plan->p()).inputOverrides, std::move(g),
                           opened.importSeconds);
    return r;
  } catch (const Error& e) {
    // A plan names its inputs: a missing input specification is the plan's fault, not a question.
    r.error = importError(e);
    if (r.error.kind == OpenError::Kind::InputsMissing) r.error.kind = OpenError::Kind::Failed;
    return r;
  } catch (const std::exception& e) {
    r.error = {OpenError::Kind::Failed, fmt::format("{}: {}", planPath, e.what()), {}};
    return r;
  }
}

}  // namespace hap::studio
