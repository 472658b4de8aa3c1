// Runs recorded elsewhere brought into a profile store (`hap runs import FILE`, and `hap tune
// --emit`, which reads back the store file that rank 0 of an emitted launch wrote:
// runtime/launch/gathered_recording.h).
//
// Contract:
// - Every finished run of the source (not `running`) is copied with its plan, the plan's cluster,
//   its steps and its stages; plans and clusters are stored once (by their texts' SHA-256), so an
//   imported run refers to the destination's row of its plan. The run keeps its label, settings,
//   ranks, shares, host, pid, start and end times, status and exit reason; ids are the
//   destination's.
// - A run already in the destination (same plan, host, pid and start time) is not copied again:
//   importing one file twice adds nothing the second time.
// - The source is opened read-only and never changed. Errors are StoreError naming the file.
// - The copy of one run is several transactions: a reader may see it `running` (without end time)
//   for a moment, never with half its steps finished.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/store.h"

namespace hap::db {

struct ImportedRun {
  int64_t sourceId = 0;  // the run's id in the source file
  int64_t id = 0;        // its id in the destination
  bool added = false;    // false: it was there already
};

std::vector<ImportedRun> importRuns(Store& into, const std::string& sourcePath);

}  // namespace hap::db
