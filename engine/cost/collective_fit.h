// Fitting a collective's link (latency α, bandwidth β) to measured times (`hap profile`), by
// inverting collective_cost.h's formula for that collective and algorithm on one machine of n
// devices with even shares: seconds = steps(n)·α + volume(n, S)/β. The fitted link then prices
// the same collective at any n and size through collective_cost.h, which is what makes a fit at
// 2 ranks useful for a plan of 8.
//
// `bytes` (S) of a sample is always the FULL tensor:
//   all-gather       S = the gathered result (each device contributes S/n)
//     padded:  steps n−1,          volume (n−1)·S/n
//     grouped: steps n·⌈log2 n⌉,   volume S
//   reduce-scatter   S = each device's same-shape input (each keeps S/n): as all-gather
//   all-reduce       S = the tensor every device holds
//     ring:    steps 2(n−1),       volume 2(n−1)·S/n
//     tree:    steps 2⌈log2 n⌉,    volume 2S
//   broadcast        S = the root's tensor: steps ⌈log2 n⌉, volume S
//   all-to-all       S = the tensor cut evenly along one dimension into n pieces and re-cut
//                    evenly along another: steps n−1, volume (n−1)·S/n² (what each device
//                    sends: (n−1)/n of its piece of S/n)
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "engine/base/error.h"
#include "engine/cost/cluster.h"
#include "engine/cost/profile.h"

namespace hap::cost {

// Samples that cannot be fitted (too few sizes, mixed collectives, an unknown algorithm, a time
// that is not positive). The message names the collective and says what to measure instead.
class FitError : public Error {
 public:
  using Error::Error;
};

// One measured collective: median seconds of the collective over `ranks` devices on `bytes`.
struct CollectiveSample {
  Collective collective = Collective::AllReduce;
  std::string algorithm;  // as CollectiveFit::algorithm
  int ranks = 0;
  double bytes = 0;       // the full tensor (see above)
  double seconds = 0;
};

// The two coefficients of the formula above: seconds = steps·α + volume/β.
struct CollectiveTerms {
  double steps = 0;
  double volume = 0;  // bytes
};

// The terms of `collective` with `algorithm` over n ≥ 2 devices on S bytes. Throws FitError for
// an algorithm the collective does not have (all-gather / reduce-scatter: "padded", "grouped";
// all-reduce: "ring", "tree"; the others: "").
CollectiveTerms collectiveTerms(Collective collective, std::string_view algorithm, int n, double bytes);

// Fits α ≥ 0 and 1/β ≥ 0 by least squares of the RELATIVE error (each sample weighted by
// 1/seconds², so that the small sizes that measure the latency count as much as the large ones
// that measure the bandwidth): the unconstrained solution when it is feasible, else the better
// of α = 0 and 1/β = 0 (a pure latency fit: bandwidth = +infinity, time independent of size).
// Exact data are recovered exactly (up to rounding).
//
// Requirements (FitError otherwise): all samples of one collective, algorithm and rank count
// n ≥ 2, seconds > 0 and bytes > 0, at least two distinct sizes.
// Returns the fit with `ranks` = n, `samples` = their count, relativeResidual = the root mean
// square of (fit − measured)/measured.
CollectiveFit fitCollective(std::span<const CollectiveSample> samples, LinkClass linkClass);

}  // namespace hap::cost
