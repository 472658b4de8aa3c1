#include "app/studio/core/documents/action_state.h"

#include <QCoreApplication>

namespace hap::studio {

ActionState actionState(const DocumentState& s) {
  ActionState a;
  a.reloadModel = s.model;
  a.exportGraph = s.model;
  a.plan = s.model && s.cluster;
  a.cancelPlanning = s.planning;
  a.exportPlan = s.plan;
  a.exportLaunch = s.plan;
  a.comparePlans = s.plan;
  a.planColouring = s.plan;
  a.startRun = s.plan && !s.running;
  a.stopRun = s.running;
  a.tune = s.model && s.cluster;
  a.calibrate = true;
  return a;
}

QString whyDisabled(const DocumentState& s, Needs needs) {
  const auto tr = [](const char* text) { return QCoreApplication::translate("hap::studio::ActionState", text); };
  const bool needsModel = needs != Needs::Plan;
  if (needsModel && !s.model) return tr("Needs a model: open one first (File ▸ Open Model…, Ctrl+O)");
  if (needs == Needs::ModelAndCluster && !s.cluster)
    return tr("Needs a cluster: open one (File ▸ Open Cluster…, Ctrl+Shift+O) or make one from a template");
  if (needs == Needs::Plan && !s.plan) return tr("Needs a plan: plan first (Plan ▸ Plan, Ctrl+R) or open one");
  return {};
}

}  // namespace hap::studio
