// MainWindow, continued: the Run dock (issue 20, items 1, 2 and 5). The dock runs the shown plan
// on this machine and follows it live; the window gives it the plan and the model file, the store
// to record into (the Profiles dock's), Run ▸ Start/Stop, and the question on closing while a run
// is going (every rank is reaped before the window closes). A run started here that ends with
// recorded steps goes to the Measured dock too (predicted against measured), the Run dock staying
// on top; the Profiles dock's Open in Run Panel shows a recorded run in the Run dock.
#include <QAction>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>

#include "app/studio/widgets/launch_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/profiles_view.h"

namespace hap::studio {

void MainWindow::createLaunchDock() {
  m_launch = new LaunchView(this);
  m_runDock = new QDockWidget(tr("Run"), this);
  m_runDock->setObjectName(QStringLiteral("dock.run"));
  m_runDock->setWidget(m_launch);
  addDockWidget(Qt::BottomDockWidgetArea, m_runDock);
  if (m_searchDock) tabifyDockWidget(m_searchDock, m_runDock);
  if (m_searchDock) m_searchDock->raise();
  m_launch->setStorePathProvider([this] {
    const auto* profiles = findChild<ProfilesView*>();
    return profiles ? profiles->storePath() : QString();
  });
  connect(m_launch, &LaunchView::busyChanged, this, [this](bool) { updateActions(); });
  connect(m_launch, &LaunchView::runStarted, this, [this](qint64 run) {
    m_statusModel->setText(run != 0 ? tr("Training run %1 started").arg(run) : tr("Training run started"));
  });
  connect(m_launch, &LaunchView::runFinished, this, [this](const LaunchOutcome& o) {
    m_statusModel->setText(o.message);
    // The Profiles dock lists the run: read it again when it is on screen.
    auto* profiles = findChild<ProfilesView*>();
    if (profiles && profiles->isVisible() && !profiles->visibleRegion().isEmpty()) profiles->reload();
    // Its measured figures against the prediction, without taking the Run dock off screen.
    const RunMonitor* monitor = m_launch->monitor();
    if (o.run != 0 && monitor->runId() == o.run && !monitor->steps().empty() && m_measured) {
      const bool runShown = m_runDock->isVisible() && !m_runDock->visibleRegion().isEmpty();
      showMeasuredRun(monitor->storePath(), o.run);
      if (runShown) m_runDock->raise();
    }
  });
  connect(m_launch, &LaunchView::exportFinished, this, [this](bool ok, const QString& path) {
    m_statusModel->setText(ok ? tr("Model exported to %1").arg(path) : m_launch->outcomeMessage());
    auto* profiles = findChild<ProfilesView*>();
    if (profiles && profiles->isVisible() && !profiles->visibleRegion().isEmpty()) profiles->reload();
  });
  if (auto* profiles = findChild<ProfilesView*>()) {
    connect(profiles, &ProfilesView::openInRunPanelRequested, this, [this](const QString& storePath, qint64 run) {
      m_runDock->show();
      m_runDock->raise();
      if (!m_launch->showRecordedRun(storePath, run)) m_statusModel->setText(tr("Run %1 not opened in the Run dock").arg(run));
    });
  }
}

void MainWindow::createLaunchActions() {
  // Visual Studio's Start Without Debugging and Stop (F5 is Reload Model here, Ctrl+R is Plan).
  QAction* a = addAction(QStringLiteral("run.launch"), tr("&Start Training Run"), QKeySequence(tr("Ctrl+F5")));
  a->setToolTip(tr("Run the shown plan on this machine with the Run dock's options"));
  connect(a, &QAction::triggered, this, [this] {
    m_runDock->show();
    m_runDock->raise();
    m_launch->start();
  });
  a = addAction(QStringLiteral("run.stop"), tr("S&top Training Run"), QKeySequence(tr("Shift+F5")));
  a->setToolTip(tr("Stop every rank of the run (SIGTERM, then SIGKILL)"));
  connect(a, &QAction::triggered, m_launch, &LaunchView::stop);
  a = addAction(QStringLiteral("view.run"), tr("Show Run &Panel"));
  a->setToolTip(tr("The Run dock: launch the plan, watch its loss, step times and logs"));
  connect(a, &QAction::triggered, this, [this] {
    m_runDock->show();
    m_runDock->raise();
  });
  updateLaunchPlan();
}

void MainWindow::updateLaunchPlan() {
  if (!m_launch) return;
  if (m_launch->plan() != m_plan) {
    // The workers load the open model (a plan opened from a file opens its model too).
    QString model;
    if (m_plan) model = QString::fromStdString(m_model ? m_model->path : m_plan->p().modelPath);
    m_launch->setPlan(m_plan, model);
  }
}

bool MainWindow::confirmStopRun() {
  if (!m_launch || !m_launch->busy()) return true;
  const auto answer = QMessageBox::question(this, tr("Training Run Going"),
                                            tr("A training run is going: stop it and quit?"),
                                            QMessageBox::Yes | QMessageBox::No, QMessageBox::No);
  if (answer != QMessageBox::Yes) return false;
  m_statusModel->setText(tr("Stopping the training run…"));
  m_launch->stopAndWait();  // every rank reaped
  return true;
}

}  // namespace hap::studio
