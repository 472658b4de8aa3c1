#include "engine/cost/calibration.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <set>

namespace hap::cost {
namespace {

const TypeParameters kIdentity{};

const TypeParameters& paramsOf(const Calibration& c, const std::string& type) {
  const auto it = c.types.find(type);
  return it == c.types.end() ? kIdentity : it->second;
}

// Σ w · (predicted / measured − 1)² over the fit runs, plus a weak pull of every parameter
// towards the identity: λ · Σ w · Σ_params (ln x)². A parameter the runs cannot tell (the compute
// scale of a type that never bounds a stage) then stays at 1 instead of drifting to a bound, and
// one they can tell moves as if the pull were not there (λ is 1e-3 of a 1% error).
double stepObjective(const std::vector<const RunObservation*>& runs, const Calibration& c) {
  double j = 0, weight = 0;
  for (const RunObservation* r : runs) {
    const double e = predictStep(*r, c) / r->measuredStepSeconds - 1;
    j += std::max(1, r->measuredSteps) * e * e;
    weight += std::max(1, r->measuredSteps);
  }
  double prior = std::pow(std::log(c.gradientExposure), 2);
  for (const auto& [type, p] : c.types)
    prior += std::pow(std::log(p.computeScale), 2) + std::pow(std::log(p.collectiveSlowdown), 2);
  return j + 1e-7 * weight * prior;
}

// Minimises f over x in [lo, hi] (log-spaced grid, then golden section around the best point).
template <typename F>
double minimise1d(F f, double lo, double hi) {
  constexpr int kGrid = 48;
  const double a = std::log(lo), b = std::log(hi);
  int best = 0;
  double bestValue = INFINITY;
  for (int i = 0; i <= kGrid; ++i) {
    const double v = f(std::exp(a + (b - a) * i / kGrid));
    if (v < bestValue) bestValue = v, best = i;
  }
  double l = a + (b - a) * std::max(0, best - 1) / kGrid, h = a + (b - a) * std::min(kGrid, best + 1) / kGrid;
  const double g = (std::sqrt(5.0) - 1) / 2;
  double x1 = h - g * (h - l), x2 = l + g * (h - l);
  double f1 = f(std::exp(x1)), f2 = f(std::exp(x2));
  for (int it = 0; it < 60; ++it) {
    if (f1 < f2) h = x2, x2 = x1, f2 = f1, x1 = h - g * (h - l), f1 = f(std::exp(x1));
    else l = x1, x1 = x2, f1 = f2, x2 = l + g * (h - l), f2 = f(std::exp(x2));
  }
  const double x = std::exp((l + h) / 2);
  return f(x) <= bestValue ? x : std::exp(a + (b - a) * best / kGrid);
}

}  // namespace

double predictStep(const RunObservation& r, const Calibration& c) {
  double slowdown = 1;
  std::set<std::string> types;
  for (const StageObservation& s : r.stages)
    for (const auto& [t, seconds] : s.computeByType) types.insert(t);
  for (const std::string& t : types) slowdown = std::max(slowdown, paramsOf(c, t).collectiveSlowdown);
  double total = slowdown * (r.extraSeconds + c.gradientExposure * r.exposedGradientSeconds);
  for (const StageObservation& s : r.stages) {
    double slowest = 0;
    for (const auto& [t, seconds] : s.computeByType) slowest = std::max(slowest, paramsOf(c, t).computeScale * seconds);
    total += slowdown * (s.communicationSeconds - (1 - c.gradientExposure) * s.gradientSeconds) + slowest;
  }
  return total;
}

double predictMemory(const MemoryObservation& m, const Calibration& c) {
  const TypeParameters& p = paramsOf(c, m.type);
  return p.baseMemoryBytes + p.memoryScale * m.predictedBytes;
}

void compose(Profile& profile, const Calibration& c) {
  for (const auto& [type, t] : c.types) {
    DeviceProfile* d = nullptr;
    for (DeviceProfile& x : profile.devices)
      if (x.deviceType == type) d = &x;
    if (!d) {
      d = &profile.devices.emplace_back();
      d->deviceType = type;
    }
    d->baseMemoryBytes = t.baseMemoryBytes + t.memoryScale * d->baseMemoryBytes;
    d->memoryScale *= t.memoryScale;
    d->computeScale *= t.computeScale;
    d->collectiveSlowdown *= t.collectiveSlowdown;
  }
  profile.gradientExposure *= c.gradientExposure;
}

Calibration fit(const std::vector<RunObservation>& runs) {
  std::vector<const RunObservation*> used;
  std::set<std::string> types;
  for (const RunObservation& r : runs) {
    if (r.heldOut || !(r.measuredStepSeconds > 0)) continue;
    used.push_back(&r);
    for (const StageObservation& s : r.stages)
      for (const auto& [t, seconds] : s.computeByType) types.insert(t);
  }
  Calibration c;
  if (used.empty()) return c;
  for (const std::string& t : types) c.types[t] = TypeParameters{};

  // Step time: coordinate descent over every type's scale and slowdown until the objective
  // stops falling.
  // The exposure is identifiable only where some plan all-reduces gradients.
  bool gradients = false;
  for (const RunObservation* r : used) {
    gradients = gradients || r->exposedGradientSeconds > 0;
    for (const StageObservation& s : r->stages) gradients = gradients || s.gradientSeconds > 0;
  }
  double current = stepObjective(used, c);
  for (int sweep = 0; sweep < 40; ++sweep) {
    const double before = current;
    for (const std::string& t : types) {
      TypeParameters& p = c.types[t];
      // Each coordinate over its bounds, the others held.
      const struct {
        double TypeParameters::*field;
        double lo, hi;
      } coordinates[] = {{&TypeParameters::computeScale, 0.05, 20}, {&TypeParameters::collectiveSlowdown, 0.2, 20}};
      for (const auto& k : coordinates)
        p.*k.field = minimise1d(
            [&](double x) {
              p.*k.field = x;
              return stepObjective(used, c);
            },
            k.lo, k.hi);
    }
    if (gradients)
      c.gradientExposure = minimise1d(
          [&](double x) {
            c.gradientExposure = x;
            return stepObjective(used, c);
          },
          0.01, 2);
    current = stepObjective(used, c);
    if (before - current <= 1e-12 * std::max(1.0, before)) break;
  }

  // Memory: measured = base + scale · predicted, least squares per type over every rank.
  for (const std::string& t : types) {
    std::vector<double> x, y;
    for (const RunObservation* r : used)
      for (const MemoryObservation& m : r->memory)
        if (m.type == t && m.measuredPeakBytes > 0) x.push_back(m.predictedBytes), y.push_back(m.measuredPeakBytes);
    if (x.empty()) continue;
    const double n = static_cast<double>(x.size());
    double mx = 0, my = 0;
    for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < x.size(); ++i) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
    TypeParameters& p = c.types[t];
    // A slope needs predictions that differ by more than rounding; otherwise keep the model's
    // bytes as they are and fit the runtime's base alone.
    p.memoryScale = sxx > 1e-6 * std::max(1.0, mx * mx) * n ? std::clamp(sxy / sxx, 0.05, 20.0) : 1.0;
    p.baseMemoryBytes = std::max(0.0, my - p.memoryScale * mx);
  }
  return c;
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  assert(x.size() == y.size());
  const size_t n = x.size();
  if (n < 2) return 0;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= static_cast<double>(n), my /= static_cast<double>(n);
  double sxx = 0, syy = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i)
    sxx += (x[i] - mx) * (x[i] - mx), syy += (y[i] - my) * (y[i] - my), sxy += (x[i] - mx) * (y[i] - my);
  if (sxx <= 0 || syy <= 0) return 0;
  return sxy / std::sqrt(sxx * syy);
}

