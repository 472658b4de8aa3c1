// libFuzzer target: the plan reader and verifier, the steps of opening a plan that need no model
// file (engine/plan/open_plan.h: read, verify, assign executions, build the planned graph), then
// what `hap simulate` does with a plan that opens. The plan is checked against fuzz_graph.h's MLP;
// the seeds (fuzz/corpus/fuzz_plan/) are its plans, so mutations start from plans that verify.
// Contract checked: a plan that cannot be read throws PlanError (a hap::Error) and nothing else;
// a plan the verifier passes is one every later step takes without an exception or a sanitizer
// report.
//
// The input goes through readPlan (a scratch file in /dev/shm), the entry every program uses, so
// its handling of the file's text (invalid JSON, numbers out of range) is fuzzed too.
// HAP_FUZZ_PLAN_SKIP_ASSIGN=1 leaves assignExecutions out: a way to fuzz past a known finding
// there (docs/reliability.md), never the default.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/base/error.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/simulator.h"
#include "engine/plan/verifier.h"
#include "fuzz_graph.h"

namespace {

std::string scratchPath() {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/hap-fuzz-plan-" + std::to_string(getpid()) + ".json";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hap::ir::Graph imported = hap::fuzz::mlpGraph();
  static const std::string path = scratchPath();
  static const bool skipAssign = std::getenv("HAP_FUZZ_PLAN_SKIP_ASSIGN") != nullptr;
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  hap::plan::Plan plan;
  try {
    plan = hap::plan::readPlan(path);
  } catch (const hap::Error&) {
    return 0;  // the documented answer to a plan that cannot be read
  }
  if (!hap::plan::verifyPlan(imported, plan).empty()) return 0;  // refused, naming the problems
  if (!skipAssign) hap::plan::assignExecutions(imported, plan);
  const hap::ir::Graph planned = hap::plan::planGraph(imported, plan);
  planned.check();
  // The simulator checks what the verifier leaves to it (the devices' rank order, which the
  // launch's rank check reports too): a typed error there is a documented answer as well.
  hap::plan::Timeline timeline;
  try {
    timeline = hap::plan::simulate(plan, hap::plan::stepLabels(plan, imported));
  } catch (const hap::Error&) {
    return 0;
  }
  (void)hap::plan::bottleneckRank(timeline);
  (void)hap::plan::matchesPrediction(plan, timeline);
  return 0;
}
