#include "app/cli/tune_command.h"

#include <signal.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>

#include "app/cli/tune_loop.h"
#include "engine/base/error.h"

namespace hap::cli {
namespace {

namespace fs = std::filesystem;

struct TuneArgs {
  tune::TuneRequest request;
  bool local = false, verbose = false;
  double improvementPercent = 2;
  std::string workDir;
};

std::atomic<int> gTuneInterrupt{0};
extern "C" void onTuneInterrupt(int signal) {
  gTuneInterrupt.store(signal);
}

// SIGINT, SIGTERM and SIGHUP stop the running workers and the loop instead of killing hap.
class TuneInterruptGuard {
 public:
  TuneInterruptGuard() {
    gTuneInterrupt.store(0);
    struct sigaction action {};
    action.sa_handler = onTuneInterrupt;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~TuneInterruptGuard() {
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &previous_[i], nullptr);
  }
  TuneInterruptGuard(const TuneInterruptGuard&) = delete;
  TuneInterruptGuard& operator=(const TuneInterruptGuard&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> previous_{};
};

std::string ms(double seconds) {
  return fmt::format("{:.2f}", seconds * 1e3);
}

// Progress on stderr: what the loop does, each run as it is measured; workers' lines with
// --verbose.
class Progress : public tune::TuneListener {
 public:
  explicit Progress(bool verbose) : verbose_(verbose) {}
  void onMessage(std::string_view line) override { std::cerr << line << "\n"; }
  void onOutput(int rank, bool error, std::string_view line) override {
    if (!verbose_ && !error) return;
    if (!verbose_ && line.find("rror") == std::string_view::npos) return;
    std::cerr << (rank >= 0 ? fmt::format("[rank {}] ", rank) : std::string("[profile] ")) << line
              << "\n";
  }
  void onRunFinished(const tune::TuneRun& run) override {
    if (run.reused) return;
    std::cerr << fmt::format("hap tune: round {}: {} measured {} ± {} ms (predicted {} ms)\n",
                             run.round, run.strategy, ms(run.measuredSeconds),
                             ms(run.spreadSeconds), ms(run.predictedSeconds));
  }
  void onCalibrated(int round, const tune::TuneCalibration& c) override {
    std::cerr << fmt::format(
        "hap tune: calibrated after round {}: {} from {} runs of {} plans, step MAPE {:.1f}% -> "
        "{:.1f}%\n",
        round, c.saved, c.runs, c.plans, c.mapeBefore * 100, c.mapeAfter * 100);
  }

