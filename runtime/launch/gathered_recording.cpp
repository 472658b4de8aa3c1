#include "runtime/launch/gathered_recording.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

using json = nlohmann::json;

}  // namespace

std::string encodeRankRecords(const RankRecords& r) {
  json steps = json::array();
  for (const db::StepRecord& s : r.steps)
    steps.push_back({s.step, s.warmup, s.seconds, s.computeSeconds, s.communicationSeconds, s.loss,
                     s.peakMemoryBytes, s.cpuSeconds});
  json stages = json::array();
  for (const db::StageRecord& s : r.stages) stages.push_back({s.stage, s.computeSeconds, s.communicationSeconds});
  return json{{"rank", r.rank}, {"slowdown", r.slowdown}, {"steps", steps}, {"stages", stages}}.dump();
}

RankRecords decodeRankRecords(const std::string& text, int fromRank) {
  try {
    const json j = json::parse(text);
    RankRecords r;
    r.rank = j.at("rank").get<int>();
    if (r.rank != fromRank)
      throw RuntimeError(fmt::format("rank {} sent the records of rank {}", fromRank, r.rank));
    r.slowdown = j.at("slowdown").get<double>();
    for (const json& s : j.at("steps")) {
      db::StepRecord step;
      step.rank = r.rank;
      step.step = s.at(0).get<int64_t>();
      step.warmup = s.at(1).get<bool>();
      step.seconds = s.at(2).get<double>();
      step.computeSeconds = s.at(3).get<double>();
      step.communicationSeconds = s.at(4).get<double>();
      step.loss = s.at(5).get<double>();
      step.peakMemoryBytes = s.at(6).get<double>();
      step.cpuSeconds = s.at(7).get<double>();
      r.steps.push_back(step);
    }
    for (const json& s : j.at("stages")) {
      db::StageRecord stage;
      stage.rank = r.rank;
      stage.stage = s.at(0).get<int>();
      stage.computeSeconds = s.at(1).get<double>();
      stage.communicationSeconds = s.at(2).get<double>();
      r.stages.push_back(stage);
    }
    return r;
  } catch (const json::exception& e) {
    throw RuntimeError(fmt::format("the records gathered from rank {} cannot be read ({}); the ranks run "
                                   "different hap-worker builds?",
                                   fromRank, e.what()));
  }
}

int64_t writeGatheredRun(const std::string& path, const plan::Plan& plan, const LaunchSettings& settings,
                         const std::vector<RankRecords>& ranks) {
  db::Store store(path);
  const int64_t run = beginRecordedRun(store, plan, settings);
  for (const RankRecords& r : ranks) store.recordSteps(run, r.steps);
  for (const RankRecords& r : ranks) store.recordStages(run, r.stages);
  store.finishRun(run, db::RunStatus::Succeeded);
  return run;
}

}  // namespace hap::runtime
