#include "app/studio/core/models/properties_model.h"

#include <QFont>

#include <algorithm>
#include <map>

#include "app/studio/core/display/units.h"
#include "engine/ir/summary.h"

namespace hap::studio {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

QString count(double n) { return qs(ir::formatCount(n)); }
QString bytes(int64_t b) { return qs(ir::formatBytes(b)); }
QString exact(double n) { return QStringLiteral("%L1").arg(n, 0, 'f', 0); }

QString scopeText(const std::string& scope) {
  return scope.empty() ? PropertiesModel::tr("(top)") : qs(scope);
}

// "float32 [4, 32]".
QString typeText(const ir::Value& v) {
  return QStringLiteral("%1 %2").arg(qs(ir::dtypeName(v.dtype)), qs(ir::formatShape(v.shape)));
}

// The name a value goes by in signatures: "%input.1" for activations, the name otherwise.
QString valueName(const ir::Value& v) {
  return v.kind == ir::ValueKind::Activation ? QLatin1Char('%') + qs(v.name) : qs(v.name);
}

// "aten::log_softmax.int(Tensor self=%9, int dim=-1, ScalarType? dtype=None) -> Tensor".
QString signature(const ir::Graph& g, const ir::Node& n) {
  QStringList args;
  for (const ir::Arg& a : n.args) {
    QString value;
    switch (a.kind) {
      case ir::Arg::Kind::Tensor:
        value = a.values.empty() ? QStringLiteral("None") : valueName(g.value(a.values.front()));
        break;
      case ir::Arg::Kind::TensorList: {
        QStringList items;
        for (ir::ValueId v : a.values) items << valueName(g.value(v));
        for (int at : a.noneAt)
          items.insert(std::clamp<qsizetype>(at, 0, items.size()), QStringLiteral("None"));
        value = QLatin1Char('[') + items.join(QStringLiteral(", ")) + QLatin1Char(']');
        break;
      }
      case ir::Arg::Kind::Constant:
        value = qs(ir::formatConstant(a.constant));
        break;
    }
    args << QStringLiteral("%1 %2=%3").arg(qs(a.type), qs(a.name), value);
  }
  QString op = qs(n.op);
  if (!n.overload.empty()) op += QLatin1Char('.') + qs(n.overload);
  QString results = n.outputs.size() == 1
                        ? QStringLiteral("Tensor")
                        : QStringLiteral("(%1)").arg(
                              QStringList(static_cast<qsizetype>(n.outputs.size()),
                                          QStringLiteral("Tensor"))
                                  .join(QStringLiteral(", ")));
  return QStringLiteral("%1(%2) -> %3").arg(op, args.join(QStringLiteral(", ")), results);
}

}  // namespace

PropertiesModel::PropertiesModel(QObject* parent) : QAbstractItemModel(parent) {}

QString PropertiesModel::valueLabel(const ir::Value& v) {
  return QStringLiteral("%1 · %2").arg(valueName(v), typeText(v));
}

QString PropertiesModel::nodeLabel(const ir::Node& n) {
  return QStringLiteral("%1 #%2 · %3").arg(qs(n.op)).arg(n.id).arg(scopeText(n.scope));
}

void PropertiesModel::setGraph(std::shared_ptr<const ir::Graph> graph,
                               std::shared_ptr<const ScopeTree> scopes) {
  beginResetModel();
  m_graph = std::move(graph);
  m_scopes = std::move(scopes);
  m_selection = {};
  // A plan stays only while it is a plan of this graph.
  if (m_overlay && (!m_graph || m_overlay->nodeCount() != static_cast<int>(m_graph->nodes.size())))
    m_overlay.reset();
  build();
  endResetModel();
}

void PropertiesModel::setPlan(std::shared_ptr<const PlanDocument> plan) {
  beginResetModel();
  m_overlay.reset();
  if (plan && plan->imported && m_graph && plan->imported->nodes.size() == m_graph->nodes.size()) {
    auto overlay = std::make_shared<const PlanOverlay>(std::move(plan));
    if (!overlay->empty()) m_overlay = std::move(overlay);
  }
  build();
  endResetModel();
}

