#include "app/studio/core/graph/scope_tree.h"

#include <algorithm>
#include <climits>
#include <cstdint>
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

// The dotted components of a module scope: "encoder.layers.3.attn" -> encoder, layers, 3, attn.
// Every one is a level of the tree, list and Sequential indices included.
std::vector<std::string> components(std::string_view scope) {
  std::vector<std::string> out;
  if (scope.empty()) return out;
  for (size_t start = 0;;) {
    size_t dot = std::min(scope.find('.', start), scope.size());
    out.emplace_back(scope.substr(start, dot - start));
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
  // 1. The raw module tree: one scope per dotted prefix of every node's scope and every
  //    parameter's owner, parents before children, children in order of first appearance.
  struct Raw {
    std::string path, label;
    int parent = -1;
    std::vector<int> children;
    bool hasNodes = false;
  };
  std::vector<Raw> raw(1);
  std::unordered_map<std::string, int> rawByPath{{"", 0}};
  auto intern = [&](std::string_view path) -> int {
    if (auto it = rawByPath.find(std::string(path)); it != rawByPath.end()) return it->second;
    int parent = 0;
    std::string prefix, name;  // name: the last named component, for an index's label
    for (const std::string& c : components(path)) {
      if (!prefix.empty()) prefix += '.';
      prefix += c;
      name = isIndex(c) && !name.empty() ? name + '.' + c : c;
      auto [it, inserted] = rawByPath.try_emplace(prefix, static_cast<int>(raw.size()));
      if (inserted) {
        raw.push_back({prefix, name, parent, {}, false});
        raw[static_cast<size_t>(parent)].children.push_back(it->second);
      }
      parent = it->second;
    }
    return parent;
  };
  std::vector<int> nodeRaw(g.nodes.size(), 0);
  for (const ir::Node& n : g.nodes) {
    const int r = intern(n.scope);
    nodeRaw[static_cast<size_t>(n.id)] = r;
    raw[static_cast<size_t>(r)].hasNodes = true;
  }
  std::vector<int> parameterRaw;
  parameterRaw.reserve(g.parameters.size());
  for (ir::ValueId id : g.parameters)
    parameterRaw.push_back(intern(ir::ownerScope(g.value(id).name)));

  // A container (a ModuleList or Sequential: no op of its own, only indexed children) is a scope
  // when its ops run as one stretch of the graph, as a Sequential's do. A ModuleList looped over
  // with its parent's ops between the entries ("for l in self.hidden: x = relu(l(x))") is not:
  // one box for it would feed itself through the parent's ops, so its entries stay in the parent.
  std::vector<int> firstNode(raw.size(), INT32_MAX), lastNode(raw.size(), -1), count(raw.size(), 0);
  for (const ir::Node& n : g.nodes) {
    const size_t r = static_cast<size_t>(nodeRaw[static_cast<size_t>(n.id)]);
    firstNode[r] = std::min(firstNode[r], n.id);
    lastNode[r] = std::max(lastNode[r], n.id);
    ++count[r];
  }
  for (size_t r = raw.size(); r-- > 1;) {  // children have larger ids than their parents
    const size_t p = static_cast<size_t>(raw[r].parent);
    firstNode[p] = std::min(firstNode[p], firstNode[r]);
    lastNode[p] = std::max(lastNode[p], lastNode[r]);
    count[p] += count[r];
  }
  std::vector<bool> dissolved(raw.size(), false);
  for (size_t r = 1; r < raw.size(); ++r) {
    const Raw& c = raw[r];
    const bool container = !c.hasNodes && !c.children.empty() &&
                           std::all_of(c.children.begin(), c.children.end(), [&](int k) {
                             const std::string& path = raw[static_cast<size_t>(k)].path;
                             return isIndex(std::string_view(path).substr(path.rfind('.') + 1));
                           });
    dissolved[r] = container && count[r] > 0 && lastNode[r] - firstNode[r] + 1 != count[r];
  }

  // 2. Chains merged: a scope that runs no op of its own and holds one child scope is one scope
  //    with that child (recursively), which keeps the innermost path and a label naming the chain.
  std::vector<ScopeId> final(raw.size(), -1);
  byPath_.emplace("", kRootScope);
  {
    Scope root;
    root.id = kRootScope;
    root.label = "(top)";
    scopes_.push_back(std::move(root));
    final[0] = kRootScope;
  }
  // Pre-order, so that parents get smaller ids than children.
  std::vector<int> stack;
  for (auto it = raw[0].children.rbegin(); it != raw[0].children.rend(); ++it) stack.push_back(*it);
  while (!stack.empty()) {
    const int top = stack.back();
    stack.pop_back();
    if (dissolved[static_cast<size_t>(top)]) {
      // Its entries take its place in its parent.
      final[static_cast<size_t>(top)] =
          final[static_cast<size_t>(raw[static_cast<size_t>(top)].parent)];
      const auto& children = raw[static_cast<size_t>(top)].children;
      for (auto it = children.rbegin(); it != children.rend(); ++it) stack.push_back(*it);
      continue;
    }
    int bottom = top;
    std::string label = raw[static_cast<size_t>(top)].label;
    while (!raw[static_cast<size_t>(bottom)].hasNodes &&
           raw[static_cast<size_t>(bottom)].children.size() == 1 &&
           !dissolved[static_cast<size_t>(raw[static_cast<size_t>(bottom)].children.front())]) {
      bottom = raw[static_cast<size_t>(bottom)].children.front();
      const std::string& path = raw[static_cast<size_t>(bottom)].path;
      const std::string_view last = std::string_view(path).substr(path.rfind('.') + 1);
      label += isIndex(last) ? "." + std::string(last) : "/" + std::string(last);
    }
    Scope s;
    s.id = static_cast<ScopeId>(scopes_.size());
    s.path = raw[static_cast<size_t>(bottom)].path;
    s.outerPath = raw[static_cast<size_t>(top)].path;
    s.label = std::move(label);
    s.parent = final[static_cast<size_t>(raw[static_cast<size_t>(top)].parent)];
    s.depth = scopes_[static_cast<size_t>(s.parent)].depth + 1;
    scopes_[static_cast<size_t>(s.parent)].children.push_back(s.id);
    for (int r = top;; r = raw[static_cast<size_t>(r)].children.front()) {
      final[static_cast<size_t>(r)] = s.id;
      byPath_.emplace(raw[static_cast<size_t>(r)].path, s.id);
      if (r == bottom) break;
    }
    const auto& children = raw[static_cast<size_t>(bottom)].children;
    for (auto it = children.rbegin(); it != children.rend(); ++it) stack.push_back(*it);
    scopes_.push_back(std::move(s));
  }

  nodeScope_.resize(g.nodes.size(), kRootScope);
  for (const ir::Node& n : g.nodes) {
    const ScopeId s = final[static_cast<size_t>(nodeRaw[static_cast<size_t>(n.id)])];
    nodeScope_[static_cast<size_t>(n.id)] = s;
    Scope& sc = scopes_[static_cast<size_t>(s)];
    sc.nodes.push_back(n.id);
    ++sc.opCount;
    sc.flops += n.cost.flops;
    sc.activationBytes += n.cost.bytesWritten;
  }
  // Parameters after nodes, as ir::summarize orders its rows: a module that owns parameters but
  // runs no op of its own (its weights used by its parent) still has its scope.
  std::vector<std::vector<ir::ValueId>> ownedParameters(scopes_.size());
  for (size_t i = 0; i < g.parameters.size(); ++i) {
    const ir::Value& p = g.value(g.parameters[i]);
    const ScopeId s = final[static_cast<size_t>(parameterRaw[i])];
    ownedParameters[static_cast<size_t>(s)].push_back(g.parameters[i]);
    Scope& sc = scopes_[static_cast<size_t>(s)];
    sc.parameters += p.numel();
    sc.parameterBytes += p.bytes();
  }

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
        // A list or Sequential entry by its place alone ("#"): its label carries the name of
        // the scope holding it, which must not tell two blocks apart.
        const std::string_view last =
            std::string_view(child.path).substr(child.path.rfind('.') + 1);
        canonical += '<' + (isIndex(last) ? std::string("#") : indexFree(child.label)) + ':' +
                     child.structureKey + '>';
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

ScopeId ScopeTree::wrapper() const {
  ScopeId current = kRootScope;
  while (!scopes_.empty()) {
    const Scope& cur = scope(current);
    ScopeId only = -1;
    int large = 0;
    for (ScopeId c : cur.children)
      if (scope(c).opCount > 1) {
        only = c;
        ++large;
      }
    if (large != 1) break;
    const Scope& w = scope(only);
    if (w.parameters != cur.parameters || 2 * w.opCount <= cur.opCount) break;
    current = only;
  }
  return current;
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
    if (r < 0)
      ++boxes;
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
