#include "app/cli/profile_command.h"

#include <stdlib.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "db/store.h"
#include "engine/base/error.h"
#include "engine/cost/cluster.h"
#include "engine/cost/cluster_yaml.h"
#include "engine/cost/profile.h"
#include "runtime/comm/communicator.h"
#include "runtime/launch/free_port.h"
#include "runtime/core/heap_policy.h"
#include "runtime/launch/launcher.h"
#include "runtime/core/profiler.h"
#include "runtime/core/worker_env.h"

namespace hap::cli {
namespace {

namespace fs = std::filesystem;

struct ProfileArgs {
  std::string name, deviceType = "cpu", db, exportCluster;
  int ranks = 2, threads = 1;
  bool quick = false, cuda = false;
  double cpuShare = 0;  // > 0: the compute benchmarks run in a child held to this share of one core
  bool merge = false;   // save onto the latest version of `name` (mergeOnto)
  std::vector<std::string> linkClasses{"intra"};  // the classes the collective fits are stored under
};

struct WorkerArgs {
  std::string out;
  bool quick = false, cuda = false;
};

struct ComputeWorkerArgs {
  std::string out;
  bool quick = false;
  int threads = 1;
  double meanOverSeconds = 0;
};

// A loop long enough to span many periods of the CPU quota (20 ms by default): at share 0.25 its
// wall time is off by at most about one period's stopped part, 15 ms, i.e. 3% of 0.5 s.
double meanOverSeconds(bool quick) { return quick ? 0.25 : 0.5; }

std::string hostName() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0 || buffer[0] == '\0') return "localhost";
  return buffer;
}

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string selfExecutable() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(fmt::format("hap profile: cannot find its own executable (/proc/self/exe: {})", ec.message()));
  return self.string();
}

// A new empty file in the temporary folder for a child's result, removed when it goes out of
// scope.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& prefix) {
    const fs::path dir = fs::temp_directory_path();
    std::string name = (dir / (prefix + "-XXXXXX")).string();
    const int fd = ::mkstemp(name.data());
    if (fd < 0) throw Error(fmt::format("hap profile: cannot create a temporary file in {}", dir.string()));
    ::close(fd);
    path = name;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

void say(std::string_view line) { std::cout << line << std::endl; }

