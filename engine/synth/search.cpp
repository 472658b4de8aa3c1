#include "engine/synth/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <queue>
#include <unordered_set>

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

struct State {
  int32_t k;
  uint32_t forms;   // offset into the form arena (live[k].size() entries)
  double g;
  int32_t parent;
  int32_t variant;  // the variant of node k-1 that led here
};

struct Entry {
  double f;
  uint64_t seq;
  int32_t state;
  bool operator>(const Entry& o) const { return f != o.f ? f > o.f : seq > o.seq; }
};

class Searcher {
 public:
  Searcher(const CostTable& table, const SearchOptions& options)
      : table_(table), t_(table.theory()), g_(t_.graph()), options_(options),
        layout_(makeLayout(t_)), index_(1024, Hash{this}, Equal{this}) {}

  Program run(SearchStats* stats);

 private:
  // Appends state `from`'s successors (one per feasible variant of its node) to the arena and
  // calls `sink(id)` for each; returns their ids via the callback only.
  template <typename Sink>
  void expand(int32_t from, Sink&& sink);
  Program beam(SearchStats* stats);
  void resetTo(size_t states, size_t arena);
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
  void report(int32_t current, double f, bool force);

  const CostTable& table_;
  const Theory& t_;
  const ir::Graph& g_;
  const SearchOptions& options_;
  Layout layout_;
  std::vector<FormMask> arena_;
  std::vector<State> states_;
  std::unordered_set<int32_t, Hash, Equal> index_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> open_;
  std::vector<double> h_;
  std::chrono::steady_clock::time_point start_, lastReport_;
  int64_t expanded_ = 0, generated_ = 0;
};

std::vector<int> Searcher::partialOf(int32_t i) const {
  std::vector<int> chosen(static_cast<size_t>(states_[static_cast<size_t>(i)].k));
  for (int32_t s = i; states_[static_cast<size_t>(s)].parent >= 0; s = states_[static_cast<size_t>(s)].parent)
    chosen[static_cast<size_t>(states_[static_cast<size_t>(s)].k) - 1] = states_[static_cast<size_t>(s)].variant;
  return chosen;
}

void Searcher::report(int32_t current, double f, bool force) {
  if (!options_.listener) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && std::chrono::duration<double>(now - lastReport_).count() < options_.progressIntervalSeconds)
    return;
  lastReport_ = now;
  SearchProgress p;
  p.expanded = expanded_;
  p.frontier = static_cast<int64_t>(open_.size());
  p.stored = static_cast<int64_t>(states_.size());
  p.boundSeconds = f;
  p.elapsedSeconds = std::chrono::duration<double>(now - start_).count();
  p.partial = partialOf(current);
  if (states_[static_cast<size_t>(current)].k == static_cast<int32_t>(g_.nodes.size()))
    p.bestSeconds = states_[static_cast<size_t>(current)].g;
  options_.listener->onProgress(p);
}

// Every state was expanded without completing: name the first node no state got past.
void Searcher::noProgram(int32_t deepest) const {
  // Name what the node's first variant (replicate) asks of its first input.
  const ir::Node& n = g_.node(deepest);
  const std::vector<ir::ValueId> ins = n.tensorInputs();
  const rules::Variant& v = t_.variants(n.id).front();
  const std::string needs =
      ins.empty() ? std::string()
                  : fmt::format("input '{}' in form {} ({} variant)", g_.value(ins[0]).name,
                                formatRel(v.inputs[0]), v.name);
  throw SearchError(fmt::format(
      "no distributed program exists: {} needs {}, which no rule or conversion produces under "
      "the search restrictions; allow parameter sharding, or add a rule for the producer",
      g_.describe(n.id), needs.empty() ? "a form" : needs));
}

