#include "engine/plan/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/ir/summary.h"

namespace hap::plan {
namespace {

std::string ms(double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); }

std::string percent(double part, double whole) {
  return fmt::format("{:.1f}%", whole > 0 ? 100 * part / whole : 0.0);
}

std::string bytes(double b) { return ir::formatBytes(static_cast<int64_t>(std::llround(b))); }

// Device types in rank order, each with its ranks.
struct TypeRanks {
  std::string type;
  std::vector<size_t> ranks;
};
std::vector<TypeRanks> typesOf(const Plan& p) {
  std::vector<TypeRanks> types;
  for (size_t j = 0; j < p.devices.size(); ++j) {
    auto it = std::find_if(types.begin(), types.end(), [&](const TypeRanks& t) { return t.type == p.devices[j].type; });
    if (it == types.end()) it = types.insert(types.end(), {p.devices[j].type, {}});
    it->ranks.push_back(j);
  }
  return types;
}

double stageIdle(const StageSpan& s) {
  double idle = 0;
  for (double busy : s.deviceComputation) idle += s.computationSeconds - busy;
  return idle;
}

std::string summary(const Plan& p, const Timeline& t) {
  size_t backwardStages = 0;
  for (const StageSpan& s : t.stages) backwardStages += s.backward;
  const double predicted = p.estimate.iterationSeconds;
  std::string out = "## Summary\n\n";
  out += fmt::format("- Simulated iteration: **{}** (forward {} in {} stages, backward {} in {} stages)\n",
                     ms(t.totalSeconds), ms(t.forwardSeconds), t.stages.size() - backwardStages,
                     ms(t.backwardSeconds), backwardStages);
  out += fmt::format("- Stages: {}\n", t.stages.size());
  if (matchesPrediction(p, t))
    out += fmt::format("- The plan's prediction: {}; the simulation matches it.\n", ms(predicted));
  else
    out += fmt::format("- The plan's prediction: {}; **the simulation differs** ({:.9f} ms against {:.9f} ms).\n",
                       ms(predicted), t.totalSeconds * 1e3, predicted * 1e3);
  const size_t b = static_cast<size_t>(bottleneckRank(t));
  const PlanDevice& d = p.devices[b];
  out += fmt::format("- Bottleneck device: rank {} ({} on {}), busy {} ({} of the iteration: computation {}, "
                     "communication {})\n",
                     d.rank, d.type, d.machine, ms(t.devices[b].busySeconds()),
                     percent(t.devices[b].busySeconds(), t.totalSeconds), ms(t.devices[b].computeSeconds),
                     ms(t.devices[b].communicationSeconds));
  return out;
}

std::string segments(const Plan& p, const std::vector<TypeRanks>& types) {
  std::string out = "## Segments\n\nShare of each device of a type, per segment.\n\n| segment |";
  std::string rule = "|---|";
  for (const TypeRanks& t : types) {
    out += fmt::format(" {} (×{}) |", t.type, t.ranks.size());
    rule += "---:|";
  }
  out += "\n" + rule + "\n";
  for (const Segment& seg : p.segments) {
    out += fmt::format("| {} |", seg.name);
    for (const TypeRanks& t : types) {
      double low = 1, high = 0;
      for (size_t j : t.ranks) low = std::min(low, seg.ratios[j]), high = std::max(high, seg.ratios[j]);
      out += low == high ? fmt::format(" {:.2f}% |", 100 * high) : fmt::format(" {:.2f}–{:.2f}% |", 100 * low, 100 * high);
    }
    out += "\n";
  }
  return out;
}

std::string stages(const Plan& p, const Timeline& t) {
  const size_t n = t.stages.size(), devices = p.devices.size();
  std::vector<size_t> shown(n);
  std::iota(shown.begin(), shown.end(), size_t{0});
  std::string out = "## Stages\n\n";
  if (n > kReportStages) {
    std::stable_sort(shown.begin(), shown.end(),
                     [&](size_t a, size_t b) { return t.stages[a].seconds() > t.stages[b].seconds(); });
    shown.resize(kReportStages);
    out += fmt::format("The {} most expensive of {} stages, most expensive first.", kReportStages, n);
  } else {
    out += fmt::format("All {} stages in execution order.", n);
  }
  out += " Computation is the slowest device's; idle is the share of the stage's device time spent "
         "waiting for it.\n\n";
  out += "| stage | pass | steps | communication | computation | bottleneck | idle |\n"
         "|---:|---|---|---:|---:|---|---:|\n";
  for (size_t k : shown) {
    const StageSpan& s = t.stages[k];
    // A stage without steps: the exposed gradient all-reduces, or a replicated plan's gradient
    // sums across machines.
    const std::string steps =
        s.steps.empty() ? s.what
                        : fmt::format("{}–{} ({})", *std::min_element(s.steps.begin(), s.steps.end()),
                                      *std::max_element(s.steps.begin(), s.steps.end()), s.steps.size());
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", k, s.backward ? "backward" : "forward", steps,
                       ms(s.communicationSeconds), ms(s.computationSeconds),
                       s.computationSeconds > 0 ? p.devices[static_cast<size_t>(s.slowestRank)].type : "—",
                       percent(stageIdle(s), s.seconds() * static_cast<double>(devices)));
  }
  auto totalRow = [&](const std::string& name, const std::vector<size_t>& which) {
    double comm = 0, comp = 0, idle = 0, time = 0;
    size_t steps = 0;
    for (size_t k : which) {
      const StageSpan& s = t.stages[k];
      comm += s.communicationSeconds, comp += s.computationSeconds, idle += stageIdle(s), time += s.seconds();
      steps += s.steps.size();
    }
    out += fmt::format("| {} | | {} | {} | {} | | {} |\n", name, steps, ms(comm), ms(comp),
                       percent(idle, time * static_cast<double>(devices)));
  };
  std::vector<size_t> all(n), others;
  std::iota(all.begin(), all.end(), size_t{0});
  if (n > kReportStages) {
    std::vector<bool> listed(n, false);
    for (size_t k : shown) listed[k] = true;
    for (size_t k : all)
      if (!listed[k]) others.push_back(k);
    totalRow(fmt::format("other {}", others.size()), others);
  }
  totalRow("**total**", all);
  return out;
}

