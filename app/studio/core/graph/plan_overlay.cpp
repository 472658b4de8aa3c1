#include "app/studio/core/graph/plan_overlay.h"

#include <QObject>
#include <QStringList>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "app/studio/core/display/units.h"
#include "engine/ir/segments.h"
#include "engine/plan/simulator.h"
#include "engine/synth/search.h"
#include "engine/synth/theory.h"

namespace hap::studio {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

uint64_t readKey(ir::ValueId v, ir::NodeId consumer) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(v)) << 32) | static_cast<uint32_t>(consumer);
}

// ColorBrewer Set3: twelve light, mutually distinct fills with dark text on all of them.
const std::array<QColor, 12>& set3() {
  static const std::array<QColor, 12> p = {QColor(0x8dd3c7), QColor(0xffffb3), QColor(0xbebada),
                                           QColor(0xfb8072), QColor(0x80b1d3), QColor(0xfdb462),
                                           QColor(0xb3de69), QColor(0xfccde5), QColor(0xd9d9d9),
                                           QColor(0xbc80bd), QColor(0xccebc5), QColor(0xffed6f)};
  return p;
}

uint32_t stableHash(std::string_view s) {
  uint32_t h = 2166136261u;  // FNV-1a: the same in every run and on every platform
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

}  // namespace

QColor segmentColour(int i) {
  const auto& p = set3();
  const int n = static_cast<int>(p.size());
  // Later rounds: the same hues, a step darker each round (still light enough for dark text).
  const int round = i / n;
  const QColor c = p[static_cast<size_t>(i % n)];
  return round == 0 ? c : c.darker(100 + 16 * std::min(round, 4));
}

// ---- the overlay
// ---------------------------------------------------------------------------------

