// A recorded run as a timeline (issue 20 item 3): the measured counterpart of the simulator's
// plan::Timeline, so that the app's stages view draws it below the prediction, stage by stage.
//
// Input: the run's plan, that plan's simulated timeline (plan::simulate) and the run's
// StageMeasurements (engine/plan/stage_measurement.h: per rank and Plan::stages index, the mean
// computation and communication of one iteration, as runtime/train/run_recorder.h records them
// and db::Store::stages reads them back). Pure: it reads no file and no store.
//
// Contract:
// - The measured timeline has the predicted one's stages, in the same order, with the same
//   steps and pass, and one device per rank of the run (plan::worldDevices: for a replicated
//   plan every machine's copy). A stage starts when the previous one ends (collectives
//   synchronise), as in the simulator.
// - A stage's communication is the least any rank measured in it. A collective ends on every
//   rank at about the same time, but a rank that finished its computation early enters it early
//   and measures its wait for the slowest rank as communication. The rank that arrives last
//   (the slowest of the previous stage) waits least, so the minimum is the collective itself;
//   the others' waits are the previous stage's idle time, which the timeline already shows (the
//   slowest rank's computation minus theirs). The maximum or the mean would count that wait
//   twice: once as idle, once as communication. (Measurement noise makes the minimum slightly
//   low; the per-rank sums stay in the Store's StepRecords.)
// - Each rank's computation in a stage is what it measured; the stage's computation is the
//   slowest rank's (StageSpan::slowestRank), the others idle until it ends.
// - Events carry step -1 (a stage is measured as a whole, not step by step) and labels saying
//   what they are ("measured communication: all-reduce x and 2 more", "measured computation:
//   3 steps"); StageSpan::steps are the predicted stage's, so a click on a measured stage
//   selects the same nodes.
// - The predicted stages without steps (the gradient buckets' exposed all-reduces; a replicated
//   plan's gradient sums across machines) have no record of their own: the workers measure that
//   time inside the last backward stage. They are kept with zero time so that the stages line up.
// - Records that cannot belong to this plan give an error value, never a throw: no record at all,
//   a stage index the plan does not have, a rank outside the run, or fewer recorded stages than
//   the plan has (a run of another plan). A rank that recorded no stage (it failed before its
//   first measured step ended) is an empty row listed in ranksWithoutStages; a rank missing only
//   some stages counts them as zero (missingRecords).
#pragma once

#include <string>
#include <vector>

#include "engine/plan/plan.h"
#include "engine/plan/simulator.h"
#include "engine/plan/stage_measurement.h"

namespace hap::plan {

struct MeasuredTimeline {
  Timeline timeline;                 // valid when ok()
  std::string error;                 // why there is none ("" when ok)
  std::vector<int> ranksWithoutStages;  // ranks with no record: no events
  int missingRecords = 0;            // (rank, stage) pairs a recording rank lacks, counted as zero
  bool ok() const { return error.empty(); }
};

// The measured timeline of a run of `plan` (contract above). `predicted` is simulate(plan, ...):
// its labels name the measured events.
MeasuredTimeline measuredTimeline(const Plan& plan, const Timeline& predicted,
                                  const std::vector<StageMeasurement>& stages);

}  // namespace hap::plan
