#include "engine/pipeline/stage_partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "engine/balance/alternation.h"
#include "engine/base/error.h"
#include "engine/ir/segments.h"
#include "engine/pipeline/device_group.h"
#include "engine/pipeline/stage_graph.h"
#include "engine/synth/memory.h"
#include "engine/synth/search.h"
#include "engine/synth/stages.h"
#include "engine/synth/theory.h"

namespace hap::pipeline {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Price {
  bool ok = false;
  std::string note;  // why not, when not
  StageFigures figures;
  double receivedBytes = 0;
};

std::vector<int> ranksOf(const std::vector<std::vector<int>>& units, int first, int end) {
  std::vector<int> r;
  for (int u = first; u < end; ++u) r.insert(r.end(), units[static_cast<size_t>(u)].begin(), units[static_cast<size_t>(u)].end());
  return r;
}

ir::DType computeType(const ir::Graph& g) {
  for (ir::ValueId p : g.parameters)
    if (ir::isFloating(g.value(p).dtype)) return g.value(p).dtype;
  return ir::DType::Float32;
}

// Stage plans priced while searching, cached.
class Pricer {
 public:
  Pricer(const ir::Graph& model, const MicroBatchGraph& at, const cost::Cluster& cluster, const std::vector<int>& nodeSegment,
         const PartitionOptions& options, PipelinePlan& stats)
      : model_(model), at_(at), cluster_(cluster), nodeSegment_(nodeSegment), options_(options), stats_(stats) {}

  std::shared_ptr<const ir::Graph> graphAt(int m) {
    auto it = graphs_.find(m);
    if (it != graphs_.end()) return it->second;
    std::shared_ptr<const ir::Graph> g = at_(m);
    if (!g || g->nodes.size() != model_.nodes.size())
      throw Error(fmt::format("{}: imported at 1/{} of its batch, the model has {} nodes instead of {}; it cannot be "
                              "cut into pipeline stages by the same segments",
                              model_.sourceFile, m, g ? g->nodes.size() : 0, model_.nodes.size()));
    graphs_[m] = g;
    return g;
  }

  const Price& price(int first, int end, const std::vector<int>& ranks, const std::string& groupKey, int m) {
    const std::string key = fmt::format("{}:{}:{}:{}", first, end, groupKey, m);
    if (auto it = byRange_.find(key); it != byRange_.end()) {
      ++stats_.cacheHits;
      return prices_[it->second];
    }
    Price p;
    std::optional<StageGraph> st;
    try {
      st.emplace(stageGraph(*graphAt(m), nodeSegment_, first, end));
    } catch (const StageError& e) {
      p.note = e.what();
    }
    size_t index = prices_.size();
    if (st) {
      const std::string skey = structuralKey(*st) + "#" + groupKey + "#" + std::to_string(m);
      if (auto it = byStructure_.find(skey); it != byStructure_.end()) {
        ++stats_.cacheHits;
        byRange_[key] = it->second;
        return prices_[it->second];
      }
      p = priceStage(*st, ranks);
      byStructure_[skey] = index;
    }
    prices_.push_back(std::move(p));
    byRange_[key] = index;
    return prices_.back();
  }

 private:
  Price priceStage(const StageGraph& st, const std::vector<int>& ranks) {
    Price p;
    p.receivedBytes = st.receivedBytes();
    const cost::Cluster sub = subCluster(cluster_, ranks);
    ++stats_.stagePlansPriced;
    try {
      ir::Segmentation seg = ir::segmentGraph(st.graph, options_.stagePlan.segments);
      const ir::Graph g = ir::insertReshards(st.graph, seg);
      const synth::Theory theory(g, seg.nodeSegment);
      balance::AlternationOptions alt;
      alt.maxRounds = 0;
      alt.cost = options_.stagePlan.cost;
      alt.search = options_.stagePlan.search;
      alt.search.listener = nullptr;
      const std::vector<double> start = plan::ratiosFor(g, sub, options_.searchRatios);
      balance::AlternationResult r = balance::alternate(theory, sub, start, alt);
      balance::Executed exact = balance::executed(*r.table, r.program);
      if (exact.table) {
        r.table = std::move(exact.table);
        r.program = std::move(exact.program);
      }
      const synth::StageModel model = synth::stageModel(*r.table, r.program);
      p.figures.forwardSeconds = model.forwardSeconds;
      p.figures.backwardSeconds = model.backwardSeconds;
      p.figures.gradientSeconds = model.exposedGradientSeconds;
      const std::vector<synth::MemoryBreakdown> mem =
          synth::deviceMemoryBreakdown(*r.table, r.program, options_.stagePlan.cost);
      for (int j = 0; j < sub.size(); ++j) {
        const synth::MemoryBreakdown& b = mem[static_cast<size_t>(j)];
        p.figures.fixedBytes.push_back(b.total() - b.activations);
        p.figures.activationBytes.push_back(b.activations);
        p.figures.capacityBytes.push_back(sub.type(j).memoryBytes);
      }
      p.ok = true;
    } catch (const synth::SearchError& e) {
      if (options_.stagePlan.search.cancelled()) throw;
      p.note = e.what();
    }
    return p;
  }

