#include "runtime/launch/launch_recording.h"

#include <signal.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include "engine/base/error.h"
#include "engine/cost/cluster_yaml.h"
#include "engine/plan/planner.h"
#include "runtime/launch/launch_scripts.h"

namespace hap::runtime {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// The value of worker option `name` in `args` ("--name value" or "--name=value"), if given.
std::optional<std::string> optionValue(const std::vector<std::string>& args, std::string_view name) {
  std::optional<std::string> value;  // the last one wins, as with CLI11
  const std::string prefix = std::string(name) + "=";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name && i + 1 < args.size()) value = args[i + 1];
    else if (args[i].rfind(prefix, 0) == 0) value = args[i].substr(prefix.size());
  }
  return value;
}

}  // namespace

int64_t beginRecordedRun(db::Store& store, const plan::Plan& p, const LaunchSettings& s) {
  store.recoverAbandonedRuns();
  const int64_t cluster = store.saveCluster(p.cluster.name, cost::formatClusterYaml(p.cluster));
  const std::vector<std::string>& workerArgs = s.workerArgs;
  const std::string model = optionValue(workerArgs, "--model").value_or(p.modelPath);

  db::PlanRecord planRecord;
  std::ifstream in(s.planPath, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw Error(fmt::format("{}: cannot read the plan file", s.planPath));
  planRecord.json = text.str();
  planRecord.sha256 = plan::sha256File(s.planPath);
  planRecord.modelSha256 = p.modelSha256;
  planRecord.modelPath = model;
  planRecord.strategy = p.strategy;  // "hap" or the baseline planned (hap plan --baseline)
  planRecord.clusterId = cluster;
  planRecord.predictedSeconds = p.estimate.iterationSeconds;
  for (const plan::PlanDevice& d : plan::worldDevices(p)) {
    planRecord.predictedMemoryBytes.push_back(d.memoryBytes);
    planRecord.predictedComputeSeconds.push_back(d.computeSeconds);
  }
  const int64_t planId = store.savePlan(planRecord);

  // Every option that shapes the run; a worker option not given is null (the worker's default).
  auto worker = [&](std::string_view name) -> ojson {
    if (auto v = optionValue(workerArgs, name)) return *v;
    return nullptr;
  };
  const std::vector<double>& shares = s.cpuShares;
  const bool throttled = std::any_of(shares.begin(), shares.end(), [](double v) { return v < 1; });
  ojson settings = {
      {"ranks", shares.size()},
      {"cpu_shares", shares},
      {"cpu_period_ms", s.cpuPeriodMs},
      {"steps", worker("--steps")},
      {"warmup", worker("--warmup")},
      {"seed", worker("--seed")},
      {"data", worker("--data")},
      {"data_path", worker("--data-path")},
      {"optimizer", worker("--optimizer")},
      {"lr", worker("--lr")},
      {"threads", worker("--threads")},
      {"bucket_mb", worker("--bucket-mb")},
      {"cuda", hasOption(workerArgs, "--cuda")},
      {"plan", fs::absolute(s.planPath).lexically_normal().string()},
      {"model", model},
      {"timeout_s", s.timeoutSeconds > 0 ? ojson(s.timeoutSeconds) : ojson(nullptr)},
      {"omp_num_threads", std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "1"},
      {"worker_args", workerArgs}};

  db::RunRecord run;
  run.planId = planId;
  run.label = s.label;
  run.settingsJson = settings.dump();
  run.ranks = static_cast<int>(shares.size());
  if (throttled) run.cpuShares = shares;
  // host, pid and start time: the store's defaults (this process, now), which
  // recoverAbandonedRuns judges by.
  return store.beginRun(run);
}

void finishRecordedRun(db::Store& store, int64_t run, const LaunchResult& result, double timeoutSeconds) {
  switch (result.outcome) {
    case LaunchResult::Outcome::Succeeded: store.finishRun(run, db::RunStatus::Succeeded); break;
    case LaunchResult::Outcome::WorkerFailed: {
      const WorkerExit& e = result.workers[static_cast<size_t>(result.failedWorker)];
      store.finishRun(run, db::RunStatus::Failed,
                      fmt::format("rank {}: {}: {}", result.failedWorker, describeExit(e),
                                  e.lastErrorLine.empty() ? "(it printed no error)" : e.lastErrorLine));
      break;
    }
    case LaunchResult::Outcome::TimedOut:
      store.finishRun(run, db::RunStatus::Failed, fmt::format("timed out after {:g} s (--timeout)", timeoutSeconds));
      break;
    case LaunchResult::Outcome::Interrupted:
      store.finishRun(run, db::RunStatus::Stopped, fmt::format("interrupted ({})", interruptName(result.signal)));
      break;
  }
}

}  // namespace hap::runtime
