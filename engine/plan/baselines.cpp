#include "engine/plan/baselines.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/balance/alternation.h"
#include "engine/base/error.h"
#include "engine/synth/memory.h"
#include "engine/synth/stages.h"

namespace hap::plan {
namespace {

synth::SearchOptions searchOptions(const BaselineOptions& o) {
  synth::SearchOptions so;
  so.cancel = o.search.cancel;
  so.maxStates = o.search.maxStates;
  so.beamWidth = o.search.beamWidth;
  return so;
}

// Megatron's per-machine program (its pins, no SFB) on a table of one machine at even shares.
synth::Program megatronProgram(const synth::CostTable& table, const BaselineOptions& options,
                               synth::SearchStats* stats) {
  synth::SearchOptions so = searchOptions(options);
  so.pins = {{"*.attn.q", "column"}, {"*.attn.k", "column"}, {"*.attn.v", "column"},
             {"*.attn.out", "row"},  {"*.ffn.fc1", "column"}, {"*.ffn.fc2", "row"}};
  return synth::search(table, so, stats);
}

synth::Restrictions megatronRestrictions(synth::Restrictions base) {
  base.sfb = false;
  return base;
}

}  // namespace

cost::Cluster machineCluster(const cost::Cluster& c, int m) {
  cost::Cluster one = c;
  one.machines = {c.machines[static_cast<size_t>(m)]};
  one.network = {};
  one.devices.clear();
  for (const cost::Device& d : c.devices)
    if (d.machine == m) one.devices.push_back({static_cast<int>(one.devices.size()), 0, d.localRank, d.type});
  return one;
}

double crossMachineGradientSeconds(const cost::Cluster& cluster, const std::vector<double>& gradientBytes) {
  const int machines = static_cast<int>(cluster.machines.size());
  if (machines < 2) return 0;
  int perMachine = 0;
  for (const cost::Machine& mc : cluster.machines) perMachine = std::max(perMachine, mc.count);
  const double bandwidth = cluster.network.bandwidth * cluster.efficiencyOf(cost::Collective::AllReduce);
  double seconds = 0;
  for (double bytes : gradientBytes)
    seconds += 2.0 * (machines - 1) * cluster.network.latency +
               2.0 * (machines - 1) / machines * perMachine * bytes / bandwidth;
  return seconds;
}

std::vector<double> gradientPieceBytes(const synth::CostTable& table, const synth::Program& p,
                                       const synth::CostOptions& options) {
  const ir::Graph& g = table.theory().graph();
  const double k = table.cluster().size();
  std::vector<double> bytes;
  for (const synth::MemoryTerm& t : synth::memoryTerms(table, p, options))
    if (g.value(t.value).kind == ir::ValueKind::Parameter)
      bytes.push_back(static_cast<double>(g.value(t.value).bytes()) * (t.bytes.perShare > 0 ? 1.0 / k : 1.0));
  return bytes;
}

Estimate estimateOf(const synth::CostTable& table, const synth::Program& p, const synth::CostOptions& options) {
  Estimate e;
  e.iterationSeconds = synth::iterationSeconds(table, p);
  e.memoryBytes = synth::deviceMemory(table, p, options);
  for (int j = 0; j < table.cluster().size(); ++j)
    e.fits = e.fits && e.memoryBytes[static_cast<size_t>(j)] <= table.cluster().type(j).memoryBytes;
  return e;
}

synth::Restrictions dataParallelRestrictions(synth::Restrictions base) {
  base.parameterShards = false;
  base.sfb = false;
  base.inputShardsOnBatchOnly = true;
  return base;
}

synth::Restrictions fullyShardedRestrictions(synth::Restrictions base) {
  base.sfb = false;
  base.inputShardsOnBatchOnly = true;
  base.parameterReplicas = false;
  base.parametersWhole = true;
  return base;
}

Plan::Baseline dataParallelBaseline(const synth::Theory& theory, const cost::Cluster& cluster,
                                    const std::vector<double>& shares, const std::string& name,
                                    const BaselineOptions& options) {
  synth::CostTable table(theory, cluster, shares, options.cost);
  table.restrict(dataParallelRestrictions());
  const balance::Executed e = balance::executed(table, synth::search(table, searchOptions(options)));
  return {name, estimateOf(*e.table, e.program, options.cost), true,
          "replicated parameters, batch split, gradients all-reduced"};
}

Plan::Baseline fsdpBaseline(const synth::Theory& theory, const cost::Cluster& cluster,
                            const std::vector<double>& shares, const BaselineOptions& options) {
  synth::CostTable searched(theory, cluster, shares, options.cost);
  searched.restrict(fullyShardedRestrictions());
  const balance::Executed executed = balance::executed(searched, synth::search(searched, searchOptions(options)));
  const synth::CostTable& table = *executed.table;
  const synth::Program& p = executed.program;
  Estimate e = estimateOf(table, p, options.cost);
  // ZeRO-3 frees a gathered parameter after its use and gathers it again in backward; the two
  // largest gathered copies are resident at once.
  const ir::Graph& g = theory.graph();
  double regather = 0, gathered = 0, first = 0, second = 0;
  std::vector<bool> seen(g.values.size(), false);
  for (const synth::Step& s : p.steps) {
    if (s.kind != synth::Step::Kind::Convert || s.conversion.kind != synth::ConversionKind::AllGather) continue;
    const ir::Value& v = g.value(s.value);
    if (v.kind != ir::ValueKind::Parameter || seen[static_cast<size_t>(v.id)]) continue;
    seen[static_cast<size_t>(v.id)] = true;
    regather += s.conversion.forwardSeconds;
    const double bytes = static_cast<double>(v.bytes());
    gathered += bytes;
    if (bytes > first) second = first, first = bytes;
    else second = std::max(second, bytes);
  }
  e.iterationSeconds += regather;
  e.fits = true;
  for (int j = 0; j < cluster.size(); ++j) {
    double& m = e.memoryBytes[static_cast<size_t>(j)];
    m = m - gathered + first + second;
    e.fits = e.fits && m <= cluster.type(j).memoryBytes;
  }
  return {"fsdp", e, true,
          fmt::format("parameters sharded on dimension 0, gathered per use (+{:.3f} ms re-gathering in backward)",
                      regather * 1e3)};
}

std::vector<MachineProgram> megatronPrograms(const synth::Theory& theory, const cost::Cluster& cluster,
                                             const BaselineOptions& options) {
  std::vector<MachineProgram> out;
  for (int m = 0; m < static_cast<int>(cluster.machines.size()); ++m) {
    const cost::Machine& machine = cluster.machines[static_cast<size_t>(m)];
    if (std::any_of(out.begin(), out.end(), [&](const MachineProgram& p) { return p.sameKind(machine); })) continue;
    MachineProgram p;
    p.machine = m;
    p.deviceType = machine.deviceType;
    p.count = machine.count;
    p.cluster = std::make_unique<cost::Cluster>(machineCluster(cluster, m));
    p.table = std::make_unique<synth::CostTable>(
        theory, *p.cluster, std::vector<double>(static_cast<size_t>(machine.count), 1.0 / machine.count), options.cost);
    p.table->restrict(megatronRestrictions(options.cost.restrictions));
    p.program = megatronProgram(*p.table, options, &p.stats);
    balance::Executed e = balance::executed(*p.table, p.program);  // 12 heads on 8 devices: 2 or 1 each
    p.table = std::move(e.table);
    p.program = std::move(e.program);
    p.seconds = synth::iterationSeconds(*p.table, p.program);
    out.push_back(std::move(p));
  }
  return out;
}

Plan::Baseline megatronBaseline(const std::vector<MachineProgram>& programs, const cost::Cluster& cluster,
                                const BaselineOptions& options) {
  Plan::Baseline b{"megatron", {}, true, ""};
  // Each machine runs its kind's program; the slowest bounds the iteration.
  std::vector<std::vector<double>> memoryOf;  // per program: per device of its machine
  std::vector<double> gradientBytes;          // per parameter tensor, per device (the largest machine plan's)
  double slowest = 0;
  for (const MachineProgram& p : programs) {
    memoryOf.push_back(synth::deviceMemory(*p.table, p.program, options.cost));
    slowest = std::max(slowest, p.seconds);
    std::vector<double> bytes = gradientPieceBytes(*p.table, p.program, options.cost);
    if (bytes.size() >= gradientBytes.size()) gradientBytes = std::move(bytes);
  }
  b.estimate.memoryBytes.assign(static_cast<size_t>(cluster.size()), 0.0);
  for (const cost::Device& d : cluster.devices) {
    const cost::Machine& machine = cluster.machines[static_cast<size_t>(d.machine)];
    for (size_t k = 0; k < programs.size(); ++k)
      if (programs[k].sameKind(machine))
        b.estimate.memoryBytes[static_cast<size_t>(d.rank)] = memoryOf[k][static_cast<size_t>(d.localRank)];
  }
  // Data parallelism across machines: every tensor-parallel rank all-reduces each gradient shard
  // with its peers (a ring over the machines, one per parameter tensor as DP's all-reduces are);
  // a machine's ranks share its NIC.
  const double crossing = crossMachineGradientSeconds(cluster, gradientBytes);
  const int machines = static_cast<int>(cluster.machines.size());
  b.estimate.iterationSeconds = slowest + crossing;
  b.estimate.fits = true;
  for (int j = 0; j < cluster.size(); ++j)
    b.estimate.fits = b.estimate.fits && b.estimate.memoryBytes[static_cast<size_t>(j)] <= cluster.type(j).memoryBytes;
  b.note = fmt::format("tensor parallel inside each machine, data parallel across {} machine{} (gradient all-reduce "
                       "{:.3f} ms; run it: hap plan --baseline megatron)",
                       machines, machines == 1 ? "" : "s", crossing * 1e3);
  return b;
}

Plan::Baseline megatronBaseline(const ir::Graph& machineBatch, const cost::Cluster& cluster,
                                const BaselineOptions& options) {
  const synth::Theory theory(machineBatch);
  try {
    return megatronBaseline(megatronPrograms(theory, cluster, options), cluster, options);
  } catch (const synth::SearchError& e) {
    if (options.search.cancelled()) throw;  // cancelled, not inapplicable
    Plan::Baseline b{"megatron", {}, false, fmt::format("not applicable: {}", e.what())};
    b.estimate.fits = false;
    return b;
  }
}

}  // namespace hap::plan
