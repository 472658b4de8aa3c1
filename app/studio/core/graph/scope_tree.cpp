#include "app/studio/core/graph/scope_tree.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "engine/ir/summary.h"

namespace hap::studio {
namespace {

bool isIndex(std::string_view component) {
  return !component.empty() && std::all_of(component.begin(), component.end(),
                                           [](char c) { return c >= '0' && c <= '9'; });
}

// The components of a module scope as ir::truncateScope counts them: an index joins the component
// before it ("encoder.layers.3.attn" -> encoder, layers.3, attn); an index at the top level has
// nothing to join and stands alone ("0.fc" -> 0, fc).
std::vector<std::string> components(std::string_view scope) {
  std::vector<std::string> out;
  if (scope.empty()) return out;
  for (size_t start = 0;;) {
    size_t dot = std::min(scope.find('.', start), scope.size());
    std::string_view part = scope.substr(start, dot - start);
    if (!out.empty() && isIndex(part))
      out.back().append(".").append(part);
    else
      out.emplace_back(part);
    if (dot == scope.size()) break;
    start = dot + 1;
  }
  return out;
}

// A label with its list indices replaced ("layers.3" -> "layers.#"), so that the key of a block
// does not depend on where its children sit in a ModuleList.
std::string indexFree(std::string_view label) {
  std::string out;
  for (size_t start = 0;;) {
    size_t dot = std::min(label.find('.', start), label.size());
    std::string_view part = label.substr(start, dot - start);
    if (start) out += '.';
    out += isIndex(part) ? std::string_view("#") : part;
    if (dot == label.size()) break;
    start = dot + 1;
  }
  return out;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void appendValueSignature(std::string& out, const ir::Value& v) {
  out += ir::dtypeName(v.dtype);
  out += ir::formatShape(v.shape);
}

}  // namespace

ScopeTree::ScopeTree(const ir::Graph& g) {
  std::unordered_map<std::string, ScopeId>& byPath = byPath_;
  Scope root;
  root.id = kRootScope;
  root.label = "(top)";
  scopes_.push_back(std::move(root));
  byPath.emplace("", kRootScope);

  // Creates the scope `path` and its ancestors; parents always get smaller ids than children.
  auto intern = [&](std::string_view path) -> ScopeId {
    if (auto it = byPath.find(std::string(path)); it != byPath.end()) return it->second;
    ScopeId parent = kRootScope;
    std::string prefix;
    for (const std::string& c : components(path)) {
      if (!prefix.empty()) prefix += '.';
      prefix += c;
      auto [it, inserted] = byPath.try_emplace(prefix, static_cast<ScopeId>(scopes_.size()));
      if (inserted) {
        Scope s;
        s.id = it->second;
        s.path = prefix;
        s.label = c;
        s.parent = parent;
        s.depth = scopes_[static_cast<size_t>(parent)].depth + 1;
        scopes_[static_cast<size_t>(parent)].children.push_back(s.id);
        scopes_.push_back(std::move(s));
      }
      parent = it->second;
    }
    return parent;
  };

  nodeScope_.resize(g.nodes.size(), kRootScope);
  for (const ir::Node& n : g.nodes) {
    ScopeId s = intern(n.scope);
    nodeScope_[static_cast<size_t>(n.id)] = s;
    Scope& sc = scopes_[static_cast<size_t>(s)];
    sc.nodes.push_back(n.id);
    ++sc.opCount;
    sc.flops += n.cost.flops;
    sc.activationBytes += n.cost.bytesWritten;
  }
  // Parameters after nodes, as ir::summarize orders its rows: a module that owns parameters but
  // runs no op of its own (its weights used by its parent) still gets its scope.
  std::vector<std::vector<ir::ValueId>> ownedParameters(scopes_.size());
  for (ir::ValueId id : g.parameters) {
    const ir::Value& p = g.value(id);
    ScopeId s = intern(ir::ownerScope(p.name));
    if (static_cast<size_t>(s) >= ownedParameters.size()) ownedParameters.resize(scopes_.size());
    ownedParameters[static_cast<size_t>(s)].push_back(id);
    Scope& sc = scopes_[static_cast<size_t>(s)];
    sc.parameters += p.numel();
    sc.parameterBytes += p.bytes();
  }
  ownedParameters.resize(scopes_.size());

  // Each scope's items in graph order: its own nodes and maximal runs of nodes in one child.
  struct Item {
    bool isChild;
    int32_t id;  // NodeId or ScopeId
  };
  std::vector<std::vector<Item>> items(scopes_.size());
  std::vector<ScopeId> chain;
  for (const ir::Node& n : g.nodes) {
    ScopeId s = nodeScope_[static_cast<size_t>(n.id)];
    items[static_cast<size_t>(s)].push_back({false, n.id});
    for (ScopeId c = s; c != kRootScope;) {
      ScopeId p = scopes_[static_cast<size_t>(c)].parent;
      auto& seq = items[static_cast<size_t>(p)];
      if (!seq.empty() && seq.back().isChild && seq.back().id == c) break;  // same run above too
      seq.push_back({true, c});
      c = p;
    }
  }

  // Totals and keys bottom-up: every child has a larger id than its parent.
  for (ScopeId id = size() - 1; id >= 0; --id) {
    Scope& sc = scopes_[static_cast<size_t>(id)];
    std::string canonical;
    for (const Item& it : items[static_cast<size_t>(id)]) {
      if (it.isChild) {
        const Scope& child = scopes_[static_cast<size_t>(it.id)];
        canonical += '<' + indexFree(child.label) + ':' + child.structureKey + '>';
      } else {
        const ir::Node& n = g.node(it.id);
        canonical += n.op + '(';
        for (ir::ValueId v : n.outputs) appendValueSignature(canonical, g.value(v));
        canonical += ')';
      }
    }
    for (ir::ValueId p : ownedParameters[static_cast<size_t>(id)]) {
      canonical += "p:";
      appendValueSignature(canonical, g.value(p));
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(canonical)));
    sc.structureKey = std::to_string(sc.opCount) + ':' + hex;

    if (id == kRootScope) break;
    Scope& parent = scopes_[static_cast<size_t>(sc.parent)];
    parent.opCount += sc.opCount;
    parent.parameters += sc.parameters;
    parent.parameterBytes += sc.parameterBytes;
    parent.flops += sc.flops;
    parent.activationBytes += sc.activationBytes;
  }
}

ScopeId ScopeTree::find(const std::string& path) const {
  auto it = byPath_.find(path);
  return it == byPath_.end() ? -1 : it->second;
}

bool ScopeTree::contains(ScopeId ancestor, ScopeId s) const {
  for (; s >= 0; s = scopes_.at(static_cast<size_t>(s)).parent)
    if (s == ancestor) return true;
  return false;
}

CollapseState::CollapseState(const ScopeTree& tree)
    : expanded_(static_cast<size_t>(std::max(tree.size(), 1)), false) {
  expanded_[kRootScope] = true;
}

int CollapseState::drawnBoxes(const ScopeTree& tree, const ir::Graph& g) const {
  std::vector<bool> seen(static_cast<size_t>(tree.size()), false);
  int boxes = 0;
  for (const ir::Node& n : g.nodes) {
    const ScopeId r = representative(tree, n.id);
    if (r < 0) ++boxes;
    else if (!seen[static_cast<size_t>(r)]) {
      seen[static_cast<size_t>(r)] = true;
      ++boxes;
    }
  }
  return boxes;
}

CollapseState CollapseState::opening(const ScopeTree& tree, const ir::Graph& g, int minBoxes) {
  CollapseState state(tree);
  while (state.drawnBoxes(tree, g) < minBoxes) {
    // The drawn collapsed scope with the most ops: expanding it shows the most.
    ScopeId best = -1;
    for (const ir::Node& n : g.nodes) {
      const ScopeId r = state.representative(tree, n.id);
      if (r >= 0 && (best < 0 || tree.scope(r).opCount > tree.scope(best).opCount)) best = r;
    }
    if (best < 0 || tree.scope(best).opCount < 2) break;
    state.setExpanded(best, true);
  }
  return state;
}

void CollapseState::setExpanded(ScopeId s, bool on) {
  if (s == kRootScope) return;
  expanded_.at(static_cast<size_t>(s)) = on;
}

void CollapseState::expandAll() {
  std::fill(expanded_.begin(), expanded_.end(), true);
}

void CollapseState::collapseAll() {
  std::fill(expanded_.begin(), expanded_.end(), false);
  if (!expanded_.empty()) expanded_[kRootScope] = true;
}

void CollapseState::reveal(const ScopeTree& tree, ScopeId s) {
  for (ScopeId p = tree.scope(s).parent; p > kRootScope; p = tree.scope(p).parent)
    expanded_.at(static_cast<size_t>(p)) = true;
}

ScopeId CollapseState::representative(const ScopeTree& tree, ir::NodeId n) const {
  // The outermost collapsed scope on the path root -> scope of n: the last one met going up.
  ScopeId outermost = -1;
  for (ScopeId s = tree.scopeOfNode(n); s > kRootScope; s = tree.scope(s).parent)
    if (!expanded(s)) outermost = s;
  return outermost;
}

}  // namespace hap::studio
