// MainWindow, continued: planning from the app, the plan views (search, stages, ratios, baselines,
// explain, compare), and exporting through the CLI's code. The views are docks along the bottom,
// tabbed as Qt Creator's output panes are; the Plan dock (options, the session's plans, the summary)
// sits beside Properties.
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QToolButton>

#include "app/studio/core/documents/action_state.h"
#include "app/studio/core/jobs/open_job.h"
#include "app/studio/core/graph/colouring.h"
#include "app/studio/core/documents/plan_export.h"
#include "app/studio/core/models/plan_history_model.h"
#include "app/studio/core/jobs/plan_job.h"
#include "app/studio/core/models/search_progress_model.h"
#include "app/studio/widgets/baselines_view.h"
#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/compare_view.h"
#include "app/studio/widgets/error_bar.h"
#include "app/studio/widgets/explain_view.h"
#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/launch_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/plan_panel.h"
#include "app/studio/widgets/profiles_view.h"
#include "app/studio/widgets/properties_panel.h"
#include "app/studio/widgets/ratios_view.h"
#include "app/studio/widgets/search_view.h"
#include "app/studio/widgets/stages_view.h"

namespace hap::studio {

void MainWindow::createPlanViews() {
  m_searchView = new SearchView(m_searchModel, this);
  m_stages = new StagesView(this);
  m_ratios = new RatiosView(this);
  m_baselines = new BaselinesView(this);
  m_explain = new ExplainView(this);
  m_compare = new CompareView(this);
  m_compare->setHistory(m_history);

  auto dock = [this](const QString& id, const QString& title, QWidget* w) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(id);
    d->setWidget(w);
    addDockWidget(Qt::BottomDockWidgetArea, d);
    return d;
  };
  m_searchDock = dock(QStringLiteral("dock.search"), tr("Search"), m_searchView);
  m_stagesDock = dock(QStringLiteral("dock.stages"), tr("Stages"), m_stages);
  QDockWidget* ratios = dock(QStringLiteral("dock.ratios"), tr("Ratios · Memory"), m_ratios);
  QDockWidget* baselines = dock(QStringLiteral("dock.baselines"), tr("Baselines"), m_baselines);
  QDockWidget* explain = dock(QStringLiteral("dock.explain"), tr("Explain"), m_explain);
  QDockWidget* compare = dock(QStringLiteral("dock.compare"), tr("Compare"), m_compare);
  // The profile store (issue 20, item 4): read when its dock is first shown.
  QDockWidget* profiles = dock(QStringLiteral("dock.profiles"), tr("Profiles"), new ProfilesView(this));
  for (QDockWidget* d : {m_stagesDock, ratios, baselines, explain, compare, profiles}) tabifyDockWidget(m_searchDock, d);
  createMeasuredView();  // the Measured dock, tabbed with these (main_window_measured.cpp)
  m_planDocks = {m_stagesDock, ratios, baselines, explain};
  for (QDockWidget* d : m_planDocks)
    connect(d, &QDockWidget::visibilityChanged, this, [this, d](bool visible) {
      if (visible) refreshPlanView(d);
    });
  m_searchDock->raise();
  resizeDocks({m_searchDock}, {320}, Qt::Vertical);

  // Planning.
  connect(m_planPanel, &PlanPanel::planRequested, this, [this] { startPlanning(); });
  connect(m_planPanel, &PlanPanel::cancelRequested, this, &MainWindow::cancelPlanning);
  connect(m_planJob, &PlanJob::searchEvents, m_searchModel, &SearchProgressModel::add);
  connect(m_planJob, &PlanJob::finished, this, &MainWindow::onPlanFinished);
  connect(m_planJob, &PlanJob::failed, this, [this](const QString& message) {
    m_searchView->setOutcome(nullptr, tr("Planning failed: %1").arg(message));
    showError(message);
    m_statusModel->setText(tr("Planning failed"));
    Q_EMIT planFailed(message);
  });
  connect(m_planJob, &PlanJob::busyChanged, this, [this](bool busy) {
    m_planPanel->setBusy(busy);
    m_progress->setVisible(busy || m_openJob->busy());
    m_cancel->setVisible(busy || m_openJob->busy());
    if (busy) m_progress->setRange(0, 0);
    updateActions();
  });

