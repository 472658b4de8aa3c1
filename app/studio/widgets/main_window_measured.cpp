// MainWindow, continued: the Measured dock (issue 20, item 3 and item 5's "open a finished run's
// metrics later"). The dock compares a run of the profile store with its plan's prediction; the
// window keeps its store in step with the Profiles dock's, opens runs from the Profiles dock's
// Runs tab (Show in Measured, double-click), gives it the shown plan, draws the run's measured
// trace in the stages view below the prediction (replacing an earlier one), and opens the run's
// plan when asked.
#include <QAction>
#include <QDockWidget>

#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/measured_view.h"
#include "app/studio/widgets/profiles_view.h"
#include "app/studio/widgets/stages_view.h"

namespace hap::studio {

void MainWindow::createMeasuredView() {
  m_measured = new MeasuredView(this);
  m_measuredDock = new QDockWidget(tr("Measured"), this);
  m_measuredDock->setObjectName(QStringLiteral("dock.measured"));
  m_measuredDock->setWidget(m_measured);
  addDockWidget(Qt::BottomDockWidgetArea, m_measuredDock);
  if (m_searchDock) tabifyDockWidget(m_searchDock, m_measuredDock);
  if (m_searchDock) m_searchDock->raise();
  connect(m_measuredDock, &QDockWidget::visibilityChanged, m_measured, [this](bool visible) {
    if (visible) m_measured->ensureChooser();
  });

  // The Profiles dock's store is the one runs are chosen from.
  if (auto* profiles = findChild<ProfilesView*>()) {
    m_measured->setStorePath(profiles->storePath());
    // Every read of it (another store, or new runs recorded) lists the runs again.
    connect(profiles, &ProfilesView::storeLoaded, this, [this, profiles] { m_measured->setStorePath(profiles->storePath()); });
    connect(profiles, &ProfilesView::showMeasuredRequested, this, &MainWindow::showMeasuredRun);
  }

  connect(m_measured, &MeasuredView::traceReady, this, [this](const QString& name, const plan::Timeline& timeline) {
    if (!m_plan) return;
    // Fill the stages view with the shown plan now: a fill when its tab is first shown would drop
    // the trace.
    m_filledGeneration[m_stages] = m_planGeneration;
    if (m_stages->plan() != m_plan.get()) m_stages->setPlan(m_plan);
    m_stages->removeAddedTraces();
    m_stages->addTrace(name, timeline);
  });
  connect(m_measured, &MeasuredView::traceCleared, m_stages, &StagesView::removeAddedTraces);
  connect(m_measured, &MeasuredView::openPlanRequested, this,
          [this](const QString& planPath, const QString& modelPath) { openPlan(planPath, modelPath); });

  QAction* a = addAction(QStringLiteral("run.showMeasured"), tr("Compare with &Run…"));
  a->setToolTip(tr("Compare a recorded run with its plan's prediction: the Measured dock, and the run's measured "
                   "trace in the Stages view"));
  connect(a, &QAction::triggered, this, [this] {
    m_measuredDock->show();
    m_measuredDock->raise();
    m_measured->chooseRun();
  });
}

void MainWindow::updateMeasuredPlan() {
  if (m_measured) m_measured->setPlan(m_plan);
}

void MainWindow::showMeasuredRun(const QString& storePath, qint64 runId) {
  m_measuredDock->show();
  m_measuredDock->raise();
  m_measured->showRun(storePath, runId);
}

}  // namespace hap::studio
