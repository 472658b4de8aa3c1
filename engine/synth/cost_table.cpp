#include "engine/synth/cost_table.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "engine/cost/device_cost.h"

namespace hap::synth {
namespace {

// Backward FLOPs per forward FLOP: input and weight gradients for the matmul and convolution
// families, one pass otherwise.
double backwardFactor(const std::string& op) {
  static const char* kTwo[] = {"aten::linear",  "aten::matmul", "aten::mm",
                               "aten::bmm",     "aten::addmm",  "aten::baddbmm",
                               "aten::einsum",  "aten::conv1d", "aten::conv2d",
                               "aten::conv3d",  "aten::_convolution", "aten::convolution"};
  for (const char* o : kTwo)
    if (op == o) return 2;
  return 1;
}

bool anyGather(const rules::Variant& v) {
  return std::any_of(v.inputs.begin(), v.inputs.end(), isGather) ||
         std::any_of(v.outputs.begin(), v.outputs.end(), isGather);
}

ir::DType computeType(const ir::Graph& g, const ir::Node& n) {
  for (ir::ValueId o : n.outputs)
    if (ir::isFloating(g.value(o).dtype)) return g.value(o).dtype;
  for (ir::ValueId i : n.tensorInputs())
    if (ir::isFloating(g.value(i).dtype)) return g.value(i).dtype;
  return ir::DType::Float32;
}

}  // namespace

std::string_view conversionName(ConversionKind k) {
  switch (k) {
    case ConversionKind::LoadReplica: return "load";
    case ConversionKind::LoadShard: return "load-shard";
    case ConversionKind::ParamReplicate: return "replicate-parameter";
    case ConversionKind::ParamSfb: return "replicate-parameter-sfb";
    case ConversionKind::AllGather: return "all-gather";
    case ConversionKind::ReduceScatter: return "reduce-scatter";
    case ConversionKind::AllReduce: return "all-reduce";
    case ConversionKind::AllToAll: return "all-to-all";
    case ConversionKind::Slice: return "slice";
    case ConversionKind::ReplicaToPartial: return "replica-to-partial";
  }
  return "?";
}

CostTable::CostTable(const Theory& theory, const cost::Cluster& cluster, std::vector<double> shares,
                     CostOptions options)
    : theory_(theory), cluster_(cluster), shares_(std::move(shares)), options_(options) {
  assert(static_cast<int>(shares_.size()) == cluster_.size());
  groupOf_.resize(shares_.size());
  for (int j = 0; j < cluster_.size(); ++j) {
    const int type = cluster_.devices[static_cast<size_t>(j)].type;
    auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) {
      return g.type == type && g.share == shares_[static_cast<size_t>(j)];
    });
    if (it == groups_.end()) {
      groups_.push_back({type, shares_[static_cast<size_t>(j)], {}});
      it = groups_.end() - 1;
    }
    it->devices.push_back(j);
    groupOf_[static_cast<size_t>(j)] = static_cast<int>(it - groups_.begin());
  }

  const ir::Graph& g = theory_.graph();
  best_.resize(g.nodes.size());
  min_.resize(g.nodes.size());
  for (const ir::Node& n : g.nodes) {
    auto& row = best_[static_cast<size_t>(n.id)];
    for (const rules::Variant& v : theory_.variants(n.id)) {
      double worst = 0;
      for (const Group& grp : groups_) worst = std::max(worst, groupSeconds(n.id, v, grp, false));
      if (v.sfb) worst += sfbExtraSeconds(n.id, v);
      row.push_back(worst);
    }
    min_[static_cast<size_t>(n.id)] = *std::min_element(row.begin(), row.end());
  }
}

