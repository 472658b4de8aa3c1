#include "app/cli/tune_loop.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "db/cluster_profile.h"
#include "db/run_import.h"
#include "db/store.h"
#include "engine/cost/calibration.h"
#include "engine/cost/cluster.h"
#include "engine/cost/profile.h"
#include "engine/import/importer.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "engine/rules/relation.h"
#include "runtime/launch/launch_scripts.h"
#include "runtime/launch/local_launch.h"
#include "runtime/launch/worker_options.h"

namespace hap::tune {
namespace {

namespace fs = std::filesystem;

std::string ms(double seconds) {
  return fmt::format("{:.2f} ms", seconds * 1e3);
}

void say(TuneListener* l, const std::string& line) {
  if (l) l->onMessage(line);
}

void checkInterrupt(const TuneRequest& r) {
  if (r.interrupt && r.interrupt->load() != 0)
    throw TuneError(
        fmt::format("hap tune: interrupted ({}); the runs recorded so far stay in the store",
                    runtime::interruptName(r.interrupt->load())));
}

// "NAME@N" split.
std::pair<std::string, int> splitProfile(const std::string& s) {
  const size_t at = s.rfind('@');
  if (at == std::string::npos) return {s, 0};
  return {s.substr(0, at), std::stoi(s.substr(at + 1))};
}

// ---- Step 0: the quick profile of the device types the store lacks ----------------------------

// Runs `hap profile --quick` once per missing device type, each in a child held to the CPU share of
// the type's first rank when the cluster is emulated with shares (as docs/cost-model.md §7 says to
// profile an emulated cluster), merged into one profile; the first also measures the collectives
// among all ranks, stored for both link classes (loopback stands for every link here).
void profileMissing(const TuneRequest& r, const cost::Cluster& cluster, const std::string& name,
                    const std::string& storePath, const std::vector<double>& shares,
                    TuneListener* l) {
  db::Store store(storePath);
  const std::optional<cost::Profile> current = store.loadProfile(name);
  std::vector<std::string> missing;
  std::map<std::string, double> shareOf;
  for (int rank = 0; rank < cluster.size(); ++rank) {
    const std::string& type = cluster.type(rank).name;
    if (shareOf.count(type)) continue;
    shareOf[type] = shares[static_cast<size_t>(rank)];
    if (!current || !current->device(type)) missing.push_back(type);
  }
  const bool needCollectives = cluster.size() >= 2 && (!current || current->collectives.empty());
  if (missing.empty() && !needCollectives) return;
  if (missing.empty()) missing.push_back(cluster.type(0).name);
  const bool emulated = std::any_of(shares.begin(), shares.end(), [](double s) { return s < 1; });
  const std::string hap = !r.hap.empty() ? r.hap : runtime::findProgram("hap", "app/cli");
  if (hap.empty())
    throw TuneError(
        "hap tune: cannot find the hap executable to profile with; build it (target hap) or put it "
        "on PATH");
  say(l, fmt::format(
             "hap tune: the store {} holds no figures for {} of {}'s device types: profiling them "
             "(hap profile --quick{})",
             storePath, missing.size(), cluster.name,
             emulated ? ", each at its rank's CPU share" : ""));
  bool collectivesDone = !needCollectives;
  for (const std::string& type : missing) {
    checkInterrupt(r);
    runtime::WorkerCommand c;
    c.program = hap;
    c.args = {"profile", "--quick", "--name", name,     "--device-type",
              type,      "--merge", "--db",   storePath};
    if (emulated) {
      c.args.push_back("--cpu-share");
      c.args.push_back(fmt::format("{:g}", shareOf[type]));
    }
    if (!collectivesDone) {
      c.args.insert(c.args.end(),
                    {"--ranks", std::to_string(cluster.size()), "--link-class", "intra,inter"});
      collectivesDone = true;
    } else {
      c.args.insert(c.args.end(), {"--ranks", "1"});
    }
    std::string command = "hap";
    for (const std::string& a : c.args) command += " " + a;
    say(l, "hap tune: " + command);
    runtime::LaunchOptions options;
    options.timeout = std::chrono::seconds(900);
    options.interrupt = r.interrupt;
    const runtime::LaunchResult result = runtime::runWorkers(
        {c},
        [&](int, runtime::OutputStream stream, std::string_view line) {
          if (l) l->onOutput(-1, stream == runtime::OutputStream::Err, line);
        },
        options);
    checkInterrupt(r);
    if (result.outcome != runtime::LaunchResult::Outcome::Succeeded) {
      const runtime::WorkerExit& e = result.workers.front();
      throw TuneError(fmt::format(
          "hap tune: profiling device type {} failed ({}): {}; run `{}` to see why, or name a "
          "profile the store "
          "holds with --profile",
          type,
          result.outcome == runtime::LaunchResult::Outcome::TimedOut ? "timed out"
                                                                     : runtime::describeExit(e),
          e.lastErrorLine.empty() ? "(it printed no error)" : e.lastErrorLine, command));
    }
  }
}

// ---- Running a plan ---------------------------------------------------------------------------

struct Measured {
  double mean = 0, spread = 0;
  int steps = 0;
};

// Per measured step the slowest rank's wall time (the step ends when every rank is done), as the
// calibration measures a run; their mean and standard deviation.
Measured measure(const db::Store& store, int64_t run) {
  std::map<int64_t, double> slowest;
  for (const db::StepRecord& s : store.steps(run))
    if (!s.warmup) slowest[s.step] = std::max(slowest[s.step], s.seconds);
  Measured m;
  m.steps = static_cast<int>(slowest.size());
  if (m.steps == 0) return m;
  for (const auto& [step, s] : slowest) m.mean += s;
  m.mean /= m.steps;
  for (const auto& [step, s] : slowest) m.spread += (s - m.mean) * (s - m.mean);
  m.spread = m.steps > 1 ? std::sqrt(m.spread / (m.steps - 1)) : 0;
  return m;
}

// Runs `planPath` as `hap launch --local --db` does and returns its recorded run's id.
int64_t launch(const TuneRequest& r, const std::string& planPath, const std::string& storePath,
               const std::vector<double>& shares, const std::vector<double>& slowdowns,
               const std::string& label, TuneListener* l) {
  const plan::Plan p = plan::readPlan(planPath);
  const int n = runtime::planRanks(p, planPath);
  runtime::LocalLaunchRequest lr;
  std::vector<std::string> given;
  lr.options = runtime::parseWorkerArguments(r.workerArgs, {}, &given);
  for (const char* own : {"--steps", "--warmup", "--slowdown"})
    if (std::find(given.begin(), given.end(), own) != given.end())
      throw TuneError(fmt::format("hap tune: give {} to hap tune itself, not after --", own));
  lr.options.planPath = fs::absolute(planPath).string();
  lr.options.steps = r.steps;
  lr.options.warmup = r.warmup;
  lr.worker = runtime::resolveWorker(r.worker);
  lr.cpuShares = shares;
  lr.slowdowns = slowdowns;
  if (static_cast<int>(shares.size()) != n)
    throw TuneError(
        fmt::format("{}: the plan has {} ranks, the cluster {}", planPath, n, shares.size()));
  lr.cpuPeriodMs = r.cpuPeriodMs;
  lr.timeoutSeconds = r.runTimeoutSeconds;
  lr.dbPath = storePath;
  lr.label = label;
  lr.interrupt = r.interrupt;
  const runtime::LocalLaunchResult launched = runtime::runLocalLaunch(
      p, lr, [&](int rank, runtime::OutputStream stream, std::string_view line) {
        if (l) l->onOutput(rank, stream == runtime::OutputStream::Err, line);
      });
  const runtime::LaunchResult& result = launched.result;
  switch (result.outcome) {
    case runtime::LaunchResult::Outcome::Succeeded:
      return launched.start.run;
    case runtime::LaunchResult::Outcome::WorkerFailed: {
      const runtime::WorkerExit& e = result.workers[static_cast<size_t>(result.failedWorker)];
      throw TuneError(
          fmt::format("hap tune: {}: rank {} failed ({}): {}; run it alone with `hap launch {} "
                      "--local --steps {}` and read its "
                      "output (run {} in {})",
                      label, result.failedWorker, runtime::describeExit(e),
                      e.lastErrorLine.empty() ? "(it printed no error)" : e.lastErrorLine, planPath,
                      r.steps, launched.start.run, storePath));
    }
    case runtime::LaunchResult::Outcome::TimedOut:
      throw TuneError(fmt::format(
          "hap tune: {}: timed out after {:g} s; give fewer --steps or a longer --run-timeout",
          label, r.runTimeoutSeconds));
    case runtime::LaunchResult::Outcome::Interrupted:
      checkInterrupt(r);
      throw TuneError(fmt::format("hap tune: {}: interrupted", label));
  }
  throw TuneError("hap tune: unknown launch outcome");
}

// Runs `planPath` on a real cluster (TuneRequest::emitKind): writes its launch folder with rank 0
// recording into run.db, runs r.runWith on it, imports the record into the store and returns the
// imported run's id.
int64_t launchEmitted(const TuneRequest& r, const std::string& planPath, const std::string& storePath,
                      const std::string& label, TuneListener* l) {
  const plan::Plan p = plan::readPlan(planPath);
  const std::optional<runtime::ScriptKind> kind = runtime::parseScriptKind(r.emitKind);
  if (!kind) throw TuneError(fmt::format("hap tune: --emit {}: write torchrun, slurm or ssh", r.emitKind));
  const fs::path dir = fs::absolute(fs::path(r.workDir) / (fs::path(planPath).stem().string() + "-" + r.emitKind));
  runtime::EmitRequest request;
  request.kind = *kind;
  request.dir = dir.string();
  std::vector<std::string> given;
  request.options = runtime::parseWorkerArguments(r.workerArgs, {}, &given);
  for (const char* own : {"--steps", "--warmup", "--record", "--db"})
    if (std::find(given.begin(), given.end(), own) != given.end())
      throw TuneError(fmt::format("hap tune: give {} to hap tune itself, not after --", own));
  request.options.steps = r.steps;
  request.options.warmup = r.warmup;
  request.masterPort = r.masterPort;
  request.force = true;
  request.recordFile = "run.db";
  std::error_code ec;
  const fs::path record = dir / request.recordFile;
  fs::remove(record, ec);  // a record of an earlier round's run of this folder is not this run's
  runtime::emitLaunchFolder(p, planPath, request);
  // The folder carries what every host needs but hap-worker: the model too (a hard link where the
  // filesystem allows, so a large model is not copied per plan).
  if (!p.modelPath.empty()) {
    const fs::path model = dir / fs::path(p.modelPath).filename();
    if (!fs::exists(model, ec)) {
      fs::create_hard_link(fs::absolute(r.modelPath), model, ec);
      if (ec) fs::copy_file(fs::absolute(r.modelPath), model, ec);
      if (ec) throw TuneError(fmt::format("hap tune: {}: cannot copy the model there: {}", model.string(), ec.message()));
    }
  }

  std::string command;
  const std::string quoted = runtime::shellQuote(dir.string());
  for (size_t at = 0; at < r.runWith.size();) {
    const size_t next = r.runWith.find("{dir}", at);
    command += r.runWith.substr(at, next == std::string::npos ? std::string::npos : next - at);
    if (next == std::string::npos) break;
    command += quoted;
    at = next + 5;
  }
  say(l, fmt::format("hap tune: {}: {}", label, command));
  runtime::WorkerCommand c;
  c.program = "/bin/sh";
  c.args = {"-c", command};
  c.env = {{"HAP_TUNE_DIR", dir.string()}};
  if (!r.worker.empty()) c.env.emplace_back("HAP_WORKER", r.worker);  // the scripts' (and launch-ssh's)
  runtime::LaunchOptions options;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(r.runTimeoutSeconds * 1000));
  options.interrupt = r.interrupt;
  const runtime::LaunchResult result = runtime::runWorkers(
      {c},
      [&](int, runtime::OutputStream stream, std::string_view line) {
        if (l) l->onOutput(0, stream == runtime::OutputStream::Err, line);
      },
      options);
  switch (result.outcome) {
    case runtime::LaunchResult::Outcome::Succeeded: break;
    case runtime::LaunchResult::Outcome::WorkerFailed: {
      const runtime::WorkerExit& e = result.workers.front();
      throw TuneError(fmt::format("hap tune: {}: `{}` failed ({}): {}; the launch folder is {}", label, command,
                                  runtime::describeExit(e),
                                  e.lastErrorLine.empty() ? "(it printed no error)" : e.lastErrorLine, dir.string()));
    }
    case runtime::LaunchResult::Outcome::TimedOut:
      throw TuneError(fmt::format("hap tune: {}: `{}` did not end within {:g} s (--run-timeout)", label, command,
                                  r.runTimeoutSeconds));
    case runtime::LaunchResult::Outcome::Interrupted:
      checkInterrupt(r);
      throw TuneError(fmt::format("hap tune: {}: interrupted", label));
  }
  if (!fs::is_regular_file(record, ec))
    throw TuneError(fmt::format(
        "hap tune: {}: `{}` succeeded but rank 0's record {} is not there: where the hosts' folder is not this "
        "one, copy it back in the command (launch-ssh.sh does)",
        label, command, record.string()));
  db::Store store(storePath);
  const std::string sha = plan::sha256File((dir / fs::path(planPath).filename()).string());
  for (const db::ImportedRun& imported : db::importRuns(store, record.string())) {
    const std::optional<db::RunRecord> run = store.run(imported.id);
    const std::optional<db::PlanRecord> plan = run ? store.plan(run->planId) : std::nullopt;
    if (plan && plan->sha256 == sha && run->status == db::RunStatus::Succeeded) return imported.id;
  }
  throw TuneError(fmt::format("hap tune: {}: {} holds no succeeded run of the plan {}", label, record.string(),
                              planPath));
}

// ---- Calibration over every run of the cluster ------------------------------------------------

// The cluster-wide collective slowdown a profile prices with (cost::collectiveSlowdown).
double slowdownOf(const cost::Profile& p, const cost::Cluster& cluster) {
  double worst = 1;
  for (const cost::DeviceType& t : cluster.types)
    if (const cost::DeviceProfile* d = p.device(t.name))
      worst = std::max(worst, d->collectiveSlowdown);
  return worst;
}

double computeScaleOf(const cost::Profile& p, const std::string& type) {
  const cost::DeviceProfile* d = p.device(type);
  return d ? d->computeScale : 1;
}

// The observation of one recorded run: its plan's priced stages (pricedObservation), the slowest
// rank's mean measured step, every rank's peak memory.
std::optional<cost::RunObservation> observe(const db::Store& store, const db::RunRecord& run,
                                            const plan::Plan& p, const cost::Profile& from,
                                            const cost::Profile& to, const cost::Cluster& cluster) {
  cost::RunObservation o = pricedObservation(p, from, to, cluster);
  o.run = run.id;
  o.plan = run.planId;
  const Measured m = measure(store, run.id);
  if (m.steps == 0) return std::nullopt;
  o.measuredStepSeconds = m.mean;
  o.measuredSteps = m.steps;
  std::map<int, double> peak;
  for (const db::StepRecord& s : store.steps(run.id))
    peak[s.rank] = std::max(peak[s.rank], s.peakMemoryBytes);
  // o.memory is in worldDevices order; ranks that recorded no step are left out.
  std::vector<cost::MemoryObservation> memory;
  const std::vector<plan::PlanDevice> devices = plan::worldDevices(p);
  for (size_t i = 0; i < devices.size(); ++i) {
    const auto it = peak.find(devices[i].rank);
    if (it == peak.end()) continue;
    memory.push_back(o.memory[i]);
    memory.back().measuredPeakBytes = it->second;
  }
  o.memory = std::move(memory);
  return o;
}

TuneCalibration calibrate(const std::string& storePath, const cost::Cluster& cluster,
                          const cost::Profile& base, int round) {
  db::Store store(storePath);
  store.recoverAbandonedRuns();
  std::map<int, std::optional<cost::Profile>> versions;  // of base.name
  std::vector<cost::RunObservation> observations;
  std::set<int64_t> plans;
  for (const db::RunRecord& run : store.runs()) {
    if (run.status != db::RunStatus::Succeeded) continue;
    const std::optional<db::PlanRecord> record = store.plan(run.planId);
    if (!record) continue;
    const plan::Plan p = plan::planFromJson(nlohmann::json::parse(record->json),
                                            fmt::format("{} (plan {})", storePath, record->id));
    if (p.cluster.name != cluster.name || p.cluster.profile.empty()) continue;
    const auto [name, version] = splitProfile(p.cluster.profile);
    if (name != base.name) continue;
    auto it = versions.find(version);
    if (it == versions.end())
      it = versions.emplace(version, store.loadProfile(name, version)).first;
    if (!it->second) continue;
    if (std::optional<cost::RunObservation> o =
            observe(store, run, p, *it->second, base, cluster)) {
      observations.push_back(std::move(*o));
      plans.insert(run.planId);
    }
  }
  if (observations.size() < 2)
    throw TuneError(
        fmt::format("hap tune: calibration needs at least 2 succeeded runs with measured steps of "
                    "{} planned under profile {} "
                    "in {}; it found {}. Check the runs with `hap runs --db {}`",
                    cluster.name, base.name, storePath, observations.size(), storePath));
  std::sort(
      observations.begin(), observations.end(),
      [](const cost::RunObservation& a, const cost::RunObservation& b) { return a.run < b.run; });
  const cost::Calibration fit = cost::fit(observations);
  TuneCalibration out;
  out.runs = static_cast<int>(observations.size());
  out.plans = static_cast<int>(plans.size());
  out.mapeBefore = cost::accuracy(observations, cost::Calibration{}).stepMape;
  out.mapeAfter = cost::accuracy(observations, fit).stepMape;

  // The base composed with the fit, as db::calibrateStore composes it.
  cost::Profile profile = base;
  cost::compose(profile, fit);
  profile.version = 0;
  profile.createdAt.clear();
  profile.note = fmt::format("hap tune round {}: {} runs of {} plans of {} fitted, base {}@{}",
                             round, out.runs, out.plans, cluster.name, base.name, base.version);
  out.saved = fmt::format("{}@{}", profile.name, store.saveProfile(profile));
  return out;
}

// ---- Planning ---------------------------------------------------------------------------------

struct Planned {
  std::string strategy, path, key;
  std::string profile;  // "NAME@N" it was priced under, "inventory" without a profile
  plan::Plan plan;
};

Planned planOne(const TuneRequest& r, const std::shared_ptr<const ir::Graph>& graph,
                const import::ImportOptions& importOptions, const cost::Cluster& cluster,
                const std::string& baseline, bool withBaselines, int round,
                const std::string& name = {}) {
  plan::PlanRequest request = r.plan;
  request.baseline = baseline;
  request.baselines = withBaselines;
  if (!baseline.empty()) request.pins.clear();  // the baselines' programs are fixed
  if (!baseline.empty())
    request.ratios = plan::PlanRequest{}.ratios;  // --baseline excludes --ratios
  const plan::PlannedModel planned = plan::planModel(graph, importOptions, cluster, request);
  Planned out;
  out.strategy = !name.empty() ? name : baseline.empty() ? "hap" : baseline;
  out.path = (fs::path(r.workDir) / fmt::format("round{}-{}.json", round, out.strategy)).string();
  plan::writePlan(planned.plan, *planned.graph, out.path);
  out.plan = planned.plan;
  out.key = programKey(out.plan);
  out.profile = cluster.profile.empty() ? "inventory" : cluster.profile;
  return out;
}

}  // namespace

