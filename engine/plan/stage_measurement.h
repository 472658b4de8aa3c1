// One stage of one rank, as a run measured it: the split the simulator predicts per stage
// (plan::StageSpan), measured. The runtime records one per rank and Plan::stages index
// (runtime/train/run_recorder.h), the profile store keeps them (db::StageRecord is this type) and
// plan::measuredTimeline (engine/plan/measured_timeline.h) turns a run's into a timeline.
#pragma once

namespace hap::plan {

struct StageMeasurement {
  int rank = 0;
  int stage = 0;              // index into the plan's Plan::stages
  double computeSeconds = 0;  // the rank's computation in the stage, per iteration
  double communicationSeconds = 0;  // its collectives' time in the stage (waits included)
};

}  // namespace hap::plan