PlanOverlay::PlanOverlay(std::shared_ptr<const PlanDocument> doc) : m_doc(std::move(doc)) {
  if (!m_doc || !m_doc->plan || !m_doc->imported || !m_doc->planned) {
    m_doc.reset();
    return;
  }
  const plan::Plan& p = *m_doc->plan;
  const ir::Graph& im = *m_doc->imported;
  const ir::Graph& pg = *m_doc->planned;
  const size_t nodes = im.nodes.size();
  const int ranks = rankCount();
  m_nodes.assign(nodes, {});
  for (size_t n = 0; n < nodes; ++n)
    m_nodes[n].segment = n < p.importedNodeSegment.size() ? p.importedNodeSegment[n] : -1;

  // A reshard's output stands for its input (value ids below the imported count are the same in
  // both graphs); a reshard belongs to the read of its first reader.
  std::vector<ir::ValueId> origin(pg.values.size());
  for (size_t v = 0; v < origin.size(); ++v) origin[v] = static_cast<ir::ValueId>(v);
  std::vector<ir::NodeId> firstReader(pg.nodes.size(), ir::kNone);
  for (const ir::Node& n : pg.nodes) {
    if (n.op != ir::kReshardOp || n.outputs.empty()) continue;
    const std::vector<ir::ValueId> ins = n.tensorInputs();
    if (ins.empty()) continue;
    const ir::ValueId out = n.outputs.front();
    origin[static_cast<size_t>(out)] = origin[static_cast<size_t>(ins.front())];
    for (ir::NodeId u : pg.value(out).users) {
      const ir::NodeId imported = m_doc->importedNode[static_cast<size_t>(u)];
      if (imported != ir::kNone) {
        firstReader[static_cast<size_t>(n.id)] = imported;
        break;
      }
    }
  }
  auto originOf = [&](ir::ValueId v) {
    return v >= 0 && static_cast<size_t>(v) < origin.size() ? origin[static_cast<size_t>(v)] : v;
  };

  // One read per (value, consumer) of the imported graph, in consumer and argument order.
  std::unordered_map<uint64_t, int> byKey;
  auto edgeFor = [&](ir::ValueId v, ir::NodeId consumer) -> PlanEdgeInfo& {
    auto [it, fresh] = byKey.try_emplace(readKey(v, consumer), static_cast<int>(m_edges.size()));
    if (fresh) {
      PlanEdgeInfo e;
      e.value = v;
      e.consumer = consumer;
      if (v >= 0 && static_cast<size_t>(v) < im.values.size()) e.producer = im.value(v).producer;
      m_edges.push_back(std::move(e));
      if (consumer >= 0 && static_cast<size_t>(consumer) < nodes)
        m_nodes[static_cast<size_t>(consumer)].edges.push_back(it->second);
    }
    return m_edges[static_cast<size_t>(it->second)];
  };
  for (const ir::Node& n : im.nodes)
    for (ir::ValueId v : n.tensorInputs()) edgeFor(v, n.id);

  for (int i = 0; i < static_cast<int>(p.steps.size()); ++i) {
    const plan::PlanStep& s = p.steps[static_cast<size_t>(i)];
    if (s.node < 0 || static_cast<size_t>(s.node) >= pg.nodes.size()) continue;
    const ir::NodeId consumer = m_doc->importedNode[static_cast<size_t>(s.node)];
    const bool reshard = consumer == ir::kNone;
    const ir::NodeId reader = reshard ? firstReader[static_cast<size_t>(s.node)] : consumer;
    if (s.kind == plan::PlanStep::Kind::Convert) {
      const ir::ValueId v = s.to.value != ir::kNone ? s.to.value : s.from.value;
      if (reader == ir::kNone) continue;
      edgeFor(originOf(v), reader).conversions.push_back(i);
      continue;
    }
    if (reshard) {
      if (reader == ir::kNone) continue;
      const std::vector<ir::ValueId> ins = pg.node(s.node).tensorInputs();
      if (ins.empty()) continue;
      PlanEdgeInfo& e = edgeFor(originOf(ins.front()), reader);
      e.conversions.push_back(i);
      e.reshardStep = i;
      continue;
    }
    PlanNodeInfo& info = m_nodes[static_cast<size_t>(consumer)];
    info.computeStep = i;
    info.variant = s.variant;
    info.forwardByRank.assign(static_cast<size_t>(ranks), kNaN);
    info.backwardByRank.assign(static_cast<size_t>(ranks), kNaN);
    for (int r = 0; r < ranks; ++r) {
      const size_t group = static_cast<size_t>(p.devices[static_cast<size_t>(r)].group);
      if (group < s.forwardByGroup.size())
        info.forwardByRank[static_cast<size_t>(r)] = s.forwardByGroup[group];
      if (group < s.backwardByGroup.size())
        info.backwardByRank[static_cast<size_t>(r)] = s.backwardByGroup[group];
    }
    const ir::Node& node = im.node(consumer);
    if (!s.outputs.empty()) {
      info.hasOutputForm = true;
      info.outputForm = s.outputs.front().rel;
      if (!node.outputs.empty())
        for (const plan::Form& f : s.outputs)
          if (f.value == node.outputs.front()) {
            info.outputForm = f.rel;
            break;
          }
    }
    for (const plan::Form& f : s.inputs) {
      const ir::ValueId v = originOf(f.value);
      PlanEdgeInfo& e = edgeFor(v, consumer);
      if (e.hasReadForm) continue;  // a value read twice: its first argument's form
      e.hasReadForm = true;
      e.read = f;
      e.read.value = v;
      e.resharded = f.value != v;
    }
  }

  for (PlanEdgeInfo& e : m_edges) {
    for (int c : e.conversions) e.collectives += isCollective(p.steps[static_cast<size_t>(c)]);
    if (e.producer != ir::kNone) {
      const PlanNodeInfo& prod = m_nodes[static_cast<size_t>(e.producer)];
      if (prod.computeStep >= 0) {
        for (const plan::Form& f : p.steps[static_cast<size_t>(prod.computeStep)].outputs)
          if (f.value == e.value) {
            e.hasValueForm = true;
            e.valueForm = f.rel;
            break;
          }
      }
    }
    if (!e.hasValueForm && e.hasReadForm) {
      // A source (input, parameter): the form it is loaded in before any conversion.
      e.hasValueForm = true;
      e.valueForm = e.read.rel;
      for (int c : e.conversions) {
        const plan::PlanStep& s = p.steps[static_cast<size_t>(c)];
        if (s.kind == plan::PlanStep::Kind::Convert) {
          e.valueForm = s.from.rel;
          break;
        }
      }
    }
  }
}

