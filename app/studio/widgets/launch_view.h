// The Run dock (issue 20, items 1 and 2): runs the shown plan on this machine, one hap-worker per
// plan device, through the runtime's launcher (LaunchJob), and follows it live from the profile
// store (RunMonitor); or writes launch scripts for a real cluster with the same worker options.
//
// Left: the worker's options (LaunchSettings) with a CPU share per rank (to emulate a slower
// device), the preflight check list ("preflightArea": one line "All 9 checks passed" that opens
// into a row per check, and Check), Start, Stop and Write Launch Scripts. Right: the run's
// status, progress toward the last step with the time left, throughput, mean step time and loss;
// charts of loss, step time and CPU time per step (per rank); every rank's log in its own tab
// beside "All", and the run's checkpoints in the last tab ("Checkpoints": Resume From, Export
// Model…, Open Folder). A failed rank is said in the error bar with its rank and error, and its
// tab is marked.
//
// Start (issue 20, item 1): validates the form, makes the run folder (launch_settings.h:
// runsDirectory/makeRunFolder), writes the plan there as Plan ▸ Plan File… does (plan.json) and
// reads it back: that plan, the file the workers run, is what the preflight checks (PreflightJob,
// off the GUI thread) and what the launch runs. A failed check refuses the start: the list opens
// on it, the error bar says which, the run folder is removed again, nothing is recorded and no
// process starts (warnings do not block). Check runs the same preflight against a copy of the
// plan in a temporary folder. busy() holds from Start's preflight until every rank is reaped.
//
// The run is recorded in the store (the Profiles dock's, else db::defaultPath()); its
// checkpoints go to the form's folder, else <run folder>/checkpoints. The worker is $HAP_WORKER
// when set, else the build's or installed hap-worker (runtime::resolveWorker).
//
// Checkpoints (issue 20, item 5): the shown run's checkpoint folder listed (CheckpointsModel),
// again when a "checkpoint:" line arrives and when the run ends. Resume From puts the selected
// checkpoint in the form (with its optimizer, and the steps that take the run to the last step it
// was going to reach). Export Model… asks for a .pt file and runs the plan's ranks with
// --resume CKPT --steps 0 --warmup 0 --export FILE through the same launcher (preflight first;
// recorded with its own label), then says where the model was written (exportFinished).
//
// The form persists in QSettings (group "launch"; not Resume and Export, which are for one run)
// and is restored when the view is made; the CPU shares are kept while the plan's rank count
// stays and reset to 1 when it changes.
//
// This file is the orchestration (start, check, stop, export, showRecordedRun): what it launches,
// checks and reads from the store is built in core (core/documents/launch_requests.h, from the
// form's LaunchSettings); the parts it composes show: LaunchForm (the options and CPU shares), PreflightList (the check list),
// RunMonitorView (status, progress, figures, charts, error bar), RunLogs (the log tabs, the
// checkpoints page last) and CheckpointsPanel (the checkpoints table and its buttons).
#pragma once

#include <QWidget>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "app/studio/core/models/checkpoints_model.h"
#include "app/studio/core/jobs/launch_job.h"
#include "app/studio/core/documents/launch_requests.h"
#include "app/studio/core/documents/launch_settings.h"
#include "app/studio/core/documents/plan_document.h"
#include "app/studio/core/jobs/preflight_job.h"
#include "app/studio/core/jobs/run_monitor.h"
#include "app/studio/widgets/checkpoints_panel.h"
#include "app/studio/widgets/launch_form.h"
#include "app/studio/widgets/preflight_list.h"
#include "app/studio/widgets/run_logs.h"
#include "app/studio/widgets/run_monitor_view.h"

class QChartView;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QLineSeries;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QScrollArea;
class QTabWidget;
class QTableView;
class QTemporaryDir;
class QToolButton;

namespace hap::studio {

class ErrorBar;

class LaunchView : public QWidget {
  Q_OBJECT
 public:
  explicit LaunchView(QWidget* parent = nullptr);
  ~LaunchView() override;  // stops a run and waits until every rank is reaped

  // The plan Start runs (null: none, and Start says why it is off) and the model file the workers
  // load (--model; "" = the plan's). Resets the CPU shares to one box per rank, each 1.
  void setPlan(std::shared_ptr<const PlanDocument> plan, const QString& modelPath);
  std::shared_ptr<const PlanDocument> plan() const { return m_plan; }
  // Where runs are recorded: called at each start ("" = db::defaultPath()).
  void setStorePathProvider(std::function<QString()> provider) { m_storePath = std::move(provider); }