void PropertiesModel::setSelection(Selection selection) {
  beginResetModel();
  m_selection = selection;
  build();
  endResetModel();
}

QString PropertiesModel::title() const {
  if (m_items.empty()) return {};
  switch (m_selection.kind) {
    case Selection::Kind::Node: {
      const ir::Node& n = m_graph->node(m_selection.id);
      return tr("Node #%1  %2").arg(n.id).arg(qs(n.op));
    }
    case Selection::Kind::Value: {
      const ir::Value& v = m_graph->value(m_selection.id);
      QString kind = qs(ir::valueKindName(v.kind));
      if (!kind.isEmpty()) kind[0] = kind[0].toUpper();
      return tr("%1 %2").arg(kind, valueName(v));
    }
    case Selection::Kind::Scope:
      return tr("Scope %1").arg(scopeText(m_scopes->scope(m_selection.id).path));
    case Selection::Kind::None:
      break;
  }
  return {};
}

Selection PropertiesModel::link(const QModelIndex& index) {
  if (!index.isValid()) return {};
  auto kind = static_cast<Selection::Kind>(index.data(LinkKindRole).toInt());
  if (kind == Selection::Kind::None) return {};
  return Selection{kind, index.data(LinkIdRole).toInt()};
}

int PropertiesModel::add(int parent, QString name, QString value, Selection link, QString toolTip) {
  Item item;
  item.name = std::move(name);
  item.value = std::move(value);
  item.toolTip = std::move(toolTip);
  item.link = link;
  item.parent = parent;
  std::vector<int>& siblings = parent < 0 ? m_topLevel : m_items[static_cast<size_t>(parent)].children;
  item.row = static_cast<int>(siblings.size());
  int id = static_cast<int>(m_items.size());
  siblings.push_back(id);
  m_items.push_back(std::move(item));
  return id;
}

Selection PropertiesModel::scopeLink(const std::string& path) const {
  if (!m_scopes) return {};
  ScopeId s = m_scopes->find(path);
  return s < 0 ? Selection{} : Selection::scope(s);
}

void PropertiesModel::build() {
  m_items.clear();
  m_topLevel.clear();
  if (!m_graph) return;
  const int id = m_selection.id;
  switch (m_selection.kind) {
    case Selection::Kind::Node:
      if (id >= 0 && id < static_cast<int>(m_graph->nodes.size())) buildNode(m_graph->node(id));
      break;
    case Selection::Kind::Value:
      if (id >= 0 && id < static_cast<int>(m_graph->values.size())) buildValue(m_graph->value(id));
      break;
    case Selection::Kind::Scope:
      if (m_scopes && id >= 0 && id < m_scopes->size()) buildScope(m_scopes->scope(id));
      break;
    case Selection::Kind::None:
      break;
  }
}

