// Measured figures of device types and links (../shared/DESIGN.md §2: "metrics + microbenchmarks →
// SQLite profiles → calibrated cost model"). `hap profile` measures them and `hap calibrate` fits
// them to recorded runs; the profile store (db/) keeps every version; a cluster inventory names one
// with `profile:`, and the front end attaches it to the Cluster (Cluster::measured). The cost model
// then prices an op from the measured time of its family at its size and a collective from its
// fitted latency and bandwidth, and falls back to the inventory's roofline and links wherever the
// profile has nothing, saying so in `--explain` (pricingSources).
//
// Units are base units as everywhere in engine/cost: seconds, bytes, FLOPs, bytes/s.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/cost/cluster.h"
#include "engine/ir/dtype.h"

namespace hap::cost {

// The op families `hap profile` benchmarks, each standing for the aten ops priced by it
// (opFamilyOf). Matmul and convolution are measured against FLOPs, the others against bytes moved
// (forward; the backward is priced as the same family's forward times the op's backward factor).
enum class OpFamily { MatMul, Convolution, Elementwise, Reduction, Normalization, Softmax, Embedding, DataMovement };
inline constexpr int kOpFamilyCount = 8;

// "matmul", "convolution", "elementwise", "reduction", "normalization", "softmax", "embedding",
// "data_movement": the store's and the YAML's spelling.
std::string_view opFamilyName(OpFamily f);
std::optional<OpFamily> parseOpFamily(std::string_view name);
// The family that prices aten op `op` ("aten::linear" → MatMul), or nullopt for ops no benchmark
// stands for (views, factories, losses, pooling, ...), which keep the roofline.
std::optional<OpFamily> opFamilyOf(std::string_view op);
// True for the families whose work is FLOPs (matmul, convolution); the others' is bytes moved.
bool flopBound(OpFamily f);

// The time of one op of `work` FLOPs or bytes (flopBound) as a line near one size:
// seconds ≈ intercept + slope · work. The cost model uses the line of the size a device's piece
// has at the current shares, which keeps the LP over shares linear; the alternation re-prices.
struct WorkLine {
  double intercept = 0;  // seconds
  double slope = 0;      // seconds per FLOP or byte
  double at(double work) const { return intercept + slope * work; }
};

// One measured size: a forward op doing `work` FLOPs or bytes took `seconds` (median of repeats).
struct OpSample {
  double work = 0;
  double seconds = 0;
};

// One op family's measured forward time on one device type, in one dtype.
// Invariant (checked by validate): samples sorted by strictly increasing work > 0, seconds > 0.
struct OpThroughput {
  OpFamily family = OpFamily::MatMul;
  ir::DType dtype = ir::DType::Float32;
  std::vector<OpSample> samples;

  // Piecewise-linear interpolation between the samples. Below the first sample: that sample's
  // time (smaller ops are launch-bound, not faster); beyond the last: the last segment's line
  // extended (its rate at the largest size). One sample: time proportional to work.
  WorkLine lineAt(double work) const;
  double seconds(double work) const { return lineAt(work).at(work); }
};

// Measured figures of one device type. Every field is optional (0 / empty: not measured).
struct DeviceProfile {
  std::string deviceType;      // a DeviceType::name of the inventories that use this profile
  std::string description;     // where it was measured: "cpu: Intel Xeon @ 2.2GHz, 1 thread"
  int threads = 0;             // intra-op threads the compute benchmarks ran with (CPU)
  double memoryBandwidth = 0;  // measured bytes/s (copy of a large buffer)
  std::vector<OpThroughput> ops;
  // Calibration (hap calibrate): every compute time of this type is multiplied by computeScale
  // (1: as measured), and every collective it takes part in by collectiveSlowdown (above 1: a
  // rank that spends its own, throttled, CPU on communication slows the whole collective down;
  // below 1: the collectives ran faster than priced, e.g. an inventory's conservative
  // collective_call).
  double computeScale = 1;
  double collectiveSlowdown = 1;
  // Peak memory of a rank of this type = baseMemoryBytes + memoryScale × the model's bytes
  // (synth/memory.h): the runtime's own memory (libraries, allocator pools) and how far the
  // allocator rounds the tensors up. 0 and 1 unless calibrated.
  double baseMemoryBytes = 0;
  double memoryScale = 1;

  const OpThroughput* find(OpFamily f, ir::DType t) const;  // nullptr when not measured
};

// Where a collective runs: between devices of one machine, or between machines.
enum class LinkClass { Intra, Inter };
std::string_view linkClassName(LinkClass c);  // "intra", "inter"
std::optional<LinkClass> parseLinkClass(std::string_view name);

// A collective's measured cost on one link class, fitted to collective_cost.h's formula for that
// collective and algorithm: seconds = steps(n) · link.latency + volume(n, bytes) / link.bandwidth.
// The fit generalises to other device counts through the same formula.
struct CollectiveFit {
  Collective collective = Collective::AllReduce;
  // "padded" / "grouped" (all-gather, reduce-scatter), "ring" / "tree" (all-reduce), "" otherwise.
  std::string algorithm;
  LinkClass linkClass = LinkClass::Intra;
  Link link;                    // fitted latency (s per step) and bandwidth (bytes/s)
  int ranks = 0;                // devices it was measured with
  int samples = 0;              // sizes measured
  double relativeResidual = 0;  // root-mean-square of (fit − measured) / measured over samples
};

struct Profile {
  std::string name;         // unique in a store; a cluster's `profile:` names it
  int version = 0;          // assigned by the store (1, 2, ...); 0 before it is stored
  std::string host;         // the machine it was measured on ("" for a calibration)
  std::string createdAt;    // ISO 8601, UTC
  std::string note;         // "hap profile --quick", "hap calibrate: 12 runs, 6 plans"
  std::vector<DeviceProfile> devices;
  std::vector<CollectiveFit> collectives;
  // Calibration (hap calibrate): the share of a replicated parameter's gradient all-reduce that
  // the step pays for, the rest running behind backward in the runtime's gradient buckets
  // (runtime/core/gradient_buckets.h). 1: all of it, as the stage model prices it uncalibrated.
  double gradientExposure = 1;

  const DeviceProfile* device(std::string_view deviceType) const;
  // The fit for collective c on link class k; for all-gather and reduce-scatter the one of
  // `algorithm` when given, else any. nullptr when none.
  const CollectiveFit* collective(Collective c, LinkClass k, std::string_view algorithm = {}) const;
};

// The calibrated memory terms of device type `type` of `cluster` (DeviceProfile::baseMemoryBytes,
// memoryScale): {0, 1} without a profile or a device profile for the type.
struct MemoryCalibration {
  double baseBytes = 0;
  double scale = 1;
  double at(double modelBytes) const { return baseBytes + scale * modelBytes; }
};
MemoryCalibration memoryCalibration(const Cluster& cluster, int type);

// Throws ClusterError naming `origin` and the offending entry when a profile breaks an invariant
// above (unsorted samples, a negative time, a bandwidth ≤ 0, a scale ≤ 0).
void validate(const Profile& p, const std::string& origin);

}  // namespace hap::cost
