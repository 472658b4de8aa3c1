#include "engine/plan/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include "engine/cost/bucketed_gradients.h"
#include "engine/plan/plan_json.h"

namespace hap::plan {
namespace {

const std::vector<double>& work(const PlanStep& s, bool backward) {
  return backward ? s.backwardByGroup : s.forwardByGroup;
}

// Rejects what the replay cannot interpret, naming the plan file's field.
void check(const Plan& p, const std::vector<std::string>& labels) {
  if (p.devices.empty()) throw PlanError("field 'cluster.devices' is empty: the plan has no device");
  if (labels.size() != p.steps.size())
    throw std::logic_error(fmt::format("simulate: {} step labels for {} steps", labels.size(), p.steps.size()));
  size_t last = 0;  // the device in the highest group
  for (size_t j = 0; j < p.devices.size(); ++j) {
    const PlanDevice& d = p.devices[j];
    if (d.rank != static_cast<int>(j))
      throw PlanError(fmt::format("field 'cluster.devices[{}].rank' is {}: devices must be listed by rank", j, d.rank));
    if (d.group < 0) throw PlanError(fmt::format("field 'cluster.devices[{}].group' is negative", j));
    if (d.group > p.devices[last].group) last = j;
  }
  for (size_t s = 0; s < p.segments.size(); ++s)
    if (p.segments[s].ratios.size() != p.devices.size())
      throw PlanError(fmt::format("field 'ratios.segments[{}].ratios' has {} entries for {} devices", s,
                                  p.segments[s].ratios.size(), p.devices.size()));
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const int segment = p.steps[i].segment;
    if (segment < 0 || static_cast<size_t>(segment) >= p.segments.size())
      throw PlanError(fmt::format("field 'program[{}].segment' is {}, but the plan has {} segments", i, segment,
                                  p.segments.size()));
    for (bool backward : {false, true}) {
      const std::vector<double>& w = work(p.steps[i], backward);
      if (!w.empty() && static_cast<int>(w.size()) <= p.devices[last].group)
        throw PlanError(fmt::format("field 'program[{}].times.{}_by_group' has {} entries, but "
                                    "cluster.devices[{}] is in group {}",
                                    i, backward ? "backward" : "forward", w.size(), last, p.devices[last].group));
    }
  }
}

class Replay {
 public:
  Replay(const Plan& p, const std::vector<std::string>& labels) : p_(p), labels_(labels) {
    for (const PlanDevice& d : p.devices) t_.devices.push_back({d.rank, {}, 0, 0, 0});
  }

  Timeline run() && {
    t_.forwardSeconds = pass(false);
    t_.backwardSeconds = pass(true);
    t_.backwardSeconds += gradientBuckets();
    if (p_.replication.replicated()) t_.backwardSeconds += acrossMachines();
    t_.totalSeconds = clock_;
    return std::move(t_);
  }

 private:
  // Replays one pass from the current clock; returns its duration.
  double pass(bool backward) {
    const double begin = clock_;
    const int n = static_cast<int>(p_.steps.size());
    std::vector<int> stage;
    bool computed = false;  // the stage holds a computation
    for (int k = 0; k < n; ++k) {
      const int i = backward ? n - 1 - k : k;
      const PlanStep& s = p_.steps[static_cast<size_t>(i)];
      const bool sync = backward ? s.backwardSync : s.forwardSync;
      if (!stage.empty() && sync && computed) {
        replayStage(stage, backward);
        stage.clear();
        computed = false;
      }
      stage.push_back(i);
      computed = computed || !work(s, backward).empty();
    }
    if (!stage.empty()) replayStage(stage, backward);
    return clock_ - begin;
  }

  void replayStage(const std::vector<int>& steps, bool backward) {
    const int index = static_cast<int>(t_.stages.size());
    const size_t devices = t_.devices.size();
    StageSpan span{backward, steps, clock_, 0, std::vector<double>(devices, 0.0), 0, 0, {}};

    // Communication phase: every device takes part in every collective, one after another.
    for (int i : steps) {
      const PlanStep& s = p_.steps[static_cast<size_t>(i)];
      const double c = backward ? s.backwardCommunication : s.forwardCommunication;
      if (c <= 0) continue;
      for (DeviceTimeline& d : t_.devices)
        d.events.push_back({EventKind::Communication, span.start + span.communicationSeconds, c, i, index, backward,
                            label(i)});
      span.communicationSeconds += c;
    }
    const double computeStart = span.start + span.communicationSeconds;

    // Computation phase: each device at its own speed.
    for (size_t j = 0; j < devices; ++j) {
      const size_t group = static_cast<size_t>(p_.devices[j].group);
      double& busy = span.deviceComputation[j];
      for (int i : steps) {
        const std::vector<double>& w = work(p_.steps[static_cast<size_t>(i)], backward);
        if (!w.empty() && w[group] > 0) {
          t_.devices[j].events.push_back({EventKind::Compute, computeStart + busy, w[group], i, index, backward, label(i)});
          busy += w[group];
        }
        // A gradient is in once every device is past its step (gradientBuckets()).
        if (backward) {
          double& done = backwardDone_[i];
          done = std::max(done, computeStart + busy);
        }
      }
      if (busy > span.computationSeconds) {
        span.computationSeconds = busy;
        span.slowestRank = static_cast<int>(j);
      }
    }

    // Every device waits for the slowest before the next stage's collectives.
    for (size_t j = 0; j < devices; ++j) {
      DeviceTimeline& d = t_.devices[j];
      const double busy = span.deviceComputation[j], idle = span.computationSeconds - busy;
      d.communicationSeconds += span.communicationSeconds;
      d.computeSeconds += busy;
      d.idleSeconds += idle;
      if (idle > 0) d.events.push_back({EventKind::Idle, computeStart + busy, idle, -1, index, backward, "idle"});
    }
    clock_ = span.end();
    t_.stages.push_back(std::move(span));
  }

