#include "runtime/train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "db/store.h"
#include "engine/base/text_file.h"
#include "engine/import/model_tensors.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "engine/plan/verifier.h"
#include "runtime/train/checkpoint.h"
#include "runtime/comm/communicator.h"
#include "runtime/train/exactness_check.h"
#include "runtime/core/executor.h"
#include "runtime/core/module_device.h"
#include "runtime/train/run_recorder.h"
#include "runtime/core/runtime_error.h"

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
  at::Tensor sizes = comm.allGather(size, 0, std::vector<int64_t>(static_cast<size_t>(n), 1), CommMethod::Padded);
  std::vector<int64_t> lengths(sizes.data_ptr<int64_t>(), sizes.data_ptr<int64_t>() + n);
  at::Tensor bytes = at::empty({static_cast<int64_t>(text.size())}, at::kByte);
  std::memcpy(bytes.data_ptr<uint8_t>(), text.data(), text.size());
  at::Tensor all = comm.allGather(bytes, 0, lengths, CommMethod::Padded).contiguous();
  std::vector<std::string> out;
  int64_t offset = 0;
  for (int64_t len : lengths) {
    out.emplace_back(reinterpret_cast<const char*>(all.data_ptr<uint8_t>()) + offset, static_cast<size_t>(len));
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
                        const std::vector<double>& optimizerStart, const std::vector<double>& optimizerEnd,
                        double origin, int rank) {
  ojson events = ojson::array();
  const int pid = rank + 1;
  for (size_t i = 0; i < iterations.size(); ++i) {
    for (const Executor::Span& s : iterations[i])
      events.push_back({{"name", s.name},
                        {"cat", s.name == "backward" || s.name.rfind("gradient", 0) == 0 ? "backward" : "forward"},
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
  return fmt::format("all-reduces: {} hierarchical ({} machines × {} ranks), {} flat", c.hierarchical, c.machines,
                     c.perMachine, c.flat);
}

// The weight of this machine's loss in the global loss (plan::Replication): lossWeight, or, for a
// class loss whose targets may be ignore_index (their declared range admits it), this machine's
// count of the other targets over all machines' count. The count comes from the rank's own piece
// of the targets: summed over the machine's ranks when the program cuts them, then over the peers.
class MachineLossWeight {
 public:
  MachineLossWeight(const plan::Plan& plan, const std::vector<InputPiece>& programPieces, Communicator& machine,
                    Communicator* peers)
      : replication_(plan.replication), machine_(machine), peers_(peers) {
    if (!replication_.replicated() || replication_.lossTargets.empty()) return;
    for (size_t i = 0; i < programPieces.size(); ++i) {
      const InputPiece& p = programPieces[i];
      const bool excluded =
          p.high && (replication_.ignoreIndex < p.low.value_or(0) || replication_.ignoreIndex >= *p.high);
      if (p.name != replication_.lossTargets || excluded) continue;
      targets_ = static_cast<int>(i);
      cut_ = p.dim >= 0;
    }
  }

  // `batch`: this rank's pieces of the iteration's batch, in the program's input order.
  double operator()(const std::vector<at::Tensor>& batch) {
    if (targets_ < 0) return replication_.lossWeight;
    at::Tensor mine =
        batch[static_cast<size_t>(targets_)].ne(replication_.ignoreIndex).sum().to(at::kCPU, at::kDouble).reshape({1});
    if (cut_) machine_.allReduce(mine);
    at::Tensor all = mine.clone();
    peers_->allReduce(all);
    return all.item<double>() > 0 ? mine.item<double>() / all.item<double>() : replication_.lossWeight;
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
  for (LocalParameter& p : params) groups[{p.replicated(), p.value.grad().scalar_type()}].push_back(p.value.grad());
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

std::string workerModelPath(const std::string& modelPath, const plan::Plan& p, const std::string& planPath) {
  if (!modelPath.empty()) return modelPath;
  std::error_code ec;
  if (fs::is_regular_file(p.modelPath, ec)) return p.modelPath;
  const fs::path beside = fs::path(planPath).parent_path() / fs::path(p.modelPath).filename();
  if (fs::is_regular_file(beside, ec)) return beside.string();
  throw RuntimeError(fmt::format("{}: the plan's model {} is not there (nor beside the plan); name it with --model",
                                 planPath, p.modelPath));
}

void checkModelHash(const plan::Plan& p, const std::string& planPath, const std::string& modelPath) {
  if (plan::sha256File(modelPath) != p.modelSha256)
    throw RuntimeError(fmt::format("{}: {} is not the model this plan was made for (its SHA-256 differs from the "
                                   "plan's model.sha256); re-plan with `hap plan` or pass the right --model",
                                   planPath, modelPath));
}

ir::Graph loadPlannedModel(const plan::Plan& plan, const std::string& planPath, const std::string& modelPath,
                           import::ModelTensors& tensors) {
  const ir::Graph imported = import::importModel(modelPath, plan::importOptionsFor(plan), tensors);
  if (const std::vector<std::string> problems = plan::verifyPlan(imported, plan); !problems.empty())
    throw RuntimeError(fmt::format("{}: the plan does not verify against {} ({} problems; first: {})", planPath,
                                   modelPath, problems.size(), problems.front()));
  return plan::planGraph(imported, plan);
}

std::vector<InputPiece> worldInputPieces(const plan::Plan& plan, std::vector<InputPiece> pieces, int rank) {
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
      throw RuntimeError(fmt::format("input '{}' is cut along dimension {} inside a machine and {} across machines; "
                                     "re-plan with hap plan --baseline megatron",
                                     p.name, p.dim, d));
    }
  }
  return pieces;
}

int runWorker(const WorkerOptions& o, const WorkerEnv& env) {
  const std::string who = fmt::format("rank {}", env.rank);
  if (o.threads > 0) at::set_num_threads(o.threads);
  const plan::Plan plan = plan::readPlan(o.planPath);
  RunRecorder recorder(o.dbPath, o.runId, env.rank);
  const std::string modelPath = workerModelPath(o.modelPath, plan, o.planPath);
  checkModelHash(plan, o.planPath, modelPath);
  import::ModelTensors tensors;
  const ir::Graph planned = loadPlannedModel(plan, o.planPath, modelPath, tensors);
  const std::vector<plan::PlanDevice> world = plan::worldDevices(plan);
  if (static_cast<int>(world.size()) != env.worldSize)
    throw RuntimeError(fmt::format("{}: the plan is for {} ranks, but WORLD_SIZE is {}; start one worker per device "
                                   "of the plan (hap launch does)",
                                   o.planPath, world.size(), env.worldSize));

  // A replicated plan runs the program on this rank's machine and sums gradients with its peers
  // on the other machines (plan::Replication); otherwise the program spans the world.
  const plan::Replication& replication = plan.replication;
  const int programRanks = static_cast<int>(plan.devices.size());
  const int machine = replication.replicated() ? env.rank / programRanks : 0;
  const int programRank = replication.replicated() ? env.rank % programRanks : env.rank;
  std::unique_ptr<Communicator> comm, machineComm, peers;
  if (replication.replicated()) {
    Communicator::Replicated r = Communicator::connectReplicated(env, o.cuda, replication.machines);
    comm = std::move(r.world);
    machineComm = std::move(r.machine);
    peers = std::move(r.peers);
  } else {
    comm = Communicator::connect(env, o.cuda, &plan.cluster);
  }
  Communicator& program = machineComm ? *machineComm : *comm;  // the program's collectives
  ExecutorOptions executorOptions;
  executorOptions.device = comm->device();  // --cuda: this rank's GPU, NCCL's current device
  if (o.check && !o.checkFloat32) {
    // The check runs both programs in float64 (exactness_check.h); factories without a dtype too.
    executorOptions.floating = at::kDouble;
    c10::set_default_dtype(caffe2::TypeMeta::Make<double>());
  }
  executorOptions.bucketBytes = o.bucketBytes;
  executorOptions.machine = machine;
  Executor exec(plan, planned, tensors, program, executorOptions);
  std::vector<LocalParameter>& params = exec.parameters();
  Optimizer optimizer(params, o.optimizer);
  const std::vector<InputPiece> pieces = worldInputPieces(plan, exec.inputPieces(), env.rank);
  std::unique_ptr<BatchSource> source = makeBatchSource(o.data, pieces);
  MachineLossWeight lossWeight(plan, exec.inputPieces(), program, peers.get());
  const bool lead = env.rank == 0;
  if (lead) std::cout << fmt::format("data: {}\n", source->describe()) << std::flush;

  int64_t first = 0;
  if (!o.resumePath.empty()) {
    first = loadCheckpoint(o.resumePath, params, optimizer, programRank, &exec.buffers());
    if (lead) std::cout << fmt::format("resumed from {} at step {}\n", o.resumePath, first) << std::flush;
  }

  // The check's single-device program, fed the whole batch.
  std::unique_ptr<ExactnessCheck> check;
  std::unique_ptr<BatchSource> wholeSource;
  if (o.check) {
    const at::ScalarType dtype = o.checkFloat32 ? at::kFloat : at::kDouble;
    CheckTolerance tolerance = CheckTolerance::forDtype(dtype);
    if (o.checkRtol) tolerance.rtol = *o.checkRtol;
    if (o.checkAtol) tolerance.atol = *o.checkAtol;
    check = std::make_unique<ExactnessCheck>(modelPath, o.optimizer, executorOptions.device, dtype, tolerance,
                                             programRank, program, *comm);
    std::vector<InputPiece> whole = pieces;  // the global batch's shapes
    for (InputPiece& p : whole) {
      p.dim = -1;
      p.offset = 0;
      p.length = 0;
    }
    wholeSource = makeBatchSource(o.data, whole);
  }

  std::ofstream metrics;
  if (lead && !o.metricsPath.empty()) {
    metrics.open(o.metricsPath);
    if (!metrics) throw RuntimeError(fmt::format("cannot write the metrics file {}", o.metricsPath));
  }
  const int64_t samples = pieces.empty() || pieces.front().shape.empty() ? 1 : pieces.front().shape[0];
  constexpr size_t kTracedIterations = 3;
  std::vector<std::vector<Executor::Span>> traced;
  std::vector<double> optimizerStart, optimizerEnd;
  std::vector<bool> tracedWarmup;
  std::vector<StepRecord> records;
  const std::vector<int> spanned = recorder.enabled() ? spannedSteps(plan) : std::vector<int>{};
  comm->barrier();
  const double origin = exec.now();
  const int64_t total = o.warmup + o.steps;
  ProcessUsage usageStart;
  for (int64_t k = 0; k < total; ++k) {
    const int64_t it = first + k;
    const std::vector<at::Tensor> batch = source->batch(it);
    const ProcessUsage usageBefore = processUsage();
    if (k == o.warmup) usageStart = usageBefore;
    const auto start = Clock::now();
    const double stepStart = exec.now();
    at::manual_seed(iterationSeed(o.seed, it));
    at::Tensor partial = exec.forward(batch);
    if (replication.replicated()) partial = partial * lossWeight(batch);  // this rank's part of the global loss
    exec.backward(partial);
    const double peersStart = exec.now();
    if (peers) sumAcrossMachines(*peers, params);
    const double optStart = exec.now();
    // The global norm costs a pass over every gradient and a synchronisation: only when clipping.
    // Every machine holds the same gradients, so the program's ranks hold the whole norm.
    const double norm = o.optimizer.clipNorm > 0 ? optimizer.clipGradients(program) : std::nan("");
    // The check compares what the optimizer applies: the gradients after every reduction and
    // clipping, then the state after the step.
    if (check)
      check->compareGradients(it, iterationSeed(o.seed, it), lead ? wholeSource->batch(it) : std::vector<at::Tensor>{},
                              partial, params);
    optimizer.step();
    optimizer.zeroGrad();
    const double optEnd = exec.now();
    if (check) check->compareState(it, params, exec.buffers());
    const double lossStart = exec.now();
    at::Tensor loss = partial.detach().to(at::kDouble).reshape({1}).clone();
    comm->allReduce(loss);
    const double lossValue = loss.item<double>();  // waits for the step's kernels on a GPU
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double stepEnd = exec.now();
    StepRecord r{it, lossValue, seconds, norm, k < o.warmup};
    records.push_back(r);
    if (recorder.enabled()) {
      // The executor's spans, the cross-machine gradient sums, the optimizer (clipping included)
      // and the loss's all-reduce, split by the TimeSplit rule.
      Intervals compute, communication;
      for (const Executor::Span& sp : exec.spans())
        (sp.communication ? communication : compute).emplace_back(sp.start, sp.end);
      if (peers) communication.emplace_back(peersStart, optStart);
      compute.emplace_back(optStart, optEnd);
      communication.emplace_back(lossStart, stepEnd);
      const TimeSplit split = splitTime(merged(std::move(compute)), merged(std::move(communication)), stepStart, stepEnd);
      const ProcessUsage usageAfter = processUsage();
      db::StepRecord row;
      row.rank = env.rank;
      row.step = it + 1;
      row.warmup = r.warmup;
      row.seconds = seconds;
      row.computeSeconds = split.compute;
      row.communicationSeconds = split.communication;
      row.loss = lossValue;
      row.peakMemoryBytes = peakMemoryBytes(executorOptions.device, usageAfter);
      row.cpuSeconds = usageAfter.cpuSeconds - usageBefore.cpuSeconds;
      recorder.step(row);
    }
    if (total - k <= static_cast<int64_t>(kTracedIterations)) {
      traced.push_back(exec.spans());
      tracedWarmup.push_back(r.warmup);
      optimizerStart.push_back(optStart);
      optimizerEnd.push_back(optEnd);
    }
    if (lead) {
      std::cout << fmt::format("step {}/{}: loss {:.6f}, {:.2f} ms{}\n", it + 1, first + total, r.loss, seconds * 1e3,
                               r.warmup ? " (warm-up)" : "")
                << std::flush;
      if (metrics.is_open()) {
        ojson line = {{"step", it + 1}, {"loss", r.loss}, {"seconds", r.seconds},
                      {"samples_per_second", samples / r.seconds}, {"warmup", r.warmup}};
        if (!std::isnan(r.gradNorm)) line["grad_norm"] = r.gradNorm;  // with --clip-norm only
        metrics << line.dump() << "\n" << std::flush;
      }
    }
    if (o.stop && o.stop->load() != 0)
      throw RuntimeError(fmt::format("{}: stopped by signal {} after step {}", who, o.stop->load(), it + 1));
    const bool last = k + 1 == total;
    if (!o.checkpointDir.empty() && ((o.checkpointEvery > 0 && (it + 1) % o.checkpointEvery == 0) || last)) {
      std::error_code ec;
      fs::create_directories(o.checkpointDir, ec);
      const std::string path = (fs::path(o.checkpointDir) / fmt::format("step-{}.pt", it + 1)).string();
      // Every machine holds the same state: machine 0's ranks write it, the others wait.
      if (machine == 0) saveCheckpoint(program, path, params, optimizer, it + 1, exec.buffers());
      if (machineComm) comm->barrier();
      if (lead) std::cout << fmt::format("checkpoint: {}\n", path) << std::flush;
    }
  }

  if (recorder.enabled()) {
    // The per-stage split of the last measured steps (kTracedIterations at most; the warm-up
    // steps only when none was measured), averaged.
    const int group = plan.devices.empty() ? 0 : plan.devices[static_cast<size_t>(programRank)].group;
    std::vector<std::vector<TimedSpan>> iterations;
    for (const std::vector<Executor::Span>& spans : traced) {
      std::vector<TimedSpan>& timed = iterations.emplace_back();
      for (const Executor::Span& s : spans) timed.push_back({s.name, s.communication, s.start, s.end});
    }
    recorder.finish(stageRecords(plan, env.rank, group, spanned, iterations, tracedWarmup));
    if (lead) std::cout << recorder.summary() << "\n" << std::flush;
  }

  // Every rank's CPU time and minor page faults per measured step (what a throttled rank spends,
  // and whether its heap has settled: runtime/core/heap_policy.h), gathered on every rank.
  const ProcessUsage usageEnd = processUsage();
  at::Tensor usage = at::zeros({2, env.worldSize}, at::kDouble);
  if (o.steps > 0) {
    usage[0][env.rank] = (usageEnd.cpuSeconds - usageStart.cpuSeconds) / static_cast<double>(o.steps);
    usage[1][env.rank] = (usageEnd.minorFaults - usageStart.minorFaults) / static_cast<double>(o.steps);
  }
  comm->allReduce(usage);  // in place on the CPU, also under NCCL
  std::vector<double> rankCpu(usage[0].data_ptr<double>(), usage[0].data_ptr<double>() + env.worldSize);
  std::vector<double> rankFaults(usage[1].data_ptr<double>(), usage[1].data_ptr<double>() + env.worldSize);

  // Timing statistics over the measured steps.
  std::vector<double> measured;
  for (const StepRecord& r : records)
    if (!r.warmup) measured.push_back(r.seconds);
  double mean = 0, var = 0;
  for (double s : measured) mean += s;
  if (!measured.empty()) mean /= static_cast<double>(measured.size());
  for (double s : measured) var += (s - mean) * (s - mean);
  const double stdev = measured.size() > 1 ? std::sqrt(var / static_cast<double>(measured.size() - 1)) : 0;
  if (lead) {
    const Communicator::AllReduceCounts counts = program.allReduceCounts();
    // No step run (--steps 0 --warmup 0, e.g. to export a checkpoint): no figures to report.
    const std::string summary =
        records.empty()
            ? std::string("0 steps run: no timing and no loss")
            : fmt::format("{} steps: {:.3f} ± {:.3f} ms per iteration, {:.1f} samples/s, final loss {:.6f}",
                          measured.size(), mean * 1e3, stdev * 1e3, mean > 0 ? samples / mean : 0.0,
                          records.back().loss);
    std::cout << summary << "\n";
    if (o.steps > 0) {
      std::string line = "per measured step:";
      for (int r = 0; r < env.worldSize; ++r)
        line += fmt::format("{} rank {} {:.1f} ms CPU, {:.0f} page faults", r == 0 ? "" : ";", r,
                            rankCpu[static_cast<size_t>(r)] * 1e3, rankFaults[static_cast<size_t>(r)]);
      std::cout << line << "\n";
    }
    std::cout << allReduceLine(counts) << "\n";
    if (peers)
      std::cout << fmt::format("replicated on {} machines of {} ranks: {} gradient all-reduces across machines\n",
                               replication.machines, programRanks, peers->allReduceCounts().flat);
    std::cout << std::flush;
    if (metrics.is_open())
      metrics << ojson{{"summary", true},
                       {"steps", measured.size()},
                       {"mean_seconds", mean},
                       {"std_seconds", stdev},
                       {"samples_per_second", mean > 0 ? samples / mean : 0.0},
                       {"final_loss", records.empty() ? ojson(nullptr) : ojson(records.back().loss)},
                       {"predicted_seconds", plan.estimate.iterationSeconds},
                       {"rank_cpu_seconds", rankCpu},
                       {"rank_minor_faults", rankFaults},
                       {"all_reduces", {{"flat", counts.flat}, {"hierarchical", counts.hierarchical}}}}
                     .dump()
              << "\n";
  }

  if (!o.tracePath.empty()) {
    const std::vector<std::string> parts =
        gatherText(*comm, traceOfRank(traced, optimizerStart, optimizerEnd, origin, env.rank));
    if (lead) {
      ojson events = ojson::array();
      for (const plan::PlanDevice& d : world) {
        const int pid = d.rank + 1;
        events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid},
                          {"args", {{"name", fmt::format("rank {}: {} on {} (measured)", d.rank, d.type, d.machine)}}}});
        events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", d.rank}}}});
        events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1}, {"args", {{"name", "computation"}}}});
        events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 2}, {"args", {{"name", "communication"}}}});
      }
      for (const std::string& part : parts)
        for (ojson& e : ojson::parse(part)) events.push_back(std::move(e));
      ojson doc = {{"traceEvents", std::move(events)},
                   {"displayTimeUnit", "ms"},
                   {"otherData", {{"source", "measured by hap-worker"}, {"model", plan.modelPath},
                                  {"cluster", plan.cluster.name}, {"mean_iteration_seconds", mean}}}};
      hap::writeTextFile(o.tracePath, doc.dump(1) + "\n");
      std::cout << fmt::format("trace: {}\n", o.tracePath) << std::flush;
    }
  }

  if (!o.exportPath.empty()) {
    if (lead) {  // its folder, as the checkpoints' (an error shows when the file cannot be written)
      std::error_code ec;
      fs::create_directories(fs::path(o.exportPath).parent_path(), ec);
    }
    if (machine == 0) exportModel(program, modelPath, o.exportPath, params, exec.buffers());  // every machine holds the same
    if (machineComm) comm->barrier();
    if (lead) std::cout << fmt::format("exported: {}\n", o.exportPath) << std::flush;
  }

  if (!check) return 0;
  return check->finish(who, total, params, peers.get()) ? 0 : 1;
}

}  // namespace hap::runtime
