#include "app/studio/core/documents/model_document.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "engine/base/error.h"
#include "engine/import/importer.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "engine/plan/verifier.h"

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
  auto fail = [&](std::string message) {
    r.error = {OpenError::Kind::Failed, std::move(message), {}};
    return r;
  };
  try {
    auto p = std::make_shared<plan::Plan>(plan::readPlan(planPath));
    const std::string model = modelPath.empty() ? p->modelPath : modelPath;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(model, ec))
      return fail(fmt::format("{}: its model {} is not there; open the model the plan was made for first", planPath,
                              model));
    if (plan::sha256File(model) != p->modelSha256)
      return fail(fmt::format("{}: {} is not the model this plan was made for (its SHA-256 differs from the plan's "
                              "model.sha256); open the right model or re-plan",
                              planPath, model));
    import::ImportOptions options = plan::importOptionsFor(*p);
    options.metaWeights = true;
    options.cancel = cancel;
    options.progress = std::move(progress);
    const auto start = std::chrono::steady_clock::now();
    auto g = std::make_shared<const ir::Graph>(import::importModel(model, options));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (const std::vector<std::string> problems = plan::verifyPlan(*g, *p); !problems.empty())
      return fail(fmt::format("{}: the plan does not verify against {} ({} problems; first: {})", planPath, model,
                              problems.size(), problems.front()));
    r.plan = makePlanDocument(std::move(*p), g, planPath, std::filesystem::path(planPath).filename().string());
    r.model = makeDocument(model, options.inputOverrides, std::move(g), seconds);
    return r;
  } catch (const Error& e) {
    r.error = importError(e);
    if (r.error.kind == OpenError::Kind::InputsMissing) r.error.kind = OpenError::Kind::Failed;
    return r;
  } catch (const std::exception& e) {
    return fail(fmt::format("{}: {}", planPath, e.what()));
  }
}

}  // namespace hap::studio
