// Prices of every choice the search makes, for one cluster and fixed sharding ratios (one
// vector of shares per segment: a node's work and a value's G form are cut by the shares of
// their segment, Theory::nodeSegment / valueSegment).
//
// Cost model (../shared/DESIGN.md §3 "Stages and cost", docs/synthesis.md):
// - A node computed under a variant costs the maximum over devices of its forward plus backward
//   time; a device's time is the roofline of its FLOPs and bytes (cost/device_cost.h). A variant
//   with any G fact splits the op's work and the G tensors' bytes by the device's share; I and R
//   tensors are full size on every device. Backward costs a factor of the forward (2 for the
//   matmul and convolution families, 1 otherwise) and is skipped where no gradient flows.
// - Conversions between forms are collectives priced with their backward duals (all-gather ↔
//   reduce-scatter, all-reduce ↔ all-reduce, all-to-all ↔ all-to-all); slicing (I → G) and taking
//   a replica as a partial sum (I → R: rank 0 keeps the value, the others hold zeros) are free.
// - Sources load their forms: inputs, buffers and constants as I or G(d) (free); parameters as
//   G(d) (Parameter-Shard, free), I (replicated: backward all-reduce of the gradient) or I*
//   (replicated, gradient by SFB in an SFB variant, free here: the variant pays its gathers).
// - A hap::reshard node (segment boundary) under its G(d) variant costs an all-to-all from the
//   old segment's cuts to the new one's (cost::reshardSeconds), and its dual in backward.
// - The search adds these costs per op: every op synchronises (an upper bound of the exact stage
//   model of synth/stages.h, which prices the plans the search returns).
// Every term is linear in the shares, up to the maximum over devices (and, for padded
// collectives, over shards), which an LP expresses with one auxiliary variable each.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <unordered_map>
#include <string>
#include <vector>

#include "engine/cost/bucketed_gradients.h"
#include "engine/cost/cluster.h"
#include "engine/cost/profile.h"
#include "engine/cost/collective_cost.h"
#include "engine/synth/fact.h"
#include "engine/synth/theory.h"

namespace hap::synth {

// How a value obtains a form.
enum class ConversionKind : uint8_t {
  LoadReplica,       // source loaded whole on every device
  LoadShard,         // source loaded as the device's slice (Placeholder-/Parameter-Shard)
  ParamReplicate,    // parameter replicated; backward all-reduces its gradient
  ParamSfb,          // parameter replicated for an SFB consumer
  AllGather,         // G(d) -> I
  ReduceScatter,     // R -> G(d)
  AllReduce,         // R -> I
  AllToAll,          // G(i) -> G(j)
  Slice,             // I -> G(d), local
  ReplicaToPartial,  // I -> R, local (rank 0 keeps the value, the others zeros)
};
std::string_view conversionName(ConversionKind k);

struct Conversion {
  ConversionKind kind;
  Rel from = kIdentity;  // unused for loads
  Rel to = kIdentity;
  cost::Method method = cost::Method::Padded;  // for all-gather and reduce-scatter
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  double seconds() const { return forwardSeconds + backwardSeconds; }
  bool communicates() const { return forwardSeconds + backwardSeconds > 0; }
};

// seconds (or bytes) = constant + perShare * share, for one device.
struct Affine {
  double constant = 0;
  double perShare = 0;
  double at(double share) const { return constant + perShare * share; }
};

// shares[s][j]: device j's share of every dimension cut in segment s (each row sums to 1).
using Shares = std::vector<std::vector<double>>;

// Whole lengths of one dimension class in one segment (balance/share_milp.h): `units` per device,
// summing to the class's units. A cost table given such cuts prices the G forms of the class, and
// the nodes whose variants cut it (Theory::cutClass), at units / U instead of the segment's
// shares, so that it prices exactly the lengths a plan records.
struct ClassCut {
  int segment = 0;
  int dimClass = 0;             // Theory::classes() root with units > 0
  std::vector<int64_t> units;   // per device (rank)
};

// Which part of an iteration a node's time covers.
enum class Pass : uint8_t { Forward, Backward, Both };

// Communication a node does itself (not a conversion): SFB's gathers of the sufficient factors
// (in backward) and a reshard's all-to-all (forward, and backward when a gradient flows).
struct NodeCommunication {
  double forward = 0, backward = 0;
};

// Restrictions of the program space, for the baselines (plan/baselines.h) and the ablation.
struct Restrictions {
  bool parameterShards = true;  // parameters may be loaded as G(d) (and all-gathered from it)
  bool sfb = true;
  bool inputShardsOnBatchOnly = false;  // inputs loaded only as G(0), never whole (data parallelism:
                                        // each rank reads its rows); scalar inputs whole
  bool parameterReplicas = true;   // parameters may be loaded whole on every device
  bool parametersWhole = false;    // every variant reads its parameters as I (no tensor
                                   // parallelism): a variant reading one otherwise is excluded
  bool groupedCollectives = true;  // uneven all-gathers / reduce-scatters may use the grouped
                                   // method (else padded only)
  bool paddedCollectives = true;   // ... may use the padded method (else grouped only; `hap plan
                                   // --collectives grouped`, to exercise the runtime's method)
};

struct CostOptions {
  // Bytes of optimizer state per parameter byte (Adam/AdamW: 2 moments; SGD with momentum: 1).
  double optimizerStateFactor = 2;
  Restrictions restrictions;  // the table's initial restrictions (CostTable::restrict)
  // The gradient buckets the runtime will all-reduce replicated parameters' gradients in
  // (hap-worker --bucket-mb; cost/bucketed_gradients.h); <= 0: one call per parameter.
  double gradientBucketBytes = static_cast<double>(cost::kGradientBucketBytes);
  // A factor on every replicated gradient's all-reduce as this table prices it, for the search
  // alone: the stage model pays only what the gradient buckets leave exposed after backward
  // (synth/stages.h), which the search, adding per op, cannot see; balance::alternate searches
  // once more with this set to the share the best program leaves exposed, and prices the result
  // with a table at 1. Tables that price plans keep 1.
  double gradientSearchScale = 1;
};

class CostTable {
 public:
  // `shares` has one row per segment of the theory (non-negative, each summing to 1); the second
  // form gives every segment the same shares.
  CostTable(const Theory& theory, const cost::Cluster& cluster, Shares shares, CostOptions options = {});
  CostTable(const Theory& theory, const cost::Cluster& cluster, const std::vector<double>& shares,
            CostOptions options = {});
  // With whole lengths for some (segment, class) pairs: those take the cut's shares (see ClassCut).
  CostTable(const Theory& theory, const cost::Cluster& cluster, Shares shares, CostOptions options,
            std::vector<ClassCut> cuts);

