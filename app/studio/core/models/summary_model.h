// The per-scope model summary, as a table model (issue 17, item 4; issue 31).
//
// One row per module scope of the graph's ScopeTree at the current depth, in order of first
// appearance in the graph (nodes first, then parameters, as ir::summarize orders them), then one
// totals row, always the last source row. Depths count the tree's levels as the graph view draws
// them: the children of an nn.Sequential are one level below it, a chain of single-child scopes is
// one level, and inside a model wrapped in one module (ScopeTree::wrapper: a user's `model` with
// the loss beside it) depth 1 is the wrapper's children, not the wrapper. Depth 0 is one row for
// the whole model, -1 every scope whole. SummaryProxyModel sorts numerically by SortRole and keeps
// the totals row last in either order.
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <memory>

#include "app/studio/core/graph/scope_tree.h"
#include "engine/ir/graph.h"
#include "engine/ir/summary.h"

namespace hap::studio {

class SummaryModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    ScopeColumn,
    ParametersColumn,
    ParameterBytesColumn,
    FlopsColumn,
    ActivationsColumn,
    OpsColumn,
    TopOpsColumn,
    ColumnCount
  };
  enum Role {
    SortRole = Qt::UserRole,  // raw number (qint64 or double) for numeric columns, text otherwise
    ScopePathRole,            // QString scope path as ScopeTree::find takes it ("" = top level);
                              // a null QVariant on the totals row
    IsTotalRole,              // bool: true on the totals row only
  };

  explicit SummaryModel(QObject* parent = nullptr);

  // Replaces the graph (nullptr clears the table) and recomputes at the current depth.
  void setGraph(std::shared_ptr<const ir::Graph> graph);
  // Depth of the rows: -1 every scope, 0 one row, d: the scopes d levels below the top (below
  // the wrapper, inside it).
  void setDepth(int depth);
  int depth() const { return m_depth; }
  // The smallest depth at which no scope is truncated any more (0 for a graph without scopes):
  // every depth >= maxDepth() gives the same rows as -1.
  int maxDepth() const { return m_maxDepth; }
  // The module depth counts from (ScopeTree::wrapper), "" for the top level.
  QString wrapperPath() const;

  const ir::GraphSummary& summary() const { return m_summary; }
  // The source row of the totals row, or -1 when there is no graph.
  int totalRow() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

  // "linear×4 gelu×1 …": the most frequent ops, ties by name, as `hap inspect` prints them.
  static QString formatTopOps(const std::map<std::string, int>& opCounts, int shown = 4);

 private:
  void recompute();
  const ir::ScopeSummary& rowSummary(int row) const;

  // The scope standing for `s` at the current depth.
  ScopeId rowScope(ScopeId s) const;

  std::shared_ptr<const ir::Graph> m_graph;
  std::unique_ptr<ScopeTree> m_tree;
  ScopeId m_wrapper = kRootScope;
  ir::GraphSummary m_summary;
  int m_depth = 1;
  int m_maxDepth = 0;
};

// Sorts a SummaryModel by SortRole (numbers numerically) and keeps its totals row last whatever
// the order. Unsorted (sort column -1) it shows the source order.
class SummaryProxyModel : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit SummaryProxyModel(QObject* parent = nullptr);

 protected:
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;
};

}  // namespace hap::studio
