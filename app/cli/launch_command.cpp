#include "app/cli/launch_command.h"

#include <signal.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "engine/base/error.h"
#include "engine/pipeline/pipeline_json.h"
#include "engine/plan/open_plan.h"
#include "engine/plan/plan_json.h"
#include "runtime/launch/launch_scripts.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/local_launch.h"
#include "runtime/launch/worker_options.h"

namespace hap::cli {
namespace {

namespace fs = std::filesystem;

struct LaunchArgs {
  std::string plan, worker, cpuShare, slowdown;
  std::string db, label;  // --local --db: record the run in this profile store
  std::vector<std::string> emit;  // KIND DIR
  std::string record;             // --emit: rank 0 records the run into DIR/RECORD on its host
  std::vector<std::string> workerArgs;
  bool local = false, force = false;
  int steps = 0, workers = 0, masterPort = 29500;
  double timeout = 0;
  int cpuPeriodMs = 20;
};

// Set by the signal handler while workers run; read by the supervision loop.
std::atomic<int> gInterrupt{0};

extern "C" void onInterrupt(int signal) { gInterrupt.store(signal); }

// Catches SIGINT, SIGTERM and SIGHUP while it lives, so that they stop the workers instead of
// killing the launcher (without SA_RESTART: they wake the supervision loop's poll at once).
class InterruptGuard {
 public:
  InterruptGuard() {
    gInterrupt.store(0);
    struct sigaction action {};
    action.sa_handler = onInterrupt;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~InterruptGuard() {
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &previous_[i], nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> previous_{};
};

// Every worker's options: the arguments after -- read through hap-worker's own command line
// (runtime::parseWorkerArguments), then --steps N.
runtime::WorkerOptions workerOptions(const LaunchArgs& a) {
  std::vector<std::string> given;
  runtime::WorkerOptions o = runtime::parseWorkerArguments(a.workerArgs, {}, &given);
  o.planPath = a.plan;
  if (a.steps > 0) {
    if (std::find(given.begin(), given.end(), "--steps") != given.end())
      throw Error("--steps is given both to hap launch and after --; give it once");
    o.steps = a.steps;
  }
  return o;
}

std::string joinShares(const std::vector<double>& shares) {
  std::string s;
  for (double v : shares) s += (s.empty() ? "" : ", ") + fmt::format("{:g}", v);
  return s;
}

// The plan opened as every worker opens it (plan::openPlan: read with every field checked, its
// model located and its hash checked, imported, verified): a plan that does not verify starts no
// worker.
// A pipelined plan (engine/pipeline/pipeline_json.h) runs on every rank of its cluster, each
// worker running its stage (runtime/train/pipeline_trainer.h): its file and its model's hash are
// checked here, each worker verifies its stage's plan.
plan::Plan openForLaunch(const LaunchArgs& a) {
  std::ifstream in(a.plan);
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && doc.contains("pipeline")) {
    plan::Plan spmd;
    pipeline::pipelineFromJson(doc, a.plan, &spmd);
    const std::string given = workerOptions(a).modelPath;
    const std::optional<std::string> model = plan::locatePlanModel(spmd, a.plan, given);
    if (!model)
      throw Error(fmt::format("{}: the plan's model {} is not there (nor beside the plan); name it with --model",
                              a.plan, spmd.modelPath));
    plan::checkPlanModel(spmd, a.plan, *model);
    return spmd;
  }
  plan::OpenPlanOptions options;
  options.modelPath = workerOptions(a).modelPath;
  options.metaWeights = true;
  return plan::openPlan(a.plan, options).plan;
}

int runLocal(const LaunchArgs& a) {
  const plan::Plan p = openForLaunch(a);
  const int n = runtime::planRanks(p, a.plan, a.workers);
  runtime::LocalLaunchRequest request;
  request.options = workerOptions(a);
  request.worker = runtime::resolveWorker(a.worker);
  request.cpuShares = runtime::parseCpuShares(a.cpuShare, n);
  if (!a.slowdown.empty()) request.slowdowns = runtime::parseSlowdowns(a.slowdown, n);
  request.cpuPeriodMs = a.cpuPeriodMs;
  request.timeoutSeconds = a.timeout;
  request.dbPath = a.db;
  request.label = a.label;
  request.interrupt = &gInterrupt;

  std::set<std::string> hosts;
  for (const plan::PlanDevice& d : plan::worldDevices(p)) hosts.insert(d.machine);
  std::string note;
  if (hosts.size() > 1) note = fmt::format("; the plan's {} machines are emulated on this one", hosts.size());
  const std::vector<double>& shares = request.cpuShares;
  const bool throttled = std::any_of(shares.begin(), shares.end(), [](double s) { return s < 1; });
  const std::vector<double>& slowdowns = request.slowdowns;
  const bool slowed = std::any_of(slowdowns.begin(), slowdowns.end(), [](double f) { return f > 1; });
  std::vector<std::string> prefixes;
  for (int r = 0; r < n; ++r) prefixes.push_back(fmt::format("[rank {}] ", r));

  runtime::LocalLaunchResult launched;
  {
    InterruptGuard guard;
    launched = runtime::runLocalLaunch(p, request, runtime::prefixedSink(prefixes), [&](const runtime::LocalLaunchStart& s) {
      std::cerr << fmt::format("hap launch: {} ranks of {} on 127.0.0.1:{}{}{}{}\n", n, s.worker, s.port,
                               throttled ? fmt::format(", CPU shares {}", joinShares(shares)) : std::string(),
                               slowed ? fmt::format(", slowdowns {}", joinShares(slowdowns)) : std::string(), note);
    });
  }
  const runtime::LaunchResult& result = launched.result;
  if (!a.db.empty()) std::cerr << fmt::format("hap launch: run {} recorded in {}\n", launched.start.run, a.db);

  auto stillRunning = [&] {
    std::string ranks;
    for (size_t r = 0; r < result.workers.size(); ++r)
      if (result.workers[r].stoppedByLauncher) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    if (ranks.empty()) return std::string();
    return fmt::format("; stopped rank{} {}", ranks.find(',') == std::string::npos ? "" : "s", ranks);
  };
  switch (result.outcome) {
    case runtime::LaunchResult::Outcome::Succeeded:
      std::cerr << fmt::format("hap launch: all {} ranks finished in {:.1f} s\n", n, result.seconds);
      return 0;
    case runtime::LaunchResult::Outcome::WorkerFailed: {
      const runtime::WorkerExit& e = result.workers[static_cast<size_t>(result.failedWorker)];
      std::cerr << fmt::format("hap launch: rank {} failed ({}): {}{}\n", result.failedWorker, runtime::describeExit(e),
                               e.lastErrorLine.empty() ? "(it printed no error)" : e.lastErrorLine, stillRunning());
      return 1;
    }
    case runtime::LaunchResult::Outcome::TimedOut:
      std::cerr << fmt::format("hap launch: timed out after {:g} s (--timeout){}\n", a.timeout, stillRunning());
      return 1;
    case runtime::LaunchResult::Outcome::Interrupted:
      std::cerr << fmt::format("hap launch: interrupted ({}){}\n", runtime::interruptName(result.signal), stillRunning());
      return 130;
  }
  return 1;
}

int runEmit(const LaunchArgs& a) {
  const std::optional<runtime::ScriptKind> kind = runtime::parseScriptKind(a.emit[0]);
  if (!kind) throw Error(fmt::format("--emit {}: unknown kind; write torchrun, slurm or ssh", a.emit[0]));
  const std::string& dir = a.emit[1];
  // Verified here when its model is here (the scripts may name a model on the hosts only: each
  // worker verifies the plan before it runs, as always).
  const plan::Plan p = plan::locatePlanModel(plan::readPlan(a.plan), a.plan, workerOptions(a).modelPath)
                           ? openForLaunch(a)
                           : plan::readPlan(a.plan);
  runtime::planRanks(p, a.plan, a.workers);
  if (a.record.find('/') != std::string::npos || a.record == "." || a.record == "..")
    throw Error(fmt::format("--record {}: give a file name (it is written inside the launch folder on rank 0's "
                            "host; HAP_RECORD names another path at run time)",
                            a.record));
  runtime::EmitRequest request{*kind, dir, workerOptions(a), a.masterPort, a.force, a.record};
  const std::vector<std::string> written = runtime::emitLaunchFolder(p, a.plan, request);
  const bool modelNamed = request.options.modelPath.empty() && !p.modelPath.empty();

  std::string names;
  for (const std::string& w : written) names += (names.empty() ? "" : ", ") + w;
  std::cout << fmt::format("Wrote {} files to {}: {}.\n", written.size(), dir, names);
  std::cout << fmt::format("Next: read {}: copy {}hap-worker next to the scripts on every host.\n",
                           (fs::path(dir) / "README.txt").string(),
                           modelNamed ? "the model " + fs::path(p.modelPath).filename().string() + " and " : std::string());
  if (!a.record.empty())
    std::cout << fmt::format("After the run: hap runs import {} (rank 0's record of it) on this machine.\n",
                             (fs::path(dir) / a.record).string());
  return 0;
}

}  // namespace

void addLaunchCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<LaunchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "launch",
      "Run a plan: --local starts one hap-worker per plan device on this machine (rendezvous on a "
      "free port of 127.0.0.1, output prefixed by rank; one failing rank stops all); --emit writes "
      "the scripts that start it on the plan's machines. Arguments after -- go to every worker.");
  cmd->add_option("PLAN", args->plan, "Plan file (JSON) written by 'hap plan -o'")->required();
  CLI::Option* local = cmd->add_flag("--local", args->local, "Run all ranks on this machine");
  CLI::Option* emit = cmd->add_option("--emit", args->emit,
                                      "Write launch files into DIR instead: torchrun (one run-<machine>.sh per "
                                      "host), slurm (sbatch script) or ssh (one script starting every host)")
                          ->expected(2)
                          ->type_name("KIND DIR");
  local->excludes(emit);
  cmd->add_option("--steps", args->steps, "Training steps (passed to every worker as --steps)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--workers", args->workers,
                  "Expected number of workers: must equal the plan's device count (a check, not a choice)")
      ->check(CLI::PositiveNumber);
  CLI::Option* share = cmd->add_option("--cpu-share", args->cpuShare,
                                       "--local: hold each rank to a share of one CPU, e.g. 1,1,0.5,0.25 (rank 0 "
                                       "first) or one value for all, each in (0, 1]: a CPU-time quota per "
                                       "--cpu-period, as cgroup cpu.max, enforced by stopping and continuing the "
                                       "rank (no root needed)")
                           ->type_name("LIST");
  CLI::Option* slowdown =
      cmd->add_option("--slowdown", args->slowdown,
                      "--local: emulate slower devices, e.g. 1,2,4 (rank 0 first) or one value for all, "
                      "each >= 1: rank r's worker gets --slowdown F, computing F times slower (it "
                      "sleeps after its ops) while its collectives run at full speed; usable with "
                      "--cpu-share")
          ->type_name("LIST");
  CLI::Option* period = cmd->add_option("--cpu-period", args->cpuPeriodMs,
                                        "--local: the --cpu-share accounting period in milliseconds: a throttled "
                                        "rank that has used its share of one is stopped until the next")
                            ->check(CLI::Range(1, 10000))
                            ->capture_default_str()
                            ->type_name("MS");
  CLI::Option* timeout = cmd->add_option("--timeout", args->timeout,
                                         "--local: stop all ranks and fail after this many seconds")
                             ->check(CLI::PositiveNumber)
                             ->type_name("S");
  CLI::Option* worker = cmd->add_option("--worker", args->worker,
                                        "--local: the worker executable (default: hap-worker of this build, "
                                        "else on PATH)")
                            ->type_name("PATH");
  CLI::Option* port = cmd->add_option("--master-port", args->masterPort,
                                      "--emit: rank 0's rendezvous port written into the scripts (default 29500; "
                                      "MASTER_PORT overrides it at run time)");
  CLI::Option* force = cmd->add_flag("--force", args->force, "--emit: write into DIR even when it is not empty");
  CLI::Option* record =
      cmd->add_option("--record", args->record,
                      "--emit: rank 0 records the run (every rank's steps and per-stage times, the plan, its "
                      "cluster) into this store file inside DIR on its host, e.g. --record run.db; read it back "
                      "with hap runs import")
          ->type_name("NAME");
  CLI::Option* db = cmd->add_option("--db", args->db,
                                    "--local: record the run in this profile store (hap runs shows it): the plan, its "
                                    "cluster, the launch settings, every rank's per-step times and losses and the "
                                    "measured per-stage split")
                        ->type_name("PATH");
  CLI::Option* label = cmd->add_option("--label", args->label, "--local --db: a free-text label of the recorded run")
                           ->type_name("TEXT");
  label->needs(db);
  for (CLI::Option* o : {share, slowdown, period, timeout, worker, db, label}) o->excludes(emit);
  for (CLI::Option* o : {port, force, record}) o->excludes(local);
  cmd->add_option("WORKER-ARGS", args->workerArgs, "Arguments for every worker, after -- (e.g. -- --lr 0.01)");
  cmd->callback([args, &exitCode, local, emit] {
    if (local->count() == 0 && emit->count() == 0) throw CLI::RequiredError("--local or --emit KIND DIR");
    exitCode = args->local ? runLocal(*args) : runEmit(*args);
  });
}

}  // namespace hap::cli
