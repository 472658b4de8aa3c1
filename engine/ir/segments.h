// Segments: groups of nodes that share one vector of sharding ratios (../shared/DESIGN.md §3
// "Ratios").
//
// A segment is usually one repeated block of the model (one transformer layer), found from the
// nodes' module scopes, or a part of an automatic partition (METIS) of the graph. A value read in
// a segment other than its own is re-sharded there: insertReshards() routes it through one
// `hap::reshard` node in the reading segment, an identity op whose G(d) -> G(d) variant is an
// all-to-all from the old segment's lengths to the new one's (free when the ratios agree).
#pragma once

#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace hap::ir {

inline constexpr const char* kReshardOp = "hap::reshard";

struct Segmentation {
  std::vector<int> nodeSegment;    // per node, in [0, names.size())
  std::vector<std::string> names;  // per segment: "layers.3", "prologue", ...
  int count() const { return static_cast<int>(names.size()); }
};

struct SegmentOptions {
  enum class Mode {
    None,   // one segment
    Scope,  // by module scope: per repeated block (depth 0) or per scope prefix of `depth` parts
    Auto,   // a METIS partition into `parts` parts balanced by FLOPs, cutting few bytes
  };
  Mode mode = Mode::Scope;
  int depth = 0;
  int parts = 0;
};

// Parses "none", "layer", "scope:N" or "auto:K" (the CLI's --segments); throws hap::Error.
SegmentOptions parseSegmentOptions(const std::string& text);

// Segments of g's nodes. Scope mode at depth 0 picks the repeated blocks: the scope prefixes that
// end at the first numbered part ("layers.3" in "layers.3.attn.q"), when there are at least two
// and they hold four nodes each on average; otherwise one segment. Nodes outside any block join
// the block before them; those before the first block form "prologue". Deterministic. Throws
// hap::Error when auto mode is asked for without METIS or with fewer than one part.
Segmentation segmentGraph(const Graph& g, const SegmentOptions& options);

// One segment holding every node.
Segmentation singleSegment(const Graph& g);

// A value's segment: its producer's; a source's is its first reader's (0 when unread).
int valueSegment(const Graph& g, const Segmentation& s, ValueId v);

// The graph with a hap::reshard node before the first reader of every (value, other segment)
// pair; those readers read the reshard's output. Value ids are kept (new outputs are appended),
// node ids change. `s` is updated to the new graph's nodes (a reshard belongs to its readers'
// segment). With one segment the graph is returned unchanged.
Graph insertReshards(const Graph& g, Segmentation& s);

// Per node of a graph made by insertReshards: the node of the original graph it is, or kNone for
// a hap::reshard (the others keep their order).
std::vector<NodeId> originalNodes(const Graph& withReshards);

}  // namespace hap::ir
