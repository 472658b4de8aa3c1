#include "engine/balance/share_milp.h"

#include <coin/Cbc_C_Interface.h>
#include <coin/ClpSimplex.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "engine/balance/gradient_overlap_rows.h"
#include "engine/balance/linear_rows.h"
#include "engine/cost/profile.h"
#include "engine/ir/summary.h"
#include "engine/synth/dim_classes.h"
#include "engine/synth/memory.h"
#include "engine/synth/stages.h"

namespace hap::balance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Rows and the objective count microseconds and memory rows GiB: CBC's and CLP's absolute
// tolerances (1e-7) would otherwise swallow whole microseconds and bytes.
constexpr double kMicro = 1e6;
constexpr double kGiB = 1024.0 * 1024 * 1024;


// The MILP of share_milp.h for one program, and its memory rows kept apart for pricing.
class Model {
 public:
  struct Key {
    int segment, cls;
    int64_t units;            // 0: fractional
    std::vector<int> column;  // per device
    int largest = -1;         // the largest share's column, when a term needs it
  };
  struct MemoryRow {
    int type;
    std::vector<std::pair<int, double>> terms;  // (key, bytes per unit share)
    double room;                                // capacity − base − scale·constant
  };

  // keysOnly: the keys alone (which (segment, class) pairs the program cuts), no rows.
  Model(const synth::CostTable& table, const synth::Program& program, const synth::CostOptions& options,
        bool keysOnly = false)
      : table_(table), theory_(table.theory()), g_(theory_.graph()), n_(table.cluster().size()) {
    lp.recordRows = !keysOnly;
    build(program, options);
  }

  LinearRows lp;
  std::vector<Key> keys;
  std::vector<MemoryRow> memory;  // per device
  bool movingReshard = false;

  int findKey(int segment, int cls) const {
    auto it = index_.find({segment, cls});
    return it == index_.end() ? -1 : it->second;
  }
  // Device j's share of key k as a term.
  std::pair<int, double> share(int k, int j, double coefficient) const {
    const Key& key = keys[static_cast<size_t>(k)];
    return {key.column[static_cast<size_t>(j)], key.units ? coefficient / static_cast<double>(key.units) : coefficient};
  }
  double room(int j) const { return memory[static_cast<size_t>(j)].room; }

 private:
  int keyOf(int segment, int cls) {
    if (int k = findKey(segment, cls); k >= 0) return k;
    Key key{segment, cls, cls >= 0 ? theory_.classes().units(cls) : 0, {}, -1};
    if (cls >= 0 && key.units == 0) cls = -1, key.cls = -1;  // an empty dimension: nothing to cut
    if (int k = findKey(segment, cls); k >= 0) return k;
    std::vector<std::pair<int, double>> sum;
    for (int j = 0; j < n_; ++j) {
      key.column.push_back(key.units ? lp.column(0, 0, static_cast<double>(key.units), true) : lp.column(0, 0, 1));
      sum.emplace_back(key.column.back(), 1);
    }
    lp.row(sum, key.units ? static_cast<double>(key.units) : 1, key.units ? static_cast<double>(key.units) : 1);
    keys.push_back(std::move(key));
    index_[{segment, cls}] = static_cast<int>(keys.size()) - 1;
    return static_cast<int>(keys.size()) - 1;
  }
  int formKey(int segment, ir::ValueId x, rules::Rel r) {
    if (!rules::isGather(r)) return -1;
    return keyOf(segment, theory_.classes().classOf({x, r}));
  }
  // The key of node n's work under variant v (Theory::cutClass, as the cost table prices it).
  int nodeKey(ir::NodeId n, int v) {
    const int cls = theory_.cutClass(n, v);
    return cls < 0 ? -1 : keyOf(theory_.nodeSegment(n), cls);
  }
  int orFallback(int key, int segment) { return key >= 0 ? key : keyOf(segment, -1); }
  int largestOf(int k) {
    if (keys[static_cast<size_t>(k)].largest < 0) {
      const int m = lp.column(0, 0, 1);
      keys[static_cast<size_t>(k)].largest = m;
      for (int j = 0; j < n_; ++j) lp.row({{m, 1}, share(k, j, -1)}, 0, kInf);
    }
    return keys[static_cast<size_t>(k)].largest;
  }