double CostTable::groupSeconds(ir::NodeId id, const rules::Variant& v, const Group& grp,
                               bool forwardOnly) const {
  const ir::Graph& g = theory_.graph();
  const ir::Node& n = g.node(id);
  const bool split = anyGather(v);
  const double workShare = split ? grp.share : 1.0;
  // Bytes: scale the op's byte counts by the fraction of its tensors' bytes present locally.
  auto fraction = [&](const std::vector<ir::ValueId>& values, const std::vector<Rel>& rels) {
    double total = 0, local = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const double b = static_cast<double>(g.value(values[i]).bytes());
      total += b;
      local += isGather(rels[i]) ? b * grp.share : b;
    }
    return total > 0 ? local / total : 1.0;
  };
  const double bytes = static_cast<double>(n.cost.bytesRead) * fraction(n.tensorInputs(), v.inputs) +
                       static_cast<double>(n.cost.bytesWritten) * fraction(n.outputs, v.outputs);
  const cost::DeviceType& type = cluster_.types[static_cast<size_t>(grp.type)];
  const double forward = cost::computeSeconds(type, n.cost.flops * workShare, bytes, computeType(g, n));
  if (forwardOnly) return forward;
  bool grad = false;
  for (ir::ValueId o : n.outputs) grad = grad || theory_.requiresGrad(o);
  if (!grad) return forward;
  const double overhead = type.opOverheadSeconds;
  double backward = backwardFactor(n.op) * (forward - overhead) + overhead;
  if (v.sfb) {
    // The weight gradient is formed in full on every device (its gathers are in sfbExtraSeconds):
    // half of the matmul backward runs at full size instead of the device's share.
    const double full = cost::computeSeconds(type, n.cost.flops, static_cast<double>(n.cost.bytesRead),
                                             computeType(g, n)) - overhead;
    backward = (forward - overhead) + full + overhead;
  }
  return forward + backward;
}

// SFB: every device all-gathers the sufficient factors (the G input and the output gradient) to
// form the full weight gradient, instead of all-reducing it.
double CostTable::sfbExtraSeconds(ir::NodeId id, const rules::Variant& v) const {
  const ir::Node& n = theory_.graph().node(id);
  const std::vector<ir::ValueId> ins = n.tensorInputs();
  double seconds = 0;
  cost::Method m;
  for (size_t i = 0; i < ins.size(); ++i)
    if (isGather(v.inputs[i])) seconds += gatherSeconds(ins[i], false, &m);
  for (ir::ValueId o : n.outputs) seconds += gatherSeconds(o, false, &m);
  return seconds;
}

// All-gather of a G tensor (with its reduce-scatter dual when `grad`), cheapest method.
double CostTable::gatherSeconds(ir::ValueId x, bool grad, cost::Method* method) const {
  const double bytes = static_cast<double>(theory_.graph().value(x).bytes());
  std::vector<double> shards(shares_.size());
  for (size_t j = 0; j < shares_.size(); ++j) shards[j] = bytes * shares_[j];
  double best = std::numeric_limits<double>::infinity();
  for (cost::Method m : {cost::Method::Padded, cost::Method::Grouped}) {
    double s = cost::allGatherSeconds(cluster_, m, shards);
    if (grad) s += cost::reduceScatterSeconds(cluster_, m, shards);
    if (s < best) {
      best = s;
      *method = m;
    }
  }
  return best;
}

double CostTable::deviceSeconds(ir::NodeId n, int v, int device) const {
  const rules::Variant& var = theory_.variants(n)[static_cast<size_t>(v)];
  double s = groupSeconds(n, var, groups_[static_cast<size_t>(groupOf_[static_cast<size_t>(device)])], false);
  return var.sfb ? s + sfbExtraSeconds(n, var) : s;
}

double CostTable::deviceForwardSeconds(ir::NodeId n, int v, int device) const {
  const rules::Variant& var = theory_.variants(n)[static_cast<size_t>(v)];
  return groupSeconds(n, var, groups_[static_cast<size_t>(groupOf_[static_cast<size_t>(device)])], true);
}

double CostTable::localBytes(ir::ValueId x, Rel r, int device) const {
  const double bytes = static_cast<double>(theory_.graph().value(x).bytes());
  return isGather(r) ? bytes * shares_[static_cast<size_t>(device)] : bytes;
}

