#include "engine/plan/explain.h"

#include "engine/plan/baselines.h"

#include <fmt/format.h>

#include <map>

#include "engine/cost/collective_cost.h"
#include "engine/cost/pricing.h"
#include "engine/ir/summary.h"
#include "engine/plan/baselines.h"
#include "engine/plan/planner.h"

namespace hap::plan {
namespace {

std::string ms(double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); }

// "dp-ev" -> "DP-EV": how plan and baseline names are shown.
std::string upper(std::string name) {
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::string form(const ir::Graph& g, const Form& f) {
  return fmt::format("{} {}", g.value(f.value).name, rules::formatRel(f.rel));
}

}  // namespace

std::string formatSummary(const Plan& p) {
  const std::string title = upper(p.strategy);
  std::string out = fmt::format("{} plan for {} ({} parameters, {} nodes) on {} ({} devices), ratios {}, {} segment{}\n\n",
                                title == "HAP" ? "HAP" : title + " baseline", p.modelPath, ir::formatCount(static_cast<double>(p.parameters)),
                                p.nodes, p.cluster.name, worldDevices(p).size(), p.ratioPolicy, p.segments.size(),
                                p.segments.size() == 1 ? "" : "s");
  out += fmt::format("  {:<8} {:>14} {:>14} {:>5} {:>12}\n", "plan", "iteration", "memory (max)", "fits",
                     title + " speedup");
  auto row = [&](const std::string& name, const Estimate& e, bool applicable = true, bool self = false) {
    if (!applicable) {
      out += fmt::format("  {:<8} {:>14}\n", name, "not applicable");
      return;
    }
    std::string speedup = self ? "" : fmt::format("{:.2f}x", e.iterationSeconds / p.estimate.iterationSeconds);
    out += fmt::format("  {:<8} {:>14} {:>14} {:>5} {:>12}\n", name, ms(e.iterationSeconds),
                       ir::formatBytes(static_cast<int64_t>(e.maxMemoryBytes())), e.fits ? "yes" : "NO", speedup);
  };
  row(title, p.estimate, true, true);
  for (const Plan::Baseline& b : p.baselines) row(upper(b.name), b.estimate, b.applicable);
  // Per device type: how many, share, busy time, memory against capacity.
  struct Agg { int count = 0; double share = 0, low = 1, busy = 0, memory = 0, capacity = 0; };
  std::map<std::string, Agg> types;
  for (const PlanDevice& d : worldDevices(p)) {
    Agg& a = types[d.type];
    ++a.count;
    const size_t programRank = static_cast<size_t>(d.rank) % p.devices.size();
    for (const Segment& seg : p.segments) {
      a.share = std::max(a.share, seg.ratios[programRank]);
      a.low = std::min(a.low, seg.ratios[programRank]);
    }
    a.busy = std::max(a.busy, d.computeSeconds);
    a.memory = std::max(a.memory, d.memoryBytes);
    a.capacity = d.capacityBytes;
  }
  out += fmt::format("\n  {:<18} {:>5} {:>16} {:>14} {:>22}\n", "device type", "count", "share", "compute", "memory / capacity");
  for (const auto& [type, a] : types)
    out += fmt::format("  {:<18} {:>5} {:>16} {:>14} {:>22}\n", type, a.count,
                       a.low == a.share ? fmt::format("{:.2f}%", a.share * 100)
                                        : fmt::format("{:.2f}-{:.2f}%", a.low * 100, a.share * 100),
                       ms(a.busy),
                       ir::formatBytes(static_cast<int64_t>(a.memory)) + " / " +
                           ir::formatBytes(static_cast<int64_t>(a.capacity)));
  int collectives = 0;
  for (const PlanStep& s : p.steps) collectives += s.kind == PlanStep::Kind::Convert && s.seconds() > 0;
  out += fmt::format("\n{} stages, {} collectives. Search: {} states expanded, {} stored, {:.3f} s, {}.\n",
                     p.stages.size(), collectives, p.expanded, p.stored, p.searchSeconds,
                     p.provenOptimal ? "optimal under the cost model"
                                     : "beam search after the A* state budget: not proven optimal");
  if (p.replication.replicated())
    out += fmt::format("Replicated on {} machines: each runs this {}-rank program on 1/{} of the batch (data "
                       "parallel across machines); gradient sums across machines {}.\n",
                       p.replication.machines, p.devices.size(), p.replication.machines,
                       ms(p.replication.allReduceSeconds));
  if (!p.history.empty()) {
    std::string steps;
    for (const Plan::HistoryEntry& h : p.history)
      steps += fmt::format("{}{} {}{}{}", steps.empty() ? "" : " -> ", h.step, ms(h.seconds), h.fits ? "" : " (does not fit)",
                           h.note.empty() ? "" : " [" + h.note + "]");
    std::string milp;
    if (p.milpSolves)
      milp = fmt::format(", {} MILP solve{} ({:.1f} ms)", p.milpSolves, p.milpSolves == 1 ? "" : "s", p.milpSeconds * 1e3);
    out += fmt::format("Ratios: {} LP solve{} ({:.1f} ms){}; {}.\n", p.lpSolves, p.lpSolves == 1 ? "" : "s",
                       p.lpSeconds * 1e3, milp, steps);
    if (p.ratioPolicy == "milp")
      out += "Lengths: whole rows, heads and experts per device chosen by MILP and priced as executed.\n";
  }
  if (!p.balanceNote.empty()) out += "Note: " + p.balanceNote + ".\n";
  if (!p.choice.empty()) out += "Chosen: " + p.choice + " (--prefer-simpler-within 0 keeps HAP's).\n";
  for (const Plan::Replicated& u : p.unsharded) out += "Replicated: " + u.message + ".\n";
  if (!p.unsharded.empty())
    out += fmt::format("Replicated for want of a rule: {:.1f}% of the forward FLOPs.\n",
                       100 * p.unshardedFlopsShare);
  return out;
}

std::string formatExplain(const ir::Graph& imported, const Plan& p) {
  const ir::Graph g = planGraph(imported, p);
  // The devices the program's all-reduces run among: a replicated plan's one machine.
  const cost::Cluster programCluster = p.replication.replicated() ? machineCluster(p.cluster, 0) : p.cluster;
  std::string out;
  if (p.segments.size() > 1) {
    out += "Segments (ratio per device type):\n";
    for (const Segment& seg : p.segments) {
      std::map<std::string, double> byType;
      for (const PlanDevice& d : p.devices) byType[d.type] = seg.ratios[static_cast<size_t>(d.rank)];
      std::string shares;
      for (const auto& [type, r] : byType) shares += fmt::format("  {} {:.3f}%", type, r * 100);
      out += fmt::format("  {:<20}{}\n", seg.name, shares);
    }
  }
  for (size_t si = 0; si < p.stages.size(); ++si) {
    const Stage& st = p.stages[si];
    if (st.backward) break;  // the forward stages show the program; backward mirrors them
    out += fmt::format("Stage {}: communication {}, computation {}\n", si + 1, ms(st.communicationSeconds),
                       ms(st.computationSeconds));
    for (int i = st.firstStep; i < st.endStep; ++i) {
      const PlanStep& s = p.steps[static_cast<size_t>(i)];
      if (s.kind == PlanStep::Kind::Convert) {
        if (s.seconds() == 0 && s.instruction != "slice" && s.instruction != "load-shard") continue;
        const ir::Value& v = g.value(s.to.value);
        std::string what = s.instruction + (s.method.empty() ? "" : " (" + s.method + ")");
        // An all-reduce (a replicated parameter's: of its gradient) names the algorithm the
        // runtime will run for it.
        if (s.instruction == "all-reduce" || s.instruction == "replicate-parameter")
          what += fmt::format(" ({})", cost::allReduceAlgorithmName(
                                           cost::allReduceCost(programCluster, static_cast<double>(v.bytes())).algorithm));
        out += fmt::format("  {:<34} {} {}: {} -> {}   {}\n", what, v.name, ir::formatShape(v.shape),
                           rules::formatRel(s.from.rel), rules::formatRel(s.to.rel),
                           s.seconds() > 0 ? fmt::format("{} (fwd {}, bwd {})", ms(s.seconds()), ms(s.forwardSeconds),
                                                         ms(s.backwardSeconds))
                                           : "free");
      } else {
        const ir::Node& n = g.node(s.node);
        std::string ins, outs;
        for (const Form& f : s.inputs) ins += (ins.empty() ? "" : ", ") + form(g, f);
        for (const Form& f : s.outputs) outs += (outs.empty() ? "" : ", ") + form(g, f);
        out += fmt::format("  {:<28} {:<12} [{}] ({}) -> ({})   {}\n", n.op.substr(n.op.find("::") + 2),
                           s.variant, n.scope.empty() ? "top" : n.scope, ins, outs,
                           ms(s.seconds()));
      }
    }
  }
  double forward = 0, backward = 0;
  size_t backwardStages = 0;
  for (const Stage& st : p.stages) (st.backward ? backward : forward) += st.seconds(), backwardStages += st.backward;
  out += fmt::format("Predicted iteration time: {} (forward {} in {} stages, backward {} in {} stages)\n",
                     ms(p.estimate.iterationSeconds), ms(forward), p.stages.size() - backwardStages, ms(backward),
                     backwardStages);
  out += cost::formatPricing(g, p.cluster);
  return out;
}

}  // namespace hap::plan
