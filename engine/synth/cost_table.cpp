#include "engine/synth/cost_table.h"

#include <algorithm>
#include <numeric>
#include <bit>
#include <cassert>
#include <limits>

#include "engine/cost/device_cost.h"
#include "engine/cost/profile.h"
#include "engine/ir/op_cost.h"
#include "engine/ir/segments.h"

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

CostTable::CostTable(const Theory& theory, const cost::Cluster& cluster, const std::vector<double>& shares,
                     CostOptions options)
    : CostTable(theory, cluster, Shares(static_cast<size_t>(theory.segmentCount()), shares), options) {}

CostTable::CostTable(const Theory& theory, const cost::Cluster& cluster, Shares shares, CostOptions options)
    : CostTable(theory, cluster, std::move(shares), options, {}) {}

CostTable::CostTable(const Theory& theory, const cost::Cluster& cluster, Shares shares, CostOptions options,
                     std::vector<ClassCut> cuts)
    : theory_(theory), cluster_(cluster), shares_(std::move(shares)), cuts_(std::move(cuts)), options_(options),
      restrictions_(options.restrictions) {
  assert(static_cast<int>(shares_.size()) == theory_.segmentCount());
  rowShares_ = shares_;
  for (const ClassCut& c : cuts_) {
    const int64_t units = theory_.classes().units(c.dimClass);
    assert(units > 0 && c.units.size() == static_cast<size_t>(cluster_.size()));
    assert(std::accumulate(c.units.begin(), c.units.end(), int64_t{0}) == units);
    std::vector<double> row;
    for (int64_t u : c.units) row.push_back(static_cast<double>(u) / static_cast<double>(units));
    const bool fresh = cutRow_.emplace(std::pair{c.segment, c.dimClass},
                                       static_cast<int>(rowShares_.size())).second;
    assert(fresh && "one cut per (segment, class)");
    (void)fresh;
    rowShares_.push_back(std::move(row));
  }
  groupOf_.resize(static_cast<size_t>(cluster_.size()));
  for (int j = 0; j < cluster_.size(); ++j) {
    const int type = cluster_.devices[static_cast<size_t>(j)].type;
    std::vector<double> mine;
    for (const std::vector<double>& row : rowShares_) {
      assert(static_cast<int>(row.size()) == cluster_.size());
      mine.push_back(row[static_cast<size_t>(j)]);
    }
    auto it = std::find_if(groups_.begin(), groups_.end(),
                           [&](const Group& g) { return g.type == type && g.shares == mine; });
    if (it == groups_.end()) {
      groups_.push_back({type, std::move(mine), {}});
      it = groups_.end() - 1;
    }
    it->devices.push_back(j);
    groupOf_[static_cast<size_t>(j)] = static_cast<int>(it - groups_.begin());
  }

  const ir::Graph& g = theory_.graph();
  best_.resize(g.nodes.size());
  for (const ir::Node& n : g.nodes) {
    auto& row = best_[static_cast<size_t>(n.id)];
    const auto& variants = theory_.variants(n.id);
    for (size_t vi = 0; vi < variants.size(); ++vi) {
      double worst = 0;
      for (const Group& grp : groups_) worst = std::max(worst, groupSecondsOf(n.id, static_cast<int>(vi), grp, Pass::Both));
      const NodeCommunication comm = nodeCommunication(n.id, static_cast<int>(vi));
      row.push_back(worst + comm.forward + comm.backward);
    }
  }
  computeBounds();
}

void CostTable::computeBounds() {
  const ir::Graph& g = theory_.graph();
  bound_.assign(g.nodes.size(), {});
  distances_.clear();
  for (const ir::Node& n : g.nodes) {
    const std::vector<ir::ValueId> ins = n.tensorInputs();
    const auto& variants = theory_.variants(n.id);
    for (size_t vi = 0; vi < variants.size(); ++vi) {
      double bound = best_[static_cast<size_t>(n.id)][vi];
      for (size_t i = 0; i < ins.size(); ++i) {
        if (restrictions_.parametersWhole && g.value(ins[i]).kind == ir::ValueKind::Parameter &&
            variants[vi].inputs[i] != kIdentity)
          bound = std::numeric_limits<double>::infinity();
        const ir::Value& x = g.value(ins[i]);
        // A parameter read by this node alone, once, holds nothing before it: it is loaded here,
        // directly, and nowhere else, so its load can be charged to this node.
        if (x.kind != ir::ValueKind::Parameter || x.users.size() != 1 ||
            std::count(ins.begin(), ins.end(), x.id) != 1)
          continue;
        bound += distance(x.id, 0, variants[vi].inputs[i]);  // e.g. R: loaded as I, then local
      }
      bound_[static_cast<size_t>(n.id)].push_back(bound);
    }
  }
}

