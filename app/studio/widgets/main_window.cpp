#include "app/studio/widgets/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QToolButton>
#include <QHeaderView>
#include <QSplitter>
#include <QTreeView>
#include <QVBoxLayout>
#include <utility>

#include "app/studio/core/display/units.h"
#include "app/studio/core/documents/action_state.h"
#include "app/studio/core/documents/cluster_document.h"
#include "app/studio/core/graph/colouring.h"
#include "app/studio/core/jobs/open_job.h"
#include "app/studio/core/documents/plan_export.h"
#include "app/studio/core/models/plan_history_model.h"
#include "app/studio/core/jobs/plan_job.h"
#include "app/studio/core/models/search_progress_model.h"
#include "app/studio/widgets/baselines_view.h"
#include "app/studio/widgets/compare_view.h"
#include "app/studio/widgets/explain_view.h"
#include "app/studio/widgets/fixed_font.h"
#include "app/studio/widgets/plan_panel.h"
#include "app/studio/widgets/ratios_view.h"
#include "app/studio/widgets/search_view.h"
#include "app/studio/widgets/stages_view.h"
#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/error_bar.h"
#include "app/studio/widgets/find_bar.h"
#include "app/studio/widgets/getting_started.h"
#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/inputs_dialog.h"
#include "app/studio/widgets/properties_panel.h"
#include "app/studio/widgets/summary_panel.h"

namespace hap::studio {
namespace {

constexpr int kMaxRecent = 10;
const char* const kRecentKey = "recentFiles";
// The dock layout's version: raised when the default layout changes, so that a window state saved
// by an earlier version is not restored (issue 31: the graph starved by docks saved wide).
constexpr int kLayoutVersion = 2;

QString modelFilter() { return QObject::tr("TorchScript models (*.pt *.pth *.zip);;All files (*)"); }
QString clusterFilter() { return QObject::tr("Cluster inventories (*.yaml *.yml);;All files (*)"); }
QString planFilter() { return QObject::tr("HAP plans (*.json);;All files (*)"); }

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setObjectName(QStringLiteral("MainWindow"));
  setAcceptDrops(true);
  setDockNestingEnabled(true);
  m_openJob = new OpenJob(this);
  m_planJob = new PlanJob(this);
  m_searchModel = new SearchProgressModel(this);
  m_history = new PlanHistoryModel(this);

  auto* central = new QWidget(this);
  auto* column = new QVBoxLayout(central);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(0);
  m_errorBar = new ErrorBar(central);
  column->addWidget(m_errorBar);
  m_graphView = new GraphView(central);
  column->addWidget(m_graphView, 1);
  m_findBar = new FindBar(central);
  m_findBar->hide();
  column->addWidget(m_findBar);
  setCentralWidget(central);

  createDocks();
  createPlanViews();
  createLaunchDock();  // the Run dock (main_window_launch.cpp)
  m_cluster->setDiscardGuard([this] { return confirmDiscardCluster(); });
  createActions();
  createPlanActions();
  createLaunchActions();
  createMenus();

  m_statusModel = new QLabel(
      tr("Open a model (Ctrl+O) or drop a .pt file here; Help ▸ Getting Started (F1) shows the way"), this);
  statusBar()->addWidget(m_statusModel, 1);
  m_statusLayout = new QLabel(this);
  statusBar()->addPermanentWidget(m_statusLayout);
  m_progress = new QProgressBar(this);
  m_progress->setMaximumWidth(180);
  m_progress->setTextVisible(false);
  m_progress->hide();
  statusBar()->addPermanentWidget(m_progress);
  m_cancel = new QToolButton(this);
  m_cancel->setText(tr("Cancel"));
  m_cancel->setToolTip(tr("Stop opening the file"));
  m_cancel->hide();
  statusBar()->addPermanentWidget(m_cancel);
  connect(m_cancel, &QToolButton::clicked, this, [this] {
    // One Cancel for whatever runs in the background: planning, or opening a file.
    if (m_planJob->busy())
      cancelPlanning();
    else
      m_openJob->cancel();
  });

