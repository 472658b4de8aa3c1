#include "runtime/train/run_recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <sys/resource.h>

#ifdef HAP_HAVE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "runtime/core/runtime_error.h"

namespace hap::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// The length of the part of [lo, hi) that the merged intervals cover.
double covered(const Intervals& m, double lo, double hi) {
  double sum = 0;
  for (const auto& [a, b] : m) sum += std::max(0.0, std::min(b, hi) - std::max(a, lo));
  return sum;
}

}  // namespace

ProcessUsage processUsage() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return {seconds(u.ru_utime) + seconds(u.ru_stime), static_cast<double>(u.ru_minflt),
          1024.0 * static_cast<double>(u.ru_maxrss)};  // Linux: ru_maxrss in KiB
}

double peakMemoryBytes(const c10::Device& device, const ProcessUsage& usage) {
#ifdef HAP_HAVE_CUDA
  if (device.is_cuda()) {
    namespace alloc = c10::cuda::CUDACachingAllocator;
    const alloc::DeviceStats stats = alloc::getDeviceStats(device.index());
    // Index 0 is StatType::AGGREGATE (c10::cuda::CUDACachingAllocator's in 1.13,
    // c10::CachingDeviceAllocator's in 2.x).
    return static_cast<double>(stats.allocated_bytes[0].peak);
  }
#else
  (void)device;
#endif
  return usage.maxResidentBytes;
}

Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& [a, b] : v) {
    if (!(b > a)) continue;
    if (!out.empty() && a <= out.back().second) out.back().second = std::max(out.back().second, b);
    else out.emplace_back(a, b);
  }
  return out;
}

TimeSplit splitTime(const Intervals& compute, const Intervals& communication, double lo, double hi) {
  TimeSplit t;
  t.communication = covered(communication, lo, hi);
  for (const auto& [a, b] : compute) {
    const double from = std::max(a, lo), to = std::min(b, hi);
    if (to > from) t.compute += (to - from) - covered(communication, from, to);
  }
  return t;
}

std::vector<int> spannedSteps(const plan::Plan& plan) {
  static const std::set<std::string> kCollectives = {"all-gather", "reduce-scatter", "all-reduce", "all-to-all"};
  std::vector<int> out;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const plan::PlanStep& s = plan.steps[i];
    if (s.kind == plan::PlanStep::Kind::Compute || kCollectives.count(s.instruction)) out.push_back(static_cast<int>(i));
  }
  return out;
}

void layOut(const plan::Plan& plan, int group, const std::vector<int>& stages, const Intervals& compute,
            const Intervals& communication, double lo, double hi, std::vector<TimeSplit>& out) {
  if (stages.empty() || !(hi > lo)) return;
  std::vector<double> weight;
  double total = 0;
  for (int s : stages) {
    const plan::Stage& st = plan.stages[static_cast<size_t>(s)];
    const double work = group >= 0 && group < static_cast<int>(st.groupComputation.size())
                            ? st.groupComputation[static_cast<size_t>(group)]
                            : st.computationSeconds;
    weight.push_back(std::max(0.0, st.communicationSeconds + work));
    total += weight.back();
  }
  double at = lo;
  for (size_t k = 0; k < stages.size(); ++k) {
    const double share = total > 0 ? weight[k] / total : 1.0 / static_cast<double>(stages.size());
    const double end = k + 1 == stages.size() ? hi : at + share * (hi - lo);
    const TimeSplit t = splitTime(compute, communication, at, end);
    TimeSplit& o = out[static_cast<size_t>(stages[k])];
    o.compute += t.compute;
    o.communication += t.communication;
    at = end;
  }
  out[static_cast<size_t>(stages.front())].communication += covered(communication, -INFINITY, lo);
  out[static_cast<size_t>(stages.back())].communication += covered(communication, hi, INFINITY);
}

std::vector<TimeSplit> stageSplit(const plan::Plan& plan, int group, const std::vector<int>& spanned,
                                  const std::vector<TimedSpan>& spans) {
  std::vector<TimeSplit> out(plan.stages.size());
  std::vector<int> forwardStages, backwardStages;
  std::vector<int> stageOfStep(plan.steps.size(), -1);  // forward stage of each step
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const plan::Stage& st = plan.stages[s];
    (st.backward ? backwardStages : forwardStages).push_back(static_cast<int>(s));
    if (st.backward) continue;
    for (int i = std::max(0, st.firstStep); i < std::min<int>(st.endStep, static_cast<int>(plan.steps.size())); ++i)
      stageOfStep[static_cast<size_t>(i)] = static_cast<int>(s);
  }
  size_t backwardAt = spans.size();
  for (size_t k = spans.size(); k-- > 0;)
    if (spans[k].name == "backward" && !spans[k].communication) {
      backwardAt = k;
      break;
    }
  const bool matched = backwardAt == spanned.size() &&
                       std::all_of(spanned.begin(), spanned.end(), [&](int i) { return stageOfStep[static_cast<size_t>(i)] >= 0; });
  Intervals forwardCompute, forwardCommunication;
  double forwardStart = INFINITY, forwardEnd = -INFINITY;
  for (size_t k = 0; k < backwardAt; ++k) {
    const TimedSpan& sp = spans[k];
    if (matched) {
      TimeSplit& o = out[static_cast<size_t>(stageOfStep[static_cast<size_t>(spanned[k])])];
      (sp.communication ? o.communication : o.compute) += sp.end - sp.start;
    }
    (sp.communication ? forwardCommunication : forwardCompute).emplace_back(sp.start, sp.end);
    forwardStart = std::min(forwardStart, sp.start);
    forwardEnd = std::max(forwardEnd, sp.end);
  }
  if (!matched)
    layOut(plan, group, forwardStages, merged(forwardCompute), merged(forwardCommunication), forwardStart, forwardEnd,
           out);
  if (backwardAt < spans.size()) {
    const TimedSpan& whole = spans[backwardAt];
    Intervals buckets;
    for (size_t k = backwardAt + 1; k < spans.size(); ++k)
      if (spans[k].communication) buckets.emplace_back(spans[k].start, spans[k].end);
    layOut(plan, group, backwardStages, Intervals{std::make_pair(whole.start, whole.end)}, merged(buckets), whole.start,
           whole.end, out);
  }
  return out;
}

