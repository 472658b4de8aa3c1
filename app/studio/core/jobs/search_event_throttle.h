// The planner's search events, handed from the planning thread to the GUI thread at a bounded
// rate (issue 18: "throttled so that a fast search is not slowed by drawing").
//
// The throttle is the engine's SearchListener (engine/synth/search_events.h). On the planning
// thread each callback only records under a mutex: progress samples into a bounded series, the
// latest progress (with its best open states) by replacement, rare events (search started and
// finished, beam fallback, planning steps) into a queue that is never dropped. The GUI thread
// takes what accumulated with take(), at most once per interval (PlanJob polls it with a timer), so
// the search never waits for drawing and the GUI never receives more than one update per interval.
//
// Invariants: every rare event is delivered exactly once, in order; the newest progress is always
// delivered by the next take(); samples waiting for take() are bounded (maxPending: beyond it every
// other waiting sample is dropped, the newest kept), so a GUI that stops taking costs bounded memory.
#pragma once

#include <QMetaType>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/synth/search_events.h"

namespace hap::studio {

// One sample of a search's progress, for the charts.
struct SearchSample {
  double seconds = 0;     // since planning started
  int search = 0;         // which search of the planning (0, 1, ...)
  int64_t expanded = 0;
  int64_t frontier = 0;
  double bound = 0;       // the best f-bound (A*) or the beam's best g + h
  double best = -1;       // the best complete cost so far (-1: none)
};

// What happened besides progress, in order.
struct PlanningEvent {
  enum class Kind { SearchStarted, SearchFinished, BeamFallback, StepStarted, StepFinished };
  Kind kind = Kind::SearchStarted;
  double seconds = 0;  // since planning started
  int search = 0;      // the search it belongs to (SearchStarted/Finished, BeamFallback)
  std::string name;    // the planning step ("search", "lp", "baseline dp-ev") or the search's step
  std::string text;    // a finished search's error ("" on success), a beam fallback's description
  double cost = -1;    // StepFinished: the plan's iteration time after the step (-1: none)
  bool fits = true, adopted = false;  // StepFinished
  int64_t expanded = 0;               // SearchFinished: states expanded
  bool provenOptimal = true;          // SearchFinished
};

// Variant names of a search's graph, to show an open state's partial program: per node of the
// searched graph (the plan graph, with reshards), its variants' names and the imported node it is
// (ir::kNone for a hap::reshard).
struct SearchGraphNames {
  std::vector<std::vector<std::string>> variants;
  std::vector<int32_t> importedNode;
  // The partial program `partial` (variant index per searched node 0..k-1) as a variant name per
  // imported node ("" where undecided), for `importedNodes` nodes.
  std::vector<std::string> variantsByImportedNode(const std::vector<int>& partial, size_t importedNodes) const;
  // The last `count` choices as "op:variant" text, newest last, for a table cell.
  std::string lastChoices(const std::vector<int>& partial, int count) const;
  std::vector<std::string> ops;  // per searched node, the op without "aten::"
};

struct SearchSnapshot {
  std::vector<SearchSample> samples;       // new since the last take(), oldest first
  std::vector<PlanningEvent> events;       // new since the last take(), in order
  std::optional<synth::SearchProgress> latest;  // the newest progress, if any arrived
  int search = 0;                          // the search `latest` belongs to
  std::shared_ptr<const SearchGraphNames> names;  // of that search's graph
  bool empty() const { return samples.empty() && events.empty() && !latest; }
};

class SearchEventThrottle : public synth::SearchListener {
 public:
  struct Options {
    int openStates = 20;  // best open states carried by a progress report
    // How often the search reports: often enough that a 30 ms search still draws a curve. The
    // open states (sampling them walks each state's partial program) come at most every
    // openStatesSeconds: at every report they cost BERT-MoE's search 5%.
    double progressSeconds = 0.01;
    double openStatesSeconds = 0.1;
    size_t maxPending = 4096;  // samples waiting for take()
  };
  SearchEventThrottle() : SearchEventThrottle(Options{}) {}
  explicit SearchEventThrottle(Options options);

  // GUI side: everything since the previous take().
  SearchSnapshot take();
  // Samples recorded since construction (delivered or not), for tests.
  int64_t samplesRecorded() const;

  // Planning thread (SearchListener).
  void onSearchStarted(const synth::Theory& theory) override;
  void onProgress(const synth::SearchProgress& progress) override;
  int openStatesWanted() const override;
  double progressIntervalSeconds() const override { return options_.progressSeconds; }
  void onBeamFallback(const synth::BeamFallback& fallback) override;
  void onSearchFinished(const synth::SearchStats& stats, const std::string& error) override;
  void onPlanningStep(const synth::PlanningStep& step) override;

 private:
  double now() const;
  void addSample(const SearchSample& s);
  // Appends an event of the running search and step (mutex_ held).
  PlanningEvent& push(PlanningEvent::Kind kind, double seconds);

  const Options options_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  mutable std::mutex mutex_;
  int search_ = -1;            // index of the running (or last) search
  std::string step_;           // the planning step running now
  std::shared_ptr<const SearchGraphNames> names_;
  // Pending for the next take():
  std::vector<SearchSample> samples_;
  std::vector<PlanningEvent> events_;
  std::optional<synth::SearchProgress> latest_;
  int64_t recorded_ = 0;
  // Planning thread only: when the last report carrying open states was recorded.
  std::chrono::steady_clock::time_point lastOpen_{};
};

}  // namespace hap::studio

Q_DECLARE_METATYPE(hap::studio::SearchSnapshot)