  // The form, as settings (CPU shares included; no model path or default checkpoint folder).
  LaunchSettings settings() const;
  void setSettings(const LaunchSettings& s);

  // Start: validates the form, makes the run folder, writes the plan, runs the preflight, and
  // launches when no check failed. False (and the reason shown) when it cannot even begin;
  // otherwise preflightFinished(passed) follows, then (passed) runStarted and runFinished.
  bool start();
  // Stops a run (or cancels a start whose preflight is going: nothing is launched).
  void stop();
  // Stops a run and waits until every rank is reaped (closing the window).
  void stopAndWait();
  bool busy() const;
  // Check: the preflight of the form as Start would launch it, shown in the list (false when
  // busy or without a plan). preflightFinished follows.
  bool check();
  const std::vector<runtime::PreflightCheck>& preflightChecks() const { return m_preflightJob->checks(); }
  // Shows the metrics of run `run` recorded in the store at `storePath` (a finished run, later),
  // and the checkpoints of its folder when its settings name a --checkpoint-dir. False (and why
  // shown) while a run is going or when the store cannot be read.
  bool showRecordedRun(const QString& storePath, qint64 run);

  // Checkpoints: the shown run's checkpoint folder ("" when none).
  QString checkpointFolder() const;
  // Resume From: the checkpoint of `row` of checkpointsModel() into the form (see above).
  bool resumeFrom(int row);
  // Export: writes the model of `checkpoint` to `path` (a .pt file) with the plan's ranks. False
  // (and why shown) when it cannot begin; else exportFinished follows (not runStarted or
  // runFinished: it is no training run, and the shown run's charts stay).
  bool exportModel(const QString& checkpoint, const QString& path);

  // The form in QSettings (group "launch"), and back (done when the view is made).
  void saveSettings() const;
  void restoreSettings();
  // Writes launch scripts of `kind` (runtime::ScriptKind) into `dir` with the form's worker options;
  // "" on success, else why not. `force`: write into a folder that is not empty.
  QString writeLaunchScripts(int kind, const QString& dir, bool force);

  // The last launch's run folder ("" before any).
  QString runFolder() const { return m_runFolder; }
  QString outcomeMessage() const { return m_outcome; }

  // For tests, screenshots and the main window.
  QWidget* preflightArea() const { return m_preflight; }
  QToolButton* preflightSummary() const { return m_preflight->summary(); }  // checked: the list is open
  QScrollArea* preflightList() const { return m_preflight->list(); }
  QPushButton* checkButton() const { return m_preflight->checkButton(); }
  PreflightJob* preflightJob() const { return m_preflightJob; }
  QLineEdit* checkpointDirEdit() const { return m_form->checkpointDirEdit(); }
  QSpinBox* checkpointEveryBox() const { return m_form->checkpointEveryBox(); }
  QLineEdit* resumeEdit() const { return m_form->resumeEdit(); }
  QLineEdit* exportEdit() const { return m_form->exportEdit(); }
  QComboBox* optimizerBox() const { return m_form->optimizerBox(); }
  QWidget* checkpointsPage() const { return m_checkpointsPanel; }
  CheckpointsModel* checkpointsModel() const { return m_checkpoints; }
  QTableView* checkpointsTable() const { return m_checkpointsPanel->table(); }
  QPushButton* resumeButton() const { return m_checkpointsPanel->resumeButton(); }
  QPushButton* exportButton() const { return m_checkpointsPanel->exportButton(); }
  QPushButton* openFolderButton() const { return m_checkpointsPanel->openFolderButton(); }
  QLabel* checkpointsMessage() const { return m_checkpointsPanel->message(); }
  QPushButton* startButton() const { return m_start; }
  QPushButton* stopButton() const { return m_stop; }
  QToolButton* scriptsButton() const { return m_scripts; }
  const std::vector<QDoubleSpinBox*>& shareBoxes() const { return m_form->shareBoxes(); }
  const std::vector<QDoubleSpinBox*>& slowdownBoxes() const { return m_form->slowdownBoxes(); }
  QSpinBox* stepsBox() const { return m_form->stepsBox(); }
  QSpinBox* warmupBox() const { return m_form->warmupBox(); }
  QComboBox* dataBox() const { return m_form->dataBox(); }
  QLineEdit* dataPathEdit() const { return m_form->dataPathEdit(); }
  QProgressBar* progressBar() const { return m_monitorView->progressBar(); }
  QLabel* statusLabel() const { return m_monitorView->statusLabel(); }
  QLabel* timeLeftLabel() const { return m_monitorView->timeLeftLabel(); }
  QLabel* throughputLabel() const { return m_monitorView->throughputLabel(); }
  QLabel* meanStepLabel() const { return m_monitorView->meanStepLabel(); }
  ErrorBar* errorBar() const { return m_monitorView->errorBar(); }  // null before the first error
  QTabWidget* logTabs() const { return m_logs; }
  // rank -1: "All".
  QPlainTextEdit* log(int rank) const;
  QChartView* lossChart() const { return m_monitorView->lossChart(); }
  QChartView* stepTimeChart() const { return m_monitorView->stepTimeChart(); }
  QChartView* cpuTimeChart() const { return m_monitorView->cpuTimeChart(); }
  QLineSeries* lossSeries() const { return m_monitorView->lossSeries(); }
  const std::vector<QLineSeries*>& stepTimeSeries() const { return m_monitorView->stepTimeSeries(); }
  const std::vector<QLineSeries*>& cpuTimeSeries() const { return m_monitorView->cpuTimeSeries(); }
  LaunchJob* job() const { return m_job; }
  RunMonitor* monitor() const { return m_monitor; }
  // The parts.
  LaunchForm* form() const { return m_form; }
  RunMonitorView* monitorView() const { return m_monitorView; }
  RunLogs* logs() const { return m_logs; }
  CheckpointsPanel* checkpointsPanel() const { return m_checkpointsPanel; }

