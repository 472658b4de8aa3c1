#include "engine/cost/collective_cost.h"

#include "engine/cost/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace hap::cost {
namespace {

void checkSize(const Cluster& cluster, std::span<const double> v, const char* what) {
  if (v.size() != static_cast<size_t>(cluster.size()))
    throw std::invalid_argument(
        fmt::format("{}: {} entries for a cluster of {} devices", what, v.size(), cluster.size()));
}

// Shared by all-gather and its dual reduce-scatter.
double gatherLike(const Cluster& cluster, Collective c, Method method,
                  std::span<const double> shardBytes, const char* what) {
  checkSize(cluster, shardBytes, what);
  const int n = cluster.size();
  if (n <= 1) return 0;
  const Link link = collectiveLink(cluster, c, methodName(method));
  const double call = callSeconds(cluster);
  if (method == Method::Padded) {
    double largest = *std::max_element(shardBytes.begin(), shardBytes.end());
    return call + (n - 1) * (link.latency + largest / link.bandwidth);
  }
  double seconds = 0;
  for (double shard : shardBytes)
    if (shard > 0) seconds += call + ceilLog2(n) * link.latency + shard / link.bandwidth;
  return seconds;
}

// How many of the cluster's devices each machine holds.
std::vector<int> devicesPerMachine(const Cluster& cluster) {
  std::vector<int> perMachine(cluster.machines.size(), 0);
  for (const Device& d : cluster.devices) ++perMachine[static_cast<size_t>(d.machine)];
  return perMachine;
}

}  // namespace

std::string_view methodName(Method m) {
  return m == Method::Padded ? "padded" : "grouped";
}

double callSeconds(const Cluster& cluster) {
  if (cluster.size() <= 1) return 0;
  double worst = 0;
  for (const Device& d : cluster.devices) worst = std::max(worst, cluster.type(d.rank).collectiveCallSeconds);
  return worst * collectiveSlowdown(cluster);
}

int ceilLog2(int n) {
  int depth = 0;
  while ((1LL << depth) < n) ++depth;
  return depth;
}

double collectiveSlowdown(const Cluster& cluster) {
  if (!cluster.measured || cluster.types.empty()) return 1;
  double worst = 0;
  for (const DeviceType& t : cluster.types) {
    const DeviceProfile* d = cluster.measured->device(t.name);
    worst = std::max(worst, d ? d->collectiveSlowdown : 1.0);
  }
  return worst;
}

namespace {

// A link as collective c sees it: the profile's fit for c on that link class when there is one
// (the fit already holds the collective's efficiency), else the inventory's link with c's
// efficiency; then slowed down by the slowest participant (collectiveSlowdown).
Link effective(const Cluster& cluster, const Link& inventory, LinkClass k, Collective c, std::string_view algorithm) {
  Link l = inventory;
  const CollectiveFit* fit = cluster.measured ? cluster.measured->collective(c, k, algorithm) : nullptr;
  if (fit) l = fit->link;
  else l.bandwidth *= cluster.efficiencyOf(c);
  const double slowdown = collectiveSlowdown(cluster);
  l.latency *= slowdown;
  l.bandwidth /= slowdown;
  return l;
}

}  // namespace

Link machineLink(const Cluster& cluster, int machine, Collective c, std::string_view algorithm) {
  return effective(cluster, cluster.machines[static_cast<size_t>(machine)].link, LinkClass::Intra, c, algorithm);
}

Link networkLink(const Cluster& cluster, Collective c, std::string_view algorithm) {
  return effective(cluster, cluster.network, LinkClass::Inter, c, algorithm);
}

Link collectiveLink(const Cluster& cluster, Collective c, std::string_view algorithm) {
  if (cluster.size() <= 1) return {std::numeric_limits<double>::infinity(), 0};
  const std::vector<int> perMachine = devicesPerMachine(cluster);
  bool first = true;
  Link bound;
  auto include = [&](const Link& l) {
    bound.bandwidth = first ? l.bandwidth : std::min(bound.bandwidth, l.bandwidth);
    bound.latency = first ? l.latency : std::max(bound.latency, l.latency);
    first = false;
  };
  if (cluster.spansMachines()) include(networkLink(cluster, c, algorithm));
  for (size_t m = 0; m < perMachine.size(); ++m)
    if (perMachine[m] >= 2) include(machineLink(cluster, static_cast<int>(m), c, algorithm));
  return bound;
}

