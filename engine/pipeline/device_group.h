// Device groups of a pipeline: the units the partition search hands out (whole machines, or the
// devices of a one-machine cluster), the sub-cluster a stage is planned on, and the link that
// joins two groups (docs/pipeline.md "Device groups").
#pragma once

#include <string>
#include <vector>

#include "engine/cost/cluster.h"
#include "engine/ir/dtype.h"

namespace hap::pipeline {

// The units of `cluster` in order: each machine's ranks when it has several machines, else each
// device alone. Stage groups are contiguous runs of units.
std::vector<std::vector<int>> groupUnits(const cost::Cluster& cluster);

// The cluster of the given ranks of `cluster` (ascending, non-empty): their machines with the
// chosen devices only, renumbered from 0 machine by machine, with the same types, links, network,
// efficiencies and measured profile. Throws cost::ClusterError on an empty or unknown rank.
cost::Cluster subCluster(const cost::Cluster& cluster, const std::vector<int>& ranks);

// A key equal for two groups the cost model cannot tell apart: the sequence of (device type,
// devices) per machine, and whether they span machines.
std::string groupSignature(const cost::Cluster& cluster, const std::vector<int>& ranks);

// The time to move `bytes` from group `from` to group `to` point to point: latency + bytes /
// bandwidth over the link joining them, the machine's own link when both lie on one machine, else
// the network, with min(machines of from, machines of to) NICs carrying equal parts in parallel.
double transferSeconds(const cost::Cluster& cluster, const std::vector<int>& from, const std::vector<int>& to,
                       double bytes);

// Sum of the group's devices' peak FLOP/s and memory bandwidth at `dtype` (lower bounds).
double groupFlops(const cost::Cluster& cluster, const std::vector<int>& ranks, ir::DType dtype);
double groupBandwidth(const cost::Cluster& cluster, const std::vector<int>& ranks);

// "machines a, b (16 devices)" or "devices 0-3 of a".
std::string describeGroup(const cost::Cluster& cluster, const std::vector<int>& ranks);

}  // namespace hap::pipeline