void PropertiesModel::buildNode(const ir::Node& n) {
  const ir::Graph& g = *m_graph;
  add(-1, tr("op"), qs(n.op));
  if (!n.overload.empty()) add(-1, tr("overload"), qs(n.overload));
  QString sig = signature(g, n);
  add(-1, tr("signature"), sig, {}, sig);
  add(-1, tr("id"), QStringLiteral("#%1").arg(n.id));
  add(-1, tr("scope"), scopeText(n.scope), scopeLink(n.scope));
  add(-1, tr("source"), n.loc.known() ? qs(n.loc.str()) : tr("unknown"), {},
      n.loc.known() ? QStringLiteral("%1:%2").arg(qs(n.loc.file)).arg(n.loc.line) : QString());
  if (n.inplace && !n.outputs.empty()) {
    ir::ValueId old = g.value(n.outputs.front()).aliasOf;
    add(-1, tr("in-place"),
        old == ir::kNone ? tr("yes") : tr("overwrites %1").arg(valueName(g.value(old))),
        old == ir::kNone ? Selection{} : Selection::value(old));
  }

  // Tensor arguments, then constant ones (attributes), each in schema order.
  std::vector<std::pair<QString, ir::ValueId>> inputs;
  for (const ir::Arg& a : n.args) {
    if (a.kind == ir::Arg::Kind::Tensor && !a.values.empty())
      inputs.emplace_back(qs(a.name), a.values.front());
    if (a.kind == ir::Arg::Kind::TensorList)
      for (size_t i = 0; i < a.values.size(); ++i)
        inputs.emplace_back(QStringLiteral("%1[%2]").arg(qs(a.name)).arg(i), a.values[i]);
  }
  int group = add(-1, tr("Inputs"), QString::number(inputs.size()));
  for (const auto& [name, v] : inputs) {
    const ir::Value& value = g.value(v);
    add(group, name,
        QStringLiteral("%1 · %2").arg(valueLabel(value), qs(ir::valueKindName(value.kind))),
        Selection::value(v), tr("%1, %2").arg(qs(ir::valueKindName(value.kind)), bytes(value.bytes())));
  }
  int constants = static_cast<int>(std::count_if(n.args.begin(), n.args.end(), [](const ir::Arg& a) {
    return a.kind == ir::Arg::Kind::Constant;
  }));
  if (constants > 0) {
    group = add(-1, tr("Attributes"), QString::number(constants));
    for (const ir::Arg& a : n.args)
      if (a.kind == ir::Arg::Kind::Constant)
        add(group, qs(a.name), qs(ir::formatConstant(a.constant)), {}, qs(a.type));
  }

  group = add(-1, tr("Outputs"), QString::number(n.outputs.size()));
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const ir::Value& value = g.value(n.outputs[i]);
    add(group, QString::number(i), valueLabel(value), Selection::value(value.id),
        tr("%1, %2 consumer(s)").arg(bytes(value.bytes())).arg(value.users.size()));
  }

  group = add(-1, tr("Cost"), tr("%1 FLOPs").arg(count(n.cost.flops)));
  add(group, tr("FLOPs"), count(n.cost.flops), {}, exact(n.cost.flops));
  add(group, tr("bytes read"), bytes(n.cost.bytesRead), {},
      exact(static_cast<double>(n.cost.bytesRead)));
  add(group, tr("bytes written"), bytes(n.cost.bytesWritten), {},
      exact(static_cast<double>(n.cost.bytesWritten)));

  std::vector<ir::ValueId> params;
  for (ir::ValueId v : n.tensorInputs())
    if (g.value(v).kind == ir::ValueKind::Parameter &&
        std::find(params.begin(), params.end(), v) == params.end())
      params.push_back(v);
  int64_t elements = 0, paramBytes = 0;
  for (ir::ValueId v : params) {
    elements += g.value(v).numel();
    paramBytes += g.value(v).bytes();
  }
  group = add(-1, tr("Parameters"),
              params.empty() ? tr("none")
                             : (params.size() == 1 ? tr("1 tensor") : tr("%1 tensors").arg(params.size())) +
                                   tr(", %1 elements (%2)")
                                       .arg(count(static_cast<double>(elements)), bytes(paramBytes)));
  for (ir::ValueId v : params)
    add(group, qs(g.value(v).name), typeText(g.value(v)), Selection::value(v),
        tr("%L1 elements").arg(g.value(v).numel()));

  if (m_overlay) buildNodePlan(n, inputs);

  std::vector<const ir::Diagnostic*> diagnostics;
  for (const ir::Diagnostic& d : g.diagnostics)
    if (d.node == n.id) diagnostics.push_back(&d);
  if (!diagnostics.empty()) {
    group = add(-1, tr("Diagnostics"), QString::number(diagnostics.size()));
    for (const ir::Diagnostic* d : diagnostics)
      add(group, d->severity == ir::Diagnostic::Severity::Error ? tr("error") : tr("warning"),
          qs(d->message), {}, qs(d->message));
  }
}

