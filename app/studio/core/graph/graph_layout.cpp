#include "app/studio/core/graph/graph_layout.h"

#include <graphviz/gvc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "engine/ir/summary.h"

namespace hap::studio {
namespace {

// What the drawing holds, before any geometry: the boxes, the expanded scopes that frame them,
// and the merged edges. layoutDot prints it; layoutGraph feeds that text to Graphviz.
struct Scene {
  std::vector<LayoutBox> boxes;
  std::vector<std::string> names;  // Graphviz node name per box: n<node>, s<scope>, i<value>
  std::vector<ScopeId> parentOf;   // the expanded scope drawing each box (kRootScope: none)
  std::vector<LayoutEdge> edges;
};

// Box size estimate for a 10 pt sans font: deterministic, so the DOT text (and the golden files)
// do not depend on the fonts installed. The widget draws the text itself inside these boxes.
constexpr double kCharWidth = 7.0;
constexpr double kPadding = 16.0;
constexpr double kMinWidth = 56.0;
constexpr double kOneLineHeight = 24.0;
constexpr double kTwoLineHeight = 36.0;
// Boxes plus twice the clusters above which the layout trades straightness for time.
constexpr size_t kLargeDrawing = 2000;

size_t codePoints(std::string_view s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

double boxWidth(const LayoutBox& b) {
  size_t chars = std::max(codePoints(b.title), codePoints(b.detail));
  return std::max(kMinWidth, std::ceil(static_cast<double>(chars) * kCharWidth + kPadding));
}
double boxHeight(const LayoutBox& b) {
  return b.detail.empty() ? kOneLineHeight : kTwoLineHeight;
}

std::string shortOp(std::string_view op) {
  constexpr std::string_view kAten = "aten::";
  if (op.starts_with(kAten)) op.remove_prefix(kAten.size());
  return std::string(op);
}

// The node of a scope whose subtree holds exactly one.
ir::NodeId onlyNode(const ScopeTree& tree, ScopeId id) {
  for (;;) {
    const Scope& s = tree.scope(id);
    if (!s.nodes.empty()) return s.nodes.front();
    auto next = std::find_if(s.children.begin(), s.children.end(),
                             [&](ScopeId c) { return tree.scope(c).opCount > 0; });
    if (next == s.children.end()) return ir::kNone;
    id = *next;
  }
}

// "24 ops · 1.23M params · 3.40 GFLOP", or "embedding · 4.10K params" for a scope of one op;
// parts that are zero are left out.
std::string scopeDetail(const ir::Graph& g, const ScopeTree& tree, const Scope& s) {
  std::string out = std::to_string(s.opCount) + " ops";
  if (ir::NodeId n = s.opCount == 1 ? onlyNode(tree, s.id) : ir::kNone; n != ir::kNone)
    out = shortOp(g.node(n).op);
  if (s.parameters > 0)
    out += " · " + ir::formatCount(static_cast<double>(s.parameters)) + " params";
  if (s.flops > 0) {
    std::string f = ir::formatCount(s.flops);
    bool unit = !f.empty() && f.back() >= 'A' && f.back() <= 'Z';
    if (unit) f.insert(f.size() - 1, " ");
    out += " · " + f + (unit ? "FLOP" : " FLOP");
  }
  return out;
}

Scene buildScene(const ir::Graph& g, const ScopeTree& tree, const CollapseState& state,
                 const LayoutOptions& options) {
  Scene sc;
  auto addBox = [&](LayoutBox b, std::string name, ScopeId parent) {
    sc.boxes.push_back(std::move(b));
    sc.names.push_back(std::move(name));
    sc.parentOf.push_back(parent);
    return static_cast<int>(sc.boxes.size()) - 1;
  };

  const ScopeId focus = options.focus > kRootScope && options.focus < tree.size() ? options.focus
                                                                                   : kRootScope;
  auto inFocus = [&](ir::NodeId n) {
    return focus == kRootScope || tree.contains(focus, tree.scopeOfNode(n));
  };
  std::map<ir::ValueId, int> inputBox;
  if (options.showInputs) {
    auto addInput = [&](ir::ValueId v, std::string title) {
      const ir::Value& val = g.value(v);
      inputBox[v] = addBox({LayoutBox::Kind::Input, v, std::move(title),
                            ir::formatShape(val.shape), {}},
                           "i" + std::to_string(v), focus);
    };
    for (ir::ValueId v : g.inputs) {
      const ir::Value& val = g.value(v);
      if (focus == kRootScope ||
          std::any_of(val.users.begin(), val.users.end(), [&](ir::NodeId u) { return inFocus(u); }))
        addInput(v, val.name);
    }
    if (focus != kRootScope) {
      // Values made outside the focused scope and read inside it, in order of first reader, named
      // by the op that makes them.
      for (const ir::Node& n : g.nodes) {
        if (!inFocus(n.id)) continue;
        for (ir::ValueId v : n.tensorInputs()) {
          const ir::Value& val = g.value(v);
          if (val.kind != ir::ValueKind::Activation || val.producer == ir::kNone ||
              inFocus(val.producer) || inputBox.count(v))
            continue;
          addInput(v, shortOp(g.node(val.producer).op) + " (outside)");
        }
      }
    }
  }

  std::vector<int> nodeBox(g.nodes.size(), -1);
  std::map<ScopeId, int> scopeBox;
  for (const ir::Node& n : g.nodes) {
    if (!inFocus(n.id)) continue;
    ScopeId rep = state.representative(tree, n.id);
    if (rep < 0) {
      std::string detail = n.outputs.empty() ? "" : ir::formatShape(g.value(n.outputs[0]).shape);
      nodeBox[static_cast<size_t>(n.id)] =
          addBox({LayoutBox::Kind::Op, n.id, shortOp(n.op), std::move(detail), {}},
                 "n" + std::to_string(n.id), tree.scopeOfNode(n.id));
    } else {
      auto [it, inserted] = scopeBox.try_emplace(rep, -1);
      if (inserted) {
        const Scope& s = tree.scope(rep);
        it->second =
            addBox({LayoutBox::Kind::CollapsedScope, rep, s.label, scopeDetail(g, tree, s), {}},
                   "s" + std::to_string(rep), s.parent);
      }
      nodeBox[static_cast<size_t>(n.id)] = it->second;
    }
  }

  // Edges in order of their first value's consumer; one per (from, to) pair.
  std::map<std::pair<int, int>, size_t> edgeOf;
  for (const ir::Node& n : g.nodes) {
    int to = nodeBox[static_cast<size_t>(n.id)];
    if (to < 0) continue;  // outside the focus
    for (ir::ValueId v : n.tensorInputs()) {
      const ir::Value& val = g.value(v);
      int from = -1;
      if (auto it = inputBox.find(v); it != inputBox.end()) {
        from = it->second;
      } else if (val.kind == ir::ValueKind::Activation && val.producer != ir::kNone) {
        from = nodeBox[static_cast<size_t>(val.producer)];
      }
      if (from < 0 || from == to) continue;
      auto [it, inserted] = edgeOf.try_emplace({from, to}, sc.edges.size());
      if (inserted) sc.edges.push_back({from, to, {}, {}});
      std::vector<ir::ValueId>& values = sc.edges[it->second].values;
      auto pos = std::lower_bound(values.begin(), values.end(), v);
      if (pos == values.end() || *pos != v) values.insert(pos, v);
    }
  }
  return sc;
}

// DOT string literal.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + '"';
}

std::string inches(double points) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", points / 72.0);
  return buf;
}

std::string dotText(const Scene& sc, const ScopeTree& tree, const LayoutOptions& options) {
  // The focused scope is drawn as the top level: no frame.
  const ScopeId top = options.focus > kRootScope && options.focus < tree.size() ? options.focus
                                                                              : kRootScope;
  // Which expanded scopes frame something, and what each one holds directly, in order of the
  // first box they contain.
  std::vector<int> firstBox(static_cast<size_t>(tree.size()), -1);
  for (int b = 0; b < static_cast<int>(sc.boxes.size()); ++b)
    for (ScopeId s = sc.parentOf[static_cast<size_t>(b)]; s > kRootScope && s != top;
         s = tree.scope(s).parent) {
      if (firstBox[static_cast<size_t>(s)] >= 0)
        break;  // set by an earlier box, as are its parents
      firstBox[static_cast<size_t>(s)] = b;
    }
  struct Item {
    int order;
    bool cluster;
    int id;  // box index or ScopeId
  };
  std::vector<std::vector<Item>> held(static_cast<size_t>(tree.size()));
  size_t clusters = 0;
  for (int b = 0; b < static_cast<int>(sc.boxes.size()); ++b)
    held[static_cast<size_t>(sc.parentOf[static_cast<size_t>(b)])].push_back({b, false, b});
  for (ScopeId s = 1; s < tree.size(); ++s)
    if (firstBox[static_cast<size_t>(s)] >= 0) {
      held[static_cast<size_t>(tree.scope(s).parent)].push_back(
          {firstBox[static_cast<size_t>(s)], true, s});
      ++clusters;
    }
  for (auto& items : held)
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return a.order != b.order ? a.order < b.order : a.cluster > b.cluster;
    });

  std::string out;
  out += "digraph hap {\n";
  out += "  graph [rankdir=";
  out += options.direction == RankDirection::LeftToRight ? "LR" : "TB";
  out +=
      ", newrank=true, nodesep=0.25, ranksep=0.3, fontname=\"Helvetica\", fontsize=10, "
      "labeljust=l, margin=0";
  // dot's x-positioning (network simplex over the nodes plus two per cluster) is what grows
  // fastest: unbounded it takes about 5 s for 2,000 boxes each in its own cluster, capped at one
  // pass per node about 1.5 s. The cap leaves edges less straight, so only huge drawings get it.
  if (sc.boxes.size() + 2 * clusters > kLargeDrawing) out += ", nslimit=1";
  out += "];\n";
  out +=
      "  node [shape=box, style=rounded, fixedsize=true, fontname=\"Helvetica\", "
      "fontsize=10];\n";
  out += "  edge [arrowsize=0.6];\n";

  auto emit = [&](auto& self, ScopeId scope, int indent) -> void {
    std::string pad(static_cast<size_t>(indent) * 2, ' ');
    for (const Item& it : held[static_cast<size_t>(scope)]) {
      if (it.cluster) {
        out += pad + "subgraph cluster_s" + std::to_string(it.id) + " {\n";
        out += pad + "  label=" + quoted(tree.scope(it.id).label) + ";\n";
        self(self, it.id, indent + 1);
        out += pad + "}\n";
        continue;
      }
      const LayoutBox& b = sc.boxes[static_cast<size_t>(it.id)];
      std::string label = b.detail.empty() ? b.title : b.title + "\n" + b.detail;
      out += pad + sc.names[static_cast<size_t>(it.id)] + " [label=" + quoted(label);
      if (b.kind == LayoutBox::Kind::CollapsedScope)
        out += ", style=\"rounded,filled,bold\", fillcolor=\"#e8eef7\"";
      else if (b.kind == LayoutBox::Kind::Input)
        out += ", style=\"rounded,dashed\"";
      out += ", width=" + inches(boxWidth(b)) + ", height=" + inches(boxHeight(b)) + "];\n";
    }
  };
  emit(emit, top, 1);

  for (const LayoutEdge& e : sc.edges)
    out += "  " + sc.names[static_cast<size_t>(e.from)] + " -> " +
           sc.names[static_cast<size_t>(e.to)] + ";\n";
  out += "}\n";
  return out;
}

