#include "engine/ir/graph_dot.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/ir/summary.h"

namespace hap::ir {
namespace {

// A DOT double-quoted string: quotes and backslashes escaped, newlines as DOT's "\n".
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string nodeId(NodeId id) {
  return fmt::format("n{}", id);
}
std::string valueId(ValueId id) {
  return fmt::format("v{}", id);
}

std::string_view shortOpName(std::string_view op) {
  constexpr std::string_view kAten = "aten::";
  if (op.starts_with(kAten)) op.remove_prefix(kAten.size());
  return op;
}

// The output shapes of a node: "[4, 8]", "3 × [4, 8]" for equal shapes, else one per line.
std::string outputShapes(const Graph& g, const Node& n) {
  std::vector<std::string> shapes;
  for (ValueId out : n.outputs) shapes.push_back(formatShape(g.value(out).shape));
  if (shapes.size() > 1 && std::all_of(shapes.begin(), shapes.end(),
                                       [&](const std::string& s) { return s == shapes[0]; }))
    return fmt::format("{} × {}", shapes.size(), shapes[0]);
  std::string out;
  for (size_t i = 0; i < shapes.size(); ++i) out += (i ? "\n" : "") + shapes[i];
  return out;
}

// Module scopes as nested clusters. Cluster 0 is the graph itself (scope ""); the others are
// created on first use, parents before children, so their numbering is deterministic.
class ClusterTree {
 public:
  // The cluster of a (truncated) scope, creating it and its ancestors. Its ancestors are the
  // scope's truncations to depths 1, 2, ..., so they follow the same grouping of indices.
  size_t at(const std::string& scope) {
    size_t current = 0;
    if (scope.empty()) return current;
    for (int depth = 1;; ++depth) {
      std::string prefix = truncateScope(scope, depth);
      auto [it, inserted] = index_.try_emplace(prefix, clusters_.size());
      if (inserted) {
        clusters_.push_back(Cluster{prefix, {}, {}});
        clusters_[current].children.push_back(it->second);
      }
      current = it->second;
      if (prefix == scope) return current;
    }
  }

  const std::string& scope(size_t cluster) const { return clusters_[cluster].scope; }
  void add(size_t cluster, std::string statement) {
    clusters_[cluster].statements.push_back(std::move(statement));
  }

  void render(std::string& out) const { render(out, 0, "  "); }

 private:
  struct Cluster {
    std::string scope;
    std::vector<size_t> children;
    std::vector<std::string> statements;
  };

  void render(std::string& out, size_t cluster, const std::string& indent) const {
    for (const std::string& s : clusters_[cluster].statements) out += indent + s + "\n";
    for (size_t child : clusters_[cluster].children) {
      out += fmt::format("{}subgraph cluster_{} {{\n", indent, child);
      out += fmt::format("{}  label={}; style=rounded; color=\"#9ca3af\";\n", indent,
                         quote(clusters_[child].scope));
      render(out, child, indent + "  ");
      out += indent + "}\n";
    }
  }

  std::vector<Cluster> clusters_{Cluster{}};
  std::map<std::string, size_t> index_;
};

}  // namespace

std::string toDot(const Graph& g, const DotOptions& opt) {
  ClusterTree clusters;
  std::set<NodeId> flagged;
  for (const Diagnostic& d : g.diagnostics)
    if (d.node != kNone) flagged.insert(d.node);

  for (const Node& n : g.nodes) {
    std::string label = fmt::format("{}\n{}", shortOpName(n.op), outputShapes(g, n));
    clusters.add(clusters.at(truncateScope(n.scope, opt.depth)),
                 fmt::format("{} [label={}, tooltip={}{}];", nodeId(n.id), quote(label),
                             quote(g.describe(n.id)),
                             flagged.contains(n.id) ? ", color=red, penwidth=1.5" : ""));
  }

  auto ellipse = [&](size_t cluster, const Value& v, std::string_view name,
                     std::string_view style) {
    clusters.add(cluster,
                 fmt::format("{} [shape=ellipse, label={}, {}];", valueId(v.id),
                             quote(fmt::format("{}\n{}", name, formatShape(v.shape))), style));
  };
  for (ValueId id : g.inputs)
    ellipse(0, g.value(id), g.value(id).name, "style=filled, fillcolor=\"#dbeafe\"");
  if (opt.showParameters) {
    // Parameters and buffers sit in their owner's cluster, named relative to it.
    auto owned = [&](ValueId id, std::string_view style) {
      const Value& v = g.value(id);
      size_t cluster = clusters.at(truncateScope(ownerScope(v.name), opt.depth));
      std::string_view name = v.name;
      if (cluster != 0) name.remove_prefix(clusters.scope(cluster).size() + 1);
      ellipse(cluster, v, name, style);
    };
    for (ValueId id : g.parameters) owned(id, "style=filled, fillcolor=\"#fef3c7\"");
    for (ValueId id : g.buffers) owned(id, "style=\"filled,dashed\", fillcolor=\"#fef3c7\"");
    for (ValueId id : g.constants)
      ellipse(0, g.value(id), g.value(id).name, "style=filled, fillcolor=\"#e5e7eb\"");
  }
  bool lossNode = g.loss != kNone && g.value(g.loss).producer != kNone;
  if (lossNode) ellipse(0, g.value(g.loss), "loss", "style=filled, fillcolor=\"#fecaca\"");

  std::string edges;
  auto edge = [&](const std::string& from, const std::string& to, const Value& carried) {
    edges += fmt::format("  {} -> {}", from, to);
    if (opt.showShapes) edges += fmt::format(" [label={}]", quote(formatShape(carried.shape)));
    edges += ";\n";
  };
  for (const Node& n : g.nodes) {
    std::vector<ValueId> read;
    for (ValueId in : n.tensorInputs()) {
      if (std::find(read.begin(), read.end(), in) != read.end()) continue;
      read.push_back(in);
      const Value& v = g.value(in);
      if (v.producer != kNone)
        edge(nodeId(v.producer), nodeId(n.id), v);
      else if (v.kind == ValueKind::Input || opt.showParameters)
        edge(valueId(in), nodeId(n.id), v);
    }
  }
  if (lossNode) edge(nodeId(g.value(g.loss).producer), valueId(g.loss), g.value(g.loss));

  std::string out = "digraph hap {\n";
  out += "  rankdir=TB;\n";
  out += "  graph [fontname=\"Helvetica\", fontsize=10, nodesep=0.2, ranksep=0.25";
  if (!g.sourceFile.empty()) out += fmt::format(", label={}, labelloc=t", quote(g.sourceFile));
  out += "];\n";
  out +=
      "  node [shape=box, fontname=\"Helvetica\", fontsize=9, height=0.3, margin=\"0.06,0.03\"];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=7, arrowsize=0.6, color=\"#555555\"];\n";
  clusters.render(out);
  out += edges;
  out += "}\n";
  return out;
}

}  // namespace hap::ir