const PlanEdgeInfo* PlanOverlay::edge(ir::ValueId value, ir::NodeId consumer) const {
  if (consumer < 0 || consumer >= nodeCount()) return nullptr;
  for (int e : m_nodes[static_cast<size_t>(consumer)].edges)
    if (m_edges[static_cast<size_t>(e)].value == value) return &m_edges[static_cast<size_t>(e)];
  return nullptr;
}

std::vector<const PlanEdgeInfo*> PlanOverlay::readsOf(ir::ValueId value) const {
  std::vector<const PlanEdgeInfo*> out;
  if (empty() || value < 0 || static_cast<size_t>(value) >= m_doc->imported->values.size())
    return out;
  std::set<ir::NodeId> seen;
  for (ir::NodeId u : m_doc->imported->value(value).users)
    if (seen.insert(u).second)
      if (const PlanEdgeInfo* e = edge(value, u)) out.push_back(e);
  return out;
}

const plan::Form* PlanOverlay::producedForm(ir::ValueId value) const {
  if (empty() || value < 0 || static_cast<size_t>(value) >= m_doc->imported->values.size())
    return nullptr;
  const ir::NodeId producer = m_doc->imported->value(value).producer;
  if (producer < 0 || producer >= nodeCount()) return nullptr;
  const int step = m_nodes[static_cast<size_t>(producer)].computeStep;
  if (step < 0) return nullptr;
  for (const plan::Form& f : m_doc->plan->steps[static_cast<size_t>(step)].outputs)
    if (f.value == value) return &f;
  return nullptr;
}

int PlanOverlay::rankCount() const {
  return m_doc ? static_cast<int>(m_doc->plan->devices.size()) : 0;
}

int PlanOverlay::bottleneckRank() const {
  if (!m_doc || rankCount() == 0) return -1;
  if (m_doc->timeline.devices.empty()) return 0;
  return plan::bottleneckRank(m_doc->timeline) % rankCount();
}

QString PlanOverlay::rankName(int rank) const {
  if (rank < 0 || rank >= rankCount()) return {};
  const plan::PlanDevice& d = m_doc->plan->devices[static_cast<size_t>(rank)];
  QString name = QStringLiteral("rank %1").arg(rank);
  if (!d.type.empty()) name += QStringLiteral(" · ") + qs(d.type);
  if (rank == bottleneckRank() && rankCount() > 1) name += QStringLiteral(" · bottleneck");
  return name;
}

double PlanOverlay::nodeSeconds(ir::NodeId n, int rank) const {
  if (n < 0 || n >= nodeCount() || rank < 0 || rank >= rankCount()) return kNaN;
  const PlanNodeInfo& info = m_nodes[static_cast<size_t>(n)];
  if (info.computeStep < 0) return kNaN;
  return info.forwardByRank[static_cast<size_t>(rank)] +
         info.backwardByRank[static_cast<size_t>(rank)];
}

QString PlanOverlay::segmentName(int segment) const {
  if (!m_doc || segment < 0 || static_cast<size_t>(segment) >= m_doc->plan->segments.size())
    return {};
  return qs(m_doc->plan->segments[static_cast<size_t>(segment)].name);
}

std::vector<std::string> PlanOverlay::variantNames() const {
  std::set<std::string> names;
  for (const PlanNodeInfo& n : m_nodes)
    if (n.computeStep >= 0) names.insert(n.variant);
  std::vector<std::string> out(names.begin(), names.end());
  std::stable_partition(out.begin(), out.end(),
                        [](const std::string& s) { return s == "replicate"; });
  return out;
}

std::vector<std::string> PlanOverlay::variantByNode() const {
  std::vector<std::string> out(m_nodes.size());
  for (size_t n = 0; n < m_nodes.size(); ++n) out[n] = m_nodes[n].variant;
  return out;
}

int PlanOverlay::maxShardedDim() const {
  int most = -1;
  for (const PlanNodeInfo& n : m_nodes)
    if (n.hasOutputForm && rules::isGather(n.outputForm))
      most = std::max(most, static_cast<int>(n.outputForm));
  for (const PlanEdgeInfo& e : m_edges) {
    if (e.hasValueForm && rules::isGather(e.valueForm))
      most = std::max(most, static_cast<int>(e.valueForm));
    if (e.hasReadForm && rules::isGather(e.read.rel))
      most = std::max(most, static_cast<int>(e.read.rel));
  }
  return most;
}

