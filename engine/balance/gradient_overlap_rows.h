// The gradient buckets' exposed all-reduce time (synth/stages.h) as rows of the share LP and MILP.
// Internal to engine/balance (it needs linear_rows.h).
//
// Bucket k is ready when every device has run its ready step (GradientBucket::readyStep) in stage
// r_k: at the stage's start, plus its communication, plus the largest over devices of their
// computation in the stage up to that step, P_k = max_d P_k,d. The buckets run one after another,
// so the last all-reduce ends at max_k (ready_k + Σ_{j≥k} seconds_j) (cost::scheduleBuckets),
// and the exposed time is the smallest E ≥ 0 with, for every bucket k and device d,
//   E + C_{r_k} + Σ_{stages s > r_k} (M_s + C_s) − P_k,d ≥ Σ_{j≥k} seconds_j,
// C_s being stage s's computation (its row's column) and M_s its communication. Minimising E with
// the rest is the stage model's exposed time at the solver's shares wherever the expressions
// below are the model's own; a caller states what it takes at the current shares instead.
#pragma once

#include <utility>
#include <vector>

#include "engine/balance/linear_rows.h"
#include "engine/synth/stages.h"

namespace hap::balance {

// Σ a·x[column] + constant, in the model's unit.
struct LinearExpr {
  std::vector<std::pair<int, double>> terms;
  double constant = 0;
};

// One stage of model.stages: its communication and its computation.
struct StageTime {
  LinearExpr communication, computation;
};

// Bucket `bucket`'s P_k,d for one device (or device type) d.
struct ReadyPoint {
  size_t bucket = 0;
  LinearExpr partial;
};

// Adds E (objective coefficient 1) and its rows; `scale` converts seconds into the model's unit
// (the MILP's microseconds). `times` has one entry per model.stages entry.
inline void addExposedGradientRows(LinearRows& lp, const synth::StageModel& model, const std::vector<StageTime>& times,
                                   const std::vector<ReadyPoint>& points, double scale, double infinity) {
  if (points.empty()) return;
  std::vector<double> suffix(model.buckets.size() + 1, 0.0);
  for (size_t k = model.buckets.size(); k-- > 0;) suffix[k] = suffix[k + 1] + model.buckets[k].seconds;
  const int exposed = lp.column(1, 0, infinity);
  for (const ReadyPoint& p : points) {
    const size_t r = static_cast<size_t>(model.buckets[p.bucket].readyStage);
    std::vector<std::pair<int, double>> row{{exposed, 1}};
    double constant = 0;  // of the left-hand side
    auto add = [&](const LinearExpr& e, double sign) {
      for (auto [column, a] : e.terms) row.emplace_back(column, sign * a);
      constant += sign * e.constant;
    };
    add(times[r].computation, 1);
    for (size_t s = r + 1; s < times.size(); ++s) add(times[s].communication, 1), add(times[s].computation, 1);
    add(p.partial, -1);
    lp.row(row, scale * suffix[p.bucket] - constant, infinity);
  }
}

}  // namespace hap::balance
