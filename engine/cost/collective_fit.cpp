#include "engine/cost/collective_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/cost/collective_cost.h"

namespace hap::cost {
namespace {

std::string describe(Collective c, std::string_view algorithm) {
  return algorithm.empty() ? std::string(collectiveName(c))
                           : fmt::format("{} ({})", collectiveName(c), algorithm);
}

// A candidate (α, 1/β) and its weighted squared relative error.
struct Candidate {
  double alpha = 0, inverseBeta = 0;
  double error = std::numeric_limits<double>::infinity();
};

struct Row {
  double steps, volume, seconds;
};

double relativeSquaredError(const std::vector<Row>& rows, double alpha, double inverseBeta) {
  double sum = 0;
  for (const Row& r : rows) {
    const double e = (alpha * r.steps + inverseBeta * r.volume - r.seconds) / r.seconds;
    sum += e * e;
  }
  return sum;
}

}  // namespace

CollectiveTerms collectiveTerms(Collective collective, std::string_view algorithm, int n, double bytes) {
  if (n < 2)
    throw FitError(fmt::format("{}: measured over {} rank(s); a collective fit needs 2 or more",
                               describe(collective, algorithm), n));
  const double dn = n;
  auto unknown = [&](const char* expected) {
    return FitError(fmt::format("{}: unknown algorithm '{}'; expected {}", collectiveName(collective), algorithm,
                                expected));
  };
  switch (collective) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
      if (algorithm == methodName(Method::Padded)) return {dn - 1, (dn - 1) * bytes / dn};
      if (algorithm == methodName(Method::Grouped)) return {dn * ceilLog2(n), bytes};
      throw unknown("'padded' or 'grouped'");
    case Collective::AllReduce:
      if (algorithm == allReduceAlgorithmName(AllReduceAlgorithm::Ring))
        return {2 * (dn - 1), 2 * (dn - 1) * bytes / dn};
      if (algorithm == allReduceAlgorithmName(AllReduceAlgorithm::Tree)) return {2.0 * ceilLog2(n), 2 * bytes};
      throw unknown("'ring' or 'tree'");
    case Collective::Broadcast:
      if (!algorithm.empty()) throw unknown("none ('')");
      return {static_cast<double>(ceilLog2(n)), bytes};
    case Collective::AllToAll:
      if (!algorithm.empty()) throw unknown("none ('')");
      return {dn - 1, (dn - 1) * bytes / (dn * dn)};
  }
  throw FitError("unknown collective");
}

CollectiveFit fitCollective(std::span<const CollectiveSample> samples, LinkClass linkClass) {
  if (samples.empty()) throw FitError("collective fit: no samples; measure the collective at 2 or more sizes");
  const CollectiveSample& first = samples.front();
  const std::string what = describe(first.collective, first.algorithm);
  std::vector<Row> rows;
  double smallest = std::numeric_limits<double>::infinity(), largest = 0;
  for (const CollectiveSample& s : samples) {
    if (s.collective != first.collective || s.algorithm != first.algorithm)
      throw FitError(fmt::format("{}: a sample of {} among its samples; fit each collective and algorithm on its own",
                                 what, describe(s.collective, s.algorithm)));
    if (s.ranks != first.ranks)
      throw FitError(fmt::format("{}: samples over {} and {} ranks; fit the samples of one rank count", what,
                                 first.ranks, s.ranks));
    if (!(s.seconds > 0) || !std::isfinite(s.seconds) || !(s.bytes > 0) || !std::isfinite(s.bytes))
      throw FitError(fmt::format("{}: the sample of {} bytes took {} s; bytes and seconds must be positive", what,
                                 s.bytes, s.seconds));
    const CollectiveTerms t = collectiveTerms(s.collective, s.algorithm, s.ranks, s.bytes);
    rows.push_back({t.steps, t.volume, s.seconds});
    smallest = std::min(smallest, s.bytes);
    largest = std::max(largest, s.bytes);
  }
  if (!(largest > smallest * (1 + 1e-9)))
    throw FitError(fmt::format("{}: all {} samples are of one size ({} bytes); latency and bandwidth need 2 or more "
                               "sizes, e.g. 4 KiB to 4 MiB",
                               what, samples.size(), smallest));

  // Weighted least squares: rows scaled by 1/seconds, target 1. Solved by Gram-Schmidt on the
  // two columns (steps/seconds, volume/seconds), which stays accurate when their scales differ
  // by many orders of magnitude.
  const size_t m = rows.size();
  std::vector<double> c1(m), c2(m);
  for (size_t i = 0; i < m; ++i) {
    c1[i] = rows[i].steps / rows[i].seconds;
    c2[i] = rows[i].volume / rows[i].seconds;
  }
  auto dot = [m](const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < m; ++i) s += a[i] * b[i];
    return s;
  };
  auto sumOf = [m](const std::vector<double>& a) {
    double s = 0;
    for (size_t i = 0; i < m; ++i) s += a[i];
    return s;
  };
  // Q = [q1 q2], R = [[r11 r12], [0 r22]].
  const double r11 = std::sqrt(dot(c1, c1));
  std::vector<double> q1(m), q2(m);
  for (size_t i = 0; i < m; ++i) q1[i] = c1[i] / r11;
  const double r12 = dot(q1, c2);
  for (size_t i = 0; i < m; ++i) q2[i] = c2[i] - r12 * q1[i];
  const double r22 = std::sqrt(dot(q2, q2));
  // With two distinct sizes and a fixed n the volume column is not a multiple of the steps
  // column; r22 vanishes only when it is (numerically), which the size check above rules out
  // for any sane sizes.
  if (!(r22 > 1e-12 * std::sqrt(dot(c2, c2))))
    throw FitError(fmt::format("{}: the sizes {} to {} bytes are too close to separate latency from bandwidth; "
                               "measure sizes further apart",
                               what, smallest, largest));
  for (size_t i = 0; i < m; ++i) q2[i] /= r22;
  const double z1 = sumOf(q1), z2 = sumOf(q2);  // Qᵀ·1
  Candidate best;
  {
    const double inverseBeta = z2 / r22;
    const double alpha = (z1 - r12 * inverseBeta) / r11;
    if (alpha >= 0 && inverseBeta >= 0) best = {alpha, inverseBeta, relativeSquaredError(rows, alpha, inverseBeta)};
  }
  if (!std::isfinite(best.error)) {
    // The unconstrained optimum breaks α ≥ 0 or 1/β ≥ 0: the constrained one lies on a bound.
    const double bandwidthOnly = sumOf(c2) / dot(c2, c2);  // α = 0
    const double latencyOnly = sumOf(c1) / dot(c1, c1);    // 1/β = 0
    const Candidate a{0, bandwidthOnly, relativeSquaredError(rows, 0, bandwidthOnly)};
    const Candidate b{latencyOnly, 0, relativeSquaredError(rows, latencyOnly, 0)};
    best = a.error <= b.error ? a : b;
  }

  CollectiveFit fit;
  fit.collective = first.collective;
  fit.algorithm = first.algorithm;
  fit.linkClass = linkClass;
  fit.link.latency = best.alpha;
  fit.link.bandwidth = best.inverseBeta > 0 ? 1 / best.inverseBeta : std::numeric_limits<double>::infinity();
  fit.ranks = first.ranks;
  fit.samples = static_cast<int>(m);
  fit.relativeResidual = std::sqrt(best.error / static_cast<double>(m));
  return fit;
}

}  // namespace hap::cost
