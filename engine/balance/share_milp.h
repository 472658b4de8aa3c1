// Whole shard lengths that minimise a fixed program's iteration time (issue 21 item 1), by
// mixed-integer programming with COIN-OR CBC; the alternation's last rounds (alternation.h, --ratios milp).
//
// The LP over shares (share_lp.h) prices fractional shares, which the plan then rounds per
// dimension class (synth/dim_classes.h: whole rows, heads, experts). This MILP optimises the
// lengths the plan executes: per segment and per dimension class the program cuts there, an
// integer number of the class's units per device (Σ_j = U). A node's work, a padded collective's
// largest shard and a tensor's bytes follow the share (units/U) of the class the node's variant
// (the collective's G form, the tensor's G form) cuts; everything else is the LP's model term by
// term (the exact stage model, synth/stages.h: a stage costs its communication plus, now per
// device, the largest sum of its nodes' times; all-to-alls at the table's shares, reshards
// without latency), and every device's memory must fit. When all classes of a segment are cut
// at the same relative positions the model equals synth::iterationSeconds at those shares (up to
// the LP's two exceptions), which tst_share_milp checks.
//
// Symmetry: with whole units, devices of one type may get different lengths (12 heads on 8
// devices), so every device has its own variables. Devices of one type are interchangeable in
// every term but the reshards' prefix displacement (which depends on rank order), so where the
// program has no reshard that moves data, the devices of each type are ordered by their units of
// the largest class (non-increasing along the ranks): that keeps an optimum (permute any optimum
// into that order) and removes the k! copies. Sorting a second class as well would not: a device
// may be best given many units of one class and few of another.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/balance/share_lp.h"
#include "engine/synth/cost_table.h"
#include "engine/synth/program.h"

namespace hap::balance {

// How one dimension class is cut in one segment.
struct DimCut {
  int segment = 0;
  int dimClass = -1;              // Theory::classes() root; -1: no class (a fractional share)
  int64_t units = 0;              // U of the class (0 for dimClass -1)
  std::vector<int64_t> lengths;   // units per device (rank), summing to `units`
  std::vector<double> shares;     // lengths / units (for dimClass -1, the fractional shares)
};

struct ShareMilpOptions {
  double timeLimitSeconds = 2;   // CBC's limit; at it the best solution found is returned
  bool breakSymmetry = true;     // order each type's devices (see above); off for tests
  bool warmStart = true;         // give CBC the LP's shares after the plan's rounding as a first solution
};

struct ShareMilpResult {
  enum class Status { Optimal, TimeLimit };  // infeasible: InfeasibleError
  Status status = Status::Optimal;
  std::vector<DimCut> cuts;  // every (segment, class) the program cuts, segments ascending
  // Per segment, per device: the shares of the segment's class with the most units (the
  // lengths' implied ratios); a segment the program does not cut keeps the table's shares.
  synth::Shares shares;
  double seconds = 0;        // the model's optimum (the best found at a time limit)
  double bound = 0;          // CBC's lower bound (= seconds when optimal)
  int rows = 0, columns = 0, integers = 0;
  double solveSeconds = 0;   // CBC's time
};

// Throws InfeasibleError (the LP's message when fractional shares do not fit either; otherwise
// one naming the device type with the least room) when no whole lengths fit memory, and Error
// when CBC finds no solution within the limit.
ShareMilpResult optimiseLengths(const synth::CostTable& table, const synth::Program& program,
                                const synth::CostOptions& options = {}, const ShareMilpOptions& milp = {});

// The (segment, class) cuts the program makes, cut by the plan's own rounding of `shares`
// (DimClasses::roundUnits per class, as plan::makePlan records lengths).
std::vector<DimCut> roundedCuts(const synth::CostTable& table, const synth::Program& program,
                                const synth::Shares& shares);

// The MILP's model priced at given cuts (same keys as roundedCuts/optimiseLengths return):
// the iteration time, and whether every device's memory fits.
struct CutPrice {
  double seconds = 0;
  bool fits = true;
};
CutPrice priceCuts(const synth::CostTable& table, const synth::Program& program, const std::vector<DimCut>& cuts,
                   const synth::CostOptions& options = {});

}  // namespace hap::balance
