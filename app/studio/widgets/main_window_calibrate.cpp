// MainWindow, continued: Run ▸ Calibrate… (issue 20, item 4). The dialog fits the cost model to the
// runs of the Profiles dock's store (db::calibrateStore, as `hap calibrate`); "Re-plan with
// Calibrated Model" comes back here: the cluster gets `profile: NAME@N`, the open model is planned
// again (startPlanning, with the Plan panel's options of the plan shown), and when the plan is made
// the Compare dock shows the plan before against it, with a one-line summary of what changed.
#include <QAction>
#include <QDockWidget>
#include <QLabel>

#include "app/studio/core/models/calibration_models.h"
#include "app/studio/core/models/cluster_model.h"
#include "app/studio/core/models/plan_history_model.h"
#include "app/studio/core/jobs/plan_job.h"
#include "app/studio/core/display/units.h"
#include "app/studio/widgets/calibrate_dialog.h"
#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/compare_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/profiles_view.h"

namespace hap::studio {

QAction* MainWindow::createCalibrateAction() {
  if (QAction* a = action(QStringLiteral("run.calibrate"))) return a;
  QAction* a = addAction(QStringLiteral("run.calibrate"), tr("&Calibrate…"));
  a->setToolTip(tr("Fit the cost model to the runs recorded in the profile store, see the accuracy before and "
                   "after, and re-plan with the calibrated profile"));
  connect(a, &QAction::triggered, this, &MainWindow::openCalibrateDialog);
  // The re-plan's plan is the next one made, unless another planning starts first.
  connect(m_planJob, &PlanJob::started, this, [this] { m_calibratedReplan = false; });
  connect(this, &MainWindow::planFinished, this, [this] {
    if (m_calibratedReplan) onCalibratedReplanEnded(true, {});
  });
  connect(this, &MainWindow::planFailed, this, [this](const QString& message) {
    if (m_calibratedReplan) onCalibratedReplanEnded(false, message);
  });
  connect(this, &MainWindow::planCancelled, this, [this] {
    if (m_calibratedReplan) onCalibratedReplanEnded(false, tr("planning was cancelled"));
  });
  // Profile This Machine offers the open cluster's device types, and its result can be used for it.
  if (auto* profiles = findChild<ProfilesView*>()) {
    const auto types = [this, profiles] {
      QStringList names;
      if (m_cluster->hasCluster())
        for (const cost::DeviceType& t : m_cluster->cluster().types) names << QString::fromStdString(t.name);
      profiles->setClusterDeviceTypes(names);
    };
    connect(m_cluster, &ClusterPanel::clusterChanged, this, types);
    types();
    connect(profiles, &ProfilesView::useProfileRequested, this, [this](const QString& profile, const QString& store) {
      QString why;
      if (setClusterProfile(profile, store, &why))
        m_statusModel->setText(tr("The cluster now names profile %1: plan again to price with it").arg(profile));
      else
        showError(why);
    });
  }
  return a;
}

void MainWindow::openCalibrateDialog() {
  if (!m_calibrateDialog) {
    m_calibrateDialog = new CalibrateDialog(this);
    connect(m_calibrateDialog, &CalibrateDialog::replanRequested, this,
            [this](const QString& profile, const QString& store) { replanWithProfile(profile, store); });
  }
  // The store the Profiles dock shows (the default store unless another was opened there), read again
  // each time the dialog is opened: runs may have been recorded since.
  auto* profiles = findChild<ProfilesView*>();
  const QString store =
      profiles && !profiles->storePath().isEmpty() ? profiles->storePath() : StoreReader::defaultPath();
  m_calibrateDialog->setStorePath(store);
  m_calibrateDialog->show();
  m_calibrateDialog->raise();
  m_calibrateDialog->activateWindow();
}

bool MainWindow::setClusterProfile(const QString& profile, const QString& storePath, QString* why) {
  if (!m_cluster->hasCluster()) {
    *why = tr("Open the cluster to plan on first (File ▸ Open Cluster…): it gets profile: %1.").arg(profile);
    return false;
  }
  ClusterModel* cluster = m_cluster->model();
  const QModelIndex cell =
      cluster->propertyIndex(cluster->groupIndex(ClusterModel::Group::Cluster), ClusterModel::Field::Profile);
  if (!cluster->setData(cell, profile)) {
    *why = cluster->lastError();
    return false;
  }
  m_planJob->setStorePath(storePath);  // the store the profile was saved in prices the plans
  return true;
}

bool MainWindow::replanWithProfile(const QString& profile, const QString& storePath) {
  const auto refuse = [this](const QString& why) {
    if (m_calibrateDialog) m_calibrateDialog->showChange(why, true);
    Q_EMIT calibratedReplanFinished(false, why);
    return false;
  };
  if (!m_model) return refuse(tr("Open the model to re-plan first (File ▸ Open Model…)."));
  QString why;
  if (!setClusterProfile(profile, storePath, &why)) return refuse(why);
  std::shared_ptr<const PlanDocument> before = m_plan;
  if (!startPlanning()) return refuse(m_lastError);
  m_beforeCalibration = std::move(before);
  m_calibratedProfile = profile;
  m_calibratedReplan = true;
  m_statusModel->setText(tr("Re-planning under %1…").arg(profile));
  return true;
}

void MainWindow::onCalibratedReplanEnded(bool ok, const QString& why) {
  m_calibratedReplan = false;
  if (!ok || !m_plan) {
    m_calibrationChange.clear();
    const QString message = tr("Re-planning under %1 failed: %2").arg(m_calibratedProfile, why);
    if (m_calibrateDialog) m_calibrateDialog->showChange(message, true);
    Q_EMIT calibratedReplanFinished(false, message);
    return;
  }
  // The new plan says which profile priced it in the session's lists.
  auto labelled = std::make_shared<PlanDocument>(*m_plan);
  labelled->label += " · " + m_calibratedProfile.toStdString();
  std::shared_ptr<const PlanDocument> after = std::move(labelled);
  if (const int row = m_history->indexOf(m_plan); row >= 0) m_history->replace(row, after);
  m_plan = after;
  updateTitle();

  const int rowA = m_beforeCalibration ? m_history->indexOf(m_beforeCalibration) : -1;
  const int rowB = m_history->indexOf(after);
  QString summary;
  if (rowA >= 0 && rowA != rowB) {
    m_compare->setPlans(rowA, rowB);
    summary = calibratedPlanChange(*m_beforeCalibration, *after, m_compare->comparison());
  } else {
    m_compare->setPlans(rowB, rowB);
    summary = tr("Planned under %1: %2 per iteration predicted (no plan of this model before it to compare with).")
                  .arg(m_calibratedProfile, formatMilliseconds(after->p().estimate.iterationSeconds));
  }
  m_beforeCalibration.reset();
  m_calibrationChange = summary;
  m_compare->setCaption(summary);
  if (auto* d = findChild<QDockWidget*>(QStringLiteral("dock.compare"))) {
    d->show();
    d->raise();
  }
  m_statusModel->setText(summary);
  if (m_calibrateDialog) m_calibrateDialog->showChange(summary);
  Q_EMIT calibratedReplanFinished(true, summary);
}

}  // namespace hap::studio
