#include "runtime/train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include "db/store.h"
#include "engine/base/text_file.h"
#include "engine/import/model_tensors.h"
#include "engine/plan/open_plan.h"
#include "engine/plan/plan_json.h"
#include "runtime/comm/communicator.h"
#include "runtime/core/executor.h"
#include "runtime/core/module_device.h"
#include "runtime/core/runtime_error.h"
#include "runtime/launch/gathered_recording.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/exactness_check.h"
#include "runtime/train/pipeline_trainer.h"
#include "runtime/train/run_recorder.h"

namespace hap::runtime {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

// The seed of iteration `it`'s random ops: a mix of the run's seed and the iteration (splitmix64),
// the same on every rank and in the single-device reference.
uint64_t iterationSeed(uint64_t seed, int64_t it) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(it + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) & ((1ULL << 62) - 1);
}

// Every rank's text, on every rank (an all-gather of the sizes, then of the bytes).
std::vector<std::string> gatherText(Communicator& comm, const std::string& text) {
  const int n = comm.size();
  at::Tensor size = at::full({1}, static_cast<int64_t>(text.size()), at::kLong);
  at::Tensor sizes =
      comm.allGather(size, 0, std::vector<int64_t>(static_cast<size_t>(n), 1), CommMethod::Padded);
  std::vector<int64_t> lengths(sizes.data_ptr<int64_t>(), sizes.data_ptr<int64_t>() + n);
  at::Tensor bytes = at::empty({static_cast<int64_t>(text.size())}, at::kByte);
  std::memcpy(bytes.data_ptr<uint8_t>(), text.data(), text.size());
  at::Tensor all = comm.allGather(bytes, 0, lengths, CommMethod::Padded).contiguous();
  std::vector<std::string> out;
  int64_t offset = 0;
  for (int64_t len : lengths) {
    out.emplace_back(reinterpret_cast<const char*>(all.data_ptr<uint8_t>()) + offset,
                     static_cast<size_t>(len));
    offset += len;
  }
  return out;
}

struct StepRecord {
  int64_t iteration = 0;
  double loss = 0, seconds = 0, gradNorm = 0;
  bool warmup = false;
};

// This rank's measured spans as Chrome trace events (the simulator's layout: pid rank + 1, tid 1
// computation, tid 2 communication), times relative to `origin` (just after a barrier).
std::string traceOfRank(const std::vector<std::vector<Executor::Span>>& iterations,
                        const std::vector<double>& optimizerStart,
                        const std::vector<double>& optimizerEnd, double origin, int rank) {
  ojson events = ojson::array();
  const int pid = rank + 1;
  for (size_t i = 0; i < iterations.size(); ++i) {
    for (const Executor::Span& s : iterations[i])
      events.push_back(
          {{"name", s.name},
           {"cat",
            s.name == "backward" || s.name.rfind("gradient", 0) == 0 ? "backward" : "forward"},
           {"ph", "X"},
           {"pid", pid},
           {"tid", s.communication ? 2 : 1},
           {"ts", (s.start - origin) * 1e6},
           {"dur", (s.end - s.start) * 1e6},
           {"args", {{"iteration", i}}}});
    events.push_back({{"name", "optimizer"},
                      {"cat", "optimizer"},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", 1},
                      {"ts", (optimizerStart[i] - origin) * 1e6},
                      {"dur", (optimizerEnd[i] - optimizerStart[i]) * 1e6},
                      {"args", {{"iteration", i}}}});
  }
  return events.dump();
}

// "all-reduces: 12 hierarchical (2 machines × 2 ranks), 3 flat": the run's sum all-reduces (the
// program's and the gradients'), as the plan's cost model chose their algorithm.
std::string allReduceLine(const Communicator::AllReduceCounts& c) {
  if (c.machines == 0) return fmt::format("all-reduces: {} flat", c.flat);
  return fmt::format("all-reduces: {} hierarchical ({} machines × {} ranks), {} flat",
                     c.hierarchical, c.machines, c.perMachine, c.flat);
}

