#include "app/studio/core/graph/graph_navigation.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace hap::studio {

std::optional<NavigationMove> navigationMoveForKey(int key, RankDirection direction) {
  const bool tb = direction == RankDirection::TopToBottom;
  switch (key) {
    case Qt::Key_Down:
      return tb ? NavigationMove::Next : NavigationMove::SiblingAfter;
    case Qt::Key_Up:
      return tb ? NavigationMove::Previous : NavigationMove::SiblingBefore;
    case Qt::Key_Right:
      return tb ? NavigationMove::SiblingAfter : NavigationMove::Next;
    case Qt::Key_Left:
      return tb ? NavigationMove::SiblingBefore : NavigationMove::Previous;
    default:
      return std::nullopt;
  }
}

LayoutNavigator::LayoutNavigator(const Layout& layout, RankDirection direction)
    : layout_(layout),
      direction_(direction),
      succ_(layout.boxes.size()),
      pred_(layout.boxes.size()) {
  for (const LayoutEdge& e : layout.edges) {
    if (e.from < 0 || e.to < 0 || e.from >= static_cast<int>(layout.boxes.size()) ||
        e.to >= static_cast<int>(layout.boxes.size()))
      continue;
    succ_[static_cast<size_t>(e.from)].push_back(e.to);
    pred_[static_cast<size_t>(e.to)].push_back(e.from);
  }
}

double LayoutNavigator::along(int box) const {
  const RectF& r = layout_.boxes[static_cast<size_t>(box)].rect;
  return direction_ == RankDirection::TopToBottom ? r.y + r.height / 2 : r.x + r.width / 2;
}

double LayoutNavigator::across(int box) const {
  const RectF& r = layout_.boxes[static_cast<size_t>(box)].rect;
  return direction_ == RankDirection::TopToBottom ? r.x + r.width / 2 : r.y + r.height / 2;
}

int LayoutNavigator::first() const {
  int best = -1;
  for (int b = 0; b < static_cast<int>(layout_.boxes.size()); ++b)
    if (best < 0 || along(b) < along(best) - 0.5 ||
        (std::abs(along(b) - along(best)) <= 0.5 && across(b) < across(best)))
      best = b;
  return best;
}

int LayoutNavigator::nearestAcross(int box, const std::vector<int>& candidates) const {
  int best = -1;
  double bestDistance = 0;
  for (int c : candidates) {
    const double d = std::abs(across(c) - across(box));
    if (best < 0 || d < bestDistance - 1e-9 || (std::abs(d - bestDistance) <= 1e-9 && c < best)) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

std::vector<int> LayoutNavigator::siblings(int box) const {
  std::set<int> out;
  for (int p : pred_.at(static_cast<size_t>(box)))
    for (int s : succ_[static_cast<size_t>(p)]) out.insert(s);
  for (int s : succ_.at(static_cast<size_t>(box)))
    for (int p : pred_[static_cast<size_t>(s)]) out.insert(p);
  out.erase(box);
  return {out.begin(), out.end()};
}

int LayoutNavigator::move(int box, NavigationMove m) const {
  if (box < 0 || box >= static_cast<int>(layout_.boxes.size())) return -1;
  switch (m) {
    case NavigationMove::Next:
      return nearestAcross(box, succ_[static_cast<size_t>(box)]);
    case NavigationMove::Previous:
      return nearestAcross(box, pred_[static_cast<size_t>(box)]);
    case NavigationMove::SiblingBefore:
    case NavigationMove::SiblingAfter: {
      std::vector<int> candidates = siblings(box);
      if (candidates.empty()) {
        // Nothing shares an edge with it (the graph's inputs, say): the boxes of its rank.
        for (int b = 0; b < static_cast<int>(layout_.boxes.size()); ++b)
          if (b != box && std::abs(along(b) - along(box)) <= 0.5) candidates.push_back(b);
      }
      const bool after = m == NavigationMove::SiblingAfter;
      std::vector<int> side;
      for (int c : candidates) {
        const double d = across(c) - across(box);
        if (after ? (d > 1e-9 || (std::abs(d) <= 1e-9 && c > box))
                  : (d < -1e-9 || (std::abs(d) <= 1e-9 && c < box)))
          side.push_back(c);
      }
      return nearestAcross(box, side);
    }
  }
  return -1;
}

Selection selectionForBox(const Layout& layout, int box) {
  if (box < 0 || box >= static_cast<int>(layout.boxes.size())) return {};
  const LayoutBox& b = layout.boxes[static_cast<size_t>(box)];
  switch (b.kind) {
    case LayoutBox::Kind::Op:
      return Selection::node(b.id);
    case LayoutBox::Kind::CollapsedScope:
      return Selection::scope(b.id);
    case LayoutBox::Kind::Input:
      return Selection::value(b.id);
  }
  return {};
}

ScopeId scopeOfSelection(const ScopeTree& tree, const ir::Graph& g, const Selection& s) {
  switch (s.kind) {
    case Selection::Kind::None:
      return kRootScope;
    case Selection::Kind::Node:
      return s.id >= 0 && s.id < static_cast<int>(g.nodes.size()) ? tree.scopeOfNode(s.id)
                                                                  : kRootScope;
    case Selection::Kind::Scope:
      return s.id >= 0 && s.id < tree.size() ? s.id : kRootScope;
    case Selection::Kind::Value: {
      if (s.id < 0 || s.id >= static_cast<int>(g.values.size())) return kRootScope;
      const ir::Value& v = g.value(s.id);
      return v.producer >= 0 ? tree.scopeOfNode(v.producer) : kRootScope;
    }
  }
  return kRootScope;
}

std::vector<ScopeId> scopePath(const ScopeTree& tree, ScopeId s) {
  std::vector<ScopeId> out;
  if (tree.size() == 0) return out;
  for (; s > kRootScope; s = tree.scope(s).parent) out.push_back(s);
  out.push_back(kRootScope);
  std::reverse(out.begin(), out.end());
  return out;
}

BreadcrumbTrail breadcrumbTrail(const ScopeTree& tree, const ir::Graph& g, ScopeId focus,
                                const Selection& selection) {
  BreadcrumbTrail t;
  if (tree.size() == 0) return t;
  if (focus < 0 || focus >= tree.size()) focus = kRootScope;
  const ScopeId current = scopeOfSelection(tree, g, selection);
  t.scopes = scopePath(tree, tree.contains(focus, current) ? current : focus);
  t.focusIndex = tree.scope(focus).depth;
  return t;
}

CollapseState focusState(const ScopeTree& tree, const CollapseState& state, ScopeId focus) {
  CollapseState next = state;
  if (focus > kRootScope && focus < tree.size()) {
    next.reveal(tree, focus);
    next.setExpanded(focus, true);
  }
  return next;
}

ScopeId focusScopeFor(const ScopeTree& tree, const Selection& s) {
  if (s.kind == Selection::Kind::Scope && s.id > kRootScope && s.id < tree.size()) return s.id;
  if (s.kind == Selection::Kind::Node && s.id >= 0) return tree.scopeOfNode(s.id);
  return kRootScope;
}

}  // namespace hap::studio
