#include "engine/ir/segments.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>

#include "engine/base/error.h"

#ifdef HAP_HAVE_METIS
#include <metis.h>
#endif

namespace hap::ir {
namespace {

std::vector<std::string> splitScope(const std::string& scope) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= scope.size() && !scope.empty()) {
    const size_t dot = scope.find('.', start);
    parts.push_back(scope.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

bool isIndex(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string join(const std::vector<std::string>& parts, size_t n) {
  std::string s;
  for (size_t i = 0; i < n && i < parts.size(); ++i) s += (i ? "." : "") + parts[i];
  return s;
}

// The block key of a scope: up to the first numbered part (depth 0), or the first `depth` parts;
// "" when the scope has no such prefix.
std::string blockKey(const std::string& scope, int depth) {
  const std::vector<std::string> parts = splitScope(scope);
  if (depth > 0) return parts.size() >= static_cast<size_t>(depth) ? join(parts, static_cast<size_t>(depth)) : "";
  for (size_t i = 0; i < parts.size(); ++i)
    if (isIndex(parts[i])) return i == 0 ? "" : join(parts, i + 1);
  return "";
}

// Segments from one key per node ("" = outside any block): one segment per distinct key, in
// order of first appearance; unkeyed nodes join the block before them, those before the first
// block form "prologue" and those after the last "epilogue".
Segmentation fromKeys(const Graph& g, const std::vector<std::string>& keys) {
  Segmentation s;
  s.nodeSegment.assign(g.nodes.size(), 0);
  std::map<std::string, int> index;
  size_t lastKeyed = 0;
  bool any = false;
  for (size_t i = 0; i < keys.size(); ++i)
    if (!keys[i].empty()) lastKeyed = i, any = true;
  if (!any) return singleSegment(g);
  int current = -1;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string key = keys[i];
    if (key.empty()) {
      if (current >= 0 && i < lastKeyed) {
        s.nodeSegment[i] = current;
        continue;
      }
      key = current < 0 ? "prologue" : "epilogue";
    }
    auto [it, fresh] = index.try_emplace(key, s.count());
    if (fresh) s.names.push_back(key);
    current = it->second;
    s.nodeSegment[i] = current;
  }
  return s;
}

#ifdef HAP_HAVE_METIS
// Segments from a part per node, numbered in order of their first node (segment 0 holds node 0).
Segmentation numbered(const std::vector<idx_t>& part) {
  std::map<idx_t, int> renumber;
  Segmentation s;
  for (idx_t p : part) {
    auto [it, fresh] = renumber.try_emplace(p, static_cast<int>(renumber.size()));
    if (fresh) s.names.push_back(fmt::format("part{}", it->second));
    s.nodeSegment.push_back(it->second);
  }
  return s;
}

Segmentation partition(const Graph& g, int parts) {
  idx_t n = static_cast<idx_t>(g.nodes.size());
  if (parts <= 1 || n == 0) return singleSegment(g);
  std::vector<idx_t> part(static_cast<size_t>(n));
  if (n <= parts) {  // no more parts than nodes: one node each
    std::iota(part.begin(), part.end(), idx_t{0});
    return numbered(part);
  }
  // Undirected adjacency: producer <-> reader, weighted by the value's bytes (in KiB, at least 1).
  std::vector<std::map<idx_t, idx_t>> adj(static_cast<size_t>(n));
  for (const Node& node : g.nodes)
    for (ValueId x : node.tensorInputs()) {
      const Value& v = g.value(x);
      if (v.producer == kNone || v.producer == node.id) continue;
      const idx_t w = static_cast<idx_t>(std::max<int64_t>(1, v.bytes() / 1024));
      adj[static_cast<size_t>(node.id)][v.producer] += w;
      adj[static_cast<size_t>(v.producer)][node.id] += w;
    }
  std::vector<idx_t> xadj{0}, adjncy, adjwgt, vwgt;
  double maxFlops = 1;
  for (const Node& node : g.nodes) maxFlops = std::max(maxFlops, node.cost.flops);
  for (const Node& node : g.nodes) {
    for (auto [u, w] : adj[static_cast<size_t>(node.id)]) adjncy.push_back(u), adjwgt.push_back(w);
    xadj.push_back(static_cast<idx_t>(adjncy.size()));
    vwgt.push_back(static_cast<idx_t>(1 + 1e6 * node.cost.flops / maxFlops));
  }
  idx_t ncon = 1, nparts = parts, objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = 1;  // deterministic
  options[METIS_OPTION_CONTIG] = 0;
  const int rc = METIS_PartGraphKway(&n, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr, adjwgt.data(),
                                     &nparts, nullptr, nullptr, options, &objval, part.data());
  if (rc != METIS_OK) throw Error(fmt::format("METIS could not partition the graph into {} parts (status {})", parts, rc));
  return numbered(part);
}
#endif

}  // namespace

SegmentOptions parseSegmentOptions(const std::string& text) {
  SegmentOptions o;
  auto number = [&](const std::string& s) {
    if (!isIndex(s) || s.size() > 6) throw Error(fmt::format("--segments '{}': expected a positive number after ':'", text));
    return std::stoi(s);
  };
  if (text == "none") o.mode = SegmentOptions::Mode::None;
  else if (text == "layer") o.mode = SegmentOptions::Mode::Scope;
  else if (text.rfind("scope:", 0) == 0) o.depth = number(text.substr(6));
  else if (text.rfind("auto:", 0) == 0) o.mode = SegmentOptions::Mode::Auto, o.parts = number(text.substr(5));
  else throw Error(fmt::format("--segments '{}': expected none, layer, scope:DEPTH or auto:PARTS", text));
  if ((text.rfind("scope:", 0) == 0 && o.depth < 1) || (o.mode == SegmentOptions::Mode::Auto && o.parts < 1))
    throw Error(fmt::format("--segments '{}': the number must be at least 1", text));
  return o;
}

Segmentation singleSegment(const Graph& g) {
  Segmentation s;
  s.nodeSegment.assign(g.nodes.size(), 0);
  s.names = {"all"};
  return s;
}

Segmentation segmentGraph(const Graph& g, const SegmentOptions& options) {
  switch (options.mode) {
    case SegmentOptions::Mode::None: return singleSegment(g);
    case SegmentOptions::Mode::Auto:
#ifdef HAP_HAVE_METIS
      return partition(g, options.parts);
#else
      throw Error("--segments auto: this build has no METIS (install libmetis-dev and rebuild)");
#endif
    case SegmentOptions::Mode::Scope: break;
  }
  std::vector<std::string> keys;
  for (const Node& n : g.nodes) keys.push_back(blockKey(n.scope, options.depth));
  if (options.depth == 0) {
    // Only repeated blocks that hold several nodes make useful segments.
    std::map<std::string, int> sizes;
    for (const std::string& k : keys)
      if (!k.empty()) ++sizes[k];
    int nodes = 0;
    for (auto& [k, c] : sizes) nodes += c;
    if (sizes.size() < 2 || nodes < 4 * static_cast<int>(sizes.size())) return singleSegment(g);
  }
  return fromKeys(g, keys);
}

int valueSegment(const Graph& g, const Segmentation& s, ValueId v) {
  const Value& x = g.value(v);
  if (x.producer != kNone) return s.nodeSegment[static_cast<size_t>(x.producer)];
  return x.users.empty() ? 0 : s.nodeSegment[static_cast<size_t>(x.users.front())];
}

Graph insertReshards(const Graph& g, Segmentation& s) {
  if (s.count() <= 1) return g;
  Graph out = g;
  out.nodes.clear();
  for (Value& v : out.values) {
    v.users.clear();
    if (v.kind == ValueKind::Activation) v.producer = kNone;
  }
  std::vector<int> segments;
  std::map<std::pair<ValueId, int>, ValueId> resharded;  // (value, reading segment) -> reshard output
  for (const Node& original : g.nodes) {
    const int seg = s.nodeSegment[static_cast<size_t>(original.id)];
    Node n = original;
    for (Arg& a : n.args) {
      for (ValueId& x : a.values) {
        const int home = valueSegment(g, s, x);
        if (home == seg) continue;
        auto [it, fresh] = resharded.try_emplace({x, seg}, kNone);
        if (fresh) {
          const Value& v = g.value(x);
          Node r;
          r.op = kReshardOp;
          r.scope = original.scope;
          r.loc = original.loc;
          Arg in;
          in.name = "self";
          in.type = "Tensor";
          in.kind = Arg::Kind::Tensor;
          in.values = {x};
          r.args = {in};
          it->second = out.addValue(ValueKind::Activation, fmt::format("{}@{}", v.name, s.names[static_cast<size_t>(seg)]),
                                    v.shape, v.dtype);
          r.outputs = {it->second};
          out.addNode(std::move(r));
          segments.push_back(seg);
        }
        x = it->second;
      }
    }
    n.id = kNone;
    out.addNode(std::move(n));
    segments.push_back(seg);
  }
  s.nodeSegment = std::move(segments);
  out.check();
  return out;
}

std::vector<NodeId> originalNodes(const Graph& withReshards) {
  std::vector<NodeId> out(withReshards.nodes.size(), kNone);
  NodeId next = 0;
  for (const Node& n : withReshards.nodes)
    if (n.op != kReshardOp) out[static_cast<size_t>(n.id)] = next++;
  return out;
}

}  // namespace hap::ir
