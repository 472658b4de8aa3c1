#include "engine/balance/alternation.h"

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
  // The further starts' searches run on threads of their own beside the first one (each has its
  // own cost table; the theory is read-only); only the first reports to the listener.
  struct Searched {
    std::unique_ptr<synth::CostTable> table;
    synth::Program program;
    synth::SearchStats stats;
  };
  synth::SearchOptions quiet = options.search;  // outlives the futures (their destructors wait)
  quiet.listener = nullptr;
  std::vector<std::future<Searched>> further;
  for (const Start& start : options.moreStarts)
    further.push_back(std::async(std::launch::async, [&theory, &cluster, &options, &quiet, shares = start.shares] {
      Searched s;
      s.table = std::make_unique<synth::CostTable>(theory, cluster, shares, options.cost);
      s.program = synth::search(*s.table, quiet, &s.stats);
      return s;
    }));

  AlternationResult best;
  best.table = std::make_unique<synth::CostTable>(theory, cluster, startShares, options.cost);
  best.program = synth::search(*best.table, options.search, &best.stats);
  best.fits = fitsMemory(*best.table, best.program, options.cost);
  best.seconds = synth::iterationSeconds(*best.table, best.program);
  best.history.push_back({"search", best.seconds, best.fits});
  for (size_t i = 0; i < further.size(); ++i) {
    Searched searched = further[i].get();  // rethrows the search's error (cancelled, no program)
    const Start& start = options.moreStarts[i];
    auto table = std::move(searched.table);
    synth::SearchStats stats = searched.stats;
    synth::Program program = std::move(searched.program);
    const bool fits = fitsMemory(*table, program, options.cost);
    const double seconds = synth::iterationSeconds(*table, program);
    best.history.push_back({"search from " + start.name, seconds, fits});
    if (!better(fits, seconds, best.fits, best.seconds)) continue;
    best.table = std::move(table);
    best.program = std::move(program);
    best.fits = fits;
    best.seconds = seconds;
    best.stats = stats;
  }
  for (int round = 0; round < options.maxRounds; ++round) {
    ShareLpResult lp;
    try {
      lp = optimiseShares(*best.table, best.program, options.cost);
    } catch (const InfeasibleError& e) {
      best.infeasible = e.what();
      break;
    }
    ++best.lpSolves;
    best.lpSeconds += lp.solveSeconds;
    auto table = std::make_unique<synth::CostTable>(theory, cluster, lp.shares, options.cost);
    synth::Program same = synth::buildProgram(*table, best.program.variantOf);
    const bool sameFits = fitsMemory(*table, same, options.cost);
    const double sameSeconds = synth::iterationSeconds(*table, same);
    best.history.push_back({"lp", sameSeconds, sameFits});
    if (!better(sameFits, sameSeconds, best.fits, best.seconds)) break;
    best.table = std::move(table);
    best.program = std::move(same);
    best.fits = sameFits;
    best.seconds = sameSeconds;

    synth::SearchStats stats;
    synth::Program next = synth::search(*best.table, options.search, &stats);
    const bool nextFits = fitsMemory(*best.table, next, options.cost);
    const double nextSeconds = synth::iterationSeconds(*best.table, next);
    best.history.push_back({"search", nextSeconds, nextFits});
    if (!better(nextFits, nextSeconds, best.fits, best.seconds)) break;
    best.program = std::move(next);
    best.fits = nextFits;
    best.seconds = nextSeconds;
    best.stats = stats;
  }
  return best;
}

}  // namespace hap::balance
