// Process supervision for `hap launch --local` (../shared/DESIGN.md §5): start N worker processes,
// stream their output line by line, hold each to a share of one CPU, and stop all of them as soon
// as one fails, the wall limit passes or the launcher is interrupted. Plain C++ and POSIX (Linux):
// no LibTorch, no Qt, so the desktop app can reuse it.
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
// - CPU shares: a CPU-time quota enforced by the launcher (CpuQuota below), with the semantics
//   of Linux's CFS bandwidth control (cgroup cpu.max) but no root and no cgroups: in each period
//   a worker with share s may use s × period of CPU time (its process, all threads; not processes
//   it starts); once it has, it is SIGSTOPped until the next period. Time a worker spends blocked,
//   e.g. waiting for a peer in a collective, costs it nothing, so a slow rank takes part in a
//   collective at once when it has budget left: it computes s times as fast, but is not held
//   off at fixed times. Limits: a share caps CPU time, it reserves nothing (on a busy machine a
//   worker gets less); the launcher samples CPU clocks, so a worker may overrun its budget by up
//   to a sampling interval, which it owes to the next period; CPU the kernel spends on its
//   behalf (loopback TCP copies) counts against its share, so a throttled rank also sends and
//   receives more slowly than a real device with a network card would. hap launch sets
//   OMP_NUM_THREADS=1 so that a share is a share of one core.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hap::runtime {

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
  std::chrono::milliseconds quotaPeriod{20};  // the CPU-share accounting period (CpuQuota)
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
  // WorkerFailed: the first worker seen to fail; among several seen at once, the lowest index of
  // those killed by a signal, else the lowest index.
  int failedWorker = -1;
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

// "SIGINT", "SIGTERM", "SIGHUP", else "a signal": the signals that interrupt a launch
// (LaunchResult::signal).
const char* interruptName(int signal);

// The CPU-share bookkeeping (the launcher samples CPU clocks and sends the signals): worker w
// with share s may run while the CPU time it used in the current period, [k·period,
// (k+1)·period), is below s × period minus what it overran in the period before. Pure: no clocks,
// no signals, so tests drive it with made-up times.
class CpuQuota {
 public:
  using Nanos = std::chrono::nanoseconds;

  // Shares must be in (0, 1] (std::invalid_argument otherwise); period > 0.
  CpuQuota(std::vector<double> shares, Nanos period);

  bool throttled(size_t worker) const { return shares_[worker] < 1; }
  bool anyThrottled() const;
  // Records that `worker` has used `cpu` CPU time in all at time `t` since the start (t and cpu
  // non-decreasing per worker) and says whether it may run now. Always true when not throttled.
  bool mayRun(size_t worker, Nanos t, Nanos cpu);
  // CPU time `worker` may still use in the period of its last mayRun (0 when spent).
  Nanos remaining(size_t worker, Nanos cpu) const;
  // The start of the period after the one holding `t`.
  Nanos nextPeriod(Nanos t) const { return (t / period_ + 1) * period_; }

 private:
  struct Account {
    int64_t period = -1;  // the period of the last mayRun
    Nanos start{0};       // CPU time used before that period
    Nanos budget{0};      // CPU time allowed in it: share × period minus the overrun before
  };
  std::vector<double> shares_;
  Nanos period_;
  std::vector<Account> accounts_;
};

}  // namespace hap::runtime