double CostTable::distance(ir::ValueId x, FormMask have, Rel to) const {
  if (holds(have, to)) return 0;
  const uint64_t key = (static_cast<uint64_t>(x) << 16) | have;
  auto it = distances_.find(key);
  if (it == distances_.end()) {
    // Dijkstra over the (at most 16) forms, from the held ones and, for a source, from a load.
    constexpr double kInf = std::numeric_limits<double>::infinity();
    const int rank = std::min(theory_.graph().value(x).rank(), kMaxShardedRank);
    std::array<double, 16> d;
    d.fill(kInf);
    std::array<bool, 16> done{};
    const int forms = 3 + rank;
    for (int b = 0; b < forms; ++b) {
      if (holds(have, relOfBit(b))) d[static_cast<size_t>(b)] = 0;
      else if (theory_.isSource(x))
        if (const auto& load = pair(x, kNoForm, relOfBit(b))) d[static_cast<size_t>(b)] = load->seconds();
    }
    for (int round = 0; round < forms; ++round) {
      int u = -1;
      for (int b = 0; b < forms; ++b)
        if (!done[static_cast<size_t>(b)] && (u < 0 || d[static_cast<size_t>(b)] < d[static_cast<size_t>(u)])) u = b;
      if (d[static_cast<size_t>(u)] == kInf) break;
      done[static_cast<size_t>(u)] = true;
      const Rel from = relOfBit(u);
      for (int b = 0; b < forms; ++b) {
        if (done[static_cast<size_t>(b)]) continue;
        const Rel r = relOfBit(b);
        // Forms derivable locally from I cost nothing; otherwise one collective.
        double step = kInf;
        if (holds(bit(from), r)) step = 0;
        else if (r == kIdentitySfb) continue;  // only a source's load gives I*
        else if (const auto& c = pair(x, from, r)) step = c->seconds();
        d[static_cast<size_t>(b)] = std::min(d[static_cast<size_t>(b)], d[static_cast<size_t>(u)] + step);
      }
    }
    it = distances_.emplace(key, d).first;
  }
  return it->second[static_cast<size_t>(std::countr_zero(bit(to)))];
}

int CostTable::formRow(ir::ValueId x, Rel r) const {
  if (cutRow_.empty() || !isGather(r)) return theory_.valueSegment(x);
  auto it = cutRow_.find({theory_.valueSegment(x), theory_.classes().classOf({x, r})});
  return it == cutRow_.end() ? theory_.valueSegment(x) : it->second;
}

int CostTable::nodeRow(ir::NodeId n, int v) const {
  if (cutRow_.empty()) return theory_.nodeSegment(n);
  auto it = cutRow_.find({theory_.nodeSegment(n), theory_.cutClass(n, v)});
  return it == cutRow_.end() ? theory_.nodeSegment(n) : it->second;
}

const ClassCut* CostTable::cutOf(ir::ValueId x, Rel r) const {
  const int row = formRow(x, r);
  return row < theory_.segmentCount() ? nullptr : &cuts_[static_cast<size_t>(row - theory_.segmentCount())];
}

const std::vector<double>& CostTable::formShares(ir::ValueId x, Rel r) const {
  return rowShares_[static_cast<size_t>(formRow(x, r))];
}

double CostTable::groupSecondsOf(ir::NodeId id, int vi, const Group& grp, Pass pass) const {
  const double share = grp.shares[static_cast<size_t>(nodeRow(id, vi))];
  double worst = 0;
  for (const Affine& p : pieces(id, theory_.variants(id)[static_cast<size_t>(vi)], grp.type, pass, share))
    worst = std::max(worst, p.at(share));
  return worst;
}

double CostTable::groupSeconds(ir::NodeId n, int v, int group, Pass pass) const {
  return groupSecondsOf(n, v, groups_[static_cast<size_t>(group)], pass);
}