std::vector<db::StageRecord> stageRecords(const plan::Plan& plan, int rank, int group, const std::vector<int>& spanned,
                                          const std::vector<std::vector<TimedSpan>>& iterations,
                                          const std::vector<bool>& warmup) {
  const bool anyMeasured = std::find(warmup.begin(), warmup.end(), false) != warmup.end();
  std::vector<TimeSplit> mean(plan.stages.size());
  int used = 0;
  for (size_t i = 0; i < iterations.size(); ++i) {
    if (anyMeasured && warmup[i]) continue;
    const std::vector<TimeSplit> split = stageSplit(plan, group, spanned, iterations[i]);
    for (size_t s = 0; s < split.size(); ++s) {
      mean[s].compute += split[s].compute;
      mean[s].communication += split[s].communication;
    }
    ++used;
  }
  std::vector<db::StageRecord> stages;
  if (used > 0)
    for (size_t s = 0; s < mean.size(); ++s)
      stages.push_back({rank, static_cast<int>(s), mean[s].compute / used, mean[s].communication / used});
  return stages;
}

struct RunRecorder::Impl {
  int rank = 0;
  int64_t run = 0;
  std::string path;
  std::optional<db::Store> store;
  std::thread writer;
  std::mutex mutex;
  std::condition_variable wake;
  // Under mutex:
  std::vector<db::StepRecord> queue;
  bool stopping = false;
  std::string error;  // the store's error that stopped the writer
  size_t recorded = 0, transactions = 0;
  double writing = 0;  // seconds the writer spent in the store

  void writeLoop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait_for(lock, std::chrono::duration<double>(kFlushSeconds),
                    [&] { return stopping || queue.size() >= kFlushSteps; });
      if (!queue.empty()) {
        std::vector<db::StepRecord> batch;
        batch.swap(queue);
        lock.unlock();
        std::string failure;
        const auto start = Clock::now();
        try {
          store->recordSteps(run, batch);
        } catch (const std::exception& e) {
          failure = e.what();
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        lock.lock();
        if (!failure.empty()) {
          error = failure;
          return;
        }
        recorded += batch.size();
        ++transactions;
        writing += seconds;
      }
      if (stopping) return;
    }
  }

  void stopWriter() {
    if (!writer.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_one();
    writer.join();
  }
};

RunRecorder::RunRecorder(const std::string& dbPath, int64_t runId, int rank) : impl_(std::make_unique<Impl>()) {
  impl_->rank = rank;
  impl_->run = runId;
  impl_->path = dbPath;
  if (dbPath.empty() != (runId == 0))
    throw RuntimeError(fmt::format("rank {}: --db and --run-id go together: give both (hap launch --db does) or "
                                   "neither",
                                   rank));
  if (dbPath.empty()) return;
  try {
    impl_->store.emplace(dbPath);
    if (!impl_->store->run(runId))
      throw RuntimeError(fmt::format("rank {}: --run-id {}: no such run in {}; let hap launch --db begin the run",
                                     rank, runId, dbPath));
  } catch (const db::StoreError& e) {
    throw RuntimeError(fmt::format("rank {}: {}", rank, e.what()));
  }
  impl_->writer = std::thread([impl = impl_.get()] { impl->writeLoop(); });
}

RunRecorder::~RunRecorder() { impl_->stopWriter(); }  // writes what is queued, also when the worker fails

bool RunRecorder::enabled() const { return impl_->store.has_value(); }

void RunRecorder::step(const db::StepRecord& r) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->error.empty()) throw RuntimeError(fmt::format("rank {}: {}", impl_->rank, impl_->error));
  impl_->queue.push_back(r);
  if (impl_->queue.size() >= kFlushSteps) impl_->wake.notify_one();
}

void RunRecorder::finish(const std::vector<db::StageRecord>& stages) {
  if (!enabled()) return;
  impl_->stopWriter();
  if (!impl_->error.empty()) throw RuntimeError(fmt::format("rank {}: {}", impl_->rank, impl_->error));
  try {
    impl_->store->recordStages(impl_->run, stages);
  } catch (const db::StoreError& e) {
    throw RuntimeError(fmt::format("rank {}: {}", impl_->rank, e.what()));
  }
}

std::string RunRecorder::summary() const {
  const Impl& i = *impl_;
  return fmt::format("recorded {} steps of rank {} in {} (run {}; {} transaction{}, {:.1f} ms writing)", i.recorded,
                     i.rank, i.path, i.run, i.transactions, i.transactions == 1 ? "" : "s", i.writing * 1e3);
}

}  // namespace hap::runtime