  connect(m_openJob, &OpenJob::started, this, [this](const QString& path) {
    m_statusModel->setText(tr("Opening %1…").arg(QFileInfo(path).fileName()));
    m_progress->setRange(0, 0);
    m_progress->show();
    m_cancel->show();
  });
  connect(m_openJob, &OpenJob::progress, this, [this](int done, int total) {
    m_progress->setRange(0, total);
    m_progress->setValue(done);
  });
  connect(m_openJob, &OpenJob::busyChanged, this, [this](bool busy) {
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
  });
  connect(m_openJob, &OpenJob::modelOpened, this, [this](std::shared_ptr<const ModelDocument> doc) {
    if (m_planJob->busy()) cancelPlanning();  // it plans the previous model
    showPlan(nullptr);  // a plan belongs to the model it was made for
    m_history->clear();
    std::erase_if(m_openFailures, [](const OpenFailure& f) { return f.kind == FileKind::Model; });
    setModel(std::move(doc));
    addRecent(QString::fromStdString(m_model->path));
    Q_EMIT modelOpened();
  });
  connect(m_openJob, &OpenJob::planOpened, this,
          [this](std::shared_ptr<const PlanDocument> plan, std::shared_ptr<const ModelDocument> model) {
            if (m_planJob->busy()) cancelPlanning();
            const bool sameModel = m_model && m_model->path == model->path && m_model->graph &&
                                   m_model->graph->nodes.size() == model->graph->nodes.size();
            if (!sameModel) m_history->clear();  // plans of another model cannot be compared with it
            std::erase_if(m_openFailures, [](const OpenFailure& f) {
              return f.kind == FileKind::Model || f.kind == FileKind::Plan;
            });
            setModel(std::move(model));
            m_history->add(plan);
            showPlan(plan);
            addRecent(QString::fromStdString(plan->path));
            updateTitle();
            Q_EMIT planOpened();
          });
  connect(m_openJob, &OpenJob::failed, this, &MainWindow::onOpenFailed);

  connect(m_graphView, &GraphView::selectionChanged, this, &MainWindow::setSelection);
  connect(m_graphView, &GraphView::busyChanged, this, [this](bool busy) {
    m_statusLayout->setText(busy ? tr("Laying out…") : QString());
  });
  connect(m_properties, &PropertiesPanel::selectionRequested, this, [this](const Selection& s) {
    m_graphView->select(s);
    setSelection(s);
  });
  connect(m_findBar, &FindBar::matchActivated, this, [this](const Selection& s) {
    m_graphView->select(s);
    setSelection(s);
  });
  connect(m_summary, &SummaryPanel::scopeActivated, this, [this](const QString& path) {
    if (!m_model) return;
    const ScopeId s = m_model->scopes->find(path.toStdString());
    if (s < 0) return;
    m_graphView->select(Selection::scope(s));
    setSelection(Selection::scope(s));
  });
  connect(m_cluster, &ClusterPanel::modifiedChanged, this, [this](bool) { updateTitle(); });
  connect(m_cluster, &ClusterPanel::clusterChanged, this, [this] {
    updateTitle();
    updateActions();
  });
  connect(m_cluster, &ClusterPanel::pathChanged, this, [this] { updateActions(); });

  // The layout's minimum as it is now, with the bottom docks tabbed: an earlier activation, while
  // they were still side by side, left the window a minimum width of all of them (3000 px).
  layout()->activate();
  QSettings settings;
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  // The bottom docks show when they have something to show (planning, a plan, a run): the graph
  // has the window until then. A layout saved by an earlier version (kLayoutVersion) is not
  // brought back: the default one replaces it.
  for (QDockWidget* d : findChildren<QDockWidget*>())
    if (dockWidgetArea(d) == Qt::BottomDockWidgetArea) d->hide();
  if (settings.value(QStringLiteral("window/layoutVersion")).toInt() == kLayoutVersion)
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray(), kLayoutVersion);
  if (!settings.contains(QStringLiteral("window/geometry"))) resize(1400, 900);
  rebuildRecentMenu();
  updateTitle();
  updateActions();
}

MainWindow::~MainWindow() = default;

QAction* MainWindow::addAction(const QString& id, const QString& text, const QKeySequence& shortcut) {
  auto* a = new QAction(text, this);
  a->setObjectName(id);
  if (!shortcut.isEmpty()) a->setShortcut(shortcut);
  QMainWindow::addAction(a);  // shortcuts work wherever focus is in the window, menu shown or not
  m_actions[id] = a;
  return a;
}

QAction* MainWindow::action(const QString& id) const {
  auto it = m_actions.find(id);
  return it == m_actions.end() ? nullptr : it->second;
}

