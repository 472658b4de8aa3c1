// The sharding ratios that minimise a fixed program's iteration time (DESIGN.md §3 "Ratios"),
// by linear programming with COIN-OR CLP.
//
// The cost model is the search's (synth/cost_table.h) with the shares left free: a node costs the
// maximum over devices of affine pieces of the device's share (one auxiliary variable per node),
// a padded collective follows the largest share (one auxiliary variable), a grouped one the
// shares' sum, an all-reduce none; an all-to-all, quadratic in the shares, is priced at the
// program's current shares. Devices of one type get one share (the problem is symmetric in them,
// so some optimum is). Every device's memory, affine in its share (synth/memory.h), must fit.
#pragma once

#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/synth/cost_table.h"
#include "engine/synth/program.h"

namespace hap::balance {

// No shares let the program fit in memory. The message names the device type that runs out,
// by how much, and the largest tensors it holds.
class InfeasibleError : public Error {
 public:
  using Error::Error;
};

struct ShareLpResult {
  std::vector<double> shares;  // per device (rank), summing to 1
  double seconds = 0;          // the LP's optimum: the program's cost at `shares` (all-to-alls
                               // at the old shares)
  int rows = 0, columns = 0;
  double solveSeconds = 0;     // CLP's time
};

// `table` prices the program at its current shares (used for all-to-alls and for messages).
ShareLpResult optimiseShares(const synth::CostTable& table, const synth::Program& program,
                             const synth::CostOptions& options = {});

}  // namespace hap::balance
