// The main window: the graph in the middle; model summary, properties, cluster, plan and problems
// as dockable panels; menus with standard shortcuts; a status bar with the open model and any
// background work. It owns no data logic: it opens files through OpenJob, hands the documents to
// the panels, and keeps the selection in step between them. Window layout and recent files persist
// through QSettings.
#pragma once

#include <QMainWindow>
#include <QPointer>
#include <QStringList>
#include <memory>

#include "app/studio/core/documents/model_document.h"
#include "app/studio/core/documents/selection.h"

class QAction;
class QDockWidget;
class QLabel;
class QListWidget;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QToolButton;

namespace hap::studio {

class BaselinesView;
class CalibrateDialog;  // Calibrate
class ClusterPanel;
class CompareView;
class ErrorBar;
class ExplainView;
class FindBar;
class GraphView;
class LaunchView;
class MeasuredView;  // Measured
class OpenJob;
class PlanHistoryModel;
class PlanJob;
class PlanPanel;
class PropertiesPanel;
class RatiosView;
class SearchProgressModel;
class SearchView;
class StagesView;
class SummaryPanel;
class TuneDialog;  // Tune
struct TuneSetup;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // File kinds by extension: .pt/.pth/.zip models, .yaml/.yml clusters, .json plans.
  enum class FileKind { Model, Cluster, Plan, Unknown };
  static FileKind kindOf(const QString& path);

  // Opening, as the menu, drag and drop and the command line do. Models and plans open in the
  // background (modelOpened/planOpened/openFailed tell when); clusters open at once.
  void openModel(const QString& path, const std::vector<import::InputSpec>& inputOverrides = {});
  bool openCluster(const QString& path);
  // Opens a plan and its model as planned: `modelPath`, else the open model, else the plan's own.
  void openPlan(const QString& path, const QString& modelPath = {});
  void openFile(const QString& path);  // by kind

  // Plans the open model on the cluster panel's cluster with the Plan panel's options, off the GUI
  // thread (planFinished/planFailed/planCancelled tell how it ended). Returns false, saying why,
  // when there is no model or no cluster.
  bool startPlanning();
  void cancelPlanning();
  bool isPlanning() const;
  // Shows `plan` (one of the plans made or opened this session) in every view.
  void showPlan(std::shared_ptr<const PlanDocument> plan);

  // The open documents (null when none).
  std::shared_ptr<const ModelDocument> model() const { return m_model; }
  std::shared_ptr<const PlanDocument> plan() const { return m_plan; }
  QString lastError() const { return m_lastError; }
  QStringList recentFiles() const;
  OpenJob* openJob() const { return m_openJob; }

  // The panels, for tests and for the screenshot script.
  GraphView* graphView() const { return m_graphView; }
  PropertiesPanel* propertiesPanel() const { return m_properties; }
  SummaryPanel* summaryPanel() const { return m_summary; }
  ClusterPanel* clusterPanel() const { return m_cluster; }
  PlanPanel* planPanel() const { return m_planPanel; }
  PlanJob* planJob() const { return m_planJob; }
  SearchView* searchView() const { return m_searchView; }
  SearchProgressModel* searchProgress() const { return m_searchModel; }
  StagesView* stagesView() const { return m_stages; }
  RatiosView* ratiosView() const { return m_ratios; }
  BaselinesView* baselinesView() const { return m_baselines; }
  ExplainView* explainView() const { return m_explain; }
  CompareView* compareView() const { return m_compare; }
  PlanHistoryModel* planHistory() const { return m_history; }
  FindBar* findBar() const { return m_findBar; }
  // An action by its stable id ("file.open", "edit.find", "view.fit", ...; see createActions).
  QAction* action(const QString& id) const;

