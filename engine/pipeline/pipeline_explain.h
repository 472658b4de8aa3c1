// The text `hap plan --pipeline ... --explain` prints for a pipeline (docs/pipeline.md): the
// stages with their segments, device groups, micro-batches, per-stage times, transfers, bubble and
// memory, and why: the SPMD-only plan's predicted step beside the pipelined one, and the
// candidates the search priced. Predictions of the cost model.
#pragma once

#include <string>

#include "engine/pipeline/pipeline_plan.h"

namespace hap::pipeline {

std::string formatPipelineExplain(const PipelinePlan& pipeline);
// One paragraph for the plan summary: "Pipeline: 2 stages x 8 micro-batches (1F1B), predicted
// step ... ms against ... ms for the SPMD-only plan".
std::string formatPipelineSummary(const PipelinePlan& pipeline);

}  // namespace hap::pipeline
