#include "app/studio/core/documents/plan_document.h"

#include <utility>

#include "engine/ir/segments.h"
#include "engine/plan/explain.h"

namespace hap::studio {

ir::NodeId PlanDocument::stepNode(int step) const {
  const plan::PlanStep& s = plan->steps.at(static_cast<size_t>(step));
  if (s.node < 0 || static_cast<size_t>(s.node) >= importedNode.size()) return ir::kNone;
  return importedNode[static_cast<size_t>(s.node)];
}

const std::vector<int>& PlanDocument::stepsOfNode(ir::NodeId node) const {
  static const std::vector<int> none;
  return node >= 0 && static_cast<size_t>(node) < stepsByNode.size() ? stepsByNode[static_cast<size_t>(node)] : none;
}

std::shared_ptr<const PlanDocument> makePlanDocument(plan::Plan p, std::shared_ptr<const ir::Graph> imported,
                                                     std::string path, std::string label,
                                                     std::optional<plan::PlanRequest> request) {
  auto doc = std::make_shared<PlanDocument>();
  doc->path = std::move(path);
  doc->label = std::move(label);
  doc->request = std::move(request);
  auto planned = std::make_shared<const ir::Graph>(plan::planGraph(*imported, p));
  doc->importedNode = ir::originalNodes(*planned);
  doc->plannedNode.assign(imported->nodes.size(), ir::kNone);
  for (size_t n = 0; n < doc->importedNode.size(); ++n)
    if (doc->importedNode[n] != ir::kNone)
      doc->plannedNode[static_cast<size_t>(doc->importedNode[n])] = static_cast<ir::NodeId>(n);
  doc->stepsByNode.resize(imported->nodes.size());
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const ir::NodeId planned = p.steps[i].node;
    if (planned < 0 || static_cast<size_t>(planned) >= doc->importedNode.size()) continue;
    const ir::NodeId n = doc->importedNode[static_cast<size_t>(planned)];
    if (n != ir::kNone) doc->stepsByNode[static_cast<size_t>(n)].push_back(static_cast<int>(i));
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