void MainWindow::createDocks() {
  auto dock = [this](const QString& id, const QString& title, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(id);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  m_summary = new SummaryPanel(this);
  m_properties = new PropertiesPanel(this);
  m_cluster = new ClusterPanel(this);
  m_planText = new QPlainTextEdit(this);
  m_planText->setObjectName(QStringLiteral("planSummary"));
  m_planText->setReadOnly(true);
  m_planText->setLineWrapMode(QPlainTextEdit::NoWrap);
  m_planText->setPlaceholderText(
      tr("Plan the model (Plan ▸ Plan, Ctrl+R) or open a plan made by hap plan to see its summary here."));
  m_planText->setFont(fixedFont());
  m_planPanel = new PlanPanel(this);
  auto* plans = new QTreeView(this);
  plans->setObjectName(QStringLiteral("planList"));
  plans->setModel(m_history);
  plans->setRootIsDecorated(false);
  plans->setSelectionMode(QAbstractItemView::SingleSelection);
  plans->setToolTip(tr("The plans made or opened this session; click one to show it, compare two in Compare."));
  plans->header()->setStretchLastSection(false);
  connect(plans, &QTreeView::clicked, this, [this](const QModelIndex& index) {
    if (index.isValid()) showPlan(m_history->plan(index.row()));
  });
  connect(m_history, &QAbstractItemModel::rowsInserted, plans, [plans, this](const QModelIndex&, int, int last) {
    const QSignalBlocker block(plans->selectionModel());
    plans->setCurrentIndex(m_history->index(last, 0));
    for (int c = 0; c < m_history->columnCount(); ++c) plans->resizeColumnToContents(c);
  });
  // The options scroll rather than hold the window at their full height (a laptop's screen).
  auto* planScroll = new QScrollArea(this);
  planScroll->setObjectName(QStringLiteral("planOptionsScroll"));
  planScroll->setWidget(m_planPanel);
  planScroll->setWidgetResizable(true);
  planScroll->setFrameShape(QFrame::NoFrame);
  // ... and sideways in a dock narrower than they are (the graph has the window's width first).
  planScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  planScroll->setMinimumWidth(std::min(m_planPanel->minimumSizeHint().width(), 260));
  auto* planSplit = new QSplitter(Qt::Vertical, this);
  planSplit->addWidget(planScroll);
  planSplit->addWidget(plans);
  planSplit->addWidget(m_planText);
  planSplit->setStretchFactor(0, 0);
  planSplit->setStretchFactor(1, 1);
  planSplit->setStretchFactor(2, 2);
  m_problems = new QListWidget(this);
  m_problems->setObjectName(QStringLiteral("problems"));
  m_problems->setWordWrap(true);

  QDockWidget* summary = dock(QStringLiteral("dock.summary"), tr("Model Summary"), m_summary, Qt::LeftDockWidgetArea);
  QDockWidget* cluster = dock(QStringLiteral("dock.cluster"), tr("Cluster"), m_cluster, Qt::LeftDockWidgetArea);
  QDockWidget* properties =
      dock(QStringLiteral("dock.properties"), tr("Properties"), m_properties, Qt::RightDockWidgetArea);
  QDockWidget* plan = dock(QStringLiteral("dock.plan"), tr("Plan"), planSplit, Qt::RightDockWidgetArea);
  m_problemsDock = dock(QStringLiteral("dock.problems"), tr("Problems"), m_problems, Qt::BottomDockWidgetArea);
  tabifyDockWidget(summary, cluster);
  summary->raise();
  tabifyDockWidget(properties, plan);
  properties->raise();
  resizeDocks({summary, properties}, {260, 300}, Qt::Horizontal);  // the graph has the rest
  resizeDocks({m_problemsDock}, {110}, Qt::Vertical);
  m_problemsDock->hide();  // shown when there is something to say (a diagnostic or a failed file)

  connect(m_problems, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
    const int node = item->data(Qt::UserRole).toInt();
    if (node >= 0 && m_model) {
      m_graphView->reveal(node);
      setSelection(Selection::node(node));
    }
  });
}

