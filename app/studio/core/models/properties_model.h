// The properties of what is selected (a node, a value or a module scope), as a two-column tree:
// Property | Value (issue 17, item 3: the properties panel).
//
// Top-level rows are single properties ("op", "scope", "source") or groups ("Inputs", "Outputs",
// "Cost", "Consumers", ...) whose children are the items. A row that names another node, value or
// scope carries it in LinkKindRole/LinkIdRole (see link()), so a view can make it clickable.
// The model is rebuilt (reset) on every setSelection/setGraph/setPlan; it holds no state beyond
// that. With a plan (issue 18 item 3) a node adds a "Plan" group (variant, segment, input and
// output forms with every rank's exact length, conversions before it, predicted time per
// device), a value its forms and the collectives on it, a scope its segments and time per device.
#pragma once

#include <QAbstractItemModel>
#include <memory>
#include <vector>

#include "app/studio/core/documents/plan_document.h"
#include "app/studio/core/graph/plan_overlay.h"
#include "app/studio/core/graph/scope_tree.h"
#include "app/studio/core/documents/selection.h"
#include "engine/ir/graph.h"

namespace hap::studio {

class PropertiesModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Column { PropertyColumn, ValueColumn, ColumnCount };
  enum Role {
    LinkKindRole = Qt::UserRole,  // int(Selection::Kind) of the row's target; None when no link
    LinkIdRole,                   // its id
    IsGroupRole,                  // bool: the row is a group heading (it has children)
  };

  explicit PropertiesModel(QObject* parent = nullptr);

  // `scopes` may be null: scope selections then show nothing and scope rows carry no link.
  void setGraph(std::shared_ptr<const ir::Graph> graph, std::shared_ptr<const ScopeTree> scopes);
  // The plan whose rows to add (null: none). It must be a plan of the graph (same node count),
  // otherwise it is ignored. Keeps the selection.
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  const PlanOverlay* planOverlay() const { return m_overlay.get(); }
  // Shows `selection`; an empty or out-of-range one shows nothing.
  void setSelection(Selection selection);
  Selection selection() const { return m_selection; }
  // A one-line title for the selection: "Node #3  aten::linear", "Parameter fc.weight", "Scope encoder".
  QString title() const;

  // The selection a row links to (either column of it), or an empty Selection.
  static Selection link(const QModelIndex& index);

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

  // Text used for a value everywhere in the panel: "%input.1 · float32 [4, 32]" (activations get
  // the % of TorchScript, parameters/inputs/buffers their name as is).
  static QString valueLabel(const ir::Value& v);
  // "aten::linear #0 · hidden.0" ("(top)" for the top level).
  static QString nodeLabel(const ir::Node& n);

 private:
  struct Item {
    QString name;
    QString value;
    QString toolTip;
    Selection link;
    int parent = -1;  // index into m_items, -1 for top-level rows
    int row = 0;      // row under its parent
    std::vector<int> children;
  };

  // Appends a row under `parent` (-1: top level) and returns its index in m_items.
  int add(int parent, QString name, QString value, Selection link = {}, QString toolTip = {});
  void build();
  void buildNode(const ir::Node& n);
  void buildValue(const ir::Value& v);
  void buildScope(const Scope& s);
  void buildNodePlan(const ir::Node& n, const std::vector<std::pair<QString, ir::ValueId>>& inputs);
  void buildValuePlan(const ir::Value& v);
  void buildScopePlan(const Scope& s);
  Selection scopeLink(const std::string& path) const;
  const std::vector<int>& childrenOf(int item) const;

  std::shared_ptr<const ir::Graph> m_graph;
  std::shared_ptr<const ScopeTree> m_scopes;
  std::shared_ptr<const PlanOverlay> m_overlay;  // null without a plan
  Selection m_selection;
  std::vector<Item> m_items;
  std::vector<int> m_topLevel;
};

}  // namespace hap::studio
