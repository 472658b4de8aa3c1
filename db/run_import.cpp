#include "db/run_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace hap::db {

std::vector<ImportedRun> importRuns(Store& into, const std::string& sourcePath) {
  const Store from(sourcePath, Store::Mode::ReadOnly);
  std::error_code ec;
  if (std::filesystem::equivalent(sourcePath, into.path(), ec))
    throw StoreError(fmt::format("{}: importing a store into itself adds nothing", sourcePath));
  std::vector<RunRecord> runs = from.runs();
  std::reverse(runs.begin(), runs.end());  // oldest first: imported ids keep the order
  const std::vector<RunRecord> present = into.runs();
  std::map<int64_t, int64_t> planIds;  // source plan id -> destination plan id
  std::vector<ImportedRun> out;
  for (const RunRecord& run : runs) {
    if (run.status == RunStatus::Running) continue;
    int64_t planId = 0;
    if (run.planId != 0) {
      auto known = planIds.find(run.planId);
      if (known == planIds.end()) {
        std::optional<PlanRecord> plan = from.plan(run.planId);
        if (!plan)
          throw StoreError(
              fmt::format("{}: run {} names plan {}, which the file does not hold", sourcePath, run.id, run.planId));
        if (plan->clusterId != 0) {
          const std::optional<ClusterRecord> cluster = from.cluster(plan->clusterId);
          if (!cluster)
            throw StoreError(fmt::format("{}: plan {} names cluster {}, which the file does not hold", sourcePath,
                                         plan->id, plan->clusterId));
          plan->clusterId = into.saveCluster(cluster->name, cluster->yaml);
        }
        known = planIds.emplace(run.planId, into.savePlan(*plan)).first;
      }
      planId = known->second;
    }
    const auto same = std::find_if(present.begin(), present.end(), [&](const RunRecord& r) {
      return r.planId == planId && r.host == run.host && r.pid == run.pid && r.startedAt == run.startedAt;
    });
    if (same != present.end()) {
      out.push_back({run.id, same->id, false});
      continue;
    }
    RunRecord copy = run;
    copy.planId = planId;
    const int64_t id = into.beginRun(copy);
    into.recordSteps(id, from.steps(run.id));
    into.recordStages(id, from.stages(run.id));
    into.finishRun(id, run.status, run.exitReason, run.endedAt);
    out.push_back({run.id, id, true});
  }
  return out;
}

}  // namespace hap::db