void PropertiesModel::buildValue(const ir::Value& v) {
  const ir::Graph& g = *m_graph;
  add(-1, tr("name"), valueName(v));
  add(-1, tr("kind"), qs(ir::valueKindName(v.kind)));
  add(-1, tr("dtype"), qs(ir::dtypeName(v.dtype)));
  add(-1, tr("shape"), qs(ir::formatShape(v.shape)));
  add(-1, tr("elements"), count(static_cast<double>(v.numel())), {},
      exact(static_cast<double>(v.numel())));
  add(-1, tr("bytes"), bytes(v.bytes()), {}, exact(static_cast<double>(v.bytes())));
  if (v.id == g.loss) add(-1, tr("loss"), tr("yes: the value forward returns"));
  if (v.low || v.high)
    add(-1, tr("range"),
        QStringLiteral("[%1, %2)")
            .arg(v.low ? QString::number(*v.low) : QStringLiteral("-∞"),
                 v.high ? QString::number(*v.high) : QStringLiteral("∞")));
  if (v.kind == ir::ValueKind::Parameter || v.kind == ir::ValueKind::Buffer) {
    std::string owner(ir::ownerScope(v.name));
    add(-1, tr("owner scope"), scopeText(owner), scopeLink(owner));
  }
  if (v.producer != ir::kNone) {
    const ir::Node& p = g.node(v.producer);
    add(-1, tr("producer"), nodeLabel(p), Selection::node(p.id));
    if (p.outputs.size() > 1) add(-1, tr("output index"), QString::number(v.producerOutput));
  }
  if (v.aliasOf != ir::kNone)
    add(-1, tr("overwrites"), valueLabel(g.value(v.aliasOf)), Selection::value(v.aliasOf));
  int group = add(-1, tr("Consumers"), QString::number(v.users.size()));
  for (ir::NodeId u : v.users)
    add(group, QStringLiteral("#%1").arg(u), nodeLabel(g.node(u)), Selection::node(u));
  if (m_overlay) buildValuePlan(v);
}

