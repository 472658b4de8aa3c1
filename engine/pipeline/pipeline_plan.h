// A pipelined plan (../shared/DESIGN.md §3 "Pipeline stages", docs/pipeline.md): the model cut at
// segment boundaries into stages, each with its device group and its own SPMD plan (plan::Plan,
// planned on the group at micro-batch shapes), run with `microBatches` micro-batches in the 1F1B
// schedule, priced by pipeline_cost.h. Serialised by pipeline_json.h inside a plan file of
// version kPipelinePlanVersion.
//
// Its figures are predictions of the cost model; readers of SPMD plans refuse it
// (PipelinePlanRefused), hap-worker's 1F1B trainer runs it (issue 34 item 2).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/pipeline/pipeline_cost.h"
#include "engine/plan/plan.h"

namespace hap::pipeline {

struct PipelineStage {
  int firstSegment = 0, endSegment = 0;  // [first, end) of PipelinePlan::segmentNames
  std::vector<int> ranks;                // the group: ranks of the whole cluster, ascending
  std::string group;                     // describeGroup(): "a, b (ranks 0-15, 16 devices)"
  // The stage's SPMD plan, on subCluster(cluster, ranks) (its ranks 0..k-1 are `ranks` in order),
  // for the stage graph (stage_graph.h) of the model imported at micro-batch shapes.
  plan::Plan plan;
  std::shared_ptr<const ir::Graph> graph;  // that stage graph (plan ids refer to it); may be null
                                           // in a plan read from a file (rebuild it: stageGraph)
  StageFigures figures;                  // from `plan`, per micro-batch
  std::vector<std::string> receives, sends;  // model value names crossing in and out
  double receivedBytes = 0, sentBytes = 0;   // per micro-batch
  std::vector<std::string> sharedParameters; // parameters another stage also reads
};

struct PipelinePlan {
  std::string schedule = "1f1b";
  int microBatches = 1;
  int64_t batch = 0;  // the global batch (dimension 0 of the inputs); micro-batch = batch / m
  // The model's segmentation the stages cut (per node of the model as imported at the global
  // batch; the same at micro-batch shapes), and its segments' names.
  std::string segmentation;
  std::vector<int> nodeSegment;
  std::vector<std::string> segmentNames;
  std::vector<PipelineStage> stages;
  std::vector<LinkFigures> links;  // stage s -> s + 1
  PipelineCost cost;
  // Why: the SPMD-only plan's predicted step on the whole cluster, and the choice made.
  double spmdSeconds = 0;
  bool spmdFits = true;
  std::string requested;  // "auto" or the stage count asked for
  std::string why;
  // The search (stage_partition.h).
  struct Candidate {
    int stages = 0, microBatches = 0;
    double stepSeconds = 0;  // as the search priced it (stage plans at --pipeline-ratios)
    bool fits = true;
    std::string note;
  };
  std::vector<Candidate> candidates;
  int stagePlansPriced = 0, cacheHits = 0, pruned = 0;
  double searchSeconds = 0;
};

}  // namespace hap::pipeline
