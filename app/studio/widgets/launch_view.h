// The Run dock (issue 20, items 1 and 2): runs the shown plan on this machine, one hap-worker per
// plan device, through the runtime's launcher (LaunchJob), and follows it live from the profile
// store (RunMonitor); or writes launch scripts for a real cluster with the same worker options.
//
// Left: the worker's options (LaunchSettings) with a CPU share per rank (to emulate a slower
// device), a place for the preflight check list ("preflightArea"), Start, Stop and Write Launch
// Scripts. Right: the run's status, progress toward the last step with the time left, throughput,
// mean step time and loss; charts of loss, step time and CPU time per step (per rank); every
// rank's log in its own tab beside "All". A failed rank is said in the error bar with its rank and
// error, and its tab is marked.
//
// Each launch gets a run folder (launch_settings.h: runsDirectory/makeRunFolder) holding the plan
// as Plan ▸ Plan File… writes it (plan.json) and, unless another folder is given, the
// checkpoints; the run is recorded in the store (the Profiles dock's, else db::defaultPath()).
// The worker is $HAP_WORKER when set, else the build's or installed hap-worker (rt::resolveWorker).
#pragma once

#include <QFrame>
#include <QWidget>

#include <functional>
#include <memory>
#include <vector>

#include "app/studio/core/launch_job.h"
#include "app/studio/core/launch_settings.h"
#include "app/studio/core/plan_document.h"
#include "app/studio/core/run_monitor.h"