 Q_SIGNALS:
  void busyChanged(bool busy);
  // A preflight ended (Check, Start's or Export's), once per preflight. When Start's or Export's
  // passed, it comes before any process starts, while busy() still holds (a receiver may Stop).
  void preflightFinished(bool passed);
  void runStarted(qint64 run);
  void runFinished(const hap::studio::LaunchOutcome& outcome);
  // Export Model ended: `path` written (ok), or not (why in the error bar and outcomeMessage()).
  void exportFinished(bool ok, const QString& path);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  QWidget* makeLeftPanel();
  void resetMonitor(int ranks);
  void onStarted(qint64 run, int port, int ranks, const QString& commandLine);
  void onLines(const LaunchLines& lines);
  void onFinished(const LaunchOutcome& outcome);
  void onMonitorUpdated();
  void updateButtons();
  void showError(const QString& message);
  void hideError();
  void chooseScripts(int kind);
  // A launch waiting for its preflight (launch_requests.h: the plan read back from the file the
  // workers run, the launch and preflight requests).
  struct PendingLaunch : PreparedLaunch {
    enum class Kind { Check, Start, Export } kind = Kind::Check;
    QString checkpoint, exportPath;  // Export
    bool cancelled = false;          // Stop came first: nothing is launched
  };
  // The form's settings with the model the workers load (the dock's, else the plan's).
  LaunchSettings launchSettings() const;
  // A plan file in a new scratch folder (m_scratch; Check and Export, which make no run folder);
  // "", with the error shown, when the folder cannot be made.
  QString scratchPlanPath();
  QString storePath() const;  // the provider's ("" = the default store)
  void runPreflight(PendingLaunch pending);
  void onPreflightFinished(bool passed);
  void launch(PendingLaunch p);
  void syncBusy();
  void exportModelDialog(int row);
  void updateCheckpointButtons();

  std::shared_ptr<const PlanDocument> m_plan;
  QString m_modelPath;
  std::function<QString()> m_storePath;
  QString m_runFolder, m_dbPath, m_outcome;
  int m_ranks = 0;
  int64_t m_globalBatch = 0;

  LaunchJob* m_job = nullptr;
  RunMonitor* m_monitor = nullptr;
  PreflightJob* m_preflightJob = nullptr;
  CheckpointsModel* m_checkpoints = nullptr;
  std::optional<PendingLaunch> m_pending;
  std::unique_ptr<QTemporaryDir> m_scratch;  // Check's and Export's plan file
  bool m_exporting = false;  // the launch going is an export
  QString m_exportPath;
  bool m_lastBusy = false;

  // The parts.
  LaunchForm* m_form = nullptr;
  PreflightList* m_preflight = nullptr;
  QPushButton* m_start = nullptr;
  QPushButton* m_stop = nullptr;
  QToolButton* m_scripts = nullptr;
  RunMonitorView* m_monitorView = nullptr;
  RunLogs* m_logs = nullptr;
  CheckpointsPanel* m_checkpointsPanel = nullptr;
};

}  // namespace hap::studio
