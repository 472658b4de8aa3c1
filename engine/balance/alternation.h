// Q/B alternation (../shared/DESIGN.md §2 data flow): search a program with the ratios fixed, then
// the ratios with the program fixed (share_lp.h), until neither strictly improves the plan; then,
// optionally, whole lengths by MILP (share_milp.h) alternating with the search the same way.
// After the first search, where the best program's gradient buckets leave less than 90% of
// their all-reduces exposed after backward, the search runs once more with replicated gradients
// priced at that share (synth::CostOptions::gradientSearchScale; history "search, gradients as
// exposed"), its program priced in full.
//
// Plans compare by (fits in memory, predicted iteration time under the exact stage model,
// synth/stages.h): a plan that fits beats one that does not. The search itself minimises its
// per-op upper bound of that time (synth/cost_table.h). Every candidate is priced by the cost
// table at its own ratios, so the emitted ratios belong to the emitted program and the result is
// never worse than the search at any start.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/balance/share_milp.h"
#include "engine/cost/cluster.h"
#include "engine/synth/cost_table.h"
#include "engine/synth/program.h"
#include "engine/synth/search.h"
#include "engine/synth/theory.h"

namespace hap::balance {

// Shares to start from besides alternate()'s own, named for the history ("even").
struct Start {
  std::string name;
  std::vector<double> shares;  // per device, summing to 1
};

struct AlternationOptions {
  int maxRounds = 10;  // LP + search pairs after the first search
  synth::CostOptions cost;
  synth::SearchOptions search;
  // The first search also runs at each of these shares (on a thread each, without the
  // listener), and the alternation goes on from the best start. The LP prices shares before their
  // rounding to whole lengths, so it can miss shares that round well (whole experts or heads per
  // device), such as even ones.
  std::vector<Start> moreStarts;
  // Whole lengths by MILP (share_milp.h) once the LP's rounds end: the program's lengths per
  // dimension class, priced exactly by a cost table cut by them (synth::ClassCut); then the
  // search at those lengths and the MILP again, until neither improves. The LP's own lengths
  // (its shares rounded as DimClasses::roundUnits rounds them) are priced the same way, and the
  // better of the two is kept, so the result is never worse than the LP's rounded shares; at
  // CBC's time limit the history says which was kept.
  bool wholeLengths = false;
  ShareMilpOptions milp;
};

struct HistoryEntry {
  std::string step;  // "search" (ratios fixed), "search from NAME" (a further start), "lp"
                     // (program fixed, fractional shares) or "milp" (program fixed, whole lengths)
  double seconds = 0;  // stage model
  bool fits = true;
  std::string note;    // "milp": how CBC ended ("optimal", "time limit: ...") and what was kept
};

struct AlternationResult {
  // The chosen shares (table->shares()); refers to the theory and cluster given to alternate().
  // Cut by whole lengths after MILP rounds; otherwise fractional, and executed(*table, program)
  // gives the table that prices what the ranks run.
  std::unique_ptr<synth::CostTable> table;
  const synth::Shares& shares() const { return table->shares(); }
  synth::Program program;
  double seconds = 0;        // the iteration time of `program` at the whole lengths it executes
  synth::SearchStats stats;  // of the search that produced `program`
  bool fits = true;
  std::vector<HistoryEntry> history;
  std::string infeasible;    // why the LP found no ratios that fit, when it did not
  int lpSolves = 0;
  double lpSeconds = 0;      // CLP time over all solves
  int milpSolves = 0;
  double milpSeconds = 0;    // CBC time over all solves
  bool milpTimeLimit = false;  // some MILP solve ended at CBC's time limit
};

AlternationResult alternate(const synth::Theory& theory, const cost::Cluster& cluster,
                            const std::vector<double>& startShares, const AlternationOptions& options);

// What the ranks execute of `program` found on `table` at fractional shares: the lengths a plan
// records (the shares rounded per dimension class, DimClasses::roundUnits) as a cut table
// (synth::ClassCut), and the program rebuilt and priced there. Empty (null table) when `table`
// already has whole lengths.
struct Executed {
  std::unique_ptr<synth::CostTable> table;
  synth::Program program;
};
Executed executed(const synth::CostTable& table, const synth::Program& program);

// Whether the program fits every device's memory at the table's shares.
bool fitsMemory(const synth::CostTable& table, const synth::Program& program,
                const synth::CostOptions& options);

}  // namespace hap::balance