void PropertiesModel::buildScope(const Scope& s) {
  const ir::Graph& g = *m_graph;
  add(-1, tr("path"), scopeText(s.path));
  if (s.parent >= 0) {
    const Scope& parent = m_scopes->scope(s.parent);
    add(-1, tr("parent"), scopeText(parent.path), Selection::scope(parent.id));
  }
  add(-1, tr("ops"), QString::number(s.opCount));
  add(-1, tr("parameters"), count(static_cast<double>(s.parameters)), {},
      tr("%L1 elements").arg(s.parameters));
  add(-1, tr("param bytes"), bytes(s.parameterBytes), {},
      exact(static_cast<double>(s.parameterBytes)));
  add(-1, tr("FLOPs"), count(s.flops), {}, exact(s.flops));
  add(-1, tr("activations"), bytes(s.activationBytes), {},
      exact(static_cast<double>(s.activationBytes)));

  std::map<std::string, int> ops;
  for (const ir::Node& n : g.nodes)
    if (m_scopes->contains(s.id, m_scopes->scopeOfNode(n.id))) {
      std::string_view op = n.op;
      if (op.starts_with("aten::")) op.remove_prefix(6);
      ++ops[std::string(op)];
    }
  std::vector<std::pair<std::string, int>> sorted(ops.begin(), ops.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  int group = add(-1, tr("Op counts"), QString::number(sorted.size()));
  for (const auto& [op, n] : sorted) add(group, qs(op), QString::number(n));

  if (!s.children.empty()) {
    group = add(-1, tr("Sub-scopes"), QString::number(s.children.size()));
    for (ScopeId c : s.children) {
      const Scope& child = m_scopes->scope(c);
      add(group, qs(child.label),
          (child.opCount == 1 ? tr("1 op") : tr("%1 ops").arg(child.opCount)) +
              tr(", %1 FLOPs").arg(count(child.flops)),
          Selection::scope(c), qs(child.path));
    }
  }
  if (m_overlay) buildScopePlan(s);
}

// ---- plan rows ----------------------------------------------------------------------------------

namespace {

// "0.412 ms (fwd 0.137 ms, bwd 0.275 ms)".
QString timeText(double forward, double backward) {
  return PropertiesModel::tr("%1 (fwd %2, bwd %3)")
      .arg(formatDuration(forward + backward), formatDuration(forward), formatDuration(backward));
}

// "G(1) → I · 21.0 µs (fwd 10.0 µs, bwd 11.0 µs)".
QString conversionRow(const PlanOverlay& o, const plan::PlanStep& s) {
  if (s.kind == plan::PlanStep::Kind::Compute) {
    const double comm = s.forwardCommunication + s.backwardCommunication;
    return PropertiesModel::tr("into segment %1 · %2")
        .arg(o.segmentName(s.segment),
             comm > 0 ? timeText(s.forwardCommunication, s.backwardCommunication)
                      : PropertiesModel::tr("free"));
  }
  return QStringLiteral("%1 → %2 · %3")
      .arg(relText(s.from.rel), relText(s.to.rel),
           s.seconds() > 0 ? timeText(s.forwardSeconds, s.backwardSeconds)
                           : PropertiesModel::tr("free"));
}

}  // namespace

void PropertiesModel::buildNodePlan(const ir::Node& n,
                                    const std::vector<std::pair<QString, ir::ValueId>>& inputs) {
  const PlanOverlay& o = *m_overlay;
  const ir::Graph& g = *m_graph;
  const PlanNodeInfo& info = o.node(n.id);
  const plan::Plan& p = o.plan();
  const int bottleneck = o.bottleneckRank();
  if (info.computeStep < 0) {
    add(-1, tr("Plan"), tr("no step computes this node"));
    return;
  }
  const plan::PlanStep& step = p.steps[static_cast<size_t>(info.computeStep)];
  const int planRow = add(-1, tr("Plan"),
                          tr("%1 · %2 on rank %3")
                              .arg(qs(info.variant), formatDuration(o.nodeSeconds(n.id, bottleneck)))
                              .arg(bottleneck));
  add(planRow, tr("variant"), qs(info.variant), {},
      step.sfb ? tr("sufficient-factor broadcasting: the weight's gradient is formed from gathered "
                    "factors")
               : QString());
  add(planRow, tr("segment"), o.segmentName(info.segment));

  int group = add(planRow, tr("Input forms"), QString::number(inputs.size()));
  for (const auto& [name, v] : inputs) {
    const PlanEdgeInfo* e = o.edge(v, n.id);
    if (!e || !e->hasReadForm) {
      add(group, name, valueName(g.value(v)), Selection::value(v));
      continue;
    }
    QStringList via;
    for (int c : e->conversions) {
      const QString glyph = conversionGlyph(p.steps[static_cast<size_t>(c)]);
      if (!glyph.isEmpty()) via << conversionText(p.steps[static_cast<size_t>(c)]);
    }
    // The form first: value names are long, and the row's name already says which argument.
    QString text = formText(e->read);
    if (!via.isEmpty()) text += tr(" · after %1").arg(via.join(QStringLiteral(", ")));
    add(group, name, text, Selection::value(v),
        QStringLiteral("%1: %2").arg(valueName(g.value(v)), text));
  }
  group = add(planRow, tr("Output forms"), QString::number(step.outputs.size()));
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const plan::Form& f = step.outputs[i];
    const bool known = f.value >= 0 && static_cast<size_t>(f.value) < g.values.size();
    const QString text =
        known ? QStringLiteral("%1 · %2").arg(formText(f), valueName(g.value(f.value)))
              : formText(f);
    add(group, QString::number(i), text, known ? Selection::value(f.value) : Selection{}, text);
  }

  // The conversions that prepare its inputs, in program order.
  // (Not the ones that change nothing a reader sees: plain loads, reshards that move nothing.)
  std::vector<int> conversions;
  for (int e : info.edges)
    for (int c : o.edges()[static_cast<size_t>(e)].conversions)
      if (!conversionGlyph(p.steps[static_cast<size_t>(c)]).isEmpty()) conversions.push_back(c);
  std::sort(conversions.begin(), conversions.end());
  if (!conversions.empty()) {
    group = add(planRow, tr("Conversions before it"), QString::number(conversions.size()));
    for (int c : conversions) {
      const plan::PlanStep& s = p.steps[static_cast<size_t>(c)];
      const ir::ValueId v = s.kind == plan::PlanStep::Kind::Convert ? s.to.value : ir::kNone;
      const QString name = conversionText(s);
      QString text = conversionRow(o, s);
      if (v >= 0 && static_cast<size_t>(v) < g.values.size())
        text = QStringLiteral("%1 · %2").arg(text, valueName(g.value(v)));
      add(group, name, text,
          v >= 0 && static_cast<size_t>(v) < g.values.size() ? Selection::value(v) : Selection{},
          text);
    }
  }

  group = add(planRow, tr("Predicted time"), tr("forward + backward, per device"));
  for (int r = 0; r < o.rankCount(); ++r)
    add(group, o.rankName(r),
        timeText(info.forwardByRank[static_cast<size_t>(r)],
                 info.backwardByRank[static_cast<size_t>(r)]));
}

