#include "engine/plan/baselines.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <set>
#include <string_view>

#include "engine/balance/alternation.h"
#include "engine/base/error.h"
#include "engine/synth/memory.h"
#include "engine/synth/stages.h"

namespace hap::plan {
namespace {

synth::SearchOptions searchOptions(const BaselineOptions& o) {
  synth::SearchOptions so;
  so.cancel = o.search.cancel;
  so.maxStates = o.search.maxStates;
  so.beamWidth = o.search.beamWidth;
  return so;
}

// --- Megatron's blocks, by structure (findMegatronBlocks) ---

// The op without a trailing in-place underscore (relu_ → relu; aten::_softmax stays).
std::string_view baseOp(std::string_view op) {
  if (op.size() > 1 && op.back() == '_' && op[op.size() - 2] != ':') op.remove_suffix(1);
  return op;
}

bool isOneOf(std::string_view op, std::initializer_list<std::string_view> ops) {
  return std::find(ops.begin(), ops.end(), baseOp(op)) != ops.end();
}

// Ops that move, select or relabel elements without computing on them.
bool isShapeOp(std::string_view op) {
  return isOneOf(op, {"aten::view", "aten::reshape", "aten::_reshape_alias", "aten::transpose", "aten::permute",
                      "aten::contiguous", "aten::chunk", "aten::split", "aten::split_with_sizes", "aten::unbind",
                      "aten::select", "aten::slice", "aten::narrow", "aten::unsqueeze", "aten::squeeze",
                      "aten::flatten", "aten::unflatten", "aten::clone", "aten::to", "aten::type_as",
                      "aten::expand", "aten::t", "aten::movedim", "aten::swapaxes"});
}

// Elementwise ops that keep a value's role: dropout, casts, scalings, masks, sums and products
// (rotary embeddings mix q with a rotated copy of itself by cat).
bool isElementwise(std::string_view op) {
  return isOneOf(op, {"aten::dropout", "aten::feature_dropout", "aten::alpha_dropout", "aten::neg", "aten::to",
                      "aten::type_as", "aten::contiguous", "aten::clone", "aten::add", "aten::sub", "aten::rsub",
                      "aten::mul", "aten::div", "aten::true_divide", "aten::pow", "aten::masked_fill",
                      "aten::where", "aten::cat"});
}

bool isActivation(std::string_view op) {
  return isOneOf(op, {"aten::gelu", "aten::relu", "aten::silu", "aten::tanh", "aten::sigmoid", "aten::hardswish",
                      "aten::hardsigmoid", "aten::mish", "aten::leaky_relu", "aten::elu", "aten::selu",
                      "aten::celu", "aten::softplus", "aten::relu6", "aten::hardtanh", "aten::glu"});
}

bool isSoftmax(std::string_view op) { return isOneOf(op, {"aten::softmax", "aten::_softmax"}); }

// A product of two activations (attention's scores and context): its operands' tensor positions.
std::optional<std::pair<size_t, size_t>> productOperands(const ir::Node& n) {
  if (isOneOf(n.op, {"aten::matmul", "aten::bmm", "aten::mm"}) && n.tensorInputs().size() == 2) return {{0, 1}};
  if (isOneOf(n.op, {"aten::baddbmm"}) && n.tensorInputs().size() == 3) return {{1, 2}};
  return std::nullopt;
}

// Whether `v` is a parameter, or a slice, chunk or transpose of one.
bool fromParameter(const ir::Graph& g, ir::ValueId v) {
  for (int depth = 0; depth < 4; ++depth) {
    const ir::Value& value = g.value(v);
    if (value.kind == ir::ValueKind::Parameter) return true;
    if (value.kind != ir::ValueKind::Activation) return false;
    const ir::Node& p = g.node(value.producer);
    if (!isShapeOp(p.op) || p.tensorInputs().empty()) return false;
    v = p.tensorInputs()[0];
  }
  return false;
}

// A projection: linear, or matmul/mm/addmm by a parameter weight; its data input and the rule
// variants that split it column- and row-parallel.
struct Projection {
  ir::ValueId data = ir::kNone;
  std::string column, row;
};
std::optional<Projection> projectionOf(const ir::Graph& g, const ir::Node& n) {
  const std::vector<ir::ValueId> in = n.tensorInputs();
  auto weight = [&](size_t i) { return in.size() > i && g.value(in[i]).rank() == 2 && fromParameter(g, in[i]); };
  if (baseOp(n.op) == "aten::linear" && weight(1)) return Projection{in[0], "column", "row"};
  if (isOneOf(n.op, {"aten::matmul", "aten::mm"}) && in.size() == 2 && weight(1) && !fromParameter(g, in[0]))
    return Projection{in[0], "col", "inner"};
  if (baseOp(n.op) == "aten::addmm" && in.size() == 3 && weight(2) && !fromParameter(g, in[1]))
    return Projection{in[1], "col", "inner"};
  return std::nullopt;
}

// Walks back from `v` to the projections it is computed from. Operand: through shape ops and
// elementwise ones (q, k, v); Chain: through elementwise ops and activations only (an MLP's
// hidden layer; `activation` is set when one is passed). A binary op's operand with fewer
// elements than its output (a broadcast scale, mask or bias) is not followed. False when some
// followed path ends anywhere but at a projection, or the walk is too long.
enum class Walk { Operand, Chain };
bool projectionsBehind(const ir::Graph& g, ir::ValueId v, Walk mode, std::set<ir::NodeId>& found, bool& activation,
                       int& budget) {
  if (--budget < 0) return false;
  const ir::Value& value = g.value(v);
  if (value.kind != ir::ValueKind::Activation) return false;
  const ir::Node& p = g.node(value.producer);
  if (projectionOf(g, p)) {
    found.insert(p.id);
    return true;
  }
  const std::vector<ir::ValueId> in = p.tensorInputs();
  if (in.empty()) return false;
  if (mode == Walk::Operand && isShapeOp(p.op)) return projectionsBehind(g, in[0], mode, found, activation, budget);
  const bool act = mode == Walk::Chain && isActivation(p.op);
  if (!act && !isElementwise(p.op)) return false;
  activation = activation || act;
  const bool cat = baseOp(p.op) == "aten::cat";
  bool followed = false;
  for (ir::ValueId i : in) {
    const ir::Value& x = g.value(i);
    if (x.kind != ir::ValueKind::Activation || (!cat && x.numel() < value.numel())) continue;
    if (!projectionsBehind(g, i, mode, found, activation, budget)) return false;
    followed = true;
  }
  return followed;
}

// The one projection `v` is computed from (q, k or v of an attention), if exactly one.
std::optional<ir::NodeId> singleProjectionBehind(const ir::Graph& g, ir::ValueId v) {
  std::set<ir::NodeId> found;
  bool activation = false;
  int budget = 48;
  if (!projectionsBehind(g, v, Walk::Operand, found, activation, budget) || found.size() != 1) return std::nullopt;
  return *found.begin();
}

// The product behind a softmax's input, through masks, scalings, biases and views.
std::optional<ir::NodeId> scoresProduct(const ir::Graph& g, ir::ValueId v, int depth = 0) {
  const ir::Value& value = g.value(v);
  if (depth > 12 || value.kind != ir::ValueKind::Activation) return std::nullopt;
  const ir::Node& p = g.node(value.producer);
  if (productOperands(p) && !projectionOf(g, p)) return p.id;
  if (!isShapeOp(p.op) && !isElementwise(p.op)) return std::nullopt;
  for (ir::ValueId i : p.tensorInputs())
    if (g.value(i).numel() == value.numel())
      if (auto found = scoresProduct(g, i, depth + 1)) return found;
  return std::nullopt;
}

// The product that reads the probabilities `v` as its first operand (after dropout, casts, views).
std::optional<ir::NodeId> contextProduct(const ir::Graph& g, ir::ValueId v, int depth = 0) {
  if (depth > 6) return std::nullopt;
  for (ir::NodeId u : g.value(v).users) {
    const ir::Node& n = g.node(u);
    if (auto ops = productOperands(n); ops && !projectionOf(g, n) && n.tensorInputs()[ops->first] == v) return u;
    if ((isShapeOp(n.op) || isElementwise(n.op)) && !n.outputs.empty() && n.tensorInputs()[0] == v)
      if (auto found = contextProduct(g, n.outputs[0], depth + 1)) return found;
  }
  return std::nullopt;
}

// The projection that reads the context `v` (after transposes and views merging the heads).
std::optional<ir::NodeId> outputProjection(const ir::Graph& g, ir::ValueId v, int depth = 0) {
  if (depth > 10) return std::nullopt;
  for (ir::NodeId u : g.value(v).users) {
    const ir::Node& n = g.node(u);
    if (auto p = projectionOf(g, n); p && p->data == v) return u;
    if (isShapeOp(n.op) && n.outputs.size() == 1 && n.tensorInputs()[0] == v)
      if (auto found = outputProjection(g, n.outputs[0], depth + 1)) return found;
  }
  return std::nullopt;
}

// The value an MLP's output is added to (its residual), after dropout, layer scale, stochastic
// depth or a permute back; kNone when its output goes anywhere else.
ir::ValueId residualOf(const ir::Graph& g, ir::ValueId v) {
  for (int depth = 0; depth < 8; ++depth) {
    const std::vector<ir::NodeId>& users = g.value(v).users;
    if (users.size() != 1) return ir::kNone;
    const ir::Node& n = g.node(users[0]);
    const std::vector<ir::ValueId> in = n.tensorInputs();
    if (baseOp(n.op) == "aten::add" && in.size() == 2) return in[0] == v ? in[1] : in[0];
    if (n.outputs.size() != 1 ||
        !isOneOf(n.op, {"aten::dropout", "aten::feature_dropout", "aten::mul", "aten::div", "aten::permute",
                        "aten::transpose", "aten::view", "aten::reshape", "aten::_reshape_alias", "aten::contiguous",
                        "aten::to", "aten::type_as"}))
      return ir::kNone;
    v = n.outputs[0];
  }
  return ir::kNone;
}

// Whether `target` is `v` or among the values `v` is computed from within `budget` nodes.
bool derivesFrom(const ir::Graph& g, ir::ValueId v, ir::ValueId target, int budget = 24) {
  std::vector<ir::ValueId> frontier{v};
  std::set<ir::ValueId> seen{v};
  while (!frontier.empty() && budget-- > 0) {
    const ir::ValueId x = frontier.front();
    frontier.erase(frontier.begin());
    if (x == target) return true;
    const ir::Value& value = g.value(x);
    if (value.kind != ir::ValueKind::Activation) continue;
    for (ir::ValueId i : g.node(value.producer).tensorInputs())
      if (seen.insert(i).second) frontier.push_back(i);
  }
  return false;
}

// A node for the near misses of MegatronBlocks: its module scope, or its description at the top level.
std::string shortName(const ir::Graph& g, ir::NodeId n) {
  return g.node(n).scope.empty() ? g.describe(n) : g.node(n).scope;
}

// Megatron's per-machine program (its pins, no SFB) on a table of one machine at even shares.
synth::Program megatronProgram(const synth::CostTable& table, const BaselineOptions& options,
                               synth::SearchStats* stats) {
  const ir::Graph& g = table.theory().graph();
  const MegatronBlocks blocks = findMegatronBlocks(g);
  synth::SearchOptions so = searchOptions(options);
  for (const MegatronBlocks::Split& s : blocks.splits) {
    const auto& variants = table.theory().variants(s.node);
    if (std::none_of(variants.begin(), variants.end(), [&](const rules::Variant& v) { return v.name == s.variant; }))
      continue;  // features too short to split: the search chooses its form
    so.pins.push_back({fmt::format("{} ({})", g.node(s.node).scope, s.role), s.variant, s.node});
  }
  if (so.pins.empty())
    throw synth::SearchError(blocks.splits.empty()
                                 ? blocks.notFound()
                                 : "its attention and MLP projections have no column- or row-parallel form");
  return synth::search(table, so, stats);
}

synth::Restrictions megatronRestrictions(synth::Restrictions base) {
  base.sfb = false;
  return base;
}

}  // namespace

std::string MegatronBlocks::notFound() const {
  std::string out =
      "found no attention block (a softmax between two products, matmul or bmm, whose q, k and v each come from "
      "one projection, a linear or a matmul by a parameter, and whose context feeds a projection) and no MLP "
      "(projections, an activation such as gelu, relu or silu, then a projection, inside a residual sublayer)";
  const size_t shown = std::min<size_t>(nearMisses.size(), 3);
  for (size_t i = 0; i < shown; ++i) out += (i == 0 ? "; " : "; ") + nearMisses[i];
  if (nearMisses.size() > shown) out += fmt::format("; and {} more", nearMisses.size() - shown);
  return out;
}

MegatronBlocks findMegatronBlocks(const ir::Graph& g) {
  MegatronBlocks out;
  std::set<ir::NodeId> used;
  auto add = [&](ir::NodeId n, bool column, std::string role) {
    const std::optional<Projection> p = projectionOf(g, g.node(n));
    out.splits.push_back({n, column, column ? p->column : p->row, std::move(role)});
    used.insert(n);
  };
  // Attention: softmax(q·kᵀ ...)·v, then the output projection.
  for (const ir::Node& s : g.nodes) {
    if (!isSoftmax(s.op) || s.tensorInputs().empty() || s.outputs.empty()) continue;
    const std::optional<ir::NodeId> scores = scoresProduct(g, s.tensorInputs()[0]);
    if (!scores) continue;
    const std::optional<ir::NodeId> context = contextProduct(g, s.outputs[0]);
    const std::string where = fmt::format("the softmax in {}", shortName(g, s.id));
    if (!context) {
      out.nearMisses.push_back(where + " feeds no second product (probabilities · v)");
      continue;
    }
    const ir::Node& m1 = g.node(*scores);
    const ir::Node& m2 = g.node(*context);
    const auto ops1 = *productOperands(m1);
    const std::optional<ir::NodeId> q = singleProjectionBehind(g, m1.tensorInputs()[ops1.first]);
    const std::optional<ir::NodeId> k = singleProjectionBehind(g, m1.tensorInputs()[ops1.second]);
    const std::optional<ir::NodeId> v = singleProjectionBehind(g, m2.tensorInputs()[productOperands(m2)->second]);
    if (!q || !k || !v) {
      out.nearMisses.push_back(fmt::format("{}: its {} does not come from one projection", where,
                                           !q ? "q" : !k ? "k" : "v"));
      continue;
    }
    const std::optional<ir::NodeId> o = outputProjection(g, m2.outputs[0]);
    if (!o) {
      out.nearMisses.push_back(where + ": no projection reads its context");
      continue;
    }
    std::set<ir::NodeId> inputs{*q, *k, *v};
    if (inputs.count(*o) || std::any_of(inputs.begin(), inputs.end(), [&](ir::NodeId n) { return used.count(n); }) ||
        used.count(*o))
      continue;  // a projection of another block
    for (ir::NodeId n : inputs)
      add(n, true, fmt::format("attention {}{}{}", n == *q ? "q" : "", n == *k ? "k" : "", n == *v ? "v" : ""));
    add(*o, false, "attention out");
    ++out.attention;
  }
  // MLP: projections, an elementwise chain with an activation, a projection, in a residual sublayer.
  for (const ir::Node& n : g.nodes) {
    const std::optional<Projection> last = used.count(n.id) ? std::nullopt : projectionOf(g, n);
    if (!last || n.outputs.size() != 1) continue;
    std::set<ir::NodeId> first;
    bool activation = false;
    int budget = 32;
    if (!projectionsBehind(g, last->data, Walk::Chain, first, activation, budget) || !activation || first.empty())
      continue;
    const ir::ValueId input = projectionOf(g, g.node(*first.begin()))->data;
    if (std::any_of(first.begin(), first.end(), [&](ir::NodeId f) {
          return used.count(f) || f == n.id || projectionOf(g, g.node(f))->data != input;
        }))
      continue;
    const ir::ValueId residual = residualOf(g, n.outputs[0]);
    if (residual == ir::kNone || !derivesFrom(g, input, residual)) {
      out.nearMisses.push_back(fmt::format("{} → activation → {} is not a residual sublayer (a classifier's "
                                           "layers, not a transformer's MLP)",
                                           shortName(g, *first.begin()), shortName(g, n.id)));
      continue;
    }
    for (ir::NodeId f : first) add(f, true, "MLP in");
    add(n.id, false, "MLP out");
    ++out.mlp;
  }
  std::sort(out.splits.begin(), out.splits.end(),
            [](const MegatronBlocks::Split& a, const MegatronBlocks::Split& b) { return a.node < b.node; });
  return out;
}

cost::Cluster machineCluster(const cost::Cluster& c, int m) {
  cost::Cluster one = c;
  one.machines = {c.machines[static_cast<size_t>(m)]};
  one.network = {};
  one.devices.clear();
  for (const cost::Device& d : c.devices)
    if (d.machine == m) one.devices.push_back({static_cast<int>(one.devices.size()), 0, d.localRank, d.type});
  return one;
}

double crossMachineGradientSeconds(const cost::Cluster& cluster, const std::vector<double>& gradientBytes) {
  const int machines = static_cast<int>(cluster.machines.size());
  if (machines < 2) return 0;
  int perMachine = 0;
  for (const cost::Machine& mc : cluster.machines) perMachine = std::max(perMachine, mc.count);
  const double bandwidth = cluster.network.bandwidth * cluster.efficiencyOf(cost::Collective::AllReduce);
  double seconds = 0;
  for (double bytes : gradientBytes)
    seconds += 2.0 * (machines - 1) * cluster.network.latency +
               2.0 * (machines - 1) / machines * perMachine * bytes / bandwidth;
  return seconds;
}

std::vector<double> gradientPieceBytes(const synth::CostTable& table, const synth::Program& p,
                                       const synth::CostOptions& options) {
  const ir::Graph& g = table.theory().graph();
  const double k = table.cluster().size();
  std::vector<double> bytes;
  for (const synth::MemoryTerm& t : synth::memoryTerms(table, p, options))
    if (g.value(t.value).kind == ir::ValueKind::Parameter)
      bytes.push_back(static_cast<double>(g.value(t.value).bytes()) * (t.bytes.perShare > 0 ? 1.0 / k : 1.0));
  return bytes;
}

Estimate estimateOf(const synth::CostTable& table, const synth::Program& p, const synth::CostOptions& options) {
  Estimate e;
  e.iterationSeconds = synth::iterationSeconds(table, p);
  e.memoryBytes = synth::deviceMemory(table, p, options);
  for (int j = 0; j < table.cluster().size(); ++j)
    e.fits = e.fits && e.memoryBytes[static_cast<size_t>(j)] <= table.cluster().type(j).memoryBytes;
  return e;
}

synth::Restrictions dataParallelRestrictions(synth::Restrictions base) {
  base.parameterShards = false;
  base.sfb = false;
  base.inputShardsOnBatchOnly = true;
  return base;
}

synth::Restrictions fullyShardedRestrictions(synth::Restrictions base) {
  base.sfb = false;
  base.inputShardsOnBatchOnly = true;
  base.parameterReplicas = false;
  base.parametersWhole = true;
  return base;
}

Plan::Baseline dataParallelBaseline(const synth::Theory& theory, const cost::Cluster& cluster,
                                    const std::vector<double>& shares, const std::string& name,
                                    const BaselineOptions& options) {
  synth::CostTable table(theory, cluster, shares, options.cost);
  table.restrict(dataParallelRestrictions());
  const balance::Executed e = balance::executed(table, synth::search(table, searchOptions(options)));
  return {name, estimateOf(*e.table, e.program, options.cost), true,
          "replicated parameters, batch split, gradients all-reduced"};
}

Plan::Baseline fsdpBaseline(const synth::Theory& theory, const cost::Cluster& cluster,
                            const std::vector<double>& shares, const BaselineOptions& options) {
  synth::CostTable searched(theory, cluster, shares, options.cost);
  searched.restrict(fullyShardedRestrictions());
  const balance::Executed executed = balance::executed(searched, synth::search(searched, searchOptions(options)));
  const synth::CostTable& table = *executed.table;
  const synth::Program& p = executed.program;
  Estimate e = estimateOf(table, p, options.cost);
  // ZeRO-3 frees a gathered parameter after its use and gathers it again in backward; the two
  // largest gathered copies are resident at once.
  const ir::Graph& g = theory.graph();
  double regather = 0, gathered = 0, first = 0, second = 0;
  std::vector<bool> seen(g.values.size(), false);
  for (const synth::Step& s : p.steps) {
    if (s.kind != synth::Step::Kind::Convert || s.conversion.kind != synth::ConversionKind::AllGather) continue;
    const ir::Value& v = g.value(s.value);
    if (v.kind != ir::ValueKind::Parameter || seen[static_cast<size_t>(v.id)]) continue;
    seen[static_cast<size_t>(v.id)] = true;
    regather += s.conversion.forwardSeconds;
    const double bytes = static_cast<double>(v.bytes());
    gathered += bytes;
    if (bytes > first) second = first, first = bytes;
    else second = std::max(second, bytes);
  }
  e.iterationSeconds += regather;
  e.fits = true;
  for (int j = 0; j < cluster.size(); ++j) {
    double& m = e.memoryBytes[static_cast<size_t>(j)];
    m = m - gathered + first + second;
    e.fits = e.fits && m <= cluster.type(j).memoryBytes;
  }
  return {"fsdp", e, true,
          fmt::format("parameters sharded on dimension 0, gathered per use (+{:.3f} ms re-gathering in backward)",
                      regather * 1e3)};
}

std::vector<MachineProgram> megatronPrograms(const synth::Theory& theory, const cost::Cluster& cluster,
                                             const BaselineOptions& options) {
  std::vector<MachineProgram> out;
  for (int m = 0; m < static_cast<int>(cluster.machines.size()); ++m) {
    const cost::Machine& machine = cluster.machines[static_cast<size_t>(m)];
    if (std::any_of(out.begin(), out.end(), [&](const MachineProgram& p) { return p.sameKind(machine); })) continue;
    MachineProgram p;
    p.machine = m;
    p.deviceType = machine.deviceType;
    p.count = machine.count;
    p.cluster = std::make_unique<cost::Cluster>(machineCluster(cluster, m));
    p.table = std::make_unique<synth::CostTable>(
        theory, *p.cluster, std::vector<double>(static_cast<size_t>(machine.count), 1.0 / machine.count), options.cost);
    p.table->restrict(megatronRestrictions(options.cost.restrictions));
    p.program = megatronProgram(*p.table, options, &p.stats);
    balance::Executed e = balance::executed(*p.table, p.program);  // 12 heads on 8 devices: 2 or 1 each
    p.table = std::move(e.table);
    p.program = std::move(e.program);
    p.seconds = synth::iterationSeconds(*p.table, p.program);
    out.push_back(std::move(p));
  }
  return out;
}

Plan::Baseline megatronBaseline(const std::vector<MachineProgram>& programs, const cost::Cluster& cluster,
                                const BaselineOptions& options) {
  Plan::Baseline b{"megatron", {}, true, ""};
  // Each machine runs its kind's program; the slowest bounds the iteration.
  std::vector<std::vector<double>> memoryOf;  // per program: per device of its machine
  std::vector<double> gradientBytes;          // per parameter tensor, per device (the largest machine plan's)
  double slowest = 0;
  for (const MachineProgram& p : programs) {
    memoryOf.push_back(synth::deviceMemory(*p.table, p.program, options.cost));
    slowest = std::max(slowest, p.seconds);
    std::vector<double> bytes = gradientPieceBytes(*p.table, p.program, options.cost);
    if (bytes.size() >= gradientBytes.size()) gradientBytes = std::move(bytes);
  }
  b.estimate.memoryBytes.assign(static_cast<size_t>(cluster.size()), 0.0);
  for (const cost::Device& d : cluster.devices) {
    const cost::Machine& machine = cluster.machines[static_cast<size_t>(d.machine)];
    for (size_t k = 0; k < programs.size(); ++k)
      if (programs[k].sameKind(machine))
        b.estimate.memoryBytes[static_cast<size_t>(d.rank)] = memoryOf[k][static_cast<size_t>(d.localRank)];
  }
  // Data parallelism across machines: every tensor-parallel rank all-reduces each gradient shard
  // with its peers (a ring over the machines, one per parameter tensor as DP's all-reduces are);
  // a machine's ranks share its NIC.
  const double crossing = crossMachineGradientSeconds(cluster, gradientBytes);
  const int machines = static_cast<int>(cluster.machines.size());
  b.estimate.iterationSeconds = slowest + crossing;
  b.estimate.fits = true;
  for (int j = 0; j < cluster.size(); ++j)
    b.estimate.fits = b.estimate.fits && b.estimate.memoryBytes[static_cast<size_t>(j)] <= cluster.type(j).memoryBytes;
  b.note = fmt::format("tensor parallel inside each machine, data parallel across {} machine{} (gradient all-reduce "
                       "{:.3f} ms; run it: hap plan --baseline megatron)",
                       machines, machines == 1 ? "" : "s", crossing * 1e3);
  return b;
}

Plan::Baseline megatronBaseline(const ir::Graph& machineBatch, const cost::Cluster& cluster,
                                const BaselineOptions& options) {
  const synth::Theory theory(machineBatch);
  try {
    return megatronBaseline(megatronPrograms(theory, cluster, options), cluster, options);
  } catch (const synth::SearchError& e) {
    if (options.search.cancelled()) throw;  // cancelled, not inapplicable
    Plan::Baseline b{"megatron", {}, false, fmt::format("not applicable: {}", e.what())};
    b.estimate.fits = false;
    return b;
  }
}

}  // namespace hap::plan
