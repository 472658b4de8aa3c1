#include "app/studio/core/jobs/search_event_throttle.h"

#include <fmt/format.h>

#include "engine/ir/segments.h"
#include "engine/synth/search.h"
#include "engine/synth/theory.h"

namespace hap::studio {

std::vector<std::string> SearchGraphNames::variantsByImportedNode(const std::vector<int>& partial,
                                                                  size_t importedNodes) const {
  std::vector<std::string> out(importedNodes);
  for (size_t n = 0; n < partial.size() && n < variants.size(); ++n) {
    const int32_t imported = importedNode[n];
    const int v = partial[n];
    if (imported < 0 || static_cast<size_t>(imported) >= importedNodes || v < 0 ||
        static_cast<size_t>(v) >= variants[n].size())
      continue;
    out[static_cast<size_t>(imported)] = variants[n][static_cast<size_t>(v)];
  }
  return out;
}

std::string SearchGraphNames::lastChoices(const std::vector<int>& partial, int count) const {
  std::string out;
  const size_t first = partial.size() > static_cast<size_t>(count) ? partial.size() - static_cast<size_t>(count) : 0;
  for (size_t n = first; n < partial.size() && n < variants.size(); ++n) {
    const int v = partial[n];
    if (v < 0 || static_cast<size_t>(v) >= variants[n].size()) continue;
    if (!out.empty()) out += ", ";
    out += ops[n] + ":" + variants[n][static_cast<size_t>(v)];
  }
  return first > 0 ? "…, " + out : out;
}

SearchEventThrottle::SearchEventThrottle(Options options) : options_(options) {}

double SearchEventThrottle::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

SearchSnapshot SearchEventThrottle::take() {
  SearchSnapshot s;
  std::lock_guard lock(mutex_);
  s.samples.swap(samples_);
  s.events.swap(events_);
  s.latest.swap(latest_);
  s.search = search_;
  s.names = names_;
  return s;
}

int64_t SearchEventThrottle::samplesRecorded() const {
  std::lock_guard lock(mutex_);
  return recorded_;
}

void SearchEventThrottle::addSample(const SearchSample& s) {
  ++recorded_;
  if (samples_.size() >= options_.maxPending) {
    // Drop every other waiting sample; the newest stays last.
    size_t kept = 0;
    for (size_t i = 0; i < samples_.size(); i += 2) samples_[kept++] = samples_[i];
    samples_.resize(kept);
  }
  samples_.push_back(s);
}

void SearchEventThrottle::onSearchStarted(const synth::Theory& theory) {
  // The names are copied here, on the planning thread, once per search: the GUI reads them later,
  // after the theory is gone.
  auto names = std::make_shared<SearchGraphNames>();
  const ir::Graph& g = theory.graph();
  names->variants.resize(g.nodes.size());
  names->importedNode = ir::originalNodes(g);
  names->ops.resize(g.nodes.size());
  for (const ir::Node& n : g.nodes) {
    const size_t i = static_cast<size_t>(n.id);
    for (const auto& v : theory.variants(n.id)) names->variants[i].push_back(v.name);
    names->ops[i] = n.op.rfind("aten::", 0) == 0 ? n.op.substr(6) : n.op;
  }
  lastOpen_ = {};  // the new search's first report carries its open states
  const double t = now();
  std::lock_guard lock(mutex_);
  ++search_;
  names_ = std::move(names);
  push(PlanningEvent::Kind::SearchStarted, t);
}

PlanningEvent& SearchEventThrottle::push(PlanningEvent::Kind kind, double seconds) {
  PlanningEvent& e = events_.emplace_back();
  e.kind = kind;
  e.seconds = seconds;
  e.search = search_;
  e.name = step_;
  return e;
}

int SearchEventThrottle::openStatesWanted() const {
  const auto since = std::chrono::steady_clock::now() - lastOpen_;
  return std::chrono::duration<double>(since).count() >= options_.openStatesSeconds ? options_.openStates : 0;
}

void SearchEventThrottle::onProgress(const synth::SearchProgress& progress) {
  if (!progress.open.empty()) lastOpen_ = std::chrono::steady_clock::now();
  const double t = now();
  std::lock_guard lock(mutex_);
  addSample({t, search_, progress.expanded, progress.frontier, progress.boundSeconds, progress.bestSeconds});
  latest_ = progress;
}

void SearchEventThrottle::onBeamFallback(const synth::BeamFallback& f) {
  const double t = now();
  std::lock_guard lock(mutex_);
  push(PlanningEvent::Kind::BeamFallback, t).text = fmt::format("A* stored its budget of {} states after expanding {} (at node {} of {}); the beam search "
                       "(width {}) takes over",
                       f.maxStates, f.expanded, f.depth, f.nodes, f.beamWidth);
}

void SearchEventThrottle::onSearchFinished(const synth::SearchStats& stats, const std::string& error) {
  const double t = now();
  std::lock_guard lock(mutex_);
  PlanningEvent& e = push(PlanningEvent::Kind::SearchFinished, t);
  e.text = error;
  e.expanded = stats.expanded;
  e.provenOptimal = stats.provenOptimal;
}

void SearchEventThrottle::onPlanningStep(const synth::PlanningStep& step) {
  const double t = now();
  std::lock_guard lock(mutex_);
  const bool started = step.kind == synth::PlanningStep::Kind::Started;
  if (started) step_ = step.name;
  PlanningEvent& e = push(started ? PlanningEvent::Kind::StepStarted : PlanningEvent::Kind::StepFinished, t);
  e.name = step.name;
  e.cost = step.seconds;
  e.fits = step.fits;
  e.adopted = step.adopted;
}

}  // namespace hap::studio
