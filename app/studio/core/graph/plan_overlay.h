// What a plan says about the imported graph the app draws (issue 18 item 3): per imported node its
// rule variant, segment, output form and predicted time per device; per read of a value (an edge
// from the value's producer, or from a graph input, to one consumer) the conversions the plan puts
// before that read and the form the consumer reads it in. The graph view colours and annotates
// the graph from it; the properties panel lists it.
//
// Plan::steps refer to the planned graph (the imported one with hap::reshard nodes, see
// PlanDocument). A reshard's steps and the conversions preparing its input belong to the read
// of the value by the reshard's FIRST reader (the reshard is inserted before that reader); later
// readers in the same segment read the resharded copy, and only their own conversions are theirs.
// So every Convert step lies on exactly one edge.
//
// Also here: the colourings of the plan modes of ColourBy (one function for the full plan, one for
// a partial program from the live search view, sharing the variant colours), the text forms are
// shown in, and the pin patterns of "Compute under variant" (engine/synth/search.h Pin: a glob on
// a node's scope or op).
#pragma once

#include <QString>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/studio/core/documents/plan_document.h"
#include "app/studio/core/graph/colouring.h"
#include "app/studio/core/graph/graph_layout.h"
#include "app/studio/core/graph/scope_tree.h"
#include "engine/ir/graph.h"
#include "engine/plan/plan.h"

namespace hap::studio {

// One imported node as planned.
struct PlanNodeInfo {
  int computeStep = -1;  // its Compute step in Plan::steps (-1: none)
  std::string variant;   // the step's PlanStep::variant
  int segment = -1;      // Plan::importedNodeSegment
  bool hasOutputForm = false;
  rules::Rel outputForm = rules::kIdentity;           // its first output's form
  std::vector<double> forwardByRank, backwardByRank;  // seconds, per rank of Plan::devices
  std::vector<int> edges;  // indices into PlanOverlay::edges() of its reads
};

// One read: imported value `value` read by imported node `consumer`.
struct PlanEdgeInfo {
  ir::ValueId value = ir::kNone;
  ir::NodeId producer = ir::kNone;  // kNone for a graph input, parameter, buffer or constant
  ir::NodeId consumer = ir::kNone;
  // The steps before the read, in program order: Convert steps, and the Compute step of the
  // reshard this read goes through (reshardStep, also listed here).
  std::vector<int> conversions;
  int reshardStep = -1;
  bool resharded = false;  // the consumer reads a reshard's output (its copy in its segment)
  bool hasReadForm = false;
  plan::Form read;  // the form the consumer's Compute step reads it in
  bool hasValueForm = false;
  rules::Rel valueForm = rules::kIdentity;  // the producer's output form (a source: the read form)
  // The conversions that communicate (PlanStep::seconds() > 0).
  int collectives = 0;
};

class PlanOverlay {
 public:
  PlanOverlay() = default;
  // `doc` may be null (an empty overlay). Cheap: one pass over the steps.
  explicit PlanOverlay(std::shared_ptr<const PlanDocument> doc);

  bool empty() const { return !m_doc; }
  const PlanDocument* document() const { return m_doc.get(); }
  const std::shared_ptr<const PlanDocument>& documentPtr() const { return m_doc; }
  const plan::Plan& plan() const { return *m_doc->plan; }

  int nodeCount() const { return static_cast<int>(m_nodes.size()); }
  const PlanNodeInfo& node(ir::NodeId n) const { return m_nodes.at(static_cast<size_t>(n)); }
  const std::vector<PlanEdgeInfo>& edges() const { return m_edges; }
  // The read of `value` by `consumer`, or null.
  const PlanEdgeInfo* edge(ir::ValueId value, ir::NodeId consumer) const;
  // The reads of a value, in consumer order.
  std::vector<const PlanEdgeInfo*> readsOf(ir::ValueId value) const;
  // The form the value's producer computes it in (with lengths), or null (a source, no step).
  const plan::Form* producedForm(ir::ValueId value) const;

  int rankCount() const;
  // The rank with the most busy time in the simulated timeline (plan::bottleneckRank), as a rank
  // of Plan::devices.
  int bottleneckRank() const;
  // "rank 2 · P100" (with " · bottleneck" where it is).
  QString rankName(int rank) const;
  // The node's forward + backward time on `rank` (NaN without a Compute step or rank).
  double nodeSeconds(ir::NodeId n, int rank) const;
  QString segmentName(int segment) const;
  // Rule variants the plan uses, sorted ("replicate" first).
  std::vector<std::string> variantNames() const;
  // Per imported node its variant ("" where none): the input of variantColouring.
  std::vector<std::string> variantByNode() const;
  // The largest sharded dimension of any node's output form (-1: none).
  int maxShardedDim() const;

