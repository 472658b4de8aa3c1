#include "engine/plan/plan_json.h"

#include <fmt/format.h>

#include <fstream>
#include <optional>

#include "engine/cost/cluster_json.h"

namespace hap::plan {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

ojson formJson(const Form& f, const ir::Graph& g) {
  ojson j = {{"value", f.value}, {"name", g.value(f.value).name}, {"rel", rules::formatRel(f.rel)}};
  if (!f.lengths.empty()) j["lengths"] = f.lengths;
  return j;
}

ojson estimateJson(const Estimate& e) {
  return {{"iteration_seconds", e.iterationSeconds}, {"memory_bytes", e.memoryBytes}, {"fits", e.fits}};
}

// Field access with messages that name the path.
struct Reader {
  std::string origin;
  const json& at(const json& j, const std::string& key, const std::string& path) const {
    if (!j.is_object() || !j.contains(key))
      throw PlanError(fmt::format("{}: missing field '{}{}'", origin, path, key));
    return j[key];
  }
  template <typename T>
  T get(const json& j, const std::string& key, const std::string& path) const {
    try {
      return at(j, key, path).get<T>();
    } catch (const json::type_error&) {
      throw PlanError(fmt::format("{}: field '{}{}' has the wrong type", origin, path, key));
    }
  }
};

Form formFrom(const Reader& r, const json& j, const std::string& path) {
  Form f;
  f.value = r.get<ir::ValueId>(j, "value", path);
  f.rel = parseRel(r.get<std::string>(j, "rel", path), r.origin + ": " + path + "rel");
  if (j.contains("lengths")) f.lengths = r.get<std::vector<int64_t>>(j, "lengths", path);
  return f;
}

Estimate estimateFrom(const Reader& r, const json& j, const std::string& path) {
  return {r.get<double>(j, "iteration_seconds", path), r.get<std::vector<double>>(j, "memory_bytes", path),
          r.get<bool>(j, "fits", path)};
}

}  // namespace

rules::Rel parseRel(const std::string& text, const std::string& where) {
  if (text == "I") return rules::kIdentity;
  if (text == "R") return rules::kReduce;
  if (text == "I*") return rules::kIdentitySfb;
  int d = -1;
  if (text.size() > 3 && text.rfind("G(", 0) == 0 && text.back() == ')') {
    try {
      d = std::stoi(text.substr(2, text.size() - 3));
    } catch (const std::exception&) {
      d = -1;
    }
  }
  if (d < 0 || d > rules::kMaxShardedRank)
    throw PlanError(fmt::format("{}: '{}' is not a relation (I, R, I* or G(d))", where, text));
  return rules::gather(d);
}

