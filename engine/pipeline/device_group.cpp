#include "engine/pipeline/device_group.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace hap::pipeline {

std::vector<std::vector<int>> groupUnits(const cost::Cluster& cluster) {
  std::vector<std::vector<int>> units;
  if (cluster.machines.size() <= 1) {
    for (const cost::Device& d : cluster.devices) units.push_back({d.rank});
    return units;
  }
  units.resize(cluster.machines.size());
  for (const cost::Device& d : cluster.devices) units[static_cast<size_t>(d.machine)].push_back(d.rank);
  return units;
}

cost::Cluster subCluster(const cost::Cluster& cluster, const std::vector<int>& ranks) {
  if (ranks.empty()) throw cost::ClusterError(fmt::format("cluster '{}': a device group needs a device", cluster.name));
  cost::Cluster out = cluster;
  out.machines.clear();
  out.devices.clear();
  out.name = fmt::format("{}[ranks {}-{}]", cluster.name, ranks.front(), ranks.back());
  std::vector<int> machineIndex(cluster.machines.size(), -1);
  for (int r : ranks) {
    if (r < 0 || r >= cluster.size())
      throw cost::ClusterError(fmt::format("cluster '{}' has no rank {}", cluster.name, r));
    const cost::Device& d = cluster.devices[static_cast<size_t>(r)];
    int& mi = machineIndex[static_cast<size_t>(d.machine)];
    if (mi < 0) {
      mi = static_cast<int>(out.machines.size());
      out.machines.push_back(cluster.machines[static_cast<size_t>(d.machine)]);
      out.machines.back().count = 0;
    }
    cost::Machine& m = out.machines[static_cast<size_t>(mi)];
    out.devices.push_back({out.size(), mi, m.count, d.type});
    ++m.count;
  }
  // Devices are listed machine by machine (ranks ascending within a machine group).
  std::stable_sort(out.devices.begin(), out.devices.end(),
                   [](const cost::Device& a, const cost::Device& b) { return a.machine < b.machine; });
  for (size_t i = 0; i < out.devices.size(); ++i) out.devices[i].rank = static_cast<int>(i);
  return out;
}

std::string groupSignature(const cost::Cluster& cluster, const std::vector<int>& ranks) {
  std::string key;
  int machine = -1, count = 0, type = -1;
  auto flush = [&] {
    if (count) key += fmt::format("{}x{};", type, count);
  };
  for (int r : ranks) {
    const cost::Device& d = cluster.devices[static_cast<size_t>(r)];
    if (d.machine != machine) {
      flush();
      machine = d.machine;
      count = 0;
      type = d.type;
    }
    ++count;
  }
  flush();
  return key;
}

namespace {
int machinesOf(const cost::Cluster& cluster, const std::vector<int>& ranks) {
  std::set<int> m;
  for (int r : ranks) m.insert(cluster.devices[static_cast<size_t>(r)].machine);
  return static_cast<int>(m.size());
}
}  // namespace

double transferSeconds(const cost::Cluster& cluster, const std::vector<int>& from, const std::vector<int>& to,
                       double bytes) {
  if (bytes <= 0) return 0;
  std::set<int> machines;
  for (int r : from) machines.insert(cluster.devices[static_cast<size_t>(r)].machine);
  for (int r : to) machines.insert(cluster.devices[static_cast<size_t>(r)].machine);
  if (machines.size() == 1) {
    const cost::Link& l = cluster.machines[static_cast<size_t>(*machines.begin())].link;
    return l.bandwidth > 0 ? l.latency + bytes / l.bandwidth : 0;
  }
  const cost::Link& l = cluster.network;
  const int parallel = std::max(1, std::min(machinesOf(cluster, from), machinesOf(cluster, to)));
  return l.bandwidth > 0 ? l.latency + bytes / (parallel * l.bandwidth) : 0;
}

double groupFlops(const cost::Cluster& cluster, const std::vector<int>& ranks, ir::DType dtype) {
  double f = 0;
  for (int r : ranks) f += cluster.type(r).flops(dtype);
  return f;
}

double groupBandwidth(const cost::Cluster& cluster, const std::vector<int>& ranks) {
  double b = 0;
  for (int r : ranks) b += cluster.type(r).memoryBandwidth;
  return b;
}

std::string describeGroup(const cost::Cluster& cluster, const std::vector<int>& ranks) {
  std::vector<int> machines;
  for (int r : ranks) {
    const int m = cluster.devices[static_cast<size_t>(r)].machine;
    if (machines.empty() || machines.back() != m) machines.push_back(m);
  }
  if (machines.size() == 1 && static_cast<int>(ranks.size()) < cluster.machines[static_cast<size_t>(machines[0])].count)
    return fmt::format("ranks {}-{} on {}", ranks.front(), ranks.back(), cluster.machines[static_cast<size_t>(machines[0])].name);
  std::string names;
  for (size_t i = 0; i < machines.size(); ++i) {
    if (machines.size() > 4 && i == 2) {
      names += fmt::format(", ... ({} more)", machines.size() - 3);
      i = machines.size() - 2;
      continue;
    }
    names += (i ? ", " : "") + cluster.machines[static_cast<size_t>(machines[i])].name;
  }
  return fmt::format("{} (ranks {}-{}, {} devices)", names, ranks.front(), ranks.back(), ranks.size());
}

}  // namespace hap::pipeline
