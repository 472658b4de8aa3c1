// MainWindow, continued: Run ▸ Tune… (issue 30, item 3). The dialog runs `hap tune`'s closed loop
// (TuneJob) on what the window has open: the model (with its input shapes), the cluster panel's
// cluster, the Profiles dock's store and the Run dock's CPU shares and slowdowns. When the loop
// succeeds, the plan it chose is opened here with its model (openPlan), and "Open Tuned Plan"
// opens it again.
#include <QAction>
#include <QFileInfo>
#include <QLabel>

#include "app/studio/core/jobs/tune_job.h"
#include "app/studio/core/models/profile_store_models.h"
#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/launch_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/profiles_view.h"
#include "app/studio/widgets/tune_dialog.h"

namespace hap::studio {

QAction* MainWindow::createTuneAction() {
  if (QAction* a = action(QStringLiteral("run.tune"))) return a;
  QAction* a = addAction(QStringLiteral("run.tune"), tr("T&une…"));
  a->setToolTip(
      tr("Close the loop on the open model and cluster: plan, run the plan and the baselines that "
         "matter, "
         "calibrate on the runs, re-plan, until the measured best stops improving (hap tune); then "
         "open "
         "the plan measured fastest"));
  connect(a, &QAction::triggered, this, &MainWindow::openTuneDialog);
  return a;  // enabled with a model and a cluster open (updateActions)
}

TuneSetup MainWindow::tuneSetup() const {
  TuneSetup s;
  if (m_model) {
    s.modelPath = QString::fromStdString(m_model->path);
    s.inputOverrides = m_model->inputOverrides;
  }
  if (m_cluster->hasCluster()) {
    s.cluster = m_cluster->cluster();
    s.clusterPath = m_cluster->path();
    s.clusterModified = m_cluster->isModified();
  }
  // The store the Profiles dock shows (the default store unless another was opened there), as
  // Calibrate takes it.
  auto* profiles = findChild<ProfilesView*>();
  s.storePath = profiles && !profiles->storePath().isEmpty() ? profiles->storePath()
                                                             : StoreReader::defaultPath();
  if (m_launch) {
    const LaunchSettings run = m_launch->settings();
    s.cpuShares = run.cpuShares;
    s.slowdowns = run.slowdowns;
  }
  return s;
}

void MainWindow::openTuneDialog() {
  if (!m_tuneDialog) {
    m_tuneDialog = new TuneDialog(this);
    const auto open = [this](const QString& plan, const QString& model) {
      m_statusModel->setText(tr("Opening the tuned plan %1…").arg(QFileInfo(plan).fileName()));
      openPlan(plan, model);
    };
    connect(m_tuneDialog, &TuneDialog::tunedPlanReady, this, open);
    connect(m_tuneDialog, &TuneDialog::openPlanRequested, this, open);
    // What the window has open, again at Start and whenever the model or the cluster changes (a
    // running loop keeps what it started with: setSetup refuses then).
    m_tuneDialog->setSetupProvider([this] { return tuneSetup(); });
    const auto refresh = [this] { m_tuneDialog->setSetup(tuneSetup()); };
    connect(this, &MainWindow::modelOpened, m_tuneDialog, refresh);
    connect(this, &MainWindow::planOpened, m_tuneDialog, refresh);
    connect(m_cluster, &ClusterPanel::clusterChanged, m_tuneDialog, refresh);
    connect(m_cluster, &ClusterPanel::pathChanged, m_tuneDialog, refresh);
  }
  m_tuneDialog->setSetup(tuneSetup());
  m_tuneDialog->show();
  m_tuneDialog->raise();
  m_tuneDialog->activateWindow();
}

}  // namespace hap::studio
