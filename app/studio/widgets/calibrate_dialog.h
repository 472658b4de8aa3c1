// Run ▸ Calibrate… (issue 20, item 4): fits the cost model to the runs recorded in a profile store,
// as `hap calibrate` does (db::calibrateStore through CalibrateJob), and shows the accuracy before →
// after for the fitted and the held-out runs, each run's predictions, and the fitted terms; then
// "Re-plan with Calibrated Model" asks the main window to plan again under the new profile version.
//
// The dialog is modeless: the main window stays usable while it is up, and the plan made by the
// re-plan shows there (the Compare dock), with its one-line summary repeated here (showChange).
// The store is read and the fit runs off the GUI thread; every failure is said in the message
// line under the results (with the runs that were left out), never in a message box.
#pragma once

#include <QDialog>

#include <memory>

#include "app/studio/core/jobs/calibrate_job.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QTableView;

namespace hap::studio {

class CalibrateJob;
class CalibrationResultModel;
class CalibrationRunsModel;
class CalibrationTermsModel;

class CalibrateDialog : public QDialog {
  Q_OBJECT
 public:
  // The accuracy figures, one row each in the Accuracy box.
  enum AccuracyRow { StepMapeRow, StepPearsonRow, MemoryMapeRow, RankingRow, AccuracyRowCount };

  explicit CalibrateDialog(QWidget* parent = nullptr);
  ~CalibrateDialog() override;

  // Reads the store at `path` (its profiles and runs; off the GUI thread); another store than the
  // last clears the last fit.
  void setStorePath(const QString& path);
  QString storePath() const { return m_storePath; }

  // Fits with the dialog's choices (what "Fit" does). False when busy or no run is checked.
  bool fit();
  // The last fit (null before one, or after a failure).
  std::shared_ptr<const db::CalibrationResult> result() const { return m_result; }
  // The choices as a request (what fit() passes to db::calibrateStore).
  db::CalibrationRequest request() const;

  // Said under the results: what the re-plan changed (MainWindow calls it when the plan is made),
  // or why it could not re-plan (error).
  void showChange(const QString& text, bool error = false);

  // For tests and screenshots.
  CalibrateJob* job() const { return m_job; }
  CalibrationRunsModel* runsModel() const { return m_runs; }
  CalibrationResultModel* resultModel() const { return m_resultModel; }
  CalibrationTermsModel* termsModel() const { return m_terms; }
  QComboBox* profileCombo() const { return m_profile; }
  QComboBox* splitCombo() const { return m_split; }
  QCheckBox* saveCheck() const { return m_save; }
  QTableView* runsTable() const { return m_runsTable; }
  QTableView* resultTable() const { return m_resultTable; }
  QPushButton* fitButton() const { return m_fit; }
  QPushButton* replanButton() const { return m_replan; }
  // The "before → after" label of `row` for the fitted (heldOut false) or held-out runs.
  QLabel* accuracyLabel(bool heldOut, AccuracyRow row) const { return m_accuracy[heldOut ? 1 : 0][row]; }
  QLabel* accuracyHeader(bool heldOut) const { return m_accuracyHeader[heldOut ? 1 : 0]; }
  QLabel* exposureLabel() const { return m_exposure; }
  QLabel* savedLabel() const { return m_saved; }
  QLabel* messageLabel() const { return m_message; }
  QLabel* changeLabel() const { return m_change; }

 Q_SIGNALS:
  // The store's runs were read (failed or not).
  void candidatesLoaded();
  void fitFinished(bool ok);
  // "Re-plan with Calibrated Model": plan again with the cluster's `profile: <profile>` ("NAME@N"),
  // read from `storePath`.
  void replanRequested(const QString& profile, const QString& storePath);

 private:
  void onCandidates(const std::vector<db::CalibrationCandidate>& runs);
  void onFinished(std::shared_ptr<const db::CalibrationResult> result);
  void onFailed(const QString& message);
  void showResult();
  void showMessage(const QString& text, bool error);
  void updateButtons();
  void updateRunsHint();

  QString m_storePath;
  std::shared_ptr<const db::CalibrationResult> m_result;
  CalibrateJob* m_job = nullptr;
  CalibrationRunsModel* m_runs = nullptr;
  CalibrationResultModel* m_resultModel = nullptr;
  CalibrationTermsModel* m_terms = nullptr;

  QLabel* m_store = nullptr;
  QComboBox* m_profile = nullptr;
  QComboBox* m_split = nullptr;
  QCheckBox* m_save = nullptr;
  QTableView* m_runsTable = nullptr;
  QLabel* m_runsHint = nullptr;
  QPushButton* m_fit = nullptr;
  QLabel* m_busy = nullptr;
  QLabel* m_accuracy[2][AccuracyRowCount] = {};
  QLabel* m_accuracyHeader[2] = {};
  QTableView* m_termsTable = nullptr;
  QLabel* m_exposure = nullptr;
  QLabel* m_saved = nullptr;
  QTableView* m_resultTable = nullptr;
  QLabel* m_message = nullptr;
  QLabel* m_change = nullptr;
  QPushButton* m_replan = nullptr;
};

}  // namespace hap::studio
