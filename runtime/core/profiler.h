// Microbenchmarks of the machine a process runs on, for the profile store (`hap profile`,
// ../shared/DESIGN.md §2: "metrics + microbenchmarks → SQLite profiles → calibrated cost model").
//
// Contract:
// - Work is counted exactly as the planner counts it: every benchmarked call is also built as a
//   one-node ir::Graph and priced by ir::nodeCost (docs/op-costs.md), so a measured sample of
//   `work` FLOPs (matmul, convolution) or bytes read + written (the other families) is the time
//   the cost model looks up for a node of that work.
// - A time is the median over repeats, after a warm-up call, of the seconds per call; calls far
//   shorter than a millisecond are timed in batches. On a GPU the device is synchronised around
//   every timed batch.
// - Collective sizes are full-tensor bytes as collective_fit.h defines them, in float32, with
//   even shares; every repeat starts after a barrier and counts the slowest rank's time.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/cost/profile.h"
#include "runtime/comm/communicator.h"

namespace hap::runtime {

// Receives one progress line (no newline), e.g. "matmul float32: 4 sizes, 12.3 GFLOP/s at the
// largest".
using ProgressSink = std::function<void(std::string_view line)>;

struct ComputeBenchmarkOptions {
  int threads = 1;     // intra-op threads (at::set_num_threads) for the whole run; ≥ 1
  bool quick = false;  // 3 sizes per family and few repeats (tests); else 4 or more sizes
  // On GPU 0 (CUDA builds only; RuntimeError otherwise), adding float16 and bfloat16 to the
  // float32 and float64 the CPU runs.
  bool cuda = false;
  // > 0: time every call by the mean seconds per call of calls run back to back for at least this
  // many seconds of wall clock, instead of the median of ~2 ms batches. For a process held to a
  // CPU share by a CPU-time quota (launcher.h): one short call runs at full speed inside the
  // quota's period, only a loop over many periods sees the share.
  double meanOverSeconds = 0;
  ProgressSink progress;
};

// Times one representative forward op per cost::OpFamily at several sizes and dtypes, and the
// memory bandwidth (a copy of a large buffer), on this process's CPU (or GPU). Returns the device's
// figures with `description` (where it ran: "cpu: <model>, 1 thread") and `threads` set;
// `deviceType` is left for the caller. Samples are sorted by strictly increasing work
// (cost::validate holds).
cost::DeviceProfile benchmarkCompute(const ComputeBenchmarkOptions& options);

// A device profile as JSON text ({"format": "hap-device-profile", "version": 1, ...}: every field
// of cost::DeviceProfile) and back, for a benchmark run in a child process (hap profile
// --cpu-share).
// Parsing throws hap::Error naming `origin` for text that is not such a document; the result is not
// validated (cost::validate does that on the whole profile).
std::string deviceProfileToJson(const cost::DeviceProfile& device);
cost::DeviceProfile deviceProfileFromJson(const std::string& text, const std::string& origin);

// The memory of the device benchmarkCompute measures: the machine's RAM (/proc/meminfo
// MemTotal) for the CPU, GPU 0's memory with `cuda`. RuntimeError when it cannot be read.
double deviceMemoryBytes(bool cuda);

struct CollectiveBenchmarkOptions {
  bool quick = false;  // 4 KiB … 4 MiB; else 4 KiB … 256 MiB (×4 steps)
  ProgressSink progress;  // called on rank 0 only
};

// Run by every rank of `comm` (size ≥ 2), in the same order: times all-reduce, all-gather
// (padded and grouped), reduce-scatter (padded and grouped), all-to-all and broadcast, and on
// rank 0 fits each to its collective_fit.h formula (link class Intra: all ranks on one machine)
// and returns the fits (all-reduce as "ring"); other ranks return nothing. Throws RuntimeError
// for a world of one and cost::FitError when a fit is impossible.
std::vector<cost::CollectiveFit> benchmarkCollectives(Communicator& comm, const CollectiveBenchmarkOptions& options);

// Collective fits as JSON text ({"format": "hap-collective-fits", "version": 1, "fits": [...]};
// an infinite bandwidth, from a pure latency fit, is written as null) and back. Parsing throws
// hap::Error naming `origin` for text that is not such a document.
std::string collectiveFitsToJson(const std::vector<cost::CollectiveFit>& fits);
std::vector<cost::CollectiveFit> collectiveFitsFromJson(const std::string& text, const std::string& origin);

}  // namespace hap::runtime