GatherLinear gatherLinear(const Cluster& cluster, Collective c, Method method, double bytes) {
  const int n = cluster.size();
  if (n <= 1) return {};
  const Link link = collectiveLink(cluster, c, methodName(method));
  const double call = callSeconds(cluster);
  if (method == Method::Padded) return {call + (n - 1) * link.latency, (n - 1) * bytes / link.bandwidth};
  return {n * (call + ceilLog2(n) * link.latency) + bytes / link.bandwidth, 0};
}

double allGatherSeconds(const Cluster& cluster, Method method, std::span<const double> shardBytes) {
  return gatherLike(cluster, Collective::AllGather, method, shardBytes, "allGatherSeconds");
}

double reduceScatterSeconds(const Cluster& cluster, Method method,
                            std::span<const double> shardBytes) {
  return gatherLike(cluster, Collective::ReduceScatter, method, shardBytes, "reduceScatterSeconds");
}

std::string_view allReduceAlgorithmName(AllReduceAlgorithm a) {
  switch (a) {
    case AllReduceAlgorithm::Ring: return "ring";
    case AllReduceAlgorithm::Tree: return "tree";
    case AllReduceAlgorithm::Hierarchical: return "hierarchical";
  }
  return "?";
}

std::optional<MachineGrid> machineGrid(const Cluster& cluster) {
  const std::vector<int> perMachine = devicesPerMachine(cluster);
  if (perMachine.size() < 2 || perMachine[0] < 2) return std::nullopt;
  for (int count : perMachine)
    if (count != perMachine[0]) return std::nullopt;
  return MachineGrid{static_cast<int>(perMachine.size()), perMachine[0]};
}

AllReduceCost allReduceCost(const Cluster& cluster, double bytes) {
  const int n = cluster.size();
  if (n <= 1) return {AllReduceAlgorithm::Ring, 0};
  const Link ringLink = collectiveLink(cluster, Collective::AllReduce, "ring");
  const Link treeLink = collectiveLink(cluster, Collective::AllReduce, "tree");
  // A flat all-reduce is one call; a hierarchical one three (reduce-scatter, all-reduce, gather).
  const double call = callSeconds(cluster);
  const double ring = call + 2.0 * (n - 1) * (ringLink.latency + bytes / (n * ringLink.bandwidth));
  const double tree = call + 2.0 * ceilLog2(n) * treeLink.latency + 2.0 * bytes / treeLink.bandwidth;
  AllReduceCost best = ring <= tree ? AllReduceCost{AllReduceAlgorithm::Ring, ring}
                                    : AllReduceCost{AllReduceAlgorithm::Tree, tree};
  if (const std::optional<MachineGrid> grid = machineGrid(cluster)) {
    const int k = grid->perMachine, m = grid->machines;
    double inside = 0;  // reduce-scatter + all-gather, every machine at once
    for (int i = 0; i < static_cast<int>(cluster.machines.size()); ++i) {
      const Link l = machineLink(cluster, i, Collective::AllReduce, "ring");
      inside = std::max(inside, 2.0 * (k - 1) * (l.latency + bytes / (k * l.bandwidth)));
    }
    const Link netRing = networkLink(cluster, Collective::AllReduce, "ring");
    const Link netTree = networkLink(cluster, Collective::AllReduce, "tree");
    // k rings (or trees) of S/k bytes each share a machine's NIC: the NIC carries what one ring
    // of S bytes would.
    const double across = std::min(2.0 * (m - 1) * (netRing.latency + bytes / (m * netRing.bandwidth)),
                                   2.0 * ceilLog2(m) * netTree.latency + 2.0 * bytes / netTree.bandwidth);
    const double hierarchical = 3 * call + inside + across;
    if (hierarchical < best.seconds) best = {AllReduceAlgorithm::Hierarchical, hierarchical};
  }
  return best;
}

