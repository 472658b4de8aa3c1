#include "engine/plan/replication.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "engine/plan/baselines.h"
#include "engine/rules/families.h"
#include "engine/synth/cost_table.h"
#include "engine/synth/search.h"
#include "engine/synth/theory.h"

namespace hap::plan {
namespace {

std::string baseOp(std::string op) {
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') op.pop_back();
  return op;
}

// M identical one-device machines: the data-parallel program's forms do not depend on speeds.
cost::Cluster replicaCluster(int machines) {
  cost::Cluster c;
  c.name = fmt::format("{} machines", machines);
  c.types.push_back({"replica", 1e13, 0, 0, 1e18, 1e12, 1e-6, ""});
  c.network = {1e10, 1e-5};
  for (int m = 0; m < machines; ++m) {
    c.machines.push_back({fmt::format("m{}", m), "", 0, 1, {}});
    c.devices.push_back({m, m, 0, 0});
  }
  return c;
}

int64_t intArg(const ir::Node& n, std::string_view name, int64_t fallback) {
  const ir::Arg* a = n.arg(name);
  if (!a || a->kind != ir::Arg::Kind::Constant) return fallback;
  if (const int64_t* i = std::get_if<int64_t>(&a->constant)) return *i;
  return fallback;
}

}  // namespace

Replication replicationFor(const ir::Graph& global, const ir::Graph& machine, int machines) {
  if (machines < 2) throw std::logic_error("replicationFor: fewer than two machines");
  const std::string model = global.sourceFile;
  // The same program at two batch sizes: node for node the same ops.
  bool same = global.nodes.size() == machine.nodes.size() && global.inputs.size() == machine.inputs.size() &&
              global.values.size() == machine.values.size();
  for (size_t i = 0; same && i < global.nodes.size(); ++i) same = global.nodes[i].op == machine.nodes[i].op;
  if (!same)
    throw NotReplicable(fmt::format("{}: the model imports to different graphs at the global batch and at a "
                                    "machine's batch (1/{} of it), so its machines cannot run one program; "
                                    "export it without batch-dependent control flow",
                                    model, machines));

  // The data-parallel program over the machines.
  const synth::Theory theory(global);
  // An op whose batch-cut variant sums statistics over the ranks (batch norm in training) needs a
  // collective across machines inside the step: each machine's own statistics would differ.
  for (const ir::Node& n : global.nodes)
    for (const rules::Variant& v : theory.variants(n.id))
      if (v.syncBytes > 0)
        throw NotReplicable(fmt::format(
            "{}: {} computes statistics over the whole batch (batch norm in training), so the machines cannot "
            "run independently between gradient sums; plan it with hap plan (HAP's own program) instead",
            model, global.describe(n.id)));
  const cost::Cluster replicas = replicaCluster(machines);  // outlives the table, which refers to it
  synth::CostTable table(theory, replicas, std::vector<double>(static_cast<size_t>(machines), 1.0 / machines));
  table.restrict(dataParallelRestrictions());
  synth::Program program;
  try {
    program = synth::search(table);
  } catch (const synth::SearchError& e) {
    throw NotReplicable(fmt::format("{}: the model has no data-parallel program across {} machines: {}", model,
                                    machines, e.what()));
  }

  Replication r;
  r.machines = machines;
  r.inputDims.assign(global.inputs.size(), -1);
  std::vector<int> outputDim(global.values.size(), -2);  // per value: its batch dimension, -1 none, -2 unknown
  for (const synth::Step& s : program.steps) {
    if (s.kind == synth::Step::Kind::Convert) {
      using K = synth::ConversionKind;
      const K k = s.conversion.kind;
      if (k == K::LoadShard && global.value(s.value).kind == ir::ValueKind::Input) {
        const auto at = std::find(global.inputs.begin(), global.inputs.end(), s.value) - global.inputs.begin();
        r.inputDims[static_cast<size_t>(at)] = static_cast<int>(s.conversion.to);
      } else if (k != K::LoadShard && k != K::LoadReplica && k != K::ParamReplicate && k != K::Slice &&
                 k != K::ReplicaToPartial) {
        throw NotReplicable(fmt::format(
            "{}: {} needs {} of {} across machines, so the machines cannot run independently between gradient "
            "sums; plan it with hap plan (HAP's own program) instead",
            model, global.describe(s.node), synth::conversionName(k), global.value(s.value).name));
      }
      continue;
    }
    const ir::Node& n = global.node(s.node);
    const rules::Variant& v = theory.variants(s.node)[static_cast<size_t>(s.variant)];
    for (size_t o = 0; o < n.outputs.size(); ++o)
      outputDim[static_cast<size_t>(n.outputs[o])] = rules::isGather(v.outputs[o]) ? static_cast<int>(v.outputs[o]) : -1;
  }

  // The batch: inputs cut along their dimension, `machines` times the machine's length there.
  for (size_t i = 0; i < global.inputs.size(); ++i) {
    outputDim[static_cast<size_t>(global.inputs[i])] = r.inputDims[i];
    const ir::Value& whole = global.value(global.inputs[i]);
    const ir::Value& one = machine.value(machine.inputs[i]);
    const int d = r.inputDims[i];
    bool fits = whole.shape.size() == one.shape.size();
    for (size_t k = 0; fits && k < whole.shape.size(); ++k)
      fits = whole.shape[k] == (static_cast<int>(k) == d ? one.shape[k] * machines : one.shape[k]);
    if (!fits)
      throw NotReplicable(fmt::format("{}: input '{}' is {} at the global batch and {} at a machine's; the global "
                                      "batch must divide evenly by the {} machines (give --input with a batch that "
                                      "does)",
                                      model, whole.name, ir::formatShape(whole.shape), ir::formatShape(one.shape),
                                      machines));
  }

  // Random ops: the dimension of their output the machines split.
  for (const ir::Node& n : global.nodes)
    if (rules::isRandomOp(n.op)) {
      const int d = n.outputs.empty() ? -1 : outputDim[static_cast<size_t>(n.outputs[0])];
      r.randomCuts.push_back({n.id, std::max(d, -1)});
    }

  // The loss: a sum or a mean over the batch.
  const ir::Value& loss = global.value(global.loss);
  const ir::Node& producer = global.node(loss.producer);
  const std::string op = baseOp(producer.op);
  const rules::LossKind kind = rules::lossKind(op);
  const std::vector<ir::ValueId> ins = producer.tensorInputs();
  const bool batched = !ins.empty() && outputDim[static_cast<size_t>(ins[0])] >= 0;
  bool known = batched;
  if (known && kind != rules::LossKind::None) {
    const int64_t reduction = intArg(producer, "reduction", 1);
    known = reduction == 1 || reduction == 2;
    r.lossWeight = reduction == 1 ? 1.0 / machines : 1.0;
    if (reduction == 1 && kind == rules::LossKind::Class) {
      // A mean over the targets that are not ignore_index: per machine a different count unless
      // none is ignored, which the runtime checks from the targets' input.
      if (ins.size() > 2)
        throw NotReplicable(fmt::format("{}: the loss {} weighs its classes; replicated plans take an unweighted "
                                        "mean or a sum",
                                        model, global.describe(producer.id)));
      ir::ValueId t = ins[1];
      while (global.value(t).kind == ir::ValueKind::Activation && global.value(t).producer != ir::kNone) {
        const ir::Node& p = global.node(global.value(t).producer);
        static const std::unordered_set<std::string> kViews = {"aten::view", "aten::reshape", "aten::_unsafe_view",
                                                               "aten::flatten", "aten::squeeze", "aten::unsqueeze"};
        if (!kViews.count(baseOp(p.op)) || p.tensorInputs().empty()) break;
        t = p.tensorInputs().front();
      }
      if (global.value(t).kind != ir::ValueKind::Input)
        throw NotReplicable(fmt::format("{}: the loss {} averages over targets computed inside the model; replicated "
                                        "plans need the targets to be a model input (or a view of one), to count "
                                        "the ignored ones per machine",
                                        model, global.describe(producer.id)));
      r.lossTargets = global.value(t).name;
      r.ignoreIndex = intArg(producer, "ignore_index", -100);
    }
  } else if (known && op == "aten::mean") {
    r.lossWeight = 1.0 / machines;
  } else if (known && op == "aten::sum") {
    r.lossWeight = 1.0;
  } else {
    known = false;
  }
  if (!known)
    throw NotReplicable(fmt::format("{}: the loss comes from {}, not from a sum or mean over the batch "
                                    "(cross-entropy, nll, mse, mean, sum, ...), so the machines' losses do not add "
                                    "up to it",
                                    model, global.describe(producer.id)));
  return r;
}

}  // namespace hap::plan