Accuracy accuracy(const std::vector<RunObservation>& runs, const Calibration& c,
                  const std::vector<std::string>& rankingKey) {
  assert(rankingKey.empty() || rankingKey.size() == runs.size());
  Accuracy a;
  std::vector<double> predicted, measured, memPredicted, memMeasured;
  for (const RunObservation& r : runs) {
    if (!(r.measuredStepSeconds > 0)) continue;
    ++a.runs;
    predicted.push_back(predictStep(r, c));
    measured.push_back(r.measuredStepSeconds);
    a.stepMape += std::abs(predicted.back() / measured.back() - 1);
    for (const MemoryObservation& m : r.memory) {
      if (!(m.measuredPeakBytes > 0)) continue;
      memPredicted.push_back(predictMemory(m, c));
      memMeasured.push_back(m.measuredPeakBytes);
      a.memoryMape += std::abs(memPredicted.back() / memMeasured.back() - 1);
    }
  }
  if (a.runs) a.stepMape /= a.runs;
  if (!memMeasured.empty()) a.memoryMape /= static_cast<double>(memMeasured.size());
  a.stepPearson = pearson(predicted, measured);
  a.memoryPearson = pearson(memPredicted, memMeasured);
  for (size_t i = 0; i < runs.size() && !rankingKey.empty(); ++i)
    for (size_t j = i + 1; j < runs.size(); ++j) {
      if (rankingKey[i].empty() || rankingKey[i] != rankingKey[j]) continue;
      if (!(runs[i].measuredStepSeconds > 0) || !(runs[j].measuredStepSeconds > 0)) continue;
      ++a.rankingPairs;
      const bool predictedFaster = predictStep(runs[i], c) < predictStep(runs[j], c);
      const bool measuredFaster = runs[i].measuredStepSeconds < runs[j].measuredStepSeconds;
      a.rankingRight += predictedFaster == measuredFaster;
    }
  return a;
}

}  // namespace hap::cost
