#include "db/store_calibration.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "engine/plan/plan_json.h"

namespace hap::db {
namespace {

std::string fileName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Measured: per step the slowest rank's wall time (the step ends when every rank is done),
// averaged over the measured steps; per rank its peak memory.
struct Measured {
  double stepSeconds = 0;
  int steps = 0;
  std::map<int, double> peak;  // by rank
};

Measured measure(const Store& store, int64_t run) {
  std::map<int64_t, double> stepSeconds;
  Measured m;
  for (const StepRecord& s : store.steps(run)) {
    m.peak[s.rank] = std::max(m.peak[s.rank], s.peakMemoryBytes);
    if (s.warmup) continue;
    stepSeconds[s.step] = std::max(stepSeconds[s.step], s.seconds);
  }
  for (const auto& [step, seconds] : stepSeconds) m.stepSeconds += seconds;
  m.steps = static_cast<int>(stepSeconds.size());
  if (m.steps > 0) m.stepSeconds /= m.steps;
  return m;
}

// A run ready for the fit: its observation, the profile its plan was priced under, and what
// groups competing plans (model and cluster).
struct Prepared {
  cost::RunObservation obs;
  std::string baseProfile;  // "NAME@N", or "" for the inventory alone
  std::string rankingKey;
  std::string strategy;
};

std::optional<Prepared> prepare(const Store& store, const RunRecord& run, std::string* why) {
  if (run.status != RunStatus::Succeeded) {
    *why = fmt::format("status {}", runStatusName(run.status));
    return std::nullopt;
  }
  const std::optional<PlanRecord> record = store.plan(run.planId);
  if (!record) {
    *why = fmt::format("its plan {} is not in the store", run.planId);
    return std::nullopt;
  }
  const plan::Plan p = plan::planFromJson(nlohmann::json::parse(record->json),
                                          fmt::format("{} (plan {})", store.path(), record->id));
  Prepared out;
  out.baseProfile = p.cluster.profile;
  out.strategy = record->strategy;
  out.rankingKey = fmt::format("{}|{}|{}", record->modelSha256, record->clusterId, run.ranks);
  cost::RunObservation& o = out.obs;
  o.run = run.id;
  o.plan = record->id;
  o.label = fmt::format("{} {} on {}", fileName(record->modelPath), record->strategy, p.cluster.name);
  // Device group → type, and each type's slowest group per stage.
  std::map<int, std::string> typeOfGroup;
  for (const plan::PlanDevice& d : p.devices) typeOfGroup[d.group] = d.type;
  for (const plan::Stage& st : p.stages) {
    cost::StageObservation s;
    s.communicationSeconds = st.communicationSeconds;
    // The gradient all-reduces of replicated parameters run in backward (their dual).
    if (st.backward)
      for (int i = st.firstStep; i < st.endStep; ++i) {
        const plan::PlanStep& step = p.steps[static_cast<size_t>(i)];
        if (step.kind == plan::PlanStep::Kind::Convert && step.instruction == "replicate-parameter")
          s.gradientSeconds += step.backwardCommunication;
      }
    for (size_t g = 0; g < st.groupComputation.size(); ++g) {
      double& slowest = s.computeByType[typeOfGroup[static_cast<int>(g)]];
      slowest = std::max(slowest, st.groupComputation[g]);
    }
    o.stages.push_back(std::move(s));
  }
  o.extraSeconds = p.replication.allReduceSeconds;
  o.exposedGradientSeconds = p.exposedGradientSeconds;
  const Measured m = measure(store, run.id);
  if (m.steps == 0) {
    *why = "no measured steps recorded";
    return std::nullopt;
  }
  o.measuredStepSeconds = m.stepSeconds;
  o.measuredSteps = m.steps;
  for (const plan::PlanDevice& d : plan::worldDevices(p)) {
    const auto it = m.peak.find(d.rank);
    if (it == m.peak.end()) continue;
    o.memory.push_back({d.type, d.memoryBytes, it->second});
  }
  return out;
}

AccuracyChange accuracyChange(const std::vector<cost::RunObservation>& runs, const std::vector<std::string>& keys,
                              const cost::Calibration& before, const cost::Calibration& after) {
  if (runs.empty()) return {};
  return {cost::accuracy(runs, before, keys), cost::accuracy(runs, after, keys)};
}

}  // namespace

CalibrationResult calibrateStore(const CalibrationRequest& a) {
  CalibrationResult result;
  const std::string path = a.storePath.empty() ? defaultPath() : a.storePath;
  result.storePath = path;
  Store store(path);
  store.recoverAbandonedRuns();

  // The runs: those asked for, else every succeeded run of the store.
  std::vector<RunRecord> runs;
  if (a.runs.empty()) runs = store.runs();
  else
    for (int64_t id : a.runs) {
      std::optional<RunRecord> r = store.run(id);
      if (!r) throw CalibrationError(fmt::format("{}: no run {}; `hap runs --db {}` lists them", path, id, path));
      runs.push_back(*r);
    }
  std::sort(runs.begin(), runs.end(), [](const RunRecord& x, const RunRecord& y) { return x.id < y.id; });
  std::vector<Prepared> prepared;
  for (const RunRecord& r : runs) {
    std::string why;
    if (std::optional<Prepared> p = prepare(store, r, &why)) prepared.push_back(std::move(*p));
    else if (!a.runs.empty() || r.status == RunStatus::Succeeded)
      result.skipped.push_back({r.id, why});
  }
  const auto fail = [&](const std::string& message) { return CalibrationError(message, result.skipped); };
  if (prepared.empty())
    throw fail(fmt::format("{}: no succeeded run with measured steps to calibrate on; record runs with "
                           "`hap launch --local ... --db {}`",
                           path, path));

  // Every run must have been priced under one base (a profile version, or the inventory alone):
  // the fit adjusts that base's figures.
  const std::string base = prepared.front().baseProfile;
  for (const Prepared& p : prepared)
    if (p.baseProfile != base)
      throw fail(fmt::format(
          "runs {} and {} were planned under different profiles ('{}' and '{}'); calibrate one base at a time "
          "with --runs, or re-plan them under one profile",
          prepared.front().obs.run, p.obs.run, base.empty() ? "none" : base,
          p.baseProfile.empty() ? "none" : p.baseProfile));
  result.base = base;
  cost::Profile profile;
  if (!base.empty()) {
    const size_t at = base.rfind('@');
    std::optional<cost::Profile> loaded =
        store.loadProfile(base.substr(0, at), at == std::string::npos ? 0 : std::stoi(base.substr(at + 1)));
    if (!loaded)
      throw fail(fmt::format("{}: the runs' plans were priced under profile {}, which the store no longer holds", path,
                             base));
    profile = std::move(*loaded);
  }
  profile.name = !a.name.empty() ? a.name : profile.name;
  if (profile.name.empty())
    throw fail("the runs were planned without a profile: name the calibrated one with --name NAME (then write "
               "`profile: NAME` in the cluster file)");

  // Held out: the plans named, or every second plan by id (split half), never the only plan.
  std::set<int64_t> plans;
  for (const Prepared& p : prepared) plans.insert(p.obs.plan);
  std::set<int64_t> heldOut(a.holdOut.begin(), a.holdOut.end());
  if (a.holdOut.empty() && a.split == CalibrationRequest::Split::Half && plans.size() >= 2) {
    int i = 0;
    for (int64_t plan : plans)
      if (i++ % 2 == 1) heldOut.insert(plan);
  }
  std::vector<cost::RunObservation> fitted, held, all;
  std::vector<std::string> fittedKeys, heldKeys;
  for (Prepared& p : prepared) {
    p.obs.heldOut = heldOut.count(p.obs.plan) > 0;
    all.push_back(p.obs);
    (p.obs.heldOut ? held : fitted).push_back(p.obs);
    (p.obs.heldOut ? heldKeys : fittedKeys).push_back(p.rankingKey);
  }
  if (fitted.empty()) throw fail("every run is held out: hold out fewer plans (--hold-out) to have runs to fit");
  result.plans = static_cast<int>(plans.size());
  result.heldOutPlans = static_cast<int>(heldOut.size());

  const cost::Calibration before;
  const cost::Calibration after = cost::fit(all);
  result.calibration = after;
  for (const Prepared& p : prepared) {
    CalibratedRun r;
    r.observation = p.obs;
    r.strategy = p.strategy;
    r.rankingKey = p.rankingKey;
    r.beforeSeconds = cost::predictStep(p.obs, before);
    r.afterSeconds = cost::predictStep(p.obs, after);
    if (!p.obs.memory.empty()) {
      r.memoryErrorBefore = cost::accuracy({p.obs}, before).memoryMape;
      r.memoryErrorAfter = cost::accuracy({p.obs}, after).memoryMape;
    }
    result.runs.push_back(std::move(r));
  }
  result.fit = accuracyChange(fitted, fittedKeys, before, after);
  result.heldOut = accuracyChange(held, heldKeys, before, after);

  // Compose with what the base already held: the fit is relative to the base's predictions.
  cost::compose(profile, after);
  profile.version = 0;
  profile.createdAt.clear();  // the store stamps it
  profile.note = fmt::format("{}: {} runs of {} plans fitted, {} held out, base {}", a.origin, fitted.size(),
                             plans.size() - heldOut.size(), held.size(), base.empty() ? "inventory" : base);
  if (!a.dryRun) {
    profile.version = store.saveProfile(profile);
    if (std::optional<cost::Profile> stored = store.loadProfile(profile.name, profile.version))
      profile.createdAt = stored->createdAt;
    result.saved = fmt::format("{}@{}", profile.name, profile.version);
  }
  result.profile = std::move(profile);
  return result;
}

std::vector<CalibrationCandidate> calibrationCandidates(const std::string& storePath) {
  const std::string path = storePath.empty() ? defaultPath() : storePath;
  Store store(path, Store::Mode::ReadOnly);
  std::vector<RunRecord> runs = store.runs();
  std::sort(runs.begin(), runs.end(), [](const RunRecord& x, const RunRecord& y) { return x.id < y.id; });
  std::map<int64_t, std::optional<plan::Plan>> plans;  // runs share plans: each parsed once
  std::vector<CalibrationCandidate> out;
  for (const RunRecord& r : runs) {
    CalibrationCandidate c;
    c.run = r;
    const std::optional<PlanRecord> record = r.planId ? store.plan(r.planId) : std::nullopt;
    if (record) {
      c.modelPath = record->modelPath;
      c.strategy = record->strategy;
      auto it = plans.find(record->id);
      if (it == plans.end()) {
        std::optional<plan::Plan> parsed;
        try {
          parsed = plan::planFromJson(nlohmann::json::parse(record->json),
                                      fmt::format("{} (plan {})", path, record->id));
        } catch (const std::exception& e) {
          c.why = fmt::format("its plan {} does not read: {}", record->id, e.what());
        }
        it = plans.emplace(record->id, std::move(parsed)).first;
      }
      if (it->second) {
        c.base = it->second->cluster.profile;
        c.clusterName = it->second->cluster.name;
      } else if (c.why.empty()) {
        c.why = fmt::format("its plan {} does not read", record->id);
      }
    }
    const Measured m = measure(store, r.id);
    c.measuredSteps = m.steps;
    c.measuredStepSeconds = m.stepSeconds;
    // The same reasons, in the same order, as calibrateStore's.
    if (r.status != RunStatus::Succeeded) c.why = fmt::format("status {}", runStatusName(r.status));
    else if (!record) c.why = fmt::format("its plan {} is not in the store", r.planId);
    else if (c.why.empty() && m.steps == 0) c.why = "no measured steps recorded";
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace hap::db
