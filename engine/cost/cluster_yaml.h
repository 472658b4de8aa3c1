// Writing a cluster inventory back as YAML, in the format parseCluster reads (docs/cost-model.md).
//
// Contract: for every Cluster c that parseCluster produced (and every one an editor derived from
// it), parseCluster(formatClusterYaml(c)) has exactly the same fields as c, doubles bit for bit,
// except `source`. Quantities are written in readable units ("19.5T", "40GiB", "1555GB/s",
// "10.4Gbps", "10us") chosen so that the loader parses them back to the same double.
// Comments and anchors of the file the cluster came from are not kept.
#pragma once

#include <map>
#include <string>

#include "engine/cost/cluster.h"
#include "engine/cost/units.h"

namespace hap::cost {

// Raw scalar text that replaces the written value of a field, keyed by the loader's field path
// ("machines[1].count", "device_types.gpu.memory", "network.latency",
// "collectives.all_reduce.efficiency"). The text is written quoted, so it stays one scalar
// whatever it holds. An editor uses this to check what a user typed with the loader's own rules
// and messages: format with the override, parse, and report the loader's error.
using RawFields = std::map<std::string, std::string>;

// The YAML text of the cluster. Optional fields at their defaults are left out (float16/float64
// FLOP/s of 0, op_overhead 0, host equal to the name, an unset (all-zero) link or network,
// efficiencies of 1). Fields the loader would reject (an empty name, a zero count) are still
// written, and a link a machine needs but lacks is left out, so that parsing the text reports
// them ("machines[0].link: missing; ...").
std::string formatClusterYaml(const Cluster& cluster, const RawFields& raw = {});

// A quantity as the loader's unit syntax, short and exact: parseQuantity(formatYamlQuantity(v, u),
// u) == v for every finite v (bit for bit, -0 aside). Picks the unit whose number has the fewest
// significant digits: 19.5e12 FLOP/s -> "19.5T", 40 * 2^30 bytes -> "40GiB", 1.3e9 bytes/s ->
// "1.3GB/s", 1.25e9 bytes/s -> "10Gbps", 1e-5 s -> "10us". Non-finite values are written as
// "inf"/"nan", which the loader rejects.
std::string formatYamlQuantity(double value, Unit unit);

// Writes formatClusterYaml(cluster) to `path`. Throws ClusterError "PATH: cannot write the
// cluster file: REASON" when the file cannot be written.
void saveCluster(const Cluster& cluster, const std::string& path);

}  // namespace hap::cost
