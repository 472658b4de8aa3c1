// A plan run on this machine, one hap-worker per plan device (../shared/DESIGN.md §5): what
// `hap launch --local` does and what the desktop app's launch panel does, in one place. It builds
// the workers' commands (torchrun environment on a free port of 127.0.0.1, OMP_NUM_THREADS=1
// unless set, the CPU share of each rank; the worker options as argument lists), records the run
// in a profile store when asked (launch_recording.h), and supervises the workers with runWorkers
// (launcher.h), whose contract holds: one failing rank stops all, a set interrupt stops all,
// nothing is left behind. Plain C++ and POSIX: no LibTorch, no Qt.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/plan/plan.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/worker_options.h"

namespace hap::runtime {

struct LocalLaunchRequest {
  // Every worker's options: options.planPath is the plan file every worker runs (passed as its
  // absolute path). With dbPath set, options.dbPath and options.runId stay unset: the launch
  // begins the run and sets them.
  WorkerOptions options;
  std::string worker;                   // the hap-worker executable (resolveWorker)
  std::vector<double> cpuShares;        // one per rank in (0, 1]; empty: all 1
  // One per rank, each >= 1: rank r's worker gets --slowdown slowdowns[r] (WorkerOptions::slowdown);
  // empty: every rank options.slowdown. Both with options.slowdown != 1 is an Error.
  std::vector<double> slowdowns;
  int cpuPeriodMs = 20;                 // LaunchOptions::quotaPeriod
  double timeoutSeconds = 0;            // LaunchOptions::timeout; 0: none
  std::chrono::milliseconds grace{3000};  // LaunchOptions::grace
  std::string dbPath;                   // record the run in this profile store; "": not recorded
  std::string label;                    // the recorded run's label
  const std::atomic<int>* interrupt = nullptr;  // LaunchOptions::interrupt
};

// What is known once the run is set up, before any worker starts.
struct LocalLaunchStart {
  int ranks = 0;
  int port = 0;          // MASTER_PORT on 127.0.0.1
  int64_t run = 0;       // the recorded run's id; 0 when not recorded
  std::string worker;    // the executable
  // rank 0's arguments: the plan, workerArguments (every rank's are the same but --slowdown)
  std::vector<std::string> args;
};

struct LocalLaunchResult {
  LocalLaunchStart start;
  LaunchResult result;
};

// The plan's rank count: its devices (every machine's copy of a replicated plan), checked to be
// listed by rank. `expected` > 0 must equal it (hap launch --workers). Error naming `planPath`.
int planRanks(const plan::Plan& p, const std::string& planPath, int expected = 0);

// A per-rank option of a local launch: one value per rank, each in a range.
struct PerRankOption {
  const char* option;   // "--cpu-share", named by every error
  const char* noun;     // "CPU share": "the CPU share of rank 2 is ..."
  const char* example;  // "fractions of one CPU such as 1,0.5,0.25": what to write
  const char* range;    // "(0, 1]"
  const char* meaning;  // "each is the share of one CPU a rank may use, 1 for a full CPU"
  double low, high;     // the range's bounds
  bool lowOpen;         // low itself out of the range
};
extern const PerRankOption kCpuShareOption;  // --cpu-share: (0, 1]
extern const PerRankOption kSlowdownOption;  // --slowdown: [1, inf)

// "1,0.4,..." (one per rank, rank 0 first) or one value for all ranks; "" gives all 1. Error
// naming option.option, saying which value is wrong and what to write.
std::vector<double> parsePerRank(const std::string& text, int ranks, const PerRankOption& option);
// parsePerRank of --cpu-share, of --slowdown.
std::vector<double> parseCpuShares(const std::string& text, int ranks);
std::vector<double> parseSlowdowns(const std::string& text, int ranks);

// A program of this build or installation: <self's folder>/../<folder>/<name> (the build tree:
// app/cli/hap beside app/worker/hap-worker and app/studio/hap-studio), else <self's folder>/<name>,
// else `name` on PATH; "" when none is an executable file. `self`: the running executable ("" reads
// /proc/self/exe).
std::string findProgram(const std::string& name, const std::string& folder, const std::string& self = {});

// `given` (a path, or a name looked up on PATH), else hap-worker of this build (beside `self`'s
// folder: <build>/app/worker/hap-worker for <build>/app/cli/hap or <build>/app/studio/hap-studio),
// next to `self`, or on PATH. `self`: the running executable ("" reads /proc/self/exe). Error
// saying what to build or pass.
std::string resolveWorker(const std::string& given, const std::string& self = {});

// Runs `p` (read from request.options.planPath) as described above. `onStart` (optional) is called on
// the calling thread once the run is recorded and before the first worker starts; `sink` gets
// every line of every worker (launcher.h). Throws Error for a bad request (shares, plan), and
// db::StoreError; a worker that cannot be started throws RuntimeError after its run is marked
// failed. The recorded run is finished from the outcome before this returns.
LocalLaunchResult runLocalLaunch(const plan::Plan& p, const LocalLaunchRequest& request, const LineSink& sink,
                                 const std::function<void(const LocalLaunchStart&)>& onStart = {});

}  // namespace hap::runtime
