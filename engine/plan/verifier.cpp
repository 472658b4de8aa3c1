#include "engine/plan/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>

#include "engine/ir/segments.h"
#include "engine/plan/plan_json.h"
#include "engine/rules/families.h"
#include "engine/rules/rule.h"

namespace hap::plan {
namespace {

using rules::Rel;

class Verifier {
 public:
  Verifier(ir::Graph g, const Plan& p, const ShapeFunction& shapes)
      : g_(std::move(g)), p_(p), shapes_(shapes), forms_(g_.values.size(), 0) {}

  std::vector<std::string> run();

 private:
  template <typename... A>
  void error(fmt::format_string<A...> f, A&&... a) {
    errors_.push_back(fmt::format(f, std::forward<A>(a)...));
  }
  bool validValue(ir::ValueId v) const { return v >= 0 && static_cast<size_t>(v) < g_.values.size(); }
  std::string name(ir::ValueId v) const { return validValue(v) ? "'" + g_.value(v).name + "'" : "#" + std::to_string(v); }
  void checkForm(const Form& f, const std::string& where);
  void checkConvert(const PlanStep& s, const std::string& where);
  void checkCompute(const PlanStep& s, const std::string& where);
  void checkReplication();
  void checkLocalShapes(const PlanStep& s, const std::string& where);

