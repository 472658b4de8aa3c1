#include "engine/pipeline/pipeline_json.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace hap::pipeline {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

void refusePipeline(const json& doc, const std::string& origin) {
  if (!doc.is_object() || !doc.contains("pipeline")) return;
  const json& p = doc["pipeline"];
  const size_t stages = p.is_object() && p.contains("stages") && p["stages"].is_array() ? p["stages"].size() : 0;
  const std::string m = p.is_object() && p.contains("micro_batches") ? p["micro_batches"].dump() : "?";
  throw PipelinePlanRefused(fmt::format(
      "{}: this plan runs the model as {} pipeline stages with {} micro-batches (plan version {}, field '/pipeline'); "
      "this reader takes SPMD plans only: a pipelined plan is run by hap-worker's 1F1B trainer, and the simulator, "
      "hap compare and the app have no pipeline timeline yet (issue 34 item 3). Re-plan with --pipeline off to "
      "simulate or compare",
      origin, stages, m, kPipelinePlanVersion));
}

namespace {

ojson figuresJson(const StageFigures& f) {
  return {{"forward_seconds", f.forwardSeconds},   {"backward_seconds", f.backwardSeconds},
          {"gradient_seconds", f.gradientSeconds}, {"fixed_bytes", f.fixedBytes},
          {"activation_bytes", f.activationBytes}, {"capacity_bytes", f.capacityBytes}};
}

}  // namespace

ojson pipelineToJson(const plan::Plan& spmd, const ir::Graph& imported, const PipelinePlan& pp) {
  ojson doc = plan::toJson(spmd, imported);
  doc["version"] = kPipelinePlanVersion;
  ojson p;
  p["schedule"] = pp.schedule;
  p["micro_batches"] = pp.microBatches;
  p["batch"] = pp.batch;
  p["requested"] = pp.requested;
  p["segments"] = {{"segmentation", pp.segmentation}, {"names", pp.segmentNames}, {"node_segment", pp.nodeSegment}};
  const PipelineCost& c = pp.cost;
  p["predicted"] = {{"step_seconds", c.stepSeconds},
                    {"pipeline_seconds", c.pipelineSeconds},
                    {"closed_form_seconds", c.closedFormSeconds},
                    {"steady_seconds", c.steadySeconds},
                    {"bubble_seconds", c.bubbleSeconds},
                    {"bubble_fraction", c.bubbleFraction},
                    {"bottleneck", c.bottleneck},
                    {"bottleneck_is_link", c.bottleneckIsLink},
                    {"fits", c.fits},
                    {"spmd_seconds", pp.spmdSeconds},
                    {"spmd_fits", pp.spmdFits}};
  p["why"] = pp.why;
  ojson links = ojson::array();
  for (const LinkFigures& l : pp.links)
    links.push_back({{"forward_seconds", l.forwardSeconds}, {"backward_seconds", l.backwardSeconds}});
  p["links"] = links;
  ojson stages = ojson::array();
  for (size_t s = 0; s < pp.stages.size(); ++s) {
    const PipelineStage& st = pp.stages[s];
    if (!st.graph) throw plan::PlanError(fmt::format("pipeline stage {}: its stage graph is not set", s));
    ojson j;
    j["segments"] = {st.firstSegment, st.endSegment};
    j["ranks"] = st.ranks;
    j["group"] = st.group;
    j["receives"] = st.receives;
    j["sends"] = st.sends;
    j["received_bytes"] = st.receivedBytes;
    j["sent_bytes"] = st.sentBytes;
    j["shared_parameters"] = st.sharedParameters;
    j["figures"] = figuresJson(st.figures);
    j["in_flight"] = s < c.inFlight.size() ? c.inFlight[s] : 0;
    j["memory_bytes"] = s < c.memoryBytes.size() ? c.memoryBytes[s] : 0.0;
    j["plan"] = plan::toJson(st.plan, *st.graph);
    stages.push_back(std::move(j));
  }
  p["stages"] = stages;
  ojson cands = ojson::array();
  for (const PipelinePlan::Candidate& k : pp.candidates)
    cands.push_back({{"stages", k.stages},
                     {"micro_batches", k.microBatches},
                     {"step_seconds", std::isfinite(k.stepSeconds) ? k.stepSeconds : -1.0},
                     {"fits", k.fits},
                     {"note", k.note}});
  p["search"] = {{"candidates", cands},
                 {"stage_plans_priced", pp.stagePlansPriced},
                 {"cache_hits", pp.cacheHits},
                 {"pruned", pp.pruned},
                 {"seconds", pp.searchSeconds}};
  doc["pipeline"] = std::move(p);
  return doc;
}