bool CostTable::isReshard(ir::NodeId n, int v) const {
  return theory_.graph().node(n).op == ir::kReshardOp && isGather(theory_.variants(n)[static_cast<size_t>(v)].outputs[0]);
}

NodeCommunication CostTable::nodeCommunication(ir::NodeId n, int vi) const {
  const rules::Variant& v = theory_.variants(n)[static_cast<size_t>(vi)];
  NodeCommunication c;
  if (v.sfb) c.backward = sfbExtraSeconds(n, v);
  if (v.syncBytes > 0) {
    // Statistics summed over every rank, forward and (the dual) backward.
    c.forward = cost::allReduceSeconds(cluster_, static_cast<double>(v.syncBytes));
    bool grad = false;
    for (ir::ValueId o : theory_.graph().node(n).outputs) grad = grad || theory_.requiresGrad(o);
    if (grad) c.backward = c.forward;
  }
  if (isReshard(n, vi)) {
    const ir::Node& node = theory_.graph().node(n);
    const ir::ValueId in = node.tensorInputs()[0], out = node.outputs[0];
    c.forward = cost::reshardSeconds(cluster_, static_cast<double>(theory_.graph().value(in).bytes()),
                                     formShares(in, v.inputs[0]), formShares(out, v.outputs[0]));
    if (theory_.requiresGrad(out)) c.backward = c.forward;
  }
  return c;
}

// The roofline of cost/device_cost.h with the device's share s left free: forward =
// max(flops * w(s) / F, bytes(s) / BW) + overhead, where w(s) is s when the variant splits the
// op (any G fact) and 1 otherwise, and bytes(s) counts the G tensors' bytes times s.
std::vector<Affine> CostTable::pieces(ir::NodeId id, const rules::Variant& v, int typeIndex, Pass pass,
                                      double share) const {
  const ir::Graph& g = theory_.graph();
  const ir::Node& n = g.node(id);
  if (n.cost.flops <= 0 && n.cost.bytesRead <= 0 && n.cost.bytesWritten <= 0) return {Affine{}};
  const bool split = anyGather(v);
  // Bytes as constant + perShare * s: each tensor's share of the op's byte count.
  Affine bytes;
  auto addBytes = [&](double opBytes, const std::vector<ir::ValueId>& values, const std::vector<Rel>& rels) {
    double total = 0;
    for (ir::ValueId x : values) total += static_cast<double>(g.value(x).bytes());
    if (total <= 0) {
      bytes.constant += opBytes;
      return;
    }
    for (size_t i = 0; i < values.size(); ++i) {
      const double part = opBytes * static_cast<double>(g.value(values[i]).bytes()) / total;
      (isGather(rels[i]) ? bytes.perShare : bytes.constant) += part;
    }
  };
  addBytes(static_cast<double>(n.cost.bytesRead), n.tensorInputs(), v.inputs);
  addBytes(static_cast<double>(n.cost.bytesWritten), n.outputs, v.outputs);
  const cost::DeviceType& type = cluster_.types[static_cast<size_t>(typeIndex)];
  bool grad = false;
  for (ir::ValueId o : n.outputs) grad = grad || theory_.requiresGrad(o);
  const Measured m = measured(n, type);
  if (m.ops) {
    // The measured forward time of the op's family at the size of this device's piece, as the
    // line through that size: time(s) = intercept + slope * work(s). Backward: the op's backward
    // factor times the forward; SFB forms the weight gradient at full size.
    const double scale = m.device->computeScale;
    const bool flops = cost::flopBound(m.family);
    const Affine work = flops ? (split ? Affine{0, n.cost.flops} : Affine{n.cost.flops, 0})
                              : Affine{bytes.constant, bytes.perShare};
    const cost::WorkLine line = m.ops->lineAt(work.at(share));
    const Affine forward{scale * (line.intercept + line.slope * work.constant), scale * line.slope * work.perShare};
    const double full = scale * m.ops->seconds(flops ? n.cost.flops : bytes.constant + bytes.perShare);
    Affine t = pass == Pass::Backward ? Affine{} : forward;
    if (pass != Pass::Forward && grad) {
      if (v.sfb) t = {t.constant + forward.constant + full, t.perShare + forward.perShare};
      else t = {t.constant + backwardFactor(n.op) * forward.constant, t.perShare + backwardFactor(n.op) * forward.perShare};
    }
    return {t};
  }
  const double rate = type.flops(ir::computeType(g, n));
  const Affine compute = split ? Affine{0, n.cost.flops / rate} : Affine{n.cost.flops / rate, 0};
  const Affine memory{bytes.constant / type.memoryBandwidth, bytes.perShare / type.memoryBandwidth};
  const double overhead = type.opOverheadSeconds;
  // time = scale * max(compute, memory) + extra: forward scale 1; backward the op's backward
  // factor (nothing where no gradient flows).
  double scale = pass == Pass::Backward ? 0 : 1, extra = pass == Pass::Backward ? 0 : overhead;
  if (pass != Pass::Forward && grad) {
    if (v.sfb) {
      // The weight gradient is formed in full on every device (its gathers are in sfbLinear):
      // half of the matmul backward runs at full size instead of the device's share.
      const double full = cost::computeSeconds(type, n.cost.flops, static_cast<double>(n.cost.bytesRead),
                                               ir::computeType(g, n)) - overhead;
      scale += 1;
      extra += full + overhead;
    } else {
      scale += backwardFactor(n.op);
      extra += overhead;
    }
  }
  // A calibrated device type scales the roofline too (DeviceProfile::computeScale).
  const double k = m.device ? m.device->computeScale : 1;
  return {Affine{k * (scale * compute.constant + extra), k * scale * compute.perShare},
          Affine{k * (scale * memory.constant + extra), k * scale * memory.perShare}};
}