bool raised(const std::atomic<bool>* cancel) {
  return cancel && cancel->load(std::memory_order_relaxed);
}

Layout cancelledLayout() {
  Layout l;
  l.cancelled = true;
  return l;
}

// Graphviz keeps global state (the DOT parser, the error sink), so one layout runs at a time.
std::mutex& graphvizMutex() {
  static std::mutex m;
  return m;
}

// An object-id discipline that numbers named objects in order of creation. cgraph's default
// uses the address of the interned name as the id, and subgraphs are kept in id order, so dot
// would meet the clusters in an order that varies from call to call, and so would the drawing.
// Named objects get even ids 2, 4, ...; anonymous ones (edges) odd ids 1, 3, ..., as by default.
struct SequentialIds {
  std::vector<std::unique_ptr<std::string>> names;  // index k holds the name of id 2(k+1)
  std::unordered_map<std::string_view, IDTYPE> ids;
  IDTYPE anonymous = 1;

  static void* open(Agraph_t*, Agdisc_t*) { return new SequentialIds; }
  static long map(void* state, int, char* str, IDTYPE* id, int create) {
    auto* self = static_cast<SequentialIds*>(state);
    if (!str) {
      *id = self->anonymous;
      self->anonymous += 2;
      return 1;
    }
    if (auto it = self->ids.find(str); it != self->ids.end()) {
      *id = it->second;
      return 1;
    }
    if (!create) return 0;
    self->names.push_back(std::make_unique<std::string>(str));
    *id = 2 * static_cast<IDTYPE>(self->names.size());
    self->ids.emplace(*self->names.back(), *id);
    return 1;
  }
  static long alloc(void*, int, IDTYPE) { return 0; }
  static void free(void*, int, IDTYPE) {}  // names live as long as the graph
  static char* print(void* state, int, IDTYPE id) {
    auto* self = static_cast<SequentialIds*>(state);
    if (id % 2 != 0 || id == 0 || id / 2 > self->names.size()) return nullptr;
    return self->names[id / 2 - 1]->data();
  }
  static void close(void* state) { delete static_cast<SequentialIds*>(state); }
  static void idregister(void*, int, void*) {}
};