// ---- text ---------------------------------------------------------------------------------------

QString formCategoryName(rules::Rel r) {
  if (rules::isGather(r)) return QStringLiteral("sharded dim %1").arg(static_cast<int>(r));
  if (r == rules::kReduce) return QStringLiteral("partial sum");
  return QStringLiteral("replicated");
}

QString relText(rules::Rel r) {
  return QString::fromStdString(rules::formatRel(r));
}

QString formText(const plan::Form& f) {
  if (rules::isGather(f.rel)) {
    QStringList lengths;
    for (int64_t l : f.lengths) lengths << QString::number(l);
    if (lengths.isEmpty()) return relText(f.rel);
    return QStringLiteral("%1 lengths %2").arg(relText(f.rel), lengths.join(QStringLiteral(", ")));
  }
  if (f.rel == rules::kReduce) return QStringLiteral("R (partial sum)");
  if (f.rel == rules::kIdentitySfb) return QStringLiteral("I* (replicated, gradient by SFB)");
  return QStringLiteral("I (replicated)");
}

QString conversionText(const plan::PlanStep& s) {
  if (s.kind == plan::PlanStep::Kind::Compute) {
    if (s.variant == "reshard") return QStringLiteral("reshard (all-to-all)");
    if (s.variant == "partial") return QStringLiteral("reshard (partial sum, nothing moved)");
    if (s.variant == "replicate") return QStringLiteral("reshard (replicated, nothing moved)");
    return QStringLiteral("reshard (%1)").arg(qs(s.variant));
  }
  QString text = qs(s.instruction);
  if (!s.method.empty()) text += QStringLiteral(" (%1)").arg(qs(s.method));
  return text;
}

QString conversionGlyph(const plan::PlanStep& s) {
  if (s.kind == plan::PlanStep::Kind::Compute)
    return s.variant == "reshard" ? QStringLiteral("A2A") : QString();
  const std::string& i = s.instruction;
  if (i == "all-gather") return QStringLiteral("AG");
  if (i == "reduce-scatter") return QStringLiteral("RS");
  if (i == "all-reduce") return QStringLiteral("AR");
  if (i == "all-to-all") return QStringLiteral("A2A");
  if (i == "slice") return QStringLiteral("SL");
  if (i == "load-shard") return QStringLiteral("LS");
  if (i == "load") return {};  // an input or buffer read whole where it is: nothing to show
  if (i == "replicate-parameter") return QStringLiteral("RP");
  if (i == "replicate-parameter-sfb") return QStringLiteral("SFB");
  if (i == "replica-to-partial") return QStringLiteral("I→R");
  return QString::fromStdString(i).left(3).toUpper();
}

bool isCollective(const plan::PlanStep& s) {
  if (s.kind == plan::PlanStep::Kind::Compute)
    return s.forwardCommunication + s.backwardCommunication > 0;
  return s.seconds() > 0;
}


// ---- colourings ---------------------------------------------------------------------------------

namespace {

// Sharded dimensions: blue, green, orange, purple, teal, then the segment palette.
QColor shardedFill(int d) {
  static const std::array<QColor, 5> fills = {QColor(0xa8c8f0), QColor(0xb5dfa8), QColor(0xffc99a),
                                              QColor(0xd7bde2), QColor(0x9fd8d2)};
  return d < static_cast<int>(fills.size()) ? fills[static_cast<size_t>(d)] : segmentColour(d + 3);
}
const QColor kReplicatedFill(0xe3e5e8);
const QColor kPartialFill(0xf4a6a6);

}  // namespace

std::vector<QString> formCategoryLabels(int maxShardedDim) {
  std::vector<QString> labels{formCategoryName(rules::kIdentity)};
  for (int d = 0; d <= maxShardedDim; ++d) labels.push_back(formCategoryName(rules::gather(d)));
  labels.push_back(formCategoryName(rules::kReduce));
  return labels;
}

