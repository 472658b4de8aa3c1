// Navigating a drawn graph as a Netron user expects (issue 31): which box an arrow key goes to,
// the breadcrumb path of the current scope, and the collapse state of "show only this scope".
// Plain functions over a Layout and a ScopeTree; the graph view only maps keys and clicks to them.
//
// Arrow keys follow edges: along the flow (Down in a top-to-bottom drawing, Right in a
// left-to-right one) to a successor, against it to a predecessor, each time the one nearest across
// the flow; across the flow (Left/Right top-to-bottom, Up/Down left-to-right) among siblings: the
// boxes that share a predecessor or a successor with this one, else the boxes of the same rank.
#pragma once

#include <Qt>

#include <optional>
#include <vector>

#include "app/studio/core/documents/selection.h"
#include "app/studio/core/graph/graph_layout.h"
#include "app/studio/core/graph/scope_tree.h"
#include "engine/ir/graph.h"

namespace hap::studio {

enum class NavigationMove { Next, Previous, SiblingBefore, SiblingAfter };

// The move an arrow key makes in a drawing of this direction; nullopt for other keys.
std::optional<NavigationMove> navigationMoveForKey(int key, RankDirection direction);

class LayoutNavigator {
 public:
  LayoutNavigator(const Layout& layout, RankDirection direction);

  // The box a move starts from when nothing is selected: the first along the flow (the top-most,
  // then left-most in a top-to-bottom drawing); -1 for an empty drawing.
  int first() const;
  // The box `move` goes to from `box`, or -1 when there is none (or box is not a box).
  int move(int box, NavigationMove move) const;
  const std::vector<int>& successors(int box) const { return succ_.at(static_cast<size_t>(box)); }
  const std::vector<int>& predecessors(int box) const { return pred_.at(static_cast<size_t>(box)); }
  // Boxes sharing a predecessor or a successor with `box` (not itself), ascending.
  std::vector<int> siblings(int box) const;

 private:
  double along(int box) const;   // centre coordinate along the flow
  double across(int box) const;  // centre coordinate across it
  int nearestAcross(int box, const std::vector<int>& candidates) const;

  const Layout& layout_;
  RankDirection direction_;
  std::vector<std::vector<int>> succ_, pred_;
};

// The selection that stands for box `box` of `layout`: an op node, a collapsed scope, a value.
Selection selectionForBox(const Layout& layout, int box);

// The scope a selection lies in: a node's scope, a scope itself, a value's producer's scope (the
// root for graph inputs and for nothing selected).
ScopeId scopeOfSelection(const ScopeTree& tree, const ir::Graph& g, const Selection& s);

// The scopes from the root down to `s`, root first ({kRootScope} for the root).
std::vector<ScopeId> scopePath(const ScopeTree& tree, ScopeId s);

// What the breadcrumb bar shows: the path from the root to the selection's scope when it lies in
// the focused scope, else to the focused scope. `focusIndex` is the entry of the focused scope.
struct BreadcrumbTrail {
  std::vector<ScopeId> scopes;  // root first
  int focusIndex = 0;
  bool operator==(const BreadcrumbTrail&) const = default;
};
BreadcrumbTrail breadcrumbTrail(const ScopeTree& tree, const ir::Graph& g, ScopeId focus,
                                const Selection& selection);

// The collapse state that shows the inside of `focus`: `state` with focus and its ancestors
// expanded (what is inside focus stays as the user left it).
CollapseState focusState(const ScopeTree& tree, const CollapseState& state, ScopeId focus);

// The scope "show only this scope" takes for a selection: a scope itself, a node's scope; the
// root (no focus) for values, nothing selected, and nodes at the top level.
ScopeId focusScopeFor(const ScopeTree& tree, const Selection& s);

}  // namespace hap::studio