  void build(const synth::Program& program, const synth::CostOptions& options) {
    const cost::Cluster& cluster = table_.cluster();
    // The G form each value is held in first (for its memory term).
    std::map<ir::ValueId, rules::Rel> form;
    for (const synth::Step& st : program.steps) {
      if (st.kind == synth::Step::Kind::Convert) {
        if (rules::isGather(st.conversion.from)) form.emplace(st.value, st.conversion.from);
        if (rules::isGather(st.conversion.to)) form.emplace(st.value, st.conversion.to);
        continue;
      }
      const rules::Variant& var = theory_.variants(st.node)[static_cast<size_t>(st.variant)];
      const ir::Node& node = g_.node(st.node);
      for (size_t i = 0; i < var.outputs.size(); ++i)
        if (rules::isGather(var.outputs[i])) form.emplace(node.outputs[i], var.outputs[i]);
      const std::vector<ir::ValueId> in = node.tensorInputs();
      for (size_t i = 0; i < var.inputs.size() && i < in.size(); ++i)
        if (rules::isGather(var.inputs[i])) form.emplace(in[i], var.inputs[i]);
    }
    // Every cut the program makes has its key, so that the cuts list is complete.
    for (const auto& [x, r] : form) formKey(theory_.valueSegment(x), x, r);

    // Communication.
    std::map<std::pair<int, int>, double> reshard;  // (from key, to key) -> seconds per displacement
    const cost::Link a2a = cost::collectiveLink(cluster, cost::Collective::AllToAll);
    for (const synth::Step& st : program.steps) {
      if (st.kind == synth::Step::Kind::Convert) {
        const cost::GatherLinear l = table_.conversionLinear(st.value, st.conversion);
        lp.constant += l.constant;
        if (l.perLargestShare != 0) {
          const rules::Rel r = rules::isGather(st.conversion.from) ? st.conversion.from : st.conversion.to;
          const int segment = theory_.valueSegment(st.value);
          lp.objective[static_cast<size_t>(largestOf(orFallback(formKey(segment, st.value, r), segment)))] += kMicro * l.perLargestShare;
        }
        continue;
      }
      const cost::GatherLinear sfb = table_.sfbLinear(st.node, st.variant);
      lp.constant += sfb.constant;
      if (theory_.variants(st.node)[static_cast<size_t>(st.variant)].syncBytes > 0) {
        const synth::NodeCommunication sync = table_.nodeCommunication(st.node, st.variant);
        lp.constant += sync.forward + sync.backward;
      }
      if (sfb.perLargestShare != 0)
        lp.objective[static_cast<size_t>(largestOf(orFallback(nodeKey(st.node, st.variant), theory_.nodeSegment(st.node))))] +=
            kMicro * sfb.perLargestShare;
      if (table_.isReshard(st.node, st.variant) && n_ > 1) {
        const ir::Node& node = g_.node(st.node);
        const rules::Variant& var = theory_.variants(st.node)[static_cast<size_t>(st.variant)];
        const ir::ValueId in = node.tensorInputs()[0], out = node.outputs[0];
        const int from = orFallback(formKey(theory_.valueSegment(in), in, var.inputs[0]), theory_.valueSegment(in));
        const int to = orFallback(formKey(theory_.valueSegment(out), out, var.outputs[0]), theory_.valueSegment(out));
        const double passes = theory_.requiresGrad(out) ? 2 : 1;
        reshard[{from, to}] += passes * 2 * static_cast<double>(g_.value(in).bytes()) / a2a.bandwidth;
        movingReshard = true;
      }
    }
    // Reshards: D ≥ ±P_j at every rank boundary, P_j the prefix of the new shares minus the
    // old, carried from boundary to boundary (rows of four terms: linear in the devices).
    for (const auto& [pair, coefficient] : reshard) {
      const int d = lp.column(kMicro * coefficient, 0, kInf);
      int previous = -1;
      for (int j = 0; j + 1 < n_; ++j) {
        const int prefix = lp.column(0, -kInf, kInf);
        std::vector<std::pair<int, double>> step{{prefix, 1}, share(pair.second, j, -1), share(pair.first, j, 1)};
        if (previous >= 0) step.emplace_back(previous, -1);
        lp.row(step, 0, 0);
        lp.row({{d, 1}, {prefix, -1}}, 0, kInf);
        lp.row({{d, 1}, {prefix, 1}}, 0, kInf);
        previous = prefix;
      }
    }

    // Computation per stage: c_k ≥ Σ of the stage's node times on device j, for every device.
    const synth::StageModel stages = synth::stageModel(table_, program);
    const size_t types = cluster.types.size();
    // The gradient buckets' exposed time (gradient_overlap_rows.h), in microseconds: each stage's
    // communication (gathers and scatters in their largest share, the rest at the table's
    // shares) and computation, and each bucket's computation up to its ready step, per device.
    std::vector<StageTime> stageTimes;
    std::vector<ReadyPoint> readyPoints;
    std::multimap<int, size_t> readyAt;  // ready step -> bucket
    for (size_t k = 0; k < stages.buckets.size(); ++k) readyAt.emplace(stages.buckets[k].readyStep, k);
    for (const synth::StageCost& stage : stages.stages) {
      StageTime& time = stageTimes.emplace_back();
      const synth::Pass pass = stage.backward ? synth::Pass::Backward : synth::Pass::Forward;
      std::vector<std::vector<std::pair<int, double>>> terms(static_cast<size_t>(n_));
      std::vector<double> fixed(static_cast<size_t>(n_), 0.0);
      bool variable = false;
      auto snapshot = [&](int i) {
        const auto [from, to] = readyAt.equal_range(i);
        for (auto it = from; it != to; ++it)
          for (int j = 0; j < n_; ++j)
            readyPoints.push_back({it->second, {terms[static_cast<size_t>(j)], kMicro * fixed[static_cast<size_t>(j)]}});
      };
      for (int i : stage.steps) {
        const synth::Step& st = program.steps[static_cast<size_t>(i)];
        if (st.kind != synth::Step::Kind::Compute) {
          const cost::GatherLinear l = table_.conversionLinear(st.value, st.conversion, pass);
          time.communication.constant += kMicro * l.constant;
          if (l.perLargestShare != 0) {
            const rules::Rel r = rules::isGather(st.conversion.from) ? st.conversion.from : st.conversion.to;
            const int segment = theory_.valueSegment(st.value);
            time.communication.terms.emplace_back(largestOf(orFallback(formKey(segment, st.value, r), segment)),
                                                  kMicro * l.perLargestShare);
          }
          snapshot(i);
          continue;
        }
        const synth::NodeCommunication comm = table_.nodeCommunication(st.node, st.variant);
        time.communication.constant += kMicro * (pass == synth::Pass::Backward ? comm.backward : comm.forward);
        const int segment = theory_.nodeSegment(st.node);
        const int key = nodeKey(st.node, st.variant);
        std::vector<std::vector<synth::Affine>> pieces(types);
        for (int j = 0; j < n_; ++j) {
          const int ty = cluster.devices[static_cast<size_t>(j)].type;
          if (pieces[static_cast<size_t>(ty)].empty())
            pieces[static_cast<size_t>(ty)] = table_.nodePieces(st.node, st.variant, ty, pass);
          const std::vector<synth::Affine>& p = pieces[static_cast<size_t>(ty)];
          if (p.empty()) continue;
          const synth::Affine* top = nullptr;
          for (const synth::Affine& a : p)
            if (std::all_of(p.begin(), p.end(), [&](const synth::Affine& b) { return a.at(0) >= b.at(0) && a.at(1) >= b.at(1); }))
              top = &a;
          if (top) {
            fixed[static_cast<size_t>(j)] += top->constant;
            if (top->perShare != 0) terms[static_cast<size_t>(j)].push_back(share(orFallback(key, segment), j, kMicro * top->perShare)), variable = true;
            continue;
          }
          const int k = orFallback(key, segment);
          const int t = lp.column(0, 0, kInf);
          for (const synth::Affine& a : p) lp.row({{t, 1}, share(k, j, -kMicro * a.perShare)}, kMicro * a.constant, kInf);
          terms[static_cast<size_t>(j)].emplace_back(t, 1);
          variable = true;
        }
        snapshot(i);
      }
      if (!variable) {
        lp.constant += *std::max_element(fixed.begin(), fixed.end());
        time.computation.constant = kMicro * *std::max_element(fixed.begin(), fixed.end());
        continue;
      }
      const int c = lp.column(1, 0, kInf);
      time.computation.terms.emplace_back(c, 1);
      for (int j = 0; j < n_; ++j) {
        std::vector<std::pair<int, double>> row{{c, 1}};
        for (auto [col, a] : terms[static_cast<size_t>(j)]) row.emplace_back(col, -a);
        lp.row(row, kMicro * fixed[static_cast<size_t>(j)], kInf);
      }
    }
    addExposedGradientRows(lp, stages, stageTimes, readyPoints, kMicro, kInf);

    // Memory per device: base + scale·(constant + Σ perShare · share of the term's class) ≤ capacity.
    std::map<int, double> perShare;  // key -> bytes at share 1
    double constant = 0;
    for (const synth::MemoryTerm& t : synth::memoryTerms(table_, program, options)) {
      constant += t.bytes.constant;
      if (t.bytes.perShare == 0) continue;
      const int key = orFallback(formKey(t.segment, t.value, t.cut), t.segment);
      perShare[key] += t.bytes.perShare;
    }
    for (int j = 0; j < n_; ++j) {
      const int ty = cluster.devices[static_cast<size_t>(j)].type;
      const cost::MemoryCalibration m = cost::memoryCalibration(cluster, ty);
      MemoryRow row{ty, {}, cluster.types[static_cast<size_t>(ty)].memoryBytes - m.baseBytes - m.scale * constant};
      for (auto [k, bytes] : perShare) row.terms.emplace_back(k, m.scale * bytes);
      memory.push_back(std::move(row));
    }
  }