void MainWindow::createActions() {
  // Each Open action remembers its own last folder.
  auto openAction = [this](const QString& id, const QString& text, const QKeySequence& shortcut,
                           const QString& title, const QString& filter, std::function<void(const QString&)> open) {
    QAction* a = addAction(id, text, shortcut);
    connect(a, &QAction::triggered, this, [this, id, title, filter, open] {
      QSettings s;
      const QString key = QStringLiteral("dirs/") + id;
      const QString path = QFileDialog::getOpenFileName(this, title, s.value(key).toString(), filter);
      if (path.isEmpty()) return;
      s.setValue(key, QFileInfo(path).absolutePath());
      open(path);
    });
  };
  openAction(QStringLiteral("file.open"), tr("&Open Model…"), QKeySequence::Open, tr("Open Model"), modelFilter(),
             [this](const QString& p) { openModel(p); });
  openAction(QStringLiteral("file.openCluster"), tr("Open &Cluster…"), QKeySequence(tr("Ctrl+Shift+O")),
             tr("Open Cluster"), clusterFilter(), [this](const QString& p) { openCluster(p); });
  openAction(QStringLiteral("file.openPlan"), tr("Open &Plan…"), QKeySequence(tr("Ctrl+Alt+O")), tr("Open Plan"),
             planFilter(), [this](const QString& p) { openPlan(p); });
  QAction* a = nullptr;
  a = addAction(QStringLiteral("file.reload"), tr("&Reload Model"), QKeySequence::Refresh);
  connect(a, &QAction::triggered, this, [this] {
    if (m_model) openModel(QString::fromStdString(m_model->path), m_model->inputOverrides);
  });
  a = addAction(QStringLiteral("file.exportSvg"), tr("Graph as &SVG…"), QKeySequence(tr("Ctrl+Shift+E")));
  connect(a, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Graph as SVG"), {}, tr("SVG (*.svg)"));
    if (!path.isEmpty() && !m_graphView->exportSvg(path)) showError(tr("%1: could not be written").arg(path));
  });
  a = addAction(QStringLiteral("file.exportPng"), tr("Graph as &PNG…"));
  connect(a, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Graph as PNG"), {}, tr("PNG (*.png)"));
    if (!path.isEmpty() && !m_graphView->exportPng(path)) showError(tr("%1: could not be written").arg(path));
  });
  a = addAction(QStringLiteral("file.exportDot"), tr("Graph as &DOT…"));
  connect(a, &QAction::triggered, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Graph as DOT"), {}, tr("Graphviz (*.dot *.gv)"));
    if (!path.isEmpty() && !m_graphView->exportDot(path)) showError(tr("%1: could not be written").arg(path));
  });
  a = addAction(QStringLiteral("file.quit"), tr("&Quit"), QKeySequence::Quit);
  a->setMenuRole(QAction::QuitRole);
  connect(a, &QAction::triggered, this, &QWidget::close);

  a = addAction(QStringLiteral("edit.find"), tr("&Find…"), QKeySequence::Find);
  connect(a, &QAction::triggered, this, [this] {
    m_findBar->show();
    m_findBar->focusAndSelectAll();
  });
  m_actions[QStringLiteral("edit.findNext")] = m_findBar->findNextAction();
  m_actions[QStringLiteral("edit.findPrevious")] = m_findBar->findPreviousAction();

  a = addAction(QStringLiteral("view.zoomIn"), tr("Zoom &In"), QKeySequence::ZoomIn);
  connect(a, &QAction::triggered, m_graphView, &GraphView::zoomIn);
  a = addAction(QStringLiteral("view.zoomOut"), tr("Zoom &Out"), QKeySequence::ZoomOut);
  connect(a, &QAction::triggered, m_graphView, &GraphView::zoomOut);
  a = addAction(QStringLiteral("view.actualSize"), tr("&Actual Size"), QKeySequence(tr("Ctrl+0")));
  connect(a, &QAction::triggered, m_graphView, &GraphView::actualSize);
  a = addAction(QStringLiteral("view.fit"), tr("&Fit to Window"), QKeySequence(tr("Ctrl+9")));
  connect(a, &QAction::triggered, m_graphView, &GraphView::fitToWindow);
  a = addAction(QStringLiteral("view.fitSelection"), tr("Fit to &Selection"), QKeySequence(tr("Ctrl+8")));
  connect(a, &QAction::triggered, m_graphView, &GraphView::fitToSelection);
  a = addAction(QStringLiteral("view.leftToRight"), tr("&Left to Right"), QKeySequence(tr("Ctrl+K")));
  a->setCheckable(true);
  connect(a, &QAction::toggled, this, [this](bool on) {
    m_graphView->setDirection(on ? RankDirection::LeftToRight : RankDirection::TopToBottom);
    QSettings().setValue("view/leftToRight", on);
  });
  a = addAction(QStringLiteral("view.expandAll"), tr("E&xpand All Scopes"), QKeySequence(tr("Ctrl+Shift+=")));
  connect(a, &QAction::triggered, m_graphView, &GraphView::expandAll);
  a = addAction(QStringLiteral("view.collapseAll"), tr("&Collapse All Scopes"), QKeySequence(tr("Ctrl+Shift+-")));
  connect(a, &QAction::triggered, m_graphView, &GraphView::collapseAll);
  a = addAction(QStringLiteral("view.collapseRepeated"), tr("Collapse &Repeated Blocks"));
  connect(a, &QAction::triggered, m_graphView, &GraphView::collapseRepeatedBlocks);
  // VS Code's Toggle Panel and Qt Creator's output panes, for the whole window at once: on a
  // 1280×720 screen the plan's panels leave the graph a third of it.
  a = addAction(QStringLiteral("view.graphOnly"), tr("&Graph Only"), QKeySequence(tr("Ctrl+Shift+M")));
  a->setCheckable(true);
  a->setToolTip(tr("Hide every panel so the graph has the window; again to bring them back"));
  connect(a, &QAction::toggled, this, &MainWindow::setGraphOnly);

  a = addAction(QStringLiteral("help.gettingStarted"), tr("&Getting Started"), QKeySequence::HelpContents);
  a->setToolTip(tr("Open, plan, run and tune a bundled model, step by step"));
  connect(a, &QAction::triggered, this, [this] {
    auto* page = findChild<GettingStartedDialog*>();
    if (!page) page = new GettingStartedDialog(this);  // modeless, made once
    page->show();
    page->raise();
    page->activateWindow();
  });
  a = addAction(QStringLiteral("help.about"), tr("&About HAP Studio"));
  a->setMenuRole(QAction::AboutRole);
  connect(a, &QAction::triggered, this, [this] {
    QMessageBox::about(this, tr("About HAP Studio"),
                       tr("<b>HAP Studio</b> %1<br>Plans SPMD training of PyTorch models on heterogeneous "
                          "clusters: sharding, collectives and uneven ratios, synthesised and verified.")
                           .arg(QCoreApplication::applicationVersion()));
  });
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(action("file.open"));
  file->addAction(action("file.openCluster"));
  file->addAction(action("file.openPlan"));
  file->addAction(action("file.openStore"));
  m_recentMenu = file->addMenu(tr("Open &Recent"));
  file->addSeparator();
  QMenu* templates = file->addMenu(tr("&New Cluster from Template"));
  for (QAction* t : m_cluster->templateActions()) templates->addAction(t);
  file->addAction(m_cluster->saveAction());
  file->addAction(m_cluster->saveAsAction());
  file->addSeparator();
  QMenu* exportMenu = file->addMenu(tr("&Export"));
  exportMenu->addAction(action("file.exportSvg"));
  exportMenu->addAction(action("file.exportPng"));
  exportMenu->addAction(action("file.exportDot"));
  file->addAction(action("file.reload"));
  file->addSeparator();
  file->addAction(action("file.quit"));

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  edit->addAction(action("edit.find"));
  edit->addAction(action("edit.findNext"));
  edit->addAction(action("edit.findPrevious"));

  m_viewMenu = menuBar()->addMenu(tr("&View"));
  m_viewMenu->addAction(action("view.zoomIn"));
  m_viewMenu->addAction(action("view.zoomOut"));
  m_viewMenu->addAction(action("view.actualSize"));
  m_viewMenu->addAction(action("view.fit"));
  m_viewMenu->addAction(action("view.fitSelection"));
  m_viewMenu->addSeparator();
  m_viewMenu->addAction(action("view.leftToRight"));
  m_viewMenu->addAction(action("view.expandAll"));
  m_viewMenu->addAction(action("view.collapseAll"));
  m_viewMenu->addAction(action("view.collapseRepeated"));
  m_viewMenu->addAction(m_graphView->focusAction());    // F in the graph; enabled by the view
  m_viewMenu->addAction(m_graphView->unfocusAction());  // Esc in the graph
  QMenu* colour = m_viewMenu->addMenu(tr("Colour &By"));
  auto* group = new QActionGroup(this);
  for (ColourBy c : {ColourBy::OpFamily, ColourBy::Scope, ColourBy::Flops, ColourBy::Bytes}) {
    QAction* a = colour->addAction(colourByName(c));
    a->setObjectName(QStringLiteral("view.colourBy.%1").arg(static_cast<int>(c)));
    a->setCheckable(true);
    a->setChecked(c == ColourBy::OpFamily);
    group->addAction(a);
    m_actions[a->objectName()] = a;
    connect(a, &QAction::triggered, this, [this, c] { m_graphView->setColourBy(c); });
  }
  // The plan's modes: enabled while a plan is shown.
  colour->addSeparator();
  for (ColourBy c : {ColourBy::ShardingForm, ColourBy::Variant, ColourBy::Segment, ColourBy::DeviceCost}) {
    QAction* a = colour->addAction(colourByName(c));
    a->setObjectName(QStringLiteral("view.colourBy.%1").arg(static_cast<int>(c)));
    a->setCheckable(true);
    group->addAction(a);
    m_actions[a->objectName()] = a;
    m_planModeActions.push_back(a);
    connect(a, &QAction::triggered, this, [this, c] { m_graphView->setColourBy(c); });
  }
  // The device whose predicted time "Device cost" shows (the bottleneck unless chosen).
  m_costDeviceMenu = colour->addMenu(tr("Cost on &Device"));
  connect(m_costDeviceMenu, &QMenu::aboutToShow, this, [this] {
    m_costDeviceMenu->clear();
    if (!m_plan) return;
    auto* devices = new QActionGroup(m_costDeviceMenu);
    QAction* bottleneck = m_costDeviceMenu->addAction(tr("The Bottleneck (rank %1)").arg(plan::bottleneckRank(m_plan->timeline)));
    bottleneck->setCheckable(true);
    bottleneck->setChecked(m_costDevice < 0);
    devices->addAction(bottleneck);
    connect(bottleneck, &QAction::triggered, this, [this] { setCostDevice(-1); });
    m_costDeviceMenu->addSeparator();
    for (const plan::PlanDevice& d : m_plan->p().devices) {
      QAction* a = m_costDeviceMenu->addAction(
          tr("Rank %1 · %2 · %3").arg(d.rank).arg(QString::fromStdString(d.type), QString::fromStdString(d.machine)));
      a->setCheckable(true);
      a->setChecked(m_costDevice == d.rank);
      devices->addAction(a);
      connect(a, &QAction::triggered, this, [this, rank = d.rank] { setCostDevice(rank); });
    }
  });
  connect(m_graphView, &GraphView::colourByChanged, this, [this](ColourBy c) {
    // The view chose the colouring itself (a plan's first showing, or a plan cleared).
    if (QAction* a = action(QStringLiteral("view.colourBy.%1").arg(static_cast<int>(c)))) a->setChecked(true);
  });
  m_viewMenu->addSeparator();
  m_viewMenu->addAction(action("view.profiles"));
  QMenu* panels = m_viewMenu->addMenu(tr("&Panels"));
  for (QDockWidget* d : findChildren<QDockWidget*>()) {
    panels->addAction(d->toggleViewAction());
    // Only a dock shown matters: a dock hidden may be the window closing in its destructor, when
    // the actions are gone.
    connect(d, &QDockWidget::visibilityChanged, this, [this](bool visible) {
      if (!visible || m_togglingGraphOnly) return;
      QAction* graphOnly = action(QStringLiteral("view.graphOnly"));
      if (graphOnly && graphOnly->isChecked()) graphOnly->setChecked(false);
    });
  }
  m_viewMenu->addAction(action("view.graphOnly"));

  QMenu* planMenu = menuBar()->addMenu(tr("&Plan"));
  planMenu->addAction(action("plan.plan"));
  planMenu->addAction(action("plan.cancel"));
  planMenu->addSeparator();
  planMenu->addAction(action("plan.exportPlan"));
  planMenu->addAction(action("plan.exportTrace"));
  planMenu->addAction(action("plan.exportReport"));
  QMenu* launch = planMenu->addMenu(tr("Export &Launch Scripts"));
  launch->addAction(action("plan.exportTorchrun"));
  launch->addAction(action("plan.exportSlurm"));
  launch->addAction(action("plan.exportSsh"));
  planMenu->addSeparator();
  planMenu->addAction(action("plan.compare"));
  exportMenu->addSeparator();
  exportMenu->addAction(action("plan.exportPlan"));
  exportMenu->addAction(action("plan.exportTrace"));
  exportMenu->addAction(action("plan.exportReport"));
  exportMenu->addMenu(launch);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(action("run.launch"));  // the Run dock (main_window_launch.cpp)
  run->addAction(action("run.stop"));
  run->addAction(action("view.run"));
  run->addSeparator();
  run->addAction(action("profiles.profileMachine"));
  run->addAction(createCalibrateAction());  // Run ▸ Calibrate… (main_window_calibrate.cpp)
  run->addAction(createTuneAction());  // Run ▸ Tune… (main_window_tune.cpp)
  run->addAction(action("run.showMeasured"));  // Compare with Run… (main_window_measured.cpp)

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(action("help.gettingStarted"));
  help->addSeparator();
  help->addAction(action("help.about"));
  if (QSettings().value("view/leftToRight", false).toBool()) action("view.leftToRight")->setChecked(true);
}