void PropertiesModel::buildValuePlan(const ir::Value& v) {
  const PlanOverlay& o = *m_overlay;
  const ir::Graph& g = *m_graph;
  const plan::Plan& p = o.plan();
  const std::vector<const PlanEdgeInfo*> reads = o.readsOf(v.id);
  const plan::Form* produced = o.producedForm(v.id);
  int collectives = 0;
  for (const PlanEdgeInfo* e : reads) collectives += e->collectives;
  const int planRow =
      add(-1, tr("Plan"),
          produced ? formText(*produced)
                   : (reads.empty() ? tr("not read")
                                    : tr("%n read(s)", nullptr, static_cast<int>(reads.size()))));
  if (produced) add(planRow, tr("form"), formText(*produced), {}, formCategoryName(produced->rel));
  if (!reads.empty()) {
    const int group = add(planRow, tr("Reads"), QString::number(reads.size()));
    for (const PlanEdgeInfo* e : reads) {
      QString text = e->hasReadForm ? formText(e->read) : tr("unknown");
      if (e->resharded) text += tr(" · resharded into its segment");
      add(group, QStringLiteral("#%1 %2").arg(e->consumer).arg(qs(g.node(e->consumer).op)), text,
          Selection::node(e->consumer), nodeLabel(g.node(e->consumer)));
    }
  }
  int count = 0;
  for (const PlanEdgeInfo* e : reads)
    for (int c : e->conversions)
      count += !conversionGlyph(p.steps[static_cast<size_t>(c)]).isEmpty();
  if (count == 0) return;
  const int group =
      add(planRow, tr("Conversions"), tr("%1, %n communicating", nullptr, collectives).arg(count));
  for (const PlanEdgeInfo* e : reads)
    for (int c : e->conversions) {
      const plan::PlanStep& s = p.steps[static_cast<size_t>(c)];
      if (conversionGlyph(s).isEmpty()) continue;
      const QString text = tr("%1 · for #%2 %3")
                               .arg(conversionRow(o, s))
                               .arg(e->consumer)
                               .arg(qs(g.node(e->consumer).op));
      add(group, conversionText(s), text, Selection::node(e->consumer), text);
    }
}