Agiddisc_t sequentialIdDisc = {SequentialIds::open,      SequentialIds::map,   SequentialIds::alloc,
                               SequentialIds::free,      SequentialIds::print, SequentialIds::close,
                               SequentialIds::idregister};

// Parses DOT text with the sequential id discipline (agmemread would use the default one).
Agraph_t* readDot(const std::string& dot) {
  static Agdisc_t disc = {&AgMemDisc, &sequentialIdDisc, &AgIoDisc};
  FILE* f = fmemopen(const_cast<char*>(dot.data()), dot.size(), "r");
  if (!f) return nullptr;
  Agraph_t* g = agread(f, &disc);
  std::fclose(f);
  return g;
}

char* cstr(const char* s) {
  return const_cast<char*>(s);
}

}  // namespace

int Layout::boxOfNode(const ScopeTree& tree, const CollapseState& state, ir::NodeId n) const {
  ScopeId rep = state.representative(tree, n);
  LayoutBox::Kind kind = rep < 0 ? LayoutBox::Kind::Op : LayoutBox::Kind::CollapsedScope;
  int id = rep < 0 ? n : rep;
  for (size_t i = 0; i < boxes.size(); ++i)
    if (boxes[i].kind == kind && boxes[i].id == id) return static_cast<int>(i);
  return -1;
}

