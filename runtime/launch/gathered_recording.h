// A run recorded by rank 0 alone (`hap-worker --record FILE`, written into the scripts by
// `hap launch --emit ... --record`): on a cluster no `hap launch --db` begins the run, and the
// ranks' machines do not share the store file, so every rank sends its records to rank 0 at the
// end of the run and rank 0 writes the whole run at once. Plain C++ (no LibTorch): the worker
// gathers the texts (an all-gather over its communicator), this file encodes, decodes and writes.
//
// Contract:
// - encodeRankRecords / decodeRankRecords round-trip a rank's records exactly (numbers as JSON
//   doubles, which print shortest round-trip). decodeRankRecords refuses a text that is not one
//   rank's records (RuntimeError naming the rank it was gathered from).
// - writeGatheredRun adds to the store at `path` (created when missing), in this order: the plan
//   and its cluster and the run (beginRecordedRun, with settings.options the worker's options
//   and settings.slowdowns every rank's), every rank's steps, every rank's stages, and the run
//   finished as succeeded. So the file holds the run as `hap launch --local --db` would have
//   recorded it, and a reader sees it `running` until it is whole. Store errors are
//   db::StoreError naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/store.h"
#include "engine/plan/plan.h"
#include "runtime/launch/launch_recording.h"

namespace hap::runtime {

// One rank's part of a gathered run.
struct RankRecords {
  int rank = 0;
  double slowdown = 1;  // its --slowdown
  std::vector<db::StepRecord> steps;
  std::vector<db::StageRecord> stages;
};

std::string encodeRankRecords(const RankRecords& r);
RankRecords decodeRankRecords(const std::string& text, int fromRank);

// Writes the run (contract above) and returns its id in the store at `path`.
int64_t writeGatheredRun(const std::string& path, const plan::Plan& plan, const LaunchSettings& settings,
                         const std::vector<RankRecords>& ranks);

}  // namespace hap::runtime
