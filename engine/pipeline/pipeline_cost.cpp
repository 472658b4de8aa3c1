#include "engine/pipeline/pipeline_cost.h"

#include <algorithm>
#include <stdexcept>

namespace hap::pipeline {

std::vector<int> oneFOneBOrder(int stage, int stages, int microBatches) {
  std::vector<int> order;
  const int warm = std::min(stages - stage, microBatches);
  int f = 0, b = 0;
  for (; f < warm; ++f) order.push_back(f);
  while (b < microBatches) {
    order.push_back(-(b + 1));
    ++b;
    if (f < microBatches) order.push_back(f++);
  }
  return order;
}

PipelineCost pipelineCost(const std::vector<StageFigures>& stages, const std::vector<LinkFigures>& links,
                          int microBatches) {
  const int S = static_cast<int>(stages.size());
  const int m = microBatches;
  if (S < 1 || static_cast<int>(links.size()) != S - 1 || m < 1)
    throw std::invalid_argument("pipelineCost: one link between consecutive stages and m >= 1 required");
  auto at = [m](std::vector<double>& v, int s, int i) -> double& { return v[static_cast<size_t>(s * m + i)]; };
  const double unset = -1;
  std::vector<double> fEnd(static_cast<size_t>(S * m), unset), bEnd(static_cast<size_t>(S * m), unset);
  // Each link direction carries one transfer at a time: when it is next free.
  std::vector<double> fLinkFree(static_cast<size_t>(std::max(S - 1, 0)), 0), bLinkFree(fLinkFree);
  // Arrival times of each micro-batch's activations at s (from s - 1) and gradients at s (from s + 1).
  std::vector<double> fArrive(static_cast<size_t>(S * m), unset), bArrive(fArrive);
  std::vector<std::vector<int>> order(static_cast<size_t>(S));
  std::vector<size_t> next(static_cast<size_t>(S), 0);
  std::vector<double> free(static_cast<size_t>(S), 0);
  for (int s = 0; s < S; ++s) order[static_cast<size_t>(s)] = oneFOneBOrder(s, S, m);
  // Run every stage as far as its next operation's input has arrived, until all are done.
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < S; ++s) {
      const StageFigures& st = stages[static_cast<size_t>(s)];
      auto& ord = order[static_cast<size_t>(s)];
      size_t& k = next[static_cast<size_t>(s)];
      while (k < ord.size()) {
        const int op = ord[k];
        double ready = 0;
        if (op >= 0) {
          if (s > 0) {
            ready = at(fArrive, s, op);
            if (ready < 0) break;
          }
        } else {
          const int i = -op - 1;
          ready = s + 1 < S ? at(bArrive, s, i) : at(fEnd, s, i);
          if (ready < 0) break;
        }
        double& now = free[static_cast<size_t>(s)];
        const double start = std::max(now, ready);
        if (op >= 0) {
          now = at(fEnd, s, op) = start + st.forwardSeconds;
          if (s + 1 < S) {
            double& lf = fLinkFree[static_cast<size_t>(s)];
            lf = std::max(lf, now) + links[static_cast<size_t>(s)].forwardSeconds;
            at(fArrive, s + 1, op) = lf;
          }
        } else {
          const int i = -op - 1;
          now = at(bEnd, s, i) = start + st.backwardSeconds;
          if (s > 0) {
            double& lb = bLinkFree[static_cast<size_t>(s - 1)];
            lb = std::max(lb, now) + links[static_cast<size_t>(s - 1)].backwardSeconds;
            at(bArrive, s - 1, i) = lb;
          }
        }
        ++k;
        progress = true;
      }
    }
  }
  PipelineCost c;
  double bottleneckTime = 0;
  for (int s = 0; s < S; ++s) {
    const StageFigures& st = stages[static_cast<size_t>(s)];
    const double end = free[static_cast<size_t>(s)];
    c.stageEnd.push_back(end);
    c.pipelineSeconds = std::max(c.pipelineSeconds, end);
    c.stepSeconds = std::max(c.stepSeconds, end + st.gradientSeconds);
    const double t = st.forwardSeconds + st.backwardSeconds;
    if (t > bottleneckTime) {
      bottleneckTime = t;
      c.bottleneck = s;
    }
    const int inFlight = std::min(S - s, m);
    c.inFlight.push_back(inFlight);
    double most = 0;
    for (size_t j = 0; j < st.fixedBytes.size(); ++j) {
      const double bytes = st.fixedBytes[j] + inFlight * (j < st.activationBytes.size() ? st.activationBytes[j] : 0);
      most = std::max(most, bytes);
      if (j < st.capacityBytes.size() && bytes > st.capacityBytes[j]) c.fits = false;
    }
    c.memoryBytes.push_back(most);
  }
  double closedBottleneck = bottleneckTime;
  for (size_t l = 0; l < links.size(); ++l) {
    const double t = std::max(links[l].forwardSeconds, links[l].backwardSeconds);
    if (t > bottleneckTime) {
      bottleneckTime = t;
      c.bottleneck = static_cast<int>(l);
      c.bottleneckIsLink = true;
    }
  }
  c.closedFormSeconds = (m + S - 1) * closedBottleneck;
  c.steadySeconds = m * bottleneckTime;
  c.bubbleSeconds = std::max(0.0, c.pipelineSeconds - c.steadySeconds);
  c.bubbleFraction = c.pipelineSeconds > 0 ? c.bubbleSeconds / c.pipelineSeconds : 0;
  return c;
}

}  // namespace hap::pipeline