 Q_SIGNALS:
  void modelOpened();
  void planOpened();
  void openFailed(const QString& message);
  void planFinished();
  void planFailed(const QString& message);
  void planCancelled();

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void createActions();
  void createMenus();
  void createDocks();
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void showError(const QString& message);
  void setModel(std::shared_ptr<const ModelDocument> model);
  void setSelection(const Selection& s);
  void updateTitle();
  void updateProblems();
  void showProblemsDock();  // shown at a readable size when it was hidden
  // View ▸ Graph Only: on, every panel shown is hidden (the graph has the window); off, they come
  // back with the same tabs on top. A panel that shows itself meanwhile (a plan finished, a run
  // started) ends it, and the others come back with it.
  void setGraphOnly(bool on);
  void onOpenFailed(const QString& path, const OpenError& error);
  QAction* addAction(const QString& id, const QString& text, const QKeySequence& shortcut = {});
  bool confirmDiscardCluster();
  void createPlanViews();
  void createPlanActions();
  void onPlanFinished(std::shared_ptr<const PlanDocument> plan, double seconds);
  // Every action's enabled state (and the Plan button's), from what is open (action_state.h);
  // called whenever the model, the cluster, the plan shown, planning or a run changes.
  void updateActions();
  // A file that did not open: the error bar, and an entry in Problems that stays until a file of
  // that kind opens (the menu's Open, drag and drop and the command line all report so).
  void reportOpenFailure(FileKind kind, const QString& path, const QString& message);
  // Export helpers: ask for a file, write it through the CLI's code, report the outcome.
  void exportPlanFile();
  void exportPlanText(bool trace);
  void exportLaunch(int kind);
  QString ensurePlanFile();  // the shown plan's file, exporting it first when it has none
  void setShownPlanPath(const QString& path);
  void refreshPlanView(QDockWidget* dock);
  void setCostDevice(int rank);  // -1: the bottleneck  // fills a plan view with the shown plan once it is visible

  OpenJob* m_openJob = nullptr;
  GraphView* m_graphView = nullptr;
  FindBar* m_findBar = nullptr;
  ErrorBar* m_errorBar = nullptr;
  PropertiesPanel* m_properties = nullptr;
  SummaryPanel* m_summary = nullptr;
  ClusterPanel* m_cluster = nullptr;
  QPlainTextEdit* m_planText = nullptr;
  QListWidget* m_problems = nullptr;
  QDockWidget* m_problemsDock = nullptr;
  std::vector<QPointer<QDockWidget>> m_hiddenForGraph, m_raisedForGraph;  // setGraphOnly's record
  bool m_togglingGraphOnly = false;
  QMenu* m_recentMenu = nullptr;
  QMenu* m_viewMenu = nullptr;
  QLabel* m_statusModel = nullptr;
  QLabel* m_statusLayout = nullptr;
  QProgressBar* m_progress = nullptr;
  QToolButton* m_cancel = nullptr;
  std::map<QString, QAction*> m_actions;
  PlanJob* m_planJob = nullptr;
  SearchProgressModel* m_searchModel = nullptr;
  PlanPanel* m_planPanel = nullptr;
  PlanHistoryModel* m_history = nullptr;
  SearchView* m_searchView = nullptr;
  StagesView* m_stages = nullptr;
  RatiosView* m_ratios = nullptr;
  BaselinesView* m_baselines = nullptr;
  ExplainView* m_explain = nullptr;
  CompareView* m_compare = nullptr;
  QDockWidget* m_searchDock = nullptr;
  QDockWidget* m_stagesDock = nullptr;
  std::vector<QAction*> m_planModeActions;  // colour by the plan's forms, variants, segments, cost
  int m_plansMade = 0;
  QMenu* m_costDeviceMenu = nullptr;
  int m_costDevice = -1;  // the rank "Device cost" colours by (-1: the plan's bottleneck)
  std::vector<QDockWidget*> m_planDocks;  // stages, ratios, baselines, explain
  quint64 m_planGeneration = 0;           // bumped by showPlan
  std::map<QWidget*, quint64> m_filledGeneration;

  std::shared_ptr<const ModelDocument> m_model;
  std::shared_ptr<const PlanDocument> m_plan;
  QString m_lastError;
  Selection m_selection;
  struct OpenFailure {
    FileKind kind;
    QString path, message;
  };
  std::vector<OpenFailure> m_openFailures;  // listed first in Problems (reportOpenFailure)