  const Theory& theory() const { return theory_; }
  const cost::Cluster& cluster() const { return cluster_; }
  const Shares& shares() const { return shares_; }
  const CostOptions& options() const { return options_; }
  const std::vector<double>& segmentShares(int segment) const { return shares_[static_cast<size_t>(segment)]; }
  const std::vector<double>& valueShares(ir::ValueId x) const { return segmentShares(theory_.valueSegment(x)); }
  const std::vector<ClassCut>& cuts() const { return cuts_; }
  // The cut of x's class along form r (G) in x's segment; null where the table has none (then
  // the segment's shares cut it, rounded by DimClasses::lengths).
  const ClassCut* cutOf(ir::ValueId x, Rel r) const;
  // The shares that cut form r of x (G).
  const std::vector<double>& formShares(ir::ValueId x, Rel r) const;

  // Devices of one type with the same shares in every segment form a group: they cost the same.
  int groups() const { return static_cast<int>(groups_.size()); }
  int groupOf(int device) const { return groupOf_[static_cast<size_t>(device)]; }
  int groupType(int group) const { return groups_[static_cast<size_t>(group)].type; }
  const std::vector<int>& groupDevices(int group) const { return groups_[static_cast<size_t>(group)].devices; }
  // Computation seconds of node n under variant v on a device of group `group` (no communication).
  double groupSeconds(ir::NodeId n, int v, int group, Pass pass) const;
  NodeCommunication nodeCommunication(ir::NodeId n, int v) const;