// The weight of this machine's loss in the global loss (plan::Replication): lossWeight, or, for a
// class loss whose targets may be ignore_index (their declared range admits it), this machine's
// count of the other targets over all machines' count. The count comes from the rank's own piece
// of the targets: summed over the machine's ranks when the program cuts them, then over the peers.
class MachineLossWeight {
 public:
  MachineLossWeight(const plan::Plan& plan, const std::vector<InputPiece>& programPieces,
                    Communicator& machine, Communicator* peers)
      : replication_(plan.replication), machine_(machine), peers_(peers) {
    if (!replication_.replicated() || replication_.lossTargets.empty()) return;
    for (size_t i = 0; i < programPieces.size(); ++i) {
      const InputPiece& p = programPieces[i];
      const bool excluded = p.high && (replication_.ignoreIndex < p.low.value_or(0) ||
                                       replication_.ignoreIndex >= *p.high);
      if (p.name != replication_.lossTargets || excluded) continue;
      targets_ = static_cast<int>(i);
      cut_ = p.dim >= 0;
    }
  }

  // `batch`: this rank's pieces of the iteration's batch, in the program's input order.
  double operator()(const std::vector<at::Tensor>& batch) {
    if (targets_ < 0) return replication_.lossWeight;
    at::Tensor mine = batch[static_cast<size_t>(targets_)]
                          .ne(replication_.ignoreIndex)
                          .sum()
                          .to(at::kCPU, at::kDouble)
                          .reshape({1});
    if (cut_) machine_.allReduce(mine);
    at::Tensor all = mine.clone();
    peers_->allReduce(all);
    return all.item<double>() > 0 ? mine.item<double>() / all.item<double>()
                                  : replication_.lossWeight;
  }

 private:
  const plan::Replication& replication_;
  Communicator& machine_;
  Communicator* peers_;
  int targets_ = -1;  // the targets' place in the batch, when they are counted
  bool cut_ = false;  // the program cuts the targets among the machine's ranks
};

// Sums every parameter piece's gradient over `peers` (the same piece on every machine), in
// place: one all-reduce per dtype for the replicated parameters and one for the pieces of sharded
// ones, so that replicas, whose buffers are the same on every rank, get the same bits everywhere.
void sumAcrossMachines(Communicator& peers, std::vector<LocalParameter>& params) {
  std::map<std::pair<bool, at::ScalarType>, std::vector<at::Tensor>> groups;
  for (LocalParameter& p : params)
    groups[{p.replicated(), p.value.grad().scalar_type()}].push_back(p.value.grad());
  for (auto& [key, grads] : groups) {
    std::vector<at::Tensor> flat;
    for (const at::Tensor& g : grads) flat.push_back(g.reshape({-1}));
    at::Tensor buffer = at::cat(flat);
    peers.allReduce(buffer);
    int64_t offset = 0;
    for (at::Tensor& g : grads) {
      g.copy_(buffer.narrow(0, offset, g.numel()).view_as(g));
      offset += g.numel();
    }
  }
}

}  // namespace

std::vector<InputPiece> worldInputPieces(const plan::Plan& plan, std::vector<InputPiece> pieces,
                                         int rank) {
  const plan::Replication& r = plan.replication;
  if (!r.replicated()) return pieces;
  const int machine = rank / static_cast<int>(plan.devices.size());
  for (InputPiece& p : pieces) {
    int d = -1;
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      if (plan.inputs[i].name == p.name) d = r.inputDims[i];
    if (d < 0) continue;
    const int64_t rows = p.shape[static_cast<size_t>(d)];
    p.shape[static_cast<size_t>(d)] = rows * r.machines;
    if (p.dim < 0) {
      p.dim = d;
      p.offset = machine * rows;
      p.length = rows;
    } else if (p.dim == d) {
      p.offset += machine * rows;
    } else {
      throw RuntimeError(fmt::format(
          "input '{}' is cut along dimension {} inside a machine and {} across machines; "
          "re-plan with hap plan --baseline megatron",
          p.name, p.dim, d));
    }
  }
  return pieces;
}