std::vector<QColor> formCategoryColours(int maxShardedDim) {
  std::vector<QColor> colours{kReplicatedFill};
  for (int d = 0; d <= maxShardedDim; ++d) colours.push_back(shardedFill(d));
  colours.push_back(kPartialFill);
  return colours;
}

int formCategory(rules::Rel r, int maxShardedDim) {
  if (rules::isGather(r)) return r <= maxShardedDim ? 1 + r : -1;
  if (r == rules::kReduce) return 2 + std::max(maxShardedDim, -1);
  return 0;
}

QColor formStrokeColour(rules::Rel r) {
  if (r == rules::kReduce) return QColor(0xc5393f);
  if (!rules::isGather(r)) return QColor(0x9aa0a6);
  static const std::array<QColor, 5> strokes = {
      QColor(0x3b78c4), QColor(0x3f8f34), QColor(0xd27419), QColor(0x8a4fa3), QColor(0x16867a)};
  return r < static_cast<int>(strokes.size()) ? strokes[static_cast<size_t>(r)]
                                              : shardedFill(r).darker(170);
}

QColor variantColour(const std::string& variant) {
  std::string_view name = variant;
  const bool sfb = name.ends_with("+sfb");
  if (sfb) name.remove_suffix(4);
  // Fixed fills for the names the rules use, distinct from each other; other names (einsum
  // indices, ...) by a stable hash into Set3. "+sfb" is its base variant, a shade darker.
  static const std::unordered_map<std::string_view, QColor> known = {
      {"replicate", kReplicatedFill}, {"batch", QColor(0xa8c8f0)},   {"seq", QColor(0xa6e1ec)},
      {"column", QColor(0xffc99a)},   {"row", QColor(0xb5dfa8)},     {"partial", kPartialFill},
      {"reduce", QColor(0xe57373)},   {"vocab", QColor(0xd9c2ae)},   {"shard", QColor(0xf9c4d8)},
      {"reshard", QColor(0xd7bde2)},  {"channel", QColor(0x80cbc4)}, {"dim0", QColor(0xc5cae9)},
      {"dim1", QColor(0xe6ee9c)},     {"dim2", QColor(0xffe082)},    {"dim3", QColor(0xffccbc)},
      {"local", QColor(0xcfd8dc)},    {"keep", QColor(0xf0f4c3)},    {"like", QColor(0xd7ccc8)},
      {"index", QColor(0xb39ddb)},    {"sync", QColor(0x90caf9)}};
  auto it = known.find(name);
  const QColor c = it != known.end() ? it->second : set3()[stableHash(name) % set3().size()];
  return sfb ? c.darker(118) : c;
}

NodeColouring variantColouring(const ir::Graph& g, const ScopeTree& tree,
                               const std::vector<std::string>& variantByNode, QString title) {
  std::set<std::string> names;
  for (const std::string& v : variantByNode)
    if (!v.empty()) names.insert(v);
  std::vector<std::string> sorted(names.begin(), names.end());
  std::stable_partition(sorted.begin(), sorted.end(),
                        [](const std::string& s) { return s == "replicate"; });
  std::vector<QString> labels;
  std::vector<QColor> colours;
  std::unordered_map<std::string, int> index;
  for (const std::string& v : sorted) {
    index[v] = static_cast<int>(labels.size());
    labels.push_back(qs(v));
    colours.push_back(variantColour(v));
  }
  std::vector<int> category(g.nodes.size(), -1);
  for (size_t n = 0; n < g.nodes.size() && n < variantByNode.size(); ++n)
    if (!variantByNode[n].empty()) category[n] = index[variantByNode[n]];
  if (title.isEmpty()) title = colourByName(ColourBy::Variant);
  return NodeColouring::fromCategories(g, tree, ColourBy::Variant, std::move(title),
                                       std::move(labels), std::move(category), std::move(colours));
}

