#include "app/studio/core/models/plan_comparison.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

namespace hap::studio {
namespace {

PlanComparison::Totals totals(const PlanDocument& d) {
  return {d.p().estimate.iterationSeconds, d.p().estimate.maxMemoryBytes(), d.p().estimate.fits};
}

bool sameGraph(const PlanDocument& a, const PlanDocument& b) {
  if (!a.imported || !b.imported || a.imported->nodes.size() != b.imported->nodes.size()) return false;
  for (size_t i = 0; i < a.imported->nodes.size(); ++i)
    if (a.imported->nodes[i].op != b.imported->nodes[i].op) return false;
  return true;
}

// Per imported node: the index of its Compute step (-1 if none).
std::vector<int> computeSteps(const PlanDocument& d) {
  std::vector<int> out(d.imported->nodes.size(), -1);
  const auto& steps = d.p().steps;
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    if (steps[static_cast<size_t>(i)].kind != plan::PlanStep::Kind::Compute) continue;
    const ir::NodeId n = d.stepNode(i);
    if (n >= 0 && static_cast<size_t>(n) < out.size()) out[static_cast<size_t>(n)] = i;
  }
  return out;
}

// Per imported node: forward + backward seconds of its steps.
std::vector<double> nodeSeconds(const PlanDocument& d) {
  std::vector<double> out(d.imported->nodes.size(), 0.0);
  for (int i = 0; i < static_cast<int>(d.p().steps.size()); ++i) {
    const ir::NodeId n = d.stepNode(i);
    if (n >= 0 && static_cast<size_t>(n) < out.size()) out[static_cast<size_t>(n)] += d.p().steps[static_cast<size_t>(i)].seconds();
  }
  return out;
}

std::string shortOp(const std::string& op) {
  const size_t colon = op.find("::");
  return colon == std::string::npos ? op : op.substr(colon + 2);
}

void addNote(std::string& note, const std::string& text) { note += (note.empty() ? "" : " ") + text; }

}  // namespace

std::vector<ir::NodeId> PlanComparison::changedNodes() const {
  std::vector<ir::NodeId> out;
  out.reserve(nodes.size());
  for (const NodeChange& c : nodes) out.push_back(c.node);
  return out;
}

PlanComparison compare(const PlanDocument& a, const PlanDocument& b) {
  PlanComparison c;
  c.a = totals(a);
  c.b = totals(b);
  c.speedup = c.b.iterationSeconds > 0 ? c.a.iterationSeconds / c.b.iterationSeconds : 0;

  c.sameGraph = sameGraph(a, b);
  if (!c.sameGraph) {
    addNote(c.note, fmt::format("The plans are of different models ({} and {} nodes): only their totals compare.",
                                a.imported ? a.imported->nodes.size() : 0, b.imported ? b.imported->nodes.size() : 0));
    return c;
  }

  const std::vector<int> stepsA = computeSteps(a), stepsB = computeSteps(b);
  const std::vector<double> secondsA = nodeSeconds(a), secondsB = nodeSeconds(b);
  for (size_t n = 0; n < stepsA.size(); ++n) {
    if (stepsA[n] < 0 || stepsB[n] < 0) continue;
    const plan::PlanStep& sa = a.p().steps[static_cast<size_t>(stepsA[n])];
    const plan::PlanStep& sb = b.p().steps[static_cast<size_t>(stepsB[n])];
    if (sa.variant == sb.variant) continue;
    const ir::Node& node = a.imported->nodes[n];
    c.nodes.push_back({static_cast<ir::NodeId>(n), shortOp(node.op), node.scope, sa.variant, sb.variant,
                       secondsA[n], secondsB[n]});
  }

  const size_t devices = a.p().devices.size();
  c.sameDevices = devices == b.p().devices.size();
  if (!c.sameDevices) {
    addNote(c.note, fmt::format("The plans run on {} and {} devices: their ratios do not compare.", devices,
                                b.p().devices.size()));
    return c;
  }
  std::map<std::string, const plan::Segment*> segmentsB;
  for (const plan::Segment& s : b.p().segments) segmentsB.emplace(s.name, &s);
  int unmatched = 0;
  for (const plan::Segment& sa : a.p().segments) {
    auto it = segmentsB.find(sa.name);
    if (it == segmentsB.end()) {
      ++unmatched;
      continue;
    }
    const plan::Segment& sb = *it->second;
    segmentsB.erase(it);
    if (sa.ratios.size() != devices || sb.ratios.size() != devices) continue;
    PlanComparison::SegmentChange change;
    change.name = sa.name;
    change.ratiosA = sa.ratios;
    change.ratiosB = sb.ratios;
    change.shifts.resize(devices);
    for (size_t r = 0; r < devices; ++r) {
      change.shifts[r] = sb.ratios[r] - sa.ratios[r];
      if (std::abs(change.shifts[r]) > std::abs(change.largestShift)) {
        change.largestShift = change.shifts[r];
        change.rank = static_cast<int>(r);
      }
    }
    if (std::abs(change.largestShift) > PlanComparison::kRatioTolerance) c.segments.push_back(std::move(change));
  }
  if (unmatched > 0 || !segmentsB.empty())
    addNote(c.note, fmt::format("The segments differ (A: {}, {} segments; B: {}, {} segments): ratios compare only "
                                "between segments of the same name.",
                                a.p().segmentation, a.p().segments.size(), b.p().segmentation, b.p().segments.size()));
  return c;
}

}  // namespace hap::studio
