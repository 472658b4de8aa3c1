// The pipeline cost model: one training step of S stages run with m micro-batches in the 1F1B
// schedule (docs/pipeline.md "Cost model"). Pure arithmetic over per-stage figures that come from
// each stage's SPMD plan at micro-batch shapes; nothing here runs anything.
//
// Schedule (1F1B, PipeDream-flush / Megatron): stage s (0-based) runs min(S - s, m) forward
// micro-batches, then alternates one backward and one forward until its forwards are done, then
// the remaining backwards. F(s, i) starts when stage s is free and F(s - 1, i) has ended and its
// activations have crossed the link (forward transfer time of link s - 1); B(s, i) when stage s
// is free and B(s + 1, i) has ended and its gradients have crossed back (B(S - 1, i) follows
// F(S - 1, i) on the last stage). The step is the exact recurrence over these events (links are
// delays: each direction of a link carries one transfer at a time, overlapped with computation),
// not the closed form; the closed form (m + S - 1) x the slowest stage's F + B, which equals
// the recurrence for equal stages and free links, is reported beside it (closedFormSeconds).
// After its last backward, stage s all-reduces its gradients once per step (gradientSeconds: what
// the SPMD plan's buckets leave exposed after backward), and the step ends when every stage has.
//
// Memory: stage s keeps the activations of min(S - s, m) micro-batches in flight (1F1B's bound),
// so each device needs  fixed + inFlight x activations  bytes, checked against its capacity.
#pragma once

#include <vector>

namespace hap::pipeline {

struct StageFigures {
  double forwardSeconds = 0, backwardSeconds = 0;  // one micro-batch, communication inside included
  double gradientSeconds = 0;                      // once a step, after the stage's last backward
  // Per device of the stage's group: bytes that do not grow with micro-batches in flight
  // (parameters, gradients, optimizer state, inputs/buffers/constants), the activations one
  // micro-batch keeps for backward, and the device's capacity.
  std::vector<double> fixedBytes, activationBytes, capacityBytes;
};

// The link from stage s to stage s + 1: one micro-batch's activations forward and their
// gradients backward.
struct LinkFigures {
  double forwardSeconds = 0, backwardSeconds = 0;
};

struct PipelineCost {
  double stepSeconds = 0;         // the 1F1B recurrence, gradient all-reduces included
  double pipelineSeconds = 0;     // the recurrence's end, before the all-reduces
  double closedFormSeconds = 0;   // (m + S - 1) x max_s (F_s + B_s), for comparison
  double steadySeconds = 0;       // m x the bottleneck: the step without fill and drain
  double bubbleSeconds = 0;       // pipelineSeconds - steadySeconds
  double bubbleFraction = 0;      // bubbleSeconds / pipelineSeconds
  int bottleneck = 0;             // the stage of the largest F + B, or the link s -> s + 1 ...
  bool bottleneckIsLink = false;  // ... where a link's transfer takes longer
  std::vector<double> stageEnd;   // per stage: its last backward's end
  std::vector<int> inFlight;      // per stage: micro-batches whose activations it keeps
  std::vector<double> memoryBytes;  // per stage: the fullest device's bytes
  bool fits = true;               // every device within its capacity
};

// Throws std::invalid_argument when stages is empty, links.size() != stages.size() - 1 or
// microBatches < 1.
PipelineCost pipelineCost(const std::vector<StageFigures>& stages, const std::vector<LinkFigures>& links,
                          int microBatches);

// The micro-batch order of stage s in 1F1B: +i for F(i), -(i + 1) for B(i).
std::vector<int> oneFOneBOrder(int stage, int stages, int microBatches);

}  // namespace hap::pipeline
