#include "engine/plan/planner.h"

#include <cassert>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>

#include "engine/balance/alternation.h"
#include "engine/plan/baselines.h"
#include "engine/base/error.h"
#include "engine/synth/cost_table.h"
#include "engine/synth/memory.h"
#include "engine/synth/search.h"
#include "engine/synth/stages.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/replication.h"
#include "engine/synth/theory.h"

namespace hap::plan {
namespace {

using rules::Rel;

// A form of value x with its exact per-rank lengths (G only): the table's whole lengths of x's
// class where it has them (synth::ClassCut), else x's segment's shares rounded.
Form makeForm(const synth::CostTable& table, ir::ValueId x, Rel r) {
  Form f;
  f.value = x;
  f.rel = r;
  if (!rules::isGather(r)) return f;
  if (const synth::ClassCut* cut = table.cutOf(x, r)) {
    const int64_t unit = table.theory().classes().unitSize({x, r});
    for (int64_t u : cut->units) f.lengths.push_back(u * unit);
  } else {
    f.lengths = table.theory().classes().lengths({x, r}, table.valueShares(x));
  }
  return f;
}

// The plan of `program`, found on `table` over `cluster`: model identity, the steps with exact
// forms and times, stages, estimate, devices and search statistics (segments, ratios policy,
// history and baselines are the caller's).
Plan planOf(const ir::Graph& imported, const synth::Theory& theory, const synth::CostTable& table,
            const synth::Program& program, const synth::SearchStats& stats, const cost::Cluster& cluster,
            const synth::CostOptions& costOptions, const std::atomic<bool>* cancel) {
  const ir::Graph& g = theory.graph();
  Plan plan;
  plan.modelPath = imported.sourceFile;
  plan.modelSha256 = sha256File(imported.sourceFile, cancel);
  for (ir::ValueId in : g.inputs) {
    const ir::Value& v = g.value(in);
    plan.inputs.push_back({v.name, v.dtype, v.shape, v.low, v.high});
  }
  plan.parameters = g.parameterCount();
  plan.nodes = static_cast<int>(g.nodes.size());
  for (const ir::Diagnostic& d : theory.diagnostics()) plan.unsharded.push_back({d.node, d.message});
  double flops = 0, unruledFlops = 0;
  for (const ir::Node& n : g.nodes) {
    flops += n.cost.flops;
    if (!rules::findRule(n.op)) unruledFlops += n.cost.flops;
  }
  plan.unshardedFlopsShare = flops > 0 ? unruledFlops / flops : 0;
  plan.cluster = cluster;

  // Steps with exact forms and their times.
  const size_t groups = static_cast<size_t>(table.groups());
  std::vector<double> busy(groups, 0.0);
  for (const synth::Step& s : program.steps) {
    PlanStep ps;
    ps.node = s.node;
    const synth::StepTimes t = synth::stepTimes(table, s);
    ps.forwardCommunication = t.forwardCommunication;
    ps.backwardCommunication = t.backwardCommunication;
    ps.forwardSync = t.forwardSync;
    ps.backwardSync = t.backwardSync;
    ps.gradientSeconds = t.gradientSeconds;
    ps.forwardByGroup = t.forward;
    ps.backwardByGroup = t.backward;
    if (s.kind == synth::Step::Kind::Convert) {
      ps.kind = PlanStep::Kind::Convert;
      ps.segment = theory.valueSegment(s.value);
      ps.instruction = synth::conversionName(s.conversion.kind);
      const bool methodMatters = s.conversion.kind == synth::ConversionKind::AllGather ||
                                 s.conversion.kind == synth::ConversionKind::ReduceScatter;
      ps.method = methodMatters ? (s.conversion.method == cost::Method::Padded ? "padded" : "grouped") : "";
      ps.from = makeForm(table, s.value, s.conversion.from);
      ps.to = makeForm(table, s.value, s.conversion.to);
    } else {
      const rules::Variant& v = theory.variants(s.node)[static_cast<size_t>(s.variant)];
      const ir::Node& n = g.node(s.node);
      const std::vector<ir::ValueId> ins = n.tensorInputs();
      ps.segment = theory.nodeSegment(s.node);
      ps.variant = v.name;
      ps.sfb = v.sfb;
      ps.execution = v.execution;
      for (size_t i = 0; i < ins.size(); ++i) ps.inputs.push_back(makeForm(table, ins[i], v.inputs[i]));
      for (size_t o = 0; o < n.outputs.size(); ++o) ps.outputs.push_back(makeForm(table, n.outputs[o], v.outputs[o]));
      for (size_t k = 0; k < groups; ++k) busy[k] += t.forward[k] + t.backward[k];
    }
    const double forward = t.forward.empty() ? 0 : *std::max_element(t.forward.begin(), t.forward.end());
    const double backward = t.backward.empty() ? 0 : *std::max_element(t.backward.begin(), t.backward.end());
    ps.forwardSeconds = t.forwardCommunication + forward;
    ps.backwardSeconds = t.backwardCommunication + t.gradientSeconds + backward;
    plan.steps.push_back(std::move(ps));
  }
  const synth::StageModel model = synth::stageModel(table, program);
  for (const synth::StageCost& st : model.stages) {
    const auto [lo, hi] = std::minmax_element(st.steps.begin(), st.steps.end());
    plan.stages.push_back({st.backward, *lo, *hi + 1, st.communicationSeconds, st.groupComputation,
                           st.computationSeconds});
  }
  for (const synth::GradientBucket& b : model.buckets) plan.gradientBuckets.push_back({b.steps, b.seconds});
  plan.exposedGradientSeconds = model.exposedGradientSeconds;
  plan.gradientBucketBytes = costOptions.gradientBucketBytes;
  plan.estimate = estimateOf(table, program, costOptions);
  const std::vector<synth::MemoryBreakdown> memory = synth::deviceMemoryBreakdown(table, program, costOptions);
  for (int j = 0; j < cluster.size(); ++j) {
    const cost::Device& d = cluster.devices[static_cast<size_t>(j)];
    const cost::Machine& m = cluster.machines[static_cast<size_t>(d.machine)];
    plan.devices.push_back({j, m.name, m.host, cluster.type(j).name, cluster.type(j).memoryBytes,
                            plan.estimate.memoryBytes[static_cast<size_t>(j)], memory[static_cast<size_t>(j)],
                            busy[static_cast<size_t>(table.groupOf(j))], table.groupOf(j)});
  }
  plan.provenOptimal = stats.provenOptimal;
  plan.notOptimal = stats.notOptimal;
  plan.expanded = stats.expanded;
  plan.generated = stats.generated;
  plan.stored = stats.stored;
  plan.searchSeconds = stats.seconds;
  return plan;
}

}  // namespace

std::string sha256File(const std::string& path, const std::atomic<bool>* cancel) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot be read to compute its hash", path));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  while (in) {
    // BERT-Base's 400 MB take about 0.2 s: a cancellation is honoured between megabytes.
    if (cancel && cancel->load(std::memory_order_relaxed)) throw synth::SearchError("the search was cancelled");
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

std::vector<double> ratiosFor(const ir::Graph& g, const cost::Cluster& cluster,
                              PlanOptions::Ratios policy) {
  const int n = cluster.size();
  std::vector<double> shares(static_cast<size_t>(n), 1.0 / n);
  assert(policy != PlanOptions::Ratios::Fixed);
  if (policy == PlanOptions::Ratios::Even) return shares;
  ir::DType dtype = ir::DType::Float32;
  for (ir::ValueId p : g.parameters) dtype = g.value(p).dtype;
  double total = 0;
  for (int j = 0; j < n; ++j) total += cluster.type(j).flops(dtype);
  for (int j = 0; j < n; ++j) shares[static_cast<size_t>(j)] = cluster.type(j).flops(dtype) / total;
  return shares;
}

std::vector<balance::Start> furtherStarts(const ir::Graph& g, const cost::Cluster& cluster) {
  const std::vector<double> proportional = ratiosFor(g, cluster, PlanOptions::Ratios::Proportional);
  std::vector<double> even = ratiosFor(g, cluster, PlanOptions::Ratios::Even);
  for (size_t j = 0; j < even.size(); ++j)
    if (std::abs(even[j] - proportional[j]) > 1e-12) return {{"even", std::move(even)}};
  return {};
}

import::ImportOptions importOptionsFor(const Plan& plan) {
  import::ImportOptions options;
  for (const PlanInput& in : plan.inputs) {
    import::InputSpec spec;
    spec.name = in.name;
    spec.dtype = in.dtype;
    spec.shape = in.shape;
    // A range in the plan stands (it may come from --input, not the file); without one, the
    // file's dtype and range do.
    spec.dtypeGiven = in.low || in.high;
    spec.low = in.low;
    spec.high = in.high;
    options.inputOverrides.push_back(std::move(spec));
  }
  return options;
}

ir::Graph planGraph(const ir::Graph& imported, const Plan& plan) {
  if (plan.importedNodeSegment.size() != imported.nodes.size())
    throw PlanError(fmt::format("the plan was made for a graph of {} nodes, but {} imports to {} nodes: "
                                "re-plan for this model",
                                plan.importedNodeSegment.size(), imported.sourceFile, imported.nodes.size()));
  ir::Segmentation s;
  s.nodeSegment = plan.importedNodeSegment;
  for (const Segment& seg : plan.segments) s.names.push_back(seg.name);
  for (int x : s.nodeSegment)
    if (x < 0 || x >= s.count())
      throw PlanError(fmt::format("the plan puts a node in segment {}, but has {} segments", x, s.count()));
  return ir::insertReshards(imported, s);
}

namespace {

// The collective calls the runtime makes in one step of `plan` (planned graph `g`): one per
// communicating step and pass, and the replicated parameters' gradients in buckets as
// runtime/core/gradient_buckets.h forms them (the first of at most 1 MiB, then `bucketBytes`
// each; one call each where bucketBytes <= 0). A plan that lists its buckets makes one call each.
int collectiveCalls(const Plan& plan, const ir::Graph& g, double bucketBytes) {
  if (!plan.gradientBuckets.empty()) {
    int calls = static_cast<int>(plan.gradientBuckets.size());
    for (const PlanStep& s : plan.steps) calls += (s.forwardCommunication > 0) + (s.backwardCommunication > 0);
    return calls;
  }
  int calls = 0;
  double gradientBytes = 0;
  for (const PlanStep& s : plan.steps) {
    if (s.kind == PlanStep::Kind::Convert && s.instruction == "replicate-parameter" && bucketBytes > 0) {
      if (s.backwardCommunication > 0) gradientBytes += static_cast<double>(g.value(s.from.value).bytes());
      continue;
    }
    calls += (s.forwardCommunication > 0) + (s.backwardCommunication > 0);
  }
  const double first = std::min(bucketBytes, double{1 << 20});
  if (gradientBytes > 0)
    calls += 1 + static_cast<int>(std::ceil(std::max(0.0, gradientBytes - first) / bucketBytes));
  return calls;
}

Plan searchPlan(const ir::Graph& imported, const cost::Cluster& cluster, const PlanOptions& options) {
  ir::Segmentation segmentation = ir::segmentGraph(imported, options.segments);
  const std::vector<int> importedSegments = segmentation.nodeSegment;
  const ir::Graph g = ir::insertReshards(imported, segmentation);
  synth::Theory theory(g, segmentation.nodeSegment);
  const bool optimise =
      options.ratios == PlanOptions::Ratios::Optimised || options.ratios == PlanOptions::Ratios::WholeLengths;
  balance::AlternationOptions alternation;
  alternation.maxRounds = optimise ? options.maxRounds : 0;
  alternation.wholeLengths = options.ratios == PlanOptions::Ratios::WholeLengths;
  alternation.milp = options.milp;
  alternation.cost = options.cost;
  if (options.strategy == PlanOptions::Strategy::DataParallel)
    alternation.cost.restrictions = dataParallelRestrictions(options.cost.restrictions);
  if (options.strategy == PlanOptions::Strategy::FullySharded)
    alternation.cost.restrictions = fullyShardedRestrictions(options.cost.restrictions);
  alternation.search = options.search;
  std::vector<double> start;
  if (options.ratios == PlanOptions::Ratios::Fixed) {
    if (options.fixedShares.size() != static_cast<size_t>(cluster.size()))
      throw Error(fmt::format("{} shares given for the {} devices of cluster {}", options.fixedShares.size(),
                              cluster.size(), cluster.name));
    start = options.fixedShares;
  } else {
    start = ratiosFor(g, cluster, optimise ? PlanOptions::Ratios::Proportional : options.ratios);
  }
  if (optimise && options.evenStart) alternation.moreStarts = furtherStarts(g, cluster);
  balance::AlternationResult result = balance::alternate(theory, cluster, start, alternation);
  // The plan prices what the ranks execute: the lengths it records (synth::ClassCut). The
  // alternation priced its candidates so already (result.seconds).
  balance::Executed exact = balance::executed(*result.table, result.program);
  if (exact.table) {
    result.table = std::move(exact.table);
    result.program = std::move(exact.program);
  }
  const synth::CostTable& table = *result.table;
  const synth::Program& program = result.program;
  const synth::SearchStats& stats = result.stats;

  Plan plan = planOf(imported, theory, table, program, stats, cluster, options.cost, options.search.cancel);
  for (int s = 0; s < segmentation.count(); ++s)
    plan.segments.push_back({segmentation.names[static_cast<size_t>(s)], table.segmentShares(s)});
  plan.importedNodeSegment = importedSegments;
  plan.segmentation = options.segmentText;
  plan.ratioPolicy = options.ratios == PlanOptions::Ratios::WholeLengths ? "milp"
                     : optimise                                        ? "lp"
                     : options.ratios == PlanOptions::Ratios::Even      ? "even"
                     : options.ratios == PlanOptions::Ratios::Fixed     ? "fixed"
                                                                        : "proportional";
  plan.strategy = options.strategy == PlanOptions::Strategy::Hap            ? "hap"
                  : options.strategy == PlanOptions::Strategy::FullySharded ? "fsdp"
                  : options.ratios == PlanOptions::Ratios::Even             ? "dp-ev"
                  : options.ratios == PlanOptions::Ratios::Proportional     ? "dp-cp"
                                                                            : "dp";
  if (optimise)
    for (const balance::HistoryEntry& h : result.history) plan.history.push_back({h.step, h.seconds, h.fits, h.note});
  plan.balanceNote = result.infeasible;
  plan.lpSolves = result.lpSolves;
  plan.lpSeconds = result.lpSeconds;
  plan.milpSolves = result.milpSolves;
  plan.milpSeconds = result.milpSeconds;

  if (options.baselines) {
    // The baselines are priced as `hap plan --baseline NAME` plans them: in one segment
    // (PlanRequest::effectiveSegments), on the imported graph without the reshards between this
    // plan's segments, which would copy a data-parallel program's activations for nothing (and
    // count them in its memory). A row's figures are then the baseline's plan's, opened.
    std::optional<synth::Theory> oneSegment;
    if (segmentation.count() > 1) oneSegment.emplace(imported);
    const synth::Theory& baselineTheory = oneSegment ? *oneSegment : theory;
    const ir::Graph& bg = baselineTheory.graph();
    const BaselineOptions bo{options.cost, options.search};
    const std::vector<double> proportional = ratiosFor(bg, cluster, PlanOptions::Ratios::Proportional);
    // A baseline whose restrictions admit no program (an op without a rule reading an input that
    // data parallelism splits) is a row saying so, not a failed plan.
    synth::SearchListener* listener = options.search.listener;
    auto row = [&](const std::string& name, auto price) {
      using Step = synth::PlanningStep;
      options.search.throwIfCancelled();
      if (listener) listener->onPlanningStep({Step::Kind::Started, "baseline " + name});
      try {
        plan.baselines.push_back(price());
      } catch (const synth::SearchError& e) {
        if (options.search.cancelled()) throw;
        Plan::Baseline b{name, {}, false, fmt::format("not applicable: {}", e.what())};
        b.estimate.fits = false;
        plan.baselines.push_back(std::move(b));
      }
      const Plan::Baseline& b = plan.baselines.back();
      if (listener)
        listener->onPlanningStep({Step::Kind::Finished, "baseline " + name,
                                  b.applicable ? b.estimate.iterationSeconds : -1, b.estimate.fits, false});
    };
    row("dp-ev", [&] {
      return dataParallelBaseline(baselineTheory, cluster, ratiosFor(bg, cluster, PlanOptions::Ratios::Even),
                                  "dp-ev", bo);
    });
    row("dp-cp", [&] { return dataParallelBaseline(baselineTheory, cluster, proportional, "dp-cp", bo); });
    row("fsdp", [&] { return fsdpBaseline(baselineTheory, cluster, proportional, bo); });
    if (options.machineBatchGraph)
      row("megatron", [&] { return megatronBaseline(*options.machineBatchGraph, cluster, bo); });
  }
  return plan;
}

}  // namespace

Plan makePlan(const ir::Graph& imported, const cost::Cluster& cluster, const PlanOptions& options) {
  Plan plan = searchPlan(imported, cluster, options);
  if (options.strategy != PlanOptions::Strategy::Hap || !options.baselines || options.preferSimplerWithin <= 0 ||
      options.ratios == PlanOptions::Ratios::Fixed || !options.search.pins.empty())
    return plan;
  // The better data-parallel baseline that fits, if it is priced within the margin.
  const Plan::Baseline* simpler = nullptr;
  for (const Plan::Baseline& b : plan.baselines)
    if ((b.name == "dp-cp" || b.name == "dp-ev") && b.applicable && b.estimate.fits &&
        (!simpler || b.estimate.iterationSeconds < simpler->estimate.iterationSeconds))
      simpler = &b;
  const double hap = plan.estimate.iterationSeconds;
  if (!simpler || !plan.estimate.fits || simpler->estimate.iterationSeconds > hap * (1 + options.preferSimplerWithin))
    return plan;
  PlanOptions dp = options;
  dp.strategy = PlanOptions::Strategy::DataParallel;
  dp.ratios = simpler->name == "dp-cp" ? PlanOptions::Ratios::Proportional : PlanOptions::Ratios::Even;
  dp.baselines = false;
  // In one segment, as the baseline's row was priced (searchPlan's baselines).
  dp.segments = ir::SegmentOptions{ir::SegmentOptions::Mode::None};
  dp.segmentText = "none";
  Plan chosen = searchPlan(imported, cluster, dp);
  const double bucket = options.cost.gradientBucketBytes;
  const int hapCalls = collectiveCalls(plan, planGraph(imported, plan), bucket);
  const int dpCalls = collectiveCalls(chosen, planGraph(imported, chosen), bucket);
  // Kept where it makes fewer calls, or is cheaper outright: HAP's program space holds it, but the
  // search adds gradient all-reduces whole while the stage model overlaps them with backward.
  const bool cheaper = chosen.estimate.fits && chosen.estimate.iterationSeconds < hap * (1 - 1e-9);
  if (dpCalls >= hapCalls && !cheaper) return plan;
  std::string name = simpler->name;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  chosen.choice =
      dpCalls < hapCalls
          ? fmt::format("{}'s program: priced {:.3f} ms against {:.3f} ms for HAP's cheapest, within the {:.0f}% the "
                        "cost model's ranking of close plans can be off, with {} collective calls a step instead of {}",
                        name, chosen.estimate.iterationSeconds * 1e3, hap * 1e3, options.preferSimplerWithin * 100,
                        dpCalls, hapCalls)
          : fmt::format("{}'s program: priced {:.3f} ms, below the {:.3f} ms of the search's (the search adds "
                        "gradient all-reduces whole; the stage model overlaps them with backward)",
                        name, chosen.estimate.iterationSeconds * 1e3, hap * 1e3);
  chosen.strategy = "hap";
  chosen.baselines = std::move(plan.baselines);
  chosen.history = std::move(plan.history);
  chosen.provenOptimal = plan.provenOptimal;
  chosen.notOptimal = plan.notOptimal;
  return chosen;
}

Plan makeMegatronPlan(const ir::Graph& global, const ir::Graph& machineBatch, const cost::Cluster& cluster,
                      const PlanOptions& options) {
  const int machines = static_cast<int>(cluster.machines.size());
  for (const cost::Machine& m : cluster.machines)
    if (m.count != cluster.machines[0].count)
      throw NotReplicable(fmt::format("cluster {}: machine {} has {} devices and machine {} has {}; Megatron runs one "
                                      "tensor-parallel program per machine, so every machine needs as many devices",
                                      cluster.name, cluster.machines[0].name, cluster.machines[0].count, m.name,
                                      m.count));
  Replication replication;
  if (machines > 1) replication = replicationFor(global, machineBatch, machines);

  // One segment: tensor parallelism at even shares.
  ir::Segmentation segmentation = ir::segmentGraph(machineBatch, ir::parseSegmentOptions("none"));
  const ir::Graph g = ir::insertReshards(machineBatch, segmentation);
  const synth::Theory theory(g, segmentation.nodeSegment);
  const BaselineOptions bo{options.cost, options.search};

  // Every machine runs the program of the slowest machine kind (a faster kind's own program may
  // differ; this one is priced on the machine that bounds the iteration).
  std::vector<MachineProgram> programs;
  try {
    programs = megatronPrograms(theory, cluster, bo);
  } catch (const synth::SearchError& e) {
    throw NotReplicable(fmt::format("{}: Megatron's tensor parallelism does not apply: {}. It splits the "
                                    "projections of attention blocks and transformer MLPs, found by structure; "
                                    "plan other models with hap plan",
                                    global.sourceFile, e.what()));
  }
  const MachineProgram* slowest = &programs.front();
  for (const MachineProgram& p : programs)
    if (p.seconds > slowest->seconds) slowest = &p;
  Plan plan = planOf(machineBatch, theory, *slowest->table, slowest->program, slowest->stats, *slowest->cluster,
                     options.cost, options.search.cancel);
  plan.cluster = cluster;
  plan.segments.push_back({segmentation.names[0], slowest->table->segmentShares(0)});
  plan.importedNodeSegment = segmentation.nodeSegment;
  plan.segmentation = "none";
  plan.ratioPolicy = "even";
  plan.strategy = "megatron";
  replication.allReduceSeconds =
      machines > 1 ? crossMachineGradientSeconds(cluster, gradientPieceBytes(*slowest->table, slowest->program, options.cost))
                   : 0;
  plan.estimate.iterationSeconds += replication.allReduceSeconds;
  // The program needs the same memory on every machine: it fits where every machine's devices hold it.
  for (const cost::Device& d : cluster.devices)
    plan.estimate.fits = plan.estimate.fits &&
                         plan.estimate.memoryBytes[static_cast<size_t>(d.localRank)] <= cluster.type(d.rank).memoryBytes;
  plan.replication = std::move(replication);
  if (options.baselines) plan.baselines.push_back(megatronBaseline(programs, cluster, bo));
  return plan;
}

std::vector<PlanDevice> worldDevices(const Plan& plan) {
  if (!plan.replication.replicated()) return plan.devices;
  std::vector<PlanDevice> out;
  const size_t k = plan.devices.size();
  for (const cost::Device& d : plan.cluster.devices) {
    const cost::Machine& m = plan.cluster.machines[static_cast<size_t>(d.machine)];
    PlanDevice w = plan.devices[static_cast<size_t>(d.rank) % k];
    w.rank = d.rank;
    w.machine = m.name;
    w.host = m.host;
    w.type = plan.cluster.types[static_cast<size_t>(d.type)].name;
    w.capacityBytes = plan.cluster.types[static_cast<size_t>(d.type)].memoryBytes;
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace hap::plan