double allReduceSeconds(const Cluster& cluster, double bytes) { return allReduceCost(cluster, bytes).seconds; }

double broadcastSeconds(const Cluster& cluster, double bytes) {
  const int n = cluster.size();
  if (n <= 1) return 0;
  const Link link = collectiveLink(cluster, Collective::Broadcast);
  return callSeconds(cluster) + ceilLog2(n) * link.latency + bytes / link.bandwidth;
}

double allToAllSeconds(const Cluster& cluster, std::span<const double> localBytes,
                       std::span<const double> receiveShares) {
  checkSize(cluster, localBytes, "allToAllSeconds localBytes");
  checkSize(cluster, receiveShares, "allToAllSeconds receiveShares");
  const int n = cluster.size();
  if (n <= 1) return 0;
  // Bytes per device over its machine's link, per machine over the NIC, each direction. Device
  // i sends localBytes[i]·receiveShares[j] to every j ≠ i, so the sums over pairs factor into
  // per-machine totals: linear in n (a 1,024-GPU cluster prices this in microseconds, not in the
  // milliseconds of the n² pair loop; the synthesis prices it thousands of times).
  const size_t machines = cluster.machines.size();
  std::vector<double> machineBytes(machines, 0), machineShares(machines, 0);
  double totalBytes = 0, totalShares = 0;
  for (int i = 0; i < n; ++i) {
    const size_t m = static_cast<size_t>(cluster.devices[static_cast<size_t>(i)].machine);
    machineBytes[m] += localBytes[i];
    machineShares[m] += receiveShares[i];
    totalBytes += localBytes[i];
    totalShares += receiveShares[i];
  }
  double transfer = 0;
  std::vector<double> intraBandwidth(machines, 0);  // machineLink per machine, looked up once
  for (int i = 0; i < n; ++i) {
    const int machine = cluster.devices[static_cast<size_t>(i)].machine;
    const size_t m = static_cast<size_t>(machine);
    const double sent = localBytes[i] * (machineShares[m] - receiveShares[i]);
    const double received = receiveShares[i] * (machineBytes[m] - localBytes[i]);
    const double bytes = std::max(sent, received);
    if (bytes > 0) {
      if (intraBandwidth[m] == 0) intraBandwidth[m] = machineLink(cluster, machine, Collective::AllToAll).bandwidth;
      transfer = std::max(transfer, bytes / intraBandwidth[m]);
    }
  }
  double network = 0;
  for (size_t m = 0; m < machines; ++m) {
    const double egress = machineBytes[m] * (totalShares - machineShares[m]);
    const double ingress = machineShares[m] * (totalBytes - machineBytes[m]);
    const double bytes = std::max(egress, ingress);
    if (bytes > 0) {
      if (network == 0) network = networkLink(cluster, Collective::AllToAll).bandwidth;
      transfer = std::max(transfer, bytes / network);
    }
  }
  return callSeconds(cluster) + (n - 1) * collectiveLink(cluster, Collective::AllToAll).latency + transfer;
}

double reshardSeconds(const Cluster& cluster, double bytes, std::span<const double> from,
                      std::span<const double> to) {
  checkSize(cluster, from, "reshardSeconds from");
  checkSize(cluster, to, "reshardSeconds to");
  const int n = cluster.size();
  double displacement = 0, worst = 0;
  for (int j = 0; j < n; ++j) {
    displacement += to[static_cast<size_t>(j)] - from[static_cast<size_t>(j)];
    worst = std::max(worst, std::abs(displacement));
  }
  if (n <= 1 || worst < 1e-12) return 0;
  const Link link = collectiveLink(cluster, Collective::AllToAll);
  return callSeconds(cluster) + (n - 1) * link.latency + 2 * bytes * worst / link.bandwidth;
}

}  // namespace hap::cost