std::string devices(const Timeline& t, const std::vector<TypeRanks>& types) {
  std::string out = "## Devices\n\nTotals over each type's devices; idle is the share of their time spent waiting.\n\n";
  out += "| device type | devices | busy | computation | communication | idle | idle share |\n"
         "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const TypeRanks& type : types) {
    double busy = 0, comp = 0, comm = 0, idle = 0;
    for (size_t j : type.ranks) {
      const DeviceTimeline& d = t.devices[j];
      busy += d.busySeconds(), comp += d.computeSeconds, comm += d.communicationSeconds, idle += d.idleSeconds;
    }
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", type.type, type.ranks.size(), ms(busy), ms(comp),
                       ms(comm), ms(idle), percent(idle, t.totalSeconds * static_cast<double>(type.ranks.size())));
  }
  return out;
}

std::string memory(const Plan& p, const std::vector<TypeRanks>& types) {
  std::string out = "## Memory\n\nThe largest predicted use of a device of each type.\n\n"
                    "| device type | devices | memory | capacity | fits |\n|---|---:|---:|---:|---|\n";
  for (const TypeRanks& type : types) {
    double most = 0, capacity = 0;
    bool fits = true;
    for (size_t j : type.ranks) {
      const PlanDevice& d = p.devices[j];
      most = std::max(most, d.memoryBytes);
      capacity = std::max(capacity, d.capacityBytes);
      fits = fits && d.memoryBytes <= d.capacityBytes;
    }
    out += fmt::format("| {} | {} | {} | {} | {} |\n", type.type, type.ranks.size(), bytes(most), bytes(capacity),
                       fits ? "yes" : "**no**");
  }
  return out;
}

}  // namespace

std::string formatReport(const Plan& p, const Timeline& t) {
  const std::vector<TypeRanks> types = typesOf(p);
  std::string out = fmt::format("# Simulated iteration\n\nModel `{}` on cluster `{}` ({} devices), ratios {}, "
                                "segments {} ({}).\n\n",
                                p.modelPath, p.cluster.name, p.devices.size(), p.ratioPolicy, p.segmentation,
                                p.segments.size());
  out += summary(p, t) + "\n";
  out += segments(p, types) + "\n";
  out += stages(p, t) + "\n";
  out += devices(t, types) + "\n";
  out += memory(p, types);
  return out;
}

}  // namespace hap::plan
