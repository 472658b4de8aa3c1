// The sharding ratios that minimise a fixed program's iteration time (../shared/DESIGN.md §3
// "Ratios"), by linear programming with COIN-OR CLP.
//
// One ratio simplex per segment. The cost model is the exact stage model (synth/stages.h) with
// the shares left free: a stage costs its communication plus the largest, over device types, of
// the sum of its nodes' times (one variable per stage; a node whose roofline pieces cross gets an
// auxiliary variable); a padded collective follows its segment's largest share (one variable per
// segment), a grouped one the shares' sum, an all-reduce none; a reshard at a segment boundary
// costs 2·bytes·(the largest prefix displacement)/β (cost::reshardSeconds without its latency);
// an all-to-all, quadratic in the shares, is priced at the program's current shares. Devices of
// one type get one share per segment (the problem is symmetric in them, so some optimum is).
// The gradient buckets' exposed all-reduce time is priced against the backward stages that hide
// it (gradient_overlap_rows.h). Every device's memory, affine in its shares (synth/memory.h),
// must fit.
#pragma once

#include <string>
#include <string_view>
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
  synth::Shares shares;  // per segment, per device (rank); each row sums to 1
  double seconds = 0;    // the LP's optimum: the program's stage-model cost at `shares` (all-to-alls
                         // at the old shares, reshards without their latency)
  int rows = 0, columns = 0, segments = 1;
  double solveSeconds = 0;     // CLP's time
};

// The message for a solver (CLP, CBC) that stopped without a solution on a problem it should
// solve: `what` and `status` say which solve and how it ended; the rest names the cluster's most
// extreme values (cost::extremeValues), which are what drive the solver out of its numeric range
// when the model's sizes are ordinary. A solver failure is never reported as "a bug": the
// inventory's ranges (cost/units.h, supportedRange) make it unlikely, not impossible.
std::string solverFailure(std::string_view what, std::string_view status, const cost::Cluster& cluster);

// `table` prices the program at its current shares (used for all-to-alls and for messages).
ShareLpResult optimiseShares(const synth::CostTable& table, const synth::Program& program,
                             const synth::CostOptions& options = {});

}  // namespace hap::balance