MainWindow::FileKind MainWindow::kindOf(const QString& path) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix == "pt" || suffix == "pth" || suffix == "zip" || suffix == "torchscript") return FileKind::Model;
  if (suffix == "yaml" || suffix == "yml") return FileKind::Cluster;
  if (suffix == "json") return FileKind::Plan;
  return FileKind::Unknown;
}

void MainWindow::openFile(const QString& path) {
  switch (kindOf(path)) {
    case FileKind::Model: openModel(path); break;
    case FileKind::Cluster: openCluster(path); break;
    case FileKind::Plan: openPlan(path); break;
    case FileKind::Unknown:
      showError(tr("%1: not a file HAP Studio opens (models are .pt, clusters .yaml, plans .json)").arg(path));
      break;
  }
}

void MainWindow::openModel(const QString& path, const std::vector<import::InputSpec>& inputOverrides) {
  m_errorBar->hide();
  m_openJob->openModel(path, inputOverrides);
}

bool MainWindow::openCluster(const QString& path) {
  if (!confirmDiscardCluster()) return false;
  const ClusterFile file = openClusterFile(path);
  if (!file.ok()) {
    reportOpenFailure(FileKind::Cluster, path, file.error);
    return false;
  }
  m_cluster->setCluster(file.cluster, path);
  addRecent(path);
  m_errorBar->hide();
  if (std::erase_if(m_openFailures, [](const OpenFailure& f) { return f.kind == FileKind::Cluster; }) > 0)
    updateProblems();
  updateTitle();
  return true;
}

