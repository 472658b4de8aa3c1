// A* search for the cheapest distributed program (../shared/DESIGN.md §3, docs/synthesis.md).
//
// Search space. Nodes are computed in the reference graph's order (the cost of a program does not
// depend on the order of its computations), each once, under one of its variants; before a node,
// each input that lacks the form its variant needs obtains it by the cheapest conversion from a
// form it holds. A state is the position in the node order plus the forms held by every live
// value (a value is live from its producer, or a source's first use, to its last use): dead
// values are dropped and forms derivable locally (G and R from I) are folded into I, so states
// that can be completed the same way compare equal and are expanded once.
//
// Optimality. g is the cost so far; h is a lower bound on any completion, so the first complete
// state popped is optimal under the cost model; states whose cost improves are re-opened. h is
// the larger of two forest bounds (docs/synthesis.md): every value is charged to a group of its
// consumers and every node to at most one input (by fewest consumers, and by largest tensor);
// over each forest a dynamic programme prices the cheapest variants, each charged value's
// conversion costing its shortest distance (CostTable::distance) to the forms its group reads,
// from the forms the state holds; an input a node reads outside its group is priced back by
// Lagrangian multipliers (the reader pays λ for the form it reads, the value's group may declare
// a form for −λ; λ is set before the search by subgradient steps, and h stays a lower bound for
// any λ). A state from which some consumer cannot obtain any form it
// reads has h = ∞ and is dropped. Among equal f the deepest state is expanded first, then the
// oldest: the search is deterministic. A graph whose plateaus of near-equal states exceed the
// state budget gets a beam search instead, which returns the best program it finds and says it
// is not proven optimal.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/error.h"
#include "engine/synth/program.h"
#include "engine/synth/search_events.h"

namespace hap::synth {

// The search cannot return a program: no program exists, it was cancelled, or it hit its
// memory bound. The message says which and what to do.
class SearchError : public Error {
 public:
  using Error::Error;
};

// Pins a node's rule variant: every node whose module scope or op name matches `pattern` (a glob:
// `*` any run of characters, `?` one) and that has a variant named `variant` is computed under a
// variant of that name only; a later pin replaces an earlier one on the same node. For tests that
// need a particular program, and for engineers who know better than the cost model. A pin that
// selects no node is an error.
struct Pin {
  std::string pattern;
  std::string variant;
  // When set, this node only, whatever its scope or op (the Megatron baseline's blocks, found by
  // structure: plan/baselines.h); `pattern` then only names it in messages.
  ir::NodeId node = ir::kNone;
};
// Parses "PATTERN=VARIANT" (for --pin); throws hap::Error naming the text when malformed.
Pin parsePin(const std::string& text);
// Whether `text` matches the pin glob `pattern` (`*` any run of characters, `?` one).
bool globMatch(std::string_view pattern, std::string_view text);

struct SearchOptions {
  // A* stops after storing this many states (about 40 bytes each plus their forms). Then, when
  // beamWidth > 0, a beam search over the same states runs instead: each position keeps the
  // beamWidth states of lowest g + h. Its program is the best it finds, not proven optimal
  // (Program::provenOptimal is false); with beamWidth 0 the search fails with a SearchError.
  int64_t maxStates = 2'000'000;
  int beamWidth = 2000;
  const std::atomic<bool>* cancel = nullptr;  // set to true to stop with a SearchError
  bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
  // Throws SearchError("the search was cancelled") when cancelled(): every planning step checks
  // the flag through this, so a cancellation reads the same wherever it is noticed.
  void throwIfCancelled() const;
  SearchListener* listener = nullptr;  // search_events.h
  double progressIntervalSeconds = 0.1;
  std::vector<Pin> pins;
  // false: h = 0 (uniform-cost search), for tests that check the heuristic never overestimates.
  bool heuristic = true;
};

struct SearchStats {
  bool provenOptimal = true;  // false when the beam search produced the program
  std::string notOptimal;     // why not, when not: the budget A* exhausted and the beam's width
  int64_t expanded = 0;
  int64_t generated = 0;
  int64_t stored = 0;
  double seconds = 0;
};

Program search(const CostTable& table, const SearchOptions& options = {},
               SearchStats* stats = nullptr);

}  // namespace hap::synth
