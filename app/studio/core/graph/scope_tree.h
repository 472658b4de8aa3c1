// The module-scope hierarchy of an imported graph, and which scopes the user has expanded.
//
// Scopes follow ir::truncateScope's components: a numeric component (a ModuleList or Sequential
// index) stays with its parent, so "encoder.layers.3.self_attn" has the ancestors "encoder",
// "encoder.layers.3" and itself, and the blocks of a ModuleList are siblings under "encoder".
// Scope 0 is the root (the top level, path ""). Every node belongs to exactly one scope, its
// deepest (Node::scope); a scope's totals cover its whole subtree.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/ir/graph.h"

namespace hap::studio {

using ScopeId = int32_t;
inline constexpr ScopeId kRootScope = 0;

struct Scope {
  ScopeId id = 0;
  std::string path;   // "encoder.layers.3" ("" for the root)
  std::string label;  // last component as shown: "layers.3", "self_attn" ("(top)" for the root)
  ScopeId parent = -1;
  int depth = 0;                     // 0 for the root
  std::vector<ScopeId> children;     // in order of first appearance in the graph
  std::vector<ir::NodeId> nodes;     // nodes directly in this scope, in graph order
  // Totals over the subtree.
  int opCount = 0;
  int64_t parameters = 0;  // parameter elements owned by the subtree (ir::ownerScope)
  int64_t parameterBytes = 0;
  double flops = 0;             // forward FLOPs
  int64_t activationBytes = 0;  // bytes written by its nodes
  // Equal for scopes whose subtrees hold the same ops with the same shapes in the same order
  // (repeated transformer blocks): the key "collapse repeated blocks" groups by.
  std::string structureKey;
};

class ScopeTree {
 public:
  ScopeTree() = default;
  explicit ScopeTree(const ir::Graph& g);

  int size() const { return static_cast<int>(scopes_.size()); }
  const Scope& scope(ScopeId id) const { return scopes_.at(static_cast<size_t>(id)); }
  const std::vector<Scope>& scopes() const { return scopes_; }
  ScopeId scopeOfNode(ir::NodeId n) const { return nodeScope_.at(static_cast<size_t>(n)); }
  // The scope with this exact path, or -1.
  ScopeId find(const std::string& path) const;
  // True when `ancestor` is `s` or one of its ancestors.
  bool contains(ScopeId ancestor, ScopeId s) const;

 private:
  std::vector<Scope> scopes_;
  std::vector<ScopeId> nodeScope_;
  std::unordered_map<std::string, ScopeId> byPath_;  // path -> id, every scope
};

// Which scopes are expanded. The root is always expanded; a scope is visible when all its
// ancestors are expanded. A node is shown as itself when its scope and all the scope's ancestors
// are expanded, otherwise as its outermost collapsed ancestor (a box for the whole scope).
class CollapseState {
 public:
  CollapseState() = default;
  explicit CollapseState(const ScopeTree& tree);  // everything collapsed except the root

  // What a model opens to: collapsed by scope, except that while fewer than `minBoxes` boxes would
  // be drawn the largest collapsed scope is expanded (a model wrapped in one `model` module, with
  // the loss beside it, opens to its layers rather than to a single box).
  static CollapseState opening(const ScopeTree& tree, const ir::Graph& g, int minBoxes = 6);
  // The number of boxes a drawing of g would hold (ops shown as themselves plus collapsed scopes;
  // inputs not counted).
  int drawnBoxes(const ScopeTree& tree, const ir::Graph& g) const;

  bool expanded(ScopeId s) const { return s == kRootScope || expanded_.at(static_cast<size_t>(s)); }
  void setExpanded(ScopeId s, bool on);
  void expandAll();
  void collapseAll();
  // Expands `s`'s ancestors (not `s` itself) so that `s` becomes visible.
  void reveal(const ScopeTree& tree, ScopeId s);
  // The scope that stands for node n in the drawing (n's outermost collapsed ancestor scope), or
  // -1 when n is drawn as itself.
  ScopeId representative(const ScopeTree& tree, ir::NodeId n) const;
  bool operator==(const CollapseState&) const = default;

 private:
  std::vector<bool> expanded_;
};

}  // namespace hap::studio