  const ir::Graph g_;  // the plan's graph (planGraph)
  const Plan& p_;
  const ShapeFunction& shapes_;
  // The shape function's answers by node and local input shapes (replicated ranks ask alike).
  std::map<std::pair<ir::NodeId, std::vector<ir::Shape>>, std::optional<std::vector<ir::Shape>>> computed_;
  std::vector<rules::FormMask> forms_;
  std::map<std::pair<ir::ValueId, Rel>, std::vector<int64_t>> lengths_;
  std::vector<std::string> errors_;
  ir::NodeId next_ = 0;
};

void Verifier::checkForm(const Form& f, const std::string& where) {
  if (!validValue(f.value)) return error("{}: value {} does not exist", where, f.value);
  const ir::Value& v = g_.value(f.value);
  if (!rules::isGather(f.rel)) {
    if (!f.lengths.empty()) error("{}: {} {} carries lengths", where, name(f.value), rules::formatRel(f.rel));
    return;
  }
  if (f.rel >= v.rank()) return error("{}: {} has rank {}, so {} is invalid", where, name(f.value), v.rank(), rules::formatRel(f.rel));
  if (f.lengths.size() != p_.devices.size())
    return error("{}: {} {} has {} lengths for {} ranks", where, name(f.value), rules::formatRel(f.rel), f.lengths.size(), p_.devices.size());
  int64_t sum = 0;
  for (int64_t l : f.lengths) {
    if (l < 0) error("{}: {} {} has a negative length", where, name(f.value), rules::formatRel(f.rel));
    sum += l;
  }
  const int64_t size = v.shape[static_cast<size_t>(f.rel)];
  if (sum != size)
    error("{}: the lengths of {} {} sum to {}, not the dimension's size {}", where, name(f.value), rules::formatRel(f.rel), sum, size);
  auto [it, fresh] = lengths_.try_emplace({f.value, f.rel}, f.lengths);
  if (!fresh && it->second != f.lengths)
    error("{}: {} {} has lengths that differ from its earlier use", where, name(f.value), rules::formatRel(f.rel));
}

void Verifier::checkConvert(const PlanStep& s, const std::string& where) {
  checkForm(s.from, where + " from");
  checkForm(s.to, where + " to");
  if (!validValue(s.to.value) || s.from.value != s.to.value)
    return error("{}: converts between different values", where);
  const ir::Value& v = g_.value(s.to.value);
  const Rel from = s.from.rel, to = s.to.rel;
  const bool source = v.kind != ir::ValueKind::Activation;
  const bool param = v.kind == ir::ValueKind::Parameter;
  const std::string& in = s.instruction;
  bool valid = false, load = false;
  if (in == "load") valid = load = source && !param && to == rules::kIdentity;
  else if (in == "load-shard") valid = load = source && rules::isGather(to);
  else if (in == "replicate-parameter") valid = load = param && to == rules::kIdentity;
  else if (in == "replicate-parameter-sfb") valid = load = param && to == rules::kIdentitySfb;
  else if (in == "all-gather") valid = rules::isGather(from) && to == rules::kIdentity;
  else if (in == "reduce-scatter") valid = from == rules::kReduce && rules::isGather(to);
  else if (in == "all-reduce") valid = from == rules::kReduce && to == rules::kIdentity;
  else if (in == "all-to-all") valid = rules::isGather(from) && rules::isGather(to) && from != to;
  else if (in == "slice") valid = from == rules::kIdentity && rules::isGather(to);
  else if (in == "replica-to-partial") valid = from == rules::kIdentity && to == rules::kReduce;
  else return error("{}: unknown instruction '{}'", where, in);
  if (!valid)
    return error("{}: {} cannot turn {} {} into {}", where, in, name(s.to.value), rules::formatRel(from), rules::formatRel(to));
  rules::FormMask& m = forms_[static_cast<size_t>(s.to.value)];
  if (!load && !rules::holds(m, from))
    error("{}: {} converts {} from {}, which it does not hold", where, in, name(s.to.value), rules::formatRel(from));
  m = rules::addForm(m, to);
}

// The variant of `variants` (a node's, rules::variantsFor) that compute step `s` runs: the one
// with its name, SFB flag and relations (names are descriptive and may repeat); null when none.
const rules::Variant* matchVariant(const std::vector<rules::Variant>& variants, const PlanStep& s) {
  const rules::Variant* match = nullptr;
  for (const rules::Variant& v : variants) {
    bool same = v.name == s.variant && v.sfb == s.sfb && v.inputs.size() == s.inputs.size() &&
                v.outputs.size() == s.outputs.size();
    for (size_t i = 0; i < s.inputs.size() && same; ++i) same = v.inputs[i] == s.inputs[i].rel;
    for (size_t o = 0; o < s.outputs.size() && same; ++o) same = v.outputs[o] == s.outputs[o].rel;
    if (same) match = &v;
  }
  return match;
}

void Verifier::checkCompute(const PlanStep& s, const std::string& where) {
  if (s.node != next_) return error("{}: computes node {} where node {} is next", where, s.node, next_);
  ++next_;
  const size_t before = errors_.size();  // the local shapes are checked on well-formed forms only
  const ir::Node& n = g_.node(s.node);
  const std::vector<ir::ValueId> ins = n.tensorInputs();
  if (s.inputs.size() != ins.size() || s.outputs.size() != n.outputs.size())
    return error("{}: {} has {} inputs and {} outputs, the plan lists {} and {}", where, g_.describe(n.id), ins.size(), n.outputs.size(), s.inputs.size(), s.outputs.size());
  const std::vector<rules::Variant> variants = rules::variantsFor(g_, n);
  const rules::Variant* match = matchVariant(variants, s);
  if (!match) {
    std::string forms;
    for (const Form& f : s.inputs) forms += " " + rules::formatRel(f.rel);
    forms += " ->";
    for (const Form& f : s.outputs) forms += " " + rules::formatRel(f.rel);
    return error("{}: {} has no variant '{}' with the forms{}", where, g_.describe(n.id), s.variant, forms);
  }
  std::vector<const Form*> gathered;
  for (size_t i = 0; i < ins.size(); ++i) {
    const Form& f = s.inputs[i];
    checkForm(f, fmt::format("{} input {}", where, i));
    if (f.value != ins[i] || f.rel != match->inputs[i])
      error("{}: input {} of {} must be {} {} under '{}'", where, i, g_.describe(n.id), name(ins[i]), rules::formatRel(match->inputs[i]), s.variant);
    else if (!rules::holds(forms_[static_cast<size_t>(f.value)], f.rel))
      error("{}: {} needs {} {}, which the program does not hold there", where, g_.describe(n.id), name(f.value), rules::formatRel(f.rel));
    if (rules::isGather(f.rel)) gathered.push_back(&f);
  }
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const Form& f = s.outputs[o];
    checkForm(f, fmt::format("{} output {}", where, o));
    if (f.value != n.outputs[o] || f.rel != match->outputs[o])
      error("{}: output {} of {} must be {} {} under '{}'", where, o, g_.describe(n.id), name(n.outputs[o]), rules::formatRel(match->outputs[o]), s.variant);
    else
      forms_[static_cast<size_t>(f.value)] = rules::addForm(0, f.rel);
    if (rules::isGather(f.rel)) gathered.push_back(&f);
  }
  if (shapes_ && match->execution == rules::Execution::Plain && !s.sfb && n.op != ir::kReshardOp &&
      errors_.size() == before)
    checkLocalShapes(s, where);
  // Linked dimensions are cut at the same relative positions: l_a[j] / L_a == l_b[j] / L_b. A
  // reshard's input and output lie in different segments and are cut by their own ratios.
  if (n.op == ir::kReshardOp) return;
  for (size_t i = 1; i < gathered.size(); ++i) {
    const Form& a = *gathered[0];
    const Form& b = *gathered[i];
    if (a.lengths.size() != b.lengths.size() || a.lengths.empty()) continue;
    const int64_t la = g_.value(a.value).shape[static_cast<size_t>(a.rel)];
    const int64_t lb = g_.value(b.value).shape[static_cast<size_t>(b.rel)];
    for (size_t j = 0; j < a.lengths.size(); ++j)
      if (a.lengths[j] * lb != b.lengths[j] * la) {
        error("{}: {} {} and {} {} are not split alike on rank {}", where, name(a.value), rules::formatRel(a.rel), name(b.value), rules::formatRel(b.rel), j);
        break;
      }
  }
}

// The local shapes of plain compute step `s` on every rank against the op's own (shapes_). Called
// once the step's forms are known to be well formed (one length per rank, valid dimensions).
void Verifier::checkLocalShapes(const PlanStep& s, const std::string& where) {
  const ir::Node& n = g_.node(s.node);
  auto local = [&](const Form& f, size_t rank) {
    ir::Shape shape = g_.value(f.value).shape;
    if (rules::isGather(f.rel)) shape[static_cast<size_t>(f.rel)] = f.lengths[rank];
    return shape;
  };
  for (size_t rank = 0; rank < p_.devices.size(); ++rank) {
    std::vector<ir::Shape> in, out;
    bool empty = false;
    for (const Form& f : s.inputs) empty = empty || ir::numel(in.emplace_back(local(f, rank))) == 0;
    for (const Form& f : s.outputs) empty = empty || ir::numel(out.emplace_back(local(f, rank))) == 0;
    if (empty) continue;
    auto [it, fresh] = computed_.try_emplace({n.id, in});
    if (fresh) it->second = shapes_(g_, n, in);
    const std::optional<std::vector<ir::Shape>>& got = it->second;
    if (!got) continue;  // the shape function cannot tell (the runtime will)
    if (got->size() != out.size()) {
      error("{}: {} on rank {} computes {} outputs, the plan lists {}", where, g_.describe(n.id), rank, got->size(),
            out.size());
      return;
    }
    for (size_t k = 0; k < out.size(); ++k)
      if ((*got)[k] != out[k]) {
        error("{}: {} on rank {}: output {} {} has local shape {} by the op's own shape function (LibTorch), the "
              "plan says {}; the importer inferred this node's shapes wrongly or its rule's relations do not hold "
              "(`hap inspect --verify-shapes` checks the model's)",
              where, g_.describe(n.id), rank, k, name(n.outputs[k]), ir::formatShape((*got)[k]),
              ir::formatShape(out[k]));
        return;
      }
  }
}

// A replicated plan: the cluster is `machines` machines of the program's ranks each, every input
// and random op has a valid batch dimension (one cut per input: the program's own cut of an
// input, if any, is along the same dimension), and the loss weight is a fraction.
void Verifier::checkReplication() {
  const Replication& r = p_.replication;
  const cost::Cluster& c = p_.cluster;
  const int k = static_cast<int>(p_.devices.size());
  bool grid = static_cast<int>(c.machines.size()) == r.machines && c.size() == r.machines * k;
  for (const cost::Machine& m : c.machines) grid = grid && m.count == k;
  if (!grid)
    error("replication: the cluster has {} devices on {} machines, not {} machines of the program's {} ranks", c.size(),
          c.machines.size(), r.machines, k);
  if (r.inputDims.size() != g_.inputs.size())
    return error("replication: {} input dimensions for the model's {} inputs", r.inputDims.size(), g_.inputs.size());
  for (size_t i = 0; i < g_.inputs.size(); ++i) {
    const int d = r.inputDims[i];
    if (d < -1 || d >= g_.value(g_.inputs[i]).rank())
      error("replication: input {} is split across machines along dimension {}, which it does not have",
            name(g_.inputs[i]), d);
  }
  for (const PlanStep& s : p_.steps) {
    if (s.kind != PlanStep::Kind::Convert || !rules::isGather(s.to.rel) || !validValue(s.to.value)) continue;
    const auto at = std::find(g_.inputs.begin(), g_.inputs.end(), s.to.value);
    if (at == g_.inputs.end() || s.instruction != "load-shard") continue;
    const int d = r.inputDims[static_cast<size_t>(at - g_.inputs.begin())];
    if (d >= 0 && d != s.to.rel)
      error("replication: input {} is split along dimension {} inside a machine and along {} across machines; the "
            "runtime reads one cut per input",
            name(s.to.value), static_cast<int>(s.to.rel), d);
  }
  std::vector<int> listed(g_.nodes.size(), 0);
  for (const Replication::RandomCut& cut : r.randomCuts) {
    if (cut.node < 0 || static_cast<size_t>(cut.node) >= g_.nodes.size() || !rules::isRandomOp(g_.node(cut.node).op)) {
      error("replication: random cut of node {}, which is not a random op", cut.node);
      continue;
    }
    ++listed[static_cast<size_t>(cut.node)];
    const ir::Node& n = g_.node(cut.node);
    if (cut.dim < -1 || (cut.dim >= 0 && (n.outputs.empty() || cut.dim >= g_.value(n.outputs[0]).rank())))
      error("replication: {} is split across machines along dimension {}, which its output does not have",
            g_.describe(cut.node), cut.dim);
  }
  for (const ir::Node& n : g_.nodes)
    if (rules::isRandomOp(n.op) && listed[static_cast<size_t>(n.id)] != 1)
      error("replication: random op {} has {} cuts across machines, not one", g_.describe(n.id),
            listed[static_cast<size_t>(n.id)]);
  if (!(r.lossWeight > 0 && r.lossWeight <= 1)) error("replication: the loss weight {} is not in (0, 1]", r.lossWeight);
  if (!r.lossTargets.empty() &&
      std::none_of(g_.inputs.begin(), g_.inputs.end(), [&](ir::ValueId v) { return g_.value(v).name == r.lossTargets; }))
    error("replication: the loss's targets '{}' are not an input of the model", r.lossTargets);
}

std::vector<std::string> Verifier::run() {
  if (p_.nodes != static_cast<int>(g_.nodes.size()))
    error("the plan is for a graph of {} nodes, this model has {}", p_.nodes, g_.nodes.size());
  for (const Segment& seg : p_.segments) {
    if (seg.ratios.size() != p_.devices.size())
      error("segment '{}' has {} ratios for {} devices", seg.name, seg.ratios.size(), p_.devices.size());
    double total = 0;
    for (double r : seg.ratios) {
      if (r < 0) error("segment '{}' has a negative ratio", seg.name);
      total += r;
    }
    if (std::abs(total - 1) > 1e-6) error("the ratios of segment '{}' sum to {}, not 1", seg.name, total);
  }
  if (!errors_.empty()) return errors_;
  if (p_.replication.replicated()) checkReplication();
  for (size_t i = 0; i < p_.steps.size(); ++i) {
    const PlanStep& s = p_.steps[i];
    const std::string where = fmt::format("step {}", i);
    if (s.node < 0 || static_cast<size_t>(s.node) >= g_.nodes.size()) {
      error("{}: node {} does not exist", where, s.node);
      continue;
    }
    if (s.kind == PlanStep::Kind::Convert) checkConvert(s, where);
    else checkCompute(s, where);
  }
  if (next_ != static_cast<ir::NodeId>(g_.nodes.size()))
    error("the program computes {} of the {} nodes", next_, g_.nodes.size());
  else if (g_.loss == ir::kNone || !rules::holds(forms_[static_cast<size_t>(g_.loss)], rules::kReduce))
    error("the program does not derive R(loss)");
  return errors_;
}

// What the program's replay needs before any graph is built (the simulator, the runtime and
// planGraph index by these; the devices' rank order is runtime::planRanks's and the simulator's
// own check): device groups and segments that exist, a time per device group, stages within the program, a program at all. `blocking`: a problem
// planGraph cannot take (a node in a segment the plan does not have, no segment, no device): the
// program is not checked further.
std::vector<std::string> checkStructure(const Plan& p, bool& blocking) {
  std::vector<std::string> errors;
  auto error = [&](std::string message) { errors.push_back(std::move(message)); };
  if (p.steps.empty()) error("the program is empty: it computes none of the model's nodes");
  if (p.devices.empty()) error("the plan has no device");
  if (p.segments.empty()) error("the plan has no segment");
  blocking = p.devices.empty() || p.segments.empty();
  int groups = 0;
  for (size_t j = 0; j < p.devices.size(); ++j) {
    const PlanDevice& d = p.devices[j];
    if (d.group < 0 || static_cast<size_t>(d.group) >= p.devices.size())
      error(fmt::format("device {} is in group {}, not one of 0 to {}", j, d.group,
                        p.devices.size() - 1));
    else
      groups = std::max(groups, d.group + 1);
  }
  for (size_t i = 0; i < p.importedNodeSegment.size(); ++i)
    if (p.importedNodeSegment[i] < 0 ||
        static_cast<size_t>(p.importedNodeSegment[i]) >= p.segments.size()) {
      error(fmt::format("imported node {} is in segment {}, which the plan does not have", i,
                        p.importedNodeSegment[i]));
      blocking = true;
      break;
    }
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep& s = p.steps[i];
    if (s.segment < 0 || static_cast<size_t>(s.segment) >= p.segments.size())
      error(fmt::format("step {}: segment {}, which the plan does not have ({} segments)", i,
                        s.segment, p.segments.size()));
    for (const std::vector<double>* w : {&s.forwardByGroup, &s.backwardByGroup})
      if (!w->empty() && w->size() < static_cast<size_t>(groups))
        error(
            fmt::format("step {}: {} times for the plan's {} device groups", i, w->size(), groups));
    for (double t : {s.forwardSeconds, s.backwardSeconds, s.forwardCommunication,
                     s.backwardCommunication, s.gradientSeconds})
      if (!(t >= 0 && std::isfinite(t))) {
        error(fmt::format("step {}: a time of {} seconds", i, t));
        break;
      }
  }
  for (size_t k = 0; k < p.stages.size(); ++k) {
    const Stage& s = p.stages[k];
    if (s.firstStep < 0 || s.firstStep > s.endStep ||
        static_cast<size_t>(s.endStep) > p.steps.size())
      error(fmt::format("stage {} runs steps [{}, {}) of a program of {}", k, s.firstStep,
                        s.endStep, p.steps.size()));
  }
  for (size_t b = 0; b < p.gradientBuckets.size(); ++b)
    for (int i : p.gradientBuckets[b].steps)
      if (i < 0 || static_cast<size_t>(i) >= p.steps.size() ||
          p.steps[static_cast<size_t>(i)].instruction != "replicate-parameter")
        error(fmt::format(
            "gradient bucket {} names step {}, which is not a replicate-parameter step", b, i));
  if (!(p.estimate.iterationSeconds >= 0 && std::isfinite(p.estimate.iterationSeconds)))
    error(fmt::format("the predicted iteration takes {} seconds", p.estimate.iterationSeconds));
  return errors;
}

}  // namespace

void assignExecutions(const ir::Graph& imported, Plan& plan) {
  const ir::Graph g = planGraph(imported, plan);
  for (PlanStep& s : plan.steps) {
    if (s.kind != PlanStep::Kind::Compute) continue;
    // The variants live here: matchVariant points into them (a temporary would be freed before
    // the match is read).
    const std::vector<rules::Variant> variants = rules::variantsFor(g, g.node(s.node));
    const rules::Variant* match = matchVariant(variants, s);
    assert(match && "assignExecutions() on a plan that does not verify");
    s.execution = match->execution;
  }
}

std::vector<std::string> verifyPlan(const ir::Graph& imported, const Plan& plan, const ShapeFunction& shapes) {
  bool blocking = false;
  std::vector<std::string> problems = checkStructure(plan, blocking);
  if (blocking) return problems;
  try {
    for (std::string& problem : Verifier(planGraph(imported, plan), plan, shapes).run())
      problems.push_back(std::move(problem));
  } catch (const PlanError& e) {
    problems.push_back(e.what());
  }
  return problems;
}

}  // namespace hap::plan