  // Views to the graph and back.
  connect(m_searchView, &SearchView::partialProgramSelected, m_graphView, &GraphView::setPartialVariants);
  connect(m_stages, &StagesView::nodesSelected, this, [this](std::vector<ir::NodeId> nodes) {
    m_graphView->highlightNodes(nodes);
    if (!nodes.empty()) {
      m_graphView->reveal(nodes.front());
      m_properties->showSelection(Selection::node(nodes.front()));
    }
  });
  connect(m_explain, &ExplainView::nodeActivated, this, [this](ir::NodeId node) {
    if (node < 0) return;
    m_graphView->reveal(node);
    m_graphView->select(Selection::node(node));
    m_properties->showSelection(Selection::node(node));
    m_stages->selectNodes({node});
  });
  connect(m_compare, &CompareView::highlightNodes, m_graphView, &GraphView::highlightNodes);
  connect(m_ratios, &RatiosView::segmentActivated, this, [this](int segment) {
    // A segment's nodes, outlined in the graph.
    if (!m_plan) return;
    std::vector<ir::NodeId> nodes;
    const std::vector<int>& of = m_plan->p().importedNodeSegment;
    for (size_t n = 0; n < of.size(); ++n)
      if (of[n] == segment) nodes.push_back(static_cast<ir::NodeId>(n));
    m_graphView->highlightNodes(nodes);
  });
  connect(m_compare, &CompareView::nodeActivated, this, [this](ir::NodeId node) {
    if (node < 0) return;
    m_graphView->reveal(node);
    m_graphView->select(Selection::node(node));
    setSelection(Selection::node(node));
  });
  connect(m_baselines, &BaselinesView::openBaselineRequested, this, [this](const QString& name) {
    // A baseline as a plan: the same options with --baseline NAME.
    plan::PlanRequest r = m_planPanel->request();
    r.baseline = name.toStdString();
    r.ratios = "lp";
    r.pins.clear();  // pins constrain HAP's program; Megatron refuses them
    r.segments.clear();
    m_planPanel->setRequest(r);
    startPlanning();
  });
  connect(m_graphView, &GraphView::pinRequested, this, [this](const QString& pattern, const QString& variant) {
    m_planPanel->addPin(pattern, variant);
    m_statusModel->setText(tr("Pinned %1 to %2; re-planning").arg(pattern, variant));
    startPlanning();
  });
}

void MainWindow::createPlanActions() {
  QAction* a = addAction(QStringLiteral("plan.plan"), tr("&Plan"), QKeySequence(tr("Ctrl+R")));
  a->setToolTip(tr("Synthesise the program and its ratios with the Plan panel's options"));
  connect(a, &QAction::triggered, this, [this] { startPlanning(); });
  a = addAction(QStringLiteral("plan.cancel"), tr("&Cancel Planning"), QKeySequence(tr("Ctrl+Shift+R")));
  connect(a, &QAction::triggered, this, &MainWindow::cancelPlanning);
  a = addAction(QStringLiteral("plan.exportPlan"), tr("Plan &File…"), QKeySequence(tr("Ctrl+Alt+S")));
  connect(a, &QAction::triggered, this, &MainWindow::exportPlanFile);
  a = addAction(QStringLiteral("plan.exportTrace"), tr("Chrome &Trace…"));
  connect(a, &QAction::triggered, this, [this] { exportPlanText(true); });
  a = addAction(QStringLiteral("plan.exportReport"), tr("Markdown &Report…"));
  connect(a, &QAction::triggered, this, [this] { exportPlanText(false); });
  a = addAction(QStringLiteral("plan.exportTorchrun"), tr("&torchrun…"));
  connect(a, &QAction::triggered, this, [this] { exportLaunch(static_cast<int>(runtime::ScriptKind::Torchrun)); });
  a = addAction(QStringLiteral("plan.exportSlurm"), tr("&Slurm…"));
  connect(a, &QAction::triggered, this, [this] { exportLaunch(static_cast<int>(runtime::ScriptKind::Slurm)); });
  a = addAction(QStringLiteral("plan.exportSsh"), tr("ss&h…"));
  connect(a, &QAction::triggered, this, [this] { exportLaunch(static_cast<int>(runtime::ScriptKind::Ssh)); });
  // The profile store: File ▸ Open Profile Store…, View ▸ Profiles, and the view's own Refresh.
  auto* profiles = findChild<ProfilesView*>();
  const auto showProfiles = [this] {
    if (auto* d = findChild<QDockWidget*>(QStringLiteral("dock.profiles"))) {
      d->show();
      d->raise();
    }
  };
  a = addAction(QStringLiteral("file.openStore"), tr("Open Profile &Store…"));
  a->setToolTip(tr("Browse a profile store: device profiles, link fits, recorded runs"));
  connect(a, &QAction::triggered, this, [showProfiles, profiles] {
    showProfiles();
    profiles->openStoreDialog();
  });
  a = addAction(QStringLiteral("view.profiles"), tr("&Profiles"));
  a->setToolTip(tr("The profile store: device profiles, link fits, recorded runs and their steps"));
  connect(a, &QAction::triggered, this, showProfiles);
  m_actions[QStringLiteral("profiles.refresh")] = profiles->refreshAction();
  m_actions[QStringLiteral("profiles.profileMachine")] = profiles->profileMachineAction();
  a = addAction(QStringLiteral("plan.compare"), tr("C&ompare Plans"));
  connect(a, &QAction::triggered, this, [this] {
    if (auto* d = findChild<QDockWidget*>(QStringLiteral("dock.compare"))) {
      d->show();
      d->raise();
    }
  });
}