 private:
  std::shared_ptr<const PlanDocument> m_doc;
  std::vector<PlanNodeInfo> m_nodes;
  std::vector<PlanEdgeInfo> m_edges;  // by consumer, then by the consumer's input order
};

// ---- text ---------------------------------------------------------------------------------------

// "replicated", "sharded dim 1", "partial sum" (I* is "replicated").
QString formCategoryName(rules::Rel r);
// "I", "G(1)", "R", "I*".
QString relText(rules::Rel r);
// "G(0) lengths 3, 3, 2, 0"; "I (replicated)"; "R (partial sum)".
QString formText(const plan::Form& f);
// A conversion step's instruction with its method: "all-gather (padded)", "reduce-scatter",
// "load-shard"; a reshard's Compute step: "reshard (all-to-all)", or "reshard (partial sum)".
QString conversionText(const plan::PlanStep& s);
// The short label drawn on an edge: "AG", "RS", "AR", "A2A", "SL" (slice), "LS" (load-shard), ...;
// "" for steps that change nothing a reader sees (a plain load, a reshard that moves nothing).
QString conversionGlyph(const plan::PlanStep& s);
// Whether the step moves data between devices (a conversion or reshard with a predicted time).
bool isCollective(const plan::PlanStep& s);

// ---- colourings ---------------------------------------------------------------------------------

// Categories of ShardingForm: "replicated", "sharded dim 0" .. "sharded dim maxDim", "partial sum".
std::vector<QString> formCategoryLabels(int maxShardedDim);
std::vector<QColor> formCategoryColours(int maxShardedDim);
int formCategory(rules::Rel r, int maxShardedDim);  // index into those labels
// The stroke colour an edge carrying a value in form r gets (a darker shade of the category's).
QColor formStrokeColour(rules::Rel r);
// The fill of segment i: a 12-colour qualitative palette (ColorBrewer Set3), then the same hues a
// step darker per round of 12, so that 12+ segments stay apart and neighbours always differ.
QColor segmentColour(int i);
// The fill a variant name gets everywhere (the same for a plan and for a partial program).
QColor variantColour(const std::string& variant);

// The colouring of a plan mode (ShardingForm, Variant, Segment, DeviceCost; another mode gives
// the graph-derived colouring). `costRank` is the DeviceCost device (-1: the bottleneck).
// `g` is the imported graph (the one drawn); nodes past the plan's node count stay neutral.
NodeColouring planColouring(const PlanOverlay& overlay, const ir::Graph& g, const ScopeTree& tree,
                            ColourBy mode, int costRank = -1);
// Variant colouring from variant names per imported node ("" = not decided yet: neutral). Used
// for a plan (overlay.variantByNode()) and for a partial program of the live search alike.
NodeColouring variantColouring(const ir::Graph& g, const ScopeTree& tree,
                               const std::vector<std::string>& variantByNode,
                               QString title = QString());

// ---- drawn edges --------------------------------------------------------------------------------

// What the graph view draws on one edge of a Layout over a plan: the edge bundles the reads of the
// values it carries by the consumers its target box draws (the node, or a collapsed scope).
struct EdgeAnnotation {
  // The commonest kinds of conversion before those reads, communication first: "AG", "AG×2 RS",
  // "A2A SL…" (two kinds at most); "" when nothing a reader sees changes.
  QString label;
  // One read in full (the value, how it is produced, each conversion with its time, how it is
  // read); a bundle of reads in aggregate ("5 reads of 3 values", the conversions by kind).
  QString toolTip;
  bool converted = false;   // a read goes through a conversion: drawn dashed
  bool collective = false;  // a conversion communicates: the label is drawn as a dark pill
  QColor stroke;            // the form most of its reads' values are produced in; invalid: none
};

// Per edge of `layout` (laid out from `g`, `tree` and `state`), its annotation; empty when the
// overlay is empty or is not for `g` (another node count). Pure: the graph view draws the result.
std::vector<EdgeAnnotation> annotateEdges(const PlanOverlay& overlay, const ir::Graph& g,
                                          const ScopeTree& tree, const CollapseState& state,
                                          const Layout& layout);

// The edge key of the legend: (formCategoryLabels entry, formStrokeColour) for each form category
// the values on `layout`'s edges are produced in, in category order; empty when none is known.
std::vector<std::pair<QString, QColor>> edgeFormLegend(const PlanOverlay& overlay,
                                                       const Layout& layout);

// ---- pins ---------------------------------------------------------------------------------------

// The rule variant names of every node of g (synth::Theory over g), per node. Blocking; the graph
// view runs it once per graph off the GUI thread.
std::vector<std::vector<std::string>> ruleVariantNames(const ir::Graph& g);

// A pin pattern for "Compute under variant": the glob (matched against a node's scope or op, as
// synth::Pin is) that selects the nodes the user clicked among the nodes that have `variant`.
struct PinChoice {
  std::string pattern;
  int selected = 0;  // nodes with `variant` the pattern matches
  int wanted = 0;    // of those, the ones the user clicked (the node, or the scope's subtree)
  bool exact() const { return selected == wanted; }
};
// For a node: its scope (the op name at the top level), or its op name when that is exact and the
// scope is not.
PinChoice pinForNode(const ir::Graph& g, const std::vector<std::vector<std::string>>& variants,
                     ir::NodeId node, const std::string& variant);
// For a scope: "path*" (the scope and its subtree), or "path.*" / "path" where "path*" would also
// take sibling scopes with a longer name ("layers.1*" takes "layers.10").
PinChoice pinForScope(const ir::Graph& g, const ScopeTree& tree,
                      const std::vector<std::vector<std::string>>& variants, ScopeId scope,
                      const std::string& variant);

}  // namespace hap::studio