void MainWindow::openPlan(const QString& path, const QString& modelPath) {
  m_errorBar->hide();
  m_openJob->openPlan(path, !modelPath.isEmpty() ? modelPath
                            : m_model            ? QString::fromStdString(m_model->path)
                                                 : QString());
}

void MainWindow::onOpenFailed(const QString& path, const OpenError& error) {
  if (error.kind == OpenError::Kind::Cancelled) {
    m_statusModel->setText(tr("Opening %1 cancelled").arg(QFileInfo(path).fileName()));
    return;
  }
  if (error.kind == OpenError::Kind::InputsMissing) {
    // Ask for the shapes (the file has no hap/inputs.json), then import again with them.
    std::vector<import::InputSpec> given = m_model && m_model->path == path.toStdString()
                                           ? m_model->inputOverrides
                                           : std::vector<import::InputSpec>{};
    auto* dialog = new InputsDialog(path, error.arguments, given, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog, path] { openModel(path, dialog->inputs()); });
    connect(dialog, &QDialog::rejected, this, [this, path] {
      m_statusModel->setText(tr("%1 not opened: no input shapes").arg(QFileInfo(path).fileName()));
    });
    dialog->open();
    return;
  }
  reportOpenFailure(kindOf(path) == FileKind::Plan ? FileKind::Plan : FileKind::Model, path,
                    QString::fromStdString(error.message));
  m_statusModel->setText(m_model ? tr("%1 (the failed file was not opened)")
                                       .arg(QFileInfo(QString::fromStdString(m_model->path)).fileName())
                                 : tr("Nothing open"));
}

