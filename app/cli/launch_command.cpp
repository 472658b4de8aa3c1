#include "app/cli/launch_command.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "db/store.h"
#include "engine/base/error.h"
#include "engine/plan/plan_json.h"
#include "runtime/free_port.h"
#include "runtime/launch_recording.h"
#include "runtime/launch_scripts.h"
#include "runtime/launcher.h"

namespace hap::cli {
namespace {

namespace fs = std::filesystem;

struct LaunchArgs {
  std::string plan, worker, cpuShare;
  std::string db, label;  // --local --db: record the run in this profile store
  std::vector<std::string> emit;  // KIND DIR
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

// The plan's device count, checked against --workers.
int worldSize(const plan::Plan& p, const LaunchArgs& a) {
  const int n = static_cast<int>(plan::worldDevices(p).size());  // a replicated plan: every machine's copy
  if (n == 0) throw Error(fmt::format("{}: the plan has no device", a.plan));
  for (int j = 0; j < static_cast<int>(p.devices.size()); ++j)
    if (p.devices[static_cast<size_t>(j)].rank != j)
      throw Error(fmt::format("{}: field 'cluster.devices[{}].rank' is {}: devices must be listed by rank; re-plan "
                              "with hap plan",
                              a.plan, j, p.devices[static_cast<size_t>(j)].rank));
  if (a.workers > 0 && a.workers != n)
    throw Error(fmt::format("--workers {}: the plan {} has {} devices and runs with exactly one worker per device; "
                            "re-plan for {} devices (hap plan -c CLUSTER) to run {} workers",
                            a.workers, a.plan, n, a.workers, a.workers));
  return n;
}

// --cpu-share "1,0.4,..." (one per rank, rank 0 first) or one value for all ranks.
std::vector<double> parseShares(const std::string& text, int ranks) {
  if (text.empty()) return std::vector<double>(static_cast<size_t>(ranks), 1.0);
  std::vector<double> shares;
  size_t begin = 0;
  for (;;) {
    const size_t comma = text.find(',', begin);
    std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    char* end = nullptr;
    const double value = item.empty() ? NAN : std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !std::isfinite(value))
      throw Error(fmt::format("--cpu-share: value {} ('{}') is not a number; write fractions of one CPU such as "
                              "1,0.5,0.25",
                              shares.size() + 1, item));
    if (!(value > 0 && value <= 1))
      throw Error(fmt::format("--cpu-share: value {} ({}) is not in (0, 1]: each is the share of one CPU a rank may "
                              "use, 1 for a full CPU",
                              shares.size() + 1, item));
    shares.push_back(value);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (shares.size() == 1) return std::vector<double>(static_cast<size_t>(ranks), shares[0]);
  if (static_cast<int>(shares.size()) != ranks)
    throw Error(fmt::format("--cpu-share: {} values for {} ranks; give one value per rank (rank 0 first) or one for "
                            "all",
                            shares.size(), ranks));
  return shares;
}

bool isExecutableFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::optional<fs::path> onPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  std::string_view rest(path);
  while (true) {
    const size_t colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    const fs::path candidate = fs::path(dir.empty() ? "." : std::string(dir)) / name;
    if (isExecutableFile(candidate)) return fs::absolute(candidate);
    if (colon == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(colon + 1);
  }
}

// --worker PATH (a name without '/' is looked up on PATH), else hap-worker of this build
// (<build>/app/worker/hap-worker beside <build>/app/cli/hap), next to hap, or on PATH.
std::string resolveWorker(const std::string& given) {
  if (!given.empty()) {
    if (given.find('/') == std::string::npos) {
      if (auto found = onPath(given)) return found->string();
      throw Error(fmt::format("--worker {}: not found on PATH; give the executable's path", given));
    }
    std::error_code ec;
    if (!fs::exists(given, ec)) throw Error(fmt::format("--worker {}: no such file", given));
    if (!isExecutableFile(given)) throw Error(fmt::format("--worker {}: not an executable file", given));
    return fs::absolute(given).lexically_normal().string();
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) {
    candidates.push_back(self.parent_path().parent_path() / "worker" / "hap-worker");
    candidates.push_back(self.parent_path() / "hap-worker");
  }
  for (const fs::path& c : candidates)
    if (isExecutableFile(c)) return c.string();
  if (auto found = onPath("hap-worker")) return found->string();
  throw Error(fmt::format("hap-worker not found: not at {} nor on PATH; build it (ninja hap-worker) or name it with "
                          "--worker PATH",
                          candidates.empty() ? std::string("<build>/app/worker/hap-worker") : candidates[0].string()));
}

// --steps N, then the arguments after --.
std::vector<std::string> workerArguments(const LaunchArgs& a) {
  std::vector<std::string> args;
  if (a.steps > 0) {
    if (rt::hasOption(a.workerArgs, "--steps"))
      throw Error("--steps is given both to hap launch and after --; give it once");
    args = {"--steps", std::to_string(a.steps)};
  }
  args.insert(args.end(), a.workerArgs.begin(), a.workerArgs.end());
  return args;
}

std::string joinShares(const std::vector<double>& shares) {
  std::string s;
  for (double v : shares) s += (s.empty() ? "" : ", ") + fmt::format("{:g}", v);
  return s;
}

int runLocal(const LaunchArgs& a) {
  const plan::Plan p = plan::readPlan(a.plan);
  const int n = worldSize(p, a);
  const std::vector<double> shares = parseShares(a.cpuShare, n);
  const std::string worker = resolveWorker(a.worker);
  std::vector<std::string> extra = workerArguments(a);
  const int port = rt::freeTcpPort();
  // --db: the run recorded in the profile store (runtime/launch_recording.h).
  std::optional<db::Store> store;
  int64_t run = 0;
  if (!a.db.empty()) {
    for (const char* option : {"--db", "--run-id"})
      if (rt::hasOption(extra, option))
        throw Error(fmt::format("{} is given after --: give hap launch --db PATH instead (it begins the run and "
                                "passes --db and --run-id to every worker)",
                                option));
    store.emplace(a.db);
    run = rt::beginRecordedRun(*store, p, {a.plan, extra, shares, a.cpuPeriodMs, a.timeout, a.label});
    extra.insert(extra.end(), {"--db", fs::absolute(a.db).string(), "--run-id", std::to_string(run)});
  }
  const bool ompSet = std::getenv("OMP_NUM_THREADS") != nullptr;

  std::vector<rt::WorkerCommand> commands;
  std::vector<std::string> prefixes;
  const std::string planPath = fs::absolute(a.plan).string();
  for (int r = 0; r < n; ++r) {
    rt::WorkerCommand c;
    c.program = worker;
    c.args.push_back(planPath);
    c.args.insert(c.args.end(), extra.begin(), extra.end());
    c.env = {{"RANK", std::to_string(r)},       {"LOCAL_RANK", std::to_string(r)},
             {"WORLD_SIZE", std::to_string(n)}, {"LOCAL_WORLD_SIZE", std::to_string(n)},
             {"MASTER_ADDR", "127.0.0.1"},      {"MASTER_PORT", std::to_string(port)}};
    if (!ompSet) c.env.emplace_back("OMP_NUM_THREADS", "1");
    c.cpuShare = shares[static_cast<size_t>(r)];
    commands.push_back(std::move(c));
    prefixes.push_back(fmt::format("[rank {}] ", r));
  }

  std::set<std::string> hosts;
  for (const plan::PlanDevice& d : plan::worldDevices(p)) hosts.insert(d.machine);
  std::string note;
  if (hosts.size() > 1) note = fmt::format("; the plan's {} machines are emulated on this one", hosts.size());
  const bool throttled = std::any_of(shares.begin(), shares.end(), [](double s) { return s < 1; });
  std::cerr << fmt::format("hap launch: {} ranks of {} on 127.0.0.1:{}{}{}\n", n, worker, port,
                           throttled ? fmt::format(", CPU shares {}", joinShares(shares)) : std::string(), note);

  rt::LaunchOptions options;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::llround(a.timeout * 1000)));
  options.quotaPeriod = std::chrono::milliseconds(a.cpuPeriodMs);
  options.interrupt = &gInterrupt;
  rt::LaunchResult result;
  {
    InterruptGuard guard;
    try {
      result = rt::runWorkers(commands, rt::prefixedSink(prefixes), options);
    } catch (const Error& e) {
      if (store) store->finishRun(run, db::RunStatus::Failed, e.what());
      throw;
    }
  }
  if (store) {
    rt::finishRecordedRun(*store, run, result, a.timeout);
    std::cerr << fmt::format("hap launch: run {} recorded in {}\n", run, a.db);
  }

