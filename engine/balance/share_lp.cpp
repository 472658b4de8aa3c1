#include "engine/balance/share_lp.h"

#include <coin/ClpSimplex.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include "engine/balance/gradient_overlap_rows.h"
#include "engine/balance/linear_rows.h"
#include "engine/cost/profile.h"
#include "engine/ir/summary.h"
#include "engine/synth/memory.h"
#include "engine/synth/stages.h"

namespace hap::balance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();


std::string explainInfeasible(const synth::CostTable& table, const synth::Program& program,
                              const synth::CostOptions& options, const std::vector<int>& typeCount) {
  const cost::Cluster& c = table.cluster();
  const ir::Graph& g = table.theory().graph();
  const std::vector<synth::MemoryTerm> terms = synth::memoryTerms(table, program, options);
  const synth::Affine total = synth::total(terms);
  // The largest share each type can take, and whether even a zero share overflows.
  std::string why;
  double reachable = 0;
  int worst = -1;
  for (size_t ty = 0; ty < typeCount.size(); ++ty) {
    if (typeCount[ty] == 0) continue;
    const double capacity = c.types[ty].memoryBytes;
    if (total.constant > capacity) {
      worst = static_cast<int>(ty);
      why = fmt::format("{} needs {} for its replicated tensors alone, more than its {}", c.types[ty].name,
                        ir::formatBytes(total.constant), ir::formatBytes(capacity));
      break;
    }
    const double most = total.perShare > 0 ? std::min(1.0, (capacity - total.constant) / total.perShare) : 1.0;
    reachable += typeCount[ty] * most;
    if (worst < 0 || c.types[ty].memoryBytes < c.types[static_cast<size_t>(worst)].memoryBytes) worst = static_cast<int>(ty);
  }
  if (why.empty())
    why = fmt::format("the devices can hold only {:.1f}% of the sharded tensors ({} in all) beside the "
                      "replicated ones ({} on every device)",
                      100 * reachable, ir::formatBytes(total.perShare), ir::formatBytes(total.constant));
  // The largest tensors on a device of the tightest type, at an even share.
  const double share = 1.0 / c.size();
  std::vector<std::pair<double, ir::ValueId>> sizes;
  for (const synth::MemoryTerm& t : terms) sizes.emplace_back(t.bytes.at(share), t.value);
  std::stable_sort(sizes.begin(), sizes.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::string largest;
  for (size_t i = 0; i < std::min<size_t>(5, sizes.size()); ++i)
    largest += fmt::format("{}{} ({})", i ? ", " : "", g.value(sizes[i].second).name, ir::formatBytes(sizes[i].first));
  return fmt::format("no sharding ratios fit this program in memory: {}. Largest tensors on a {} device at an "
                     "even share: {}. Use more or larger devices, a smaller batch, or a program that shards "
                     "parameters (without --pin, or with parameter sharding allowed)",
                     why, worst >= 0 ? c.types[static_cast<size_t>(worst)].name : "device", largest);
}

}  // namespace

std::string solverFailure(std::string_view what, std::string_view status, const cost::Cluster& cluster) {
  const std::string origin = cluster.source.empty() ? fmt::format("cluster '{}'", cluster.name) : cluster.source;
  std::string measured;
  if (cluster.measured)
    measured = fmt::format(" and its calibration profile '{}' (hap runs, hap calibrate)", cluster.profile);
  return fmt::format("{} did not solve ({}): the solver could not handle the range of the numbers the cluster "
                     "and the model give it. Check the extreme values of {}{}: {}. Values far from real "
                     "hardware (docs/cost-model.md, \"Ranges\") or an unusually large model drive it out of its "
                     "numeric range",
                     what, status, origin, measured, cost::extremeValues(cluster));
}