void MainWindow::showError(const QString& message) {
  m_lastError = message;
  m_errorBar->showMessage(message);
  auto* item = new QListWidgetItem(style()->standardIcon(QStyle::SP_MessageBoxCritical), message, m_problems);
  item->setData(Qt::UserRole, -1);
  showProblemsDock();
  Q_EMIT openFailed(message);
}

void MainWindow::reportOpenFailure(FileKind kind, const QString& path, const QString& message) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  std::erase_if(m_openFailures, [&](const OpenFailure& f) { return QFileInfo(f.path).absoluteFilePath() == absolute; });
  m_openFailures.push_back({kind, path, message});
  updateProblems();
  m_lastError = message;
  m_errorBar->showMessage(message);
  Q_EMIT openFailed(message);
}

void MainWindow::showProblemsDock() {
  if (!m_problemsDock->isHidden()) return;
  m_problemsDock->show();
  // Beside the bottom docks, a third of the window wide (it came up 150 px wide before), and
  // high enough for a few messages.
  resizeDocks({m_problemsDock}, {std::max(420, width() / 3)}, Qt::Horizontal);
  resizeDocks({m_problemsDock}, {std::max(140, height() / 6)}, Qt::Vertical);
}

void MainWindow::setGraphOnly(bool on) {
  if (on == !m_hiddenForGraph.empty()) return;
  m_togglingGraphOnly = true;
  if (on) {
    for (QDockWidget* d : findChildren<QDockWidget*>()) {
      if (d->isHidden()) continue;
      m_hiddenForGraph.emplace_back(d);
      // A tab behind another one is not hidden, only covered: remember which ones were on top.
      if (!d->visibleRegion().isEmpty()) m_raisedForGraph.emplace_back(d);
    }
    for (const QPointer<QDockWidget>& d : m_hiddenForGraph) d->hide();
  } else {
    for (const QPointer<QDockWidget>& d : std::exchange(m_hiddenForGraph, {}))
      if (d) d->show();
    for (const QPointer<QDockWidget>& d : std::exchange(m_raisedForGraph, {}))
      if (d) d->raise();
  }
  m_togglingGraphOnly = false;
  if (QAction* a = action(QStringLiteral("view.graphOnly")); a->isChecked() != on) {
    const QSignalBlocker block(a);
    a->setChecked(on);
  }
}

void MainWindow::setModel(std::shared_ptr<const ModelDocument> model) {
  m_model = std::move(model);
  m_graphView->setGraph(m_model->graph, m_model->scopes);
  m_summary->setGraph(m_model->graph);
  m_properties->setGraph(m_model->graph, m_model->scopes);
  m_findBar->setGraph(m_model->graph);
  m_selection = {};
  const ir::Graph& g = *m_model->graph;
  m_statusModel->setText(tr("%1 — %2 ops, %3 parameters, imported in %4 s")
                             .arg(QFileInfo(QString::fromStdString(m_model->path)).fileName())
                             .arg(g.nodes.size())
                             .arg(formatCount(static_cast<double>(g.parameterCount())))
                             .arg(m_model->importSeconds, 0, 'f', 2));
  updateProblems();
  updateTitle();
  updateActions();
}

void MainWindow::updateProblems() {
  m_problems->clear();
  // The files that did not open, then the open model's diagnostics.
  for (const OpenFailure& f : m_openFailures) {
    auto* item = new QListWidgetItem(style()->standardIcon(QStyle::SP_MessageBoxCritical), f.message, m_problems);
    item->setData(Qt::UserRole, -1);
    item->setToolTip(f.path);
  }
  const size_t count = m_openFailures.size() + (m_model ? m_model->graph->diagnostics.size() : 0);
  m_problemsDock->setWindowTitle(count == 0 ? tr("Problems") : tr("Problems (%1)").arg(count));
  // Shown while it has something to say.
  if (count > 0)
    showProblemsDock();
  else
    m_problemsDock->hide();
  if (!m_model) return;
  const ir::Graph& g = *m_model->graph;
  for (const ir::Diagnostic& d : g.diagnostics) {
    const QString text = d.node >= 0 ? QStringLiteral("%1: %2").arg(QString::fromStdString(g.describe(d.node)),
                                                                      QString::fromStdString(d.message))
                                     : QString::fromStdString(d.message);
    auto* item = new QListWidgetItem(
        style()->standardIcon(d.severity == ir::Diagnostic::Severity::Error ? QStyle::SP_MessageBoxCritical
                                                                            : QStyle::SP_MessageBoxWarning),
        text, m_problems);
    item->setData(Qt::UserRole, d.node);
  }
}

