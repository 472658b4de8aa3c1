#include "engine/balance/share_lp.h"

#include <coin/ClpSimplex.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/CoinPackedVector.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "engine/ir/summary.h"
#include "engine/synth/memory.h"

namespace hap::balance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The LP in row form, built term by term.
struct Lp {
  std::vector<double> objective, colLower, colUpper, rowLower, rowUpper;
  CoinPackedMatrix rows{false, 0, 0};
  double constant = 0;  // objective terms that no variable carries
  int column(double cost, double lower, double upper) {
    objective.push_back(cost);
    colLower.push_back(lower);
    colUpper.push_back(upper);
    return static_cast<int>(objective.size()) - 1;
  }
  void row(const std::vector<std::pair<int, double>>& terms, double lower, double upper) {
    CoinPackedVector v;
    for (auto [c, a] : terms)
      if (a != 0) v.insert(c, a);
    if (rows.getNumCols() < static_cast<int>(objective.size()))
      rows.setDimensions(rows.getNumRows(), static_cast<int>(objective.size()));
    rows.appendRow(v);
    rowLower.push_back(lower);
    rowUpper.push_back(upper);
  }
};

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

ShareLpResult optimiseShares(const synth::CostTable& table, const synth::Program& program,
                             const synth::CostOptions& options) {
  const cost::Cluster& cluster = table.cluster();
  const size_t types = cluster.types.size();
  std::vector<int> typeCount(types, 0);
  for (int j = 0; j < cluster.size(); ++j) ++typeCount[static_cast<size_t>(cluster.devices[static_cast<size_t>(j)].type)];

  Lp lp;
  // Columns: a share per device type present, the largest share.
  std::vector<int> share(types, -1);
  for (size_t ty = 0; ty < types; ++ty)
    if (typeCount[ty] > 0) share[ty] = lp.column(0, 0, 1);
  const int largest = lp.column(0, 0, 1);
  {
    std::vector<std::pair<int, double>> sum;
    for (size_t ty = 0; ty < types; ++ty)
      if (share[ty] >= 0) sum.emplace_back(share[ty], typeCount[ty]);
    lp.row(sum, 1, 1);  // Σ_j share_j = 1
  }
  for (size_t ty = 0; ty < types; ++ty)
    if (share[ty] >= 0) lp.row({{largest, 1}, {share[ty], -1}}, 0, kInf);  // largest >= share

  double perLargest = 0;
  for (const synth::Step& s : program.steps) {
    if (s.kind == synth::Step::Kind::Convert) {
      const cost::GatherLinear l = table.conversionLinear(s.value, s.conversion);
      lp.constant += l.constant;
      perLargest += l.perLargestShare;
      continue;
    }
    const cost::GatherLinear sfb = table.sfbLinear(s.node, s.variant);
    lp.constant += sfb.constant;
    perLargest += sfb.perLargestShare;
    // t >= piece(share_type) for every type and piece; a node whose pieces do not depend on the
    // share is a constant (its largest piece).
    std::vector<std::pair<int, std::vector<synth::Affine>>> pieces;
    bool variable = false;
    double fixed = 0;
    for (size_t ty = 0; ty < types; ++ty) {
      if (share[ty] < 0) continue;
      std::vector<synth::Affine> p = table.nodePieces(s.node, s.variant, static_cast<int>(ty));
      for (const synth::Affine& a : p) {
        variable = variable || a.perShare != 0;
        fixed = std::max(fixed, a.constant);
      }
      pieces.emplace_back(share[ty], std::move(p));
    }
    if (!variable) {
      lp.constant += fixed;
      continue;
    }
    const int t = lp.column(1, 0, kInf);
    for (const auto& [col, ps] : pieces)
      for (const synth::Affine& a : ps) lp.row({{t, 1}, {col, -a.perShare}}, a.constant, kInf);
  }
  lp.objective[static_cast<size_t>(largest)] = perLargest;

  // Memory: constant + perShare * share <= capacity, per type.
  const synth::Affine memory = synth::memoryBytes(table, program, options);
  for (size_t ty = 0; ty < types; ++ty)
    if (share[ty] >= 0) lp.row({{share[ty], memory.perShare}}, -kInf, cluster.types[ty].memoryBytes - memory.constant);

  ClpSimplex model;
  model.setLogLevel(0);
  lp.rows.setDimensions(static_cast<int>(lp.rowLower.size()), static_cast<int>(lp.objective.size()));
  model.loadProblem(lp.rows, lp.colLower.data(), lp.colUpper.data(), lp.objective.data(), lp.rowLower.data(),
                    lp.rowUpper.data());
  const auto start = std::chrono::steady_clock::now();
  model.dual();
  ShareLpResult result;
  result.solveSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.rows = model.numberRows();
  result.columns = model.numberColumns();
  const int status = model.status();
  if (status == 1) throw InfeasibleError(explainInfeasible(table, program, options, typeCount));
  if (status != 0)
    throw Error(fmt::format("the LP over sharding ratios did not solve (CLP status {}, {} rows, {} columns); "
                            "this is a bug: please report it with the model and cluster",
                            status, result.rows, result.columns));
  const double* x = model.primalColumnSolution();
  result.seconds = model.objectiveValue() + lp.constant;
  // Normalise away the solver's tolerance so the shares sum to 1 exactly enough for rounding.
  double sum = 0;
  for (int j = 0; j < cluster.size(); ++j) {
    const int ty = cluster.devices[static_cast<size_t>(j)].type;
    result.shares.push_back(std::max(0.0, x[share[static_cast<size_t>(ty)]]));
    sum += result.shares.back();
  }
  for (double& s : result.shares) s /= sum;
  return result;
}

}  // namespace hap::balance
