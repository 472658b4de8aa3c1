// Recording a worker's part of a run in the profile store (db/store.h; `hap-worker --db PATH
// --run-id N`, begun by `hap launch --db`): every step's wall time split into computation and
// communication, loss, peak memory and CPU time (db::StepRecord), and at the end the measured
// per-stage split of the last iterations (db::StageRecord per Plan::stages), which is what the
// simulator predicts and `hap calibrate` fits against.
//
// Contract:
// - Time split (TimeSplit): an instant covered by a communication span is communication, else one
//   covered by a computation span is computation, else neither (data loading, the exactness
//   check). So compute + communication never exceeds the wall time, even where a gradient
//   bucket's all-reduce overlaps backward. The same rule splits steps and stages.
// - Stages (stageSplit): forward spans map one to one onto the plan's spanned steps and go whole
//   to the stage holding their step; backward, spanned only as a whole, is laid out over the
//   backward stages in proportion to their predicted times (details at stageSplit).
// - Flushing (RunRecorder): step() only queues; a writer thread writes whole steps, one
//   transaction per batch, every kFlushSteps steps or kFlushSeconds, and at the end (also when
//   the worker fails, or stops on SIGTERM after its step). A killed rank loses at most its last
//   unwritten batch, never half a step;
//   the run itself stays `running` until the launcher finishes it or the store's
//   recoverAbandonedRuns marks it aborted.
// Pure functions (no clocks, no store) except processUsage, peakMemoryBytes and RunRecorder.
#pragma once

#include <c10/core/Device.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "db/store.h"
#include "engine/plan/plan.h"

namespace hap::runtime {

// This process's CPU time (user + system, all threads), minor page faults and resident-set
// high-water mark so far.
struct ProcessUsage {
  double cpuSeconds = 0;
  double minorFaults = 0;
  double maxResidentBytes = 0;
};
ProcessUsage processUsage();

// The rank's peak memory so far: on a GPU the caching allocator's peak of allocated bytes (what
// the plan's memory model predicts), else the process's resident-set high-water mark.
double peakMemoryBytes(const c10::Device& device, const ProcessUsage& usage);

// Times of one clock as [start, end) intervals; merged() makes them sorted and disjoint (empty
// ones dropped), which splitTime and layOut require.
using Intervals = std::vector<std::pair<double, double>>;
Intervals merged(Intervals v);

// A stretch of time split into computation and communication (the rule in the contract above).
struct TimeSplit {
  double compute = 0, communication = 0;
};

// The split of [lo, hi) under that rule; `compute` and `communication` merged.
TimeSplit splitTime(const Intervals& compute, const Intervals& communication, double lo, double hi);

// One timed span of an iteration, as the executor records it (Executor::Span's fields): a
// compute step, a collective, "backward" as a whole, or a gradient bucket's all-reduce.
struct TimedSpan {
  std::string name;
  bool communication = false;
  double start = 0, end = 0;
};

// The plan steps the executor spans in forward(), in order: every compute step and every
// collective conversion (executor.cpp: Executor::forward; conversions that move nothing between
// ranks, such as load or slice, get no span).
std::vector<int> spannedSteps(const plan::Plan& plan);

// Lays [lo, hi) out over `stages` (indices into Plan::stages, in execution order), one slice
// each, consecutive, each proportional to the stage's predicted time on device group `group`
// (equal slices when nothing is predicted), and adds each slice's split to out[stage]. Time of
// `communication` before lo goes to the first stage, after hi to the last. `out` has one entry
// per Plan::stages.
void layOut(const plan::Plan& plan, int group, const std::vector<int>& stages, const Intervals& compute,
            const Intervals& communication, double lo, double hi, std::vector<TimeSplit>& out);

// This rank's measured computation and communication per plan stage (Plan::stages) in one
// iteration, from the executor's spans of it (`spanned`: spannedSteps(plan)). Attribution:
// - Forward: the executor spans the steps of spannedSteps() in order, so its k-th span before
//   "backward" is the k-th of them; each goes whole to the forward stage holding its step (a
//   collective conversion's span is that stage's communication, a compute step's its
//   computation; a reshard kernel that is a collective itself is communication). Should the
//   count not match (an executor that spans differently), the forward spans are laid out over
//   the forward stages as backward is.
// - Backward: the executor spans backward only as a whole, plus each gradient bucket's all-reduce
//   (which overlaps it). The whole is laid out over the backward stages in their execution order
//   (layOut: slices proportional to the predicted stage times of this rank's device group), and
//   every bucket span counts in the slice(s) it overlaps in time, the part after backward in the
//   last stage. The duals' collectives run inside backward without spans of their own and count
//   as computation there.
std::vector<TimeSplit> stageSplit(const plan::Plan& plan, int group, const std::vector<int>& spanned,
                                  const std::vector<TimedSpan>& spans);

// Rank `rank`'s StageRecords: the stageSplit of the given iterations, averaged over the measured
// ones (over the warm-up ones only when none was measured; `warmup[i]` says which). Empty when
// there is no iteration.
std::vector<db::StageRecord> stageRecords(const plan::Plan& plan, int rank, int group, const std::vector<int>& spanned,
                                          const std::vector<std::vector<TimedSpan>>& iterations,
                                          const std::vector<bool>& warmup);

// This rank's part of a run recorded in the profile store. step() only queues the record (a lock
// and a copy: microseconds); a writer thread writes the queue in whole steps, one transaction per
// batch, when it holds kFlushSteps steps or kFlushSeconds have passed since the last write, and
// at the end (also when the worker fails: the destructor writes what is queued). So the store's
// latency, and waits for the other ranks' writes, stay out of the training loop, and a killed
// rank loses at most its last batch, never half a step. The store is used by one thread at a
// time: the writer while it runs, then the caller (finish). Store errors become RuntimeError
// naming the rank, raised on the caller's thread at its next step() or at finish().
class RunRecorder {
 public:
  static constexpr size_t kFlushSteps = 32;
  static constexpr double kFlushSeconds = 0.5;  // the app's live charts lag by at most this

  // Recording into run `runId` of the store at `dbPath` (both or neither: RuntimeError
  // otherwise; neither: disabled, every call a no-op). Opens the store and checks that the run
  // exists (RuntimeError naming the rank and the file when not).
  RunRecorder(const std::string& dbPath, int64_t runId, int rank);
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  bool enabled() const;

  // Queues one step.
  void step(const db::StepRecord& r);

  // Writes the queued steps, then the per-stage split; nothing is recorded after.
  void finish(const std::vector<db::StageRecord>& stages);

  // "recorded 4 steps of rank 0 in PATH (run 3; 1 transaction, 0.8 ms writing)".
  std::string summary() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hap::runtime
