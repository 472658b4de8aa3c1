// The main window's commands' enabled state as one function of what is open (action_state.h):
// Plan needs a model and a cluster and nothing else; the plan's exports, launch scripts and
// Compare need a plan; a run going holds Start and frees Stop.
#include <QtTest>

#include "app/studio/core/documents/action_state.h"

using namespace hap::studio;

class TstActionState : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void nothingOpen() {
    const ActionState a = actionState({});
    QVERIFY(!a.plan && !a.cancelPlanning && !a.exportPlan && !a.exportLaunch && !a.comparePlans);
    QVERIFY(!a.startRun && !a.stopRun && !a.tune && !a.reloadModel && !a.exportGraph && !a.planColouring);
    QVERIFY(a.calibrate);  // it reads the profile store alone
  }

  void planNeedsModelAndCluster() {
    DocumentState s;
    s.model = true;
    QVERIFY(!actionState(s).plan);
    QVERIFY(actionState(s).reloadModel && actionState(s).exportGraph);
    QVERIFY(whyDisabled(s, Needs::ModelAndCluster).contains("Open Cluster"));
    s.cluster = true;
    QVERIFY(actionState(s).plan && actionState(s).tune);
    QVERIFY(whyDisabled(s, Needs::ModelAndCluster).isEmpty());
    // ... and not a plan: a model and a cluster opened from the command line are enough.
    QVERIFY(!actionState(s).exportLaunch && !actionState(s).comparePlans && !actionState(s).startRun);
    QVERIFY(whyDisabled(s, Needs::Plan).contains("Plan ▸ Plan"));
    s.model = false;
    QVERIFY(!actionState(s).plan);
    QVERIFY(whyDisabled(s, Needs::ModelAndCluster).contains("Open Model"));
  }

  void planShown() {
    DocumentState s;
    s.model = s.cluster = s.plan = true;
    const ActionState a = actionState(s);
    QVERIFY(a.exportPlan && a.exportLaunch && a.comparePlans && a.planColouring && a.startRun);
    QVERIFY(!a.stopRun && !a.cancelPlanning);
    QVERIFY(whyDisabled(s, Needs::Plan).isEmpty());
  }

  void planningAndRunning() {
    DocumentState s;
    s.model = s.cluster = s.plan = s.planning = true;
    QVERIFY(actionState(s).cancelPlanning);
    s.running = true;
    QVERIFY(!actionState(s).startRun);
    QVERIFY(actionState(s).stopRun);
  }
};

QTEST_GUILESS_MAIN(TstActionState)
#include "tst_action_state.moc"
