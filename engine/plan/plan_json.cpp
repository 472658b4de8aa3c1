#include "engine/plan/plan_json.h"

#include <fmt/format.h>

#include <fstream>

#include "engine/cost/cluster_json.h"

namespace hap::plan {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

ojson formJson(const Form& f, const ir::Graph& g) {
  ojson j = {{"value", f.value}, {"name", g.value(f.value).name}, {"rel", synth::formatRel(f.rel)}};
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

synth::Rel parseRel(const std::string& text, const std::string& where) {
  if (text == "I") return synth::kIdentity;
  if (text == "R") return synth::kReduce;
  if (text == "I*") return synth::kIdentitySfb;
  int d = -1;
  if (text.size() > 3 && text.rfind("G(", 0) == 0 && text.back() == ')') {
    try {
      d = std::stoi(text.substr(2, text.size() - 3));
    } catch (const std::exception&) {
      d = -1;
    }
  }
  if (d < 0 || d > synth::kMaxShardedRank)
    throw PlanError(fmt::format("{}: '{}' is not a relation (I, R, I* or G(d))", where, text));
  return synth::gather(d);
}

ojson toJson(const Plan& p, const ir::Graph& g) {
  ojson doc;
  doc["format"] = "hap-plan";
  doc["version"] = 1;
  doc["model"] = {{"path", p.modelPath}, {"sha256", p.modelSha256}, {"inputs", p.inputs},
                  {"parameters", p.parameters}, {"nodes", p.nodes}};
  ojson devices = ojson::array();
  for (const PlanDevice& d : p.devices)
    devices.push_back({{"rank", d.rank}, {"machine", d.machine}, {"host", d.host}, {"type", d.type},
                       {"capacity_bytes", d.capacityBytes}, {"memory_bytes", d.memoryBytes},
                       {"compute_seconds", d.computeSeconds}});
  doc["cluster"] = {{"name", p.cluster.name}, {"source", p.cluster.source},
                    {"inventory", cost::clusterToJson(p.cluster)}, {"devices", devices}};
  doc["segments"] = ojson::array({{{"id", 0}, {"policy", p.ratioPolicy}, {"ratios", p.ratios}}});
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
    j["forward_seconds"] = s.forwardSeconds;
    j["backward_seconds"] = s.backwardSeconds;
    steps.push_back(std::move(j));
  }
  doc["program"] = std::move(steps);
  ojson stages = ojson::array();
  for (const Stage& s : p.stages)
    stages.push_back({{"first_step", s.firstStep}, {"end_step", s.endStep},
                      {"communication_seconds", s.communicationSeconds},
                      {"computation_seconds", s.computationSeconds}});
  doc["prediction"] = estimateJson(p.estimate);
  doc["prediction"]["stages"] = std::move(stages);
  doc["baselines"] = ojson::object();
  for (const Plan::Baseline& b : p.baselines) doc["baselines"][b.name] = estimateJson(b.estimate);
  doc["search"] = {{"proven_optimal", p.provenOptimal}, {"expanded", p.expanded}, {"generated", p.generated}, {"stored", p.stored},
                   {"seconds", p.searchSeconds}};
  ojson history = ojson::array();
  for (const Plan::HistoryEntry& h : p.history)
    history.push_back({{"step", h.step}, {"iteration_seconds", h.seconds}, {"fits", h.fits}});
  doc["balance"] = {{"history", history}, {"lp_solves", p.lpSolves}, {"lp_seconds", p.lpSeconds}};
  if (!p.balanceNote.empty()) doc["balance"]["note"] = p.balanceNote;
  return doc;
}

Plan planFromJson(const json& doc, const std::string& origin) {
  Reader r{origin};
  if (!doc.is_object() || doc.value("format", "") != "hap-plan")
    throw PlanError(origin + ": not a HAP plan (field 'format' must be \"hap-plan\")");
  if (doc.value("version", 0) != 1)
    throw PlanError(origin + ": field 'version' must be 1 (this HAP reads plan version 1)");
  Plan p;
  const json& model = r.at(doc, "model", "");
  p.modelPath = r.get<std::string>(model, "path", "model.");
  p.modelSha256 = r.get<std::string>(model, "sha256", "model.");
  p.inputs = r.get<std::vector<std::string>>(model, "inputs", "model.");
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
    p.devices.push_back({r.get<int>(d, "rank", path), r.get<std::string>(d, "machine", path),
                         r.get<std::string>(d, "host", path), r.get<std::string>(d, "type", path),
                         r.get<double>(d, "capacity_bytes", path), r.get<double>(d, "memory_bytes", path),
                         r.get<double>(d, "compute_seconds", path)});
  }
  const json& segments = r.at(doc, "segments", "");
  if (!segments.is_array() || segments.empty()) throw PlanError(origin + ": field 'segments' is empty");
  p.ratios = r.get<std::vector<double>>(segments[0], "ratios", "segments[0].");
  p.ratioPolicy = r.get<std::string>(segments[0], "policy", "segments[0].");
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
    s.forwardSeconds = r.get<double>(j, "forward_seconds", path);
    s.backwardSeconds = r.get<double>(j, "backward_seconds", path);
    p.steps.push_back(std::move(s));
  }
  const json& prediction = r.at(doc, "prediction", "");
  p.estimate = estimateFrom(r, prediction, "prediction.");
  if (prediction.contains("stages"))
    for (const json& s : prediction["stages"])
      p.stages.push_back({r.get<int>(s, "first_step", "prediction.stages[]."), r.get<int>(s, "end_step", "prediction.stages[]."),
                          r.get<double>(s, "communication_seconds", "prediction.stages[]."),
                          r.get<double>(s, "computation_seconds", "prediction.stages[].")});
  if (doc.contains("baselines"))
    for (const auto& [name, b] : doc["baselines"].items())
      p.baselines.push_back({name, estimateFrom(r, b, "baselines." + name + ".")});
  if (doc.contains("search")) {
    const json& s = doc["search"];
    p.provenOptimal = s.value("proven_optimal", true);
    p.expanded = s.value("expanded", int64_t{0});
    p.generated = s.value("generated", int64_t{0});
    p.stored = s.value("stored", int64_t{0});
    p.searchSeconds = s.value("seconds", 0.0);
  }
  if (doc.contains("balance")) {
    const json& b = doc["balance"];
    if (b.contains("history"))
      for (size_t i = 0; i < b["history"].size(); ++i) {
        const std::string path = fmt::format("balance.history[{}].", i);
        const json& h = b["history"][i];
        p.history.push_back({r.get<std::string>(h, "step", path), r.get<double>(h, "iteration_seconds", path),
                             r.get<bool>(h, "fits", path)});
      }
    p.lpSolves = b.value("lp_solves", 0);
    p.lpSeconds = b.value("lp_seconds", 0.0);
    p.balanceNote = b.value("note", "");
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