 private:
  bool verbose_;
};

void printRounds(const tune::TuneResult& r) {
  std::cout << fmt::format("{:>5}  {:<9} {:<28} {:>13} {:>22}  {}\n", "round", "plan",
                           "priced under", "predicted", "measured (mean ± sd)", "chosen");
  for (const tune::TuneRound& round : r.rounds) {
    for (const tune::TuneRun& run : round.runs) {
      const bool chosen = !run.reused && run.runId == r.chosen.runId;
      std::string measured =
          fmt::format("{} ± {} ms", ms(run.measuredSeconds), ms(run.spreadSeconds));
      std::string note = chosen ? "*" : "";
      if (run.reused)
        note = fmt::format("(= round {} {}{})", run.reused, run.sameAs,
                           run.runId == r.chosen.runId ? ", chosen" : "");
      std::cout << fmt::format("{:>5}  {:<9} {:<28} {:>10} ms {:>22}  {}\n", round.round,
                               run.strategy, run.profile, ms(run.predictedSeconds), measured, note);
    }
    std::cout << fmt::format(
        "       round {}: prediction error {:.1f}% (mean |predicted/measured - 1|), best "
        "measured so far {} ms\n",
        round.round, round.mape() * 100, ms(round.bestSeconds));
    if (!round.calibration.saved.empty())
      std::cout << fmt::format(
          "       calibrated: {} from {} runs of {} plans, step MAPE {:.1f}% -> {:.1f}%\n",
          round.calibration.saved, round.calibration.runs, round.calibration.plans,
          round.calibration.mapeBefore * 100, round.calibration.mapeAfter * 100);
  }
}

int runTune(TuneArgs& a) {
  if (a.local == !a.request.emitKind.empty())
    throw CLI::ValidationError(
        "hap tune", "give --local (run every plan on this machine) or --emit KIND --run-with CMD (run them on the "
                    "cluster through launch scripts)");
  tune::TuneRequest& request = a.request;
  request.improvement = a.improvementPercent / 100;
  if (request.output.empty()) request.output = "tuned-plan.json";
  request.workDir = !a.workDir.empty() ? a.workDir
                                       : (fs::path(request.output).parent_path() /
                                          (fs::path(request.output).stem().string() + "-rounds"))
                                             .string();
  std::error_code ec;
  fs::create_directories(request.workDir, ec);
  if (ec)
    throw Error(fmt::format("--work-dir {}: cannot create it ({})", request.workDir, ec.message()));
  std::error_code self;
  request.hap = fs::read_symlink("/proc/self/exe", self).string();
  request.interrupt = &gTuneInterrupt;

  Progress progress(a.verbose);
  tune::TuneResult r;
  {
    TuneInterruptGuard guard;
    r = tune::runTune(request, &progress);
  }
  if (!r.profiled.empty()) std::cout << fmt::format("Profiled first: {}.\n", r.profiled);
  printRounds(r);
  std::cout << fmt::format("Stopped: {}. Rounds' plans in {}; {} s in all.\n", r.stopReason,
                           request.workDir, fmt::format("{:.1f}", r.seconds));
  const tune::TuneRun& c = r.chosen;
  std::string versus = "no baseline ran";
  if (!r.bestBaseline.strategy.empty())
    versus = fmt::format("{:.2f}x vs best baseline ({} {} ms)",
                         r.bestBaseline.measuredSeconds / c.measuredSeconds,
                         r.bestBaseline.strategy, ms(r.bestBaseline.measuredSeconds));
  std::cout << fmt::format("chosen: {} (round {}), measured {} ms, {}\n", c.strategy, c.round,
                           ms(c.measuredSeconds), versus);
  // The runner-up: the fastest other program measured.
  const tune::TuneRun* next = nullptr;
  for (const tune::TuneRound& round : r.rounds)
    for (const tune::TuneRun& run : round.runs)
      if (!run.reused && run.runId != c.runId &&
          (!next || run.measuredSeconds < next->measuredSeconds))
        next = &run;
  if (next &&
      next->measuredSeconds - c.measuredSeconds < std::max(next->spreadSeconds, c.spreadSeconds))
    std::cout << fmt::format(
        "Note: {} (round {}) measured within the spread of the chosen plan ({} ± {} ms); measure "
        "longer (--steps) before relying on the ranking.\n",
        next->strategy, next->round, ms(next->measuredSeconds), ms(next->spreadSeconds));
  if (c.baseline())
    std::cout << fmt::format(
        "The baseline {} won: every plan of HAP's measured slower; {} is {}'s plan.\n", c.strategy,
        request.output, c.strategy);
  std::cout << fmt::format("Written to {}.\n", request.output);
  return 0;
}

}  // namespace

void addTuneCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<TuneArgs>();
  tune::TuneRequest& r = args->request;
  CLI::App* cmd = app.add_subcommand("tune",
                                     "Close the loop from measurement to plan, on this machine "
                                     "(--local) or on the cluster (--emit): profile the cluster's device types "
                                     "if the store has none (hap profile --quick), plan, run HAP's "
                                     "plan, DP-CP and the baseline predicted best for a "
                                     "few steps (recorded in the store), calibrate on every run "
                                     "recorded for the cluster, re-plan, and repeat "
                                     "until the best measured step stops improving; write the plan "
                                     "measured fastest (a baseline's if one won) and "
                                     "print the rounds.");
  cmd->add_option("MODEL", r.modelPath, "TorchScript file (.pt) whose forward returns the loss")
      ->required();
  cmd->add_option("--cluster,-c", r.clusterPath,
                  "Cluster inventory (YAML), e.g. resources/clusters/local-cpu-hetero-3.yaml")
      ->required()
      ->type_name("FILE");
  CLI::Option* local = cmd->add_flag("--local", args->local,
                                     "Run every plan on this machine, one hap-worker per device");
  CLI::Option* emit =
      cmd->add_option("--emit", r.emitKind,
                      "Run every plan on the cluster: write its launch folder as hap launch --emit KIND DIR "
                      "--record run.db does (torchrun, slurm or ssh), run --run-with on it and import rank 0's "
                      "record (needs a stored profile of every device type)")
          ->check(CLI::IsMember({"torchrun", "slurm", "ssh"}))
          ->type_name("KIND")
          ->excludes(local);
  cmd->add_option("--run-with", r.runWith,
                  "--emit: the sh command that runs a launch folder and returns when the run has ended, {dir} "
                  "standing for the folder, e.g. 'sh {dir}/launch-ssh.sh' or 'sbatch --wait {dir}/hap.sbatch'; "
                  "it must leave rank 0's record at {dir}/run.db")
      ->type_name("CMD")
      ->needs(emit);
  cmd->add_option("--master-port", r.masterPort, "--emit: rank 0's rendezvous port written into the scripts")
      ->check(CLI::Range(1, 65535))
      ->needs(emit);
  cmd->add_option("--cpu-share", r.cpuShares,
                  "As hap launch --cpu-share: each rank's share of one CPU, e.g. 1,0.5,0.25")
      ->type_name("LIST");
  cmd->add_option("--slowdown", r.slowdowns,
                  "As hap launch --slowdown: each rank's computation stretched, e.g. 1,2,4")
      ->type_name("LIST");
  cmd->add_option("--cpu-period", r.cpuPeriodMs, "As hap launch --cpu-period")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str()
      ->type_name("MS");
  cmd->add_option("--steps", r.steps, "Measured steps per run (after the warm-up)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--warmup", r.warmup, "Warm-up steps per run, left out of the measurement")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--rounds", r.rounds, "At most this many rounds of plan, run, calibrate")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--improvement", args->improvementPercent,
                  "Stop when a round improves the best measured step by this percentage or less")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->type_name("PCT");
  cmd->add_option(
         "--input,-i", r.inputs,
         "Shape and dtype of a forward argument, NAME=DIMxDIMx...[:DTYPE[:LOW..HIGH]]; repeatable")
      ->type_name("SPEC");
  cmd->add_option(
         "--db", r.storePath,
         "Profile store that holds the profile and records the runs (default: $HAP_DB, else "
         "~/.local/share/hap/profiles.db)")
      ->type_name("FILE");
  cmd->add_option("--profile", r.profileName,
                  "The profile tuned (default: the cluster's 'profile:', else the cluster's name); "
                  "every calibration "
                  "is saved as its next version")
      ->type_name("NAME");
  cmd->add_option("--output,-o", r.output,
                  "Write the plan measured fastest here (default tuned-plan.json)")
      ->type_name("FILE");
  cmd->add_option("--work-dir", args->workDir,
                  "Where every round's plans are written (default: OUTPUT's name without .json, "
                  "then -rounds)")
      ->type_name("DIR");
  cmd->add_option("--worker", r.worker,
                  "The worker executable (default: hap-worker of this build, else on PATH)")
      ->type_name("PATH");
  cmd->add_option("--run-timeout", r.runTimeoutSeconds,
                  "Stop a run and fail after this many seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->type_name("S");
  cmd->add_flag("--verbose,-v", args->verbose, "Print every worker's and profiler's output");
  cmd->add_option("WORKER-ARGS", r.workerArgs,
                  "Arguments for every worker, after -- (e.g. -- --data tokens ...)");
  cmd->callback([args, &exitCode] { exitCode = runTune(*args); });
}

}  // namespace hap::cli
