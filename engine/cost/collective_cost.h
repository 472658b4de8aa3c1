// Time of the collectives of a distributed program over ALL devices of a cluster, from byte
// counts (never element counts). Each is built from α + bytes/β steps, where the link (α, β)
// comes from the cluster inventory (collectiveLink). Formulas and their derivation are in
// docs/cost-model.md (§3 "Collective time"); every function returns 0 for a one-device cluster.
//
// Per-device vectors are indexed by rank and must have Cluster::size() entries
// (std::invalid_argument otherwise: that is a caller bug, not a user error).
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "engine/cost/cluster.h"

namespace hap::cost {

// How an all-gather / reduce-scatter of uneven shards is carried out (../shared/DESIGN.md §3):
// Padded pads every shard to the largest and runs one ring collective; Grouped runs one
// broadcast (or reduce) per device inside one group call, moving the actual shards.
enum class Method { Padded, Grouped };
std::string_view methodName(Method m);  // "padded", "grouped"

// The link a collective over all devices is bound by:
//   - one machine: that machine's link;
//   - several machines: the bottleneck of the network and of the links of every machine that
//     holds two or more devices: bandwidth = the minimum, latency = the maximum;
//   - one device: {infinity, 0} (nothing is sent).
// Each link is as collective c (with `algorithm`: "padded"/"grouped", "ring"/"tree") sees it:
// the measured profile's fit for c on that link class (Cluster::measured, profile.h) when there
// is one, else the inventory's link with c's efficiency (Cluster::efficiency) applied to the
// bandwidth; then slowed down by collectiveSlowdown.
Link collectiveLink(const Cluster& cluster, Collective c, std::string_view algorithm = {});
// The link of machine `machine` (intra) and the network (inter) as collective c sees it, by the
// same rule.
Link machineLink(const Cluster& cluster, int machine, Collective c, std::string_view algorithm = {});
Link networkLink(const Cluster& cluster, Collective c, std::string_view algorithm = {});
// The largest DeviceProfile::collectiveSlowdown among the cluster's device types, a type the
// profile does not list counting 1 (1 without a profile): a collective runs at the pace of its
// slowest participant.
double collectiveSlowdown(const Cluster& cluster);

// The fixed cost of one collective call: the largest DeviceType::collectiveCallSeconds among the
// cluster's devices (a call waits for its slowest participant's own work), times
// collectiveSlowdown as every other part of a collective; 0 for one device.
// Every function below adds it once per call the runtime makes: once for a padded all-gather or
// reduce-scatter, an all-to-all, a re-shard, a broadcast and a flat all-reduce; once per non-empty
// shard for a grouped one (a broadcast or reduce each); three times for a hierarchical all-reduce.
// In the formulas below it is written `call`.
double callSeconds(const Cluster& cluster);

// ⌈log2 n⌉ for n ≥ 1 (0 for n = 1): the depth of a binary broadcast/reduction tree.
int ceilLog2(int n);

// All-gather; shardBytes[j] = bytes of device j's local piece.
//   Padded:  call + (n−1) · (α + max_j shard_j / β)   (ring; every step moves the padded shard)
//   Grouped: Σ_{j: shard_j > 0} (call + ⌈log2 n⌉·α + shard_j / β)   (one pipelined broadcast per
//            non-empty shard; an empty shard is not broadcast)
double allGatherSeconds(const Cluster& cluster, Method method, std::span<const double> shardBytes);

// All-gather (or reduce-scatter) of a tensor of `bytes` as an affine function of the largest
// share: seconds = constant + perLargestShare * max_j share_j. Padded: n - 1 steps of the largest
// shard. Grouped: equal to the exact cost when every share is positive (a zero share saves its
// launches), which the LP over shares uses as a bound.
struct GatherLinear {
  double constant = 0;
  double perLargestShare = 0;
};
GatherLinear gatherLinear(const Cluster& cluster, Collective c, Method method, double bytes);

// Reduce-scatter, the dual of all-gather: the same formulas over the output pieces
// (shardBytes[j] = bytes of the piece device j ends up with).
double reduceScatterSeconds(const Cluster& cluster, Method method,
                            std::span<const double> shardBytes);

// How an all-reduce is carried out. Flat: one ring or tree over all devices (the backend picks
// between them per size, as NCCL does; the model takes the cheaper). Hierarchical, on M ≥ 2
// machines of k ≥ 2 devices each: a reduce-scatter inside every machine (device i of a machine
// ends with the machine's sum of chunk i of k), an all-reduce of chunk i across the machines
// among the devices of local index i (k such groups, sharing each machine's NIC), and an
// all-gather inside every machine.
enum class AllReduceAlgorithm { Ring, Tree, Hierarchical };
std::string_view allReduceAlgorithmName(AllReduceAlgorithm a);  // "ring", "tree", "hierarchical"

// The machine grid a hierarchical all-reduce runs on: M machines of k devices each, or nullopt
// when the cluster is not such a grid (one machine, a single-device machine, unequal counts).
struct MachineGrid {
  int machines = 0, perMachine = 0;
};
std::optional<MachineGrid> machineGrid(const Cluster& cluster);

struct AllReduceCost {
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring;
  double seconds = 0;
};
// The cheapest way to all-reduce a tensor of `bytes` (the full tensor, held by every device):
//   ring:         call + 2(n−1)·(α + S/(n·β))       (α, β: collectiveLink(AllReduce))
//   tree:         call + 2·⌈log2 n⌉·α + 2·S/β
//   hierarchical: 3·call + max over machines of 2(k−1)·(α_m + S/(k·β_m))         (inside machine m)
//                 + min(2(M−1)·(α_n + S/(M·β_n)), 2·⌈log2 M⌉·α_n + 2·S/β_n)  (across, network)
//                 only where machineGrid() holds; every β scaled by the all-reduce efficiency.
// Ties go to the flat algorithms. The planner prices with it and the runtime executes the
// algorithm it names (Hierarchical, or a flat one chosen by the backend), so a plan needs no
// field for it: both sides call this with the plan's cluster and the tensor's bytes.
AllReduceCost allReduceCost(const Cluster& cluster, double bytes);

// allReduceCost(cluster, bytes).seconds.
double allReduceSeconds(const Cluster& cluster, double bytes);

// Broadcast of `bytes` from one device to all others (pipelined tree):  call + ⌈log2 n⌉·α + S/β.
double broadcastSeconds(const Cluster& cluster, double bytes);

// All-to-all: device i sends localBytes[i] · receiveShares[j] bytes to every device j ≠ i (its
// share for itself stays local).
//   call + (n−1)·α + max( max over devices i of max(bytes i sends, bytes i receives) to or from devices
//                      of its own machine / that machine's link β,
//                  max over machines m of max(bytes leaving m, bytes entering m) / network β )
// Links are full duplex and work in parallel; a machine's NIC carries all of its devices'
// traffic to and from other machines.
double allToAllSeconds(const Cluster& cluster, std::span<const double> localBytes,
                       std::span<const double> receiveShares);

// Re-sharding a tensor of `bytes` cut by per-device shares `from` into cuts by `to` (both summing
// to 1, devices' slices in rank order): an all-to-all in which device j receives the part of its
// new slice outside its old one, at most bytes·(|ΔP_j| + |ΔP_{j+1}|) with the prefix displacement
// ΔP_j = Σ_{i<j} (to_i − from_i). Priced by that bound:
//   0 when the cuts agree (max_j |ΔP_j| < 1e-12), else
//   call + (n−1)·α + 2·bytes·max_j |ΔP_j| / β    (α, β: collectiveLink(AllToAll))
// The LP over shares uses the second term, which is linear in the displacement (not α).
double reshardSeconds(const Cluster& cluster, double bytes, std::span<const double> from,
                      std::span<const double> to);

}  // namespace hap::cost