  const synth::CostTable& table_;
  const synth::Theory& theory_;
  const ir::Graph& g_;
  const int n_;
  std::map<std::pair<int, int>, int> index_;
};

std::vector<DimCut> cutsOf(const Model& model, const synth::Shares& shares) {
  std::vector<DimCut> cuts;
  for (const Model::Key& k : model.keys) {
    DimCut c{k.segment, k.cls, k.units, {}, {}};
    const std::vector<double>& s = shares[static_cast<size_t>(k.segment)];
    if (k.units) {
      c.lengths = synth::DimClasses::roundUnits(k.units, s);
      for (int64_t l : c.lengths) c.shares.push_back(static_cast<double>(l) / static_cast<double>(k.units));
    } else {
      c.shares = s;
    }
    cuts.push_back(std::move(c));
  }
  return cuts;
}

// Column values that set every key to its cut.
std::vector<std::pair<int, double>> fixedColumns(const Model& model, const std::vector<DimCut>& cuts) {
  std::vector<std::pair<int, double>> out;
  for (const Model::Key& k : model.keys) {
    auto it = std::find_if(cuts.begin(), cuts.end(), [&](const DimCut& c) { return c.segment == k.segment && c.dimClass == k.cls; });
    if (it == cuts.end())
      throw Error(fmt::format("no cut given for dimension class {} of segment {}", k.cls, k.segment));
    for (size_t j = 0; j < k.column.size(); ++j)
      out.emplace_back(k.column[j], k.units ? static_cast<double>(it->lengths.at(j)) : it->shares.at(j));
  }
  return out;
}