  // The gradient buckets' all-reduces beside the backward stages; what they leave after the last
  // one becomes a stage of communication only. Returns its duration.
  double gradientBuckets() {
    std::vector<double> ready, seconds;
    for (const Plan::GradientBucket& b : p_.gradientBuckets) {
      double r = 0;
      for (int i : b.steps) r = std::max(r, backwardDone_.at(i));
      ready.push_back(r);
      seconds.push_back(b.seconds);
    }
    if (ready.empty()) return 0;
    const std::vector<cost::BucketSpan> spans = cost::scheduleBuckets(ready, seconds);
    for (size_t k = 0; k < spans.size(); ++k)
      t_.buckets.push_back({static_cast<int>(k), ready[k], spans[k].start, spans[k].end});
    t_.exposedGradientSeconds = std::max(0.0, spans.back().end - clock_);
    return communicationStage(t_.exposedGradientSeconds, "gradient buckets", "gradient all-reduces after backward");
  }

  // A replicated plan's gradient sums across machines after backward. Returns its duration.
  double acrossMachines() {
    return communicationStage(p_.replication.allReduceSeconds, "across machines", "gradient all-reduce across machines");
  }

  // A stage of `c` seconds of communication on every device, no step of the program in it.
  double communicationStage(double c, const char* what, const char* label) {
    if (c <= 0) return 0;
    const int index = static_cast<int>(t_.stages.size());
    StageSpan span{true, {}, clock_, c, std::vector<double>(t_.devices.size(), 0.0), 0, 0, what};
    for (DeviceTimeline& d : t_.devices) {
      d.events.push_back({EventKind::Communication, clock_, c, -1, index, true, label});
      d.communicationSeconds += c;
    }
    clock_ = span.end();
    t_.stages.push_back(std::move(span));
    return c;
  }

  const std::string& label(int step) const { return labels_[static_cast<size_t>(step)]; }

  const Plan& p_;
  const std::vector<std::string>& labels_;
  Timeline t_;
  double clock_ = 0;
  std::map<int, double> backwardDone_;  // step -> when every device had run its backward
};

}  // namespace

std::string_view eventKindName(EventKind k) {
  switch (k) {
    case EventKind::Compute: return "compute";
    case EventKind::Communication: return "communication";
    case EventKind::Idle: return "idle";
  }
  return "?";
}

std::vector<std::string> stepLabels(const Plan& p, const ir::Graph& imported) {
  const ir::Graph g = planGraph(imported, p);
  auto known = [&](int id, size_t size, size_t step, const char* field) {
    if (id < 0 || static_cast<size_t>(id) >= size)
      throw PlanError(fmt::format("field 'program[{}].{}' is {}, but the model's plan graph has {} of them", step,
                                  field, id, size));
  };
  std::vector<std::string> labels;
  labels.reserve(p.steps.size());
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep& s = p.steps[i];
    if (s.kind == PlanStep::Kind::Convert) {
      known(s.from.value, g.values.size(), i, "from.value");
      labels.push_back(fmt::format("{} {}", s.instruction, g.value(s.from.value).name));
    } else {
      known(s.node, g.nodes.size(), i, "node");
      const ir::Node& n = g.node(s.node);
      const size_t colons = n.op.find("::");
      const std::string op = colons == std::string::npos ? n.op : n.op.substr(colons + 2);
      labels.push_back(n.scope.empty() ? op : fmt::format("{} {}", op, n.scope));
    }
  }
  return labels;
}

std::vector<std::string> stepLabels(const Plan& p) {
  std::vector<std::string> labels;
  labels.reserve(p.steps.size());
  for (const PlanStep& s : p.steps)
    labels.push_back(s.kind == PlanStep::Kind::Convert ? fmt::format("{} value {}", s.instruction, s.from.value)
                                                       : fmt::format("node {} {}", s.node, s.variant));
  return labels;
}

Timeline simulate(const Plan& p, const std::vector<std::string>& labels) {
  check(p, labels);
  return Replay(p, labels).run();
}

Timeline simulate(const Plan& p) { return simulate(p, stepLabels(p)); }

int bottleneckRank(const Timeline& t) {
  int best = 0;
  for (size_t j = 1; j < t.devices.size(); ++j)
    if (t.devices[j].busySeconds() > t.devices[static_cast<size_t>(best)].busySeconds()) best = static_cast<int>(j);
  return best;
}

bool matchesPrediction(const Plan& p, const Timeline& t) {
  const double predicted = p.estimate.iterationSeconds;
  return std::abs(t.totalSeconds - predicted) <= kPredictionTolerance * std::abs(predicted);
}

}  // namespace hap::plan