NodeColouring planColouring(const PlanOverlay& overlay, const ir::Graph& g, const ScopeTree& tree,
                            ColourBy mode, int costRank) {
  if (overlay.empty() || !colourByNeedsPlan(mode)) return NodeColouring(g, tree, mode);
  const size_t nodes = std::min(g.nodes.size(), static_cast<size_t>(overlay.nodeCount()));
  switch (mode) {
    case ColourBy::ShardingForm: {
      const int maxDim = overlay.maxShardedDim();
      std::vector<int> category(g.nodes.size(), -1);
      for (size_t n = 0; n < nodes; ++n) {
        const PlanNodeInfo& info = overlay.node(static_cast<ir::NodeId>(n));
        if (info.hasOutputForm) category[n] = formCategory(info.outputForm, maxDim);
      }
      return NodeColouring::fromCategories(g, tree, mode, QStringLiteral("Sharding form (output)"),
                                           formCategoryLabels(maxDim), std::move(category),
                                           formCategoryColours(maxDim));
    }
    case ColourBy::Variant: {
      std::vector<std::string> variants = overlay.variantByNode();
      variants.resize(nodes);
      return variantColouring(g, tree, variants, QStringLiteral("Rule variant"));
    }
    case ColourBy::Segment: {
      const auto& segments = overlay.plan().segments;
      std::vector<QString> labels;
      std::vector<QColor> colours;
      for (size_t s = 0; s < segments.size(); ++s) {
        labels.push_back(qs(segments[s].name));
        colours.push_back(segmentColour(static_cast<int>(s)));
      }
      std::vector<int> category(g.nodes.size(), -1);
      for (size_t n = 0; n < nodes; ++n)
        category[n] = overlay.node(static_cast<ir::NodeId>(n)).segment;
      return NodeColouring::fromCategories(g, tree, mode, QStringLiteral("Segment"),
                                           std::move(labels), std::move(category),
                                           std::move(colours));
    }
    case ColourBy::DeviceCost: {
      int rank = costRank;
      if (rank < 0 || rank >= overlay.rankCount()) rank = overlay.bottleneckRank();
      std::vector<double> values(g.nodes.size(), kNaN);
      for (size_t n = 0; n < nodes; ++n)
        values[n] = overlay.nodeSeconds(static_cast<ir::NodeId>(n), rank);
      return NodeColouring::fromValues(
          g, tree, mode, QStringLiteral("Time on %1 (fwd + bwd)").arg(overlay.rankName(rank)),
          std::move(values), /*logScale=*/true, ValueUnit::Seconds);
    }
    default:
      break;
  }
  return NodeColouring(g, tree, mode);
}

// ---- drawn edges --------------------------------------------------------------------------------

