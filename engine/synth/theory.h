// The theory of a reference graph (../shared/DESIGN.md §3): for every node the exact ways to
// compute it (rule variants, i.e. Hoare triples over facts), the dimension classes their G facts
// link, and the graph facts the search needs (gradient flow, liveness). Independent of the cluster
// and of the ratios; built once per graph.
#pragma once

#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/rules/rule.h"
#include "engine/synth/fact.h"
#include "engine/synth/dim_classes.h"

namespace hap::synth {

class Theory {
 public:
  // `nodeSegment` gives every node's segment (ir/segments.h; empty: one segment). Values read
  // across segments must go through hap::reshard nodes (ir::insertReshards), so that every
  // dimension class lies in one segment and is cut by that segment's ratios.
  explicit Theory(const ir::Graph& g, std::vector<int> nodeSegment = {});

  const ir::Graph& graph() const { return g_; }
  const std::vector<rules::Variant>& variants(ir::NodeId n) const {
    return variants_[static_cast<size_t>(n)];
  }
  bool hasRule(ir::NodeId n) const { return hasRule_[static_cast<size_t>(n)]; }
  const DimClasses& classes() const { return classes_; }
  // The dimension class whose cut splits node n's work under variant v: the class of its first G
  // output, else of its first G input; -1 when it has none (or only empty dimensions). The cost
  // table and the integer balance (balance/share_milp.h) both take a node's share from it.
  int cutClass(ir::NodeId n, int v) const;

  // Whether a gradient flows to this value in backward (it depends on a parameter through
  // differentiable ops and is floating point).
  bool requiresGrad(ir::ValueId v) const { return requiresGrad_[static_cast<size_t>(v)]; }
  // The last node reading v; graph.nodes.size() for the loss (live to the end); kNone if unused.
  ir::NodeId lastUse(ir::ValueId v) const { return lastUse_[static_cast<size_t>(v)]; }
  bool isSource(ir::ValueId v) const { return g_.value(v).kind != ir::ValueKind::Activation; }

  int segmentCount() const { return segments_; }
  int nodeSegment(ir::NodeId n) const { return nodeSegment_[static_cast<size_t>(n)]; }
  // A value's segment: its producer's, or a source's first reader's.
  int valueSegment(ir::ValueId v) const { return valueSegment_[static_cast<size_t>(v)]; }

  // Ops that have no rule and are therefore planned replicated (one message per op kind).
  const std::vector<ir::Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  const ir::Graph& g_;
  std::vector<std::vector<rules::Variant>> variants_;
  std::vector<bool> hasRule_;
  DimClasses classes_;
  std::vector<bool> requiresGrad_;
  std::vector<ir::NodeId> lastUse_;
  std::vector<ir::Diagnostic> diagnostics_;
  std::vector<int> nodeSegment_, valueSegment_;
  int segments_ = 1;
};

}  // namespace hap::synth
