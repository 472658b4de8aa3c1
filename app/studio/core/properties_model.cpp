#include "app/studio/core/properties_model.h"

#include <QFont>

#include <algorithm>
#include <map>

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