std::vector<EdgeAnnotation> annotateEdges(const PlanOverlay& overlay, const ir::Graph& g,
                                          const ScopeTree& tree, const CollapseState& state,
                                          const Layout& layout) {
  if (overlay.empty() || overlay.nodeCount() != static_cast<int>(g.nodes.size())) return {};
  const plan::Plan& p = overlay.plan();
  // The box drawing each node (itself or its collapsed scope), once for all edges.
  std::unordered_map<uint64_t, int> boxByKey;
  auto key = [](LayoutBox::Kind kind, int id) {
    return (static_cast<uint64_t>(kind) << 32) | static_cast<uint32_t>(id);
  };
  for (size_t b = 0; b < layout.boxes.size(); ++b)
    boxByKey.emplace(key(layout.boxes[b].kind, layout.boxes[b].id), static_cast<int>(b));
  std::vector<int> boxOfNode(g.nodes.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ScopeId rep = state.representative(tree, static_cast<ir::NodeId>(n));
    const auto it = boxByKey.find(rep < 0 ? key(LayoutBox::Kind::Op, static_cast<int>(n))
                                          : key(LayoutBox::Kind::CollapsedScope, rep));
    if (it != boxByKey.end()) boxOfNode[n] = it->second;
  }

  std::vector<EdgeAnnotation> notes(layout.edges.size());
  for (size_t i = 0; i < layout.edges.size(); ++i) {
    const LayoutEdge& le = layout.edges[i];
    std::map<QString, int> collectiveGlyphs, localGlyphs, kinds;
    std::map<rules::Rel, int> forms;
    int reads = 0, collectives = 0, local = 0;
    const PlanEdgeInfo* only = nullptr;
    for (ir::ValueId v : le.values) {
      if (v < 0 || v >= static_cast<int>(g.values.size())) continue;
      const std::set<ir::NodeId> users(g.value(v).users.begin(), g.value(v).users.end());
      for (ir::NodeId u : users) {
        if (boxOfNode[static_cast<size_t>(u)] != le.to) continue;
        const PlanEdgeInfo* r = overlay.edge(v, u);
        if (!r) continue;
        ++reads;
        only = r;
        if (r->hasValueForm) ++forms[r->valueForm];
        for (int c : r->conversions) {
          const plan::PlanStep& s = p.steps[static_cast<size_t>(c)];
          const QString glyph = conversionGlyph(s);
          if (glyph.isEmpty()) continue;  // a reshard that moves nothing
          if (isCollective(s))
            ++collectiveGlyphs[glyph], ++collectives;
          else
            ++localGlyphs[glyph], ++local;
          ++kinds[conversionText(s)];
        }
      }
    }
    EdgeAnnotation& note = notes[i];
    note.converted = collectives + local > 0;
    note.collective = collectives > 0;
    // The label: the commonest kinds, communication first ("AG", "AG×2 RS", "A2A SL…").
    const auto& glyphs = collectives > 0 ? collectiveGlyphs : localGlyphs;
    std::vector<std::pair<QString, int>> sorted(glyphs.begin(), glyphs.end());
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    QStringList parts;
    for (size_t k = 0; k < sorted.size() && k < 2; ++k)
      parts << (sorted[k].second > 1
                    ? QStringLiteral("%1×%2").arg(sorted[k].first).arg(sorted[k].second)
                    : sorted[k].first);
    note.label =
        parts.join(QLatin1Char(' ')) + (sorted.size() > 2 ? QStringLiteral("…") : QString());
    // The tooltip: one read in full; an aggregate for a bundle of reads.
    QStringList lines;
    if (reads == 1 && only) {
      const ir::Value& v = g.value(only->value);
      lines << QStringLiteral("%1 %2").arg(qs(v.name), qs(ir::formatShape(v.shape)));
      if (const plan::Form* produced = overlay.producedForm(only->value))
        lines << QObject::tr("produced as %1").arg(formText(*produced));
      else if (only->hasValueForm)
        lines << QObject::tr("held as %1").arg(relText(only->valueForm));
      for (int c : only->conversions) {
        const plan::PlanStep& s = p.steps[static_cast<size_t>(c)];
        if (s.kind == plan::PlanStep::Kind::Convert)
          lines << QObject::tr("%1: %2 → %3 · %4")
                       .arg(conversionText(s), relText(s.from.rel), relText(s.to.rel),
                            s.seconds() > 0 ? formatDuration(s.seconds()) : QObject::tr("free"));
        else
          lines << QObject::tr("%1 into segment %2 · %3")
                       .arg(conversionText(s), overlay.segmentName(s.segment),
                            isCollective(s)
                                ? formatDuration(s.forwardCommunication + s.backwardCommunication)
                                : QObject::tr("free"));
      }
      if (only->hasReadForm)
        lines << QObject::tr("read by %1 #%2 as %3")
                     .arg(qs(g.node(only->consumer).op))
                     .arg(only->consumer)
                     .arg(formText(only->read));
    } else if (reads > 1) {
      lines << QObject::tr("%n read(s) of %1 value(s)", nullptr, reads).arg(le.values.size());
      if (collectives > 0) lines << QObject::tr("%n collective(s):", nullptr, collectives);
      if (note.converted)
        for (const auto& [kind, count] : kinds)
          lines << QStringLiteral("  %1× %2").arg(count).arg(kind);
      if (!note.converted) lines << QObject::tr("no conversions");
    }
    note.toolTip = lines.join(QLatin1Char('\n'));
    if (!forms.empty()) {
      const auto best =
          std::max_element(forms.begin(), forms.end(),
                           [](const auto& a, const auto& b) { return a.second < b.second; });
      note.stroke = formStrokeColour(best->first);
    }
  }
  return notes;
}

