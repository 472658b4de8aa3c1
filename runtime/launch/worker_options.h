// hap-worker's options, defined once (../shared/DESIGN.md §5): the typed struct every part of a
// run fills and reads (the worker, `hap launch`, the app's Run dock, the preflight, the run
// recording), its command line (bindWorkerOptions: option names, defaults, checks and help text,
// written only there), and the argument list it becomes where a worker process is started or a
// launch script is written (workerArguments). Plain C++: no LibTorch, no Qt, and no CLI11 in this
// header.
//
// Contract:
// - workerArguments(o) holds exactly the options whose value differs from WorkerOptions{}'s, each
//   once, in the order of hap-worker --help; numbers in their shortest form that CLI11 reads back
//   to the same value. The plan is not among them: the caller puts it first (a process gets its
//   absolute path, a script "$HAP_PLAN").
// - Round trip: parseWorkerArguments(workerArguments(o)) equals o but for planPath (the caller's),
//   and hap-worker's command line `hap-worker o.planPath workerArguments(o)...` gives o, for every
//   field that is an option (not `stop`, nor data.seed, data.checkWholeFile, optimizer.beta1,
//   beta2 and eps, which the worker sets itself).
// - parseWorkerArguments reads the arguments a user gives the workers (`hap launch ... -- ARGS`)
//   through the same binding; a bad argument is a hap::Error whose message names it.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/cost/bucketed_gradients.h"
#include "runtime/data/data_options.h"
#include "runtime/train/optimizer_options.h"

namespace CLI {
class App;
}

namespace hap::runtime {

struct WorkerOptions {
  std::string planPath;         // PLAN: the plan file (hap plan -o)
  std::string modelPath;        // --model; empty: the plan's model path
  int64_t steps = 20;           // --steps: optimizer steps measured (after the warm-up)
  int64_t warmup = 2;           // --warmup: steps run first and left out of the timing statistics
  uint64_t seed = 0;            // --seed: random ops (dropout) and synthetic data
  DataOptions data;             // --data (kind), --data-path (path), --token-dtype (tokenDtype)
  // --optimizer (kind), --lr, --momentum, --weight-decay, --clip-norm (beta1, beta2 and eps are
  // no options: LibTorch's defaults).
  OptimizerOptions optimizer;
  std::string metricsPath;      // --metrics: JSON lines, one per step and a summary (rank 0 writes)
  std::string tracePath;        // --trace: Chrome trace of the last measured steps of every rank (rank 0)
  std::string checkpointDir;    // --checkpoint-dir: consolidated checkpoints step-N.pt here
  int64_t checkpointEvery = 0;  // --checkpoint-every N steps; 0: only at the end when checkpointDir is set
  std::string resumePath;       // --resume: a checkpoint to continue from
  std::string exportPath;       // --export: the trained model as a TorchScript file (rank 0; creates its folder)
  int threads = 0;              // --threads: intra-op threads; 0 keeps LibTorch's default
  bool cuda = false;            // --cuda: NCCL and CUDA tensors (a CUDA build of LibTorch)
  // --slowdown F (>= 1): an emulated slower device; the rank's computation, forward and backward,
  // takes F times its time (a sleep after its ops) while its collectives run at full speed
  // (ExecutorOptions::slowdown, runtime/core/executor.h).
  double slowdown = 1;
  // --bucket-mb (in MiB there): gradient buckets all-reduced during backward; <= 0: one bucket
  // after backward. Left at the default and not given (bucketBytesGiven false): the size the plan
  // was priced with (Plan::gradientBucketBytes, hap plan --bucket-mb; cost/bucketed_gradients.h).
  int64_t bucketBytes = cost::kGradientBucketBytes;
  bool bucketBytesGiven = false;
  // --check: beside every step, the single-device program on the whole batch; the loss, every
  // gradient after every reduction, and the parameters and buffers after every step are
  // compared, each step from the same state (exactness_check.h).
  bool check = false;
  bool checkFloat32 = false;  // --check-dtype float32: the model's float32 against a float64 shadow
  std::optional<double> checkRtol, checkAtol;  // --check-rtol, --check-atol: CheckTolerance::forDtype's otherwise
  // --db, --run-id: recording into the profile store (db/store.h), both or neither. Every rank
  // opens the store at dbPath and adds to run runId (begun by `hap launch --db`, which also
  // finishes it): its StepRecord after every step, written in whole steps, one transaction per
  // batch of steps (at most every few steps or seconds, and at the end, so recording costs a step
  // far less than a millisecond), and at the end its measured per-stage split (StageRecord per
  // Plan::stages).
  std::string dbPath;
  int64_t runId = 0;
  // --record FILE: the whole run recorded into a profile store file by rank 0 alone, for a launch
  // that no `hap launch --db` begins (the scripts of `hap launch --emit ... --record`): at the end
  // every rank's steps and per-stage split are gathered to rank 0, which adds the plan, its
  // cluster and the run (succeeded) to FILE, creating it when missing (gathered_recording.h).
  // `hap runs import FILE` or `hap tune --emit` read it back. Excludes --db.
  std::string recordPath;
  // No option: set by hap-worker's SIGTERM/SIGINT handler (to the signal's number); the rank stops
  // after the step it is in, its recorded steps written, with a RuntimeError saying so. Null: never.
  const std::atomic<int>* stop = nullptr;

  bool operator==(const WorkerOptions&) const = default;
};

// What bindWorkerOptions defines.
enum class WorkerBinding {
  // hap-worker's own command line: the plan (a required positional) and every option, files that
  // must exist checked (the plan, --resume).
  Worker,
  // The options after the plan as a launcher reads them (`hap launch ... -- ARGS`): no plan, and
  // no file checked here (the workers check them where they run).
  Arguments,
};

// Defines hap-worker's command line on `app`, bound to `o`: an option given on the command line
// sets its field; one not given leaves it as `o` had it (and as the help shows it). The one place
// where the worker's option names, checks and help text are written.
void bindWorkerOptions(CLI::App& app, WorkerOptions& o, WorkerBinding binding = WorkerBinding::Worker);

// hap-worker's arguments after the plan for `o` (contract above).
std::vector<std::string> workerArguments(const WorkerOptions& o);

// `args` (hap-worker's options after the plan, as on its command line) read onto `base` through
// bindWorkerOptions(WorkerBinding::Arguments). `given` (optional) receives the names of the
// options the arguments hold ("--steps"). hap::Error "hap-worker arguments: <what CLI11 says>",
// naming the argument, for an unknown option, a stray word, a value that does not convert or
// fails its check.
WorkerOptions parseWorkerArguments(const std::vector<std::string>& args, const WorkerOptions& base = {},
                                   std::vector<std::string>* given = nullptr);

// A number as workerArguments writes it: the shortest text that reads back (as CLI11 reads it) to
// the same double; integers as integers.
std::string workerNumber(double value);

}  // namespace hap::runtime
