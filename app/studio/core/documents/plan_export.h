// Exports a plan as the CLI does, through the CLI's own code, with the same refusals:
//   plan file      plan::writePlan                      (hap plan -o)
//   Chrome trace   plan::traceJson of the simulation    (hap simulate --trace)
//   report         plan::formatReport                   (hap simulate --report)
//   launch scripts runtime::emitLaunchFolder                 (hap launch PLAN --emit KIND DIR)
// Each returns an empty string on success, else the message the CLI would print (file, field and
// what to do).
#pragma once

#include <string>
#include <vector>

#include "app/studio/core/documents/plan_document.h"
#include "runtime/launch/launch_scripts.h"

namespace hap::studio {

std::string exportPlanFile(const PlanDocument& doc, const std::string& path);
std::string exportTrace(const PlanDocument& doc, const std::string& path);
std::string exportReport(const PlanDocument& doc, const std::string& path);
// Launch scripts for the plan file `planPath` (the exported plan: the folder gets a copy of it).
// `written` receives the names written, the plan's first.
std::string exportLaunchScripts(const PlanDocument& doc, const std::string& planPath, runtime::ScriptKind kind,
                                const std::string& dir, bool force, std::vector<std::string>* written = nullptr);

}  // namespace hap::studio