  // ---- Calibrate (issue 20, item 4; main_window_calibrate.cpp) ----
 public:
  // Run ▸ Calibrate…: shows the calibrate dialog (modeless, made once) on the Profiles dock's store.
  void openCalibrateDialog();
  CalibrateDialog* calibrateDialog() const { return m_calibrateDialog; }
  // Gives the cluster panel's cluster `profile: <profile>` ("NAME@N", read from `storePath`), plans
  // the open model again, and once that plan is made compares it with the plan shown now in the
  // Compare dock, with a one-line summary of what changed. False, saying why, when it cannot plan.
  bool replanWithProfile(const QString& profile, const QString& storePath);
  // Gives the cluster panel's cluster `profile: <profile>`, priced from `storePath` from now on
  // (Profiles ▸ Use for the Open Cluster, and the re-plan above). False with `why` when there is
  // no cluster or the field refuses the value.
  bool setClusterProfile(const QString& profile, const QString& storePath, QString* why);
  QString calibrationChange() const { return m_calibrationChange; }
 Q_SIGNALS:
  // replanWithProfile's plan was made (summary: what changed) or not (ok false, summary: why).
  void calibratedReplanFinished(bool ok, const QString& summary);
 private:
  QAction* createCalibrateAction();  // "run.calibrate", made and registered on first call
  void onCalibratedReplanEnded(bool ok, const QString& why);
  CalibrateDialog* m_calibrateDialog = nullptr;
  bool m_calibratedReplan = false;  // the plan being made is replanWithProfile's
  std::shared_ptr<const PlanDocument> m_beforeCalibration;  // the plan shown when it began
  QString m_calibratedProfile, m_calibrationChange;
  // ---- end Calibrate ----

  // ---- Run dock: launch the shown plan and watch it (issue 20, items 1 and 2; main_window_launch.cpp) ----
 public:
  LaunchView* launchView() const { return m_launch; }

 private:
  void createLaunchDock();     // the dock "dock.run", tabbed with the plan views
  void createLaunchActions();  // run.launch (Ctrl+F5), run.stop (Shift+F5)
  void updateLaunchPlan();     // the shown plan to the Run dock
  bool confirmStopRun();       // closing: stop a run going (every rank reaped), or refuse the close
  LaunchView* m_launch = nullptr;
  QDockWidget* m_runDock = nullptr;
  // ---- end Run dock ----

  // ---- Measured: predicted vs measured (issue 20, items 3 and 5; main_window_measured.cpp) ----
 public:
  MeasuredView* measuredView() const { return m_measured; }
  // Shows run `runId` of the store at `storePath` in the Measured dock (shown and raised); its
  // measured trace goes to the stages view when the shown plan is the run's.
  void showMeasuredRun(const QString& storePath, qint64 runId);

 private:
  void createMeasuredView();   // the dock "dock.measured", tabbed with the plan views; run.showMeasured
  void updateMeasuredPlan();   // the shown plan to the Measured dock (showPlan)
  MeasuredView* m_measured = nullptr;
  QDockWidget* m_measuredDock = nullptr;
  // ---- end Measured ----

  // ---- Tune: the closed loop of hap tune (issue 30, item 3; main_window_tune.cpp) ----
 public:
  // Run ▸ Tune…: shows the tune dialog (modeless, made once) on what the window has open; when its
  // loop succeeds, the chosen plan is opened here (openPlan, with the tuned model).
  void openTuneDialog();
  TuneDialog* tuneDialog() const { return m_tuneDialog; }
  // What a tune started now would tune: the model, the cluster panel's cluster, the Profiles
  // dock's store, the Run dock's CPU shares and slowdowns.
  TuneSetup tuneSetup() const;

 private:
  QAction* createTuneAction();  // "run.tune", made and registered on first call
  TuneDialog* m_tuneDialog = nullptr;
  // ---- end Tune ----
};

}  // namespace hap::studio
