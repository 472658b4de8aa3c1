// The Measured view (issue 20 item 3; item 5's "open a finished run's metrics later"): a run
// recorded in the profile store against the prediction of the plan it ran.
//
// At the top a chooser of the store's runs (of the shown plan's model when a plan is shown;
// newest first), then a header line (run id, status, label, ranks, steps, when), a line about
// the run's plan, and the table of core/measured_comparison_model.h: predicted and measured step
// time, computation and communication per device, with measured / predicted.
//
// The run's plan and the shown plan: the table always compares the run with its own plan (the
// one stored with it). When the app shows that very plan (core: planIdentity), the run's
// measured timeline (core: measuredTrace, labelled from the shown plan) is offered to the stages
// view through traceReady; when it does not, the plan line says so and "Open the Run's
// Plan" writes the stored plan to a file (the temporary folder's hap-studio-runs/) and asks for it
// to be opened (openPlanRequested). A trace offered earlier is withdrawn (traceCleared) when the
// run or the plan changes so that it no longer applies.
//
// Nothing here writes to the store; errors (no store, no such run, a run without a plan, stage
// records of another plan) are said in the view, never thrown.
#pragma once

#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

#include "app/studio/core/models/measured_comparison_model.h"
#include "app/studio/core/documents/plan_document.h"

class QComboBox;
class QLabel;
class QPushButton;
class QTableView;
class QToolButton;

namespace hap::studio {

class MeasuredView : public QWidget {
  Q_OBJECT

 public:
  explicit MeasuredView(QWidget* parent = nullptr);

  QString storePath() const { return m_storePath; }
  // Lists the runs of the store at `path` (the shown run stays shown).
  void setStorePath(const QString& path);
  // The plan the app shows (nullptr: none): filters the chooser, decides whether the run's trace
  // applies.
  void setPlan(std::shared_ptr<const PlanDocument> plan);
  // Reads the run list and the shown run again.
  void reload();
  // Lists the runs again and, unless the shown run is of the shown plan, shows the newest run of
  // that plan (else of its model); then puts the focus on the chooser.
  void chooseRun();
  // Lists the runs if the store or the plan changed while the view was off screen (the chooser is
  // filled lazily: listing reads the store).
  void ensureChooser();

  const MeasuredRun& run() const { return m_run; }
  // The app shows the run's plan, and the run's measured trace (if its stages fit) is offered.
  bool showsRunPlan() const { return m_showsRunPlan; }
  const std::optional<plan::Timeline>& measuredTrace() const { return m_trace; }
  QString traceName() const;

  // For tests and the main window.
  MeasuredComparisonModel* model() const { return m_model; }
  QComboBox* runCombo() const { return m_combo; }
  QLabel* header() const { return m_header; }
  QLabel* planLine() const { return m_planLine; }
  QLabel* message() const { return m_message; }
  QPushButton* openPlanButton() const { return m_openPlan; }
  QTableView* table() const { return m_table; }

 public Q_SLOTS:
  // Shows run `runId` of the store at `storePath` (which becomes this view's store).
  void showRun(const QString& storePath, qint64 runId);

 protected:
  void showEvent(QShowEvent* event) override;

 Q_SIGNALS:
  // The run's measured timeline for the stages view, replacing any trace offered before.
  void traceReady(const QString& name, const hap::plan::Timeline& timeline);
  // The trace offered before no longer applies.
  void traceCleared();
  // Open the run's plan (written to `planPath`) with the model at `modelPath` ("" when it is gone).
  void openPlanRequested(const QString& planPath, const QString& modelPath);
  void runShown();  // after every showRun, failed or not

 private:
  void fillChooser();
  void requestChooser();  // fills it now when on screen, else when next shown
  const PlanIdentity& identity();  // of m_plan, computed when first needed
  void updateHeader();
  void updatePlanMatch();  // the plan line, the trace
  void openRunPlan();

  QString m_storePath;
  std::shared_ptr<const PlanDocument> m_plan;
  std::optional<PlanIdentity> m_identity;  // of m_plan
  bool m_chooserStale = true;
  MeasuredRun m_run;
  bool m_showsRunPlan = false;
  bool m_traceOffered = false;
  std::optional<plan::Timeline> m_trace;
  std::vector<RunChoice> m_choices;

  MeasuredComparisonModel* m_model = nullptr;
  QComboBox* m_combo = nullptr;
  QToolButton* m_refresh = nullptr;
  QLabel* m_header = nullptr;
  QLabel* m_planLine = nullptr;
  QPushButton* m_openPlan = nullptr;
  QLabel* m_message = nullptr;
  QTableView* m_table = nullptr;
  QLabel* m_legend = nullptr;
};

}  // namespace hap::studio