class QBoxLayout;
class QChart;
class QChartView;
class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QLineEdit;
class QLineSeries;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTabWidget;
class QToolButton;
class QValueAxis;

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

  // Start: validates the form, makes the run folder, writes the plan, launches. False (and the
  // reason shown) when it cannot start; the launch's own failures come as runFinished.
  bool start();
  void stop();
  // Stops a run and waits until every rank is reaped (closing the window).
  void stopAndWait();
  bool busy() const { return m_job->busy(); }
  // Shows the metrics of run `run` recorded in the store at `storePath` (a finished run, later).
  void showRecordedRun(const QString& storePath, qint64 run);
  // Writes launch scripts of `kind` (rt::ScriptKind) into `dir` with the form's worker options;
  // "" on success, else why not. `force`: write into a folder that is not empty.
  QString writeLaunchScripts(int kind, const QString& dir, bool force);

  // The last launch's run folder ("" before any).
  QString runFolder() const { return m_runFolder; }
  QString outcomeMessage() const { return m_outcome; }

  // For tests, screenshots and the main window.
  QWidget* preflightArea() const { return m_preflight; }
  QPushButton* startButton() const { return m_start; }
  QPushButton* stopButton() const { return m_stop; }
  QToolButton* scriptsButton() const { return m_scripts; }
  const std::vector<QDoubleSpinBox*>& shareBoxes() const { return m_shares; }
  QSpinBox* stepsBox() const { return m_steps; }
  QSpinBox* warmupBox() const { return m_warmup; }
  QComboBox* dataBox() const { return m_data; }
  QLineEdit* dataPathEdit() const { return m_dataPath; }
  QProgressBar* progressBar() const { return m_progress; }
  QLabel* statusLabel() const { return m_status; }
  QLabel* timeLeftLabel() const { return m_timeLeft; }
  QLabel* throughputLabel() const { return m_throughput; }
  QLabel* meanStepLabel() const { return m_meanStep; }
  ErrorBar* errorBar() const { return m_errorBar; }  // null before the first error
  QTabWidget* logTabs() const { return m_logs; }
  // rank -1: "All".
  QPlainTextEdit* log(int rank) const;
  QChartView* lossChart() const { return m_lossView; }
  QChartView* stepTimeChart() const { return m_stepView; }
  QChartView* cpuTimeChart() const { return m_cpuView; }
  QLineSeries* lossSeries() const { return m_lossSeries; }
  const std::vector<QLineSeries*>& stepTimeSeries() const { return m_stepSeries; }
  const std::vector<QLineSeries*>& cpuTimeSeries() const { return m_cpuSeries; }
  LaunchJob* job() const { return m_job; }
  RunMonitor* monitor() const { return m_monitor; }

 Q_SIGNALS:
  void busyChanged(bool busy);
  void runStarted(qint64 run);
  void runFinished(const hap::studio::LaunchOutcome& outcome);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  QWidget* makeForm();
  QWidget* makeMonitor();
  void rebuildShares(int ranks);
  void resetMonitor(int ranks);
  void rebuildCharts(int ranks);
  void onStarted(qint64 run, int port, int ranks, const QString& commandLine);
  void onLines(const LaunchLines& lines);
  void onFinished(const LaunchOutcome& outcome);
  void onMonitorUpdated();
  void updateButtons();
  void showError(const QString& message);
  void hideError();
  void chooseScripts(int kind);

  std::shared_ptr<const PlanDocument> m_plan;
  QString m_modelPath;
  std::function<QString()> m_storePath;
  QString m_runFolder, m_dbPath, m_outcome;
  int m_ranks = 0;
  int64_t m_globalBatch = 0;

  LaunchJob* m_job = nullptr;
  RunMonitor* m_monitor = nullptr;

  // Form.
  QSpinBox* m_steps = nullptr;
  QSpinBox* m_warmup = nullptr;
  QSpinBox* m_seed = nullptr;
  QSpinBox* m_threads = nullptr;
  QSpinBox* m_timeout = nullptr;
  QLineEdit* m_label = nullptr;
  QComboBox* m_data = nullptr;
  QLineEdit* m_dataPath = nullptr;
  QToolButton* m_dataBrowse = nullptr;
  QComboBox* m_tokenDtype = nullptr;
  QComboBox* m_optimizer = nullptr;
  QLineEdit* m_lr = nullptr;
  QDoubleSpinBox* m_momentum = nullptr;
  QLineEdit* m_weightDecay = nullptr;
  QDoubleSpinBox* m_clipNorm = nullptr;
  QLineEdit* m_checkpointDir = nullptr;
  QSpinBox* m_checkpointEvery = nullptr;
  QLineEdit* m_resume = nullptr;
  QLineEdit* m_export = nullptr;
  QWidget* m_sharesBox = nullptr;
  QGridLayout* m_sharesGrid = nullptr;
  QLabel* m_sharesHint = nullptr;
  std::vector<QDoubleSpinBox*> m_shares;
  QFrame* m_preflight = nullptr;
  QPushButton* m_start = nullptr;
  QPushButton* m_stop = nullptr;
  QToolButton* m_scripts = nullptr;

  // Monitor.
  ErrorBar* m_errorBar = nullptr;
  QBoxLayout* m_monitorColumn = nullptr;
  QLabel* m_status = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_timeLeft = nullptr;
  QLabel* m_throughput = nullptr;
  QLabel* m_meanStep = nullptr;
  QLabel* m_loss = nullptr;
  QLabel* m_folder = nullptr;
  QLabel* m_rankKey = nullptr;
  QSplitter* m_chartsSplit = nullptr;
  bool m_splitSized = false;
  QChartView* m_lossView = nullptr;
  QChartView* m_stepView = nullptr;
  QChartView* m_cpuView = nullptr;
  QLineSeries* m_lossSeries = nullptr;
  std::vector<QLineSeries*> m_stepSeries, m_cpuSeries;
  QValueAxis* m_lossX = nullptr;
  QValueAxis* m_lossY = nullptr;
  QValueAxis* m_stepX = nullptr;
  QValueAxis* m_stepY = nullptr;
  QValueAxis* m_cpuX = nullptr;
  QValueAxis* m_cpuY = nullptr;
  QTabWidget* m_logs = nullptr;
  std::vector<QPlainTextEdit*> m_rankLogs;
  QPlainTextEdit* m_allLog = nullptr;
};

}  // namespace hap::studio