std::string layoutDot(const ir::Graph& g, const ScopeTree& tree, const CollapseState& state,
                      const LayoutOptions& options) {
  return dotText(buildScene(g, tree, state, options), tree, options);
}

Layout layoutGraph(const ir::Graph& g, const ScopeTree& tree, const CollapseState& state,
                   const LayoutOptions& options, const std::atomic<bool>* cancel) {
  if (raised(cancel)) return cancelledLayout();
  Scene sc = buildScene(g, tree, state, options);
  Layout layout;
  if (sc.boxes.empty()) {
    layout.boxes = std::move(sc.boxes);
    return layout;
  }
  std::string dot = dotText(sc, tree, options);
  if (raised(cancel)) return cancelledLayout();

  std::lock_guard<std::mutex> lock(graphvizMutex());
  agseterr(AGERR);  // warnings (e.g. about cluster labels) are not the user's business
  GVC_t* gvc = gvContext();
  Agraph_t* ag = readDot(dot);
  if (!ag) {
    gvFreeContext(gvc);
    throw std::runtime_error("Graphviz could not read the generated DOT graph");
  }
  struct Cleanup {
    GVC_t* gvc;
    Agraph_t* ag;
    bool laidOut = false;
    ~Cleanup() {
      if (laidOut) gvFreeLayout(gvc, ag);
      agclose(ag);
      gvFreeContext(gvc);
    }
  } cleanup{gvc, ag};
  if (gvLayout(gvc, ag, "dot") != 0) throw std::runtime_error("Graphviz dot layout failed");
  cleanup.laidOut = true;
  if (raised(cancel)) return cancelledLayout();

  const boxf bb = GD_bb(ag);
  auto toPoint = [&](pointf p) { return PointF{p.x - bb.LL.x, bb.UR.y - p.y}; };
  auto toRect = [&](boxf b) {
    return RectF{b.LL.x - bb.LL.x, bb.UR.y - b.UR.y, b.UR.x - b.LL.x, b.UR.y - b.LL.y};
  };
  layout.width = bb.UR.x - bb.LL.x;
  layout.height = bb.UR.y - bb.LL.y;

  std::vector<Agnode_t*> agNodes(sc.boxes.size(), nullptr);
  for (size_t i = 0; i < sc.boxes.size(); ++i) {
    Agnode_t* n = agnode(ag, cstr(sc.names[i].c_str()), 0);
    if (!n) throw std::logic_error("Graphviz lost node " + sc.names[i]);
    agNodes[i] = n;
    double w = ND_width(n) * 72.0, h = ND_height(n) * 72.0;
    PointF c = toPoint(ND_coord(n));
    sc.boxes[i].rect = RectF{c.x - w / 2, c.y - h / 2, w, h};
  }

  // Clusters in the order the DOT text nests them (pre-order).
  auto visit = [&](auto& self, Agraph_t* parent) -> void {
    for (Agraph_t* sub = agfstsubg(parent); sub; sub = agnxtsubg(sub)) {
      std::string_view name = agnameof(sub);
      constexpr std::string_view kPrefix = "cluster_s";
      if (name.starts_with(kPrefix)) {
        ScopeId s = std::stoi(std::string(name.substr(kPrefix.size())));
        layout.clusters.push_back({s, tree.scope(s).label, toRect(GD_bb(sub))});
      }
      self(self, sub);
    }
  };
  visit(visit, ag);

  for (LayoutEdge& e : sc.edges) {
    Agnode_t* t = agNodes[static_cast<size_t>(e.from)];
    Agnode_t* h = agNodes[static_cast<size_t>(e.to)];
    Agedge_t* ae = agedge(ag, t, h, nullptr, 0);
    const splines* spl = ae ? ED_spl(ae) : nullptr;
    auto straight = [&](PointF a, PointF b) {
      e.points.push_back({a.x + (b.x - a.x) / 3, a.y + (b.y - a.y) / 3});
      e.points.push_back({a.x + 2 * (b.x - a.x) / 3, a.y + 2 * (b.y - a.y) / 3});
      e.points.push_back(b);
    };
    if (!spl || spl->size == 0) {
      PointF a = toPoint(ND_coord(t)), b = toPoint(ND_coord(h));
      e.points.push_back(a);
      straight(a, b);
      continue;
    }
    for (int k = 0; k < spl->size; ++k) {
      const bezier& bz = spl->list[k];
      if (bz.size < 1) continue;
      // Graphviz ends a curve at its arrowhead's base: extend it to the tip (and likewise at the
      // tail), so that the path runs box to box and the widget draws its own arrowhead.
      PointF first = toPoint(bz.sflag ? bz.sp : bz.list[0]);
      if (e.points.empty())
        e.points.push_back(first);
      else if (!(e.points.back() == first))
        straight(e.points.back(), first);  // a later piece of the same edge
      if (bz.sflag) straight(first, toPoint(bz.list[0]));
      for (int p = 1; p < bz.size; ++p) e.points.push_back(toPoint(bz.list[p]));
      if (bz.eflag) straight(e.points.back(), toPoint(bz.ep));
    }
  }
  if (raised(cancel)) return cancelledLayout();

  layout.boxes = std::move(sc.boxes);
  layout.edges = std::move(sc.edges);
  return layout;
}

}  // namespace hap::studio