void PropertiesModel::buildScopePlan(const Scope& s) {
  const PlanOverlay& o = *m_overlay;
  const ir::Graph& g = *m_graph;
  std::map<std::string, int> variants;
  std::vector<int> segments;
  std::vector<double> forward(static_cast<size_t>(o.rankCount()), 0), backward = forward;
  for (const ir::Node& n : g.nodes) {
    if (!m_scopes->contains(s.id, m_scopes->scopeOfNode(n.id))) continue;
    const PlanNodeInfo& info = o.node(n.id);
    if (info.computeStep < 0) continue;
    ++variants[info.variant];
    if (std::find(segments.begin(), segments.end(), info.segment) == segments.end())
      segments.push_back(info.segment);
    for (size_t r = 0; r < forward.size(); ++r) {
      forward[r] += info.forwardByRank[r];
      backward[r] += info.backwardByRank[r];
    }
  }
  if (variants.empty()) return;
  const int bottleneck = o.bottleneckRank();
  const int planRow = add(-1, tr("Plan"),
                          tr("%1 on rank %2")
                              .arg(formatDuration(forward[static_cast<size_t>(bottleneck)] +
                                                 backward[static_cast<size_t>(bottleneck)]))
                              .arg(bottleneck));
  QStringList names;
  for (int seg : segments) names << o.segmentName(seg);
  add(planRow, segments.size() == 1 ? tr("segment") : tr("segments"),
      names.join(QStringLiteral(", ")), {}, names.join(QStringLiteral(", ")));
  std::vector<std::pair<std::string, int>> sorted(variants.begin(), variants.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  int group = add(planRow, tr("Variants"), QString::number(sorted.size()));
  for (const auto& [name, count] : sorted) add(group, qs(name), tr("%n node(s)", nullptr, count));
  group = add(planRow, tr("Predicted time"), tr("its nodes' computation, per device"));
  for (int r = 0; r < o.rankCount(); ++r)
    add(group, o.rankName(r),
        timeText(forward[static_cast<size_t>(r)], backward[static_cast<size_t>(r)]));
}

const std::vector<int>& PropertiesModel::childrenOf(int item) const {
  return item < 0 ? m_topLevel : m_items[static_cast<size_t>(item)].children;
}

QModelIndex PropertiesModel::index(int row, int column, const QModelIndex& parent) const {
  if (column < 0 || column >= ColumnCount || row < 0) return {};
  if (parent.isValid() && parent.column() != 0) return {};
  const std::vector<int>& rows = childrenOf(parent.isValid() ? static_cast<int>(parent.internalId()) : -1);
  if (row >= static_cast<int>(rows.size())) return {};
  return createIndex(row, column, static_cast<quintptr>(rows[static_cast<size_t>(row)]));
}

QModelIndex PropertiesModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  int p = m_items[child.internalId()].parent;
  if (p < 0) return {};
  return createIndex(m_items[static_cast<size_t>(p)].row, 0, static_cast<quintptr>(p));
}

int PropertiesModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() && parent.column() != 0) return 0;
  return static_cast<int>(childrenOf(parent.isValid() ? static_cast<int>(parent.internalId()) : -1).size());
}

int PropertiesModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant PropertiesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Item& item = m_items[index.internalId()];
  switch (role) {
    case Qt::DisplayRole:
    case Qt::EditRole:
      return index.column() == PropertyColumn ? item.name : item.value;
    case Qt::ToolTipRole:
      if (index.column() == ValueColumn && !item.toolTip.isEmpty()) return item.toolTip;
      if (!item.link.empty()) return tr("%1 (click to select)").arg(item.value);
      return {};
    case Qt::FontRole:
      if (!item.children.empty() && index.column() == PropertyColumn) {
        QFont font;
        font.setBold(true);
        return font;
      }
      return {};
    case LinkKindRole:
      return static_cast<int>(item.link.kind);
    case LinkIdRole:
      return item.link.id;
    case IsGroupRole:
      return !item.children.empty();
    default:
      return {};
  }
}

QVariant PropertiesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section == PropertyColumn) return tr("Property");
  if (section == ValueColumn) return tr("Value");
  return {};
}

}  // namespace hap::studio