std::vector<std::pair<QString, QColor>> edgeFormLegend(const PlanOverlay& overlay,
                                                       const Layout& layout) {
  std::vector<std::pair<QString, QColor>> out;
  if (overlay.empty()) return out;
  const int maxDim = overlay.maxShardedDim();
  std::vector<bool> seen(static_cast<size_t>(maxDim + 3), false);
  for (const LayoutEdge& le : layout.edges)
    for (ir::ValueId v : le.values)
      for (const PlanEdgeInfo* r : overlay.readsOf(v))
        if (r->hasValueForm) {
          const int c = formCategory(r->valueForm, maxDim);
          if (c >= 0) seen[static_cast<size_t>(c)] = true;
          break;
        }
  const std::vector<QString> labels = formCategoryLabels(maxDim);
  for (size_t c = 0; c < labels.size(); ++c) {
    if (!seen[c]) continue;
    const rules::Rel r =
        c == 0 ? rules::kIdentity
               : (c == labels.size() - 1 ? rules::kReduce : rules::gather(static_cast<int>(c) - 1));
    out.emplace_back(labels[c], formStrokeColour(r));
  }
  return out;
}

// ---- pins ---------------------------------------------------------------------------------------

std::vector<std::vector<std::string>> ruleVariantNames(const ir::Graph& g) {
  const synth::Theory theory(g);
  std::vector<std::vector<std::string>> out(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (const rules::Variant& v : theory.variants(static_cast<ir::NodeId>(n)))
      if (std::find(out[n].begin(), out[n].end(), v.name) == out[n].end()) out[n].push_back(v.name);
  return out;
}

namespace {

bool hasVariant(const std::vector<std::vector<std::string>>& variants, size_t n,
                const std::string& v) {
  return n < variants.size() &&
         std::find(variants[n].begin(), variants[n].end(), v) != variants[n].end();
}

// How many nodes with `variant` `pattern` selects, and how many of them satisfy `wanted`.
template <typename Wanted>
PinChoice evaluate(const ir::Graph& g, const std::vector<std::vector<std::string>>& variants,
                   std::string pattern, const std::string& variant, Wanted wanted) {
  PinChoice c;
  c.pattern = std::move(pattern);
  for (const ir::Node& n : g.nodes) {
    if (!hasVariant(variants, static_cast<size_t>(n.id), variant)) continue;
    const bool want = wanted(n.id);
    const bool match = synth::globMatch(c.pattern, n.scope) || synth::globMatch(c.pattern, n.op);
    c.selected += match;
    c.wanted += want && match;
  }
  return c;
}

}  // namespace

PinChoice pinForNode(const ir::Graph& g, const std::vector<std::vector<std::string>>& variants,
                     ir::NodeId node, const std::string& variant) {
  const ir::Node& n = g.node(node);
  auto wanted = [node](ir::NodeId m) { return m == node; };
  PinChoice byOp = evaluate(g, variants, n.op, variant, wanted);
  if (n.scope.empty()) return byOp;
  PinChoice byScope = evaluate(g, variants, n.scope, variant, wanted);
  if (!byScope.exact() && byOp.exact() && byOp.wanted > 0) return byOp;
  return byScope;
}

PinChoice pinForScope(const ir::Graph& g, const ScopeTree& tree,
                      const std::vector<std::vector<std::string>>& variants, ScopeId scope,
                      const std::string& variant) {
  const std::string& path = tree.scope(scope).path;
  auto inside = [&](ir::NodeId m) { return tree.contains(scope, tree.scopeOfNode(m)); };
  if (path.empty()) return evaluate(g, variants, "*", variant, inside);
  int target = 0;
  for (const ir::Node& n : g.nodes)
    target += hasVariant(variants, static_cast<size_t>(n.id), variant) && inside(n.id);
  std::vector<PinChoice> candidates = {evaluate(g, variants, path + "*", variant, inside),
                                       evaluate(g, variants, path + ".*", variant, inside),
                                       evaluate(g, variants, path, variant, inside)};
  // Exact first; then whatever takes the whole subtree with the fewest others; then the most.
  for (const PinChoice& c : candidates)
    if (c.wanted == target && c.exact()) return c;
  const PinChoice* best = &candidates.front();
  for (const PinChoice& c : candidates) {
    const bool covers = c.wanted == target, bestCovers = best->wanted == target;
    if (covers != bestCovers ? covers
                             : (covers ? c.selected < best->selected : c.wanted > best->wanted))
      best = &c;
  }
  return *best;
}

}  // namespace hap::studio