  const ir::Graph& model_;
  const MicroBatchGraph& at_;
  const cost::Cluster& cluster_;
  const std::vector<int>& nodeSegment_;
  const PartitionOptions& options_;
  PipelinePlan& stats_;
  std::map<int, std::shared_ptr<const ir::Graph>> graphs_;
  std::deque<Price> prices_;  // stable references
  std::unordered_map<std::string, size_t> byRange_, byStructure_;
};

bool fitsAt(const StageFigures& f, int inFlight) {
  for (size_t j = 0; j < f.fixedBytes.size(); ++j)
    if (f.fixedBytes[j] + inFlight * f.activationBytes[j] > f.capacityBytes[j]) return false;
  return true;
}

// One partition: per stage its segment range and unit range.
struct Partition {
  std::vector<int> cuts;       // S + 1 segment cuts
  std::vector<int> unitCuts;   // S + 1 unit cuts
  double bottleneck = kInf, sum = kInf;
};

struct Search {
  Search(const ir::Graph& g, const cost::Cluster& c, const std::vector<std::vector<int>>& u, const std::vector<bool>& k,
         Pricer& p, PipelinePlan& st, int segments, int unitCount)
      : model(g), cluster(c), units(u), cuts(k), pricer(p), stats(st), L(segments), U(unitCount) {}
  const ir::Graph& model;
  const cost::Cluster& cluster;
  const std::vector<std::vector<int>>& units;
  const std::vector<bool>& cuts;
  Pricer& pricer;
  PipelinePlan& stats;
  int L = 0, U = 0;
  // Prefix sums: forward FLOPs and bytes per segment (global batch), peak FLOP/s and memory
  // bandwidth per unit.
  std::vector<double> flopsPrefix, bytesPrefix, capPrefix, bwPrefix;
  std::vector<bool> unitCut;  // where a group may end (PartitionOptions::unitGranularity)
  bool oneMachine = false;
  std::vector<int> groupIds;  // per (u0, u1): index into signatures, -1 until computed
  std::unordered_map<std::string, int> signatureIds;
  std::vector<std::string> signatures;
  std::map<std::array<int, 4>, const Price*> memo;  // (k0, k1, group id, m)

  int groupId(int u0, int u1) {
    int& id = groupIds[static_cast<size_t>(u0) * (U + 1) + u1];
    if (id < 0) {
      const std::string key = groupSignature(cluster, ranksOf(units, u0, u1));
      auto [it, fresh] = signatureIds.try_emplace(key, static_cast<int>(signatures.size()));
      if (fresh) signatures.push_back(key);
      id = it->second;
    }
    return id;
  }

  const Price& price(int k0, int k1, int u0, int u1, int m) {
    const int g = groupId(u0, u1);
    auto [it, fresh] = memo.try_emplace(std::array<int, 4>{k0, k1, g, m}, nullptr);
    if (fresh) it->second = &pricer.price(k0, k1, ranksOf(units, u0, u1), signatures[static_cast<size_t>(g)], m);
    return *it->second;
  }

  // The roofline lower bound of segments [k0, k1) on units [u0, u1) at micro-batch count m.
  double lowerBound(int k0, int k1, int u0, int u1, int m) const {
    const double f = flopsPrefix[static_cast<size_t>(k1)] - flopsPrefix[static_cast<size_t>(k0)];
    const double b = bytesPrefix[static_cast<size_t>(k1)] - bytesPrefix[static_cast<size_t>(k0)];
    const double F = capPrefix[static_cast<size_t>(u1)] - capPrefix[static_cast<size_t>(u0)];
    const double B = bwPrefix[static_cast<size_t>(u1)] - bwPrefix[static_cast<size_t>(u0)];
    return std::max(F > 0 ? f / F : 0, B > 0 ? b / B : 0) / m;
  }

