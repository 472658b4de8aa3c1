#include "db/run_figures.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace hap::db {

RunFigures RunFigures::of(const std::vector<StepRecord>& steps) {
  RunFigures f;
  int64_t lastStep = std::numeric_limits<int64_t>::min(), lastLossStep = lastStep;
  double sum = 0;
  int n = 0;
  for (const StepRecord& s : steps) {  // by step, then rank
    if (s.step != lastStep) ++f.steps, lastStep = s.step;
    if (s.rank != 0) continue;
    if (!s.warmup && std::isfinite(s.seconds)) sum += s.seconds, ++n;
    if (s.step >= lastLossStep) f.finalLoss = s.loss, lastLossStep = s.step;
  }
  if (n > 0) f.meanStepSeconds = sum / n;
  return f;
}

std::vector<RankMeans> rankMeans(const std::vector<StepRecord>& steps) {
  std::map<int, std::vector<const StepRecord*>> byRank;
  for (const StepRecord& s : steps) byRank[s.rank].push_back(&s);
  std::vector<RankMeans> out;
  for (const auto& [rank, all] : byRank) {
    std::vector<const StepRecord*> measured;
    for (const StepRecord* s : all)
      if (!s->warmup) measured.push_back(s);
    if (measured.empty()) measured = all;
    RankMeans m;
    m.rank = rank;
    m.steps = static_cast<int>(measured.size());
    auto mean = [&](double StepRecord::*field) {
      double sum = 0;
      for (const StepRecord* s : measured) sum += s->*field;
      return sum / static_cast<double>(measured.size());
    };
    m.stepSeconds = mean(&StepRecord::seconds);
    m.computeSeconds = mean(&StepRecord::computeSeconds);
    m.communicationSeconds = mean(&StepRecord::communicationSeconds);
    for (const StepRecord* s : all)
      if (std::isfinite(s->peakMemoryBytes))
        m.peakMemoryBytes = std::isnan(m.peakMemoryBytes) ? s->peakMemoryBytes : std::max(m.peakMemoryBytes, s->peakMemoryBytes);
    out.push_back(m);
  }
  return out;
}

}  // namespace hap::db