ojson toJson(const Plan& p, const ir::Graph& imported) {
  const ir::Graph g = planGraph(imported, p);
  ojson doc;
  doc["format"] = "hap-plan";
  doc["version"] = kPlanVersion;
  ojson inputs = ojson::array();
  for (const PlanInput& in : p.inputs) {
    ojson entry = {{"name", in.name}, {"dtype", ir::dtypeName(in.dtype)}, {"shape", in.shape}};
    if (in.low) entry["low"] = *in.low;
    if (in.high) entry["high"] = *in.high;
    inputs.push_back(std::move(entry));
  }
  doc["model"] = {{"path", p.modelPath}, {"sha256", p.modelSha256}, {"inputs", inputs},
                  {"parameters", p.parameters}, {"nodes", p.nodes}};
  ojson devices = ojson::array();
  for (const PlanDevice& d : p.devices)
    devices.push_back({{"rank", d.rank}, {"machine", d.machine}, {"host", d.host}, {"type", d.type},
                       {"capacity_bytes", d.capacityBytes}, {"memory_bytes", d.memoryBytes},
                       {"memory_breakdown",
                        {{"parameters", d.memory.parameters}, {"gradients", d.memory.gradients},
                         {"optimizer", d.memory.optimizer}, {"activations", d.memory.activations},
                         {"other", d.memory.other}}},
                       {"compute_seconds", d.computeSeconds}, {"group", d.group}});
  doc["cluster"] = {{"name", p.cluster.name}, {"source", p.cluster.source},
                    {"inventory", cost::clusterToJson(p.cluster)}, {"devices", devices}};
  ojson segments = ojson::array();
  for (size_t i = 0; i < p.segments.size(); ++i)
    segments.push_back({{"id", i}, {"name", p.segments[i].name}, {"ratios", p.segments[i].ratios}});
  doc["strategy"] = p.strategy;
  doc["ratios"] = {{"policy", p.ratioPolicy}, {"segmentation", p.segmentation}, {"segments", segments},
                   {"imported_node_segment", p.importedNodeSegment}};
  ojson steps = ojson::array();
  for (const PlanStep& s : p.steps) {
    ojson j;
    if (s.kind == PlanStep::Kind::Compute) {
      j = {{"kind", "compute"}, {"node", s.node}, {"op", g.node(s.node).op}, {"variant", s.variant}};
      if (s.sfb) j["sfb"] = true;
      j["inputs"] = ojson::array();
      for (const Form& f : s.inputs) j["inputs"].push_back(formJson(f, g));
      j["outputs"] = ojson::array();
      for (const Form& f : s.outputs) j["outputs"].push_back(formJson(f, g));
    } else {
      j = {{"kind", "convert"}, {"node", s.node}, {"instruction", s.instruction}};
      if (!s.method.empty()) j["method"] = s.method;
      j["from"] = formJson(s.from, g);
      j["to"] = formJson(s.to, g);
    }
    j["segment"] = s.segment;
    j["forward_seconds"] = s.forwardSeconds;
    j["backward_seconds"] = s.backwardSeconds;
    j["times"] = {{"forward_communication", s.forwardCommunication}, {"backward_communication", s.backwardCommunication},
                  {"forward_sync", s.forwardSync}, {"backward_sync", s.backwardSync},
                  {"forward_by_group", s.forwardByGroup}, {"backward_by_group", s.backwardByGroup}};
    if (s.gradientSeconds > 0) j["times"]["gradient"] = s.gradientSeconds;
    steps.push_back(std::move(j));
  }
  doc["program"] = std::move(steps);
  ojson stages = ojson::array();
  for (const Stage& s : p.stages)
    stages.push_back({{"pass", s.backward ? "backward" : "forward"}, {"first_step", s.firstStep}, {"end_step", s.endStep},
                      {"communication_seconds", s.communicationSeconds},
                      {"group_computation_seconds", s.groupComputation},
                      {"computation_seconds", s.computationSeconds}});
  if (p.replication.replicated()) {
    const Replication& r = p.replication;
    ojson cuts = ojson::array();
    for (const Replication::RandomCut& c : r.randomCuts) cuts.push_back({{"node", c.node}, {"dim", c.dim}});
    doc["replication"] = {{"machines", r.machines},        {"input_dims", r.inputDims},
                          {"random_cuts", cuts},            {"loss_weight", r.lossWeight},
                          {"loss_targets", r.lossTargets}, {"ignore_index", r.ignoreIndex},
                          {"all_reduce_seconds", r.allReduceSeconds}};
  }
  doc["prediction"] = estimateJson(p.estimate);
  doc["prediction"]["stages"] = std::move(stages);
  if (!p.gradientBuckets.empty()) {
    ojson buckets = ojson::array();
    for (const Plan::GradientBucket& b : p.gradientBuckets) buckets.push_back({{"steps", b.steps}, {"seconds", b.seconds}});
    doc["prediction"]["gradient_buckets"] = std::move(buckets);
    doc["prediction"]["exposed_gradient_seconds"] = p.exposedGradientSeconds;
  }
  doc["prediction"]["gradient_bucket_bytes"] = p.gradientBucketBytes;
  doc["baselines"] = ojson::object();
  for (const Plan::Baseline& b : p.baselines) {
    doc["baselines"][b.name] = estimateJson(b.estimate);
    doc["baselines"][b.name]["applicable"] = b.applicable;
    doc["baselines"][b.name]["note"] = b.note;
  }
  doc["search"] = {{"proven_optimal", p.provenOptimal}, {"expanded", p.expanded}, {"generated", p.generated}, {"stored", p.stored},
                   {"seconds", p.searchSeconds}};
  if (!p.notOptimal.empty()) doc["search"]["not_optimal"] = p.notOptimal;
  ojson history = ojson::array();
  for (const Plan::HistoryEntry& h : p.history) {
    history.push_back({{"step", h.step}, {"iteration_seconds", h.seconds}, {"fits", h.fits}});
    if (!h.note.empty()) history.back()["note"] = h.note;
  }
  doc["balance"] = {{"history", history}, {"lp_solves", p.lpSolves}, {"lp_seconds", p.lpSeconds}};
  if (p.milpSolves) {
    doc["balance"]["milp_solves"] = p.milpSolves;
    doc["balance"]["milp_seconds"] = p.milpSeconds;
  }
  if (!p.balanceNote.empty()) doc["balance"]["note"] = p.balanceNote;
  if (!p.choice.empty()) doc["choice"] = p.choice;
  ojson unsharded = ojson::array();
  for (const Plan::Replicated& u : p.unsharded)
    unsharded.push_back({{"node", u.node}, {"where", u.node != ir::kNone ? g.describe(u.node) : ""}, {"message", u.message}});
  doc["unsharded"] = std::move(unsharded);
  return doc;
}

