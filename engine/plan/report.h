// The Markdown report of a simulated iteration (`hap simulate --report`, docs/simulator.md):
// - summary: the simulated iteration time, its forward/backward split, the stage count, and
//   whether it equals the plan's prediction (simulator.h matchesPrediction);
// - segments: each segment's ratio per device type;
// - stages: pass, steps, communication, the slowest device's computation, the bottleneck device
//   type and the idle share across devices; every stage in execution order when there are at
//   most kReportStages, else the kReportStages most expensive, then the others' totals;
// - devices: the bottleneck device (the most busy time) and busy / idle totals per device type;
// - memory: per device type, the largest predicted use against the capacity, and whether it fits.
// Stages are numbered from 0 as in the trace's args.stage (trace_export.h).
#pragma once

#include <cstddef>
#include <string>

#include "engine/plan/plan.h"
#include "engine/plan/simulator.h"

namespace hap::plan {

inline constexpr size_t kReportStages = 20;

// The report of `t`, a timeline of `p` (simulate(p)).
std::string formatReport(const Plan& p, const Timeline& t);

}  // namespace hap::plan
