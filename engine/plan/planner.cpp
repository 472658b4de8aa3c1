#include "engine/plan/planner.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <fstream>
#include <numeric>

#include "engine/balance/alternation.h"
#include "engine/base/error.h"
#include "engine/synth/cost_table.h"
#include "engine/synth/memory.h"
#include "engine/synth/theory.h"

namespace hap::plan {
namespace {

using synth::Rel;

// A form of value x with its exact per-rank lengths (G only).
Form makeForm(const synth::Theory& t, const std::vector<double>& shares, ir::ValueId x, Rel r) {
  Form f;
  f.value = x;
  f.rel = r;
  if (synth::isGather(r)) f.lengths = t.classes().lengths({x, r}, shares);
  return f;
}

Estimate estimateOf(const synth::CostTable& table, const synth::Program& p,
                    const synth::CostOptions& options) {
  Estimate e;
  e.iterationSeconds = p.seconds;
  const synth::Affine memory = synth::memoryBytes(table, p, options);
  for (double share : table.shares()) e.memoryBytes.push_back(memory.at(share));
  for (int j = 0; j < table.cluster().size(); ++j)
    e.fits = e.fits && e.memoryBytes[static_cast<size_t>(j)] <= table.cluster().type(j).memoryBytes;
  return e;
}

Plan::Baseline baseline(const synth::Theory& t, const cost::Cluster& c, std::vector<double> shares,
                        const std::string& name, const PlanOptions& options) {
  synth::CostTable table(t, c, std::move(shares), options.cost);
  table.restrict({/*parameterShards=*/false, /*sfb=*/false, /*inputShardsOnBatchOnly=*/true});
  synth::SearchOptions so;
  so.cancel = options.search.cancel;
  so.maxStates = options.search.maxStates;
  so.beamWidth = options.search.beamWidth;
  synth::Program p = synth::search(table, so);
  return {name, estimateOf(table, p, options.cost)};
}

}  // namespace

std::string sha256File(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot be read to compute its hash", path));
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    EVP_DigestUpdate(ctx, buf.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

std::vector<double> ratiosFor(const ir::Graph& g, const cost::Cluster& cluster,
                              PlanOptions::Ratios policy) {
  const int n = cluster.size();
  std::vector<double> shares(static_cast<size_t>(n), 1.0 / n);
  if (policy == PlanOptions::Ratios::Even) return shares;
  ir::DType dtype = ir::DType::Float32;
  for (ir::ValueId p : g.parameters) dtype = g.value(p).dtype;
  double total = 0;
  for (int j = 0; j < n; ++j) total += cluster.type(j).flops(dtype);
  for (int j = 0; j < n; ++j) shares[static_cast<size_t>(j)] = cluster.type(j).flops(dtype) / total;
  return shares;
}

Plan makePlan(const ir::Graph& g, const cost::Cluster& cluster, const PlanOptions& options) {
  synth::Theory theory(g);
  const bool optimise = options.ratios == PlanOptions::Ratios::Optimised;
  balance::AlternationOptions alternation;
  alternation.maxRounds = optimise ? options.maxRounds : 0;
  alternation.cost = options.cost;
  alternation.search = options.search;
  balance::AlternationResult result = balance::alternate(
      theory, cluster, ratiosFor(g, cluster, optimise ? PlanOptions::Ratios::Proportional : options.ratios),
      alternation);
  const std::vector<double>& shares = result.shares();
  const synth::CostTable& table = *result.table;
  const synth::Program& program = result.program;
  const synth::SearchStats& stats = result.stats;

  Plan plan;
  plan.modelPath = g.sourceFile;
  plan.modelSha256 = sha256File(g.sourceFile);
  for (ir::ValueId in : g.inputs)
    plan.inputs.push_back(fmt::format("{} {} {}", g.value(in).name, ir::dtypeName(g.value(in).dtype),
                                      ir::formatShape(g.value(in).shape)));
  plan.parameters = g.parameterCount();
  plan.nodes = static_cast<int>(g.nodes.size());
  plan.cluster = cluster;
  plan.ratios = shares;
  plan.ratioPolicy = optimise ? "lp" : options.ratios == PlanOptions::Ratios::Even ? "even" : "proportional";
  if (optimise)
    for (const balance::HistoryEntry& h : result.history) plan.history.push_back({h.step, h.seconds, h.fits});
  plan.balanceNote = result.infeasible;
  plan.lpSolves = result.lpSolves;
  plan.lpSeconds = result.lpSeconds;

  // Steps with exact forms; stages start at every step that communicates.
  std::vector<double> busy(static_cast<size_t>(cluster.size()), 0.0);
  for (const synth::Step& s : program.steps) {
    PlanStep ps;
    ps.node = s.node;
    if (s.kind == synth::Step::Kind::Convert) {
      ps.kind = PlanStep::Kind::Convert;
      ps.instruction = synth::conversionName(s.conversion.kind);
      const bool methodMatters = s.conversion.kind == synth::ConversionKind::AllGather ||
                                 s.conversion.kind == synth::ConversionKind::ReduceScatter;
      ps.method = methodMatters ? (s.conversion.method == cost::Method::Padded ? "padded" : "grouped") : "";
      ps.from = makeForm(theory, shares, s.value, s.conversion.from);
      ps.to = makeForm(theory, shares, s.value, s.conversion.to);
      ps.forwardSeconds = s.conversion.forwardSeconds;
      ps.backwardSeconds = s.conversion.backwardSeconds;
    } else {
      const rules::Variant& v = theory.variants(s.node)[static_cast<size_t>(s.variant)];
      const ir::Node& n = g.node(s.node);
      const std::vector<ir::ValueId> ins = n.tensorInputs();
      ps.variant = v.name;
      ps.sfb = v.sfb;
      for (size_t i = 0; i < ins.size(); ++i) ps.inputs.push_back(makeForm(theory, shares, ins[i], v.inputs[i]));
      for (size_t o = 0; o < n.outputs.size(); ++o)
        ps.outputs.push_back(makeForm(theory, shares, n.outputs[o], v.outputs[o]));
      double forward = 0;
      for (int j = 0; j < cluster.size(); ++j) {
        busy[static_cast<size_t>(j)] += table.deviceSeconds(s.node, s.variant, j);
        forward = std::max(forward, table.deviceForwardSeconds(s.node, s.variant, j));
      }
      ps.forwardSeconds = forward;
      ps.backwardSeconds = s.seconds - forward;
    }
    const bool communicates = ps.kind == PlanStep::Kind::Convert && ps.seconds() > 0;
    if (plan.stages.empty() || (communicates && plan.steps.size() > 0 &&
                                plan.stages.back().computationSeconds > 0)) {
      plan.stages.push_back({static_cast<int>(plan.steps.size()), static_cast<int>(plan.steps.size()), 0, 0});
    }
    Stage& st = plan.stages.back();
    (ps.kind == PlanStep::Kind::Convert ? st.communicationSeconds : st.computationSeconds) += ps.seconds();
    plan.steps.push_back(std::move(ps));
    st.endStep = static_cast<int>(plan.steps.size());
  }
  plan.estimate = estimateOf(table, program, options.cost);
  for (int j = 0; j < cluster.size(); ++j) {
    const cost::Device& d = cluster.devices[static_cast<size_t>(j)];
    const cost::Machine& m = cluster.machines[static_cast<size_t>(d.machine)];
    plan.devices.push_back({j, m.name, m.host, cluster.type(j).name, cluster.type(j).memoryBytes,
                            plan.estimate.memoryBytes[static_cast<size_t>(j)], busy[static_cast<size_t>(j)]});
  }
  plan.provenOptimal = stats.provenOptimal;
  plan.expanded = stats.expanded;
  plan.generated = stats.generated;
  plan.stored = stats.stored;
  plan.searchSeconds = stats.seconds;

  if (options.baselines) {
    plan.baselines.push_back(baseline(theory, cluster, ratiosFor(g, cluster, PlanOptions::Ratios::Even),
                                      "dp-ev", options));
    plan.baselines.push_back(baseline(
        theory, cluster, ratiosFor(g, cluster, PlanOptions::Ratios::Proportional), "dp-cp", options));
  }
  return plan;
}

}  // namespace hap::plan
