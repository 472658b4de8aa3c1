#include "app/cli/calibrate_command.h"

#include <fmt/format.h>

#include <iostream>

#include "db/store_calibration.h"

namespace hap::cli {
namespace {

struct CalibrateArgs {
  std::string db, name;
  std::vector<int64_t> runs, holdOut;
  std::string split = "half";
  bool dryRun = false;
};

std::string pct(double x) { return fmt::format("{:.1f}%", x * 100); }

void printSkipped(const std::vector<db::SkippedRun>& skipped) {
  for (const db::SkippedRun& s : skipped) std::cout << fmt::format("run {}: skipped ({})\n", s.run, s.why);
}

void printAccuracy(const char* what, const db::AccuracyChange& change) {
  const cost::Accuracy &b = change.before, &a = change.after;
  if (a.runs == 0) {
    std::cout << fmt::format("{}: no runs\n", what);
    return;
  }
  std::cout << fmt::format("{} ({} runs):\n", what, a.runs);
  std::cout << fmt::format("  step time     MAPE {:>7} -> {:>7}   Pearson {:.3f} -> {:.3f}\n", pct(b.stepMape),
                           pct(a.stepMape), b.stepPearson, a.stepPearson);
  std::cout << fmt::format("  peak memory   MAPE {:>7} -> {:>7}   Pearson {:.3f} -> {:.3f}\n", pct(b.memoryMape),
                           pct(a.memoryMape), b.memoryPearson, a.memoryPearson);
  if (a.rankingPairs)
    std::cout << fmt::format("  plan ranking  {}/{} pairs right -> {}/{}\n", b.rankingRight, b.rankingPairs,
                             a.rankingRight, a.rankingPairs);
}

// The calibration itself is db::calibrateStore (shared with the app); this prints its result.
int runCalibrate(const CalibrateArgs& a) {
  db::CalibrationRequest request;
  request.storePath = a.db;
  request.name = a.name;
  request.runs = a.runs;
  request.holdOut = a.holdOut;
  request.split = a.split == "none" ? db::CalibrationRequest::Split::None : db::CalibrationRequest::Split::Half;
  request.dryRun = a.dryRun;
  db::CalibrationResult r;
  try {
    r = db::calibrateStore(request);
  } catch (const db::CalibrationError& e) {
    printSkipped(e.skipped());
    throw;
  }
  printSkipped(r.skipped);

  std::cout << fmt::format("{:>5} {:>5} {:<40} {:<8} {:>11} {:>11} {:>8} {:>11} {:>8}\n", "run", "plan", "what", "set",
                           "measured", "before", "error", "after", "error");
  for (const db::CalibratedRun& c : r.runs) {
    const cost::RunObservation& o = c.observation;
    std::cout << fmt::format("{:>5} {:>5} {:<40} {:<8} {:>8.2f} ms {:>8.2f} ms {:>8} {:>8.2f} ms {:>8}\n", o.run, o.plan,
                             o.label.substr(0, 40), o.heldOut ? "held-out" : "fit", o.measuredStepSeconds * 1e3,
                             c.beforeSeconds * 1e3, pct(c.beforeError()), c.afterSeconds * 1e3, pct(c.afterError()));
  }
  printAccuracy("Fit runs", r.fit);
  printAccuracy("Held-out runs", r.heldOut);

  std::cout << "Parameters (per device type):\n";
  for (const auto& [type, t] : r.calibration.types)
    std::cout << fmt::format("  {:<20} compute x {:.3f}, collectives x {:.3f}, memory {:.1f} MiB + {:.3f} x model\n", type,
                             t.computeScale, t.collectiveSlowdown, t.baseMemoryBytes / (1 << 20), t.memoryScale);
  std::cout << fmt::format("  gradient all-reduces: {:.0f}% of their time exposed (the rest behind backward)\n",
                           r.calibration.gradientExposure * 100);
  if (r.saved.empty()) {
    std::cout << "Dry run: nothing saved.\n";
    return 0;
  }
  std::cout << fmt::format("profile {} v{} saved to {}; plan with `profile: {}` (or {}@{}) in the cluster file\n",
                           r.profile.name, r.profile.version, r.storePath, r.profile.name, r.profile.name,
                           r.profile.version);
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
