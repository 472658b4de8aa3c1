// A timeline as Chrome Trace Event JSON (../shared/DESIGN.md §4 "Traces"), for ui.perfetto.dev and
// chrome://tracing.
//
// The layout is a contract: the runtime writes measured traces in the same layout, so that the
// predicted and the measured iteration of one plan open side by side and line up track by track.
//
//   {"traceEvents": [...], "displayTimeUnit": "ms",
//    "otherData": {"source", "model", "cluster", "iteration_seconds"}}
//
// - One process per rank: pid = rank + 1 (Perfetto treats pid 0 as the kernel's), with metadata
//   events (ph "M") process_name "rank J: TYPE on MACHINE" and process_sort_index J.
// - Two threads per process, named by thread_name metadata: tid 1 "computation" and tid 2
//   "communication" (thread_sort_index 1 and 2); a simulated plan with gradient buckets has a
//   third, tid 3 "gradient buckets", with one event "gradient bucket K" per bucket's all-reduce
//   (args ready_ms: when its last gradient was in; parameters: how many it sums).
// - A complete event (ph "X") for each step a rank spends time on in a pass: ts and dur in
//   microseconds from the start of the iteration; name the step's label (simulator.h stepLabels:
//   "linear layers.0.attn.q", "all-gather input0.1"); cat "forward" or "backward"; args {"step":
//   index into the plan's program, "stage": index into the iteration's stages, forward first,
//   "segment": the segment's name, and "variant" (a computation) or "method" (a padded or
//   grouped collective)}. Computations lie on tid 1, collectives on tid 2; a computation that
//   also communicates (SFB's gathers, a reshard) has an event on each.
// - Waiting for the slowest rank: events named "idle" on tid 1, cat as the pass, args {"stage"}.
// Within one tid, events never overlap.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/plan/plan.h"
#include "engine/plan/simulator.h"

namespace hap::plan {

// The trace of `t`, a timeline of `p` (simulate(p)); otherData.source is `source`.
nlohmann::ordered_json traceJson(const Plan& p, const Timeline& t, const std::string& source = "hap simulate");

}  // namespace hap::plan
