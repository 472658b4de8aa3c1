// A pipelined plan in the plan file (docs/formats.md "Plan file", docs/pipeline.md): the file of
// the SPMD-only plan of the whole cluster (plan_json.h, kept for its identity, cluster and as the
// comparison) with "version": kPipelinePlanVersion and a "pipeline" object holding the schedule,
// micro-batch count, the segmentation, per stage its segments, ranks, figures and its SPMD plan
// (a complete version-2 plan document of the stage graph on the stage's sub-cluster), the links,
// the predicted step and the search's statistics. Plans without pipeline stages keep version 2,
// so every plan written before reads as before.
//
// Readers of SPMD plans (plan::planFromJson, hence plan::readPlan and plan::openPlan: hap
// simulate, hap compare, the app) refuse such a file with PipelinePlanRefused naming what is
// missing; pipelineFromJson reads it (hap-worker's 1F1B trainer reads pipelined plans).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/pipeline/pipeline_plan.h"
#include "engine/plan/plan_json.h"

namespace hap::pipeline {

inline constexpr int kPipelinePlanVersion = 3;

// A plan file with pipeline stages, read by a consumer that cannot run one yet.
class PipelinePlanRefused : public plan::PlanError {
 public:
  using plan::PlanError::PlanError;
};

// Throws PipelinePlanRefused when `doc` holds a "pipeline": `origin` names the file, `consumer`
// what refuses it. Does nothing otherwise.
void refusePipeline(const nlohmann::json& doc, const std::string& origin);

// `spmd` and `imported`: the SPMD-only plan and its graph (plan::toJson); every stage's graph must
// be set (PipelineStage::graph). Throws plan::PlanError as plan::toJson does.
nlohmann::ordered_json pipelineToJson(const plan::Plan& spmd, const ir::Graph& imported, const PipelinePlan& pipeline);
void writePipelinePlan(const plan::Plan& spmd, const ir::Graph& imported, const PipelinePlan& pipeline,
                       const std::string& path);

// Reads a version-3 document: the SPMD plan into *spmd (if not null) and the pipeline (stage
// graphs null). Throws plan::PlanError naming the field.
PipelinePlan pipelineFromJson(const nlohmann::json& doc, const std::string& origin, plan::Plan* spmd = nullptr);
PipelinePlan readPipelinePlan(const std::string& path, plan::Plan* spmd = nullptr);

}  // namespace hap::pipeline