Plan planFromJson(const json& doc, const std::string& origin) {
  Reader r{origin};
  if (!doc.is_object() || doc.value("format", "") != "hap-plan")
    throw PlanError(origin + ": not a HAP plan (field 'format' must be \"hap-plan\")");
  if (doc.value("version", 0) != kPlanVersion)
    throw PlanError(fmt::format("{}: field 'version' must be {} (this HAP reads plan version {}; re-plan older plans)",
                                origin, kPlanVersion, kPlanVersion));
  Plan p;
  const json& model = r.at(doc, "model", "");
  p.modelPath = r.get<std::string>(model, "path", "model.");
  p.modelSha256 = r.get<std::string>(model, "sha256", "model.");
  const json& inputs = r.at(model, "inputs", "model.");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string path = fmt::format("model.inputs[{}].", i);
    const std::string dtype = r.get<std::string>(inputs[i], "dtype", path);
    const std::optional<ir::DType> t = ir::parseDType(dtype);
    if (!t) throw PlanError(fmt::format("{}: field '{}dtype' is '{}', not a dtype (float32, int64, ...)", origin, path, dtype));
    PlanInput in;
    in.name = r.get<std::string>(inputs[i], "name", path);
    in.dtype = *t;
    in.shape = r.get<ir::Shape>(inputs[i], "shape", path);
    if (inputs[i].contains("low")) in.low = r.get<int64_t>(inputs[i], "low", path);
    if (inputs[i].contains("high")) in.high = r.get<int64_t>(inputs[i], "high", path);
    p.inputs.push_back(std::move(in));
  }
  p.parameters = r.get<int64_t>(model, "parameters", "model.");
  p.nodes = r.get<int>(model, "nodes", "model.");
  const json& cluster = r.at(doc, "cluster", "");
  try {
    p.cluster = cost::clusterFromJson(r.at(cluster, "inventory", "cluster."), origin + ": cluster.inventory");
  } catch (const cost::ClusterError& e) {
    throw PlanError(e.what());
  }
  p.cluster.source = r.get<std::string>(cluster, "source", "cluster.");
  const json& devices = r.at(cluster, "devices", "cluster.");
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string path = fmt::format("cluster.devices[{}].", i);
    const json& d = devices[i];
    synth::MemoryBreakdown memory;
    if (d.contains("memory_breakdown")) {  // absent in plans written before it was recorded
      const json& m = d["memory_breakdown"];
      const std::string at = path + "memory_breakdown.";
      memory = {r.get<double>(m, "parameters", at), r.get<double>(m, "gradients", at),
                r.get<double>(m, "optimizer", at), r.get<double>(m, "activations", at), r.get<double>(m, "other", at)};
    }
    p.devices.push_back({r.get<int>(d, "rank", path), r.get<std::string>(d, "machine", path),
                         r.get<std::string>(d, "host", path), r.get<std::string>(d, "type", path),
                         r.get<double>(d, "capacity_bytes", path), r.get<double>(d, "memory_bytes", path), memory,
                         r.get<double>(d, "compute_seconds", path), r.get<int>(d, "group", path)});
  }
  if (doc.contains("strategy")) p.strategy = r.get<std::string>(doc, "strategy", "");
  const json& ratios = r.at(doc, "ratios", "");
  p.ratioPolicy = r.get<std::string>(ratios, "policy", "ratios.");
  p.segmentation = r.get<std::string>(ratios, "segmentation", "ratios.");
  p.importedNodeSegment = r.get<std::vector<int>>(ratios, "imported_node_segment", "ratios.");
  const json& segments = r.at(ratios, "segments", "ratios.");
  if (!segments.is_array() || segments.empty()) throw PlanError(origin + ": field 'ratios.segments' is empty");
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string path = fmt::format("ratios.segments[{}].", i);
    p.segments.push_back({r.get<std::string>(segments[i], "name", path), r.get<std::vector<double>>(segments[i], "ratios", path)});
  }
  const json& program = r.at(doc, "program", "");
  for (size_t i = 0; i < program.size(); ++i) {
    const std::string path = fmt::format("program[{}].", i);
    const json& j = program[i];
    PlanStep s;
    s.node = r.get<ir::NodeId>(j, "node", path);
    const std::string kind = r.get<std::string>(j, "kind", path);
    if (kind == "compute") {
      s.kind = PlanStep::Kind::Compute;
      s.variant = r.get<std::string>(j, "variant", path);
      s.sfb = j.value("sfb", false);
      const json& ins = r.at(j, "inputs", path);
      for (size_t k = 0; k < ins.size(); ++k) s.inputs.push_back(formFrom(r, ins[k], fmt::format("{}inputs[{}].", path, k)));
      const json& outs = r.at(j, "outputs", path);
      for (size_t k = 0; k < outs.size(); ++k) s.outputs.push_back(formFrom(r, outs[k], fmt::format("{}outputs[{}].", path, k)));
    } else if (kind == "convert") {
      s.kind = PlanStep::Kind::Convert;
      s.instruction = r.get<std::string>(j, "instruction", path);
      s.method = j.value("method", "");
      s.from = formFrom(r, r.at(j, "from", path), path + "from.");
      s.to = formFrom(r, r.at(j, "to", path), path + "to.");
    } else {
      throw PlanError(fmt::format("{}: field '{}kind' must be \"compute\" or \"convert\"", origin, path));
    }
    s.segment = r.get<int>(j, "segment", path);
    s.forwardSeconds = r.get<double>(j, "forward_seconds", path);
    s.backwardSeconds = r.get<double>(j, "backward_seconds", path);
    const json& t = r.at(j, "times", path);
    s.forwardCommunication = r.get<double>(t, "forward_communication", path + "times.");
    s.backwardCommunication = r.get<double>(t, "backward_communication", path + "times.");
    s.forwardSync = r.get<bool>(t, "forward_sync", path + "times.");
    s.backwardSync = r.get<bool>(t, "backward_sync", path + "times.");
    s.forwardByGroup = r.get<std::vector<double>>(t, "forward_by_group", path + "times.");
    s.backwardByGroup = r.get<std::vector<double>>(t, "backward_by_group", path + "times.");
    if (t.contains("gradient")) {
      s.gradientSeconds = r.get<double>(t, "gradient", path + "times.");
      if (!(s.gradientSeconds >= 0 && s.gradientSeconds < 1e9))
        throw PlanError(fmt::format("{}: field '{}times.gradient' is {}; expected seconds in [0, 1e9)", origin, path,
                                    s.gradientSeconds));
    }
    p.steps.push_back(std::move(s));
  }
  if (doc.contains("replication")) {
    const json& j = doc["replication"];
    Replication& rep = p.replication;
    rep.machines = r.get<int>(j, "machines", "replication.");
    rep.inputDims = r.get<std::vector<int>>(j, "input_dims", "replication.");
    const json& cuts = r.at(j, "random_cuts", "replication.");
    for (size_t i = 0; i < cuts.size(); ++i) {
      const std::string path = fmt::format("replication.random_cuts[{}].", i);
      rep.randomCuts.push_back({r.get<ir::NodeId>(cuts[i], "node", path), r.get<int>(cuts[i], "dim", path)});
    }
    rep.lossWeight = r.get<double>(j, "loss_weight", "replication.");
    rep.lossTargets = r.get<std::string>(j, "loss_targets", "replication.");
    rep.ignoreIndex = r.get<int64_t>(j, "ignore_index", "replication.");
    rep.allReduceSeconds = r.get<double>(j, "all_reduce_seconds", "replication.");
    if (rep.machines < 2)
      throw PlanError(fmt::format("{}: field 'replication.machines' is {}; a replicated plan runs on 2 or more "
                                  "machines (leave the field out otherwise)",
                                  origin, rep.machines));
  }
  const json& prediction = r.at(doc, "prediction", "");
  p.estimate = estimateFrom(r, prediction, "prediction.");
  const json& stages = r.at(prediction, "stages", "prediction.");
  for (size_t i = 0; i < stages.size(); ++i) {
    const std::string path = fmt::format("prediction.stages[{}].", i);
    const json& s = stages[i];
    const std::string pass = r.get<std::string>(s, "pass", path);
    if (pass != "forward" && pass != "backward")
      throw PlanError(fmt::format("{}: field '{}pass' must be \"forward\" or \"backward\"", origin, path));
    p.stages.push_back({pass == "backward", r.get<int>(s, "first_step", path), r.get<int>(s, "end_step", path),
                        r.get<double>(s, "communication_seconds", path),
                        r.get<std::vector<double>>(s, "group_computation_seconds", path),
                        r.get<double>(s, "computation_seconds", path)});
  }
  if (prediction.contains("gradient_bucket_bytes")) {
    p.gradientBucketBytes = r.get<double>(prediction, "gradient_bucket_bytes", "prediction.");
    if (!(p.gradientBucketBytes >= 0 && p.gradientBucketBytes <= 1099511627776.0))
      throw PlanError(fmt::format("{}: field 'prediction.gradient_bucket_bytes' is {}; expected bytes in [0, 2^40]",
                                  origin, p.gradientBucketBytes));
  }
  if (prediction.contains("gradient_buckets")) {
    const json& buckets = prediction["gradient_buckets"];
    if (!buckets.is_array())
      throw PlanError(fmt::format("{}: field 'prediction.gradient_buckets' must be an array", origin));
    for (size_t i = 0; i < buckets.size(); ++i) {
      const std::string path = fmt::format("prediction.gradient_buckets[{}].", i);
      Plan::GradientBucket b{r.get<std::vector<int>>(buckets[i], "steps", path), r.get<double>(buckets[i], "seconds", path)};
      if (!(b.seconds >= 0 && b.seconds < 1e9))
        throw PlanError(fmt::format("{}: field '{}seconds' is {}; expected seconds in [0, 1e9)", origin, path, b.seconds));
      for (int step : b.steps)
        if (step < 0 || static_cast<size_t>(step) >= p.steps.size() || p.steps[static_cast<size_t>(step)].instruction != "replicate-parameter")
          throw PlanError(fmt::format("{}: field '{}steps' names step {}, which is not a replicate-parameter step of "
                                      "the program ({} steps)",
                                      origin, path, step, p.steps.size()));
      p.gradientBuckets.push_back(std::move(b));
    }
    p.exposedGradientSeconds = r.get<double>(prediction, "exposed_gradient_seconds", "prediction.");
    if (!(p.exposedGradientSeconds >= 0 && p.exposedGradientSeconds < 1e9))
      throw PlanError(fmt::format("{}: field 'prediction.exposed_gradient_seconds' is {}; expected seconds in [0, 1e9)",
                                  origin, p.exposedGradientSeconds));
  }
  if (doc.contains("baselines"))
    for (const auto& [name, b] : doc["baselines"].items())
      p.baselines.push_back({name, estimateFrom(r, b, "baselines." + name + "."), b.value("applicable", true),
                             b.value("note", "")});
  if (doc.contains("search")) {
    const json& s = doc["search"];
    p.provenOptimal = s.value("proven_optimal", true);
    p.expanded = s.value("expanded", int64_t{0});
    p.generated = s.value("generated", int64_t{0});
    p.stored = s.value("stored", int64_t{0});
    p.searchSeconds = s.value("seconds", 0.0);
    p.notOptimal = s.value("not_optimal", std::string());
  }
  if (doc.contains("balance")) {
    const json& b = doc["balance"];
    if (b.contains("history"))
      for (size_t i = 0; i < b["history"].size(); ++i) {
        const std::string path = fmt::format("balance.history[{}].", i);
        const json& h = b["history"][i];
        p.history.push_back({r.get<std::string>(h, "step", path), r.get<double>(h, "iteration_seconds", path),
                             r.get<bool>(h, "fits", path), h.value("note", "")});
      }
    p.lpSolves = b.value("lp_solves", 0);
    p.lpSeconds = b.value("lp_seconds", 0.0);
    p.milpSolves = b.value("milp_solves", 0);
    p.milpSeconds = b.value("milp_seconds", 0.0);
    p.balanceNote = b.value("note", "");
  }
  if (doc.contains("choice")) p.choice = r.get<std::string>(doc, "choice", "");
  if (doc.contains("unsharded"))
    for (size_t i = 0; i < doc["unsharded"].size(); ++i) {
      const std::string path = fmt::format("unsharded[{}].", i);
      p.unsharded.push_back({r.get<int>(doc["unsharded"][i], "node", path), r.get<std::string>(doc["unsharded"][i], "message", path)});
    }
  return p;
}

void writePlan(const Plan& plan, const ir::Graph& g, const std::string& path) {
  std::ofstream out(path);
  out << toJson(plan, g).dump(1) << "\n";
  if (!out.good()) throw PlanError(fmt::format("{}: cannot write the plan (check the folder exists)", path));
}

Plan readPlan(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw PlanError(fmt::format("{}: cannot open the plan file", path));
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    throw PlanError(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
  return planFromJson(doc, path);
}

}  // namespace hap::plan
