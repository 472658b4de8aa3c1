// Sharding rules: for one reference node, the exact ways to compute it on distributed values.
//
// A rule (one per op family, registered by aten op name in registry.cpp) appends Variants. A
// variant is a Hoare triple {inputs} node {outputs}: if every tensor input holds the listed
// relation, running the node's op on every device's local pieces yields the outputs with the
// listed relations. Contract for rule authors:
//   - A variant must be exact (same values, to float rounding, as the single-device op), with
//     the local adjustment the runtime must apply declared in `execution` (e.g. a mean over a
//     sharded dimension divides by the global, not the local, length). The runtime reads only
//     `execution` (and `sfb`); `note` is prose for people.
//   - All G facts of one variant split "the same way": every G(d) dimension in a variant is
//     linked, so its lengths come from one dimension class (synth/dim_classes.h). Link only
//     dimensions whose lengths are equal or integer multiples of each other along a view.
//   - Do not append the all-replicated variant: variantsFor() adds it to every node.
//   - The node's tensor inputs are Node::tensorInputs() (list arguments flattened); a value that
//     appears twice gets two entries.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/rules/relation.h"

namespace hap::rules {

// What the runtime does beyond running the op on this rank's pieces (runtime/core/step_kernel.cpp),
// declared by the rule where it defines the variant. The step kernel compares no op or variant
// name: a variant that needs an adjustment and declares none computes a wrong value, which the
// rule property test (tests/runtime/soundness) catches.
enum class Execution : uint8_t {
  Plain,               // the op on the pieces, as it is
  WholeCutPiece,       // slice/narrow keeping the cut dimension whole: the piece itself
  ReshapeToPiece,      // a view-like op with a cut output: reshaped to the local output shape
  ExpandToPiece,       // an expand-like op with a cut output: expanded to the local output shape
  FactoryPiece,        // a factory (or new_*) with a cut output: made full size, the piece kept
  DropoutMask,         // dropout: each rank draws only its piece of a counter-based mask
  RandomDraws,         // another random op: every rank draws the op's numbers, keeps its piece
  MeanOverCut,         // a mean over a cut dimension: the local sum over the global count
  ClassLossMean,       // nll / cross-entropy, mean over cut positions: sum / global target count
  PointwiseLossMean,   // a pointwise loss, mean over cut positions: sum / global element count
  ProbabilityLossMean,  // cross-entropy with class probabilities: sum / global position count
  SyncStatistics,      // batch norm on a cut other than the channels: statistics all-reduced
  DepthwiseGroups,     // a depthwise convolution on a channel cut: groups = the local channels
  VocabOffset,         // an embedding with the table's rows cut: local ids looked up, zeros elsewhere
  BagSlice,            // embedding_bag with its bags cut: this rank's bags' indices sliced out
  ScaledMean,          // the op's own mean over cut positions, times local / global count (ctc)
  Reshard,             // hap::reshard: an all-to-all between the segments' cuts
};

// "plain", "whole-cut-piece", ... (for --explain and test messages).
std::string_view executionName(Execution e);

struct Variant {
  std::string name;                // short and stable: "replicate", "batch", "column", "row", ...
  std::vector<rules::Rel> inputs;  // one per tensor input, in Node::tensorInputs() order
  std::vector<rules::Rel> outputs;  // one per output
  // Sufficient-factor broadcasting: the weight input holds I* and its gradient is formed on
  // every device from all-gathered factors (input and output gradient) instead of all-reduced.
  bool sfb = false;
  // Bytes of statistics the runtime sums over all ranks inside the op, in forward and again (the
  // dual) in backward: a batch norm with synchronised statistics. The cost model prices them.
  int64_t syncBytes = 0;
  Execution execution = Execution::Plain;  // what the runtime must do (see Execution)
  std::string note;  // for people: what the variant does differently from the plain op, if anything
};

using RuleFn = void (*)(const ir::Graph& g, const ir::Node& n, std::vector<Variant>& out);

struct RuleEntry {
  std::string_view op;  // qualified op name without overload, in-place variants listed too
  RuleFn rule;
};

// The rule for `op`, or nullptr. In-place variants ("aten::relu_") are looked up as listed.
RuleFn findRule(std::string_view op);

// Every op with a rule, sorted (for the soundness test, which must cover them all).
std::vector<std::string_view> registeredOps();

// All variants of node n: the replicate variant (always first) followed by the rule's variants,
// deduplicated. Sets *hasRule to whether a specific rule exists for the op.
std::vector<Variant> variantsFor(const ir::Graph& g, const ir::Node& n, bool* hasRule = nullptr);

// "column: I G(0) G(0) -> G(2)" (inputs then outputs), for golden tests and --explain.
std::string formatVariant(const Variant& v);

// Helpers for rule authors.
int normalizeDim(int64_t dim, int rank);  // -1 -> rank-1; asserts 0 <= result < rank
// The integer constant argument `name`, or `fallback` when absent or None.
int64_t intArg(const ir::Node& n, std::string_view name, int64_t fallback);
// The int-list constant argument `name` (an int is a list of one); empty when absent or None.
std::vector<int64_t> intListArg(const ir::Node& n, std::string_view name);
const ir::Value& tensorInput(const ir::Graph& g, const ir::Node& n, size_t i);
const ir::Value& output(const ir::Graph& g, const ir::Node& n, size_t i = 0);

}  // namespace hap::rules