namespace {

// One rank's run (runWorker), in four phases called once each, in order:
//   load()    reads the plan, opens its model (plan::openPlan: located, hash checked, imported
//             with its data, verified) and checks that the world is the plan's;
//   build()   joins the other ranks and makes what trains: the communicators, the executor, the
//             optimizer, the batch sources, the exactness check; resumes from a checkpoint;
//   train()   runs the warm-up and measured steps, each printed, recorded, traced and
//             checkpointed as asked (stops after a step when signalled);
//   report()  records the per-stage split, prints the summary, writes the metrics' summary and
//             the merged trace, exports the model and returns the exit status.
// The members are declared in the order the phases make them, so they are destroyed in reverse
// (the executor before its communicators, the recorder, which flushes, last).
class WorkerRun {
 public:
  WorkerRun(const WorkerOptions& options, const WorkerEnv& env)
      : o_(options), env_(env), who_(fmt::format("rank {}", env.rank)), lead_(env.rank == 0) {}

  void load();
  void build();
  void train();
  int report();

 private:
  // One step's clock readings (Executor::now), for the recorder and the trace.
  struct StepTimes {
    double stepStart = 0, peersStart = 0, optimizerStart = 0, optimizerEnd = 0, lossStart = 0,
           stepEnd = 0;
  };
  // The measured steps' wall time per iteration: mean and sample standard deviation.
  struct Timing {
    size_t steps = 0;
    double mean = 0, stdev = 0;
  };

  Communicator& program() {
    return machineComm_ ? *machineComm_ : *comm_;
  }  // the program's collectives
  std::vector<LocalParameter>& params() { return exec_->parameters(); }
  int64_t total() const { return o_.warmup + o_.steps; }

  void connect();
  void makeCheck();
  void openMetrics();
  void recordStep(const StepRecord& r, const StepTimes& t, const ProcessUsage& usageBefore);
  void traceStep(const StepRecord& r, const StepTimes& t);
  void printStep(const StepRecord& r);
  void checkpoint(int64_t it, bool last);
  void recordStages();
  bool recording() const { return recorder_->enabled() || !o_.recordPath.empty(); }
  Timing timing() const;
  void printSummary(const Timing& timing);
  void writeTrace(const Timing& timing);
  void exportTrained();

  const WorkerOptions& o_;
  const WorkerEnv& env_;
  const std::string who_;  // "rank R", for messages
  const bool lead_;        // world rank 0: prints, writes the metrics and the trace

  // load()
  std::unique_ptr<RunRecorder> recorder_;
  import::ModelTensors tensors_;
  plan::OpenedPlan opened_;
  std::vector<plan::PlanDevice> world_;

  // build(): a replicated plan runs the program on this rank's machine (machineComm_) and sums
  // gradients with its peers on the other machines (plan::Replication); otherwise the program
  // spans the world (comm_).
  int machine_ = 0;      // this rank's machine (0 unless replicated)
  int programRank_ = 0;  // this rank's place among the program's ranks
  std::unique_ptr<Communicator> comm_, machineComm_, peers_;
  ExecutorOptions executorOptions_;
  std::unique_ptr<Executor> exec_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<InputPiece> pieces_;  // this rank's pieces of the global batch
  std::unique_ptr<BatchSource> source_;
  std::unique_ptr<MachineLossWeight> lossWeight_;
  int64_t first_ = 0;  // the first step's iteration (a resumed checkpoint's step, else 0)
  std::unique_ptr<ExactnessCheck> check_;
  std::unique_ptr<BatchSource> wholeSource_;  // the check's single-device program's batches

