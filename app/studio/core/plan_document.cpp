#include "app/studio/core/plan_document.h"

#include <utility>

#include "engine/ir/segments.h"
#include "engine/plan/explain.h"

namespace hap::studio {

ir::NodeId PlanDocument::stepNode(int step) const {
  const plan::PlanStep& s = plan->steps.at(static_cast<size_t>(step));
  if (s.node < 0 || static_cast<size_t>(s.node) >= importedNode.size()) return ir::kNone;
  return importedNode[static_cast<size_t>(s.node)];
}

std::vector<int> PlanDocument::stepsOfNode(ir::NodeId node) const {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(plan->steps.size()); ++i)
    if (stepNode(i) == node && node != ir::kNone) out.push_back(i);
  return out;
}

std::shared_ptr<const PlanDocument> makePlanDocument(plan::Plan p, std::shared_ptr<const ir::Graph> imported,
                                                     std::string path, std::string label,
                                                     std::optional<plan::PlanRequest> request) {
  auto doc = std::make_shared<PlanDocument>();
  doc->path = std::move(path);
  doc->label = std::move(label);
  doc->request = std::move(request);
  auto planned = std::make_shared<const ir::Graph>(plan::planGraph(*imported, p));
  // Reshards are inserted before their readers and every other node keeps its order.
  doc->importedNode.assign(planned->nodes.size(), ir::kNone);
  doc->plannedNode.assign(imported->nodes.size(), ir::kNone);
  ir::NodeId next = 0;
  for (const ir::Node& n : planned->nodes) {
    if (n.op == ir::kReshardOp) continue;
    doc->importedNode[static_cast<size_t>(n.id)] = next;
    doc->plannedNode[static_cast<size_t>(next)] = n.id;
    ++next;
  }
  doc->stepLabels = plan::stepLabels(p, *imported);
  doc->timeline = plan::simulate(p, doc->stepLabels);
  doc->summary = plan::formatSummary(p);
  doc->plan = std::make_shared<const plan::Plan>(std::move(p));
  doc->imported = std::move(imported);
  doc->planned = std::move(planned);
  return doc;
}

}  // namespace hap::studio