ShareLpResult optimiseShares(const synth::CostTable& table, const synth::Program& program,
                             const synth::CostOptions& options) {
  const cost::Cluster& cluster = table.cluster();
  const synth::Theory& theory = table.theory();
  const ir::Graph& g = theory.graph();
  const size_t types = cluster.types.size();
  const int segments = theory.segmentCount();
  std::vector<int> typeCount(types, 0);
  for (int j = 0; j < cluster.size(); ++j) ++typeCount[static_cast<size_t>(cluster.devices[static_cast<size_t>(j)].type)];

  LinearRows lp;
  // Columns: a share per segment and device type present; the largest share per segment.
  std::vector<std::vector<int>> share(static_cast<size_t>(segments), std::vector<int>(types, -1));
  std::vector<int> largest(static_cast<size_t>(segments));
  for (int s = 0; s < segments; ++s) {
    std::vector<std::pair<int, double>> sum;
    for (size_t ty = 0; ty < types; ++ty)
      if (typeCount[ty] > 0) {
        share[static_cast<size_t>(s)][ty] = lp.column(0, 0, 1);
        sum.emplace_back(share[static_cast<size_t>(s)][ty], typeCount[ty]);
      }
    lp.row(sum, 1, 1);  // Σ_j share_j = 1
    largest[static_cast<size_t>(s)] = lp.column(0, 0, 1);
    for (auto [col, count] : sum) lp.row({{largest[static_cast<size_t>(s)], 1}, {col, -1}}, 0, kInf);
  }
  auto shareOf = [&](int segment, size_t ty) { return share[static_cast<size_t>(segment)][ty]; };

  // Communication: constants, and terms in the largest share of the value's (node's) segment.
  std::vector<double> perLargest(static_cast<size_t>(segments), 0.0);
  std::map<std::pair<int, int>, double> reshardCoefficient;  // (from, to) segments -> s per displacement
  const cost::Link a2a = cost::collectiveLink(cluster, cost::Collective::AllToAll);
  for (const synth::Step& st : program.steps) {
    if (st.kind == synth::Step::Kind::Convert) {
      const cost::GatherLinear l = table.conversionLinear(st.value, st.conversion);
      lp.constant += l.constant;
      perLargest[static_cast<size_t>(theory.valueSegment(st.value))] += l.perLargestShare;
      continue;
    }
    const cost::GatherLinear sfb = table.sfbLinear(st.node, st.variant);
    lp.constant += sfb.constant;
    if (table.theory().variants(st.node)[static_cast<size_t>(st.variant)].syncBytes > 0) {
      const synth::NodeCommunication sync = table.nodeCommunication(st.node, st.variant);  // share-independent
      lp.constant += sync.forward + sync.backward;
    }
    perLargest[static_cast<size_t>(theory.nodeSegment(st.node))] += sfb.perLargestShare;
    if (table.isReshard(st.node, st.variant) && cluster.size() > 1) {
      const ir::Node& n = g.node(st.node);
      const ir::ValueId in = n.tensorInputs()[0], out = n.outputs[0];
      const double passes = theory.requiresGrad(out) ? 2 : 1;
      reshardCoefficient[{theory.valueSegment(in), theory.valueSegment(out)}] +=
          passes * 2 * static_cast<double>(g.value(in).bytes()) / a2a.bandwidth;
    }
  }
  for (int s = 0; s < segments; ++s) lp.objective[static_cast<size_t>(largest[static_cast<size_t>(s)])] = perLargest[static_cast<size_t>(s)];
  // A reshard moves at most 2·bytes·max_j |ΔP_j| (cost::reshardSeconds); ΔP is linear along a run
  // of devices of one type, so its extremes lie where the type changes.
  for (const auto& [pair, coefficient] : reshardCoefficient) {
    const int d = lp.column(coefficient, 0, kInf);
    std::vector<double> before(types, 0.0);  // devices of each type before j
    for (int j = 1; j < cluster.size(); ++j) {
      ++before[static_cast<size_t>(cluster.devices[static_cast<size_t>(j - 1)].type)];
      if (cluster.devices[static_cast<size_t>(j)].type == cluster.devices[static_cast<size_t>(j - 1)].type) continue;
      std::vector<std::pair<int, double>> up{{d, 1}}, down{{d, 1}};
      for (size_t ty = 0; ty < types; ++ty) {
        if (before[ty] == 0) continue;
        up.emplace_back(shareOf(pair.second, ty), -before[ty]), up.emplace_back(shareOf(pair.first, ty), before[ty]);
        down.emplace_back(shareOf(pair.second, ty), before[ty]), down.emplace_back(shareOf(pair.first, ty), -before[ty]);
      }
      lp.row(up, 0, kInf);
      lp.row(down, 0, kInf);
    }
  }

  // Computation, per stage of the exact stage model: c_k >= Σ_{nodes in k} time on type ty, for
  // every type. A node's time is the largest of its pieces; one piece that dominates the others
  // on [0, 1] is used directly, otherwise an auxiliary t >= every piece stands for it.
  const synth::StageModel stages = synth::stageModel(table, program);
  // The gradient buckets' exposed time (gradient_overlap_rows.h): each stage's communication
  // (gathers and scatters in the largest share, the rest at the current shares) and computation,
  // and each bucket's computation up to its ready step, per type.
  std::vector<StageTime> stageTimes;
  std::vector<ReadyPoint> readyPoints;
  std::multimap<int, size_t> readyAt;  // ready step -> bucket
  for (size_t k = 0; k < stages.buckets.size(); ++k) readyAt.emplace(stages.buckets[k].readyStep, k);
  for (const synth::StageCost& stage : stages.stages) {
    const synth::Pass pass = stage.backward ? synth::Pass::Backward : synth::Pass::Forward;
    StageTime& time = stageTimes.emplace_back();
    std::vector<std::vector<std::pair<int, double>>> terms(types);
    std::vector<double> fixed(types, 0.0);
    bool variable = false;
    for (int i : stage.steps) {
      const synth::Step& st = program.steps[static_cast<size_t>(i)];
      if (st.kind == synth::Step::Kind::Convert) {
        const cost::GatherLinear l = table.conversionLinear(st.value, st.conversion, pass);
        time.communication.constant += l.constant;
        if (l.perLargestShare != 0)
          time.communication.terms.emplace_back(largest[static_cast<size_t>(theory.valueSegment(st.value))], l.perLargestShare);
      } else {
        const synth::NodeCommunication comm = table.nodeCommunication(st.node, st.variant);
        time.communication.constant += pass == synth::Pass::Backward ? comm.backward : comm.forward;
        const int segment = theory.nodeSegment(st.node);
        for (size_t ty = 0; ty < types; ++ty) {
          if (typeCount[ty] == 0) continue;
          const std::vector<synth::Affine> pieces = table.nodePieces(st.node, st.variant, static_cast<int>(ty), pass);
          const synth::Affine* top = nullptr;
          for (const synth::Affine& a : pieces) {
            const bool dominates = std::all_of(pieces.begin(), pieces.end(), [&](const synth::Affine& b) {
              return a.at(0) >= b.at(0) && a.at(1) >= b.at(1);
            });
            if (dominates) top = &a;
          }
          if (top) {
            fixed[ty] += top->constant;
            if (top->perShare != 0) terms[ty].emplace_back(shareOf(segment, ty), top->perShare), variable = true;
            continue;
          }
          const int t = lp.column(0, 0, kInf);
          for (const synth::Affine& a : pieces) lp.row({{t, 1}, {shareOf(segment, ty), -a.perShare}}, a.constant, kInf);
          terms[ty].emplace_back(t, 1);
          variable = true;
        }
      }
      const auto [from, to] = readyAt.equal_range(i);
      for (auto it = from; it != to; ++it)
        for (size_t ty = 0; ty < types; ++ty)
          if (typeCount[ty] > 0) readyPoints.push_back({it->second, {terms[ty], fixed[ty]}});
    }
    if (!variable) {
      lp.constant += *std::max_element(fixed.begin(), fixed.end());
      time.computation.constant = *std::max_element(fixed.begin(), fixed.end());
      continue;
    }
    const int c = lp.column(1, 0, kInf);
    time.computation.terms.emplace_back(c, 1);
    for (size_t ty = 0; ty < types; ++ty) {
      if (typeCount[ty] == 0) continue;
      std::vector<std::pair<int, double>> row{{c, 1}};
      for (auto [col, a] : terms[ty]) row.emplace_back(col, -a);
      lp.row(row, fixed[ty], kInf);
    }
  }
  addExposedGradientRows(lp, stages, stageTimes, readyPoints, 1, kInf);

  // Memory: Σ over the program's tensors of constant + perShare * share in its segment, per type.
  std::vector<double> memoryPerShare(static_cast<size_t>(segments), 0.0);
  double memoryConstant = 0;
  for (const synth::MemoryTerm& t : synth::memoryTerms(table, program, options)) {
    memoryConstant += t.bytes.constant;
    memoryPerShare[static_cast<size_t>(t.segment)] += t.bytes.perShare;
  }
  for (size_t ty = 0; ty < types; ++ty) {
    if (typeCount[ty] == 0) continue;
    // base + scale · (constant + Σ perShare · share) ≤ capacity (a calibrated type's terms).
    const cost::MemoryCalibration m = cost::memoryCalibration(cluster, static_cast<int>(ty));
    std::vector<std::pair<int, double>> row;
    for (int s = 0; s < segments; ++s) row.emplace_back(shareOf(s, ty), m.scale * memoryPerShare[static_cast<size_t>(s)]);
    lp.row(row, -kInf, cluster.types[ty].memoryBytes - m.baseBytes - m.scale * memoryConstant);
  }

  ClpSimplex model;
  model.setLogLevel(0);
  lp.finish();
  model.loadProblem(lp.rows, lp.colLower.data(), lp.colUpper.data(), lp.objective.data(), lp.rowLower.data(),
                    lp.rowUpper.data());
  const auto start = std::chrono::steady_clock::now();
  model.dual();
  ShareLpResult result;
  result.solveSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.rows = model.numberRows();
  result.columns = model.numberColumns();
  result.segments = segments;
  const int status = model.status();
  if (status == 1) throw InfeasibleError(explainInfeasible(table, program, options, typeCount));
  if (status != 0)
    throw Error(solverFailure("the LP over sharding ratios",
                              fmt::format("CLP status {}, {} rows, {} columns", status, result.rows, result.columns),
                              cluster));
  const double* x = model.primalColumnSolution();
  result.seconds = model.objectiveValue() + lp.constant;
  // Normalise away the solver's tolerance so the shares sum to 1 exactly enough for rounding.
  for (int s = 0; s < segments; ++s) {
    std::vector<double> row;
    double sum = 0;
    for (int j = 0; j < cluster.size(); ++j) {
      const size_t ty = static_cast<size_t>(cluster.devices[static_cast<size_t>(j)].type);
      row.push_back(std::max(0.0, x[shareOf(s, ty)]));
      sum += row.back();
    }
    for (double& v : row) v /= sum;
    result.shares.push_back(std::move(row));
  }
  return result;
}

}  // namespace hap::balance