double memoryUse(const Model& model, int j, const std::vector<double>& value) {
  double used = 0;
  for (auto [k, bytes] : model.memory[static_cast<size_t>(j)].terms) {
    auto [col, a] = model.share(k, j, bytes);
    used += a * value[static_cast<size_t>(col)];
  }
  return used;
}

}  // namespace

std::vector<DimCut> roundedCuts(const synth::CostTable& table, const synth::Program& program, const synth::Shares& shares) {
  const Model model(table, program, {}, /*keysOnly=*/true);
  return cutsOf(model, shares);
}

CutPrice priceCuts(const synth::CostTable& table, const synth::Program& program, const std::vector<DimCut>& cuts,
                   const synth::CostOptions& options) {
  Model model(table, program, options);
  model.lp.finish();
  std::vector<double> lower = model.lp.colLower, upper = model.lp.colUpper;
  std::vector<double> value(lower.size(), 0.0);
  for (auto [col, v] : fixedColumns(model, cuts)) lower[static_cast<size_t>(col)] = upper[static_cast<size_t>(col)] = value[static_cast<size_t>(col)] = v;
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.loadProblem(model.lp.rows, lower.data(), upper.data(), model.lp.objective.data(), model.lp.rowLower.data(),
                 model.lp.rowUpper.data());
  lp.setPrimalTolerance(1e-9);
  lp.setDualTolerance(1e-9);
  lp.dual();
  if (lp.status() != 0)
    throw Error(solverFailure("the LP pricing whole shard lengths", fmt::format("CLP status {}", lp.status()),
                              table.cluster()));
  CutPrice price;
  price.seconds = lp.objectiveValue() / kMicro + model.lp.constant;
  for (int j = 0; j < table.cluster().size(); ++j)
    if (memoryUse(model, j, value) > model.room(j) * (1 + 1e-12) + 1e-6) price.fits = false;
  return price;
}