std::optional<Conversion> CostTable::convert(ir::ValueId x, FormMask have, Rel to) const {
  const ir::Graph& g = theory_.graph();
  const ir::Value& v = g.value(x);
  const bool grad = theory_.requiresGrad(x);
  std::optional<Conversion> best;
  auto offer = [&](Conversion c) {
    if (!best || c.seconds() < best->seconds()) best = c;
  };
  const bool has = [&] {
    if (have & bit(to)) return true;
    return (have & bit(kIdentity)) && (isGather(to) || to == kReduce);
  }();
  assert(!has && "convert() called for a form the value already has");
  (void)has;

  if (theory_.isSource(x)) {
    const bool param = v.kind == ir::ValueKind::Parameter;
    const bool input = v.kind == ir::ValueKind::Input;
    if (to == kIdentity) {
      Conversion c{param ? ConversionKind::ParamReplicate : ConversionKind::LoadReplica};
      c.to = to;
      if (param) c.backwardSeconds = cost::allReduceSeconds(cluster_, static_cast<double>(v.bytes()));
      offer(c);
    } else if (to == kIdentitySfb) {
      if (param && restrictions_.sfb) offer({ConversionKind::ParamSfb, kIdentity, to});
    } else if (isGather(to)) {
      const bool allowed = param ? restrictions_.parameterShards
                                 : !(input && restrictions_.inputShardsOnBatchOnly && to != 0);
      if (allowed) offer({ConversionKind::LoadShard, kIdentity, to});
    }
    // A source that already holds a form may also convert from it (below), e.g. a sharded
    // parameter all-gathered before use (ZeRO-3 style).
  }
  if (to == kIdentitySfb) return best;

  for (int bitIndex = 0; bitIndex < 16; ++bitIndex) {
    if (!(have & (1u << bitIndex))) continue;
    const Rel from = bitIndex >= 3 ? static_cast<Rel>(bitIndex - 3) : static_cast<Rel>(-1 - bitIndex);
    if (from == kIdentitySfb) continue;
    Conversion c{ConversionKind::Slice, from, to};
    if (from == kIdentity) {
      c.kind = to == kReduce ? ConversionKind::ReplicaToPartial : ConversionKind::Slice;
      offer(c);
    } else if (from == kReduce && to == kIdentity) {
      c.kind = ConversionKind::AllReduce;
      c.forwardSeconds = cost::allReduceSeconds(cluster_, static_cast<double>(v.bytes()));
      if (grad) c.backwardSeconds = c.forwardSeconds;
      offer(c);
    } else if (from == kReduce && isGather(to)) {
      c.kind = ConversionKind::ReduceScatter;
      std::vector<double> shards(shares_.size());
      for (size_t j = 0; j < shares_.size(); ++j) shards[j] = static_cast<double>(v.bytes()) * shares_[j];
      for (cost::Method m : {cost::Method::Padded, cost::Method::Grouped}) {
        Conversion mc = c;
        mc.method = m;
        mc.forwardSeconds = cost::reduceScatterSeconds(cluster_, m, shards);
        if (grad) mc.backwardSeconds = cost::allGatherSeconds(cluster_, m, shards);
        offer(mc);
      }
    } else if (isGather(from) && to == kIdentity) {
      c.kind = ConversionKind::AllGather;
      std::vector<double> shards(shares_.size());
      for (size_t j = 0; j < shares_.size(); ++j) shards[j] = static_cast<double>(v.bytes()) * shares_[j];
      for (cost::Method m : {cost::Method::Padded, cost::Method::Grouped}) {
        Conversion mc = c;
        mc.method = m;
        mc.forwardSeconds = cost::allGatherSeconds(cluster_, m, shards);
        if (grad) mc.backwardSeconds = cost::reduceScatterSeconds(cluster_, m, shards);
        offer(mc);
      }
    } else if (isGather(from) && isGather(to)) {
      c.kind = ConversionKind::AllToAll;
      std::vector<double> local(shares_.size());
      for (size_t j = 0; j < shares_.size(); ++j) local[j] = static_cast<double>(v.bytes()) * shares_[j];
      c.forwardSeconds = cost::allToAllSeconds(cluster_, local, shares_);
      if (grad) c.backwardSeconds = c.forwardSeconds;
      offer(c);
    }
    // G -> R and R from a partial-sum-free form are not exact conversions.
  }
  return best;
}

}  // namespace hap::synth
