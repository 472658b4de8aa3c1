#include "engine/cost/pricing.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "engine/cost/collective_cost.h"
#include "engine/cost/profile.h"
#include "engine/cost/units.h"
#include "engine/ir/op_cost.h"

namespace hap::cost {
namespace {

std::string linkText(const Link& l) {
  return fmt::format("latency {}, bandwidth {}", formatQuantity(l.latency, Unit::Seconds),
                     formatQuantity(l.bandwidth, Unit::Bandwidth));
}

}  // namespace

std::string formatPricing(const ir::Graph& g, const Cluster& cluster) {
  const Profile* profile = cluster.measured.get();
  std::string out = "Pricing (where the cost model's figures come from):\n";
  if (!profile)
    out += "  no profile: every op by the inventory's roofline, every collective by its links\n";
  else
    out += fmt::format("  profile {} v{} ({}{}){}\n", profile->name, profile->version, profile->note,
                       profile->host.empty() ? "" : ", measured on " + profile->host,
                       profile->gradientExposure != 1
                           ? fmt::format("; gradient all-reduces {:.0f}% exposed (calibrated)", profile->gradientExposure * 100)
                           : "");

  // (family or "" for ops no benchmark stands for, dtype) → nodes, for every node with work.
  std::map<std::pair<std::string, ir::DType>, int> groups;
  std::set<std::string> unmeasuredOps;
  for (const ir::Node& n : g.nodes) {
    if (n.cost.flops <= 0 && n.cost.bytesRead <= 0 && n.cost.bytesWritten <= 0) continue;
    const std::optional<OpFamily> f = opFamilyOf(n.op);
    if (!f) unmeasuredOps.insert(n.op.substr(n.op.find("::") == std::string::npos ? 0 : n.op.find("::") + 2));
    ++groups[{f ? std::string(opFamilyName(*f)) : std::string(), ir::computeType(g, n)}];
  }
  for (const DeviceType& t : cluster.types) {
    const DeviceProfile* d = profile ? profile->device(t.name) : nullptr;
    out += fmt::format("  {}: ", t.name);
    if (!profile) out += "roofline\n";
    else if (!d)
      out += fmt::format("roofline (profile {} has no device type '{}')\n", profile->name, t.name);
    else
      out += fmt::format("profile{}{}\n", d->description.empty() ? "" : " (" + d->description + ")",
                         d->computeScale != 1 ? fmt::format(", calibrated compute x {:.3f}", d->computeScale) : "");
    if (!d) continue;
    for (const auto& [key, nodes] : groups) {
      const auto& [family, dtype] = key;
      const std::string what = fmt::format("{} {}", family.empty() ? "other ops" : family, ir::dtypeName(dtype));
      std::string source;
      if (family.empty()) source = "roofline (no benchmark stands for them)";
      else if (const OpThroughput* o = d->find(*parseOpFamily(family), dtype))
        source = fmt::format("measured, {} sizes {}..{} {}", o->samples.size(), o->samples.front().work,
                             o->samples.back().work, flopBound(o->family) ? "FLOPs" : "bytes");
      else source = "roofline (not measured in this dtype)";
      out += fmt::format("    {:<28} {:>5} nodes  {}\n", what, nodes, source);
    }
    if (!unmeasuredOps.empty()) {
      std::string ops;
      for (const std::string& op : unmeasuredOps) ops += (ops.empty() ? "" : ", ") + op;
      out += fmt::format("    other ops: {}\n", ops);
    }
  }
  if (cluster.size() > 1) {
    out += "  collectives:\n";
    const double slowdown = collectiveSlowdown(cluster);
    auto line = [&](Collective c, std::string_view algorithm, LinkClass k, const Link& inventory) {
      const CollectiveFit* fit = profile ? profile->collective(c, k, algorithm) : nullptr;
      const std::string name = fmt::format("{}{} ({})", collectiveName(c), algorithm.empty() ? "" : " " + std::string(algorithm),
                                           linkClassName(k));
      if (fit)
        out += fmt::format("    {:<34} profile fit: {} (residual {:.1f}%, {} sizes on {} ranks)", name, linkText(fit->link),
                           fit->relativeResidual * 100, fit->samples, fit->ranks);
      else
        out += fmt::format("    {:<34} inventory: {}, efficiency {}", name, linkText(inventory), cluster.efficiencyOf(c));
      out += slowdown != 1 ? fmt::format(", slowed x {:.3f} by its slowest device\n", slowdown) : "\n";
    };
    const struct {
      Collective c;
      std::string_view algorithm;
    } kinds[] = {{Collective::AllReduce, "ring"},     {Collective::AllReduce, "tree"},
                 {Collective::AllGather, "padded"},    {Collective::AllGather, "grouped"},
                 {Collective::ReduceScatter, "padded"}, {Collective::ReduceScatter, "grouped"},
                 {Collective::AllToAll, ""},           {Collective::Broadcast, ""}};
    bool intra = false;
    for (const Machine& m : cluster.machines) intra = intra || m.count > 1;
    for (const auto& k : kinds) {
      if (intra) line(k.c, k.algorithm, LinkClass::Intra, cluster.machines.front().link);
      if (cluster.spansMachines()) line(k.c, k.algorithm, LinkClass::Inter, cluster.network);
    }
  }
  return out;
}

}  // namespace hap::cost
