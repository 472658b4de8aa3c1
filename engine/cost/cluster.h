// The cluster inventory: device types, machines, links and the rank order, read from a YAML file
// (format in docs/cost-model.md, examples in resources/clusters/). Every quantity is held in base
// units: FLOP/s, bytes, bytes/s, seconds.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/error.h"
#include "engine/ir/dtype.h"

namespace hap::cost {

// A cluster file that cannot be read or is invalid. The message has the form
// "FILE:LINE: FIELD.PATH: problem and what to write instead", e.g.
// "clusters/x.yaml:7: machines[2].count: must be a positive integer (got '-1')".
class ClusterError : public Error {
 public:
  using Error::Error;
};

// One kind of device (a GPU model, a CPU core). Peak numbers, from a datasheet or measured.
struct DeviceType {
  std::string name;              // "V100-SXM2-16GB"
  double flops32 = 0;            // peak FLOP/s, float32 (non-tensor-core)
  double flops16 = 0;            // peak FLOP/s, float16/bfloat16 (tensor cores where present);
                                 // 0 means "as float32"
  double flops64 = 0;            // peak FLOP/s, float64; 0 means "as float32"
  double memoryBytes = 0;        // device memory
  double memoryBandwidth = 0;    // bytes/s
  double opOverheadSeconds = 0;  // per-op launch overhead
  std::string source;            // datasheet citation
  // The device's own fixed cost of taking part in one collective call, beyond the link's latency
  // steps: the runtime's dispatch, its piece copies and padding, the backend's handshake, run on
  // this device's (possibly slower or busier) processor. Every collective call pays the largest
  // among its participants (collective_cost.h, callSeconds). YAML `collective_call`.
  double collectiveCallSeconds = 0;

  // Peak FLOP/s for arithmetic in dtype t: flops16 for float16/bfloat16, flops64 for float64,
  // flops32 for float32 and the integer and bool types (a zero flops16/flops64 falls back to
  // flops32).
  double flops(ir::DType t) const;
};

// A communication link, one direction. Every device of a machine is assumed to reach every other
// one at `bandwidth` (NVLink, PCIe); the network link is each machine's NIC.
struct Link {
  double bandwidth = 0;  // bytes/s per direction
  double latency = 0;    // seconds per message (the α of α + bytes/β)
};

struct Machine {
  std::string name;    // unique within the cluster
  std::string host;    // address or host name the launcher connects to
  int deviceType = 0;  // index into Cluster::types
  int count = 0;       // devices on this machine (> 0)
  Link link;           // between devices of this machine; unset (0) for a one-device machine
                       // whose file gave none
};

// One rank. Ranks are numbered machine by machine in file order, local rank order within.
struct Device {
  int rank = 0;
  int machine = 0;    // index into Cluster::machines
  int localRank = 0;  // index among the machine's devices
  int type = 0;       // index into Cluster::types
};

struct Profile;  // profile.h

// The collectives the cost model prices (collective_cost.h).
enum class Collective { AllGather, ReduceScatter, AllReduce, AllToAll, Broadcast };
inline constexpr int kCollectiveCount = 5;
// The YAML spelling: "all_gather", "reduce_scatter", "all_reduce", "all_to_all", "broadcast".
std::string_view collectiveName(Collective c);

struct Cluster {
  std::string name;         // the file's `name`
  std::string description;  // optional free text
  std::string profile;      // optional name of a calibration profile in the profile database
  std::string source;       // the file it came from ("" when built in code)
  std::vector<DeviceType> types;
  std::vector<Machine> machines;
  Link network;                 // between machines (each machine's NIC); unset for one machine
  std::vector<Device> devices;  // by rank
  // Fraction of the link bandwidth each collective achieves, in (0, 1] (YAML `collectives:
  // {all_reduce: {efficiency: 0.8}}`); 1 unless calibrated. Indexed by Collective.
  std::array<double, kCollectiveCount> efficiency{1, 1, 1, 1, 1};
  // The measured profile `profile` names, attached by the front end from the profile store
  // (db/); null: price by the inventory alone. Shared and immutable, so clusters copy cheaply.
  std::shared_ptr<const Profile> measured;

  int size() const { return static_cast<int>(devices.size()); }
  const DeviceType& type(int rank) const;
  const Machine& machineOf(int rank) const;
  // True when the devices lie on more than one machine.
  bool spansMachines() const;
  double efficiencyOf(Collective c) const { return efficiency[static_cast<size_t>(c)]; }
};

// Parses a cluster inventory. `origin` names the text in messages ("resources/clusters/x.yaml").
// Throws ClusterError for invalid YAML and for every invalid or unknown field; never anything
// else for bad input. Every quantity must lie in units.h's supportedRange (what the LP and MILP
// solvers represent), every efficiency in [0.001, 1], and every name and text must be valid
// UTF-8; a value outside is an error naming its line and YAML path. Messages are valid UTF-8
// (a hostile byte is quoted as \xNN).
Cluster parseCluster(std::string_view yamlText, const std::string& origin);

// Reads and parses the file at `path` (Cluster::source = path). Throws ClusterError when the
// file cannot be read: missing, a directory ("PATH: is a directory, not a cluster file; ..."),
// unreadable or larger than base/text_file.h's limit.
Cluster loadCluster(const std::string& path);

// The first `perMachine` devices of every machine, with the same types, links and network: the
// paper's way of running on 8, 16 and 32 of its 64 GPUs (every machine contributes k GPUs, so
// the V100:P100 mix is kept). Throws ClusterError when perMachine < 1 or a machine has fewer.
Cluster takeDevices(const Cluster& cluster, int perMachine);

// The cluster's most extreme values, for a solver that failed on them: per kind of quantity the
// smallest and the largest with its YAML path, e.g. "FLOP/s 1 MFLOP/s
// (device_types.cpu.flops.float32) to 312 TFLOP/s (device_types.A100.flops.float16); bandwidth
// 1 KB/s (network.bandwidth) to 1.555 TB/s (device_types.A100.memory_bandwidth); ...".
std::string extremeValues(const Cluster& cluster);

// One line for logs and the CLI: "paper-testbed-64: 64 devices (16 x V100-SXM2-16GB,
// 48 x P100-PCIE-16GB) on 8 machines".
std::string summary(const Cluster& cluster);

}  // namespace hap::cost