// Runs `ranks` local `hap profile-worker` processes and returns rank 0's fits.
std::vector<cost::CollectiveFit> measureCollectives(const ProfileArgs& a) {
  const TempFile out("hap-profile");
  const std::string& path = out.path;

  const std::string self = selfExecutable();
  const int port = runtime::freeTcpPort();
  std::vector<runtime::WorkerCommand> commands;
  for (int r = 0; r < a.ranks; ++r) {
    runtime::WorkerCommand c;
    c.program = self;
    c.args = {"profile-worker", "--out", path};
    if (a.quick) c.args.push_back("--quick");
    if (a.cuda) c.args.push_back("--cuda");
    c.env = {{"RANK", std::to_string(r)},
             {"LOCAL_RANK", std::to_string(r)},
             {"WORLD_SIZE", std::to_string(a.ranks)},
             {"LOCAL_WORLD_SIZE", std::to_string(a.ranks)},
             {"MASTER_ADDR", "127.0.0.1"},
             {"MASTER_PORT", std::to_string(port)},
             {"OMP_NUM_THREADS", "1"}};  // as hap launch runs ranks
    commands.push_back(std::move(c));
  }
  std::vector<std::string> prefixes;
  for (int r = 0; r < a.ranks; ++r) prefixes.push_back(fmt::format("[rank {}] ", r));
  const runtime::LineSink prefixed = runtime::prefixedSink(prefixes);
  // Rank 0's progress lines are this command's; anything else keeps its rank prefix.
  const runtime::LineSink sink = [&](int worker, runtime::OutputStream stream, std::string_view line) {
    if (worker == 0 && stream == runtime::OutputStream::Out)
      say(line);
    else
      prefixed(worker, stream, line);
  };
  runtime::LaunchOptions options;
  options.timeout = std::chrono::seconds(a.quick ? 180 : 1200);
  const runtime::LaunchResult result = runtime::runWorkers(commands, sink, options);
  if (result.outcome == runtime::LaunchResult::Outcome::TimedOut)
    throw Error(fmt::format("hap profile: the collective benchmarks did not finish within {} s",
                            options.timeout.count() / 1000));
  if (result.outcome != runtime::LaunchResult::Outcome::Succeeded) {
    const int failed = std::max(result.failedWorker, 0);
    const runtime::WorkerExit& e = result.workers[static_cast<size_t>(failed)];
    throw Error(fmt::format("hap profile: collective benchmark rank {} failed ({}): {}", failed, runtime::describeExit(e),
                            e.lastErrorLine.empty() ? "(it printed no error)" : e.lastErrorLine));
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return runtime::collectiveFitsFromJson(text.str(), path);
}

// Runs the compute benchmarks in a `hap profile-compute` child held to a.cpuShare of one core by
// the launcher's CPU-time quota (the quota hap launch --cpu-share puts on a rank), timing each size
// by the mean over a loop, and returns its figures.
cost::DeviceProfile measureComputeThrottled(const ProfileArgs& a) {
  const TempFile out("hap-profile-compute");
  const std::string& path = out.path;

  runtime::WorkerCommand c;
  c.program = selfExecutable();
  c.args = {"profile-compute", "--out", path, "--threads", std::to_string(a.threads), "--mean-over",
            fmt::format("{}", meanOverSeconds(a.quick))};
  if (a.quick) c.args.push_back("--quick");
  c.env = {{"OMP_NUM_THREADS", std::to_string(a.threads)}};
  c.cpuShare = a.cpuShare;
  const runtime::LineSink prefixed = runtime::prefixedSink({"[compute] "});
  const runtime::LineSink sink = [&](int worker, runtime::OutputStream stream, std::string_view line) {
    if (stream == runtime::OutputStream::Out) say(line);
    else prefixed(worker, stream, line);
  };
  runtime::LaunchOptions options;
  options.timeout = std::chrono::seconds(static_cast<int>((a.quick ? 300 : 1200) / a.cpuShare));
  const runtime::LaunchResult result = runtime::runWorkers({c}, sink, options);
  if (result.outcome == runtime::LaunchResult::Outcome::TimedOut)
    throw Error(fmt::format("hap profile: the compute benchmarks at CPU share {:g} did not finish within {} s",
                            a.cpuShare, options.timeout.count() / 1000));
  if (result.outcome != runtime::LaunchResult::Outcome::Succeeded) {
    const runtime::WorkerExit& e = result.workers.front();
    throw Error(fmt::format("hap profile: the compute benchmarks at CPU share {:g} failed ({}): {}", a.cpuShare,
                            runtime::describeExit(e), e.lastErrorLine.empty() ? "(it printed no error)" : e.lastErrorLine));
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return runtime::deviceProfileFromJson(text.str(), path);
}

// `fresh` saved as the next version of the latest version of its name: that version's devices and
// collective fits, with fresh's device entry added or replaced (a new measurement replaces the
// entry whole, calibration terms included) and fresh's collective fits replacing those of the
// same collective, algorithm and link class; the others are kept. Returns `fresh` when the store
// holds no version of the name yet.
cost::Profile mergeOnto(const db::Store& store, cost::Profile fresh) {
  std::optional<cost::Profile> base = store.loadProfile(fresh.name);
  if (!base) {
    say(fmt::format("hap profile: --merge: the store holds no profile {} yet; saving the first version", fresh.name));
    return fresh;
  }
  cost::Profile out = std::move(*base);
  say(fmt::format("hap profile: --merge onto {} v{} ({} device types, {} collective fits)", out.name, out.version,
                  out.devices.size(), out.collectives.size()));
  const int from = out.version;
  out.version = 0;
  out.createdAt = fresh.createdAt;
  if (out.host != fresh.host && out.host.find(fresh.host) == std::string::npos)
    out.host = out.host.empty() ? fresh.host : out.host + ", " + fresh.host;
  out.note = fmt::format("{} (merged onto v{})", fresh.note, from);
  for (cost::DeviceProfile& d : fresh.devices) {
    auto same = std::find_if(out.devices.begin(), out.devices.end(),
                             [&](const cost::DeviceProfile& x) { return x.deviceType == d.deviceType; });
    if (same != out.devices.end()) *same = std::move(d);
    else out.devices.push_back(std::move(d));
  }
  for (cost::CollectiveFit& f : fresh.collectives) {
    auto same = std::find_if(out.collectives.begin(), out.collectives.end(), [&](const cost::CollectiveFit& x) {
      return x.collective == f.collective && x.algorithm == f.algorithm && x.linkClass == f.linkClass;
    });
    if (same != out.collectives.end()) *same = std::move(f);
    else out.collectives.push_back(std::move(f));
  }
  return out;
}

// The largest sample's rate of `family` in `dtype` (FLOP/s or bytes/s), 0 when not measured.
double largestRate(const cost::DeviceProfile& d, cost::OpFamily family, ir::DType dtype) {
  const cost::OpThroughput* o = d.find(family, dtype);
  if (!o || o->samples.empty()) return 0;
  return o->samples.back().work / o->samples.back().seconds;
}

// A cluster inventory of one machine of a.ranks devices whose figures are the measured ones.
void exportCluster(const ProfileArgs& a, const cost::Profile& p) {
  const cost::DeviceProfile& d = *p.device(a.deviceType);
  cost::Cluster c;
  c.name = p.name;
  c.description = fmt::format("measured by hap profile on {} at {} ({})", p.host, p.createdAt, d.description);
  c.profile = p.name;
  cost::DeviceType t;
  t.name = a.deviceType;
  t.flops32 = largestRate(d, cost::OpFamily::MatMul, ir::DType::Float32);
  t.flops64 = largestRate(d, cost::OpFamily::MatMul, ir::DType::Float64);
  t.flops16 = largestRate(d, cost::OpFamily::MatMul, ir::DType::Float16);
  // A GPU's memory is its own; the CPU ranks of one machine share its RAM.
  t.memoryBytes = runtime::deviceMemoryBytes(a.cuda) / (a.cuda ? 1 : std::max(1, a.ranks));
  t.memoryBandwidth = d.memoryBandwidth;
  const cost::OpThroughput* elementwise = d.find(cost::OpFamily::Elementwise, ir::DType::Float32);
  t.opOverheadSeconds = elementwise ? elementwise->samples.front().seconds : 0;
  t.source = fmt::format("hap profile{} on {}, {}: matmul rates at the largest size, op_overhead = the smallest "
                         "elementwise op, memory_bandwidth = a large copy",
                         a.quick ? " --quick" : "", p.host, p.createdAt);
  c.types.push_back(t);
  cost::Machine m;
  m.name = p.host;
  m.host = p.host;
  m.deviceType = 0;
  m.count = a.ranks;
  if (a.ranks >= 2) {
    const cost::CollectiveFit* ring = p.collective(cost::Collective::AllReduce, cost::LinkClass::Intra, "ring");
    if (!ring) ring = p.collective(cost::Collective::AllReduce, cost::LinkClass::Inter, "ring");
    if (!ring) throw Error("hap profile: no all-reduce ring fit to take the machine's link from");
    if (!std::isfinite(ring->link.bandwidth))
      throw Error(fmt::format("--export-cluster {}: the all-reduce fit found no bandwidth term (its time did not grow "
                              "with size); re-run hap profile without --quick for larger sizes",
                              a.exportCluster));
    m.link = ring->link;
  }
  c.machines.push_back(m);
  cost::saveCluster(c, a.exportCluster);
  cost::loadCluster(a.exportCluster);  // what it wrote must load (ClusterError otherwise)
  say(fmt::format("cluster inventory written to {}", a.exportCluster));
}

int runProfile(const ProfileArgs& a) {
  runtime::retainFreedHeapMemory();  // measure with the heap hap-worker runs with
  const auto start = std::chrono::steady_clock::now();
  const std::string dbPath = a.db.empty() ? db::defaultPath() : a.db;
  db::Store store(dbPath);  // fails fast on a bad --db, before minutes of measuring

  cost::Profile p;
  p.host = hostName();
  p.name = a.name.empty() ? p.host : a.name;
  p.createdAt = utcNow();
  p.note = fmt::format("hap profile{}{} --device-type {} --ranks {} --threads {}{}", a.quick ? " --quick" : "",
                       a.cuda ? " --cuda" : "", a.deviceType, a.ranks, a.threads,
                       a.cpuShare > 0 ? fmt::format(" --cpu-share {:g}", a.cpuShare) : std::string());

  cost::DeviceProfile device;
  if (a.cpuShare > 0) {
    say(fmt::format("hap profile: compute benchmarks on the CPU held to share {:g} of one core ({} thread{}{}; each "
                    "size timed by the mean over {:g} s)",
                    a.cpuShare, a.threads, a.threads == 1 ? "" : "s", a.quick ? ", quick" : "", meanOverSeconds(a.quick)));
    device = measureComputeThrottled(a);
    device.description += fmt::format(", CPU share {:g}", a.cpuShare);
  } else {
    say(fmt::format("hap profile: compute benchmarks on {} ({} thread{}{})", a.cuda ? "GPU 0" : "the CPU", a.threads,
                    a.threads == 1 ? "" : "s", a.quick ? ", quick" : ""));
    runtime::ComputeBenchmarkOptions compute;
    compute.threads = a.threads;
    compute.quick = a.quick;
    compute.cuda = a.cuda;
    compute.progress = say;
    device = runtime::benchmarkCompute(compute);
  }
  device.deviceType = a.deviceType;
  p.devices.push_back(std::move(device));

  if (a.ranks >= 2) {
    say(fmt::format("hap profile: collective benchmarks among {} local ranks{}", a.ranks,
                    a.cpuShare > 0 ? " (not throttled)" : ""));
    // One measurement, stored under every link class asked for: on one host, loopback stands for
    // the links inside and between the machines of an emulated cluster.
    for (const cost::CollectiveFit& f : measureCollectives(a))
      for (const std::string& name : a.linkClasses) {
        cost::CollectiveFit stored = f;
        stored.linkClass = *cost::parseLinkClass(name);
        p.collectives.push_back(std::move(stored));
      }
  } else {
    say("hap profile: --ranks 1, no collective benchmarks");
  }

  if (a.merge) p = mergeOnto(store, std::move(p));
  cost::validate(p, "hap profile");
  p.version = store.saveProfile(p);
  say(fmt::format("profile {} v{} saved to {}", p.name, p.version, store.path()));
  if (!a.exportCluster.empty()) exportCluster(a, p);
  say(fmt::format("hap profile: done in {:.1f} s",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  return 0;
}

int runProfileWorker(const WorkerArgs& a) {
  runtime::retainFreedHeapMemory();  // as hap-worker: collectives' buffers are not faulted in again per call
  try {
    const runtime::WorkerEnv env = runtime::WorkerEnv::fromEnvironment();
    std::unique_ptr<runtime::Communicator> comm = runtime::Communicator::connect(env, a.cuda);
    runtime::CollectiveBenchmarkOptions options;
    options.quick = a.quick;
    options.progress = say;
    const std::vector<cost::CollectiveFit> fits = runtime::benchmarkCollectives(*comm, options);
    if (comm->rank() == 0) {
      const std::string partial = a.out + ".partial";
      {
        std::ofstream out(partial, std::ios::trunc);
        out << runtime::collectiveFitsToJson(fits);
        if (!out.flush()) throw Error(fmt::format("{}: cannot write the collective fits", partial));
      }
      fs::rename(partial, a.out);
    }
    comm->barrier();
    return 0;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // c10::Error and friends: a collective failed; name it rather than abort.
    std::string what = e.what();
    if (const size_t cut = what.find("\nException raised from"); cut != std::string::npos) what.resize(cut);
    throw Error("profile-worker: " + what);
  }
}

int runProfileCompute(const ComputeWorkerArgs& a) {
  runtime::retainFreedHeapMemory();  // as hap profile and hap-worker
  runtime::ComputeBenchmarkOptions compute;
  compute.threads = a.threads;
  compute.quick = a.quick;
  compute.meanOverSeconds = a.meanOverSeconds;
  compute.progress = say;
  const cost::DeviceProfile device = runtime::benchmarkCompute(compute);
  const std::string partial = a.out + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << runtime::deviceProfileToJson(device);
    if (!out.flush()) throw Error(fmt::format("{}: cannot write the compute figures", partial));
  }
  fs::rename(partial, a.out);
  return 0;
}

}  // namespace

void addProfileCommand(CLI::App& app, int& exitCode) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Measure this machine: op throughput per op family, size and dtype, memory bandwidth, and collective latency "
      "and bandwidth among local ranks; store the result as the next version of a profile in the profile store, "
      "optionally exporting a cluster inventory with the measured numbers");
  cmd->add_option("--name", args->name, "Profile name (default: this host's name)");
  cmd->add_option("--device-type", args->deviceType, "The device type the figures belong to (a cluster's device_types key)")
      ->capture_default_str();
  cmd->add_option("--ranks", args->ranks, "Local ranks for the collective benchmarks (1: no collectives)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--threads", args->threads,
                  "Intra-op threads of the compute benchmarks (hap launch runs ranks with 1)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--quick", args->quick, "Fewer sizes and repeats: well under a minute (tests)");
  cmd->add_flag("--cuda", args->cuda, "Benchmark GPU 0 (and NCCL among the ranks' GPUs); needs LibTorch with CUDA");
  cmd->add_option("--db", args->db, "Profile store (default: $HAP_DB, else $XDG_DATA_HOME/hap/profiles.db)")
      ->type_name("PATH");
  cmd->add_option("--export-cluster", args->exportCluster,
                  "Also write a cluster inventory (one machine of --ranks devices) with the measured figures")
      ->type_name("FILE.yaml");
  CLI::Option* share =
      cmd->add_option("--cpu-share", args->cpuShare,
                      "Measure the compute as a rank of `hap launch --cpu-share S` runs: in a child process held to "
                      "share S of one core by the same CPU-time quota, each size timed by the mean over a loop of "
                      "0.5 s (--quick: 0.25 s). Use one --device-type per share. The collectives are not throttled")
          ->check(CLI::Range(1e-3, 1.0))
          ->type_name("S");
  share->excludes("--cuda");
  cmd->add_flag("--merge", args->merge,
                "Save onto the latest version of --name: its other device types and collective fits are kept, this "
                "--device-type's entry is added or replaced, and re-measured collective fits replace theirs; so "
                "several runs (one per device type, or per machine) build one profile");
  cmd->add_option("--link-class", args->linkClasses,
                  "The link classes the collective fits are stored under: intra (ranks inside one machine), inter "
                  "(between machines), or both, e.g. intra,inter for a cluster emulated on this host whose "
                  "machines talk over loopback")
      ->delimiter(',')
      ->check(CLI::IsMember({"intra", "inter"}))
      ->capture_default_str();
  cmd->callback([args, &exitCode] {
    try {
      exitCode = runProfile(*args);
    } catch (const Error&) {
      throw;
    } catch (const CLI::Error&) {
      throw;
    } catch (const std::exception& e) {
      // c10::Error and friends from a benchmark: name it rather than abort.
      std::string what = e.what();
      if (const size_t cut = what.find("\nException raised from"); cut != std::string::npos) what.resize(cut);
      throw Error("hap profile: " + what);
    }
  });

  auto worker = std::make_shared<WorkerArgs>();
  CLI::App* hidden = app.add_subcommand("profile-worker", "One rank of hap profile's collective benchmarks");
  hidden->group("");  // internal: started by hap profile with the torchrun environment
  hidden->add_option("--out", worker->out, "Where rank 0 writes the fits (JSON)")->required();
  hidden->add_flag("--quick", worker->quick);
  hidden->add_flag("--cuda", worker->cuda);
  hidden->callback([worker, &exitCode] { exitCode = runProfileWorker(*worker); });

  auto compute = std::make_shared<ComputeWorkerArgs>();
  CLI::App* computeWorker = app.add_subcommand("profile-compute", "hap profile's compute benchmarks, in a child process");
  computeWorker->group("");  // internal: started by hap profile --cpu-share, held to the share
  computeWorker->add_option("--out", compute->out, "Where to write the figures (JSON)")->required();
  computeWorker->add_flag("--quick", compute->quick);
  computeWorker->add_option("--threads", compute->threads)->check(CLI::Range(1, 1024));
  computeWorker->add_option("--mean-over", compute->meanOverSeconds)->check(CLI::NonNegativeNumber);
  computeWorker->callback([compute, &exitCode] {
    try {
      exitCode = runProfileCompute(*compute);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (const size_t cut = what.find("\nException raised from"); cut != std::string::npos) what.resize(cut);
      throw Error("profile-compute: " + what);
    }
  });
}

}  // namespace hap::cli
