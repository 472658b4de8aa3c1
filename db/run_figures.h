// What a run's recorded steps add up to, as `hap runs` and the app's Profiles dock show it.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "db/store.h"

namespace hap::db {

// One run's figures (steps as Store::steps gives them: by step, then rank).
struct RunFigures {
  int64_t steps = 0;  // distinct steps recorded
  double meanStepSeconds = std::numeric_limits<double>::quiet_NaN();  // rank 0, steps that are not warm-up
  double finalLoss = std::numeric_limits<double>::quiet_NaN();        // rank 0's loss at the last step
  static RunFigures of(const std::vector<StepRecord>& steps);
};

// One rank's means over its steps that are not warm-up (all its steps when every one is).
struct RankMeans {
  int rank = 0;
  int steps = 0;  // the steps the means are over
  double stepSeconds = std::numeric_limits<double>::quiet_NaN();
  double computeSeconds = std::numeric_limits<double>::quiet_NaN();
  double communicationSeconds = std::numeric_limits<double>::quiet_NaN();
  double peakMemoryBytes = std::numeric_limits<double>::quiet_NaN();  // the largest over all its steps
};
// By rank.
std::vector<RankMeans> rankMeans(const std::vector<StepRecord>& steps);

}  // namespace hap::db