double TuneRound::mape() const {
  if (runs.empty()) return 0;
  double sum = 0;
  for (const TuneRun& run : runs) sum += std::abs(run.error());
  return sum / static_cast<double>(runs.size());
}

std::string programKey(const plan::Plan& p) {
  std::string key =
      fmt::format("{}|{}|{}|", p.modelSha256, p.devices.size(), p.replication.machines);
  for (int d : p.replication.inputDims) key += fmt::format("{},", d);
  const auto form = [&](const plan::Form& f) {
    key += fmt::format("({}:{}", f.value, static_cast<int>(f.rel));
    for (int64_t n : f.lengths) key += fmt::format(",{}", n);
    key += ")";
  };
  for (const plan::PlanStep& s : p.steps) {
    key += fmt::format("\n{}:{}:{}:{}:{}:{}:", static_cast<int>(s.kind), s.node, s.variant, s.sfb,
                       s.instruction, s.method);
    for (const plan::Form& f : s.inputs) form(f);
    key += "->";
    for (const plan::Form& f : s.outputs) form(f);
    if (s.kind == plan::PlanStep::Kind::Convert) {
      form(s.from);
      form(s.to);
    }
  }
  return key;
}

cost::RunObservation pricedObservation(const plan::Plan& p, const cost::Profile& from,
                                       const cost::Profile& to, const cost::Cluster& cluster) {
  cost::RunObservation o;
  o.label = fmt::format("{} {}", fs::path(p.modelPath).filename().string(), p.strategy);
  std::map<int, std::string> typeOfGroup;
  for (const plan::PlanDevice& d : p.devices) typeOfGroup[d.group] = d.type;
  const double k = slowdownOf(to, cluster) / slowdownOf(from, cluster);
  const double g = from.gradientExposure > 0 ? to.gradientExposure / from.gradientExposure : 1;
  for (const plan::Stage& st : p.stages) {
    cost::StageObservation s;
    // The gradient all-reduces of replicated parameters run in backward (their dual).
    double gradient = 0;
    if (st.backward)
      for (int i = st.firstStep; i < st.endStep; ++i) {
        const plan::PlanStep& step = p.steps[static_cast<size_t>(i)];
        if (step.kind == plan::PlanStep::Kind::Convert && step.instruction == "replicate-parameter")
          gradient += step.backwardCommunication;
      }
    s.communicationSeconds = k * (st.communicationSeconds - gradient + g * gradient);
    s.gradientSeconds = k * g * gradient;
    for (size_t gi = 0; gi < st.groupComputation.size(); ++gi) {
      const std::string& type = typeOfGroup[static_cast<int>(gi)];
      double& slowest = s.computeByType[type];
      slowest = std::max(
          slowest, st.groupComputation[gi] * computeScaleOf(to, type) / computeScaleOf(from, type));
    }
    o.stages.push_back(std::move(s));
  }
  o.extraSeconds = k * p.replication.allReduceSeconds;
  o.exposedGradientSeconds = k * g * p.exposedGradientSeconds;
  for (const plan::PlanDevice& d : plan::worldDevices(p)) {
    const cost::DeviceProfile* a = from.device(d.type);
    const cost::DeviceProfile* b = to.device(d.type);
    const double baseA = a ? a->baseMemoryBytes : 0, scaleA = a ? a->memoryScale : 1;
    const double baseB = b ? b->baseMemoryBytes : 0, scaleB = b ? b->memoryScale : 1;
    o.memory.push_back({d.type, baseB + scaleB / scaleA * (d.memoryBytes - baseA), 0});
  }
  return o;
}