  // transferSeconds() for contiguous unit ranges [p0, u0) -> [u0, u1).
  double linkSeconds(int p0, int u0, int u1, double bytes) const {
    if (bytes <= 0) return 0;
    const cost::Link& l = oneMachine ? cluster.machines[0].link : cluster.network;
    const int parallel = oneMachine ? 1 : std::max(1, std::min(u0 - p0, u1 - u0));
    return l.bandwidth > 0 ? l.latency + bytes / (parallel * l.bandwidth) : 0;
  }

  // A stage's terms where it is stage s of S, receiving from units [p0, u0): its bottleneck term
  // max(F + B, the transfer into it: the link runs beside the computation, as in the 1F1B
  // recurrence) and its sum term F + B + both transfers (what fill and drain pay); kInf when it
  // has no plan or does not fit.
  struct Terms {
    double bottleneck = kInf, sum = kInf;
  };
  Terms stageTime(int k0, int k1, int p0, int u0, int u1, int s, int S, int m) {
    const Price& p = price(k0, k1, u0, u1, m);
    if (!p.ok || !fitsAt(p.figures, std::min(S - s, m))) return {};
    const double link = s > 0 ? linkSeconds(p0, u0, u1, p.receivedBytes) : 0;
    const double work = p.figures.forwardSeconds + p.figures.backwardSeconds;
    return {std::max(work, link), work + 2 * link};
  }

  // Equal unit counts, segments cut where the compute crosses each group's share.
  Partition incumbent(int S, int m) {
    Partition p;
    p.unitCuts.push_back(0);
    for (int s = 1; s < S; ++s) {
      int c = static_cast<int>(std::lround(static_cast<double>(s) * U / S));
      while (c < U && !unitCut[static_cast<size_t>(c)]) ++c;
      if (c <= p.unitCuts.back() || c >= U) return Partition{};
      p.unitCuts.push_back(c);
    }
    p.unitCuts.push_back(U);
    const double total = flopsPrefix.back(), cap = capPrefix.back();
    p.cuts.push_back(0);
    for (int s = 1; s < S; ++s) {
      const double target = total * capPrefix[static_cast<size_t>(p.unitCuts[static_cast<size_t>(s)])] / std::max(cap, 1e-300);
      int best = -1;
      double gap = kInf;
      for (int k = p.cuts.back() + 1; k <= L - (S - s); ++k) {
        if (!cuts[static_cast<size_t>(k)]) continue;
        const double d = std::abs(flopsPrefix[static_cast<size_t>(k)] - target);
        if (d < gap) gap = d, best = k;
      }
      if (best < 0) return Partition{};
      p.cuts.push_back(best);
    }
    p.cuts.push_back(L);
    double bottleneck = 0, sum = 0;
    for (int s = 0; s < S; ++s) {
      const Terms t = stageTime(p.cuts[static_cast<size_t>(s)], p.cuts[static_cast<size_t>(s) + 1],
                                s ? p.unitCuts[static_cast<size_t>(s) - 1] : 0, p.unitCuts[static_cast<size_t>(s)],
                                p.unitCuts[static_cast<size_t>(s) + 1], s, S, m);
      bottleneck = std::max(bottleneck, t.bottleneck);
      sum += t.sum;
    }
    p.bottleneck = bottleneck;
    p.sum = sum;
    return p;
  }