ShareMilpResult optimiseLengths(const synth::CostTable& table, const synth::Program& program,
                                const synth::CostOptions& options, const ShareMilpOptions& milp) {
  const cost::Cluster& cluster = table.cluster();
  const int n = cluster.size();
  // The LP first: its InfeasibleError when fractional shares do not fit, its shares (rounded as
  // the plan rounds them) as CBC's first solution.
  const ShareLpResult relaxed = optimiseShares(table, program, options);
  Model model(table, program, options);
  for (int j = 0; j < n; ++j) {
    std::vector<std::pair<int, double>> row;
    for (auto [k, bytes] : model.memory[static_cast<size_t>(j)].terms) row.push_back(model.share(k, j, bytes / kGiB));
    model.lp.row(row, -kInf, model.room(j) / kGiB);
  }
  if (milp.breakSymmetry && !model.movingReshard) {
    int order = -1;
    for (size_t k = 0; k < model.keys.size(); ++k)
      if (model.keys[k].units && (order < 0 || model.keys[k].units > model.keys[static_cast<size_t>(order)].units))
        order = static_cast<int>(k);
    if (order >= 0) {
      std::map<int, int> previous;  // type -> last device of the type
      for (int j = 0; j < n; ++j) {
        const int ty = cluster.devices[static_cast<size_t>(j)].type;
        if (auto it = previous.find(ty); it != previous.end())
          model.lp.row({{model.keys[static_cast<size_t>(order)].column[static_cast<size_t>(it->second)], 1},
                        {model.keys[static_cast<size_t>(order)].column[static_cast<size_t>(j)], -1}},
                       0, kInf);
        previous[ty] = j;
      }
    }
  }
  model.lp.finish();

  CoinPackedMatrix columns;
  columns.reverseOrderedCopyOf(model.lp.rows);
  columns.removeGaps();
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> cbc(Cbc_newModel(), Cbc_deleteModel);
  Cbc_setLogLevel(cbc.get(), 0);
  Cbc_loadProblem(cbc.get(), columns.getNumCols(), columns.getNumRows(), columns.getVectorStarts(), columns.getIndices(),
                  columns.getElements(), model.lp.colLower.data(), model.lp.colUpper.data(), model.lp.objective.data(),
                  model.lp.rowLower.data(), model.lp.rowUpper.data());
  int integers = 0;
  for (size_t c = 0; c < model.lp.integer.size(); ++c)
    if (model.lp.integer[c]) Cbc_setInteger(cbc.get(), static_cast<int>(c)), ++integers;
  Cbc_setObjSense(cbc.get(), 1);
  Cbc_setMaximumSeconds(cbc.get(), milp.timeLimitSeconds);
  if (milp.warmStart) {
    const std::vector<std::pair<int, double>> start = fixedColumns(model, cutsOf(model, relaxed.shares));
    std::vector<int> cols;
    std::vector<double> values;
    for (auto [c, v] : start)
      if (model.lp.integer[static_cast<size_t>(c)]) cols.push_back(c), values.push_back(v);
    if (!cols.empty()) Cbc_setMIPStartI(cbc.get(), static_cast<int>(cols.size()), cols.data(), values.data());
  }
  const auto started = std::chrono::steady_clock::now();
  Cbc_solve(cbc.get());
  ShareMilpResult result;
  result.solveSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.rows = columns.getNumRows();
  result.columns = columns.getNumCols();
  result.integers = integers;
  const double* x = Cbc_bestSolution(cbc.get());
  if (Cbc_isProvenInfeasible(cbc.get()) && !x) {
    // Fractional shares fit (the LP solved), whole lengths do not: name the tightest type.
    int worst = -1;
    double worstRoom = kInf;
    for (int j = 0; j < n; ++j) {
      const double capacity = cluster.type(j).memoryBytes;
      const double r = model.room(j) / capacity;
      if (r < worstRoom) worstRoom = r, worst = j;
    }
    const cost::DeviceType& t = cluster.type(worst);
    throw InfeasibleError(fmt::format(
        "no whole shard lengths fit this program in memory, though fractional shares would: the {} devices have the "
        "least room ({} of {} beside the replicated tensors), and rows, heads or experts cannot be split finer. Use "
        "more or larger devices, a smaller batch, or fractional ratios (--ratios lp)",
        t.name, ir::formatBytes(std::max(0.0, model.room(worst))), ir::formatBytes(t.memoryBytes)));
  }
  if (!x)
    throw Error(fmt::format("CBC found no whole shard lengths within {} s ({} rows, {} columns, {} integer); use "
                            "fractional ratios (--ratios lp) or a longer limit",
                            milp.timeLimitSeconds, result.rows, result.columns, integers));
  result.status = Cbc_isProvenOptimal(cbc.get()) ? ShareMilpResult::Status::Optimal : ShareMilpResult::Status::TimeLimit;
  result.seconds = Cbc_getObjValue(cbc.get()) / kMicro + model.lp.constant;
  result.bound = result.status == ShareMilpResult::Status::Optimal ? result.seconds
                                                                   : Cbc_getBestPossibleObjValue(cbc.get()) / kMicro + model.lp.constant;
  for (const Model::Key& k : model.keys) {
    DimCut c{k.segment, k.cls, k.units, {}, {}};
    double sum = 0;
    for (int col : k.column) {
      const double v = x[col];
      if (k.units) c.lengths.push_back(std::llround(v)), sum += static_cast<double>(c.lengths.back());
      else c.shares.push_back(std::max(0.0, v)), sum += c.shares.back();
    }
    if (k.units)
      for (int64_t l : c.lengths) c.shares.push_back(static_cast<double>(l) / static_cast<double>(k.units));
    else
      for (double& s : c.shares) s /= sum;
    result.cuts.push_back(std::move(c));
  }
  std::stable_sort(result.cuts.begin(), result.cuts.end(), [](const DimCut& a, const DimCut& b) {
    return a.segment != b.segment ? a.segment < b.segment : a.dimClass < b.dimClass;
  });
  // The model's value at the rounded solution, without the solver's tolerances.
  result.seconds = priceCuts(table, program, result.cuts, options).seconds;
  result.bound = std::min(result.bound, result.seconds);
  result.shares = table.shares();
  for (int s = 0; s < table.theory().segmentCount(); ++s) {
    const DimCut* best = nullptr;
    for (const DimCut& c : result.cuts)
      if (c.segment == s && (!best || c.units > best->units)) best = &c;
    if (best) result.shares[static_cast<size_t>(s)] = best->shares;
  }
  return result;
}

}  // namespace hap::balance