TuneResult runTune(const TuneRequest& r, TuneListener* l) {
  const auto start = std::chrono::steady_clock::now();
  TuneResult result;
  if (r.rounds < 1) throw TuneError("hap tune: --rounds must be at least 1");
  if (r.steps < 1) throw TuneError("hap tune: --steps must be at least 1 (measured steps per run)");
  if (r.workDir.empty() || !fs::is_directory(r.workDir))
    throw TuneError(
        fmt::format("hap tune: the folder for the rounds' plans '{}' does not exist", r.workDir));
  const std::string storePath = r.storePath.empty() ? db::defaultPath() : r.storePath;

  // The model and the cluster first: their errors are the user's most likely ones.
  if (!fs::exists(r.modelPath))
    throw TuneError(fmt::format(
        "{}: no such file (give the path of a TorchScript .pt file whose forward returns "
        "the loss; resources/models/export.py writes the zoo's)",
        r.modelPath));
  import::ImportOptions importOptions;
  importOptions.metaWeights = true;
  for (const std::string& in : r.inputs)
    importOptions.inputOverrides.push_back(import::parseInputArg(in));
  const auto graph =
      std::make_shared<const ir::Graph>(import::importModel(r.modelPath, importOptions));
  cost::Cluster cluster = cost::loadCluster(r.clusterPath);
  const int n = cluster.size();
  const std::vector<double> shares = runtime::parseCpuShares(r.cpuShares, n);
  const std::vector<double> slowdowns =
      r.slowdowns.empty() ? std::vector<double>{} : runtime::parseSlowdowns(r.slowdowns, n);
  std::string name = r.profileName;
  if (name.empty())
    name = !cluster.profile.empty() ? splitProfile(cluster.profile).first : cluster.name;
  if (name.find('@') != std::string::npos)
    throw TuneError(fmt::format(
        "--profile {}: name a profile without a version; hap tune adds versions to it", name));

  // (0) A profile for every device type.
  const auto latest = [&] {
    db::Store store(storePath);
    std::optional<cost::Profile> p = store.loadProfile(name);
    return p;
  };
  {
    const std::optional<cost::Profile> before = latest();
    if (!r.emitKind.empty()) {
      if (!r.cpuShares.empty() || !r.slowdowns.empty())
        throw TuneError("hap tune: --cpu-share and --slowdown emulate devices on this machine; with --emit the "
                        "cluster runs at its own speeds");
      if (r.runWith.empty())
        throw TuneError("hap tune: --emit needs --run-with CMD, the command that runs a launch folder {dir} "
                        "and returns when the run has ended (e.g. --run-with 'sh {dir}/launch-ssh.sh')");
      std::vector<std::string> missing;
      for (int rank = 0; rank < cluster.size(); ++rank) {
        const std::string& type = cluster.type(rank).name;
        if ((!before || !before->device(type)) && std::find(missing.begin(), missing.end(), type) == missing.end())
          missing.push_back(type);
      }
      if (!missing.empty())
        throw TuneError(fmt::format(
            "hap tune --emit: the store {} holds no figures of profile {} for device type {}: on a machine of "
            "each such type run `hap profile --quick --name {} --device-type TYPE --merge --db FILE` with FILE "
            "this store (carried there and back), then tune again",
            storePath, name, missing.front(), name));
    } else {
      profileMissing(r, cluster, name, storePath, shares, l);
    }
    const std::optional<cost::Profile> after = latest();
    if (after && (!before || before->version != after->version))
      result.profiled = fmt::format("{}@{}", after->name, after->version);
  }
  std::optional<cost::Profile> base = latest();
  if (!base)
    throw TuneError(
        fmt::format("hap tune: the store {} holds no profile {} after profiling", storePath, name));
  say(l, fmt::format("hap tune: {} on {} ({} ranks), profile {}@{} in {}",
                     fs::path(r.modelPath).filename().string(), cluster.name, n, name,
                     base->version, storePath));

  std::map<std::string, TuneRun> measuredByKey;  // program key -> its first measurement
  int currentVersion = base->version;
  double previousBest = 0;
  for (int round = 1; round <= r.rounds; ++round) {
    checkInterrupt(r);
    TuneRound tr;
    tr.round = round;
    tr.profile = fmt::format("{}@{}", name, currentVersion);
    if (l) l->onRoundStarted(round, tr.profile);
    cost::Cluster priced = cluster;
    priced.profile = tr.profile;
    db::attachProfile(priced, storePath);

    // (1) HAP's plan, with every baseline priced; DP-CP and the baseline predicted best.
    std::vector<Planned> candidates;
    candidates.push_back(planOne(r, graph, importOptions, priced, "", true, round));
    std::string best;
    double bestSeconds = 0;
    for (const plan::Plan::Baseline& b : candidates.front().plan.baselines)
      if (b.applicable && b.estimate.fits &&
          (best.empty() || b.estimate.iterationSeconds < bestSeconds)) {
        best = b.name;
        bestSeconds = b.estimate.iterationSeconds;
      }
    std::vector<std::string> baselines{"dp-cp"};
    if (!best.empty() && best != "dp-cp") baselines.push_back(best);
    for (const std::string& b : baselines) {
      try {
        candidates.push_back(planOne(r, graph, importOptions, priced, b, false, round));
      } catch (const Error& e) {
        if (b == "dp-cp") throw;
        say(l, fmt::format("hap tune: round {}: baseline {} cannot be planned ({}); left out",
                           round, b, e.what()));
      }
    }
    // Round 1 also runs HAP's plan as `hap plan` makes it from the cluster file as given (its own
    // profile, else its inventory): the plan the user has without tuning, which the loop must not
    // return anything measured slower than. A profile the loop measured may price worse (a quick
    // profile does not see --slowdown).
    if (round == 1) {
      cost::Cluster given = cluster;
      db::attachProfile(given, storePath);
      Planned plain = planOne(r, graph, importOptions, given, "", false, round, "hap-given");
      if (plain.key != candidates.front().key) candidates.insert(candidates.begin() + 1, std::move(plain));
    }
    // One program alone (HAP's is DP-CP's): DP-EV too, so that the calibration sees two.
    std::set<std::string> keys;
    for (const Planned& c : candidates) keys.insert(c.key);
    if (round == 1 && keys.size() < 2 && best != "dp-ev")
      candidates.push_back(planOne(r, graph, importOptions, priced, "dp-ev", false, round));

    // (2) Run what no round ran yet.
    bool ranNew = false;
    for (const Planned& c : candidates) {
      checkInterrupt(r);
      TuneRun run;
      run.round = round;
      run.strategy = c.strategy;
      run.planPath = c.path;
      run.profile = c.profile;
      run.predictedSeconds = c.plan.estimate.iterationSeconds;
      const auto seen = measuredByKey.find(c.key);
      if (seen != measuredByKey.end()) {
        const TuneRun& earlier = seen->second;
        run.measuredSeconds = earlier.measuredSeconds;
        run.spreadSeconds = earlier.spreadSeconds;
        run.measuredSteps = earlier.measuredSteps;
        run.runId = earlier.runId;
        run.reused = earlier.round;
        run.sameAs = earlier.strategy;
        say(l, fmt::format("hap tune: round {}: {} is the program {} of round {} ran; its "
                           "measurement is reused",
                           round, c.strategy, earlier.strategy, earlier.round));
      } else {
        const std::string label = fmt::format("hap tune round {} {}", round, c.strategy);
        say(l, fmt::format("hap tune: round {}: running {} ({} + {} steps, predicted {})", round,
                           c.strategy, r.warmup, r.steps, ms(run.predictedSeconds)));
        run.runId = r.emitKind.empty() ? launch(r, c.path, storePath, shares, slowdowns, label, l)
                                       : launchEmitted(r, c.path, storePath, label, l);
        const Measured m = measure(db::Store(storePath, db::Store::Mode::ReadOnly), run.runId);
        if (m.steps == 0)
          throw TuneError(
              fmt::format("hap tune: {}: run {} recorded no measured step; give --steps >= 1",
                          label, run.runId));
        run.measuredSeconds = m.mean;
        run.spreadSeconds = m.spread;
        run.measuredSteps = m.steps;
        measuredByKey.emplace(c.key, run);
        ranNew = true;
      }
      if (l) l->onRunFinished(run);
      tr.runs.push_back(run);
    }
    double bestNow = 0;
    for (const auto& [key, run] : measuredByKey)
      if (bestNow == 0 || run.measuredSeconds < bestNow) bestNow = run.measuredSeconds;
    tr.bestSeconds = bestNow;

    // Stop, or (3) calibrate and (4) re-plan in the next round.
    if (measuredByKey.size() < 2)
      result.stopReason =
          "HAP's plan and the baselines are one program: nothing to compare or calibrate";
    else if (round > 1 && !ranNew)
      result.stopReason = fmt::format("round {} re-planned only programs already measured", round);
    else if (round > 1 && bestNow > previousBest * (1 - r.improvement))
      result.stopReason =
          fmt::format("round {} improved the best measured step by {:.1f}% (not more than {:g}%)",
                      round, (1 - bestNow / previousBest) * 100, r.improvement * 100);
    else if (round == r.rounds)
      result.stopReason = fmt::format("--rounds {} reached", r.rounds);
    if (result.stopReason.empty()) {
      tr.calibration = calibrate(storePath, cluster, *base, round);
      currentVersion = splitProfile(tr.calibration.saved).second;
      if (l) l->onCalibrated(round, tr.calibration);
    }
    previousBest = bestNow;
    if (l) l->onRoundFinished(tr);
    result.rounds.push_back(std::move(tr));
    if (!result.stopReason.empty()) break;
  }

  // The lowest measured step among everything run; the fastest baseline beside it.
  for (const TuneRound& tr : result.rounds)
    for (const TuneRun& run : tr.runs) {
      if (run.reused) continue;
      if (result.chosen.strategy.empty() || run.measuredSeconds < result.chosen.measuredSeconds)
        result.chosen = run;
      if (run.baseline() && (result.bestBaseline.strategy.empty() ||
                             run.measuredSeconds < result.bestBaseline.measuredSeconds))
        result.bestBaseline = run;
    }
  if (!r.output.empty()) {
    std::error_code ec;
    fs::copy_file(result.chosen.planPath, r.output, fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw TuneError(fmt::format("{}: cannot write the chosen plan ({}); it is {}", r.output,
                                  ec.message(), result.chosen.planPath));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace hap::tune
