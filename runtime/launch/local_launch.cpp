#include "runtime/launch/local_launch.h"

#include <unistd.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>

#include "db/store.h"
#include "engine/base/error.h"
#include "runtime/launch/free_port.h"
#include "runtime/launch/launch_recording.h"

namespace hap::runtime {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

int planRanks(const plan::Plan& p, const std::string& planPath, int expected) {
  const int n = static_cast<int>(plan::worldDevices(p).size());  // a replicated plan: every machine's copy
  if (n == 0) throw Error(fmt::format("{}: the plan has no device", planPath));
  for (int j = 0; j < static_cast<int>(p.devices.size()); ++j)
    if (p.devices[static_cast<size_t>(j)].rank != j)
      throw Error(fmt::format("{}: field 'cluster.devices[{}].rank' is {}: devices must be listed by rank; re-plan "
                              "with hap plan",
                              planPath, j, p.devices[static_cast<size_t>(j)].rank));
  if (expected > 0 && expected != n)
    throw Error(fmt::format("--workers {}: the plan {} has {} devices and runs with exactly one worker per device; "
                            "re-plan for {} devices (hap plan -c CLUSTER) to run {} workers",
                            expected, planPath, n, expected, expected));
  return n;
}

const PerRankOption kCpuShareOption{"--cpu-share",
                                    "CPU share",
                                    "fractions of one CPU such as 1,0.5,0.25",
                                    "(0, 1]",
                                    "each is the share of one CPU a rank may use, 1 for a full CPU",
                                    0,
                                    1,
                                    true};
const PerRankOption kSlowdownOption{"--slowdown",
                                    "slowdown factor",
                                    "factors such as 1,2,4",
                                    ">= 1",
                                    "each is how many times slower a rank computes, 1 for full speed",
                                    1,
                                    INFINITY,
                                    false};

namespace {

bool inRange(double v, const PerRankOption& o) { return (o.lowOpen ? v > o.low : v >= o.low) && v <= o.high; }

// `values` (one per rank of `n`, or empty: all `byDefault`) checked against `option`'s range.
std::vector<double> perRankValues(std::vector<double> values, int n, double byDefault, const PerRankOption& option,
                                  const std::string& planFile) {
  if (values.empty()) values.assign(static_cast<size_t>(n), byDefault);
  if (static_cast<int>(values.size()) != n)
    throw Error(fmt::format("{} {}s for the {} ranks of {}: give one per rank ({})", values.size(), option.noun, n,
                            planFile, option.option));
  for (size_t r = 0; r < values.size(); ++r)
    if (!inRange(values[r], option))
      throw Error(fmt::format("the {} of rank {} is {:g}, not {}{}: {} ({})", option.noun, r, values[r],
                              option.range[0] == '(' || option.range[0] == '[' ? "in " : "", option.range,
                              option.meaning, option.option));
  return values;
}

}  // namespace

std::vector<double> parsePerRank(const std::string& text, int ranks, const PerRankOption& option) {
  if (text.empty()) return std::vector<double>(static_cast<size_t>(ranks), 1.0);
  std::vector<double> values;
  size_t begin = 0;
  for (;;) {
    const size_t comma = text.find(',', begin);
    std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    char* end = nullptr;
    const double value = item.empty() ? NAN : std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !std::isfinite(value))
      throw Error(fmt::format("{}: value {} ('{}') is not a number; write {}", option.option, values.size() + 1,
                              item, option.example));
    if (!inRange(value, option))
      throw Error(fmt::format("{}: value {} ({}) is not {}{}: {}", option.option, values.size() + 1, item,
                              option.range[0] == '(' || option.range[0] == '[' ? "in " : "", option.range,
                              option.meaning));
    values.push_back(value);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (values.size() == 1) return std::vector<double>(static_cast<size_t>(ranks), values[0]);
  if (static_cast<int>(values.size()) != ranks)
    throw Error(fmt::format("{}: {} values for {} ranks; give one value per rank (rank 0 first) or one for all",
                            option.option, values.size(), ranks));
  return values;
}

std::vector<double> parseCpuShares(const std::string& text, int ranks) {
  return parsePerRank(text, ranks, kCpuShareOption);
}

std::vector<double> parseSlowdowns(const std::string& text, int ranks) {
  return parsePerRank(text, ranks, kSlowdownOption);
}

std::string resolveWorker(const std::string& given, const std::string& self) {
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
  const std::string found = findProgram("hap-worker", "worker", self);
  if (!found.empty()) return found;
  std::error_code ec;
  const fs::path exe = self.empty() ? fs::read_symlink("/proc/self/exe", ec) : fs::path(self);
  throw Error(fmt::format("hap-worker not found: not at {} nor on PATH; build it (ninja hap-worker) or name it with "
                          "--worker PATH",
                          ec ? std::string("<build>/app/worker/hap-worker")
                             : (exe.parent_path().parent_path() / "worker" / "hap-worker").string()));
}

std::string findProgram(const std::string& name, const std::string& folder, const std::string& self) {
  std::error_code ec;
  const fs::path exe = self.empty() ? fs::read_symlink("/proc/self/exe", ec) : fs::path(self);
  if (!ec)
    for (const fs::path& c : {exe.parent_path().parent_path() / folder / name, exe.parent_path() / name})
      if (isExecutableFile(c)) return fs::absolute(c).lexically_normal().string();
  if (auto found = onPath(name)) return found->string();
  return {};
}

LocalLaunchResult runLocalLaunch(const plan::Plan& p, const LocalLaunchRequest& request, const LineSink& sink,
                                 const std::function<void(const LocalLaunchStart&)>& onStart) {
  const std::string& planFile = request.options.planPath;
  const int n = planRanks(p, planFile);
  const std::vector<double> shares = perRankValues(request.cpuShares, n, 1.0, kCpuShareOption, planFile);
  if (!request.slowdowns.empty() && request.options.slowdown != 1)
    throw Error("--slowdown is given both to hap launch and after --: give hap launch --slowdown F,... only");
  const std::vector<double> slowdowns =
      perRankValues(request.slowdowns, n, request.options.slowdown, kSlowdownOption, planFile);
  WorkerOptions workerOptions = request.options;
  workerOptions.slowdown = 1;  // each rank's own below
  if (!request.dbPath.empty() && (!workerOptions.dbPath.empty() || workerOptions.runId != 0))
    throw Error(fmt::format("{} is given after --: give hap launch --db PATH instead (it begins the run and passes "
                            "--db and --run-id to every worker)",
                            !workerOptions.dbPath.empty() ? "--db" : "--run-id"));

  LocalLaunchResult out;
  LocalLaunchStart& start = out.start;
  start.ranks = n;
  start.port = freeTcpPort();
  start.worker = request.worker;

  // The run recorded in the profile store (launch_recording.h).
  std::optional<db::Store> store;
  if (!request.dbPath.empty()) {
    store.emplace(request.dbPath);
    start.run = beginRecordedRun(*store, p,
                                 {workerOptions, shares, slowdowns, request.cpuPeriodMs, request.timeoutSeconds,
                                  request.label});
    workerOptions.dbPath = fs::absolute(request.dbPath).string();
    workerOptions.runId = start.run;
  }

  const bool ompSet = std::getenv("OMP_NUM_THREADS") != nullptr;
  // The process boundary: the options become every worker's argument list, with its rank's slowdown.
  std::vector<WorkerCommand> commands;
  for (int r = 0; r < n; ++r) {
    WorkerOptions rankOptions = workerOptions;
    rankOptions.slowdown = slowdowns[static_cast<size_t>(r)];
    std::vector<std::string> args = workerArguments(rankOptions);
    args.insert(args.begin(), fs::absolute(planFile).string());
    WorkerCommand c;
    c.program = request.worker;
    c.args = std::move(args);
    c.env = {{"RANK", std::to_string(r)},       {"LOCAL_RANK", std::to_string(r)},
             {"WORLD_SIZE", std::to_string(n)}, {"LOCAL_WORLD_SIZE", std::to_string(n)},
             {"MASTER_ADDR", "127.0.0.1"},      {"MASTER_PORT", std::to_string(start.port)}};
    if (!ompSet) c.env.emplace_back("OMP_NUM_THREADS", "1");  // a share is a share of one core
    c.cpuShare = shares[static_cast<size_t>(r)];
    commands.push_back(std::move(c));
  }
  start.args = commands[0].args;

  LaunchOptions options;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::llround(request.timeoutSeconds * 1000)));
  options.quotaPeriod = std::chrono::milliseconds(request.cpuPeriodMs);
  options.grace = request.grace;
  options.interrupt = request.interrupt;
  try {
    if (onStart) onStart(start);
    out.result = runWorkers(commands, sink, options);
  } catch (const std::exception& e) {
    if (store) store->finishRun(start.run, db::RunStatus::Failed, e.what());
    throw;
  }
  if (store) finishRecordedRun(*store, start.run, out.result, request.timeoutSeconds);
  return out;
}

}  // namespace hap::runtime