  // Forward + backward seconds of node n under variant v on device j, and the maximum over
  // devices (the node's cost).
  double deviceSeconds(ir::NodeId n, int v, int device) const;
  double seconds(ir::NodeId n, int v) const { return best_[static_cast<size_t>(n)][static_cast<size_t>(v)]; }
  // A lower bound on what node n under variant v adds to any program: the variant's cost plus
  // the loads of the parameters only n reads (loaded at n and only there); infinity when such a
  // parameter cannot be loaded in the form v reads. The search's heuristic builds on it.
  double variantBound(ir::NodeId n, int v) const { return bound_[static_cast<size_t>(n)][static_cast<size_t>(v)]; }
  // A lower bound on what value x holding `have` pays, in any sequence of conversions (and, for a
  // source, loads), to obtain form `to`: the shortest path in the graph of single conversions.
  // 0 if x holds it; infinity if no sequence gives it.
  double distance(ir::ValueId x, FormMask have, Rel to) const;
  // A node's computation as a function of a device's share in the node's segment, for the LP
  // over shares (balance/): the maximum of these pieces (the roofline's compute- and memory-bound
  // sides) on a device of type `type`. Where the cluster's measured profile prices the node
  // (cost/profile.h), one piece: the measured time's line at the size the type's piece has at
  // this table's shares, exact there (the alternation re-prices at the LP's shares). SFB's gathers
  // follow the segment's largest share (sfbLinear); a reshard's all-to-all is in
  // cost::reshardSeconds.
  std::vector<Affine> nodePieces(ir::NodeId n, int v, int type, Pass pass = Pass::Both) const;
  cost::GatherLinear sfbLinear(ir::NodeId n, int v) const;
  // Whether node n's variant v is a reshard that moves data (its G(d) variant).
  bool isReshard(ir::NodeId n, int v) const;
  // A conversion's cost as a function of the largest share (exact for padded and, with positive
  // shares, grouped collectives; an all-to-all's cost, quadratic in the shares, is taken at this
  // table's shares), in `pass` or both. Its stage communication only: a replicated parameter's
  // gradient all-reduce runs in the gradient buckets (synth/stages.h), not in a stage.
  cost::GatherLinear conversionLinear(ir::ValueId x, const Conversion& c, Pass pass = Pass::Both) const;

  // The cheapest way for value x holding the forms `have` to obtain `to`, in one conversion: to
  // `to` itself, or to I when `to` follows locally from I (the conversion's `to` says which);
  // nullopt if none exists (I* for a value that is not a parameter, or a form a restricted
  // search disallows).
  std::optional<Conversion> convert(ir::ValueId x, FormMask have, Rel to) const;

  using Restrictions = synth::Restrictions;
  // Applies restrictions (before the first search: memoised prices and bounds are recomputed).
  void restrict(const Restrictions& r);
  const Restrictions& restrictions() const { return restrictions_; }

 private:
  struct Group {
    int type;
    std::vector<double> shares;  // per share row (rowShares_)
    std::vector<int> devices;
  };
  // Share rows: one per segment, then one per cut. The row of a form or a node's work.
  int formRow(ir::ValueId x, Rel r) const;
  int nodeRow(ir::NodeId n, int v) const;
  double groupSecondsOf(ir::NodeId n, int v, const Group& g, Pass pass) const;
  // `share`: the device's share in n's segment, where a measured profile's line is taken.
  std::vector<Affine> pieces(ir::NodeId n, const rules::Variant& v, int type, Pass pass, double share) const;
  // The measured profile's figures for node n on a device of `type`: ops is null where the
  // profile does not price n (no profile, no device profile for the type, no family for the op,
  // or the family not measured in n's dtype): then the roofline prices it.
  struct Measured {
    const cost::DeviceProfile* device = nullptr;
    cost::OpFamily family{};
    const cost::OpThroughput* ops = nullptr;
  };
  Measured measured(const ir::Node& n, const cost::DeviceType& type) const;
  // The share in share row `row` of the first group of devices of `type`.
  double typeShare(int type, int row) const;
  double sfbExtraSeconds(ir::NodeId n, const rules::Variant& v) const;
  double gatherSeconds(ir::ValueId x, Rel r, bool grad, cost::Method* method) const;
  // The cheapest conversion of x from form `from` (kNone: a source's load) to `to`, memoised:
  // the search asks for the same few pairs of every value many times.
  const std::optional<Conversion>& pair(ir::ValueId x, int from, Rel to) const;
  void computeBounds();
  static constexpr int kNoForm = -100;
  std::optional<Conversion> computePair(ir::ValueId x, int from, Rel to) const;

  const Theory& theory_;
  const cost::Cluster& cluster_;
  Shares shares_;
  std::vector<ClassCut> cuts_;
  Shares rowShares_;                      // shares_, then each cut's units / U
  std::map<std::pair<int, int>, int> cutRow_;  // (segment, class) -> share row
  CostOptions options_;
  Restrictions restrictions_;
  std::vector<Group> groups_;
  std::vector<int> groupOf_;                // per device
  std::vector<std::vector<double>> best_;   // [node][variant]
  std::vector<std::vector<double>> bound_;  // [node][variant]
  // distance() per (value, held forms): the shortest distance to every form bit.
  mutable std::unordered_map<uint64_t, std::array<double, 16>> distances_;  // not thread-safe
  mutable std::unordered_map<uint64_t, std::optional<Conversion>> pairs_;  // not thread-safe
};

}  // namespace hap::synth
