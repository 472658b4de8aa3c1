// "Colour by": what colour each drawn box of the graph view gets, and the legend that explains it.
//
// A NodeColouring is computed once from a graph and its scope tree (or, for the plan modes, from
// per-node data fed from outside) and then answers per node, per collapsed scope and per graph
// input. A collapsed scope gets its aggregate: the sum of its nodes' values for numeric modes, the
// most frequent category (ties: the lower category; for op families, shape/view ops count only
// where nothing else is) for categorical ones. Numeric modes use a
// sequential ramp on a log scale whose range fitRange() adapts to what is drawn, so a collapsed
// view and an expanded one both use the whole ramp.
#pragma once

#include <QColor>
#include <QString>

#include <memory>
#include <string_view>
#include <vector>

#include "app/studio/core/graph/graph_layout.h"
#include "app/studio/core/graph/scope_tree.h"
#include "engine/ir/graph.h"

namespace hap::studio {

enum class ColourBy {
  OpFamily,
  Scope,         // one colour per top-level scope (child of the root)
  Flops,         // forward FLOPs, log ramp
  Bytes,         // bytes written, log ramp
  // Plan modes (issue 18; plan_overlay.h builds them through fromCategories/fromValues):
  ShardingForm,  // the form of each node's main output: replicated, sharded dim d, partial sum
  Variant,       // the rule variant each node is computed under
  Segment,       // the segment (ratio vector) each node belongs to
  DeviceCost,    // predicted forward + backward time on one device, log ramp
};
inline constexpr int kColourByCount = 8;

QString colourByName(ColourBy mode);  // "Op family", "Module scope", "FLOPs", ...
// True for the modes that need an open plan (their data comes from outside).
bool colourByNeedsPlan(ColourBy mode);

// Coarse categories of aten ops, derived from the op name.
enum class OpFamily {
  MatMul,         // linear, matmul, mm, bmm, addmm, einsum, ...
  Convolution,    // convolutions and pooling
  Normalisation,  // layer/batch/group/instance norm
  Activation,     // relu, gelu, tanh, sigmoid, silu, ...
  Elementwise,    // arithmetic, comparisons, casts, dropout, masks
  Reduction,      // sum, mean, max, norm, cumsum, ...
  Shape,          // views, reshapes, permutes, slicing, cat/split, index_select
  Embedding,
  Loss,
  Attention,      // softmax, log_softmax, scaled dot-product attention
  Other,          // factories, sorting, anything unknown
};
inline constexpr int kOpFamilyCount = 11;

// Accepts "aten::linear", "linear", in-place "relu_" and private "_softmax" forms alike.
OpFamily opFamily(std::string_view op);
QString opFamilyName(OpFamily family);  // "matmul / linear", "shape / view", ...
QColor opFamilyColour(OpFamily family);  // a light fill from a qualitative palette

// The unit of a numeric colouring's values (how the legend writes the ramp's ends).
enum class ValueUnit { Count, Bytes, Seconds };

// What a legend shows: categories with swatches, or a numeric ramp with its ends.
struct ColourLegend {
  QString title;
  std::vector<std::pair<QString, QColor>> entries;  // categorical, in category order
  bool numeric = false;
  double min = 0, max = 0;     // numeric: the values at the ramp's ends
  bool logScale = false;
  QString minLabel, maxLabel;  // formatted ends ("1.20K", "3.4 MiB", "12.5 µs")
  std::vector<QColor> ramp;    // numeric: evenly spaced stops, low to high
  bool empty() const { return entries.empty() && !numeric; }
};

class NodeColouring {
 public:
  NodeColouring() = default;  // every box neutral, empty legend
  // The graph-derived modes (OpFamily, Scope, Flops, Bytes). A plan mode gives a neutral colouring
  // whose legend says that a plan is needed.
  NodeColouring(const ir::Graph& g, const ScopeTree& tree, ColourBy mode);

  // Plan modes: one category per node (an index into `labels`, -1 for none); colours from the
  // qualitative palette unless `colours` gives one per label.
  static NodeColouring fromCategories(const ir::Graph& g, const ScopeTree& tree, ColourBy mode,
                                      QString title, std::vector<QString> labels,
                                      std::vector<int> nodeCategory,
                                      std::vector<QColor> colours = {});
  // Plan modes: one value per node (NaN for none), drawn on the sequential ramp.
  static NodeColouring fromValues(const ir::Graph& g, const ScopeTree& tree, ColourBy mode,
                                  QString title, std::vector<double> nodeValue, bool logScale,
                                  bool bytes = false);
  static NodeColouring fromValues(const ir::Graph& g, const ScopeTree& tree, ColourBy mode,
                                  QString title, std::vector<double> nodeValue, bool logScale,
                                  ValueUnit unit);

  ColourBy mode() const { return m_mode; }
  bool numeric() const { return m_numeric; }

  QColor nodeColour(ir::NodeId n) const;
  QColor scopeColour(ScopeId s) const;  // the aggregate over the scope's subtree
  QColor inputColour() const;
  QColor neutralColour() const;

  // Numeric modes: the raw value (NaN when none) and the category (-1 when none).
  double nodeValue(ir::NodeId n) const;
  double scopeValue(ScopeId s) const;
  int nodeCategory(ir::NodeId n) const;
  int scopeCategory(ScopeId s) const;

  // Numeric modes: sets the ramp's range to the values of the boxes `drawn` holds (positive
  // values only; the log ramp has no zero). No-op for categorical modes.
  void fitRange(const Layout& drawn);
  void setRange(double min, double max);

  // The legend for the whole graph, or for what `drawn` shows (only the categories present there).
  ColourLegend legend() const;
  ColourLegend legend(const Layout& drawn) const;

  // The ramp's colour at t in [0, 1].
  static QColor rampColour(double t);
  static std::vector<QColor> rampStops();
  // Dark or white text, whichever reads better on `fill`.
  static QColor textColourOn(const QColor& fill);

 private:
  QColor colourOfCategory(int c) const;
  QColor colourOfValue(double v) const;
  ColourLegend legendFor(const std::vector<bool>& present) const;
  void aggregate(const ScopeTree& tree);

  ColourBy m_mode = ColourBy::OpFamily;
  bool m_numeric = false;
  bool m_logScale = true;
  ValueUnit m_unit = ValueUnit::Count;
  bool m_needsPlan = false;
  QString m_title;
  std::vector<QString> m_labels;  // categorical
  std::vector<QColor> m_colours;
  std::vector<int> m_nodeCategory, m_scopeCategory;
  std::vector<double> m_nodeValue, m_scopeValue;
  double m_min = 0, m_max = 0;
};

}  // namespace hap::studio
