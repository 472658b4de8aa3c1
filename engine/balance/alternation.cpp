#include "engine/balance/alternation.h"

#include <functional>
#include <future>

#include "engine/balance/share_lp.h"
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

}  // namespace

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
    s.fits = fitsMemory(*s.table, s.program, options.cost);
    s.seconds = synth::iterationSeconds(*s.table, s.program);
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
  best.history.push_back({"search", best.seconds, best.fits});
  finished("search", best.seconds, best.fits, true);
  for (size_t i = 0; i < further.size(); ++i) {
    Searched s = further[i].get();  // rethrows the search's error (cancelled, no program)
    const std::string name = "search from " + options.moreStarts[i].name;
    best.history.push_back({name, s.seconds, s.fits});
    const bool adopted = better(s.fits, s.seconds, best.fits, best.seconds);
    finished(name, s.seconds, s.fits, adopted);
    if (adopted) adopt(std::move(s));
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
    const bool sameFits = fitsMemory(*table, same, options.cost);
    const double sameSeconds = synth::iterationSeconds(*table, same);
    best.history.push_back({"lp", sameSeconds, sameFits});
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
    const bool nextFits = fitsMemory(*best.table, next, options.cost);
    const double nextSeconds = synth::iterationSeconds(*best.table, next);
    best.history.push_back({"search", nextSeconds, nextFits});
    const bool searchBetter = better(nextFits, nextSeconds, best.fits, best.seconds);
    finished("search", nextSeconds, nextFits, searchBetter);
    if (!searchBetter) break;
    best.program = std::move(next);
    best.fits = nextFits;
    best.seconds = nextSeconds;
    best.stats = stats;
  }
  return best;
}

}  // namespace hap::balance