  Partition best(int S, int m) {
    Partition inc = incumbent(S, m);
    const double theta = inc.bottleneck * (1 + 1e-9);
    struct Cell {
      double bottleneck = kInf, sum = kInf;
      int prevK = -1, prevU = -1;
    };
    auto idx = [&](int s, int k, int u) { return (static_cast<size_t>(s) * (L + 1) + k) * (U + 1) + u; };
    std::vector<Cell> cell(static_cast<size_t>(S + 1) * (L + 1) * (U + 1));
    cell[idx(0, 0, 0)] = {0, 0, -1, -1};
    for (int s = 0; s < S; ++s) {
      const int rest = S - s - 1;
      for (int k = 0; k < L; ++k) {
        if (!cuts[static_cast<size_t>(k)]) continue;
        for (int u = 0; u < U; ++u) {
          const Cell from = cell[idx(s, k, u)];
          if (from.bottleneck == kInf) continue;
          for (int k1 = k + 1; k1 <= L - rest; ++k1) {
            if (!cuts[static_cast<size_t>(k1)] || (rest == 0 && k1 != L)) continue;
            for (int u1 = u + 1; u1 <= U - rest; ++u1) {
              if ((rest == 0 && u1 != U) || !unitCut[static_cast<size_t>(u1)]) continue;
              if (std::max(from.bottleneck, lowerBound(k, k1, u, u1, m)) > theta ||
                  (rest > 0 && lowerBound(k1, L, u1, U, m) > theta)) {
                ++stats.pruned;
                continue;
              }
              const Terms t = stageTime(k, k1, from.prevU < 0 ? 0 : from.prevU, u, u1, s, S, m);
              if (t.bottleneck == kInf) continue;
              Cell next{std::max(from.bottleneck, t.bottleneck), from.sum + t.sum, k, u};
              Cell& to = cell[idx(s + 1, k1, u1)];
              const bool better = next.bottleneck < to.bottleneck * (1 - 1e-12) ||
                                  (next.bottleneck <= to.bottleneck * (1 + 1e-12) && next.sum < to.sum);
              if (better) to = next;
            }
          }
        }
      }
    }
    const Cell& end = cell[idx(S, L, U)];
    if (end.bottleneck == kInf) return inc;
    Partition p;
    p.bottleneck = end.bottleneck;
    p.sum = end.sum;
    int k = L, u = U;
    p.cuts = {L};
    p.unitCuts = {U};
    for (int s = S; s > 0; --s) {
      const Cell& c = cell[idx(s, k, u)];
      k = c.prevK;
      u = c.prevU;
      p.cuts.push_back(k);
      p.unitCuts.push_back(u);
    }
    std::reverse(p.cuts.begin(), p.cuts.end());
    std::reverse(p.unitCuts.begin(), p.unitCuts.end());
    return p;
  }
};

std::vector<LinkFigures> linksOf(const cost::Cluster& cluster, const std::vector<std::vector<int>>& groups,
                                 const std::vector<double>& receivedBytes) {
  std::vector<LinkFigures> links;
  for (size_t s = 1; s < groups.size(); ++s) {
    const double t = transferSeconds(cluster, groups[s - 1], groups[s], receivedBytes[s]);
    links.push_back({t, t});
  }
  return links;
}

}  // namespace

int64_t batchOf(const ir::Graph& model) {
  int64_t b = 0;
  for (ir::ValueId v : model.inputs)
    if (!model.value(v).shape.empty()) b = std::max(b, model.value(v).shape[0]);
  return b;
}

StageFigures figuresOf(const plan::Plan& p) {
  StageFigures f;
  for (const plan::Stage& s : p.stages) (s.backward ? f.backwardSeconds : f.forwardSeconds) += s.seconds();
  f.gradientSeconds = p.exposedGradientSeconds;
  for (const plan::PlanDevice& d : p.devices) {
    f.fixedBytes.push_back(d.memoryBytes - d.memory.activations);
    f.activationBytes.push_back(d.memory.activations);
    f.capacityBytes.push_back(d.capacityBytes);
  }
  return f;
}