  // train(): what report() reports.
  static constexpr size_t kTracedIterations = 3;
  std::ofstream metrics_;
  int64_t samples_ = 1;                              // the global batch's samples
  std::vector<std::vector<Executor::Span>> traced_;  // the last kTracedIterations steps' spans
  std::vector<double> optimizerStart_, optimizerEnd_;
  std::vector<bool> tracedWarmup_;
  std::vector<StepRecord> records_;
  std::vector<int> spanned_;  // spannedSteps(plan) when recording
  std::vector<db::StepRecord> gathered_;  // --record: this rank's steps, sent to rank 0 at the end
  double origin_ = 0;         // the trace's time zero (just after a barrier)
  ProcessUsage usageStart_;   // at the first measured step
};

void WorkerRun::load() {
  if (o_.threads > 0) at::set_num_threads(o_.threads);
  plan::Plan read = plan::readPlan(o_.planPath);
  recorder_ = std::make_unique<RunRecorder>(o_.dbPath, o_.runId, env_.rank);
  plan::OpenPlanOptions options;
  options.modelPath = o_.modelPath;
  options.tensors = &tensors_;
  opened_ = plan::openPlan(std::move(read), o_.planPath, options);
  world_ = plan::worldDevices(opened_.plan);
  if (static_cast<int>(world_.size()) != env_.worldSize)
    throw RuntimeError(fmt::format(
        "{}: the plan is for {} ranks, but WORLD_SIZE is {}; start one worker per device "
        "of the plan (hap launch does)",
        o_.planPath, world_.size(), env_.worldSize));
}

void WorkerRun::connect() {
  const plan::Replication& replication = opened_.plan.replication;
  const int programRanks = static_cast<int>(opened_.plan.devices.size());
  machine_ = replication.replicated() ? env_.rank / programRanks : 0;
  programRank_ = replication.replicated() ? env_.rank % programRanks : env_.rank;
  if (replication.replicated()) {
    Communicator::Replicated r =
        Communicator::connectReplicated(env_, o_.cuda, replication.machines);
    comm_ = std::move(r.world);
    machineComm_ = std::move(r.machine);
    peers_ = std::move(r.peers);
  } else {
    comm_ = Communicator::connect(env_, o_.cuda, &opened_.plan.cluster);
  }
}

void WorkerRun::build() {
  connect();
  executorOptions_.device = comm_->device();  // --cuda: this rank's GPU, NCCL's current device
  if (o_.check && !o_.checkFloat32) {
    // The check runs both programs in float64 (exactness_check.h); factories without a dtype too.
    executorOptions_.floating = at::kDouble;
    c10::set_default_dtype(caffe2::TypeMeta::Make<double>());
  }
  // The buckets the plan was priced with, unless --bucket-mb says otherwise.
  executorOptions_.bucketBytes =
      o_.bucketBytesGiven || o_.bucketBytes != cost::kGradientBucketBytes
          ? o_.bucketBytes
          : static_cast<int64_t>(opened_.plan.gradientBucketBytes);
  executorOptions_.slowdown = o_.slowdown;
  executorOptions_.machine = machine_;
  exec_ = std::make_unique<Executor>(opened_.plan, opened_.planned, tensors_, program(),
                                     executorOptions_);
  optimizer_ = std::make_unique<Optimizer>(params(), o_.optimizer);
  pieces_ = worldInputPieces(opened_.plan, exec_->inputPieces(), env_.rank);
  source_ = makeBatchSource(o_.data, pieces_);
  lossWeight_ = std::make_unique<MachineLossWeight>(opened_.plan, exec_->inputPieces(), program(),
                                                    peers_.get());
  if (lead_) std::cout << fmt::format("data: {}\n", source_->describe()) << std::flush;

  if (!o_.resumePath.empty()) {
    first_ = loadCheckpoint(o_.resumePath, params(), *optimizer_, programRank_, &exec_->buffers());
    // --steps and --warmup count the steps this run takes after the checkpoint's, so any
    // iteration the loader accepts (>= 0) continues; only step numbers past int64 are refused.
    if (first_ > std::numeric_limits<int64_t>::max() - total())
      throw RuntimeError(fmt::format("checkpoint '{}': iteration {} plus --warmup {} and --steps {} is past the "
                                     "largest step number; resume from a checkpoint of this run",
                                     o_.resumePath, first_, o_.warmup, o_.steps));
    if (lead_)
      std::cout << (total() > 0 ? fmt::format("resumed from {} at step {}: this run takes steps {} to {}\n",
                                              o_.resumePath, first_, first_ + 1, first_ + total())
                                : fmt::format("resumed from {} at step {}: no step to run (--steps 0, "
                                              "--warmup 0)\n",
                                              o_.resumePath, first_))
                << std::flush;
  }
  if (o_.check) makeCheck();
}

// The check's single-device program, fed the whole batch.
void WorkerRun::makeCheck() {
  const at::ScalarType dtype = o_.checkFloat32 ? at::kFloat : at::kDouble;
  CheckTolerance tolerance = CheckTolerance::forDtype(dtype);
  if (o_.checkRtol) tolerance.rtol = *o_.checkRtol;
  if (o_.checkAtol) tolerance.atol = *o_.checkAtol;
  check_ =
      std::make_unique<ExactnessCheck>(opened_.modelPath, o_.optimizer, executorOptions_.device,
                                       dtype, tolerance, programRank_, program(), *comm_);
  std::vector<InputPiece> whole = pieces_;  // the global batch's shapes
  for (InputPiece& p : whole) {
    p.dim = -1;
    p.offset = 0;
    p.length = 0;
  }
  wholeSource_ = makeBatchSource(o_.data, whole);
}

void WorkerRun::openMetrics() {
  if (!lead_ || o_.metricsPath.empty()) return;
  metrics_.open(o_.metricsPath);
  if (!metrics_)
    throw RuntimeError(fmt::format("cannot write the metrics file {}", o_.metricsPath));
}

void WorkerRun::train() {
  openMetrics();
  samples_ = pieces_.empty() || pieces_.front().shape.empty() ? 1 : pieces_.front().shape[0];
  if (recording()) spanned_ = spannedSteps(opened_.plan);
  Executor& exec = *exec_;
  comm_->barrier();
  origin_ = exec.now();
  for (int64_t k = 0; k < total(); ++k) {
    const int64_t it = first_ + k;
    const std::vector<at::Tensor> batch = source_->batch(it);
    const ProcessUsage usageBefore = processUsage();
    if (k == o_.warmup) usageStart_ = usageBefore;
    const auto start = Clock::now();
    StepTimes t;
    t.stepStart = exec.now();
    at::manual_seed(iterationSeed(o_.seed, it));
    at::Tensor partial = exec.forward(batch);
    if (opened_.plan.replication.replicated())
      partial = partial * (*lossWeight_)(batch);  // this rank's part of the global loss
    exec.backward(partial);
    t.peersStart = exec.now();
    if (peers_) sumAcrossMachines(*peers_, params());
    t.optimizerStart = exec.now();
    // The global norm costs a pass over every gradient and a synchronisation: only when clipping.
    // Every machine holds the same gradients, so the program's ranks hold the whole norm.
    const double norm =
        o_.optimizer.clipNorm > 0 ? optimizer_->clipGradients(program()) : std::nan("");
    // The check compares what the optimizer applies: the gradients after every reduction and
    // clipping, then the state after the step.
    if (check_)
      check_->compareGradients(it, iterationSeed(o_.seed, it),
                               lead_ ? wholeSource_->batch(it) : std::vector<at::Tensor>{}, partial,
                               params());
    optimizer_->step();
    optimizer_->zeroGrad();
    t.optimizerEnd = exec.now();
    if (check_) check_->compareState(it, params(), exec.buffers());
    t.lossStart = exec.now();
    at::Tensor loss = partial.detach().to(at::kDouble).reshape({1}).clone();
    comm_->allReduce(loss);
    const double lossValue = loss.item<double>();  // waits for the step's kernels on a GPU
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    t.stepEnd = exec.now();
    const StepRecord r{it, lossValue, seconds, norm, k < o_.warmup};
    records_.push_back(r);
    if (recording()) recordStep(r, t, usageBefore);
    if (total() - k <= static_cast<int64_t>(kTracedIterations)) traceStep(r, t);
    if (lead_) printStep(r);
    if (o_.stop && o_.stop->load() != 0)
      throw RuntimeError(
          fmt::format("{}: stopped by signal {} after step {}", who_, o_.stop->load(), it + 1));
    checkpoint(it, k + 1 == total());
  }
}

// The step's row in the profile store: the executor's spans, the cross-machine gradient sums,
// the optimizer (clipping included) and the loss's all-reduce, split by the TimeSplit rule.
void WorkerRun::recordStep(const StepRecord& r, const StepTimes& t,
                           const ProcessUsage& usageBefore) {
  Intervals compute, communication;
  for (const Executor::Span& sp : exec_->spans())
    (sp.communication ? communication : compute).emplace_back(sp.start, sp.end);
  if (peers_) communication.emplace_back(t.peersStart, t.optimizerStart);
  compute.emplace_back(t.optimizerStart, t.optimizerEnd);
  communication.emplace_back(t.lossStart, t.stepEnd);
  const TimeSplit split = splitTime(merged(std::move(compute)), merged(std::move(communication)),
                                    t.stepStart, t.stepEnd);
  const ProcessUsage usageAfter = processUsage();
  db::StepRecord row;
  row.rank = env_.rank;
  row.step = r.iteration + 1;
  row.warmup = r.warmup;
  row.seconds = r.seconds;
  row.computeSeconds = split.compute;
  row.communicationSeconds = split.communication;
  row.loss = r.loss;
  row.peakMemoryBytes = peakMemoryBytes(executorOptions_.device, usageAfter);
  row.cpuSeconds = usageAfter.cpuSeconds - usageBefore.cpuSeconds;
  if (recorder_->enabled()) recorder_->step(row);
  if (!o_.recordPath.empty()) gathered_.push_back(row);
}

// Keeps the step's spans for the trace and the per-stage split (the last kTracedIterations).
void WorkerRun::traceStep(const StepRecord& r, const StepTimes& t) {
  traced_.push_back(exec_->spans());
  tracedWarmup_.push_back(r.warmup);
  optimizerStart_.push_back(t.optimizerStart);
  optimizerEnd_.push_back(t.optimizerEnd);
}

// The step's line on stdout and in the metrics file (rank 0).
void WorkerRun::printStep(const StepRecord& r) {
  std::cout << fmt::format("step {}/{}: loss {:.6f}, {:.2f} ms{}\n", r.iteration + 1,
                           first_ + total(), r.loss, r.seconds * 1e3, r.warmup ? " (warm-up)" : "")
            << std::flush;
  if (metrics_.is_open()) {
    ojson line = {{"step", r.iteration + 1},
                  {"loss", r.loss},
                  {"seconds", r.seconds},
                  {"samples_per_second", samples_ / r.seconds},
                  {"warmup", r.warmup}};
    if (!std::isnan(r.gradNorm)) line["grad_norm"] = r.gradNorm;  // with --clip-norm only
    metrics_ << line.dump() << "\n" << std::flush;
  }
}

// A consolidated checkpoint after iteration `it` when one is due (every checkpointEvery steps,
// and after the last).
void WorkerRun::checkpoint(int64_t it, bool last) {
  if (o_.checkpointDir.empty() ||
      !((o_.checkpointEvery > 0 && (it + 1) % o_.checkpointEvery == 0) || last))
    return;
  std::error_code ec;
  fs::create_directories(o_.checkpointDir, ec);
  const std::string path =
      (fs::path(o_.checkpointDir) / fmt::format("step-{}.pt", it + 1)).string();
  // Every machine holds the same state: machine 0's ranks write it, the others wait.
  if (machine_ == 0)
    saveCheckpoint(program(), path, params(), *optimizer_, it + 1, exec_->buffers());
  if (machineComm_) comm_->barrier();
  if (lead_) std::cout << fmt::format("checkpoint: {}\n", path) << std::flush;
}

int WorkerRun::report() {
  recordStages();
  const Timing measured = timing();
  printSummary(measured);
  if (!o_.tracePath.empty()) writeTrace(measured);
  if (!o_.exportPath.empty()) exportTrained();
  if (!check_) return 0;
  return check_->finish(who_, total(), params(), peers_.get()) ? 0 : 1;
}

// The per-stage split of the last measured steps (kTracedIterations at most; the warm-up steps
// only when none was measured), averaged, into the profile store.
void WorkerRun::recordStages() {
  if (!recording()) return;
  const int group = opened_.plan.devices.empty()
                        ? 0
                        : opened_.plan.devices[static_cast<size_t>(programRank_)].group;
  std::vector<std::vector<TimedSpan>> iterations;
  for (const std::vector<Executor::Span>& spans : traced_) {
    std::vector<TimedSpan>& timed = iterations.emplace_back();
    for (const Executor::Span& s : spans)
      timed.push_back({s.name, s.communication, s.start, s.end});
  }
  std::vector<db::StageRecord> stages =
      stageRecords(opened_.plan, env_.rank, group, spanned_, iterations, tracedWarmup_);
  if (recorder_->enabled()) {
    recorder_->finish(stages);
    if (lead_) std::cout << recorder_->summary() << "\n" << std::flush;
    return;
  }
  // --record: every rank's records to rank 0 (a collective: every rank is here), which writes
  // the run whole (gathered_recording.h).
  RankRecords mine{env_.rank, o_.slowdown, std::move(gathered_), std::move(stages)};
  const std::vector<std::string> texts = gatherText(*comm_, encodeRankRecords(mine));
  if (!lead_) return;
  std::vector<RankRecords> all;
  for (size_t r = 0; r < texts.size(); ++r) all.push_back(decodeRankRecords(texts[r], static_cast<int>(r)));
  LaunchSettings settings;
  settings.options = o_;
  settings.options.recordPath.clear();
  settings.options.stop = nullptr;
  settings.cpuShares.assign(all.size(), 1.0);
  for (const RankRecords& r : all) settings.slowdowns.push_back(r.slowdown);
  settings.timeoutSeconds = std::chrono::duration<double>(env_.timeout).count();
  settings.label = "recorded by rank 0 (hap-worker --record)";
  const int64_t run = writeGatheredRun(o_.recordPath, opened_.plan, settings, all);
  std::cout << fmt::format("recorded run {} ({} ranks, {} steps each) in {}\n", run, all.size(),
                           all.front().steps.size(), o_.recordPath)
            << std::flush;
}

WorkerRun::Timing WorkerRun::timing() const {
  std::vector<double> measured;
  for (const StepRecord& r : records_)
    if (!r.warmup) measured.push_back(r.seconds);
  double mean = 0, var = 0;
  for (double s : measured) mean += s;
  if (!measured.empty()) mean /= static_cast<double>(measured.size());
  for (double s : measured) var += (s - mean) * (s - mean);
  const double stdev =
      measured.size() > 1 ? std::sqrt(var / static_cast<double>(measured.size() - 1)) : 0;
  return {measured.size(), mean, stdev};
}

// The run's summary on stdout and as the metrics file's last line (rank 0), with every rank's
// CPU time and minor page faults per measured step (what a throttled rank spends, and whether
// its heap has settled: runtime/core/heap_policy.h), gathered on every rank.
void WorkerRun::printSummary(const Timing& timing) {
  const ProcessUsage usageEnd = processUsage();
  at::Tensor usage = at::zeros({2, env_.worldSize}, at::kDouble);
  if (o_.steps > 0) {
    usage[0][env_.rank] =
        (usageEnd.cpuSeconds - usageStart_.cpuSeconds) / static_cast<double>(o_.steps);
    usage[1][env_.rank] =
        (usageEnd.minorFaults - usageStart_.minorFaults) / static_cast<double>(o_.steps);
  }
  comm_->allReduce(usage);  // in place on the CPU, also under NCCL
  std::vector<double> rankCpu(usage[0].data_ptr<double>(),
                              usage[0].data_ptr<double>() + env_.worldSize);
  std::vector<double> rankFaults(usage[1].data_ptr<double>(),
                                 usage[1].data_ptr<double>() + env_.worldSize);
  if (!lead_) return;

  const double mean = timing.mean;
  const Communicator::AllReduceCounts counts = program().allReduceCounts();
  // No step run (--steps 0 --warmup 0, e.g. to export a checkpoint): no figures to report.
  const std::string summary =
      records_.empty()
          ? std::string("0 steps run: no timing and no loss")
          : fmt::format(
                "{} steps: {:.3f} ± {:.3f} ms per iteration, {:.1f} samples/s, final loss {:.6f}",
                timing.steps, mean * 1e3, timing.stdev * 1e3, mean > 0 ? samples_ / mean : 0.0,
                records_.back().loss);
  std::cout << summary << "\n";
  if (o_.steps > 0) {
    std::string line = "per measured step:";
    for (int r = 0; r < env_.worldSize; ++r)
      line +=
          fmt::format("{} rank {} {:.1f} ms CPU, {:.0f} page faults", r == 0 ? "" : ";", r,
                      rankCpu[static_cast<size_t>(r)] * 1e3, rankFaults[static_cast<size_t>(r)]);
    std::cout << line << "\n";
  }
  std::cout << allReduceLine(counts) << "\n";
  if (peers_)
    std::cout << fmt::format(
        "replicated on {} machines of {} ranks: {} gradient all-reduces across machines\n",
        opened_.plan.replication.machines, opened_.plan.devices.size(),
        peers_->allReduceCounts().flat);
  std::cout << std::flush;
  if (metrics_.is_open())
    metrics_
        << ojson{{"summary", true},
                 {"steps", timing.steps},
                 {"mean_seconds", mean},
                 {"std_seconds", timing.stdev},
                 {"samples_per_second", mean > 0 ? samples_ / mean : 0.0},
                 {"final_loss", records_.empty() ? ojson(nullptr) : ojson(records_.back().loss)},
                 {"predicted_seconds", opened_.plan.estimate.iterationSeconds},
                 {"rank_cpu_seconds", rankCpu},
                 {"rank_minor_faults", rankFaults},
                 {"all_reduces", {{"flat", counts.flat}, {"hierarchical", counts.hierarchical}}}}
               .dump()
        << "\n";
}

// Every rank's traced steps, merged into one Chrome trace by rank 0.
void WorkerRun::writeTrace(const Timing& timing) {
  const std::vector<std::string> parts =
      gatherText(*comm_, traceOfRank(traced_, optimizerStart_, optimizerEnd_, origin_, env_.rank));
  if (!lead_) return;
  ojson events = ojson::array();
  for (const plan::PlanDevice& d : world_) {
    const int pid = d.rank + 1;
    events.push_back(
        {{"name", "process_name"},
         {"ph", "M"},
         {"pid", pid},
         {"args",
          {{"name", fmt::format("rank {}: {} on {} (measured)", d.rank, d.type, d.machine)}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"args", {{"sort_index", d.rank}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 1},
                      {"args", {{"name", "computation"}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 2},
                      {"args", {{"name", "communication"}}}});
  }
  for (const std::string& part : parts)
    for (ojson& e : ojson::parse(part)) events.push_back(std::move(e));
  ojson doc = {{"traceEvents", std::move(events)},
               {"displayTimeUnit", "ms"},
               {"otherData",
                {{"source", "measured by hap-worker"},
                 {"model", opened_.plan.modelPath},
                 {"cluster", opened_.plan.cluster.name},
                 {"mean_iteration_seconds", timing.mean}}}};
  hap::writeTextFile(o_.tracePath, doc.dump(1) + "\n");
  std::cout << fmt::format("trace: {}\n", o_.tracePath) << std::flush;
}

// The trained model as a TorchScript file: machine 0's ranks write it (every machine holds the
// same), rank 0 creating its folder as for the checkpoints (an error shows when the file cannot be
// written).
void WorkerRun::exportTrained() {
  if (lead_) {
    std::error_code ec;
    fs::create_directories(fs::path(o_.exportPath).parent_path(), ec);
  }
  if (machine_ == 0)
    exportModel(program(), opened_.modelPath, o_.exportPath, params(), exec_->buffers());
  if (machineComm_) comm_->barrier();
  if (lead_) std::cout << fmt::format("exported: {}\n", o_.exportPath) << std::flush;
}

}  // namespace

int runWorker(const WorkerOptions& options, const WorkerEnv& env) {
  // A pipelined plan runs stage by stage (pipeline_trainer.h); the plan reader refuses it.
  if (isPipelinePlan(options.planPath)) return runPipelineWorker(options, env);
  WorkerRun run(options, env);
  run.load();
  run.build();
  run.train();
  return run.report();
}

}  // namespace hap::runtime