void writePipelinePlan(const plan::Plan& spmd, const ir::Graph& imported, const PipelinePlan& pp,
                       const std::string& path) {
  std::string text;
  try {
    text = pipelineToJson(spmd, imported, pp).dump(1) + "\n";
  } catch (const plan::PlanError& e) {
    throw plan::PlanError(fmt::format("{}: cannot write the plan: {}", path, e.what()));
  }
  std::ofstream out(path);
  out << text;
  if (!out.good()) throw plan::PlanError(fmt::format("{}: cannot write the plan (check the folder exists)", path));
}

namespace {

// Reads with nlohmann's checked accessors; any mismatch becomes a PlanError naming the field.
template <typename T>
T get(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw plan::PlanError(fmt::format("{}/{}: field missing", where, key));
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw plan::PlanError(fmt::format("{}/{}: field is {}; expected another type", where, key,
                                      j.at(key).dump().substr(0, 40)));
  }
}

StageFigures figuresFrom(const json& j, const std::string& where) {
  StageFigures f;
  f.forwardSeconds = get<double>(j, "forward_seconds", where);
  f.backwardSeconds = get<double>(j, "backward_seconds", where);
  f.gradientSeconds = get<double>(j, "gradient_seconds", where);
  f.fixedBytes = get<std::vector<double>>(j, "fixed_bytes", where);
  f.activationBytes = get<std::vector<double>>(j, "activation_bytes", where);
  f.capacityBytes = get<std::vector<double>>(j, "capacity_bytes", where);
  if (f.activationBytes.size() != f.fixedBytes.size() || f.capacityBytes.size() != f.fixedBytes.size())
    throw plan::PlanError(fmt::format("{}: the figures' per-device lists differ in length", where));
  return f;
}

}  // namespace

