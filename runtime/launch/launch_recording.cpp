#include "runtime/launch/launch_recording.h"

#include <signal.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/base/error.h"
#include "engine/cost/cluster_yaml.h"
#include "engine/plan/planner.h"

namespace hap::runtime {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// A worker option as recorded: the text workerArguments passes for it, null for the worker's
// default (the option is not passed).
ojson recorded(bool byDefault, const std::string& text) { return byDefault ? ojson(nullptr) : ojson(text); }

}  // namespace

int64_t beginRecordedRun(db::Store& store, const plan::Plan& p, const LaunchSettings& s) {
  store.recoverAbandonedRuns();
  const int64_t cluster = store.saveCluster(p.cluster.name, cost::formatClusterYaml(p.cluster));
  const WorkerOptions& o = s.options;
  const WorkerOptions byDefault;  // the worker's defaults
  const std::string& planPath = o.planPath;
  const std::string model = !o.modelPath.empty() ? o.modelPath : p.modelPath;

  db::PlanRecord planRecord;
  std::ifstream in(planPath, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw Error(fmt::format("{}: cannot read the plan file", planPath));
  planRecord.json = text.str();
  planRecord.sha256 = plan::sha256File(planPath);
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

  // Every option that shapes the run; a worker option at its default is null.
  const std::vector<double>& shares = s.cpuShares;
  const bool throttled = std::any_of(shares.begin(), shares.end(), [](double v) { return v < 1; });
  const auto integer = [](auto v) { return fmt::format("{}", v); };
  ojson settings = {
      {"ranks", shares.size()},
      {"cpu_shares", shares},
      {"cpu_period_ms", s.cpuPeriodMs},
      {"slowdowns", s.slowdowns.empty() ? std::vector<double>(shares.size(), 1.0) : s.slowdowns},
      {"steps", recorded(o.steps == byDefault.steps, integer(o.steps))},
      {"warmup", recorded(o.warmup == byDefault.warmup, integer(o.warmup))},
      {"seed", recorded(o.seed == byDefault.seed, integer(o.seed))},
      {"data", recorded(o.data.kind == byDefault.data.kind, o.data.kind)},
      {"data_path", recorded(o.data.path == byDefault.data.path, o.data.path)},
      {"optimizer", recorded(o.optimizer.kind == byDefault.optimizer.kind,
                             std::string(optimizerKindName(o.optimizer.kind)))},
      {"lr", recorded(o.optimizer.lr == byDefault.optimizer.lr, workerNumber(o.optimizer.lr))},
      {"threads", recorded(o.threads == byDefault.threads, integer(o.threads))},
      {"bucket_mb", recorded(o.bucketBytes == byDefault.bucketBytes,
                             workerNumber(static_cast<double>(o.bucketBytes) / (1 << 20)))},
      {"cuda", o.cuda},
      {"plan", fs::absolute(planPath).lexically_normal().string()},
      {"model", model},
      {"timeout_s", s.timeoutSeconds > 0 ? ojson(s.timeoutSeconds) : ojson(nullptr)},
      {"omp_num_threads", std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS") : "1"},
      {"worker_args", workerArguments(o)}};

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
