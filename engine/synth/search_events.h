// What the planner reports while it works (../shared/DESIGN.md §2: "search events → GUI/CLI
// progress"): the A* search's progress and its best open states, the fallback to the beam search,
// and the planning steps around the searches (the Q/B alternation's searches and LP solves, the
// baselines).
//
// Contract of SearchListener:
// - Every call comes from the thread that runs the plan (plan::makePlan's caller); searches that
//   run on threads of their own (the alternation's further starts) report nothing while they run,
//   only their result, as a planning step.
// - A call must return quickly: the search waits for it. A listener that draws hands the event to
//   its GUI thread and returns (the app's SearchEventThrottle).
// - onProgress comes at most once per progressIntervalSeconds() (by default
//   SearchOptions::progressIntervalSeconds) during a search, and once more when it completes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hap::synth {

class Theory;
struct SearchStats;

// One state waiting in the open set: the variants chosen for nodes 0..depth-1 of the searched
// graph (Theory::graph()), the cost so far and a lower bound on any completion.
struct OpenState {
  double g = 0, h = 0;
  double f() const { return g + h; }
  int depth = 0;
  std::vector<int> partial;  // variant index per node 0..depth-1
};

struct SearchProgress {
  int64_t expanded = 0;      // states expanded so far
  int64_t frontier = 0;      // states waiting to be expanded (the beam search: in its current layer)
  int64_t stored = 0;        // distinct states seen
  // The cheapest complete program generated so far (-1: none yet); its cost in the search's
  // objective, the sum of the steps' costs (CostTable), not the stage model.
  double bestSeconds = -1;
  double boundSeconds = 0;   // f of the state just expanded: a lower bound on the optimum (A*)
  double elapsedSeconds = 0;
  bool beam = false;         // reported by the beam search (boundSeconds: its best g + h, no bound)
  int depth = 0;             // nodes computed by the state just expanded
  int nodes = 0;             // nodes of the searched graph
  // The partial program of the state just expanded: the variant chosen for nodes 0..depth-1.
  std::vector<int> partial;
  // The best open states, lowest f first (ties: deepest), when the listener asks for them
  // (SearchListener::openStatesWanted); empty otherwise.
  std::vector<OpenState> open;
};

// A* stored its state budget without completing; the beam search takes over.
struct BeamFallback {
  int64_t maxStates = 0;   // SearchOptions::maxStates
  int64_t expanded = 0;    // by A* before it stopped
  int beamWidth = 0;
  int depth = 0;           // the deepest position A* reached
  int nodes = 0;
  double elapsedSeconds = 0;
};

// A step of planning around the searches, with the plan's predicted iteration time after it
// (the exact stage model) where the step produces one.
struct PlanningStep {
  enum class Kind { Started, Finished };
  Kind kind = Kind::Started;
  // "search" (ratios fixed: the start, or after an LP), "search from even" (a further start),
  // "lp" (program fixed), or "baseline dp-ev" and the like (pricing a baseline).
  std::string name;
  double seconds = -1;  // Finished: the plan's iteration time after the step (-1: none)
  bool fits = true;     // Finished: whether that plan fits every device's memory
  bool adopted = false; // Finished: the step improved the plan, which goes on from it
};

class SearchListener {
 public:
  virtual ~SearchListener() = default;
  // A search starts on `theory` (valid until the matching onSearchFinished): its graph's nodes
  // are those of the partial programs.
  virtual void onSearchStarted(const Theory& theory) { (void)theory; }
  virtual void onProgress(const SearchProgress& progress) { (void)progress; }
  // How many of the best open states each progress report should carry (0: none). Sampling
  // costs about O(k log k + k·depth) per report.
  virtual int openStatesWanted() const { return 0; }
  // How often progress should come, in seconds (negative: SearchOptions::progressIntervalSeconds).
  virtual double progressIntervalSeconds() const { return -1; }
  virtual void onBeamFallback(const BeamFallback& fallback) { (void)fallback; }
  // The search ended: with a program (stats filled), or without one (`error` says why: no
  // program, cancelled, out of budget).
  virtual void onSearchFinished(const SearchStats& stats, const std::string& error) {
    (void)stats;
    (void)error;
  }
  virtual void onPlanningStep(const PlanningStep& step) { (void)step; }
};

}  // namespace hap::synth
