// The module-scope hierarchy of an imported graph, and which scopes the user has expanded.
//
// Every dotted component of a node's scope is a level, list and Sequential indices included: the
// children of an nn.Sequential `d1` ("d1.0", "d1.1", ...) sit under a scope "d1", as the blocks of
// a ModuleList "encoder.layers" sit under "encoder.layers", so collapsing groups every module.
// An index is labelled with the name before it ("layers.3", "d1.0"). The exception: a container
// (no op of its own, only indexed children) whose ops do not run as one stretch of the graph (a
// ModuleList looped over with its parent's ops between the entries) is no scope, since its box
// would feed itself through those ops; its entries sit in its parent, and find() does not know it.
// A chain of scopes that run no op of their own and hold one child scope each is one scope (one
// box, one click to open): it keeps the innermost path (where its ops are), outerPath is the
// outermost, and its label names the chain ("blocks.0/layers"). find() knows every path of the
// chain. Scope 0 is the root (the top level, path ""). Every node belongs to exactly one scope, its
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
  std::string path;       // "encoder.layers.3" ("" for the root); a chain's innermost path
  std::string outerPath;  // a chain's outermost path ("blocks" for "blocks.0/layers"), else path
  std::string label;      // as shown: "layers.3", "self_attn", "blocks.0/layers" ("(top)": root)
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
  // The scope with this exact path (any path of a merged chain), or -1.
  ScopeId find(const std::string& path) const;
  // True when `ancestor` is `s` or one of its ancestors.
  bool contains(ScopeId ancestor, ScopeId s) const;
  // The module the model is wrapped in, or the root: descending from the top while one child holds
  // every parameter of its parent, more than half its ops, and is the only child with more than
  // one op (a user's `model` with the loss beside it). The Model Summary counts depth from it.
  ScopeId wrapper() const;

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