bool MainWindow::isPlanning() const { return m_planJob->busy(); }

bool MainWindow::startPlanning() {
  if (!m_model) {
    showError(tr("Open a model first (File ▸ Open Model…): there is nothing to plan"));
    return false;
  }
  if (!m_cluster->hasCluster()) {
    showError(tr("Open or create a cluster first (File ▸ Open Cluster…, or New Cluster from Template): "
                 "the plan needs the devices to plan for"));
    return false;
  }
  const plan::PlanRequest request = m_planPanel->request();
  try {
    (void)plan::planOptions(request, m_cluster->cluster());  // a malformed option is said now, by name
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
  m_errorBar->hide();
  m_searchModel->reset();
  m_searchView->setImportedNodes(m_model->graph->nodes.size());
  m_graphView->setPartialVariants({});
  ++m_plansMade;
  const QString strategy = request.baseline.empty() ? QString::fromStdString(request.ratios)
                                                    : QString::fromStdString(request.baseline);
  const QString label = tr("Plan %1 · %2").arg(m_plansMade).arg(strategy);
  m_planJob->start(m_model, m_cluster->cluster(), request, label);
  m_statusModel->setText(tr("Planning %1 on %2…")
                             .arg(QFileInfo(QString::fromStdString(m_model->path)).fileName(),
                                  QString::fromStdString(m_cluster->cluster().name)));
  if (m_searchDock->isHidden()) m_searchDock->show();
  m_searchDock->raise();
  return true;
}

void MainWindow::cancelPlanning() {
  if (!m_planJob->busy()) return;
  m_planJob->cancel();
  m_searchView->setOutcome(nullptr, tr("Planning cancelled"));
  m_statusModel->setText(tr("Planning cancelled"));
  Q_EMIT planCancelled();
}

void MainWindow::onPlanFinished(std::shared_ptr<const PlanDocument> plan, double seconds) {
  auto labelled = std::make_shared<PlanDocument>(*plan);
  labelled->label += QStringLiteral(" · %1 ms").arg(plan->p().estimate.iterationSeconds * 1e3, 0, 'f', 3).toStdString();
  std::shared_ptr<const PlanDocument> doc = std::move(labelled);
  m_history->add(doc);
  m_graphView->setPartialVariants({});  // an open state clicked during the search gives way to the plan
  showPlan(doc);
  m_searchView->setOutcome(doc);
  m_statusModel->setText(tr("Planned in %1 s: %2 ms per iteration predicted%3")
                             .arg(seconds, 0, 'f', 2)
                             .arg(doc->p().estimate.iterationSeconds * 1e3, 0, 'f', 3)
                             .arg(doc->p().estimate.fits ? QString() : tr(" (does not fit in memory)")));
  Q_EMIT planFinished();
}

void MainWindow::showPlan(std::shared_ptr<const PlanDocument> plan) {
  m_plan = std::move(plan);
  ++m_planGeneration;
  if (m_plan) {
    m_planText->setPlainText(QString::fromStdString(m_plan->summary));
    if (m_plan->request) m_planPanel->setRequest(*m_plan->request);
  } else {
    m_planText->clear();
  }
  if (m_plan) {
    // The plan's views show with the first plan (hidden until there is one: the graph has the
    // window), Compare with the second; the Search tab stays on top while it shows the search.
    std::vector<QDockWidget*> docks = m_planDocks;
    if (m_history->size() >= 2) docks.push_back(findChild<QDockWidget*>(QStringLiteral("dock.compare")));
    bool shownNow = false;
    for (QDockWidget* d : docks)
      if (d && d->isHidden()) {
        d->show();
        shownNow = true;
      }
    if (shownNow) (m_searchDock->isVisible() ? m_searchDock : m_stagesDock)->raise();
  }
  for (QDockWidget* d : m_planDocks) refreshPlanView(d);
  m_graphView->setPlan(m_plan);
  m_properties->setPlan(m_plan);
  if (m_plan && m_costDevice >= static_cast<int>(m_plan->p().devices.size())) setCostDevice(-1);
  updateActions();
  updateLaunchPlan();  // the Run dock (main_window_launch.cpp)
  updateMeasuredPlan();  // the Measured dock (main_window_measured.cpp)
  updateTitle();
}

void MainWindow::refreshPlanView(QDockWidget* dock) {
  // A view behind another tab is filled when it is shown: planning BERT-Base costs the window
  // 35 ms less, most of it the Explain table's rows.
  // (A tab behind another is "visible" to Qt but has no visible region.)
  if (!dock->isVisible() || dock->visibleRegion().isEmpty()) return;
  QWidget* w = dock->widget();
  quint64& filled = m_filledGeneration[w];
  if (filled == m_planGeneration) return;
  filled = m_planGeneration;
  if (w == m_stages) {
    if (m_plan) m_stages->setPlan(m_plan); else m_stages->clear();
  } else if (w == m_ratios) {
    if (m_plan) m_ratios->setPlan(m_plan); else m_ratios->clear();
  } else if (w == m_baselines) {
    if (m_plan) m_baselines->setPlan(m_plan); else m_baselines->clear();
  } else if (w == m_explain) {
    if (m_plan) m_explain->setPlan(m_plan); else m_explain->clear();
  }
}

void MainWindow::setCostDevice(int rank) {
  m_costDevice = rank;
  m_graphView->setCostDevice(rank);
  if (QAction* a = action(QStringLiteral("view.colourBy.%1").arg(static_cast<int>(ColourBy::DeviceCost)))) {
    a->setChecked(true);
    m_graphView->setColourBy(ColourBy::DeviceCost);
  }
}

void MainWindow::updateActions() {
  DocumentState doc;
  doc.model = m_model != nullptr;
  doc.cluster = m_cluster->hasCluster();
  doc.plan = m_plan != nullptr;
  doc.planning = m_planJob->busy();
  doc.running = m_launch && m_launch->busy();
  const ActionState state = actionState(doc);
  const auto set = [this](const char* id, bool enabled, const QString& why = {}) {
    QAction* a = action(QString::fromLatin1(id));
    if (!a) return;  // made later in the constructor (createMenus)
    a->setEnabled(enabled);
    // A disabled command says what it waits for; an enabled one keeps its own tooltip.
    if (!why.isNull()) a->setToolTip(enabled ? a->property("enabledToolTip").toString() : why);
  };
  // Each action's own tooltip, kept before the first "needs" replaces it.
  for (auto& [id, a] : m_actions)
    if (!a->property("enabledToolTip").isValid()) a->setProperty("enabledToolTip", a->toolTip());
  const QString needsModel = whyDisabled(doc, Needs::Model);
  const QString needsBoth = whyDisabled(doc, Needs::ModelAndCluster);
  const QString needsPlan = whyDisabled(doc, Needs::Plan);
  set("file.reload", state.reloadModel, needsModel);
  for (const char* id : {"file.exportSvg", "file.exportPng", "file.exportDot"}) set(id, state.exportGraph, needsModel);
  set("plan.plan", state.plan, needsBoth);
  set("plan.cancel", state.cancelPlanning);
  for (const char* id : {"plan.exportPlan", "plan.exportTrace", "plan.exportReport"}) set(id, state.exportPlan, needsPlan);
  for (const char* id : {"plan.exportTorchrun", "plan.exportSlurm", "plan.exportSsh"})
    set(id, state.exportLaunch, needsPlan);
  if (QAction* a = action(QStringLiteral("plan.exportTorchrun")))
    for (QObject* menu : a->associatedObjects())  // the Export Launch Scripts submenus
      if (auto* m = qobject_cast<QMenu*>(menu)) m->menuAction()->setEnabled(state.exportLaunch);
  set("plan.compare", state.comparePlans, needsPlan);
  for (QAction* a : m_planModeActions) {
    a->setEnabled(state.planColouring);
    a->setToolTip(state.planColouring ? QString() : needsPlan);
  }
  if (m_costDeviceMenu) m_costDeviceMenu->setEnabled(state.planColouring);
  set("run.launch", state.startRun, doc.running ? tr("A training run is going") : needsPlan);
  set("run.stop", state.stopRun);
  set("run.tune", state.tune, needsBoth);
  set("run.calibrate", state.calibrate);
  m_planPanel->planButton()->setEnabled(state.plan);
  m_planPanel->setFiles(m_model ? QString::fromStdString(m_model->path) : QString(), m_cluster->path());
}

void MainWindow::setShownPlanPath(const QString& path) {
  // The plan now has a file: the same plan, with its path (lists and the title show it).
  auto doc = std::make_shared<PlanDocument>(*m_plan);
  doc->path = path.toStdString();
  const int row = m_history->indexOf(m_plan);
  std::shared_ptr<const PlanDocument> shown = std::move(doc);
  if (row >= 0) m_history->replace(row, shown);
  m_plan = std::move(shown);
  updateTitle();
}

void MainWindow::exportPlanFile() {
  if (!m_plan) return;
  QSettings s;
  const QString path = QFileDialog::getSaveFileName(this, tr("Export Plan"), s.value("dirs/plan.export").toString(),
                                                    tr("HAP plans (*.json)"));
  if (path.isEmpty()) return;
  s.setValue("dirs/plan.export", QFileInfo(path).absolutePath());
  if (const std::string error = studio::exportPlanFile(*m_plan, path.toStdString()); !error.empty()) {
    showError(QString::fromStdString(error));
    return;
  }
  setShownPlanPath(path);
  m_statusModel->setText(tr("Plan written to %1").arg(path));
}

void MainWindow::exportPlanText(bool trace) {
  if (!m_plan) return;
  const QString path = QFileDialog::getSaveFileName(
      this, trace ? tr("Export Chrome Trace") : tr("Export Report"), {},
      trace ? tr("Chrome traces (*.json)") : tr("Markdown (*.md)"));
  if (path.isEmpty()) return;
  const std::string error =
      trace ? exportTrace(*m_plan, path.toStdString()) : exportReport(*m_plan, path.toStdString());
  if (!error.empty()) {
    showError(QString::fromStdString(error));
    return;
  }
  m_statusModel->setText(trace ? tr("Trace written to %1 (open it in ui.perfetto.dev)").arg(path)
                               : tr("Report written to %1").arg(path));
}

QString MainWindow::ensurePlanFile() {
  if (!m_plan->path.empty()) return QString::fromStdString(m_plan->path);
  QMessageBox::information(this, tr("Export the plan first"),
                           tr("Launch scripts run a plan file: choose where to write this plan first."));
  exportPlanFile();
  return m_plan && !m_plan->path.empty() ? QString::fromStdString(m_plan->path) : QString();
}

void MainWindow::exportLaunch(int kind) {
  if (!m_plan) return;
  const QString planPath = ensurePlanFile();
  if (planPath.isEmpty()) return;
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Write Launch Scripts Into"), QFileInfo(planPath).absolutePath());
  if (dir.isEmpty()) return;
  std::vector<std::string> written;
  const std::string error = exportLaunchScripts(*m_plan, planPath.toStdString(), static_cast<runtime::ScriptKind>(kind),
                                                dir.toStdString(), false, &written);
  if (!error.empty()) {
    showError(QString::fromStdString(error));
    return;
  }
  QStringList names;
  for (const std::string& w : written) names << QString::fromStdString(w);
  m_statusModel->setText(tr("Wrote %1 files to %2: %3").arg(written.size()).arg(dir, names.join(QStringLiteral(", "))));
}

}  // namespace hap::studio
