// libFuzzer target: the plan reader and verifier, the steps of opening a plan that need no model
// file (engine/plan/open_plan.h: read, verify, assign executions, build the planned graph), then
// what `hap simulate` does with a plan that opens. The plan is checked against fuzz_graph.h's MLP;
// the seeds (fuzz/corpus/fuzz_plan/) are its plans, so mutations start from plans that verify.
// Contract checked: a plan that cannot be read throws PlanError (a hap::Error) and nothing else;
// a plan the verifier passes is one every later step takes without an exception or a sanitizer
// report.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/simulator.h"
#include "engine/plan/verifier.h"
#include "fuzz_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hap::ir::Graph imported = hap::fuzz::mlpGraph();
  // As readPlan does with the file's text.
  nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  hap::plan::Plan plan;
  try {
    plan = hap::plan::planFromJson(doc, "fuzz.plan.json");
  } catch (const hap::Error&) {
    return 0;  // the documented answer to a plan that cannot be read
  }
  if (!hap::plan::verifyPlan(imported, plan).empty()) return 0;  // refused, naming the problems
  hap::plan::assignExecutions(imported, plan);
  const hap::ir::Graph planned = hap::plan::planGraph(imported, plan);
  planned.check();
  const hap::plan::Timeline timeline = hap::plan::simulate(plan, hap::plan::stepLabels(plan, imported));
  (void)hap::plan::bottleneckRank(timeline);
  (void)hap::plan::matchesPrediction(plan, timeline);
  return 0;
}
