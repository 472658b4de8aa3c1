#include "app/cli/calibrate_command.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "db/store.h"
#include "engine/base/error.h"
#include "engine/cost/calibration.h"
#include "engine/cost/profile.h"
#include "engine/plan/plan_json.h"

namespace hap::cli {
namespace {

struct CalibrateArgs {
  std::string db, name;
  std::vector<int64_t> runs, holdOut;
  std::string split = "half";
  bool dryRun = false;
};

// A run ready for the fit: its observation, the profile its plan was priced under, and what
// groups competing plans (model and cluster).
struct Prepared {
  cost::RunObservation obs;
  std::string baseProfile;  // "NAME@N", or "" for the inventory alone
  std::string rankingKey;
  std::string strategy;
};

std::string fileName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::optional<Prepared> prepare(const db::Store& store, const db::RunRecord& run, std::string* why) {
  if (run.status != db::RunStatus::Succeeded) {
    *why = fmt::format("status {}", db::runStatusName(run.status));
    return std::nullopt;
  }
  const std::optional<db::PlanRecord> record = store.plan(run.planId);
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
  // Measured: per step the slowest rank's wall time (the step ends when every rank is done),
  // averaged over the measured steps; per rank its peak memory.
  std::map<int64_t, double> stepSeconds;
  std::map<int, double> peak;
  for (const db::StepRecord& s : store.steps(run.id)) {
    peak[s.rank] = std::max(peak[s.rank], s.peakMemoryBytes);
    if (s.warmup) continue;
    stepSeconds[s.step] = std::max(stepSeconds[s.step], s.seconds);
  }
  if (stepSeconds.empty()) {
    *why = "no measured steps recorded";
    return std::nullopt;
  }
  for (const auto& [step, seconds] : stepSeconds) o.measuredStepSeconds += seconds;
  o.measuredSteps = static_cast<int>(stepSeconds.size());
  o.measuredStepSeconds /= o.measuredSteps;
  const std::vector<plan::PlanDevice> world = plan::worldDevices(p);
  for (const plan::PlanDevice& d : world) {
    const auto it = peak.find(d.rank);
    if (it == peak.end()) continue;
    o.memory.push_back({d.type, d.memoryBytes, it->second});
  }
  return out;
}

std::string pct(double x) { return fmt::format("{:.1f}%", x * 100); }

void printAccuracy(const char* what, const std::vector<cost::RunObservation>& runs, const std::vector<std::string>& keys,
                   const cost::Calibration& before, const cost::Calibration& after) {
  if (runs.empty()) {
    std::cout << fmt::format("{}: no runs\n", what);
    return;
  }
  const cost::Accuracy b = cost::accuracy(runs, before, keys), a = cost::accuracy(runs, after, keys);
  std::cout << fmt::format("{} ({} runs):\n", what, a.runs);
  std::cout << fmt::format("  step time     MAPE {:>7} -> {:>7}   Pearson {:.3f} -> {:.3f}\n", pct(b.stepMape),
                           pct(a.stepMape), b.stepPearson, a.stepPearson);
  std::cout << fmt::format("  peak memory   MAPE {:>7} -> {:>7}   Pearson {:.3f} -> {:.3f}\n", pct(b.memoryMape),
                           pct(a.memoryMape), b.memoryPearson, a.memoryPearson);
  if (a.rankingPairs)
    std::cout << fmt::format("  plan ranking  {}/{} pairs right -> {}/{}\n", b.rankingRight, b.rankingPairs,
                             a.rankingRight, a.rankingPairs);
}

int runCalibrate(const CalibrateArgs& a) {
  const std::string path = a.db.empty() ? db::defaultPath() : a.db;
  db::Store store(path);
  store.recoverAbandonedRuns();

  // The runs: those asked for, else every succeeded run of the store.
  std::vector<db::RunRecord> runs;
  if (a.runs.empty()) runs = store.runs();
  else
    for (int64_t id : a.runs) {
      std::optional<db::RunRecord> r = store.run(id);
      if (!r) throw db::StoreError(fmt::format("{}: no run {}; `hap runs --db {}` lists them", path, id, path));
      runs.push_back(*r);
    }
  std::sort(runs.begin(), runs.end(), [](const db::RunRecord& x, const db::RunRecord& y) { return x.id < y.id; });
  std::vector<Prepared> prepared;
  for (const db::RunRecord& r : runs) {
    std::string why;
    if (std::optional<Prepared> p = prepare(store, r, &why)) prepared.push_back(std::move(*p));
    else if (!a.runs.empty() || r.status == db::RunStatus::Succeeded)
      std::cout << fmt::format("run {}: skipped ({})\n", r.id, why);
  }
  if (prepared.empty())
    throw db::StoreError(fmt::format("{}: no succeeded run with measured steps to calibrate on; record runs with "
                                     "`hap launch --local ... --db {}`",
                                     path, path));

  // Every run must have been priced under one base (a profile version, or the inventory alone):
  // the fit adjusts that base's figures.
  const std::string base = prepared.front().baseProfile;
  for (const Prepared& p : prepared)
    if (p.baseProfile != base)
      throw db::StoreError(fmt::format(
          "runs {} and {} were planned under different profiles ('{}' and '{}'); calibrate one base at a time "
          "with --runs, or re-plan them under one profile",
          prepared.front().obs.run, p.obs.run, base.empty() ? "none" : base, p.baseProfile.empty() ? "none" : p.baseProfile));
  cost::Profile profile;
  if (!base.empty()) {
    const size_t at = base.rfind('@');
    std::optional<cost::Profile> loaded =
        store.loadProfile(base.substr(0, at), at == std::string::npos ? 0 : std::stoi(base.substr(at + 1)));
    if (!loaded) throw db::StoreError(fmt::format("{}: the runs' plans were priced under profile {}, which the store no "
                                                  "longer holds", path, base));
    profile = std::move(*loaded);
  }
  profile.name = !a.name.empty() ? a.name : profile.name;
  if (profile.name.empty())
    throw Error("the runs were planned without a profile: name the calibrated one with --name NAME (then write "
                "`profile: NAME` in the cluster file)");

  // Held out: the plans named, or every second plan by id (--split half), never the only plan.
  std::set<int64_t> plans;
  for (const Prepared& p : prepared) plans.insert(p.obs.plan);
  std::set<int64_t> heldOut(a.holdOut.begin(), a.holdOut.end());
  if (a.holdOut.empty() && a.split == "half" && plans.size() >= 2) {
    int i = 0;
    for (int64_t plan : plans)
      if (i++ % 2 == 1) heldOut.insert(plan);
  }
  std::vector<cost::RunObservation> fitted, held;
  std::vector<std::string> fittedKeys, heldKeys;
  std::vector<cost::RunObservation> all;
  for (Prepared& p : prepared) {
    p.obs.heldOut = heldOut.count(p.obs.plan) > 0;
    all.push_back(p.obs);
    (p.obs.heldOut ? held : fitted).push_back(p.obs);
    (p.obs.heldOut ? heldKeys : fittedKeys).push_back(p.rankingKey);
  }
  if (fitted.empty()) throw Error("every run is held out: hold out fewer plans (--hold-out) to have runs to fit");

  const cost::Calibration before;
  const cost::Calibration after = cost::fit(all);

  std::cout << fmt::format("{:>5} {:>5} {:<40} {:<8} {:>11} {:>11} {:>8} {:>11} {:>8}\n", "run", "plan", "what", "set",
                           "measured", "before", "error", "after", "error");
  for (const cost::RunObservation& r : all) {
    const double b = cost::predictStep(r, before), f = cost::predictStep(r, after);
    std::cout << fmt::format("{:>5} {:>5} {:<40} {:<8} {:>8.2f} ms {:>8.2f} ms {:>8} {:>8.2f} ms {:>8}\n", r.run, r.plan,
                             r.label.substr(0, 40), r.heldOut ? "held-out" : "fit", r.measuredStepSeconds * 1e3, b * 1e3,
                             pct(b / r.measuredStepSeconds - 1), f * 1e3, pct(f / r.measuredStepSeconds - 1));
  }
  printAccuracy("Fit runs", fitted, fittedKeys, before, after);
  printAccuracy("Held-out runs", held, heldKeys, before, after);

  std::cout << "Parameters (per device type):\n";
  for (const auto& [type, t] : after.types) {
    std::cout << fmt::format("  {:<20} compute x {:.3f}, collectives x {:.3f}, memory {:.1f} MiB + {:.3f} x model\n", type,
                             t.computeScale, t.collectiveSlowdown, t.baseMemoryBytes / (1 << 20), t.memoryScale);
    cost::DeviceProfile* d = nullptr;
    for (cost::DeviceProfile& x : profile.devices)
      if (x.deviceType == type) d = &x;
    if (!d) d = &profile.devices.emplace_back(cost::DeviceProfile{.deviceType = type});
    // Compose with what the base already held: the fit is relative to the base's predictions.
    d->baseMemoryBytes = t.baseMemoryBytes + t.memoryScale * d->baseMemoryBytes;
    d->memoryScale *= t.memoryScale;
    d->computeScale *= t.computeScale;
    d->collectiveSlowdown *= t.collectiveSlowdown;
  }
  std::cout << fmt::format("  gradient all-reduces: {:.0f}% of their time exposed (the rest behind backward)\n",
                           after.gradientExposure * 100);
  profile.gradientExposure *= after.gradientExposure;
  if (a.dryRun) {
    std::cout << "Dry run: nothing saved.\n";
    return 0;
  }
  profile.version = 0;
  profile.createdAt.clear();  // the store stamps it
  profile.note = fmt::format("hap calibrate: {} runs of {} plans fitted, {} held out, base {}", fitted.size(),
                             plans.size() - heldOut.size(), held.size(), base.empty() ? "inventory" : base);
  const int version = store.saveProfile(profile);
  std::cout << fmt::format("profile {} v{} saved to {}; plan with `profile: {}` (or {}@{}) in the cluster file\n",
                           profile.name, version, path, profile.name, profile.name, version);
  return 0;
}

}  // namespace

void addCalibrateCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Fit the cost model to the runs recorded in the profile store (per device type: compute scale, collective "
      "slowdown, runtime memory), save the fit as a new profile version, and report predicted against measured step "
      "time and peak memory before and after, for fitted and held-out runs.");
  cmd->add_option("--db", args->db, "Profile store (default: $HAP_DB, else ~/.local/share/hap/profiles.db)")
      ->type_name("FILE");
  cmd->add_option("--name", args->name,
                  "Name of the calibrated profile (default: the profile the runs were planned under)");
  cmd->add_option("--runs", args->runs, "Only these runs (default: every succeeded run)")->delimiter(',');
  cmd->add_option("--hold-out", args->holdOut, "Plans whose runs are only reported, not fitted")->delimiter(',');
  cmd->add_option("--split", args->split,
                  "Without --hold-out: 'half' holds out every second plan (by id), 'none' fits every run")
      ->check(CLI::IsMember({"half", "none"}))
      ->capture_default_str();
  cmd->add_flag("--dry-run", args->dryRun, "Report the fit without saving it");
  cmd->callback([args, &exitCode] { exitCode = runCalibrate(*args); });
}

}  // namespace hap::cli