Program Searcher::run(SearchStats* stats) {
  start_ = lastReport_ = std::chrono::steady_clock::now();
  const int32_t n = static_cast<int32_t>(g_.nodes.size());
  h_.assign(static_cast<size_t>(n) + 1, 0.0);
  for (int32_t k = n - 1; k >= 0; --k) h_[static_cast<size_t>(k)] = h_[static_cast<size_t>(k) + 1] + table_.minSeconds(k);

  arena_.assign(width(0), 0);
  states_.push_back({0, 0, 0.0, -1, -1});
  index_.insert(0);
  uint64_t seq = 0;
  open_.push({h_[0], seq++, 0});
  int32_t deepest = 0;

  while (!open_.empty()) {
    const Entry top = open_.top();
    open_.pop();
    const State cur = states_[static_cast<size_t>(top.state)];
    if (top.f > cur.g + h_[static_cast<size_t>(cur.k)] + 1e-15) continue;  // superseded entry
    if (cur.k == n) {
      report(top.state, top.f, true);
      if (stats) {
        stats->expanded = expanded_;
        stats->generated = generated_;
        stats->stored = static_cast<int64_t>(states_.size());
        stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      }
      return buildProgram(table_, partialOf(top.state));
    }
    if ((++expanded_ & 1023) == 0) {
      if (options_.cancel && options_.cancel->load(std::memory_order_relaxed))
        throw SearchError("the search was cancelled");
      report(top.state, top.f, false);
    }
    deepest = std::max(deepest, cur.k);

    expand(top.state, [&](int32_t id) {
      auto [it, fresh] = index_.insert(id);
      const State& created = states_[static_cast<size_t>(id)];
      if (!fresh) {
        State& old = states_[static_cast<size_t>(*it)];
        if (created.g < old.g - 1e-15) {
          old.g = created.g;
          old.parent = created.parent;
          old.variant = created.variant;
          open_.push({old.g + h_[static_cast<size_t>(old.k)], seq++, *it});
        }
        return false;  // drop the duplicate
      }
      open_.push({created.g + h_[static_cast<size_t>(created.k)], seq++, id});
      return true;
    });
    if (static_cast<int64_t>(states_.size()) > options_.maxStates) {
      if (options_.beamWidth > 0) return beam(stats);
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
      m = addForm(m, v.inputs[i]);
    }
    if (!feasible) continue;
    ++generated_;
    // The successor's forms go at the arena's end; the sink keeps or drops the state.
    const uint32_t offset = static_cast<uint32_t>(arena_.size());
    for (int f : carry)
      arena_.push_back(f >= 0 ? work[static_cast<size_t>(f)]
                              : f == kFresh ? FormMask{0}
                                            : addForm(0, v.outputs[static_cast<size_t>(-1 - f)]));
    states_.push_back({cur.k + 1, offset, cur.g + cost, from, static_cast<int32_t>(vi)});
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
  states_.push_back({0, 0, 0.0, -1, -1});
  std::vector<int32_t> layer{0};
  for (int32_t k = 0; k < n; ++k) {
    if (options_.cancel && options_.cancel->load(std::memory_order_relaxed))
      throw SearchError("the search was cancelled");
    index_.clear();
    std::vector<int32_t> next;
    for (int32_t s : layer) {
      ++expanded_;
      expand(s, [&](int32_t id) {
        auto [it, fresh] = index_.insert(id);
        if (fresh) {
          next.push_back(id);
          return true;
        }
        State& old = states_[static_cast<size_t>(*it)];
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
      return states_[static_cast<size_t>(a)].g < states_[static_cast<size_t>(b)].g;
    });
    if (next.size() > static_cast<size_t>(options_.beamWidth)) next.resize(static_cast<size_t>(options_.beamWidth));
    layer = std::move(next);
    report(layer.front(), states_[static_cast<size_t>(layer.front())].g + h_[static_cast<size_t>(k) + 1], false);
  }
  if (stats) {
    stats->provenOptimal = false;
    stats->expanded = expanded_;
    stats->generated = generated_;
    stats->stored = static_cast<int64_t>(states_.size());
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  return buildProgram(table_, partialOf(layer.front()));
}

}  // namespace

Program search(const CostTable& table, const SearchOptions& options, SearchStats* stats) {
  if (table.theory().graph().nodes.empty()) throw SearchError("the graph has no nodes to plan");
  return Searcher(table, options).run(stats);
}

}  // namespace hap::synth
