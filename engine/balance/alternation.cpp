#include "engine/balance/alternation.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <future>

#include "engine/balance/share_lp.h"
#include "engine/balance/share_milp.h"
#include "engine/base/error.h"
#include "engine/synth/memory.h"
#include "engine/synth/stages.h"

namespace hap::balance {
namespace {

// Strictly better: fits where the other does not, or as good on memory and cheaper by more than
// rounding.
bool better(bool fits, double seconds, bool bestFits, double bestSeconds) {
  if (fits != bestFits) return fits;
  return seconds < bestSeconds * (1 - 1e-9);
}

void wholeLengthRounds(const synth::Theory& theory, const cost::Cluster& cluster, const AlternationOptions& options,
                       AlternationResult& best);

std::vector<synth::ClassCut> classCuts(const std::vector<DimCut>& cuts) {
  std::vector<synth::ClassCut> out;
  for (const DimCut& c : cuts)
    if (c.dimClass >= 0 && c.units > 0) out.push_back({c.segment, c.dimClass, c.lengths});
  return out;
}

// A program found at fractional shares, priced at the whole lengths it executes (executed()).
struct Price {
  double seconds = 0;
  bool fits = true;
};
Price executedPrice(const synth::CostTable& table, const synth::Program& program, const synth::CostOptions& options) {
  const Executed e = executed(table, program);
  if (!e.table) return {synth::iterationSeconds(table, program), fitsMemory(table, program, options)};
  return {synth::iterationSeconds(*e.table, e.program), fitsMemory(*e.table, e.program, options)};
}

// Below this share of its gradient all-reduces left exposed, a program's search is repeated with
// them priced at that share.
constexpr double kSearchAgainBelow = 0.9;

// The share of the program's gradient buckets' all-reduce time left exposed after backward (1
// without buckets).
double exposedGradientShare(const synth::CostTable& table, const synth::Program& program) {
  const synth::StageModel m = synth::stageModel(table, program);
  const double total = m.gradientSeconds();
  return total > 0 ? m.exposedGradientSeconds / total : 1;
}

}  // namespace

Executed executed(const synth::CostTable& table, const synth::Program& program) {
  Executed e;
  if (!table.cuts().empty()) return e;
  synth::CostOptions options = table.options();
  options.restrictions = table.restrictions();
  e.table = std::make_unique<synth::CostTable>(table.theory(), table.cluster(), table.shares(), options,
                                               classCuts(roundedCuts(table, program, table.shares())));
  e.program = synth::buildProgram(*e.table, program.variantOf);
  return e;
}

bool fitsMemory(const synth::CostTable& table, const synth::Program& program,
                const synth::CostOptions& options) {
  const std::vector<double> memory = synth::deviceMemory(table, program, options);
  for (int j = 0; j < table.cluster().size(); ++j)
    if (memory[static_cast<size_t>(j)] > table.cluster().type(j).memoryBytes) return false;
  return true;
}

AlternationResult alternate(const synth::Theory& theory, const cost::Cluster& cluster,
                            const std::vector<double>& startShares, const AlternationOptions& options) {
  // The search at `shares`, priced.
  struct Searched {
    std::unique_ptr<synth::CostTable> table;
    synth::Program program;
    synth::SearchStats stats;
    bool fits = true;
    double seconds = 0;
  };
  synth::SearchListener* listener = options.search.listener;
  auto started = [&](const std::string& name) {
    if (listener) listener->onPlanningStep({synth::PlanningStep::Kind::Started, name});
  };
  auto finished = [&](const std::string& name, double seconds, bool fits, bool adopted) {
    if (listener) listener->onPlanningStep({synth::PlanningStep::Kind::Finished, name, seconds, fits, adopted});
  };
  auto searchAt = [&](const std::vector<double>& shares, const synth::SearchOptions& so) {
    Searched s;
    s.table = std::make_unique<synth::CostTable>(theory, cluster, shares, options.cost);
    s.program = synth::search(*s.table, so, &s.stats);
    const Price p = executedPrice(*s.table, s.program, options.cost);
    s.fits = p.fits;
    s.seconds = p.seconds;
    return s;
  };
  // The further starts' searches run on threads of their own beside the first one (each has its
  // own cost table; the theory is read-only); only the first reports to the listener.
  synth::SearchOptions quiet = options.search;  // outlives the futures (their destructors wait)
  quiet.listener = nullptr;
  std::vector<std::future<Searched>> further;
  for (const Start& start : options.moreStarts) {
    started("search from " + start.name);
    further.push_back(std::async(std::launch::async, searchAt, start.shares, std::cref(quiet)));
  }

  AlternationResult best;
  auto adopt = [&best](Searched&& s) {
    best.table = std::move(s.table);
    best.program = std::move(s.program);
    best.stats = s.stats;
    best.fits = s.fits;
    best.seconds = s.seconds;
  };
  started("search");
  adopt(searchAt(startShares, options.search));
  best.history.push_back({"search", best.seconds, best.fits, ""});
  finished("search", best.seconds, best.fits, true);
  for (size_t i = 0; i < further.size(); ++i) {
    Searched s = further[i].get();  // rethrows the search's error (cancelled, no program)
    const std::string name = "search from " + options.moreStarts[i].name;
    best.history.push_back({name, s.seconds, s.fits, ""});
    const bool adopted = better(s.fits, s.seconds, best.fits, best.seconds);
    finished(name, s.seconds, s.fits, adopted);
    if (adopted) adopt(std::move(s));
  }
  // The search adds every replicated gradient's all-reduce whole; the stage model pays only what
  // the gradient buckets leave exposed after backward. Search once more with those all-reduces
  // priced at the share the best program leaves exposed, price what it finds at full price, and
  // keep it if that is better.
  if (const double share = exposedGradientShare(*best.table, best.program); share < kSearchAgainBelow) {
    options.search.throwIfCancelled();
    const std::string name = "search, gradients as exposed";
    started(name);
    synth::CostOptions scaled = options.cost;
    scaled.gradientSearchScale = share;
    const synth::CostTable at(theory, cluster, best.table->shares(), scaled);
    synth::SearchStats stats;
    const synth::Program found = synth::search(at, options.search, &stats);
    synth::Program next = synth::buildProgram(*best.table, found.variantOf);
    const Price p = executedPrice(*best.table, next, options.cost);
    best.history.push_back({name, p.seconds, p.fits, fmt::format("gradients at {:.0f}%", share * 100)});
    const bool adopted = better(p.fits, p.seconds, best.fits, best.seconds);
    finished(name, p.seconds, p.fits, adopted);
    if (adopted) {
      best.program = std::move(next);
      best.fits = p.fits;
      best.seconds = p.seconds;
      best.stats = stats;
    }
  }
  for (int round = 0; round < options.maxRounds; ++round) {
    options.search.throwIfCancelled();  // the LP itself cannot be interrupted
    started("lp");
    ShareLpResult lp;
    try {
      lp = optimiseShares(*best.table, best.program, options.cost);
    } catch (const InfeasibleError& e) {
      best.infeasible = e.what();
      finished("lp", -1, false, false);
      break;
    }
    options.search.throwIfCancelled();
    ++best.lpSolves;
    best.lpSeconds += lp.solveSeconds;
    auto table = std::make_unique<synth::CostTable>(theory, cluster, lp.shares, options.cost);
    synth::Program same = synth::buildProgram(*table, best.program.variantOf);
    const Price samePrice = executedPrice(*table, same, options.cost);
    const bool sameFits = samePrice.fits;
    const double sameSeconds = samePrice.seconds;
    best.history.push_back({"lp", sameSeconds, sameFits, ""});
    const bool lpBetter = better(sameFits, sameSeconds, best.fits, best.seconds);
    finished("lp", sameSeconds, sameFits, lpBetter);
    if (!lpBetter) break;
    best.table = std::move(table);
    best.program = std::move(same);
    best.fits = sameFits;
    best.seconds = sameSeconds;

    started("search");
    synth::SearchStats stats;
    synth::Program next = synth::search(*best.table, options.search, &stats);
    const Price nextPrice = executedPrice(*best.table, next, options.cost);
    const bool nextFits = nextPrice.fits;
    const double nextSeconds = nextPrice.seconds;
    best.history.push_back({"search", nextSeconds, nextFits, ""});
    const bool searchBetter = better(nextFits, nextSeconds, best.fits, best.seconds);
    finished("search", nextSeconds, nextFits, searchBetter);
    if (!searchBetter) break;
    best.program = std::move(next);
    best.fits = nextFits;
    best.seconds = nextSeconds;
    best.stats = stats;
  }
  if (options.wholeLengths && best.infeasible.empty()) wholeLengthRounds(theory, cluster, options, best);
  return best;
}

namespace {

// The MILP rounds of AlternationOptions::wholeLengths, from the LP's plan in `best`.
void wholeLengthRounds(const synth::Theory& theory, const cost::Cluster& cluster, const AlternationOptions& options,
                       AlternationResult& best) {
  synth::SearchListener* listener = options.search.listener;
  auto started = [&](const std::string& name) {
    if (listener) listener->onPlanningStep({synth::PlanningStep::Kind::Started, name});
  };
  auto finished = [&](const std::string& name, double seconds, bool fits, bool adopted) {
    if (listener) listener->onPlanningStep({synth::PlanningStep::Kind::Finished, name, seconds, fits, adopted});
  };
  // `program` cut by `cuts`, priced exactly: rebuilt on a table whose classes take the cuts'
  // lengths (its conversions re-priced there).
  struct Priced {
    std::unique_ptr<synth::CostTable> table;
    synth::Program program;
    bool fits = true;
    double seconds = 0;
  };
  auto price = [&](const synth::Shares& shares, const std::vector<DimCut>& cuts, const synth::Program& program) {
    Priced p;
    p.table = std::make_unique<synth::CostTable>(theory, cluster, shares, options.cost, classCuts(cuts));
    p.program = synth::buildProgram(*p.table, program.variantOf);
    p.fits = fitsMemory(*p.table, p.program, options.cost);
    p.seconds = synth::iterationSeconds(*p.table, p.program);
    return p;
  };

  // Round 0 starts from the LP's plan, already priced at its rounded lengths (best.seconds), so
  // its choice, never above them, is adopted. Later rounds must improve on the round before.
  synth::Program program = best.program;
  synth::SearchStats stats = best.stats;
  for (int round = 0; round <= options.maxRounds; ++round) {
    options.search.throwIfCancelled();
    started("milp");
    const synth::CostTable& at = *best.table;
    // The shares rounded as DimClasses::roundUnits rounds them: the LP's own lengths (round 0),
    // and the fallback when CBC ends without a better solution.
    Priced rounded = price(at.shares(), roundedCuts(at, program, at.shares()), program);
    std::string note;
    Priced whole;
    try {
      const ShareMilpResult milp = optimiseLengths(at, program, options.cost, options.milp);
      ++best.milpSolves;
      best.milpSeconds += milp.solveSeconds;
      whole = price(milp.shares, milp.cuts, program);
      if (milp.status == ShareMilpResult::Status::TimeLimit) {
        best.milpTimeLimit = true;
        note = fmt::format("time limit ({:g} s): best whole lengths found, at most {:.2f}% above CBC's bound",
                           options.milp.timeLimitSeconds, 100 * (milp.seconds - milp.bound) / std::max(milp.bound, 1e-12));
      } else {
        note = "optimal";
      }
    } catch (const InfeasibleError& e) {
      best.infeasible = e.what();
      note = "no whole lengths fit";
    } catch (const Error& e) {  // CBC found no solution within its time limit
      best.milpTimeLimit = true;
      note = e.what();
    }
    options.search.throwIfCancelled();
    Priced* chosen = &rounded;
    if (whole.table && !better(rounded.fits, rounded.seconds, whole.fits, whole.seconds)) {
      chosen = &whole;
    } else {
      note += note.empty() ? "" : "; ";
      note += round == 0 ? "the LP's shares rounded kept" : "the shares rounded kept";
      if (whole.table) note += " (priced lower)";
    }
    const bool adopted = round == 0 || better(chosen->fits, chosen->seconds, best.fits, best.seconds);
    best.history.push_back({"milp", chosen->seconds, chosen->fits, note});
    finished("milp", chosen->seconds, chosen->fits, adopted);
    if (!adopted) break;
    best.table = std::move(chosen->table);
    best.program = std::move(chosen->program);
    best.stats = stats;
    best.fits = chosen->fits;
    best.seconds = chosen->seconds;
    if (round == options.maxRounds) break;

    // The search at these lengths. A program cutting a class the lengths do not cover is priced
    // there at its segment's shares; the next MILP gives it whole lengths too.
    started("search");
    synth::SearchStats nextStats;
    synth::Program next = synth::search(*best.table, options.search, &nextStats);
    const bool nextFits = fitsMemory(*best.table, next, options.cost);
    const double nextSeconds = synth::iterationSeconds(*best.table, next);
    best.history.push_back({"search", nextSeconds, nextFits, ""});
    const bool searchBetter = better(nextFits, nextSeconds, best.fits, best.seconds);
    finished("search", nextSeconds, nextFits, searchBetter);
    if (!searchBetter) break;
    program = std::move(next);
    stats = nextStats;
  }
}

}  // namespace

}  // namespace hap::balance
