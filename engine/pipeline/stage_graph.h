// The sub-problem of one pipeline stage (../shared/DESIGN.md §3 "Pipeline stages"): the nodes of
// a contiguous range of segments [first, end) of the model, as a graph that today's synthesis
// (Theory, A*, LP/MILP shares: plan::makePlan) plans on the stage's device group.
//
// Contract of the values that cross stages (docs/pipeline.md, "Boundary contract"):
// - A value produced by an earlier stage and read in this one is a *stage input*: an input of the
//   stage graph (kind Input, named "boundary.<name>"), loaded by the stage's program as any model
//   input is (load-shard: whole, I, or split, G(d), with the plan's exact lengths). The runtime
//   delivers it point to point from the sending group, each receiving rank getting the piece its
//   program loads; its gradient goes back the same way, to the form the sender holds it in (an I
//   form's gradient is summed over the receiving ranks first, as for any replicated input).
// - A value produced here and read by a later stage is a *stage output*. In a stage that does not
//   hold the loss, every floating-point stage output is read by a marker node `aten::sum` (one per
//   output, output name "pipeline.marker.<name>"), and the last marker is the stage graph's
//   loss: the graph is a valid training graph (ir::Graph::check) whose backward reaches every
//   output. The runtime does not compute the markers: it seeds backward with the gradients the
//   next stage sends back instead. Their cost (one reduction each) is priced: a small, honest
//   overestimate.
// - Model inputs (the batch, labels, masks) are read directly by every stage that uses them, at
//   the micro-batch's rows, never sent between stages; parameters, buffers and constants are
//   copied into every stage that reads them. A parameter read by two stages (tied weights) is held
//   by both, and its gradient summed between them once a step (StageGraph::sharedParameters).
// - The stage holding the model's loss keeps it as its loss; there the markers are not added.
//
// Gradients: the theory derives which values need a gradient from the parameters (synth::Theory),
// so the gradient of a stage input is not priced where no parameter of the stage precedes it (the
// first ops of a stage compute it in the runtime); a small underestimate, documented.
#pragma once

#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/ir/graph.h"

namespace hap::pipeline {

// A stage range that cannot form a stage (a value flows backwards across its boundary, or it
// sends nothing a gradient can flow through). The message says which value and segments.
class StageError : public Error {
 public:
  using Error::Error;
};

struct StageGraph {
  ir::Graph graph;                         // the stage's nodes in model order, then the markers
  int firstSegment = 0, endSegment = 0;    // [first, end) of the model's segmentation
  std::vector<int> nodeSegment;            // per stage node: its segment, renumbered from 0
  std::vector<ir::NodeId> originalNode;    // per stage node: the model's node (kNone: a marker)
  std::vector<ir::ValueId> inputsFrom;     // per boundary input (in graph.inputs order after the
  std::vector<ir::ValueId> boundaryInputs; //   model inputs): the model's value, and the stage's
  std::vector<ir::ValueId> outputs;        // the model's values a later stage reads, in id order
  std::vector<ir::ValueId> sharedParameters;  // model parameters also read by another stage
  bool holdsLoss = false;
  // Bytes of one micro-batch's boundary values: received (stage inputs) and sent (outputs).
  double receivedBytes() const;
  double sentBytes(const ir::Graph& model) const;
};

// The stage of segments [first, end) of `model` whose nodes lie in `nodeSegment` (per model node,
// segments numbered in model order). Throws StageError when a node of the range reads a value
// produced in a later segment, or when the range neither holds the loss nor sends a floating-point
// value (nothing for backward to reach).
StageGraph stageGraph(const ir::Graph& model, const std::vector<int>& nodeSegment, int first, int end);

// Per cut k in [0, segments]: whether the model can be split before segment k, i.e. no node of
// segments < k reads a value produced in segments >= k. Cuts 0 and `segments` are always valid.
std::vector<bool> validCuts(const ir::Graph& model, const std::vector<int>& nodeSegment, int segments);

// A key that is equal for two ranges whose stage graphs are the same up to names and scopes (ops,
// constants, shapes, dtypes and wiring): identical transformer layers share one stage plan.
std::string structuralKey(const StageGraph& stage);

}  // namespace hap::pipeline
