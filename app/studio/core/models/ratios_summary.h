// What the Ratios view says about a plan in words (issue 18 item 5): the headline above its pages
// (how the ratios were found, the segmentation, how many segments, devices and device types, a
// replicated program's machines, the devices that do not fit in memory), the Memory page's title,
// and the solver counts under the alternation history (LP and MILP solves with their time).
// Computed from the plan alone; the view only shows the text.
#pragma once

#include <QString>

#include "engine/plan/plan.h"

namespace hap::studio {

struct RatiosSummary {
  QString policy;        // "Ratios by LP", "Whole lengths by MILP", "Ratios: even"
  QString segmentation;  // Plan::segmentation
  int segments = 0;
  int devices = 0;       // Plan::devices (one machine's program ranks for a replicated plan)
  int deviceTypes = 0;   // distinct PlanDevice::type among them
  int machines = 1;      // Plan::replication.machines (1: not replicated)
  int overCapacity = 0;  // devices of plan::worldDevices whose predicted memory exceeds capacity
  int lpSolves = 0, milpSolves = 0;
  double lpSeconds = 0, milpSeconds = 0;

  // The headline (rich text): "<b>Ratios by LP</b> · segmentation <i>layer</i> · 3 segments on 4
  // devices of 2 types", then " (one machine's program, replicated on 2 machines)" and the
  // devices that do not fit, in MemoryModel's over-capacity colour.
  QString headline() const;
  // "Memory per device", with "(1 does not fit)" / "(3 do not fit)" when some do not.
  QString memoryPageTitle() const;
  // "5 LP solves, 1.2 ms", with "; 2 MILP solves, 4012.0 ms" when the MILP ran.
  QString solves() const;
};

RatiosSummary ratiosSummary(const plan::Plan& plan);

}  // namespace hap::studio
