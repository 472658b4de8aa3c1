// A plan as the app holds it: the plan, the graphs its ids refer to, and what every view derives
// from it once (step labels, the simulated timeline, the planned-to-imported node map). Plain data,
// built off the GUI thread and shared read-only (shared_ptr<const PlanDocument>).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/plan/plan.h"
#include "engine/plan/plan_request.h"
#include "engine/plan/simulator.h"

namespace hap::studio {

struct PlanDocument {
  std::string path;   // the file it was opened from or last exported to ("" for an unsaved plan)
  std::string label;  // how lists name it: "Plan 2 · lp · 4.12 ms", or the file name
  std::shared_ptr<const plan::Plan> plan;
  // The imported graph the plan was made for (plan::toJson, formatExplain and stepLabels take it):
  // the model as opened, or for a Megatron plan the model at one machine's batch (same node ids).
  std::shared_ptr<const ir::Graph> imported;
  // plan::planGraph(*imported, *plan): the graph Plan::steps' node and value ids refer to (the
  // imported graph with a hap::reshard node wherever a value enters another segment).
  std::shared_ptr<const ir::Graph> planned;
  // Per planned node: the imported node it is, or ir::kNone for a hap::reshard. Value ids are
  // the same in both graphs (reshard outputs are appended after the imported values).
  std::vector<ir::NodeId> importedNode;
  // Per imported node: its planned node (every imported node has one).
  std::vector<ir::NodeId> plannedNode;
  std::vector<std::string> stepLabels;  // plan::stepLabels(plan, imported)
  plan::Timeline timeline;              // plan::simulate(plan, stepLabels)
  std::string summary;                  // plan::formatSummary
  // How the app made it (the `hap plan` options), with the cluster's name; none for a plan file.
  std::optional<plan::PlanRequest> request;

  const plan::Plan& p() const { return *plan; }
  // The imported node a step computes or prepares (kNone for a reshard's steps).
  ir::NodeId stepNode(int step) const;
  // The steps of an imported node: its computation and the conversions that prepare its inputs
  // (empty for kNone or a node out of range).
  const std::vector<int>& stepsOfNode(ir::NodeId importedNode) const;
  std::vector<std::vector<int>> stepsByNode;  // per imported node, what stepsOfNode returns
};

// Builds the document (blocking: simulates the plan). Throws hap::Error (plan::PlanError) when
// the plan does not fit `imported` (another node count, a step without times).
std::shared_ptr<const PlanDocument> makePlanDocument(plan::Plan plan, std::shared_ptr<const ir::Graph> imported,
                                                     std::string path, std::string label,
                                                     std::optional<plan::PlanRequest> request = std::nullopt);

}  // namespace hap::studio