CostTable::Measured CostTable::measured(const ir::Node& n, const cost::DeviceType& type) const {
  Measured m;
  if (!cluster_.measured) return m;
  m.device = cluster_.measured->device(type.name);  // its calibration applies to every op
  const std::optional<cost::OpFamily> family = cost::opFamilyOf(n.op);
  if (!m.device || !family) return m;
  m.family = *family;
  m.ops = m.device->find(*family, ir::computeType(theory_.graph(), n));
  return m;
}

double CostTable::typeShare(int type, int row) const {
  for (const Group& grp : groups_)
    if (grp.type == type) return grp.shares[static_cast<size_t>(row)];
  return 0;
}

std::vector<Affine> CostTable::nodePieces(ir::NodeId n, int v, int type, Pass pass) const {
  return pieces(n, theory_.variants(n)[static_cast<size_t>(v)], type, pass, typeShare(type, nodeRow(n, v)));
}

cost::GatherLinear CostTable::sfbLinear(ir::NodeId id, int vi) const {
  const rules::Variant& v = theory_.variants(id)[static_cast<size_t>(vi)];
  cost::GatherLinear total;
  if (!v.sfb) return total;
  const ir::Node& n = theory_.graph().node(id);
  const std::vector<ir::ValueId> ins = n.tensorInputs();
  auto add = [&](ir::ValueId x, Rel r) {
    cost::Method m;
    gatherSeconds(x, r, false, &m);  // the method the cost table chose
    const cost::GatherLinear l = cost::gatherLinear(cluster_, cost::Collective::AllGather, m,
                                                    static_cast<double>(theory_.graph().value(x).bytes()));
    total.constant += l.constant;
    total.perLargestShare += l.perLargestShare;
  };
  for (size_t i = 0; i < ins.size(); ++i)
    if (isGather(v.inputs[i])) add(ins[i], v.inputs[i]);
  for (size_t o = 0; o < n.outputs.size(); ++o) add(n.outputs[o], v.outputs[o]);
  return total;
}

