#include "app/studio/core/documents/plan_export.h"

#include <exception>

#include "engine/base/text_file.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/report.h"
#include "engine/plan/trace_export.h"

namespace hap::studio {
namespace {

template <class Work>
std::string attempt(Work work) {
  try {
    work();
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

std::string exportPlanFile(const PlanDocument& doc, const std::string& path) {
  return attempt([&] { plan::writePlan(*doc.plan, *doc.imported, path); });
}

std::string exportTrace(const PlanDocument& doc, const std::string& path) {
  return attempt([&] { writeTextFile(path, plan::traceJson(*doc.plan, doc.timeline).dump() + "\n"); });
}

std::string exportReport(const PlanDocument& doc, const std::string& path) {
  return attempt([&] { writeTextFile(path, plan::formatReport(*doc.plan, doc.timeline)); });
}

std::string exportLaunchScripts(const PlanDocument& doc, const std::string& planPath, runtime::ScriptKind kind,
                                const std::string& dir, bool force, std::vector<std::string>* written) {
  return attempt([&] {
    runtime::EmitRequest request;
    request.kind = kind;
    request.dir = dir;
    request.force = force;
    std::vector<std::string> names = runtime::emitLaunchFolder(*doc.plan, planPath, request);
    if (written) *written = std::move(names);
  });
}

}  // namespace hap::studio
