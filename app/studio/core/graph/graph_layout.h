// Graph layout as a pure function (../shared/DESIGN.md §2, Hotspot's callgraphgenerator): from a
// graph, its scope tree and the collapse state to positioned boxes, clusters and edges, laid out by
// Graphviz `dot`. No widget, no global state; safe to call on any thread (each call owns its own
// Graphviz context), so the app runs it off the GUI thread and drops results it no longer needs.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "app/studio/core/graph/scope_tree.h"
#include "engine/ir/graph.h"

namespace hap::studio {

enum class RankDirection { TopToBottom, LeftToRight };

struct LayoutOptions {
  RankDirection direction = RankDirection::TopToBottom;
  // Draw forward's inputs as boxes of their own (parameters, buffers and constants are never
  // drawn: they are listed in the properties of the ops that use them, as Netron does).
  bool showInputs = true;
  // "Show only this scope": only the ops inside this scope's subtree are drawn (the scope and its
  // ancestors must be expanded in the collapse state); values they read from outside it are drawn
  // as input boxes (Kind::Input, id the value), and the scope gets no frame of its own.
  ScopeId focus = kRootScope;
};

struct PointF {
  double x = 0, y = 0;
  bool operator==(const PointF&) const = default;
};
struct RectF {
  double x = 0, y = 0, width = 0, height = 0;  // top-left origin, y down (Qt's convention)
  bool operator==(const RectF&) const = default;
};

// One drawn box: an op node, a collapsed scope, or a graph input (with a focus, also a value read
// from outside the focused scope).
struct LayoutBox {
  enum class Kind { Op, CollapsedScope, Input };
  Kind kind = Kind::Op;
  int id = -1;        // NodeId for Op, ScopeId for CollapsedScope, ValueId for Input
  std::string title;  // "linear", "layers.3", "input_ids"
  std::string detail; // one line under the title: the output shape, or "12 ops · 1.2M params"
  RectF rect;
};

// An expanded scope that has something drawn inside: a labelled frame around its boxes.
struct LayoutCluster {
  ScopeId scope = -1;
  std::string label;
  RectF rect;
};

// One edge between two drawn boxes; several values between the same two boxes are one edge.
struct LayoutEdge {
  int from = -1, to = -1;          // indices into Layout::boxes
  std::vector<ir::ValueId> values; // the values it carries, ascending
  std::vector<PointF> points;      // cubic Bézier control points: p0, then (c1, c2, p) triples
  bool operator==(const LayoutEdge&) const = default;
};

struct Layout {
  std::vector<LayoutBox> boxes;
  std::vector<LayoutCluster> clusters;
  std::vector<LayoutEdge> edges;
  double width = 0, height = 0;  // bounding box, points
  bool cancelled = false;        // the cancel flag was raised; the rest is empty

  // Index of the box drawing node n (as itself or inside a collapsed scope), or -1.
  int boxOfNode(const ScopeTree& tree, const CollapseState& state, ir::NodeId n) const;
};

// Lays out what `state` makes visible. `cancel` (may be null) is polled between phases; when it is
// raised the function returns early with Layout::cancelled set.
Layout layoutGraph(const ir::Graph& g, const ScopeTree& tree, const CollapseState& state,
                   const LayoutOptions& options = {}, const std::atomic<bool>* cancel = nullptr);

// The Graphviz input layoutGraph builds for the same arguments (clusters, nodes, edges, labels),
// deterministic text: the golden tests check it, and "Export graph as DOT" writes it.
std::string layoutDot(const ir::Graph& g, const ScopeTree& tree, const CollapseState& state,
                      const LayoutOptions& options = {});

}  // namespace hap::studio