PipelinePlan planPipeline(const ir::Graph& model, const MicroBatchGraph& atMicroBatches, const cost::Cluster& cluster,
                          const PartitionOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  PipelinePlan out;
  out.requested = options.stages > 0 ? std::to_string(options.stages) : "auto";
  out.batch = batchOf(model);
  ir::Segmentation seg = ir::segmentGraph(model, options.stagePlan.segments);
  out.segmentation = options.stagePlan.segments.mode == ir::SegmentOptions::Mode::None ? "none" : "as --segments";
  out.nodeSegment = seg.nodeSegment;
  out.segmentNames = seg.names;
  const int L = seg.count();
  const std::vector<std::vector<int>> units = groupUnits(cluster);
  const int U = static_cast<int>(units.size());
  if (options.stages == 1 || options.stages < 0)
    throw Error(fmt::format("--pipeline {}: a pipeline has at least 2 stages (off: none)", options.stages));
  if (options.microBatches > 0 && (out.batch <= 0 || out.batch % options.microBatches != 0))
    throw Error(fmt::format("--micro-batches {}: does not divide the batch {} of {}", options.microBatches, out.batch,
                            model.sourceFile));
  const int most = std::min({L, U, options.stages > 0 ? options.stages : options.maxStages});
  if (options.stages > 0 && options.stages > std::min(L, U)) {
    out.why = fmt::format("{} stages asked for, but the model has {} segments and the cluster {} {}", options.stages,
                          L, U, cluster.machines.size() > 1 ? "machines" : "devices");
    return out;
  }
  const std::vector<bool> cuts = validCuts(model, seg.nodeSegment, L);

  Pricer pricer(model, atMicroBatches, cluster, seg.nodeSegment, options, out);
  Search search(model, cluster, units, cuts, pricer, out, L, U);
  search.oneMachine = cluster.machines.size() <= 1;
  search.groupIds.assign(static_cast<size_t>(U + 1) * (U + 1), -1);
  std::vector<double> segFlops(static_cast<size_t>(L), 0), segBytes(static_cast<size_t>(L), 0);
  for (const ir::Node& n : model.nodes) {
    const size_t k = static_cast<size_t>(seg.nodeSegment[static_cast<size_t>(n.id)]);
    segFlops[k] += n.cost.flops;
    segBytes[k] += static_cast<double>(n.cost.bytesRead + n.cost.bytesWritten);
  }
  search.flopsPrefix = search.bytesPrefix = {0};
  for (int k = 0; k < L; ++k) {
    search.flopsPrefix.push_back(search.flopsPrefix.back() + segFlops[static_cast<size_t>(k)]);
    search.bytesPrefix.push_back(search.bytesPrefix.back() + segBytes[static_cast<size_t>(k)]);
  }
  const ir::DType dtype = computeType(model);
  search.capPrefix = search.bwPrefix = {0};
  for (const std::vector<int>& u : units) {
    search.capPrefix.push_back(search.capPrefix.back() + groupFlops(cluster, u, dtype));
    search.bwPrefix.push_back(search.bwPrefix.back() + groupBandwidth(cluster, u));
  }
  // Group ends: every unit, or every `granularity`-th and wherever the device type changes.
  const int granularity = options.unitGranularity > 0 ? options.unitGranularity : std::max(1, U / 16);
  search.unitCut.assign(static_cast<size_t>(U) + 1, false);
  for (int u = 0; u <= U; ++u) {
    const bool typeChange = u > 0 && u < U &&
                            cluster.devices[static_cast<size_t>(units[static_cast<size_t>(u)][0])].type !=
                                cluster.devices[static_cast<size_t>(units[static_cast<size_t>(u - 1)][0])].type;
    search.unitCut[static_cast<size_t>(u)] = u % granularity == 0 || u == U || typeChange;
  }

  struct Found {
    int S = 0, m = 0;
    Partition partition;
    double step = kInf;
    bool fits = false;
  };
  std::vector<Found> found;
  for (int S = options.stages > 0 ? options.stages : 2; S <= most; ++S) {
    std::vector<int> ms;
    if (options.microBatches > 0) {
      ms = {options.microBatches};
    } else {
      for (int want : {2 * S, 4 * S})
        for (int64_t d = want; d <= out.batch; ++d)
          if (out.batch % d == 0) {
            if (std::find(ms.begin(), ms.end(), static_cast<int>(d)) == ms.end()) ms.push_back(static_cast<int>(d));
            break;
          }
      if (ms.empty() && out.batch >= 1) ms = {static_cast<int>(out.batch)};
    }
    for (int m : ms) {
      options.stagePlan.search.throwIfCancelled();
      Partition p = search.best(S, m);
      PipelinePlan::Candidate c{S, m, kInf, false, ""};
      if (p.cuts.empty() || p.bottleneck == kInf) {
        c.note = "no partition fits";
        out.candidates.push_back(c);
        continue;
      }
      std::vector<StageFigures> figures;
      std::vector<std::vector<int>> groups;
      std::vector<double> received;
      for (int s = 0; s < S; ++s) {
        const std::vector<int> ranks = ranksOf(units, p.unitCuts[static_cast<size_t>(s)], p.unitCuts[static_cast<size_t>(s) + 1]);
        const Price& price = search.price(p.cuts[static_cast<size_t>(s)], p.cuts[static_cast<size_t>(s) + 1],
                                          p.unitCuts[static_cast<size_t>(s)], p.unitCuts[static_cast<size_t>(s) + 1], m);
        figures.push_back(price.figures);
        groups.push_back(ranks);
        received.push_back(price.receivedBytes);
      }
      const PipelineCost cost = pipelineCost(figures, linksOf(cluster, groups, received), m);
      c.stepSeconds = cost.stepSeconds;
      c.fits = cost.fits;
      out.candidates.push_back(c);
      found.push_back({S, m, p, cost.stepSeconds, cost.fits});
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.fits != b.fits ? a.fits : a.step < b.step;
  });
  if (found.empty()) {
    out.why = L < 2 ? fmt::format("the model has {} segment: nothing to cut (--segments)", L)
              : U < 2 ? "the cluster has one device: no second group"
                      : "no partition into stages fits the devices' memory";
    out.searchSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return out;
  }

  // The finalists, planned stage by stage as asked.
  std::optional<PipelinePlan> best;
  for (size_t f = 0; f < found.size() && f < static_cast<size_t>(std::max(1, options.finalists)); ++f) {
    const Found& c = found[f];
    // A further finalist only where the search priced it within 10% of the first.
    if (f > 0 && (!c.fits || c.step > found[0].step * 1.1)) break;
    PipelinePlan p;
    p.microBatches = c.m;
    std::vector<StageFigures> figures;
    std::vector<std::vector<int>> groups;
    std::vector<double> received;
    const std::shared_ptr<const ir::Graph> micro = pricer.graphAt(c.m);
    std::map<ir::ValueId, std::vector<int>> sharedBy;  // parameter -> stages reading it
    for (int s = 0; s < c.S; ++s) {
      options.stagePlan.search.throwIfCancelled();
      PipelineStage st;
      st.firstSegment = c.partition.cuts[static_cast<size_t>(s)];
      st.endSegment = c.partition.cuts[static_cast<size_t>(s) + 1];
      st.ranks = ranksOf(units, c.partition.unitCuts[static_cast<size_t>(s)], c.partition.unitCuts[static_cast<size_t>(s) + 1]);
      st.group = describeGroup(cluster, st.ranks);
      auto sg = std::make_shared<StageGraph>(stageGraph(*micro, seg.nodeSegment, st.firstSegment, st.endSegment));
      plan::PlanOptions po = options.stagePlan;
      po.baselines = false;
      po.machineBatchGraph = nullptr;
      st.plan = plan::makePlan(sg->graph, subCluster(cluster, st.ranks), po);
      st.figures = figuresOf(st.plan);
      for (ir::ValueId v : sg->inputsFrom) st.receives.push_back(micro->value(v).name);
      for (ir::ValueId v : sg->outputs) st.sends.push_back(micro->value(v).name);
      st.receivedBytes = sg->receivedBytes();
      st.sentBytes = sg->sentBytes(*micro);
      for (ir::ValueId v : sg->sharedParameters) {
        st.sharedParameters.push_back(micro->value(v).name);
        sharedBy[v].push_back(s);
      }
      figures.push_back(st.figures);
      groups.push_back(st.ranks);
      received.push_back(st.receivedBytes);
      st.graph = std::shared_ptr<const ir::Graph>(sg, &sg->graph);
      p.stages.push_back(std::move(st));
    }
    // A tied parameter's gradient: summed between the stages reading it once a step (sent to the
    // first and back), after their last backward.
    for (const auto& [v, stages] : sharedBy)
      for (size_t i = 1; i < stages.size(); ++i) {
        const double bytes = static_cast<double>(micro->value(v).bytes());
        const double t = 2 * transferSeconds(cluster, groups[static_cast<size_t>(stages[0])],
                                             groups[static_cast<size_t>(stages[i])], bytes);
        figures[static_cast<size_t>(stages[0])].gradientSeconds += t;
        figures[static_cast<size_t>(stages[i])].gradientSeconds += t;
      }
    p.links = linksOf(cluster, groups, received);
    p.cost = pipelineCost(figures, p.links, c.m);
    for (size_t s = 0; s < p.stages.size(); ++s) p.stages[s].figures = figures[s];
    if (!best || (p.cost.fits && !best->cost.fits) ||
        (p.cost.fits == best->cost.fits && p.cost.stepSeconds < best->cost.stepSeconds))
      best = std::move(p);
  }
  out.microBatches = best->microBatches;
  out.stages = std::move(best->stages);
  out.links = std::move(best->links);
  out.cost = best->cost;
  out.searchSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

}  // namespace hap::pipeline