cost::GatherLinear CostTable::conversionLinear(ir::ValueId x, const Conversion& c, Pass pass) const {
  const bool forward = pass != Pass::Backward, backward = pass != Pass::Forward;
  const double bytes = static_cast<double>(theory_.graph().value(x).bytes());
  const bool gather = c.kind == ConversionKind::AllGather, scatter = c.kind == ConversionKind::ReduceScatter;
  if (c.kind == ConversionKind::ParamReplicate) return {forward ? c.forwardSeconds : 0, 0};  // gradient: in the buckets
  if (!gather && !scatter)  // share-independent, or all-to-all as priced
    return {(forward ? c.forwardSeconds : 0) + (backward ? c.backwardSeconds : 0), 0};
  const cost::GatherLinear ag = cost::gatherLinear(cluster_, cost::Collective::AllGather, c.method, bytes);
  const cost::GatherLinear rs = cost::gatherLinear(cluster_, cost::Collective::ReduceScatter, c.method, bytes);
  const cost::GatherLinear& fwd = gather ? ag : rs;
  const cost::GatherLinear& bwd = gather ? rs : ag;
  const bool grad = backward && c.backwardSeconds > 0;
  return {(forward ? fwd.constant : 0) + (grad ? bwd.constant : 0),
          (forward ? fwd.perLargestShare : 0) + (grad ? bwd.perLargestShare : 0)};
}

// SFB: every device all-gathers the sufficient factors (the G input and the output gradient) to
// form the full weight gradient, instead of all-reducing it.
double CostTable::sfbExtraSeconds(ir::NodeId id, const rules::Variant& v) const {
  const ir::Node& n = theory_.graph().node(id);
  const std::vector<ir::ValueId> ins = n.tensorInputs();
  double seconds = 0;
  cost::Method m;
  for (size_t i = 0; i < ins.size(); ++i)
    if (isGather(v.inputs[i])) seconds += gatherSeconds(ins[i], v.inputs[i], false, &m);
  for (size_t o = 0; o < n.outputs.size(); ++o) seconds += gatherSeconds(n.outputs[o], v.outputs[o], false, &m);
  return seconds;
}

