#include "engine/plan/measured_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hap::plan {
namespace {

double seconds(double v) { return std::isfinite(v) && v > 0 ? v : 0.0; }

// "measured communication: all-reduce x and 2 more" from the predicted events of one stage.
std::string describe(const char* what, const std::vector<std::string>& labels) {
  if (labels.empty()) return fmt::format("measured {}", what);
  if (labels.size() == 1) return fmt::format("measured {}: {}", what, labels.front());
  return fmt::format("measured {}: {} and {} more", what, labels.front(), labels.size() - 1);
}

}  // namespace

MeasuredTimeline measuredTimeline(const Plan& plan, const Timeline& predicted,
                                  const std::vector<StageMeasurement>& stages) {
  MeasuredTimeline out;
  const bool replicated = plan.replication.replicated();
  const size_t ranks = plan.devices.size() * static_cast<size_t>(replicated ? plan.replication.machines : 1);
  const size_t planned = plan.stages.size();
  // The simulation's stages without steps (the gradient buckets' exposed all-reduces, a replicated
  // plan's sums across machines) come after the plan's.
  const size_t extra = static_cast<size_t>(std::count_if(predicted.stages.begin(), predicted.stages.end(),
                                                         [](const StageSpan& s) { return s.steps.empty(); }));
  if (ranks == 0) {
    out.error = "the run's plan has no device";
    return out;
  }
  if (predicted.stages.size() != planned + extra || extra > 2) {
    out.error = fmt::format("the plan lists {} stages but its simulation has {}: the plan file is inconsistent",
                            planned, predicted.stages.size());
    return out;
  }
  for (size_t s = 0; s < planned; ++s)
    if (plan.stages[s].backward != predicted.stages[s].backward) {
      out.error = fmt::format("stage {} of the plan is {}, but its simulation's is {}: the plan file is inconsistent",
                              s + 1, plan.stages[s].backward ? "backward" : "forward",
                              predicted.stages[s].backward ? "backward" : "forward");
      return out;
    }
  if (stages.empty()) {
    out.error = "the run recorded no per-stage times (its workers ended before their first measured step, or "
                "recorded without the stage split)";
    return out;
  }

  // Per rank and stage: the record, if any.
  std::vector<std::vector<char>> have(ranks, std::vector<char>(planned, 0));
  std::vector<std::vector<double>> compute(ranks, std::vector<double>(planned, 0.0));
  std::vector<std::vector<double>> communication(ranks, std::vector<double>(planned, 0.0));
  std::vector<char> recording(ranks, 0);
  int lastStage = -1;
  for (const StageMeasurement& r : stages) {
    if (r.rank < 0 || static_cast<size_t>(r.rank) >= ranks) {
      out.error = fmt::format("rank {} recorded stage times, but the plan runs on {} ranks (a run of another plan?)",
                              r.rank, ranks);
      return out;
    }
    if (r.stage < 0 || static_cast<size_t>(r.stage) >= planned) {
      out.error = fmt::format("rank {} recorded stage {}, but the plan has {} stages (a run of another plan?)", r.rank,
                              r.stage + 1, planned);
      return out;
    }
    const auto j = static_cast<size_t>(r.rank), s = static_cast<size_t>(r.stage);
    have[j][s] = 1;
    recording[j] = 1;
    compute[j][s] = seconds(r.computeSeconds);
    communication[j][s] = seconds(r.communicationSeconds);
    lastStage = std::max(lastStage, r.stage);
  }
  if (static_cast<size_t>(lastStage + 1) < planned) {
    out.error = fmt::format("the run recorded {} stages per rank, but the plan has {} (a run of another plan?)",
                            lastStage + 1, planned);
    return out;
  }
  for (size_t j = 0; j < ranks; ++j) {
    if (!recording[j]) {
      out.ranksWithoutStages.push_back(static_cast<int>(j));
      continue;
    }
    for (size_t s = 0; s < planned; ++s) out.missingRecords += have[j][s] ? 0 : 1;
  }

  // What each predicted stage's phases hold, for the labels (rank 0's events: every device runs
  // every collective, and the steps of a stage are the same on every device).
  std::vector<std::vector<std::string>> commLabels(predicted.stages.size()), computeLabels(predicted.stages.size());
  if (!predicted.devices.empty())
    for (const plan::Event& e : predicted.devices.front().events) {
      if (e.stage < 0 || static_cast<size_t>(e.stage) >= predicted.stages.size()) continue;
      if (e.kind == plan::EventKind::Communication) commLabels[static_cast<size_t>(e.stage)].push_back(e.label);
    }
  for (size_t s = 0; s < predicted.stages.size(); ++s) {
    const size_t n = predicted.stages[s].steps.size();
    computeLabels[s].push_back(n == 1 ? std::string("1 step") : fmt::format("{} steps", n));
  }

  plan::Timeline& t = out.timeline;
  for (size_t j = 0; j < ranks; ++j) t.devices.push_back({static_cast<int>(j), {}, 0, 0, 0});
  double clock = 0;
  for (size_t s = 0; s < predicted.stages.size(); ++s) {
    const plan::StageSpan& p = predicted.stages[s];
    const int index = static_cast<int>(s);
    plan::StageSpan span{p.backward, p.steps, clock, 0, std::vector<double>(ranks, 0.0), 0, 0, p.what};
    if (s < planned) {
      double least = std::numeric_limits<double>::infinity();
      for (size_t j = 0; j < ranks; ++j)
        if (have[j][s]) least = std::min(least, communication[j][s]);
      span.communicationSeconds = std::isfinite(least) ? least : 0.0;
      for (size_t j = 0; j < ranks; ++j) {
        span.deviceComputation[j] = compute[j][s];
        if (compute[j][s] > span.computationSeconds) {
          span.computationSeconds = compute[j][s];
          span.slowestRank = static_cast<int>(j);
        }
      }
    }
    const std::string commLabel = describe("communication", commLabels[s]);
    const std::string computeLabel = describe("computation", computeLabels[s]);
    const double computeStart = span.start + span.communicationSeconds;
    for (size_t j = 0; j < ranks; ++j) {
      if (!recording[j]) continue;
      plan::DeviceTimeline& d = t.devices[j];
      if (span.communicationSeconds > 0)
        d.events.push_back({plan::EventKind::Communication, span.start, span.communicationSeconds, -1, index,
                            span.backward, commLabel});
      const double busy = span.deviceComputation[j], idle = span.computationSeconds - busy;
      if (busy > 0)
        d.events.push_back({plan::EventKind::Compute, computeStart, busy, -1, index, span.backward, computeLabel});
      if (idle > 0)
        d.events.push_back({plan::EventKind::Idle, computeStart + busy, idle, -1, index, span.backward, "idle"});
      d.communicationSeconds += span.communicationSeconds;
      d.computeSeconds += busy;
      d.idleSeconds += idle;
    }
    clock = span.end();
    (span.backward ? t.backwardSeconds : t.forwardSeconds) += span.seconds();
    t.stages.push_back(std::move(span));
  }
  t.totalSeconds = clock;
  return out;
}

}  // namespace hap::plan