namespace {
PipelinePlan readPipelineFields(const json& doc, const std::string& origin, plan::Plan* spmd) {
  if (!doc.is_object() || !doc.contains("pipeline") || !doc["pipeline"].is_object())
    throw plan::PlanError(fmt::format("{}: not a pipelined plan (no '/pipeline' object)", origin));
  const std::string root = origin + "#/pipeline";
  if (get<int>(doc, "version", origin + "#") != kPipelinePlanVersion)
    throw plan::PlanError(fmt::format("{}: a pipelined plan has version {}", origin, kPipelinePlanVersion));
  json plain = doc;
  plain.erase("pipeline");
  plain["version"] = plan::kPlanVersion;
  const plan::Plan top = plan::planFromJson(plain, origin);
  if (spmd) *spmd = top;
  const json& p = doc["pipeline"];
  PipelinePlan pp;
  pp.schedule = get<std::string>(p, "schedule", root);
  if (pp.schedule != "1f1b") throw plan::PlanError(fmt::format("{}: unknown schedule '{}'", root, pp.schedule));
  pp.microBatches = get<int>(p, "micro_batches", root);
  if (pp.microBatches < 1) throw plan::PlanError(fmt::format("{}/micro_batches: must be at least 1", root));
  pp.batch = get<int64_t>(p, "batch", root);
  pp.requested = get<std::string>(p, "requested", root);
  const json& segs = p.at("segments");
  pp.segmentation = get<std::string>(segs, "segmentation", root + "/segments");
  pp.segmentNames = get<std::vector<std::string>>(segs, "names", root + "/segments");
  pp.nodeSegment = get<std::vector<int>>(segs, "node_segment", root + "/segments");
  for (int k : pp.nodeSegment)
    if (k < 0 || k >= static_cast<int>(pp.segmentNames.size()))
      throw plan::PlanError(fmt::format("{}/segments/node_segment: segment {} of {}", root, k, pp.segmentNames.size()));
  const json& pred = p.at("predicted");
  pp.cost.stepSeconds = get<double>(pred, "step_seconds", root + "/predicted");
  pp.cost.pipelineSeconds = get<double>(pred, "pipeline_seconds", root + "/predicted");
  pp.cost.closedFormSeconds = get<double>(pred, "closed_form_seconds", root + "/predicted");
  pp.cost.steadySeconds = get<double>(pred, "steady_seconds", root + "/predicted");
  pp.cost.bubbleSeconds = get<double>(pred, "bubble_seconds", root + "/predicted");
  pp.cost.bubbleFraction = get<double>(pred, "bubble_fraction", root + "/predicted");
  pp.cost.bottleneck = get<int>(pred, "bottleneck", root + "/predicted");
  pp.cost.bottleneckIsLink = get<bool>(pred, "bottleneck_is_link", root + "/predicted");
  pp.cost.fits = get<bool>(pred, "fits", root + "/predicted");
  pp.spmdSeconds = get<double>(pred, "spmd_seconds", root + "/predicted");
  pp.spmdFits = get<bool>(pred, "spmd_fits", root + "/predicted");
  pp.why = get<std::string>(p, "why", root);
  for (const json& l : get<json>(p, "links", root))
    pp.links.push_back({get<double>(l, "forward_seconds", root + "/links"), get<double>(l, "backward_seconds", root + "/links")});
  const json stages = get<json>(p, "stages", root);
  if (!stages.is_array() || stages.size() < 2)
    throw plan::PlanError(fmt::format("{}/stages: expected at least 2 stages", root));
  if (pp.links.size() != stages.size() - 1)
    throw plan::PlanError(fmt::format("{}/links: {} links for {} stages", root, pp.links.size(), stages.size()));
  int expectFirst = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    const json& j = stages[s];
    const std::string where = fmt::format("{}/stages/{}", root, s);
    PipelineStage st;
    const std::vector<int> range = get<std::vector<int>>(j, "segments", where);
    if (range.size() != 2 || range[0] != expectFirst || range[1] <= range[0] ||
        range[1] > static_cast<int>(pp.segmentNames.size()))
      throw plan::PlanError(fmt::format("{}/segments: stages must cover the segments in order, once each", where));
    st.firstSegment = range[0];
    st.endSegment = expectFirst = range[1];
    st.ranks = get<std::vector<int>>(j, "ranks", where);
    for (int r : st.ranks)
      if (r < 0 || r >= top.cluster.size())
        throw plan::PlanError(fmt::format("{}/ranks: the cluster has no rank {}", where, r));
    st.group = get<std::string>(j, "group", where);
    st.receives = get<std::vector<std::string>>(j, "receives", where);
    st.sends = get<std::vector<std::string>>(j, "sends", where);
    st.receivedBytes = get<double>(j, "received_bytes", where);
    st.sentBytes = get<double>(j, "sent_bytes", where);
    st.sharedParameters = get<std::vector<std::string>>(j, "shared_parameters", where);
    st.figures = figuresFrom(get<json>(j, "figures", where), where + "/figures");
    pp.cost.inFlight.push_back(get<int>(j, "in_flight", where));
    pp.cost.memoryBytes.push_back(get<double>(j, "memory_bytes", where));
    st.plan = plan::planFromJson(get<json>(j, "plan", where), where + "/plan");
    if (st.plan.cluster.size() != static_cast<int>(st.ranks.size()))
      throw plan::PlanError(fmt::format("{}/plan: planned on {} devices, but the stage has {} ranks", where,
                                        st.plan.cluster.size(), st.ranks.size()));
    pp.stages.push_back(std::move(st));
  }
  if (expectFirst != static_cast<int>(pp.segmentNames.size()))
    throw plan::PlanError(fmt::format("{}/stages: the stages cover segments 0-{} of {}", root, expectFirst,
                                      pp.segmentNames.size()));
  const json& search = p.at("search");
  for (const json& k : get<json>(search, "candidates", root + "/search"))
    pp.candidates.push_back({get<int>(k, "stages", root), get<int>(k, "micro_batches", root),
                             get<double>(k, "step_seconds", root), get<bool>(k, "fits", root),
                             get<std::string>(k, "note", root)});
  pp.stagePlansPriced = get<int>(search, "stage_plans_priced", root + "/search");
  pp.cacheHits = get<int>(search, "cache_hits", root + "/search");
  pp.pruned = get<int>(search, "pruned", root + "/search");
  pp.searchSeconds = get<double>(search, "seconds", root + "/search");
  return pp;
}
}  // namespace

PipelinePlan pipelineFromJson(const json& doc, const std::string& origin, plan::Plan* spmd) {
  try {
    return readPipelineFields(doc, origin, spmd);
  } catch (const json::exception& e) {
    throw plan::PlanError(fmt::format("{}: unexpected content in '/pipeline' ({})", origin, e.what()));
  }
}

PipelinePlan readPipelinePlan(const std::string& path, plan::Plan* spmd) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw plan::PlanError(fmt::format("{}: cannot open the plan file", path));
  std::stringstream text;
  text << in.rdbuf();
  json doc;
  try {
    doc = json::parse(text.str());
  } catch (const json::exception& e) {
    throw plan::PlanError(fmt::format("{}: not JSON ({})", path, e.what()));
  }
  try {
    return pipelineFromJson(doc, path, spmd);
  } catch (const json::exception& e) {
    throw plan::PlanError(fmt::format("{}: unexpected content ({})", path, e.what()));
  }
}

}  // namespace hap::pipeline