// All-gather of x in form r (with its reduce-scatter dual when `grad`), cheapest method.
double CostTable::gatherSeconds(ir::ValueId x, Rel r, bool grad, cost::Method* method) const {
  const double bytes = static_cast<double>(theory_.graph().value(x).bytes());
  const std::vector<double>& shares = formShares(x, r);
  std::vector<double> shards(shares.size());
  for (size_t j = 0; j < shares.size(); ++j) shards[j] = bytes * shares[j];
  double best = std::numeric_limits<double>::infinity();
  for (cost::Method m : {cost::Method::Padded, cost::Method::Grouped}) {
    if (m == cost::Method::Grouped && !restrictions_.groupedCollectives) continue;
    if (m == cost::Method::Padded && !restrictions_.paddedCollectives) continue;
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
  const NodeCommunication comm = nodeCommunication(n, v);
  return groupSeconds(n, v, groupOf(device), Pass::Both) + comm.forward + comm.backward;
}

void CostTable::restrict(const Restrictions& r) {
  restrictions_ = r;
  pairs_.clear();
  computeBounds();
}

std::optional<Conversion> CostTable::convert(ir::ValueId x, FormMask have, Rel to) const {
  assert(!holds(have, to) && "convert() called for a form the value already has");
  const std::optional<Conversion>* best = nullptr;
  auto offer = [&](const std::optional<Conversion>& c) {
    if (c && (!best || c->seconds() < (*best)->seconds())) best = &c;
  };
  if (theory_.isSource(x)) offer(pair(x, kNoForm, to));
  if (to != kIdentitySfb)
    for (int b = 0; b < 16; ++b)
      if (have & (1u << b)) offer(pair(x, relOfBit(b), to));
  // R and G(d) also follow locally from I: obtaining I may be the only way (a parameter read as
  // R) or the cheaper one. Such a conversion's `to` is I.
  if (to != kIdentity && to != kIdentitySfb) {
    if (theory_.isSource(x)) offer(pair(x, kNoForm, kIdentity));
    for (int b = 0; b < 16; ++b)
      if (have & (1u << b)) offer(pair(x, relOfBit(b), kIdentity));
  }
  return best ? *best : std::nullopt;
}

const std::optional<Conversion>& CostTable::pair(ir::ValueId x, int from, Rel to) const {
  // from is kNoForm (-100), -3..-1 or a dimension; to is -3..-1 or a dimension: both fit a byte
  // once offset by 128.
  const uint64_t key = (static_cast<uint64_t>(x) << 16) | (static_cast<uint64_t>(from + 128) << 8) |
                       static_cast<uint64_t>(to + 128);
  auto it = pairs_.find(key);
  if (it == pairs_.end()) it = pairs_.emplace(key, computePair(x, from, to)).first;
  return it->second;
}

std::optional<Conversion> CostTable::computePair(ir::ValueId x, int fromForm, Rel to) const {
  const ir::Value& v = theory_.graph().value(x);
  const bool grad = theory_.requiresGrad(x);
  const double bytes = static_cast<double>(v.bytes());
  if (fromForm == kNoForm) {  // loading a source
    const bool param = v.kind == ir::ValueKind::Parameter;
    const bool input = v.kind == ir::ValueKind::Input;
    // Data parallelism: each rank reads only its rows of an input (a scalar input is read whole).
    if (input && restrictions_.inputShardsOnBatchOnly && to != 0 && v.rank() > 0) return std::nullopt;
    if (to == kIdentity) {
      // Without replicas a parameter is stored as shards along dimension 0 and all-gathered for
      // every use (fully sharded data parallelism).
      if (param && !restrictions_.parameterReplicas && v.rank() > 0) return pair(x, 0, kIdentity);
      Conversion c{param ? ConversionKind::ParamReplicate : ConversionKind::LoadReplica};
      // The gradient's all-reduce, as the runtime's gradient buckets make it (its bytes and its
      // part of a bucket's call: cost/bucketed_gradients.h); a calibrated profile says how much of
      // it the buckets leave exposed behind backward (Profile::gradientExposure).
      if (param)
        c.backwardSeconds = cost::bucketedGradientSeconds(cluster_, bytes, options_.gradientBucketBytes) *
                            (cluster_.measured ? cluster_.measured->gradientExposure : 1.0) *
                            options_.gradientSearchScale;
      return c;
    }
    if (to == kIdentitySfb) {
      if (param && restrictions_.sfb) return Conversion{ConversionKind::ParamSfb, kIdentity, to};
      return std::nullopt;
    }
    if (to == kReduce) return std::nullopt;  // via I, then replica-to-partial
    if (param && !restrictions_.parameterShards) return std::nullopt;
    return Conversion{ConversionKind::LoadShard, kIdentity, to};
  }
  const Rel from = static_cast<Rel>(fromForm);
  if (from == kIdentitySfb || from == to) return std::nullopt;
  // The shares of the G side (an all-to-all's source; it receives by its target's).
  const std::vector<double>& shares = formShares(x, isGather(from) ? from : to);
  std::vector<double> shards(shares.size());
  for (size_t j = 0; j < shares.size(); ++j) shards[j] = bytes * shares[j];
  Conversion c{ConversionKind::Slice, from, to};
  if (from == kIdentity) {
    c.kind = to == kReduce ? ConversionKind::ReplicaToPartial : ConversionKind::Slice;
    return c;
  }
  if (from == kReduce && to == kIdentity) {
    c.kind = ConversionKind::AllReduce;
    c.forwardSeconds = cost::allReduceSeconds(cluster_, bytes);
    if (grad) c.backwardSeconds = c.forwardSeconds;
    return c;
  }
  if ((from == kReduce && isGather(to)) || (isGather(from) && to == kIdentity)) {
    const bool gather = to == kIdentity;
    c.kind = gather ? ConversionKind::AllGather : ConversionKind::ReduceScatter;
    std::optional<Conversion> best;
    for (cost::Method m : {cost::Method::Padded, cost::Method::Grouped}) {
      if (m == cost::Method::Grouped && !restrictions_.groupedCollectives) continue;
      if (m == cost::Method::Padded && !restrictions_.paddedCollectives) continue;
      Conversion mc = c;
      mc.method = m;
      const double ag = cost::allGatherSeconds(cluster_, m, shards);
      const double rs = cost::reduceScatterSeconds(cluster_, m, shards);
      mc.forwardSeconds = gather ? ag : rs;
      if (grad) mc.backwardSeconds = gather ? rs : ag;
      if (!best || mc.seconds() < best->seconds()) best = mc;
    }
    return best;
  }
  if (isGather(from) && isGather(to)) {
    c.kind = ConversionKind::AllToAll;
    c.forwardSeconds = cost::allToAllSeconds(cluster_, shards, formShares(x, to));
    if (grad) c.backwardSeconds = c.forwardSeconds;
    return c;
  }
  return std::nullopt;  // G -> R is not an exact conversion
}

}  // namespace hap::synth