void MainWindow::setSelection(const Selection& s) {
  m_selection = s;
  m_properties->showSelection(s);
  if (s.kind == Selection::Kind::Node) {
    m_stages->selectNodes({s.id});
    m_explain->selectNode(s.id);
  }
  if (s.kind == Selection::Kind::Value) m_graphView->highlightValue(s.id);
  if (s.kind == Selection::Kind::Scope && m_model) {
    m_summary->selectScope(QString::fromStdString(m_model->scopes->scope(s.id).path));
    // The scope's nodes, in the stages they run in.
    std::vector<ir::NodeId> nodes;
    for (ir::NodeId n = 0; n < static_cast<ir::NodeId>(m_model->graph->nodes.size()); ++n)
      if (m_model->scopes->contains(s.id, m_model->scopes->scopeOfNode(n))) nodes.push_back(n);
    m_stages->selectNodes(nodes);
  }
}

void MainWindow::updateTitle() {
  QStringList parts;
  if (m_model) parts << QFileInfo(QString::fromStdString(m_model->path)).fileName();
  if (!m_cluster->path().isEmpty() || m_cluster->hasCluster())
    parts << (m_cluster->path().isEmpty() ? tr("untitled cluster") : QFileInfo(m_cluster->path()).fileName()) +
                 (m_cluster->isModified() ? QStringLiteral("*") : QString());
  if (m_plan)
    parts << (m_plan->path.empty() ? QString::fromStdString(m_plan->label)
                                   : QFileInfo(QString::fromStdString(m_plan->path)).fileName());
  setWindowTitle(parts.isEmpty() ? tr("HAP Studio") : parts.join(QStringLiteral(" · ")) + tr(" — HAP Studio"));
}

QStringList MainWindow::recentFiles() const { return QSettings().value(kRecentKey).toStringList(); }

void MainWindow::addRecent(const QString& path) {
  QStringList recent = recentFiles();
  const QString absolute = QFileInfo(path).absoluteFilePath();
  recent.removeAll(absolute);
  recent.prepend(absolute);
  while (recent.size() > kMaxRecent) recent.removeLast();
  QSettings().setValue(kRecentKey, recent);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  m_recentMenu->clear();
  const QStringList recent = recentFiles();
  for (int i = 0; i < recent.size(); ++i) {
    const QString path = recent[i];
    QAction* a = m_recentMenu->addAction(QStringLiteral("&%1 %2").arg((i + 1) % 10).arg(path));
    a->setObjectName(QStringLiteral("file.recent.%1").arg(i));
    connect(a, &QAction::triggered, this, [this, path] { openFile(path); });
  }
  if (recent.isEmpty()) m_recentMenu->addAction(tr("(none)"))->setEnabled(false);
  m_recentMenu->addSeparator();
  QAction* clear = m_recentMenu->addAction(tr("&Clear Menu"));
  connect(clear, &QAction::triggered, this, [this] {
    QSettings().remove(kRecentKey);
    rebuildRecentMenu();
  });
}

bool MainWindow::confirmDiscardCluster() {
  if (!m_cluster->isModified()) return true;
  const auto answer = QMessageBox::question(
      this, tr("Unsaved cluster"), tr("The cluster has unsaved changes. Save them first?"),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Cancel) return false;
  if (answer == QMessageBox::Save) return m_cluster->save();
  return true;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!confirmDiscardCluster() || !confirmStopRun()) {
    event->ignore();
    return;
  }
  m_openJob->cancel();
  m_planJob->cancel();
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState(kLayoutVersion));
  settings.setValue(QStringLiteral("window/layoutVersion"), kLayoutVersion);
  event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (!event->mimeData()->hasUrls()) return;
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile() && kindOf(url.toLocalFile()) != FileKind::Unknown) {
      event->acceptProposedAction();
      return;
    }
}

void MainWindow::dropEvent(QDropEvent* event) {
  // Clusters open at once; a plan opens with the model dropped beside it (imported as planned),
  // else a model on its own. One model or plan at a time: the last one dropped wins.
  QString model, plan;
  for (const QUrl& url : event->mimeData()->urls()) {
    if (!url.isLocalFile()) continue;
    const QString f = url.toLocalFile();
    switch (kindOf(f)) {
      case FileKind::Model: model = f; break;
      case FileKind::Plan: plan = f; break;
      case FileKind::Cluster:
      case FileKind::Unknown: openFile(f); break;
    }
  }
  if (!plan.isEmpty())
    openPlan(plan, model);
  else if (!model.isEmpty())
    openModel(model);
  event->acceptProposedAction();
}

}  // namespace hap::studio
