#include "engine/synth/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <limits>
#include <queue>

#include "engine/ir/segments.h"

namespace hap::synth {
namespace {

// Per position k (before node k): the values live there, and how node k's inputs and the
// values live at k+1 map onto them.
struct Layout {
  std::vector<std::vector<ir::ValueId>> live;   // live[k], sorted by id
  std::vector<std::vector<int>> inputSlot;      // [k][i]: slot of node k's input i in live[k]
  // [k][s] for slot s of live[k+1]: >= 0 a slot of live[k]; -1-o output o of node k;
  // kFresh a source first used at k+1 (holds nothing yet).
  std::vector<std::vector<int>> carry;
};
constexpr int kFresh = std::numeric_limits<int>::min();

Layout makeLayout(const Theory& t) {
  const ir::Graph& g = t.graph();
  const int n = static_cast<int>(g.nodes.size());
  Layout L;
  L.live.resize(static_cast<size_t>(n) + 1);
  // The first position at which a value must be tracked.
  auto start = [&](const ir::Value& v) -> int {
    if (v.kind == ir::ValueKind::Activation) return v.producer + 1;
    return v.users.empty() ? n + 1 : v.users.front();
  };
  for (const ir::Value& v : g.values) {
    const int last = t.lastUse(v.id);
    if (last == ir::kNone) continue;
    for (int k = start(v); k <= std::min(last, n); ++k) L.live[static_cast<size_t>(k)].push_back(v.id);
  }
  auto slotOf = [&](int k, ir::ValueId v) {
    const auto& live = L.live[static_cast<size_t>(k)];
    auto it = std::lower_bound(live.begin(), live.end(), v);
    return (it != live.end() && *it == v) ? static_cast<int>(it - live.begin()) : -1;
  };
  L.inputSlot.resize(static_cast<size_t>(n));
  L.carry.resize(static_cast<size_t>(n));
  for (const ir::Node& node : g.nodes) {
    const int k = node.id;
    for (ir::ValueId in : node.tensorInputs()) L.inputSlot[static_cast<size_t>(k)].push_back(slotOf(k, in));
    for (ir::ValueId v : L.live[static_cast<size_t>(k) + 1]) {
      int from = slotOf(k, v);
      if (from < 0) {
        auto out = std::find(node.outputs.begin(), node.outputs.end(), v);
        from = out != node.outputs.end() ? -1 - static_cast<int>(out - node.outputs.begin()) : kFresh;
      }
      L.carry[static_cast<size_t>(k)].push_back(from);
    }
  }
  return L;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

struct State {
  int32_t k;
  uint32_t forms;   // offset into the form arena (live[k].size() entries)
  double g;
  double h;         // lower bound on the cost of any completion
  int32_t parent;
  int32_t variant;  // the variant of node k-1 that led here
};

// Open-list order: lowest f; among equal f the deepest state (it is closest to a complete
// program: plateaus of equal-cost choices are crossed depth-first), then the oldest.
struct Entry {
  double f;
  int32_t k;
  uint64_t seq;
  int32_t state;
  bool operator>(const Entry& o) const {
    if (f != o.f) return f > o.f;
    if (k != o.k) return k < o.k;
    return seq > o.seq;
  }
};

// The open list, with read access to its heap for sampling the best open states.
class OpenList : public std::priority_queue<Entry, std::vector<Entry>, std::greater<>> {
 public:
  const std::vector<Entry>& heap() const { return c; }
};

// A hash set of state ids compared by content, by open addressing in flat arrays. A 2M-state A*
// that falls back to the beam search, or is cancelled, clears or frees it at once (a node-based
// set freed its nodes one by one: a few hundred milliseconds for BERT-MoE on 64 devices).
template <class Hash, class Equal>
class StateIndex {
 public:
  StateIndex(Hash hash, Equal equal) : hash_(hash), equal_(equal) { clear(); }

  // The id of a state equal to `id`'s already held, or kAbsent after inserting `id`.
  static constexpr int32_t kAbsent = -1;
  int32_t insert(int32_t id) {
    if (2 * (size_ + 1) > ids_.size()) grow();
    const size_t h = hash_(id);
    size_t i = h & mask();
    for (; ids_[i] != kAbsent; i = (i + 1) & mask())
      if (hashes_[i] == h && equal_(ids_[i], id)) return ids_[i];
    ids_[i] = id;
    hashes_[i] = h;
    ++size_;
    return kAbsent;
  }
  int32_t find(int32_t id) const {
    const size_t h = hash_(id);
    for (size_t i = h & mask(); ids_[i] != kAbsent; i = (i + 1) & mask())
      if (hashes_[i] == h && equal_(ids_[i], id)) return ids_[i];
    return kAbsent;
  }
  void clear() {
    ids_.assign(1024, kAbsent);
    hashes_.assign(1024, 0);
    size_ = 0;
  }

 private:
  size_t mask() const { return ids_.size() - 1; }
  void grow() {
    std::vector<int32_t> ids(ids_.size() * 2, kAbsent);
    std::vector<size_t> hashes(ids.size());
    const size_t m = ids.size() - 1;
    for (size_t j = 0; j < ids_.size(); ++j) {
      if (ids_[j] == kAbsent) continue;
      size_t i = hashes_[j] & m;
      while (ids[i] != kAbsent) i = (i + 1) & m;
      ids[i] = ids_[j];
      hashes[i] = hashes_[j];
    }
    ids_ = std::move(ids);
    hashes_ = std::move(hashes);
  }

  Hash hash_;
  Equal equal_;
  std::vector<int32_t> ids_;  // size a power of two, at most half full
  std::vector<size_t> hashes_;
  size_t size_ = 0;
};

class Searcher {
 public:
  Searcher(const CostTable& table, const SearchOptions& options)
      : table_(table), t_(table.theory()), g_(t_.graph()), options_(options),
        layout_(makeLayout(t_)), index_(Hash{this}, Equal{this}) {
    resolvePins();
    inputs_.reserve(g_.nodes.size());
    for (const ir::Node& node : g_.nodes) inputs_.push_back(node.tensorInputs());
  }

  Program run(SearchStats* stats);

 private:
  // Appends state `from`'s successors (one per feasible variant of its node) to the arena and
  // calls `sink(id)` for each; returns their ids via the callback only.
  template <typename Sink>
  void expand(int32_t from, Sink&& sink);
  Program beam(SearchStats* stats);
  void resetTo(size_t states, size_t arena);
  void resolvePins();
  bool allowed(int32_t k, size_t v) const {
    return allowed_.empty() || allowed_[static_cast<size_t>(k)].empty() || allowed_[static_cast<size_t>(k)][v];
  }
  struct Forest;
  void prepareBound();
  double heuristic(int32_t k, const FormMask* forms);
  // The relaxed problem's choices (Searcher::tighten): a variant per node, and per uncharged edge
  // the form (bit) it declares.
  struct Choice {
    std::vector<int32_t> variant;
    std::vector<int32_t> declared;
  };
  // The cheapest completion of x's consumers from node k on, given that x holds `have`: its group's
  // members (Forest::group) and its uncharged edges (Forest::from) at or after k. Min over a
  // threshold t of t + Σ over members of the cheapest below[c][v] among c's variants whose
  // distance from `have` to the form they read x in is <= t, + Σ over edges of the cheapest
  // -lambda[r] among the forms r within t; ∞ when some consumer can obtain no form it reads.
  // With `choice`, records the minimiser's variants and declared forms.
  double groupBelow(const Forest& f, ir::ValueId x, FormMask have, int32_t k, Choice* choice = nullptr) const;
  [[noreturn]] void unrunnable(int32_t m) const;
  struct Hash {
    const Searcher* s;
    size_t operator()(int32_t i) const { return s->hashOf(i); }
  };
  struct Equal {
    const Searcher* s;
    bool operator()(int32_t a, int32_t b) const { return s->equal(a, b); }
  };
  size_t width(int32_t k) const { return layout_.live[static_cast<size_t>(k)].size(); }
  const FormMask* formsOf(int32_t i) const { return &arena_[states_[static_cast<size_t>(i)].forms]; }
  size_t hashOf(int32_t i) const {
    const State& s = states_[static_cast<size_t>(i)];
    size_t h = static_cast<size_t>(s.k) * 0x9E3779B97F4A7C15ull;
    const FormMask* f = formsOf(i);
    for (size_t j = 0; j < width(s.k); ++j) h = (h ^ f[j]) * 0x100000001B3ull;
    return h;
  }
  bool equal(int32_t a, int32_t b) const {
    const State& x = states_[static_cast<size_t>(a)];
    const State& y = states_[static_cast<size_t>(b)];
    return x.k == y.k && std::equal(formsOf(a), formsOf(a) + width(x.k), formsOf(b));
  }
  std::vector<int> partialOf(int32_t i) const;
  [[noreturn]] void noProgram(int32_t deepest) const;
  // Reports progress to the listener (at most once per interval unless `force`); `beamLayer`
  // is the beam search's current layer, best first (null during A*).
  void report(int32_t current, double f, bool force, const std::vector<int32_t>* beamLayer = nullptr);
  // The `count` best valid entries of the open list, best first.
  std::vector<OpenState> sampleOpen(size_t count) const;
  OpenState openState(int32_t i) const;
  void finish(SearchStats* stats, bool provenOptimal) const;

  const CostTable& table_;
  const Theory& t_;
  const ir::Graph& g_;
  const SearchOptions& options_;
  Layout layout_;
  std::vector<FormMask> arena_;
  std::vector<State> states_;
  StateIndex<Hash, Equal> index_;
  OpenList open_;
  std::vector<std::vector<ir::ValueId>> inputs_;  // tensorInputs() per node
  std::vector<std::vector<char>> allowed_;        // [node][variant], empty: all (no pins)
  // The heuristic's forests (search.h, docs/synthesis.md): in each, every node is charged at most
  // one of its inputs; group[x] lists, in node order, the consumers charged x.
  // below[m][v]: node m under variant v plus, recursively, the cheapest completion of the groups
  // of m's outputs, conversions included; belowMin[m] its minimum over v (∞: not allowed).
  // rootSum[k]: Σ belowMin[m] over nodes m >= k whose charged input is not produced at or after
  // k (the roots of the forest cut at k).
  // An edge is an activation read by a consumer outside its group (uncharged): the consumer's
  // variant pays lambda[bit of the form it reads the value in], and the value's group gains a
  // pseudo-member that declares a form r, within the group's threshold, for -lambda[r]
  // (Lagrangian relaxation of "the form declared is the form read"; see prepareBound).
  struct Edge {
    int32_t consumer;
    int32_t slot;  // the consumer's tensor input
    std::array<double, 16> lambda{};
  };
  struct Forest {
    std::vector<std::vector<int32_t>> group;
    std::vector<std::vector<double>> below;
    std::vector<double> belowMin;
    std::vector<double> rootSum;
    std::vector<int32_t> parent;             // the producer of the node's charged input; -1: none
    std::vector<Edge> edges;
    std::vector<std::vector<int32_t>> from;  // [x]: x's edges, by consumer
    std::vector<std::vector<int32_t>> into;  // [c]: c's edges
  };
  // Two chargings (prepareBound): by fewest consumers, and by largest tensor. Each gives a lower
  // bound; h is the larger of the two.
  std::vector<Forest> forests_;
  void buildForest(Forest& f, const std::vector<std::vector<int32_t>>& group);
  void priceForest(Forest& f);  // below, belowMin, rootSum at the current multipliers
  void tighten(Forest& f);      // raises the bound at the start by the multipliers
  double forestBound(const Forest& f, int32_t k, const FormMask* forms);
  mutable std::vector<double> scratchD_, scratchB_, scratchT_;
  mutable std::vector<int32_t> scratchV_;   // per option: the variant, or the form's bit
  mutable std::vector<uint32_t> scratchN_;  // per member or edge: the end of its options
  // The consumer, value and forms of the last state found to have no completion.
  struct {
    int32_t node = -1;
    ir::ValueId value = ir::kNone;
    FormMask forms = 0;
  } culprit_;
  std::chrono::steady_clock::time_point start_, lastReport_;
  int64_t expanded_ = 0, generated_ = 0;
  double bestComplete_ = -1;  // the cheapest complete program generated so far (-1: none)
  int32_t deepest_ = 0;       // the deepest position A* expanded
};

std::vector<int> Searcher::partialOf(int32_t i) const {
  std::vector<int> chosen(static_cast<size_t>(states_[static_cast<size_t>(i)].k));
  for (int32_t s = i; states_[static_cast<size_t>(s)].parent >= 0; s = states_[static_cast<size_t>(s)].parent)
    chosen[static_cast<size_t>(states_[static_cast<size_t>(s)].k) - 1] = states_[static_cast<size_t>(s)].variant;
  return chosen;
}

OpenState Searcher::openState(int32_t i) const {
  const State& s = states_[static_cast<size_t>(i)];
  return {s.g, s.h, s.k, partialOf(i)};
}

std::vector<OpenState> Searcher::sampleOpen(size_t count) const {
  // A best-first walk of the binary heap: a parent is never worse than its children, so the k
  // best entries are found among the children of the better ones (O(k log k)).
  const std::vector<Entry>& heap = open_.heap();
  auto worse = [&](size_t a, size_t b) { return heap[a] > heap[b]; };
  std::priority_queue<size_t, std::vector<size_t>, decltype(worse)> next(worse);
  if (!heap.empty()) next.push(0);
  std::vector<OpenState> out;
  while (!next.empty() && out.size() < count) {
    const size_t i = next.top();
    next.pop();
    for (size_t c = 2 * i + 1; c <= 2 * i + 2 && c < heap.size(); ++c) next.push(c);
    const Entry& e = heap[i];
    const State& s = states_[static_cast<size_t>(e.state)];
    if (e.f > s.g + s.h + 1e-15) continue;  // superseded by a cheaper path to the same state
    out.push_back(openState(e.state));
  }
  return out;
}

void Searcher::report(int32_t current, double f, bool force, const std::vector<int32_t>* beamLayer) {
  if (!options_.listener) return;
  auto now = std::chrono::steady_clock::now();
  const double wanted = options_.listener->progressIntervalSeconds();
  const double interval = wanted >= 0 ? wanted : options_.progressIntervalSeconds;
  if (!force && std::chrono::duration<double>(now - lastReport_).count() < interval)
    return;
  lastReport_ = now;
  SearchProgress p;
  p.expanded = expanded_;
  p.frontier = static_cast<int64_t>(beamLayer ? beamLayer->size() : open_.size());
  p.stored = static_cast<int64_t>(states_.size());
  p.boundSeconds = f;
  p.elapsedSeconds = std::chrono::duration<double>(now - start_).count();
  p.beam = beamLayer != nullptr;
  p.depth = states_[static_cast<size_t>(current)].k;
  p.nodes = static_cast<int>(g_.nodes.size());
  p.partial = partialOf(current);
  if (p.depth == p.nodes) bestComplete_ = bestComplete_ < 0 ? states_[static_cast<size_t>(current)].g
                                                            : std::min(bestComplete_, states_[static_cast<size_t>(current)].g);
  p.bestSeconds = bestComplete_;
  if (const int wanted = options_.listener->openStatesWanted(); wanted > 0) {
    if (beamLayer) {
      for (size_t i = 0; i < beamLayer->size() && p.open.size() < static_cast<size_t>(wanted); ++i)
        p.open.push_back(openState((*beamLayer)[i]));
    } else {
      p.open = sampleOpen(static_cast<size_t>(wanted));
    }
  }
  options_.listener->onProgress(p);
}

void Searcher::finish(SearchStats* stats, bool provenOptimal) const {
  if (!stats) return;
  stats->provenOptimal = provenOptimal;
  stats->notOptimal =
      provenOptimal ? std::string()
                    : fmt::format("A* stored its budget of {} states (--max-states) after expanding {}, at node {} of "
                                  "{}; the beam search (width {}, --beam-width) found this program",
                                  options_.maxStates, expanded_, deepest_, g_.nodes.size(), options_.beamWidth);
  stats->expanded = expanded_;
  stats->generated = generated_;
  stats->stored = static_cast<int64_t>(states_.size());
  stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Searcher::resolvePins() {
  if (options_.pins.empty()) return;
  allowed_.assign(g_.nodes.size(), {});
  for (const Pin& pin : options_.pins) {
    bool used = false;
    for (const ir::Node& node : g_.nodes) {
      // A reshard carries its reader's scope, but how a value crosses segments is the planner's
      // choice, never what a pin on the reader means.
      if (node.op == ir::kReshardOp) continue;
      if (pin.node != ir::kNone ? node.id != pin.node
                                : !globMatch(pin.pattern, node.scope) && !globMatch(pin.pattern, node.op))
        continue;
      const auto& variants = t_.variants(node.id);
      auto& mask = allowed_[static_cast<size_t>(node.id)];
      bool has = false;
      for (size_t v = 0; v < variants.size(); ++v) {
        if (variants[v].name != pin.variant) continue;
        if (!has) mask.assign(variants.size(), 0);  // replaces an earlier pin's choice
        has = true;
        mask[v] = 1;
      }
      used = used || has;
    }
    if (!used)
      throw SearchError(fmt::format(
          "pin '{}={}' selects no node: no node whose scope or op matches '{}' has a variant "
          "named '{}' (hap plan --explain lists the variants chosen; rules are in engine/rules)",
          pin.pattern, pin.variant, pin.pattern, pin.variant));
  }
}

double Searcher::groupBelow(const Forest& f, ir::ValueId x, FormMask have, int32_t k, Choice* choice) const {
  // Per member (then per edge) its options: the distance and the completion below it; the
  // thresholds are the distinct distances.
  const auto& members = f.group[static_cast<size_t>(x)];
  const auto& edges = f.from[static_cast<size_t>(x)];
  const auto firstMember = std::lower_bound(members.begin(), members.end(), k);
  const auto firstEdge = std::lower_bound(edges.begin(), edges.end(), k, [&](int32_t e, int32_t at) {
    return f.edges[static_cast<size_t>(e)].consumer < at;
  });
  scratchD_.clear();
  scratchB_.clear();
  scratchV_.clear();
  scratchN_.clear();
  scratchT_.assign(1, 0.0);
  double floor = 0;  // Σ of every member's cheapest option: no threshold gives less (edges' can be < 0)
  auto close = [&](size_t begin) {
    double cheapest = kInf;
    for (size_t j = begin; j < scratchD_.size(); ++j)
      if (scratchD_[j] < kInf && scratchB_[j] < kInf) {
        cheapest = std::min(cheapest, scratchB_[j]);
        scratchT_.push_back(scratchD_[j]);
      }
    scratchN_.push_back(static_cast<uint32_t>(scratchD_.size()));
    floor += cheapest;
    return cheapest < kInf;
  };
  for (auto c = firstMember; c != members.end(); ++c) {
    const size_t begin = scratchD_.size();
    const auto& ins = inputs_[static_cast<size_t>(*c)];
    const auto& variants = t_.variants(*c);
    for (size_t v = 0; v < variants.size(); ++v) {
      double d = 0;
      const double b = f.below[static_cast<size_t>(*c)][v];
      if (b < kInf)
        for (size_t i = 0; i < ins.size(); ++i)
          if (ins[i] == x) d = std::max(d, table_.distance(x, have, variants[v].inputs[i]));
      scratchD_.push_back(b < kInf ? d : kInf);
      scratchB_.push_back(b);
      scratchV_.push_back(static_cast<int32_t>(v));
    }
    if (!close(begin)) return kInf;
  }
  for (auto e = firstEdge; e != edges.end(); ++e) {
    const Edge& edge = f.edges[static_cast<size_t>(*e)];
    const size_t begin = scratchD_.size();
    const auto& variants = t_.variants(edge.consumer);
    for (size_t v = 0; v < variants.size(); ++v) {
      if (!(f.below[static_cast<size_t>(edge.consumer)][v] < kInf)) continue;
      const Rel r = variants[v].inputs[static_cast<size_t>(edge.slot)];
      const int b = std::countr_zero(bit(r));
      scratchD_.push_back(table_.distance(x, have, r));
      scratchB_.push_back(-edge.lambda[static_cast<size_t>(b)]);
      scratchV_.push_back(b);
    }
    if (!close(begin)) return kInf;
  }
  std::sort(scratchT_.begin(), scratchT_.end());
  scratchT_.erase(std::unique(scratchT_.begin(), scratchT_.end()), scratchT_.end());
  double best = kInf, bestT = 0;
  for (double t : scratchT_) {
    if (t + floor >= best) break;
    double total = t;
    size_t at = 0;
    for (uint32_t end : scratchN_) {
      double cheapest = kInf;
      for (; at < end; ++at)
        if (scratchD_[at] <= t) cheapest = std::min(cheapest, scratchB_[at]);
      total += cheapest;
    }
    if (total < best) {
      best = total;
      bestT = t;
    }
  }
  if (choice && best < kInf) {
    const size_t memberCount = static_cast<size_t>(members.end() - firstMember);
    size_t at = 0, j = 0;
    for (uint32_t end : scratchN_) {
      double cheapest = kInf;
      int32_t pick = -1;
      for (; at < end; ++at)
        if (scratchD_[at] <= bestT && scratchB_[at] < cheapest) {
          cheapest = scratchB_[at];
          pick = scratchV_[at];
        }
      if (j < memberCount) choice->variant[static_cast<size_t>(firstMember[static_cast<ptrdiff_t>(j)])] = pick;
      else choice->declared[static_cast<size_t>(firstEdge[static_cast<ptrdiff_t>(j - memberCount)])] = pick;
      ++j;
    }
  }
  return best;
}

// Lower bound. A program costs Σ over nodes of their variant's cost (with the loads of
// single-use parameters: CostTable::variantBound) plus Σ over values of their conversions. A
// value's conversions cost at least the largest of its distances from the form it is produced
// (or held) in to the forms its consumers read. Charging every value to a group of its
// consumers, every node at most one of its inputs, gives a forest over which the cheapest
// assignment of variants is a dynamic programme and a lower bound on every program.
//
// Admissibility holds for *any* charging: a node's charged edge is the only one through which
// its variant's choice is coupled to an input's form; every uncharged edge is relaxed to a free
// conversion, which can only lower the minimum; each node's own cost enters once (in the group
// it is charged to, or as a root), and each value's conversions at least the largest distance
// over a subset of its consumers. The maximum of two lower bounds is a lower bound, so h below
// (the larger of two forests' bounds) is admissible.
//
// Which input a node is charged decides what the bound sees. Charging the value with fewer
// consumers keeps chains of single-use activations whole (a node reading its own value and a
// shared one is charged its own), but at a join of a large shared activation with a small
// derived tensor it relaxes the expensive edge: BERT-MoE's dispatch einsum reads the token
// activations (three consumers) and the gating's dispatch mask (one), and the first forest lets
// the einsum read the tokens in whatever form avoids the experts' all-to-all, for free; the
// bound then misses ~12 ms per MoE layer, and the gating's near-free forms fill that gap with
// millions of states. The second forest charges each node its largest input tensor (bytes; ties
// as the first), whose conversions are the expensive ones; there the bound is exact along
// BERT-MoE's optimal path. Neither dominates the other (the first is tighter on most dense
// graphs' plateaus), so both are kept.
//
// No forest sees a diamond: attention's q, k and v linears all read the layer input x, and q·kᵀ
// then (scores)·v join their chains again. Whichever edges a forest drops, two of the three
// linears can go column-parallel behind one all-gather of x (x's group shares its threshold)
// while their head-split outputs reach the joins for free: on 8 heterogeneous GPUs the bound
// missed 2.9 ms per layer (35 ms on 682 ms), and BERT-MoE's gating plateaus filled the gap with
// 2M states (beam fallback, not proven). So the dropped edges are priced back by Lagrangian
// relaxation: for each edge (x read by c outside x's group) c's variant v pays lambda[r_v], the
// form it reads x in, and x's group gains a pseudo-member that declares a form r, reachable
// within the group's threshold like any member's, for -lambda[r]. Admissible for *every*
// lambda: a real program is a choice of the relaxed problem in which each pseudo-member declares
// the form its consumer reads, so the two terms cancel, and the threshold still covers only
// distances to forms some consumer reads (x's conversions cost at least the largest); the
// minimum over more choices is lower. tighten() picks lambda (subgradient steps at the start
// state); on the paper's models it closes the gap (BERT-MoE on 8 GPUs: 751 states, was 2.3M).
void Searcher::prepareBound() {
  const int32_t n = static_cast<int32_t>(g_.nodes.size());
  // The values that may be charged: a single-use parameter's load is already in its consumer's
  // variantBound, and the loss has no consumer.
  std::vector<ir::ValueId> order;
  for (const ir::Value& x : g_.values) {
    const bool singleUseParam = x.kind == ir::ValueKind::Parameter && x.users.size() == 1;
    if (!x.users.empty() && x.id != g_.loss && !singleUseParam) order.push_back(x.id);
  }
  std::stable_sort(order.begin(), order.end(), [&](ir::ValueId a, ir::ValueId b) {
    return g_.value(a).users.size() < g_.value(b).users.size();
  });

  // First charging: values with fewer consumers first; a value takes every consumer not charged
  // yet.
  std::vector<std::vector<int32_t>> byConsumers(g_.values.size());
  std::vector<char> hasCharge(static_cast<size_t>(n), 0);
  for (ir::ValueId x : order)
    for (ir::NodeId c : g_.value(x).users)
      if (!hasCharge[static_cast<size_t>(c)]) {
        byConsumers[static_cast<size_t>(x)].push_back(c);
        hasCharge[static_cast<size_t>(c)] = 1;
      }

  // Second charging: every node its largest chargeable input (ties: the first charging's order).
  std::vector<int> rank(g_.values.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) rank[static_cast<size_t>(order[i])] = static_cast<int>(i);
  std::vector<std::vector<int32_t>> bySize(g_.values.size());
  for (int32_t c = 0; c < n; ++c) {
    ir::ValueId best = ir::kNone;
    for (ir::ValueId x : inputs_[static_cast<size_t>(c)]) {
      if (rank[static_cast<size_t>(x)] < 0) continue;
      const int64_t bytes = g_.value(x).bytes();
      if (best == ir::kNone || bytes > g_.value(best).bytes() ||
          (bytes == g_.value(best).bytes() && rank[static_cast<size_t>(x)] < rank[static_cast<size_t>(best)]))
        best = x;
    }
    if (best != ir::kNone) bySize[static_cast<size_t>(best)].push_back(c);
  }

  forests_.clear();
  forests_.emplace_back();
  buildForest(forests_.back(), byConsumers);
  if (bySize != byConsumers) {  // the same forest twice would only double the work
    forests_.emplace_back();
    buildForest(forests_.back(), bySize);
  }
}

void Searcher::buildForest(Forest& f, const std::vector<std::vector<int32_t>>& group) {
  const int32_t n = static_cast<int32_t>(g_.nodes.size());
  f.group = group;
  f.parent.assign(static_cast<size_t>(n), -1);
  for (const ir::Value& x : g_.values)
    if (x.kind == ir::ValueKind::Activation)
      for (int32_t c : f.group[static_cast<size_t>(x.id)]) f.parent[static_cast<size_t>(c)] = x.producer;
  f.edges.clear();
  f.from.assign(g_.values.size(), {});
  f.into.assign(static_cast<size_t>(n), {});
  for (int32_t c = 0; c < n; ++c) {
    const auto& ins = inputs_[static_cast<size_t>(c)];
    for (size_t i = 0; i < ins.size(); ++i) {
      const ir::Value& x = g_.value(ins[i]);
      const auto& members = f.group[static_cast<size_t>(x.id)];
      if (x.kind != ir::ValueKind::Activation || std::binary_search(members.begin(), members.end(), c)) continue;
      f.from[static_cast<size_t>(x.id)].push_back(static_cast<int32_t>(f.edges.size()));
      f.into[static_cast<size_t>(c)].push_back(static_cast<int32_t>(f.edges.size()));
      f.edges.push_back({c, static_cast<int32_t>(i), {}});
    }
  }
  priceForest(f);
  tighten(f);
}

void Searcher::priceForest(Forest& f) {
  const int32_t n = static_cast<int32_t>(g_.nodes.size());
  f.below.assign(static_cast<size_t>(n), {});
  f.belowMin.assign(static_cast<size_t>(n), kInf);
  for (int32_t m = n - 1; m >= 0; --m) {
    const ir::Node& node = g_.node(m);
    const auto& variants = t_.variants(m);
    // Per output, its group's completion from each form the output can be produced in.
    std::vector<std::pair<uint32_t, double>> memo;  // (output << 16 | form, completion)
    auto& row = f.below[static_cast<size_t>(m)];
    row.assign(variants.size(), kInf);
    for (size_t v = 0; v < variants.size(); ++v) {
      if (!allowed(m, v)) continue;
      double b = table_.variantBound(m, static_cast<int>(v));
      if (!(b < kInf)) continue;
      for (int32_t e : f.into[static_cast<size_t>(m)]) {
        const Edge& edge = f.edges[static_cast<size_t>(e)];
        b += edge.lambda[static_cast<size_t>(std::countr_zero(bit(variants[v].inputs[static_cast<size_t>(edge.slot)])))];
      }
      for (size_t o = 0; o < node.outputs.size() && b < kInf; ++o) {
        const ir::ValueId out = node.outputs[o];
        if (f.group[static_cast<size_t>(out)].empty() && f.from[static_cast<size_t>(out)].empty()) continue;
        const FormMask from = addForm(0, variants[v].outputs[o]);
        const uint32_t key = static_cast<uint32_t>(o << 16 | from);
        auto it = std::find_if(memo.begin(), memo.end(), [&](const auto& e) { return e.first == key; });
        if (it == memo.end()) {
          memo.emplace_back(key, groupBelow(f, out, from, 0));
          it = memo.end() - 1;
        }
        b += it->second;
      }
      row[v] = b;
      f.belowMin[static_cast<size_t>(m)] = std::min(f.belowMin[static_cast<size_t>(m)], b);
    }
  }
  // Node m is a root of the forest cut at k for k in (p, m], p the producer of its charged input
  // (every k <= m when that input is a source or m has none).
  std::vector<double> delta(static_cast<size_t>(n) + 2, 0.0);
  for (int32_t m = 0; m < n; ++m) {
    const int32_t lo = f.parent[static_cast<size_t>(m)] + 1;  // 0 without an activation parent
    delta[static_cast<size_t>(lo)] += f.belowMin[static_cast<size_t>(m)];
    delta[static_cast<size_t>(m) + 1] -= f.belowMin[static_cast<size_t>(m)];
  }
  f.rootSum.assign(static_cast<size_t>(n) + 1, 0.0);
  double run = 0;
  for (int32_t k = 0; k <= n; ++k) {
    run += delta[static_cast<size_t>(k)];
    f.rootSum[static_cast<size_t>(k)] = run;
  }
}

// Raises the forest's bound at the start state by its multipliers (prepareBound), by
// subgradient steps with a step size per edge (as Rprop does): from the relaxed problem's
// minimiser, each edge whose declared form r differs from the form c its consumer reads moves
// lambda[c] up and lambda[r] down by its step, which starts at (the distance between the two
// forms) / 4 (at / 2 the disagreement costs about what converting would), grows 1.5× while the
// edge disagrees the same way, and halves when it turns around (it overshot). Edges in different
// layers need different steps, so one global step either stalls or overshoots somewhere. The
// bound is not monotone in the steps: the best multipliers seen are kept, so the bound at the
// start is never below the multiplier-free one. Stops when the minimiser agrees on every edge,
// after kTightenRounds pricings of the forest, or after kPatience rounds without a better bound.
void Searcher::tighten(Forest& f) {
  constexpr int kTightenRounds = 30, kPatience = 6;
  if (f.edges.empty()) return;
  const int32_t n = static_cast<int32_t>(g_.nodes.size());
  const std::vector<FormMask> start(width(0), 0);
  double bound = forestBound(f, 0, start.data());
  if (!(bound < kInf)) return;
  double best = bound;
  std::vector<std::array<double, 16>> bestLambda;
  for (const Edge& edge : f.edges) bestLambda.push_back(edge.lambda);
  std::vector<double> step(f.edges.size(), 0.0);
  std::vector<std::pair<int, int>> last(f.edges.size(), {-1, -1});  // (read, declared) of its last move
  Choice choice;
  for (int round = 0, stale = 0; round < kTightenRounds && stale < kPatience; ++round) {
    // The minimiser, in node order: a node's variant is set by the group it is charged to (its
    // producer comes first), or, for a root, its cheapest.
    choice.variant.assign(static_cast<size_t>(n), -1);
    choice.declared.assign(f.edges.size(), -1);
    for (ir::ValueId x : layout_.live[0])
      if (!f.group[static_cast<size_t>(x)].empty()) groupBelow(f, x, 0, 0, &choice);
    for (int32_t m = 0; m < n; ++m) {
      int32_t& v = choice.variant[static_cast<size_t>(m)];
      const auto& row = f.below[static_cast<size_t>(m)];
      if (v < 0) v = static_cast<int32_t>(std::min_element(row.begin(), row.end()) - row.begin());
      const ir::Node& node = g_.node(m);
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        const ir::ValueId out = node.outputs[o];
        if (f.group[static_cast<size_t>(out)].empty() && f.from[static_cast<size_t>(out)].empty()) continue;
        groupBelow(f, out, addForm(0, t_.variants(m)[static_cast<size_t>(v)].outputs[o]), 0, &choice);
      }
    }
    int moves = 0;
    for (size_t e = 0; e < f.edges.size(); ++e) {
      Edge& edge = f.edges[e];
      const int32_t v = choice.variant[static_cast<size_t>(edge.consumer)];
      const int declared = choice.declared[e];
      if (v < 0 || declared < 0) continue;
      const Rel read = t_.variants(edge.consumer)[static_cast<size_t>(v)].inputs[static_cast<size_t>(edge.slot)];
      const int r = std::countr_zero(bit(read));
      if (r == declared) continue;
      if (step[e] == 0) {
        const ir::ValueId x = inputs_[static_cast<size_t>(edge.consumer)][static_cast<size_t>(edge.slot)];
        double d = table_.distance(x, static_cast<FormMask>(1u << declared), read);
        if (!(d < kInf)) d = table_.distance(x, bit(read), relOfBit(declared));
        if (!(d > 0 && d < kInf)) continue;
        step[e] = d / 4;
      } else if (last[e] == std::make_pair(declared, r)) {
        step[e] /= 2;
      } else if (last[e] == std::make_pair(r, declared)) {
        step[e] *= 1.5;
      }
      last[e] = {r, declared};
      edge.lambda[static_cast<size_t>(r)] += step[e];
      edge.lambda[static_cast<size_t>(declared)] -= step[e];
      ++moves;
    }
    if (!moves) break;
    priceForest(f);
    bound = forestBound(f, 0, start.data());
    if (bound > best) {
      best = bound;
      stale = 0;
      for (size_t e = 0; e < f.edges.size(); ++e) bestLambda[e] = f.edges[e].lambda;
    } else {
      ++stale;
    }
  }
  if (bound != best) {
    for (size_t e = 0; e < f.edges.size(); ++e) f.edges[e].lambda = bestLambda[e];
    priceForest(f);
  }
}

double Searcher::heuristic(int32_t k, const FormMask* forms) {
  if (!options_.heuristic) return 0;
  double h = 0;
  for (const Forest& f : forests_) {
    const double b = forestBound(f, k, forms);
    if (b == kInf) return kInf;
    h = std::max(h, b);
  }
  return h;
}

double Searcher::forestBound(const Forest& f, int32_t k, const FormMask* forms) {
  double h = f.rootSum[static_cast<size_t>(k)];
  const auto& live = layout_.live[static_cast<size_t>(k)];
  for (size_t s = 0; s < live.size(); ++s) {
    const ir::ValueId x = live[s];
    const auto& members = f.group[static_cast<size_t>(x)];
    const auto& edges = f.from[static_cast<size_t>(x)];
    // The members not computed yet: their roots' belowMin are in rootSum.
    const auto first = std::lower_bound(members.begin(), members.end(), k);
    const bool edgesLeft = !edges.empty() && f.edges[static_cast<size_t>(edges.back())].consumer >= k;
    if (first == members.end() && !edgesLeft) continue;
    const double b = groupBelow(f, x, forms[s], k);
    if (b == kInf) {
      int32_t consumer = first != members.end() ? *first : -1;
      for (int32_t e : edges)
        if (consumer < 0 && f.edges[static_cast<size_t>(e)].consumer >= k) consumer = f.edges[static_cast<size_t>(e)].consumer;
      culprit_ = {consumer, x, forms[s]};
      return kInf;
    }
    for (auto c = first; c != members.end(); ++c) h -= f.belowMin[static_cast<size_t>(*c)];
    h += b;
  }
  return h;
}

// Node m has no allowed variant whose inputs can all be obtained, whatever came before.
void Searcher::unrunnable(int32_t m) const {
  const ir::Node& node = g_.node(m);
  const auto& ins = inputs_[static_cast<size_t>(m)];
  const auto& variants = t_.variants(m);
  for (size_t v = 0; v < variants.size(); ++v) {
    if (!allowed(m, v)) continue;
    for (size_t i = 0; i < ins.size(); ++i)
      if (table_.distance(ins[i], 0, variants[v].inputs[i]) == kInf && t_.isSource(ins[i]))
        throw SearchError(fmt::format(
            "no distributed program exists: {} under its variant '{}' reads '{}' in form {}, "
            "which it cannot be loaded in under the search's restrictions; unpin the node or "
            "lift the restriction",
            g_.describe(m), variants[v].name, g_.value(ins[i]).name, formatRel(variants[v].inputs[i])));
  }
  throw SearchError(fmt::format("no distributed program exists: no variant of {} can run", g_.describe(node.id)));
}

// Every state was expanded, or dropped, without completing: name the consumer and the value
// that could not get a form it reads, or else the first node no state got past.
void Searcher::noProgram(int32_t deepest) const {
  if (culprit_.node >= 0) {
    std::string forms;
    for (int b = 0; b < 16; ++b)
      if (culprit_.forms & (1u << b)) forms += (forms.empty() ? "" : ", ") + formatRel(relOfBit(b));
    std::string wanted;
    const auto& ins = inputs_[static_cast<size_t>(culprit_.node)];
    const auto& variants = t_.variants(culprit_.node);
    for (size_t v = 0; v < variants.size(); ++v)
      for (size_t i = 0; i < ins.size(); ++i)
        if (allowed(culprit_.node, v) && ins[i] == culprit_.value)
          wanted += fmt::format("{}{} ({})", wanted.empty() ? "" : ", ", formatRel(variants[v].inputs[i]), variants[v].name);
    throw SearchError(fmt::format(
        "no distributed program exists: {} reads '{}' as {}, and no conversion gives any of "
        "these from the forms the value can hold ({}); unpin the node, or add a rule variant "
        "that produces one of them",
        g_.describe(culprit_.node), g_.value(culprit_.value).name, wanted, forms));
  }
  const ir::Node& n = g_.node(deepest);
  throw SearchError(fmt::format(
      "no distributed program exists: no state gets past {}; add a rule for its op or unpin it",
      g_.describe(n.id)));
}

Program Searcher::run(SearchStats* stats) {
  start_ = lastReport_ = std::chrono::steady_clock::now();
  const int32_t n = static_cast<int32_t>(g_.nodes.size());
  for (int32_t k = 0; k < n; ++k) {
    bool runnable = false;
    for (size_t v = 0; v < t_.variants(k).size() && !runnable; ++v)
      runnable = allowed(k, v) && table_.variantBound(k, static_cast<int>(v)) < kInf;
    if (!runnable) unrunnable(k);
  }
  if (options_.heuristic) prepareBound();

  arena_.assign(width(0), 0);
  states_.push_back({0, 0, 0.0, heuristic(0, arena_.data()), -1, -1});
  if (states_[0].h == kInf) noProgram(0);
  index_.insert(0);
  uint64_t seq = 0;
  open_.push({states_[0].h, 0, seq++, 0});
  int32_t deepest = 0;

  while (!open_.empty()) {
    const Entry top = open_.top();
    open_.pop();
    const State cur = states_[static_cast<size_t>(top.state)];
    if (top.f > cur.g + cur.h + 1e-15) continue;  // superseded entry
    if (cur.k == n) {
      report(top.state, top.f, true);
      finish(stats, true);
      return buildProgram(table_, partialOf(top.state));
    }
    if ((expanded_++ & 127) == 0) {
      options_.throwIfCancelled();
      report(top.state, top.f, false);
    }
    deepest = std::max(deepest, cur.k);
    deepest_ = deepest;

    expand(top.state, [&](int32_t id) {
      const int32_t held = index_.insert(id);
      const State& created = states_[static_cast<size_t>(id)];
      if (created.k == n && (bestComplete_ < 0 || created.g < bestComplete_)) bestComplete_ = created.g;
      if (held >= 0) {
        State& old = states_[static_cast<size_t>(held)];
        if (created.g < old.g - 1e-15) {
          old.g = created.g;
          old.parent = created.parent;
          old.variant = created.variant;
          open_.push({old.g + old.h, old.k, seq++, held});
        }
        return false;  // drop the duplicate
      }
      open_.push({created.g + created.h, created.k, seq++, id});
      return true;
    });
    if (static_cast<int64_t>(states_.size()) > options_.maxStates) {
      if (options_.beamWidth > 0) {
        if (options_.listener) {
          const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
          options_.listener->onBeamFallback({options_.maxStates, expanded_, options_.beamWidth, deepest, n, elapsed});
        }
        return beam(stats);
      }
      throw SearchError(fmt::format(
          "the search stopped at its memory bound of {} states ({} expanded, at node {} of {}); "
          "raise the bound (--max-states) or allow the beam search (--beam-width)",
          options_.maxStates, expanded_, deepest, n));
    }
  }
  noProgram(deepest);
}


template <typename Sink>
void Searcher::expand(int32_t from, Sink&& sink) {
  const State cur = states_[static_cast<size_t>(from)];
  const ir::Node& node = g_.node(cur.k);
  const std::vector<ir::ValueId> ins = node.tensorInputs();
  const auto& slots = layout_.inputSlot[static_cast<size_t>(cur.k)];
  const auto& carry = layout_.carry[static_cast<size_t>(cur.k)];
  const auto& variants = t_.variants(cur.k);
  std::vector<FormMask> work;
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    // Pinned out, or excluded by the table's restrictions (an infinite bound: e.g. a parameter
    // read in another form than whole where parameters must be read whole).
    if (!allowed(cur.k, vi) || !(table_.variantBound(cur.k, static_cast<int>(vi)) < kInf)) continue;
    const rules::Variant& v = variants[vi];
    work.assign(formsOf(from), formsOf(from) + width(cur.k));
    double cost = table_.seconds(cur.k, static_cast<int>(vi));
    bool feasible = true;
    for (size_t i = 0; i < ins.size() && feasible; ++i) {
      FormMask& m = work[static_cast<size_t>(slots[i])];
      if (holds(m, v.inputs[i])) continue;
      std::optional<Conversion> c = table_.convert(ins[i], m, v.inputs[i]);
      if (!c) {
        feasible = false;
        break;
      }
      cost += c->seconds();
      m = addForm(m, c->to);
    }
    if (!feasible) continue;
    ++generated_;
    // The successor's forms go at the arena's end; the sink keeps or drops the state.
    const uint32_t offset = static_cast<uint32_t>(arena_.size());
    for (int f : carry)
      arena_.push_back(f >= 0 ? work[static_cast<size_t>(f)]
                              : f == kFresh ? FormMask{0}
                                            : addForm(0, v.outputs[static_cast<size_t>(-1 - f)]));
    states_.push_back({cur.k + 1, offset, cur.g + cost, 0.0, from, static_cast<int32_t>(vi)});
    // h depends on the position and forms only: a state seen before has it already.
    const int32_t seen = index_.find(static_cast<int32_t>(states_.size()) - 1);
    const double h = seen >= 0 ? states_[static_cast<size_t>(seen)].h : heuristic(cur.k + 1, &arena_[offset]);
    if (h == kInf) {  // no completion
      resetTo(states_.size() - 1, offset);
      continue;
    }
    states_.back().h = h;
    if (!sink(static_cast<int32_t>(states_.size()) - 1)) resetTo(states_.size() - 1, offset);
  }
}

void Searcher::resetTo(size_t states, size_t arena) {
  states_.resize(states);
  arena_.resize(arena);
}

// Position by position, keep the beamWidth distinct states of lowest g + h (ties: creation
// order). Deterministic; returns the cheapest complete program found.
Program Searcher::beam(SearchStats* stats) {
  const int32_t n = static_cast<int32_t>(g_.nodes.size());
  index_.clear();
  open_ = {};
  states_.clear();
  arena_.assign(width(0), 0);
  states_.push_back({0, 0, 0.0, heuristic(0, arena_.data()), -1, -1});
  std::vector<int32_t> layer{0};
  bestComplete_ = -1;
  for (int32_t k = 0; k < n; ++k) {
    index_.clear();
    std::vector<int32_t> next;
    for (int32_t s : layer) {
      if ((expanded_++ & 63) == 0) options_.throwIfCancelled();
      expand(s, [&](int32_t id) {
        const int32_t held = index_.insert(id);
        if (held < 0) {
          next.push_back(id);
          return true;
        }
        State& old = states_[static_cast<size_t>(held)];
        const State& created = states_[static_cast<size_t>(id)];
        if (created.g < old.g - 1e-15) {
          old.g = created.g;
          old.parent = created.parent;
          old.variant = created.variant;
        }
        return false;
      });
    }
    if (next.empty()) noProgram(k);
    std::stable_sort(next.begin(), next.end(), [&](int32_t a, int32_t b) {
      const State& x = states_[static_cast<size_t>(a)];
      const State& y = states_[static_cast<size_t>(b)];
      return x.g + x.h < y.g + y.h;
    });
    if (next.size() > static_cast<size_t>(options_.beamWidth)) next.resize(static_cast<size_t>(options_.beamWidth));
    layer = std::move(next);
    const State& front = states_[static_cast<size_t>(layer.front())];
    report(layer.front(), front.g + front.h, k + 1 == n, &layer);
  }
  finish(stats, false);
  return buildProgram(table_, partialOf(layer.front()));
}

}  // namespace

bool globMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

void SearchOptions::throwIfCancelled() const {
  if (cancelled()) throw SearchError("the search was cancelled");
}

Pin parsePin(const std::string& text) {
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw Error(fmt::format("pin '{}' is not PATTERN=VARIANT (e.g. 'layers.*.mlp.fc1=column')", text));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

Program search(const CostTable& table, const SearchOptions& options, SearchStats* stats) {
  if (table.theory().graph().nodes.empty()) throw SearchError("the graph has no nodes to plan");
  SearchListener* listener = options.listener;
  if (!listener) return Searcher(table, options).run(stats);
  SearchStats local;
  if (!stats) stats = &local;
  listener->onSearchStarted(table.theory());
  try {
    Program p = Searcher(table, options).run(stats);
    listener->onSearchFinished(*stats, {});
    return p;
  } catch (const std::exception& e) {
    listener->onSearchFinished(*stats, e.what());
    throw;
  }
}

}  // namespace hap::synth
