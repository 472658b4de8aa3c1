// Run ▸ Tune… (issue 30, item 3): the closed loop of `hap tune` on the open model and cluster,
// from the app. Says what is tuned (the model, the cluster, the Profiles dock's store, the Run
// dock's CPU shares and slowdowns, read-only: they are changed in the Run dock), takes the steps,
// warm-up and rounds, and runs the loop (TuneJob, off the GUI thread) with Start and Stop. While it
// runs: a chart of each plan's predicted and measured step per round, the table of the runs
// (TuneRoundsModel, as `hap tune` prints it) and a log of the loop's messages. At the end: the
// chosen plan, its measured step and its ratio to the best baseline measured, and "Open Tuned
// Plan", which asks the main window to open it (tunedPlanReady asks the same once, when the loop
// succeeds).
//
// The dialog is modeless and made once: closing it hides it while the loop goes on; destroying it
// stops the loop and waits for it (no worker left). Every failure is said in the message line,
// never in a message box.
#pragma once

#include <QDialog>

#include <functional>
#include <memory>

#include "app/studio/core/jobs/tune_job.h"

class QChartView;
class QLabel;
class QLineSeries;
class QPlainTextEdit;
class QPushButton;
class QScatterSeries;
class QSpinBox;
class QTableView;
class QValueAxis;

namespace hap::studio {

class TuneRoundsModel;

class TuneDialog : public QDialog {
  Q_OBJECT
 public:
  explicit TuneDialog(QWidget* parent = nullptr);
  ~TuneDialog() override;  // stops the loop and waits for it

  // What Start tunes (refused while the loop runs: the running one stays shown). The steps,
  // warm-up and rounds of `s` are the boxes' starting values the first time only.
  bool setSetup(const TuneSetup& s);
  const TuneSetup& setup() const { return m_setup; }
  // Where Start reads the setup again first (the main window: what it has open when Start is
  // clicked, so that shares changed in the Run dock meanwhile are the ones run).
  void setSetupProvider(std::function<TuneSetup()> provider) { m_provider = std::move(provider); }

  // Start: the loop on the setup (the provider's, when there is one) with the boxes' steps,
  // warm-up and rounds. False, saying why in the message line, when busy or it cannot be prepared.
  bool start();
  void stop();
  bool busy() const;

  // The last loop's result (null before one succeeded), its tuned plan file and its folder.
  std::shared_ptr<const tune::TuneResult> result() const { return m_result; }
  QString tunedPlanPath() const { return m_tunedPlan; }
  QString folder() const { return m_folder; }

  // For tests and screenshots.
  TuneJob* job() const { return m_job; }
  TuneRoundsModel* roundsModel() const { return m_rounds; }
  QTableView* roundsTable() const { return m_table; }
  QChartView* chartView() const { return m_chart; }
  QPlainTextEdit* log() const { return m_log; }
  QSpinBox* stepsBox() const { return m_steps; }
  QSpinBox* warmupBox() const { return m_warmup; }
  QSpinBox* roundsBox() const { return m_roundsBox; }
  QPushButton* startButton() const { return m_start; }
  QPushButton* stopButton() const { return m_stop; }
  QPushButton* openPlanButton() const { return m_openPlan; }
  QLabel* targetLabel() const { return m_target; }
  QLabel* emulationLabel() const { return m_emulation; }
  QLabel* resultLabel() const { return m_resultLabel; }
  QLabel* messageLabel() const { return m_message; }
  // The number of points drawn for measured (true) or predicted (false) steps.
  int chartPoints(bool measured) const;

 Q_SIGNALS:
  // The loop succeeded: its plan is at `planPath`, made for `modelPath` (the main window opens it).
  void tunedPlanReady(const QString& planPath, const QString& modelPath);
  // "Open Tuned Plan".
  void openPlanRequested(const QString& planPath, const QString& modelPath);
  // The loop ended (after tunedPlanReady when it succeeded).
  void tuneFinished(bool ok);

 private:
  void showSetup();
  void updateButtons();
  void appendLog(const QString& line);
  void showMessage(const QString& text, bool error);
  void onRunFinished(const tune::TuneRun& run);
  void onFinished(std::shared_ptr<const tune::TuneResult> result);
  void onFailed(const QString& message);
  void redrawChart();
  struct Series;
  Series& seriesOf(const QString& strategy);

  TuneSetup m_setup;
  std::function<TuneSetup()> m_provider;
  bool m_setupGiven = false;
  QString m_runningModel;  // the model of the running (or last) loop
  QString m_folder, m_tunedPlan;
  std::shared_ptr<const tune::TuneResult> m_result;
  TuneJob* m_job = nullptr;
  TuneRoundsModel* m_rounds = nullptr;

  QLabel* m_target = nullptr;
  QLabel* m_emulation = nullptr;
  QSpinBox* m_steps = nullptr;
  QSpinBox* m_warmup = nullptr;
  QSpinBox* m_roundsBox = nullptr;
  QPushButton* m_start = nullptr;
  QPushButton* m_stop = nullptr;
  QLabel* m_busy = nullptr;
  QChartView* m_chart = nullptr;
  QValueAxis* m_xAxis = nullptr;
  QValueAxis* m_yAxis = nullptr;
  std::vector<std::unique_ptr<Series>> m_series;
  QScatterSeries* m_chosen = nullptr;
  QTableView* m_table = nullptr;
  QPlainTextEdit* m_log = nullptr;
  QLabel* m_resultLabel = nullptr;
  QLabel* m_message = nullptr;
  QPushButton* m_openPlan = nullptr;
};

}  // namespace hap::studio
