// Process supervision for `hap launch --local` (DESIGN.md §5): start N worker processes, stream
// their output line by line, hold each to a share of one CPU, and stop all of them as soon as one
// fails, the wall limit passes or the launcher is interrupted. Plain C++ and POSIX (Linux): no
// LibTorch, no Qt, so the desktop app can reuse it.
//
// Contract:
// - Every worker runs in its own process group with stdin from /dev/null; signals go to the
//   whole group, so whatever a worker starts (a shell's children) is stopped with it. When a
//   worker's leader exits, what is left of its group is killed (SIGKILL): a finished rank leaves
//   nothing behind. Workers also get SIGKILL if the launcher itself dies (PR_SET_PDEATHSIG; it
//   reaches the workers, not their children).
// - Output: every complete line of a worker's stdout or stderr reaches the sink once, whole and
//   in order per stream; a last line without a newline is delivered at end of stream; a line
//   longer than kMaxLineBytes is delivered in pieces.
// - Stopping: SIGTERM (and SIGCONT, so a throttled worker can act on it) to every remaining
//   group, then SIGKILL after the grace period. runWorkers returns only when every worker has
//   been reaped.
// - CPU shares: a duty cycle driven by the launcher (DutyCycle below): in each period a worker
//   with share s runs for s × period and is SIGSTOPped for the rest. This needs no root and no
//   cgroups. Limits: a share caps the fraction of wall time a worker may run; it reserves
//   nothing (on a busy machine a worker gets less); it applies to the whole process, so a worker
//   with T busy threads uses up to T cores during its window (hap launch sets OMP_NUM_THREADS=1
//   for that reason); the granularity is the period (100 ms by default), coarser than a
//   collective, so a stopped rank stalls its peers' collectives until it resumes, which is how
//   a slow device holds up a synchronous step.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hap::rt {

// One process to start.
struct WorkerCommand {
  std::string program;                                   // a path to an executable (not looked up on PATH)
  std::vector<std::string> args;                         // argv[1..]
  std::vector<std::pair<std::string, std::string>> env;  // set on top of the launcher's environment
  double cpuShare = 1;                                   // in (0, 1]; 1: not throttled
};

enum class OutputStream { Out, Err };

// Receives each line (without its newline) of worker `worker`'s output, in order of arrival.
using LineSink = std::function<void(int worker, OutputStream stream, std::string_view line)>;

// A sink that writes "PREFIX[worker]line\n" to the launcher's stdout or stderr (matching the
// worker's stream) with one write, so lines of different workers never interleave mid-line.
LineSink prefixedSink(std::vector<std::string> prefixes);

inline constexpr size_t kMaxLineBytes = 64 * 1024;

struct LaunchOptions {
  std::chrono::milliseconds dutyPeriod{100};  // the CPU-share cycle (DutyCycle)
  std::chrono::milliseconds grace{3000};      // SIGTERM, then SIGKILL after this long
  std::chrono::milliseconds timeout{0};       // overall wall limit; 0: none
  // Polled at least every 50 ms: when it holds a non-zero value (a signal number, set by the
  // caller's signal handler), all workers are stopped and the outcome is Interrupted.
  const std::atomic<int>* interrupt = nullptr;
};

struct WorkerExit {
  bool exited = false;  // ended by exit() (code valid); otherwise killed by `signal`
  int code = 0;
  int signal = 0;
  bool stoppedByLauncher = false;  // it was still running when the launcher began stopping all
  std::string lastErrorLine;       // the last stderr line mentioning "error", else the last
                                   // non-empty stderr line, else the last stdout line
  bool succeeded() const { return exited && code == 0; }
};

struct LaunchResult {
  enum class Outcome { Succeeded, WorkerFailed, TimedOut, Interrupted };
  Outcome outcome = Outcome::Succeeded;
  int failedWorker = -1;  // WorkerFailed: the first worker seen to fail (lowest index on a tie)
  int signal = 0;         // Interrupted: the value of LaunchOptions::interrupt
  std::vector<WorkerExit> workers;
  double seconds = 0;     // wall time from the first start to the last reap
};

// Starts every worker, streams their output to `sink` and waits for all of them (contract
// above). Throws RuntimeError naming the program when a worker cannot be started (after stopping
// the ones already started), and std::invalid_argument for a share outside (0, 1] (callers
// validate user input first).
LaunchResult runWorkers(const std::vector<WorkerCommand>& workers, const LineSink& sink,
                        const LaunchOptions& options = {});

// "exit code 3" or "killed by signal 9 (SIGKILL)".
std::string describeExit(const WorkerExit& e);

// The CPU-share schedule: worker w with share s runs during [offset_w, offset_w + s × period) of
// every period and is stopped otherwise. Offsets are staggered (offset_w = w × period / n) so
// that throttled workers take turns rather than all running at once. Pure bookkeeping: the
// launcher sends the signals.
class DutyCycle {
 public:
  using Nanos = std::chrono::nanoseconds;

  // Shares must be in (0, 1] (std::invalid_argument otherwise); period > 0.
  DutyCycle(std::vector<double> shares, Nanos period);

  bool throttled(size_t worker) const { return shares_[worker] < 1; }
  bool anyThrottled() const;
  // Whether `worker` may run at time `t` since the start (t >= 0).
  bool running(size_t worker, Nanos t) const;
  // The first time after `t` at which some throttled worker starts or stops; Nanos::max() when
  // no worker is throttled. running() is constant for every worker on (t, nextChange(t)).
  Nanos nextChange(Nanos t) const;

 private:
  Nanos onTime(size_t worker) const;
  Nanos offset(size_t worker) const;

  std::vector<double> shares_;
  Nanos period_;
};

}  // namespace hap::rt
