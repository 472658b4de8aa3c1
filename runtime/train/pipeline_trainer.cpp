#include "runtime/train/pipeline_trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "engine/import/input_spec.h"
#include "engine/import/model_tensors.h"
#include "engine/pipeline/pipeline_cost.h"
#include "engine/pipeline/pipeline_json.h"
#include "engine/pipeline/stage_graph.h"
#include "engine/plan/open_plan.h"
#include "engine/plan/planner.h"
#include "engine/plan/verifier.h"
#include "engine/rules/relation.h"
#include "engine/rules/rule.h"
#include "runtime/comm/collectives.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/point_to_point.h"
#include "runtime/core/counter_dropout.h"
#include "runtime/core/executor.h"
#include "runtime/data/data.h"
#include "runtime/train/exactness_check.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/parameters.h"

namespace hap::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

// The seed of iteration `it`'s random ops, as trainer.cpp draws it (the single-device reference
// of the check is seeded alike).
uint64_t iterationSeed(uint64_t seed, int64_t it) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(it + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) & ((1ULL << 62) - 1);
}

nlohmann::json readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json();
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception&) {
    return nlohmann::json();
  }
}

std::optional<double> numberArg(const ir::Node& n, const char* name) {
  const ir::Arg* a = n.arg(name);
  if (!a || a->kind != ir::Arg::Kind::Constant) return std::nullopt;
  if (const double* d = std::get_if<double>(&a->constant)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(&a->constant)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<int64_t> intArg(const ir::Node& n, const char* name) {
  const ir::Arg* a = n.arg(name);
  if (!a || a->kind != ir::Arg::Kind::Constant) return std::nullopt;
  if (const int64_t* i = std::get_if<int64_t>(&a->constant)) return *i;
  return std::nullopt;
}

// Whether `n` draws a dropout key when it runs (counter_dropout.h: training with p != 0).
bool drawsDropoutKey(const ir::Node& n) {
  if (counterDropoutOp(n.op).empty()) return false;
  const ir::Arg* train = n.arg("train");
  bool training = true;
  if (train && train->kind == ir::Arg::Kind::Constant)
    if (const bool* b = std::get_if<bool>(&train->constant)) training = *b;
  return training && numberArg(n, "p").value_or(0) != 0;
}

std::string stripInplace(std::string op) {
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') op.pop_back();
  return op;
}

// The weight of one micro-batch's loss in the full batch's (pipeline_trainer.h "Exactness"): a
// fixed one, or for a class loss whose targets may be ignore_index, micro-batch i's count of the
// other targets over the batch's (counted in every step's batch, on every rank).
struct LossWeight {
  double fixed = 1;
  std::string targets;  // the model input counted, when counted
  int64_t ignore = -100;
};

// From the model imported at micro-batch shapes and at the global batch (the same nodes).
LossWeight microBatchLossWeight(const ir::Graph& micro, const ir::Graph& full, int m,
                                const std::string& origin) {
  LossWeight out;
  if (m == 1) return out;
  int terms = 0;
  auto refuse = [&](const ir::Node& n, const std::string& why) {
    throw PipelineRefused(
        fmt::format("{}: the loss cannot be split into {} micro-batches exactly: {} ({}); re-plan "
                    "with --pipeline off or "
                    "--micro-batches 1",
                    origin, m, why, micro.describe(n.id)));
  };
  std::optional<double> weight;
  static const std::set<std::string> kLosses = {"aten::cross_entropy_loss",
                                                "aten::nll_loss",
                                                "aten::nll_loss_nd",
                                                "aten::nll_loss2d",
                                                "aten::mse_loss",
                                                "aten::l1_loss",
                                                "aten::smooth_l1_loss",
                                                "aten::huber_loss",
                                                "aten::binary_cross_entropy",
                                                "aten::binary_cross_entropy_with_logits",
                                                "aten::kl_div",
                                                "aten::soft_margin_loss"};
  static const std::set<std::string> kViews = {
      "aten::reshape", "aten::view",       "aten::flatten", "aten::squeeze", "aten::unsqueeze",
      "aten::to",      "aten::contiguous", "aten::clone",   "aten::type_as"};
  auto ratio = [&](const ir::Node& n) {
    const ir::Value& a = micro.value(n.tensorInputs().at(0));
    const ir::Node& f = full.node(n.id);
    const ir::Value& b = full.value(f.tensorInputs().at(0));
    return static_cast<double>(a.numel()) / static_cast<double>(std::max<int64_t>(b.numel(), 1));
  };
  auto note = [&](const ir::Node& n, double w) {
    ++terms;
    if (weight && std::abs(*weight - w) > 1e-12 * std::max(1.0, w))
      refuse(n,
             fmt::format("its terms weigh micro-batches differently ({:g} and {:g})", *weight, w));
    weight = w;
  };
  // The input a class loss's targets come from, through views.
  auto targetInput = [&](ir::ValueId v) -> const ir::Value* {
    while (true) {
      const ir::Value& x = micro.value(v);
      if (x.producer == ir::kNone) return x.kind == ir::ValueKind::Input ? &x : nullptr;
      const ir::Node& p = micro.node(x.producer);
      if (!kViews.count(stripInplace(p.op)) || p.tensorInputs().empty()) return nullptr;
      v = p.tensorInputs()[0];
    }
  };
  std::function<void(ir::ValueId)> visit = [&](ir::ValueId v) {
    const ir::Value& x = micro.value(v);
    if (x.producer == ir::kNone)
      throw PipelineRefused(
          fmt::format("{}: the loss adds '{}', which does not come from the batch; the "
                      "micro-batches cannot share it out exactly; re-plan with --pipeline off",
                      origin, x.name));
    const ir::Node& n = micro.node(x.producer);
    const std::string op = stripInplace(n.op);
    const std::vector<ir::ValueId> in = n.tensorInputs();
    auto derived = [&](ir::ValueId u) {
      const ir::Value& y = micro.value(u);
      return y.kind == ir::ValueKind::Activation || y.kind == ir::ValueKind::Input;
    };
    if (op == "aten::add" || op == "aten::sub") {
      if (in.size() != 2) refuse(n, "a constant term beside the batch's");
      for (ir::ValueId u : in) visit(u);
    } else if (op == "aten::mul" || op == "aten::div") {
      int batchDerived = 0;
      for (ir::ValueId u : in) batchDerived += derived(u) ? 1 : 0;
      if (batchDerived != 1 || (op == "aten::div" && !derived(in[0])))
        refuse(n, "a product of two batch-dependent terms");
      for (ir::ValueId u : in)
        if (derived(u)) visit(u);
    } else if (op == "aten::neg" || kViews.count(op)) {
      visit(in.at(0));
    } else if (op == "aten::mean" || op == "aten::sum") {
      if (x.rank() != 0) refuse(n, "a reduction that keeps dimensions");
      note(n, op == "aten::sum" ? 1.0 : ratio(n));
    } else if (kLosses.count(op)) {
      const int64_t reduction = intArg(n, "reduction").value_or(1);
      if (reduction == 2) {
        note(n, 1);
      } else if (reduction == 1) {
        if (op == "aten::cross_entropy_loss" || op.rfind("aten::nll_loss", 0) == 0) {
          const ir::Arg* w = n.arg("weight");
          if (w && !w->values.empty())
            refuse(n, "a class loss with class weights (its mean divides by their sum)");
          const ir::Arg* target = n.arg("target");
          if (target && !target->values.empty() &&
              !ir::isFloating(micro.value(target->values[0]).dtype)) {
            const int64_t ignore = intArg(n, "ignore_index").value_or(-100);
            const ir::Value* t = targetInput(target->values[0]);
            if (!t || !t->high || !(ignore < t->low.value_or(0) || ignore >= *t->high)) {
              // Targets that may be ignore_index: weighed by their counts, every step.
              if (!t)
                refuse(n,
                       "its targets, which may be ignore_index, come from no model input to count "
                       "them in");
              out.targets = t->name;
              out.ignore = ignore;
            }
          }
        }
        note(n, ratio(n));
      } else {
        refuse(n, "a loss without reduction");
      }
    } else {
      refuse(n, fmt::format("{} is no mean or sum over the batch", op));
    }
  };
  visit(micro.loss);
  out.fixed = weight.value_or(1);
  if (!out.targets.empty() && terms > 1)
    throw PipelineRefused(
        fmt::format("{}: the loss adds terms to a class loss whose targets may be ignore_index: "
                    "the micro-batches' weights would differ per term; re-plan with --pipeline off",
                    origin));
  return out;
}

// One stage of the pipeline as this run holds it (every rank holds every stage's description).
struct Stage {
  int index = 0;
  std::vector<int> ranks;
  pipeline::StageGraph sg;
  plan::Plan plan;
  ir::Graph planned;
  std::unordered_map<ir::ValueId, ir::ValueId>
      fromModel;                                // model activation -> the stage's (planned)
  std::vector<std::vector<InputPiece>> pieces;  // per group rank: planInputPieces
  int dropoutKeysBefore = 0;  // keys the earlier stages' dropouts draw (counter_dropout.h)
  ir::ValueId local(ir::ValueId modelValue) const { return fromModel.at(modelValue); }
  int inputIndex(ir::ValueId v) const {
    return static_cast<int>(std::find(planned.inputs.begin(), planned.inputs.end(), v) -
                            planned.inputs.begin());
  }
};

// A boundary value's route: from stage `from` (its producer) to the stages reading it.
struct Route {
  ir::ValueId value = ir::kNone;  // the model's (micro-batch import)
  std::string name;
  int from = 0;
  struct Reader {
    int stage = 0;
    int input = 0;  // index into that stage's planned inputs ("boundary.<name>")
  };
  std::vector<Reader> readers;
  bool floating = false;
};

struct InFlight {
  at::Tensor loss;                 // the last stage: this rank's partial loss
  std::vector<at::Tensor> wholes;  // per route sent: the whole value (floating ones)
  std::vector<at::Tensor> leaves;  // per route received: the received piece (floating ones)
};

class PipelineRun {
 public:
  PipelineRun(const WorkerOptions& o, const WorkerEnv& env)
      : o_(o), env_(env), lead_(env.rank == 0) {}
  void load();
  void build();
  void train();
  int report();

 private:
  void forward(int i, const std::vector<at::Tensor>& wholeBatch, uint64_t seed);
  void backward(int i);
  void sumTied();
  double clip();
  std::vector<LocalParameter> consolidate(bool values, bool grads);
  std::vector<LocalBuffer> consolidateBuffers();
  bool replicasIdentical();
  at::ScalarType computed(ir::DType d) const {
    const at::ScalarType t = import::toScalarType(d);
    return floating_ != at::ScalarType::Undefined && at::isFloatingType(t) ? floating_ : t;
  }
  int worldRank(int stage, int groupRank) const {
    return stages_[static_cast<size_t>(stage)].ranks[static_cast<size_t>(groupRank)];
  }
  int tag(int microBatch, ir::ValueId v) const {
    return microBatch * static_cast<int>(micro_.values.size()) + static_cast<int>(v);
  }
  std::vector<LocalParameter>& params() { return exec_->parameters(); }
  std::vector<double> weightsOf(const std::vector<at::Tensor>& wholeBatch) const;

  const WorkerOptions& o_;
  const WorkerEnv& env_;
  const bool lead_;

  // load()
  plan::Plan spmd_;
  pipeline::PipelinePlan pp_;
  std::string modelPath_;
  ir::Graph full_, micro_;
  import::ModelTensors tensors_;  // of micro_
  std::vector<Stage> stages_;
  std::vector<Route> routes_;
  std::vector<InputPiece> wholePieces_;  // the global batch's inputs, whole
  std::vector<bool> scaled_;             // per model input: cut into micro-batches (dim 0)
  LossWeight lossWeight_;
  std::vector<double> weights_;  // this step's, per micro-batch (weighsOf)
  std::vector<std::string> parameterNames_, bufferNames_;  // model order
  std::map<std::string, std::vector<int>> holders_;  // parameter or buffer -> stages holding it

  // build()
  int stage_ = -1, groupRank_ = 0, groupSize_ = 1;
  at::ScalarType floating_ = at::ScalarType::Undefined;
  std::unique_ptr<Communicator> world_, group_;
  std::unique_ptr<PointToPoint> links_;
  std::unique_ptr<import::ModelTensors> stageTensors_;
  std::unique_ptr<Executor> exec_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<BatchSource> source_;
  std::unique_ptr<ExactnessCheck> check_;
  std::vector<int> sends_, receives_;  // routes this stage sends / receives
  std::vector<InFlight> flight_;

  // train()
  std::ofstream metrics_;
  std::vector<double> seconds_;
  std::vector<double> losses_;
};

void PipelineRun::load() {
  if (o_.threads > 0) at::set_num_threads(o_.threads);
  const std::string& path = o_.planPath;
  auto unsupported = [&](bool given, const char* option) {
    if (given)
      throw PipelineRefused(fmt::format(
          "{}: {} is not supported with a pipelined plan yet; run without it", path, option));
  };
  unsupported(!o_.checkpointDir.empty(), "--checkpoint-dir");
  unsupported(!o_.resumePath.empty(), "--resume");
  unsupported(!o_.exportPath.empty(), "--export");
  unsupported(!o_.tracePath.empty(), "--trace");
  unsupported(!o_.dbPath.empty(), "--db");
  unsupported(!o_.recordPath.empty(), "--record");
  unsupported(o_.checkFloat32, "--check-dtype float32");

  pp_ = pipeline::readPipelinePlan(path, &spmd_);
  const int S = static_cast<int>(pp_.stages.size());
  const int m = pp_.microBatches;
  if (S < 1) throw plan::PlanError(fmt::format("{}: the pipeline has no stage", path));
  const std::optional<std::string> model = plan::locatePlanModel(spmd_, path, o_.modelPath);
  if (!model)
    throw plan::PlanError(fmt::format(
        "{}: the plan's model {} is not there (nor beside the plan); name it with --model", path,
        spmd_.modelPath));
  modelPath_ = *model;
  plan::checkPlanModel(spmd_, path, modelPath_);

  // The model at the global batch (for shapes) and at micro-batch shapes (the stages' graphs):
  // dimension 0 of every input divided by m (import::dividedBatch), as hap plan --pipeline
  // imports it for the stage plans.
  const import::ImportOptions fullOptions = plan::importOptionsFor(spmd_);
  full_ = import::importModel(modelPath_, fullOptions);
  import::ImportOptions microOptions = fullOptions;
  if (m > 1) microOptions.inputOverrides = import::dividedBatch(full_, m);
  micro_ = import::importModel(modelPath_, microOptions, tensors_);
  if (micro_.nodes.size() != full_.nodes.size() || pp_.nodeSegment.size() != micro_.nodes.size())
    throw plan::PlanError(fmt::format(
        "{}: the pipeline's segmentation has {} nodes, but {} imports to {} nodes at "
        "micro-batch shapes ({} at the batch); re-plan for this model",
        path, pp_.nodeSegment.size(), modelPath_, micro_.nodes.size(), full_.nodes.size()));
  for (ir::ValueId v : full_.inputs) {
    const ir::Value& x = full_.value(v);
    InputPiece p;
    p.name = x.name;
    p.dtype = x.dtype;
    p.shape = x.shape;
    p.low = x.low;
    p.high = x.high;
    for (const import::InputSpec& spec : tensors_.inputs)
      if (spec.name == x.name) {
        if (spec.low) p.low = spec.low;
        if (spec.high) p.high = spec.high;
      }
    wholePieces_.push_back(p);
    const ir::Value* mv = nullptr;
    for (ir::ValueId u : micro_.inputs)
      if (micro_.value(u).name == x.name) mv = &micro_.value(u);
    const bool cut = mv && !x.shape.empty() && mv->shape != x.shape;
    if (cut &&
        (mv->shape[0] * m != x.shape[0] ||
         !std::equal(mv->shape.begin() + 1, mv->shape.end(), x.shape.begin() + 1, x.shape.end())))
      throw PipelineRefused(fmt::format(
          "{}: input '{}' is [{}] at the batch and [{}] per micro-batch: only dimension "
          "0 can be cut into {} micro-batches",
          path, x.name, ir::formatShape(x.shape), ir::formatShape(mv->shape), m));
    scaled_.push_back(cut);
  }

  // Every stage: its graph at micro-batch shapes, its plan checked against it, its executions.
  int keys = 0;
  for (int s = 0; s < S; ++s) {
    const pipeline::PipelineStage& info = pp_.stages[static_cast<size_t>(s)];
    Stage st;
    st.index = s;
    st.ranks = info.ranks;
    st.sg = pipeline::stageGraph(micro_, pp_.nodeSegment, info.firstSegment, info.endSegment);
    st.plan = info.plan;
    const std::string where = fmt::format("{}: pipeline stage {}", path, s);
    if (st.plan.replication.replicated())
      throw PipelineRefused(where + ": a replicated stage plan is not supported; re-plan");
    if (static_cast<size_t>(st.plan.devices.size()) != st.ranks.size())
      throw plan::PlanError(fmt::format("{}: its plan is for {} ranks, its group has {}", where,
                                        st.plan.devices.size(), st.ranks.size()));
    if (const std::vector<std::string> problems = plan::verifyPlan(st.sg.graph, st.plan);
        !problems.empty())
      throw plan::PlanError(
          fmt::format("{}: its plan does not verify against its stage graph of {} ({} problems; "
                      "first: {})",
                      where, modelPath_, problems.size(), problems.front()));
    plan::assignExecutions(st.sg.graph, st.plan);
    st.planned = plan::planGraph(st.sg.graph, st.plan);
    // planGraph keeps the stage graph's value ids (reshards append theirs).
    for (size_t k = 0; k < st.sg.originalNode.size(); ++k) {
      if (st.sg.originalNode[k] == ir::kNone) continue;
      const ir::Node& original = micro_.node(st.sg.originalNode[k]);
      const ir::Node& copy = st.sg.graph.nodes[k];
      for (size_t j = 0; j < original.outputs.size() && j < copy.outputs.size(); ++j)
        st.fromModel.emplace(original.outputs[j], copy.outputs[j]);
    }
    for (int q = 0; q < static_cast<int>(st.ranks.size()); ++q)
      st.pieces.push_back(planInputPieces(st.plan, st.planned, tensors_.inputs, q));
    // Random draws other than dropout cannot be split between stages and micro-batches.
    for (const plan::PlanStep& step : st.plan.steps)
      if (step.kind == plan::PlanStep::Kind::Compute &&
          step.execution == rules::Execution::RandomDraws && (S > 1 || m > 1))
        throw PipelineRefused(
            fmt::format("{}: {} draws random numbers, which pipeline stages and micro-batches "
                        "cannot draw as the single-device program does (only dropout can); "
                        "re-plan with --pipeline off",
                        where, st.planned.describe(step.node)));
    st.dropoutKeysBefore = keys;
    for (size_t k = 0; k < micro_.nodes.size(); ++k) {
      const int seg = pp_.nodeSegment[k];
      if (seg < info.firstSegment || seg >= info.endSegment) continue;
      const ir::Node& n = micro_.nodes[k];
      if (drawsDropoutKey(n)) {
        ++keys;
        const ir::Value& a = micro_.value(n.tensorInputs().at(0));
        const ir::Value& b = full_.value(full_.nodes[k].tensorInputs().at(0));
        if (m > 1 && (a.shape.empty() || a.shape[0] * m != b.shape[0]))
          throw PipelineRefused(fmt::format(
              "{}: dropout {} reads [{}] per micro-batch and [{}] at the batch: its "
              "mask can be split into micro-batches only along dimension 0",
              where, micro_.describe(n.id), ir::formatShape(a.shape), ir::formatShape(b.shape)));
      }
      // Batch statistics in training differ between a micro-batch and the batch.
      const std::string op = stripInplace(n.op);
      if (m > 1 &&
          (op == "aten::batch_norm" || op == "aten::native_batch_norm" ||
           op == "aten::_batch_norm_impl_index" || op == "aten::_native_batch_norm_legit")) {
        const ir::Arg* training = n.arg("training");
        bool train = true;
        if (training && training->kind == ir::Arg::Kind::Constant)
          if (const bool* b = std::get_if<bool>(&training->constant)) train = *b;
        if (train)
          throw PipelineRefused(
              fmt::format("{}: batch norm in training ({}) over {} micro-batches: each "
                          "micro-batch's statistics would differ "
                          "from the full batch's, and this runtime does not synchronise them "
                          "across micro-batches (refused, "
                          "not synchronised); re-plan with --pipeline off or --micro-batches 1",
                          where, micro_.describe(n.id), m));
      }
    }
    stages_.push_back(std::move(st));
  }
  if (!stages_.back().sg.holdsLoss)
    throw PipelineRefused(fmt::format("{}: the last pipeline stage does not hold the loss", path));
  lossWeight_ = microBatchLossWeight(micro_, full_, m, path);
  for (size_t k = 0; k < wholePieces_.size(); ++k)
    if (wholePieces_[k].name == lossWeight_.targets && !scaled_[k])
      throw PipelineRefused(fmt::format(
          "{}: the loss's targets '{}' are not cut into micro-batches along dimension 0", path,
          lossWeight_.targets));

  // The routes of the boundary values.
  std::map<ir::ValueId, int> routeOf;
  for (const Stage& st : stages_)
    for (ir::ValueId v : st.sg.outputs) {
      Route r;
      r.value = v;
      r.name = micro_.value(v).name;
      r.from = st.index;
      r.floating = ir::isFloating(micro_.value(v).dtype);
      routeOf[v] = static_cast<int>(routes_.size());
      routes_.push_back(r);
    }
  for (const Stage& st : stages_)
    for (size_t b = 0; b < st.sg.inputsFrom.size(); ++b) {
      auto it = routeOf.find(st.sg.inputsFrom[b]);
      if (it == routeOf.end())
        throw plan::PlanError(fmt::format("{}: stage {} reads '{}', which no earlier stage sends",
                                          path, st.index, micro_.value(st.sg.inputsFrom[b]).name));
      routes_[static_cast<size_t>(it->second)].readers.push_back(
          {st.index, st.inputIndex(st.sg.boundaryInputs[b])});
    }

  for (ir::ValueId v : micro_.parameters) parameterNames_.push_back(micro_.value(v).name);
  for (ir::ValueId v : micro_.buffers) bufferNames_.push_back(micro_.value(v).name);
  for (const Stage& st : stages_) {
    for (ir::ValueId v : st.planned.parameters)
      holders_[st.planned.value(v).name].push_back(st.index);
    for (ir::ValueId v : st.planned.buffers) holders_[st.planned.value(v).name].push_back(st.index);
  }
  const int world = static_cast<int>(plan::worldDevices(spmd_).size());
  if (world != env_.worldSize)
    throw RuntimeError(fmt::format(
        "{}: the plan is for {} ranks, but WORLD_SIZE is {}; start one worker per device "
        "of the plan (hap launch does)",
        path, world, env_.worldSize));
}

void PipelineRun::build() {
  std::vector<std::vector<int>> groups;
  for (const Stage& st : stages_) {
    groups.push_back(st.ranks);
    for (size_t j = 0; j < st.ranks.size(); ++j)
      if (st.ranks[j] == env_.rank) {
        stage_ = st.index;
        groupRank_ = static_cast<int>(j);
        groupSize_ = static_cast<int>(st.ranks.size());
      }
  }
  if (stage_ < 0)
    groups.push_back({env_.rank});  // a rank the pipeline leaves idle: a group of its own
  Communicator::Grouped c = Communicator::connectGroups(env_, o_.cuda, groups);
  world_ = std::move(c.world);
  group_ = std::move(c.group);
  if (env_.worldSize > 1) links_ = PointToPoint::connect(env_, world_->device());
  if (o_.check) {
    floating_ = at::kDouble;
    c10::set_default_dtype(caffe2::TypeMeta::Make<double>());
  }
  if (lead_)
    std::cout << fmt::format(
                     "pipeline: {} stages, {} micro-batches of {} rows (1F1B), loss weight {} per "
                     "micro-batch\n",
                     stages_.size(), pp_.microBatches, pp_.batch / std::max(pp_.microBatches, 1),
                     lossWeight_.targets.empty()
                         ? fmt::format("{:g}", lossWeight_.fixed)
                         : fmt::format("its count of '{}' other than {} over the batch's",
                                       lossWeight_.targets, lossWeight_.ignore))
              << std::flush;
  if (stage_ >= 0) {
    const Stage& st = stages_[static_cast<size_t>(stage_)];
    // The stage's sources: the micro-batch import's tensors of the values the stage reads.
    stageTensors_ = std::make_unique<import::ModelTensors>();
    stageTensors_->inputs = tensors_.inputs;
    std::vector<bool> read(micro_.values.size(), false);
    for (size_t k = 0; k < micro_.nodes.size(); ++k) {
      const int seg = pp_.nodeSegment[k];
      if (seg < st.sg.firstSegment || seg >= st.sg.endSegment) continue;
      for (ir::ValueId v : micro_.nodes[k].tensorInputs()) read[static_cast<size_t>(v)] = true;
    }
    auto zip = [&](const std::vector<ir::ValueId>& model, const std::vector<ir::ValueId>& stage) {
      size_t k = 0;
      for (ir::ValueId v : model) {
        if (!read[static_cast<size_t>(v)]) continue;
        if (k >= stage.size() || st.planned.value(stage[k]).name != micro_.value(v).name)
          throw RuntimeError(fmt::format(
              "stage {}: its sources do not match the model's (a runtime bug)", stage_));
        auto found = tensors_.values.find(v);
        if (found != tensors_.values.end()) stageTensors_->values.emplace(stage[k], found->second);
        ++k;
      }
    };
    zip(micro_.parameters, st.planned.parameters);
    zip(micro_.buffers, st.planned.buffers);
    zip(micro_.constants, st.planned.constants);
    ExecutorOptions options;
    options.device = world_->device();
    options.floating = floating_;
    options.slowdown = o_.slowdown;
    options.microBatches = pp_.microBatches;
    exec_ = std::make_unique<Executor>(st.plan, st.planned, *stageTensors_, *group_, options);
    optimizer_ = std::make_unique<Optimizer>(params(), o_.optimizer);
    for (size_t r = 0; r < routes_.size(); ++r) {
      if (routes_[r].from == stage_) sends_.push_back(static_cast<int>(r));
      for (const Route::Reader& reader : routes_[r].readers)
        if (reader.stage == stage_) receives_.push_back(static_cast<int>(r));
    }
  }
  source_ = makeBatchSource(o_.data, wholePieces_);
  if (lead_) std::cout << fmt::format("data: {}\n", source_->describe()) << std::flush;
  if (o_.check) {
    CheckTolerance tolerance = CheckTolerance::forDtype(at::kDouble);
    if (o_.checkRtol) tolerance.rtol = *o_.checkRtol;
    if (o_.checkAtol) tolerance.atol = *o_.checkAtol;
    check_ = std::make_unique<ExactnessCheck>(modelPath_, o_.optimizer, world_->device(),
                                              at::kDouble, tolerance, env_.rank, *world_, *world_);
  }
  flight_.resize(static_cast<size_t>(pp_.microBatches));
}

std::vector<double> PipelineRun::weightsOf(const std::vector<at::Tensor>& wholeBatch) const {
  const int m = pp_.microBatches;
  std::vector<double> w(static_cast<size_t>(m), lossWeight_.fixed);
  if (lossWeight_.targets.empty()) return w;
  for (size_t k = 0; k < wholePieces_.size(); ++k) {
    if (wholePieces_[k].name != lossWeight_.targets) continue;
    const at::Tensor kept = wholeBatch[k].ne(lossWeight_.ignore).to(at::kCPU);
    const int64_t rows = kept.size(0) / m;
    const double total = kept.sum().item<double>();
    for (int i = 0; i < m && total > 0; ++i)
      w[static_cast<size_t>(i)] = kept.narrow(0, i * rows, rows).sum().item<double>() / total;
  }
  return w;
}

void PipelineRun::forward(int i, const std::vector<at::Tensor>& wholeBatch, uint64_t seed) {
  const Stage& st = stages_[static_cast<size_t>(stage_)];
  const int m = pp_.microBatches;
  const std::vector<InputPiece>& pieces = st.pieces[static_cast<size_t>(groupRank_)];
  std::vector<at::Tensor> batch(st.planned.inputs.size());
  InFlight& f = flight_[static_cast<size_t>(i)];
  f = InFlight();
  // Model inputs: micro-batch i's rows, then this rank's piece.
  for (size_t k = 0; k < st.planned.inputs.size(); ++k) {
    const InputPiece& piece = pieces[k];
    for (size_t w = 0; w < wholePieces_.size(); ++w) {
      if (wholePieces_[w].name != piece.name) continue;
      at::Tensor t = wholeBatch[w];
      if (scaled_[w]) {
        const int64_t rows = t.size(0) / m;
        t = t.narrow(0, i * rows, rows);
      }
      if (piece.dim >= 0) t = t.narrow(piece.dim, piece.offset, piece.length);
      batch[k] = t.contiguous();
    }
  }
  // Boundary inputs, from rank (this group rank mod the sender's group size) of the sending stage.
  for (int r : receives_) {
    const Route& route = routes_[static_cast<size_t>(r)];
    for (const Route::Reader& reader : route.readers) {
      if (reader.stage != stage_) continue;
      const InputPiece& piece = pieces[static_cast<size_t>(reader.input)];
      const int senders = static_cast<int>(stages_[static_cast<size_t>(route.from)].ranks.size());
      const int peer = worldRank(route.from, groupRank_ % senders);
      const ir::Shape shape = piece.pieceShape();
      at::Tensor t;
      const at::ScalarType dtype = computed(micro_.value(route.value).dtype);
      if (ir::numel(shape) == 0)
        t = at::empty(shape, at::TensorOptions().dtype(dtype).device(world_->device()));
      else
        t = links_->receive(shape, dtype, peer, tag(i, route.value), PointToPoint::Channel::Forward,
                            fmt::format("'{}' of micro-batch {}", route.name, i));
      if (route.floating) {
        t.set_requires_grad(true);
        f.leaves.push_back(t);
      }
      batch[static_cast<size_t>(reader.input)] = t;
    }
  }
  at::manual_seed(seed);
  for (int k = 0; k < st.dropoutKeysBefore; ++k)
    drawDropoutKey();  // the earlier stages' dropouts' keys
  exec_->setMicroBatch(i);
  at::Tensor loss = exec_->forward(batch);
  if (st.sg.holdsLoss) f.loss = loss;
  // Outputs: made whole inside the group, then each reader's piece to it.
  for (int r : sends_) {
    const Route& route = routes_[static_cast<size_t>(r)];
    const std::vector<Executor::HeldForm> forms = exec_->held(st.local(route.value));
    // The cheapest form to make whole: I as it is, else G(d) (an all-gather), else R (an
    // all-reduce).
    auto cost = [](const Executor::HeldForm& h) {
      return h.rel == rules::kIdentity || h.rel == rules::kIdentitySfb ? 0 : h.rel >= 0 ? 1 : 2;
    };
    const Executor::HeldForm* best = nullptr;
    for (const Executor::HeldForm& h : forms)
      if (!best || cost(h) < cost(*best)) best = &h;
    if (!best)
      throw RuntimeError(
          fmt::format("rank {}: stage {} did not compute '{}', which it sends (a runtime bug)",
                      env_.rank, stage_, route.name));
    at::Tensor whole;
    if (best->rel == rules::kIdentity || best->rel == rules::kIdentitySfb)
      whole = best->tensor;
    else if (best->rel == rules::kReduce)
      whole = collective::allReduce(*group_, best->tensor);
    else
      whole = collective::allGather(*group_, best->tensor, best->rel, best->lengths,
                                    CommMethod::Padded);
    if (route.floating) f.wholes.push_back(whole);
    const at::ScalarType dtype = computed(micro_.value(route.value).dtype);
    for (const Route::Reader& reader : route.readers) {
      const Stage& to = stages_[static_cast<size_t>(reader.stage)];
      for (int q = groupRank_; q < static_cast<int>(to.ranks.size()); q += groupSize_) {
        const InputPiece& piece =
            to.pieces[static_cast<size_t>(q)][static_cast<size_t>(reader.input)];
        at::Tensor t = whole.detach();
        if (piece.dim >= 0) t = t.narrow(piece.dim, piece.offset, piece.length);
        if (t.numel() == 0) continue;
        links_->send(t.to(dtype), worldRank(reader.stage, q), tag(i, route.value),
                     PointToPoint::Channel::Forward,
                     fmt::format("'{}' of micro-batch {}", route.name, i));
      }
    }
  }
}

void PipelineRun::backward(int i) {
  const Stage& st = stages_[static_cast<size_t>(stage_)];
  InFlight& f = flight_[static_cast<size_t>(i)];
  std::vector<at::Tensor> roots, seeds;
  if (st.sg.holdsLoss) {
    roots.push_back(f.loss);
    seeds.push_back(at::full_like(f.loss, weights_[static_cast<size_t>(i)]));
  }
  size_t w = 0;
  for (int r : sends_) {
    const Route& route = routes_[static_cast<size_t>(r)];
    if (!route.floating) continue;
    const at::Tensor& whole = f.wholes[w++];
    at::Tensor seed = at::zeros_like(whole);
    for (const Route::Reader& reader : route.readers) {
      const Stage& to = stages_[static_cast<size_t>(reader.stage)];
      for (int q = groupRank_; q < static_cast<int>(to.ranks.size()); q += groupSize_) {
        const InputPiece& piece =
            to.pieces[static_cast<size_t>(q)][static_cast<size_t>(reader.input)];
        const ir::Shape shape = piece.pieceShape();
        if (ir::numel(shape) == 0) continue;
        at::Tensor g =
            links_->receive(shape, whole.scalar_type(), worldRank(reader.stage, q),
                            tag(i, route.value), PointToPoint::Channel::Backward,
                            fmt::format("the gradient of '{}' of micro-batch {}", route.name, i));
        if (piece.dim >= 0)
          seed.narrow(piece.dim, piece.offset, piece.length).add_(g);
        else
          seed.add_(g);
      }
    }
    roots.push_back(whole);
    seeds.push_back(seed);
  }
  exec_->backwardSeeded(roots, seeds);
  // The boundary inputs' gradients, back to their senders.
  size_t l = 0;
  for (int r : receives_) {
    const Route& route = routes_[static_cast<size_t>(r)];
    if (!route.floating) continue;
    for (const Route::Reader& reader : route.readers) {
      if (reader.stage != stage_) continue;
      const at::Tensor& leaf = f.leaves[l++];
      if (leaf.numel() == 0) continue;
      const at::Tensor g = leaf.grad().defined() ? leaf.grad() : at::zeros_like(leaf);
      const int senders = static_cast<int>(stages_[static_cast<size_t>(route.from)].ranks.size());
      links_->send(g, worldRank(route.from, groupRank_ % senders), tag(i, route.value),
                   PointToPoint::Channel::Backward,
                   fmt::format("the gradient of '{}' of micro-batch {}", route.name, i));
    }
  }
  f = InFlight();
}

// Tied parameters: the gradient summed over the stages holding it (each stage's whole gradient
// once, from its group rank 0), in the model's parameter order on every rank.
void PipelineRun::sumTied() {
  c10::NoGradGuard noGrad;
  for (size_t k = 0; k < parameterNames_.size(); ++k) {
    const std::string& name = parameterNames_[k];
    const std::vector<int>& holding = holders_[name];
    if (holding.size() < 2) continue;
    const ir::Value& v = micro_.value(micro_.parameters[k]);
    at::Tensor sum =
        at::zeros(v.shape, at::TensorOptions().dtype(computed(v.dtype)).device(world_->device()));
    LocalParameter* mine = nullptr;
    if (stage_ >= 0)
      for (LocalParameter& p : params())
        if (p.name == name) mine = &p;
    if (mine) {
      const at::Tensor full = gatherFull(*group_, *mine, mine->value.grad());
      if (groupRank_ == 0) sum.copy_(full);
    }
    world_->allReduce(sum);
    if (mine) mine->value.mutable_grad().copy_(pieceOf(*mine, sum, groupRank_));
  }
}

// The global norm over every stage (a replicated parameter once per group, a tied one in its
// first stage only), and clipping as Optimizer::clipGradients does.
double PipelineRun::clip() {
  at::Tensor squares =
      at::zeros({1}, at::TensorOptions().dtype(at::kDouble).device(world_->device()));
  c10::NoGradGuard noGrad;
  if (stage_ >= 0)
    for (const LocalParameter& p : params()) {
      const at::Tensor& g = p.value.grad();
      if (!g.defined() || (p.replicated() && groupRank_ != 0) || holders_[p.name].front() != stage_)
        continue;
      squares.add_(g.detach().norm().to(at::kDouble).square());
    }
  world_->allReduce(squares);
  const double norm = std::sqrt(squares.item<double>());
  if (o_.optimizer.clipNorm > 0 && stage_ >= 0) {
    const double coefficient = o_.optimizer.clipNorm / (norm + 1e-6);
    if (!(coefficient >= 1.0))
      for (LocalParameter& p : params())
        if (p.value.grad().defined()) p.value.mutable_grad().mul_(coefficient);
  }
  return norm;
}

// Every parameter whole on world rank 0 (empty elsewhere), from the first stage holding it, for
// the check: values and, with `grads`, gradients.
std::vector<LocalParameter> PipelineRun::consolidate(bool values, bool grads) {
  std::vector<LocalParameter> out;
  c10::NoGradGuard noGrad;
  for (size_t k = 0; k < parameterNames_.size(); ++k) {
    const std::string& name = parameterNames_[k];
    const int home = holders_[name].empty() ? -1 : holders_[name].front();
    if (home < 0) continue;
    const ir::Value& v = micro_.value(micro_.parameters[k]);
    const auto options = at::TensorOptions().dtype(computed(v.dtype)).device(world_->device());
    at::Tensor value = at::zeros(v.shape, options), grad = at::zeros(v.shape, options);
    if (stage_ == home) {
      for (LocalParameter& p : params()) {
        if (p.name != name) continue;
        const at::Tensor fullValue = gatherFull(*group_, p, p.value.detach());
        const at::Tensor g = p.value.grad().defined() ? p.value.grad() : at::zeros_like(p.value);
        const at::Tensor fullGrad = grads ? gatherFull(*group_, p, g) : at::Tensor();
        if (groupRank_ == 0) {
          value.copy_(fullValue);
          if (grads) grad.copy_(fullGrad);
        }
      }
    }
    const int root = worldRank(home, 0);
    if (values) world_->broadcast(value, root);
    if (grads) world_->broadcast(grad, root);
    if (!lead_) continue;
    LocalParameter c;
    c.name = name;
    c.fullShape = v.shape;
    c.value = value.set_requires_grad(true);
    if (grads) c.value.mutable_grad() = grad;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<LocalBuffer> PipelineRun::consolidateBuffers() {
  std::vector<LocalBuffer> out;
  c10::NoGradGuard noGrad;
  for (size_t k = 0; k < bufferNames_.size(); ++k) {
    const std::string& name = bufferNames_[k];
    const int home = holders_[name].empty() ? -1 : holders_[name].front();
    if (home < 0) continue;
    const ir::Value& v = micro_.value(micro_.buffers[k]);
    at::Tensor value =
        at::zeros(v.shape, at::TensorOptions().dtype(computed(v.dtype)).device(world_->device()));
    if (stage_ == home)
      for (LocalBuffer& b : exec_->buffers())
        if (b.name == name) {
          const at::Tensor full = gatherFull(*group_, b, b.value);
          if (groupRank_ == 0) value.copy_(full);
        }
    world_->broadcast(value, worldRank(home, 0));
    if (!lead_) continue;
    LocalBuffer c;
    c.name = name;
    c.fullShape = v.shape;
    c.value = value;
    out.push_back(std::move(c));
  }
  return out;
}

// Replicated parameters bit-identical inside every group, tied ones across the stages holding them.
bool PipelineRun::replicasIdentical() {
  int64_t mismatches = 0;
  c10::NoGradGuard noGrad;
  if (stage_ >= 0)
    for (const LocalParameter& p : params())
      if (p.replicated()) {
        at::Tensor first = p.value.detach().clone();
        group_->broadcast(first, 0);
        if (!at::equal(first, p.value.detach())) ++mismatches;
      }
  for (size_t k = 0; k < parameterNames_.size(); ++k) {
    const std::string& name = parameterNames_[k];
    const std::vector<int>& holding = holders_[name];
    if (holding.size() < 2) continue;
    const ir::Value& v = micro_.value(micro_.parameters[k]);
    at::Tensor first =
        at::zeros(v.shape, at::TensorOptions().dtype(computed(v.dtype)).device(world_->device()));
    at::Tensor mine;
    if (stage_ >= 0 && std::count(holding.begin(), holding.end(), stage_))
      for (LocalParameter& p : params())
        if (p.name == name) mine = gatherFull(*group_, p, p.value.detach());
    if (stage_ == holding.front() && groupRank_ == 0) first.copy_(mine);
    world_->broadcast(first, worldRank(holding.front(), 0));
    if (mine.defined() && !at::equal(first, mine)) ++mismatches;
  }
  at::Tensor all = at::full({1}, static_cast<double>(mismatches), at::kDouble);
  world_->allReduce(all);
  return all.item<double>() == 0;
}

void PipelineRun::train() {
  if (lead_ && !o_.metricsPath.empty()) {
    metrics_.open(o_.metricsPath);
    if (!metrics_)
      throw RuntimeError(fmt::format("cannot write the metrics file {}", o_.metricsPath));
  }
  const int S = static_cast<int>(stages_.size());
  const int m = pp_.microBatches;
  const std::vector<int> order =
      stage_ >= 0 ? pipeline::oneFOneBOrder(stage_, S, m) : std::vector<int>();
  const int64_t total = o_.warmup + o_.steps;
  world_->barrier();
  for (int64_t it = 0; it < total; ++it) {
    const auto start = Clock::now();
    const uint64_t seed = iterationSeed(o_.seed, it);
    const std::vector<at::Tensor> batch = source_->batch(it);
    at::Tensor partial = at::zeros({}, at::kDouble);
    weights_ = weightsOf(batch);
    if (stage_ >= 0) {
      for (int op : order) {
        if (op >= 0) {
          forward(op, batch, seed);
          if (stages_[static_cast<size_t>(stage_)].sg.holdsLoss)
            partial =
                partial + flight_[static_cast<size_t>(op)].loss.detach().to(at::kCPU, at::kDouble) *
                              weights_[static_cast<size_t>(op)];
        } else {
          backward(-op - 1);
        }
      }
      if (links_) links_->flush();
      exec_->sumGradients();
    }
    sumTied();
    const double norm = clip();
    if (check_) {
      std::vector<LocalParameter> whole = consolidate(/*values=*/true, /*grads=*/true);
      check_->compareGradients(it, seed, lead_ ? batch : std::vector<at::Tensor>{}, partial, whole);
    }
    if (optimizer_) {
      optimizer_->step();
      optimizer_->zeroGrad();
    }
    if (check_) {
      std::vector<LocalParameter> whole = consolidate(/*values=*/true, /*grads=*/false);
      std::vector<LocalBuffer> buffers = consolidateBuffers();
      check_->compareState(it, whole, buffers);
    }
    at::Tensor loss = partial.reshape({1}).clone();
    world_->allReduce(loss);
    const double lossValue = loss.item<double>();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const bool warm = it < o_.warmup;
    if (!warm) seconds_.push_back(seconds);
    losses_.push_back(lossValue);
    if (lead_) {
      std::cout << fmt::format("step {}/{}: loss {:.6f}, {:.2f} ms{}\n", it + 1, total, lossValue,
                               seconds * 1e3, warm ? " (warm-up)" : "")
                << std::flush;
      if (metrics_.is_open()) {
        ojson line = {
            {"step", it + 1}, {"loss", lossValue}, {"seconds", seconds}, {"warmup", warm}};
        if (o_.optimizer.clipNorm > 0) line["grad_norm"] = norm;
        metrics_ << line.dump() << "\n" << std::flush;
      }
    }
    if (o_.stop && o_.stop->load() != 0)
      throw RuntimeError(fmt::format("rank {}: stopped by signal {} after step {}", env_.rank,
                                     o_.stop->load(), it + 1));
  }
}

int PipelineRun::report() {
  double mean = 0, var = 0;
  for (double s : seconds_) mean += s;
  if (!seconds_.empty()) mean /= static_cast<double>(seconds_.size());
  for (double s : seconds_) var += (s - mean) * (s - mean);
  const double stdev =
      seconds_.size() > 1 ? std::sqrt(var / static_cast<double>(seconds_.size() - 1)) : 0;
  if (lead_) {
    std::cout << (losses_.empty()
                      ? std::string("0 steps run: no timing and no loss")
                      : fmt::format(
                            "{} steps: {:.3f} ± {:.3f} ms per iteration, {:.1f} samples/s, final "
                            "loss {:.6f} ({} stages, {} micro-batches)",
                            seconds_.size(), mean * 1e3, stdev * 1e3,
                            mean > 0 ? static_cast<double>(pp_.batch) / mean : 0.0, losses_.back(),
                            stages_.size(), pp_.microBatches))
              << "\n"
              << std::flush;
    if (metrics_.is_open())
      metrics_ << ojson{{"summary", true},
                        {"steps", seconds_.size()},
                        {"mean_seconds", mean},
                        {"std_seconds", stdev},
                        {"final_loss", losses_.empty() ? ojson(nullptr) : ojson(losses_.back())},
                        {"predicted_seconds", pp_.cost.stepSeconds},
                        {"stages", stages_.size()},
                        {"micro_batches", pp_.microBatches}}
                      .dump()
               << "\n";
  }
  if (!check_) return 0;
  const bool identical = replicasIdentical();
  const bool ok = check_->finish(fmt::format("rank {} (stage {})", env_.rank, stage_),
                                 o_.warmup + o_.steps, {}, nullptr);
  if (!identical)
    std::cout << fmt::format(
                     "check rank {}: replicated or tied parameters DIFFER across ranks; FAIL\n",
                     env_.rank)
              << std::flush;
  return ok && identical ? 0 : 1;
}

}  // namespace

bool isPipelinePlan(const std::string& planPath) {
  const nlohmann::json doc = readJson(planPath);
  return doc.is_object() && doc.contains("pipeline");
}

int pipelineWorldSize(const std::string& planPath) {
  plan::Plan spmd;
  pipeline::readPipelinePlan(planPath, &spmd);
  return static_cast<int>(plan::worldDevices(spmd).size());
}

int runPipelineWorker(const WorkerOptions& options, const WorkerEnv& env) {
  PipelineRun run(options, env);
  run.load();
  run.build();
  run.train();
  return run.report();
}

}  // namespace hap::runtime