  auto stillRunning = [&] {
    std::string ranks;
    for (size_t r = 0; r < result.workers.size(); ++r)
      if (result.workers[r].stoppedByLauncher) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    if (ranks.empty()) return std::string();
    return fmt::format("; stopped rank{} {}", ranks.find(',') == std::string::npos ? "" : "s", ranks);
  };
  switch (result.outcome) {
    case rt::LaunchResult::Outcome::Succeeded:
      std::cerr << fmt::format("hap launch: all {} ranks finished in {:.1f} s\n", n, result.seconds);
      return 0;
    case rt::LaunchResult::Outcome::WorkerFailed: {
      const rt::WorkerExit& e = result.workers[static_cast<size_t>(result.failedWorker)];
      std::cerr << fmt::format("hap launch: rank {} failed ({}): {}{}\n", result.failedWorker, rt::describeExit(e),
                               e.lastErrorLine.empty() ? "(it printed no error)" : e.lastErrorLine, stillRunning());
      return 1;
    }
    case rt::LaunchResult::Outcome::TimedOut:
      std::cerr << fmt::format("hap launch: timed out after {:g} s (--timeout){}\n", a.timeout, stillRunning());
      return 1;
    case rt::LaunchResult::Outcome::Interrupted:
      std::cerr << fmt::format("hap launch: interrupted ({}){}\n", rt::interruptName(result.signal), stillRunning());
      return 130;
  }
  return 1;
}

int runEmit(const LaunchArgs& a) {
  const std::optional<rt::ScriptKind> kind = rt::parseScriptKind(a.emit[0]);
  if (!kind) throw Error(fmt::format("--emit {}: unknown kind; write torchrun, slurm or ssh", a.emit[0]));
  const std::string& dir = a.emit[1];
  const plan::Plan p = plan::readPlan(a.plan);
  worldSize(p, a);
  rt::EmitRequest request{*kind, dir, workerArguments(a), a.masterPort, a.force};
  const std::vector<std::string> written = rt::emitLaunchFolder(p, a.plan, request);
  const bool modelNamed = !rt::hasOption(request.workerArgs, "--model") && !p.modelPath.empty();

  std::string names;
  for (const std::string& w : written) names += (names.empty() ? "" : ", ") + w;
  std::cout << fmt::format("Wrote {} files to {}: {}.\n", written.size(), dir, names);
  std::cout << fmt::format("Next: read {}: copy {}hap-worker next to the scripts on every host.\n",
                           (fs::path(dir) / "README.txt").string(),
                           modelNamed ? "the model " + fs::path(p.modelPath).filename().string() + " and " : std::string());
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
  CLI::Option* db = cmd->add_option("--db", args->db,
                                    "--local: record the run in this profile store (hap runs shows it): the plan, its "
                                    "cluster, the launch settings, every rank's per-step times and losses and the "
                                    "measured per-stage split")
                        ->type_name("PATH");
  CLI::Option* label = cmd->add_option("--label", args->label, "--local --db: a free-text label of the recorded run")
                           ->type_name("TEXT");
  label->needs(db);
  for (CLI::Option* o : {share, period, timeout, worker, db, label}) o->excludes(emit);
  for (CLI::Option* o : {port, force}) o->excludes(local);
  cmd->add_option("WORKER-ARGS", args->workerArgs, "Arguments for every worker, after -- (e.g. -- --lr 0.01)");
  cmd->callback([args, &exitCode, local, emit] {
    if (local->count() == 0 && emit->count() == 0) throw CLI::RequiredError("--local or --emit KIND DIR");
    exitCode = args->local ? runLocal(*args) : runEmit(*args);
  });
}

}  // namespace hap::cli
