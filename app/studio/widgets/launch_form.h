// The Run dock's options form (issue 20, item 1): hap-worker's options as LaunchSettings (its
// runtime::WorkerOptions: steps,
// warm-up, seed, threads, timeout, label; data source and file; optimizer; checkpoint folder and
// interval, resume, export) and, per rank, a CPU share and a slowdown, the two ways to emulate a
// slower device on this machine (hap launch --cpu-share, --slowdown).
// It starts nothing and emits nothing: the Run dock (LaunchView) reads settings() when it starts.
//
// Contract:
// - One share box and one slowdown box per device of the plan (setDevices). The shares start at the
//   shares given (emulatedShares: the cluster's relative speeds where it is emulated on this
//   host), the slowdowns at 1; both stay while the rank count does, and are reset when it changes.
// - settings() is the form as it stands (CPU shares included; no model path, no default checkpoint
//   folder); setSettings(settings()) changes nothing.
// - The form persists in QSettings (group "launch"; not Resume and Export, which are for one run):
//   saveSettings(), and restoreSettings() when the dock is made. The learning rate and weight decay
//   come back as typed ("3e-4" stays so), even when they do not parse.
#pragma once

#include <QWidget>

#include <vector>

#include "app/studio/core/documents/launch_settings.h"
#include "app/studio/core/documents/plan_document.h"

class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QLineEdit;
class QScrollArea;
class QSpinBox;
class QToolButton;

namespace hap::studio {

class LaunchForm : public QWidget {
  Q_OBJECT
 public:
  explicit LaunchForm(QWidget* parent = nullptr);

  // One CPU share box per rank of the plan (its device's type and machine in the tooltip); none
  // without a plan.
  // `shares`: the starting CPU share per rank (empty: 1 each).
  void setDevices(const std::vector<plan::PlanDevice>& devices, const std::vector<double>& shares = {});

  LaunchSettings settings() const;
  void setSettings(const LaunchSettings& s);
  // Resume From: `checkpoint` into Resume from, its `optimizer` (when the form has it), and the
  // warm-up and measured steps that take the run on from it.
  void setResume(const QString& checkpoint, const QString& optimizer, int64_t warmup, int64_t steps);

  void saveSettings() const;
  void restoreSettings();

  // The width the fields need beside a vertical scroll bar (the form never scrolls sideways).
  int fittingWidth() const;

  QSpinBox* stepsBox() const { return m_steps; }
  QSpinBox* warmupBox() const { return m_warmup; }
  QComboBox* dataBox() const { return m_data; }
  QLineEdit* dataPathEdit() const { return m_dataPath; }
  QComboBox* optimizerBox() const { return m_optimizer; }
  QLineEdit* checkpointDirEdit() const { return m_checkpointDir; }
  QSpinBox* checkpointEveryBox() const { return m_checkpointEvery; }
  QLineEdit* resumeEdit() const { return m_resume; }
  QLineEdit* exportEdit() const { return m_export; }
  const std::vector<QDoubleSpinBox*>& shareBoxes() const { return m_shares; }
  const std::vector<QDoubleSpinBox*>& slowdownBoxes() const { return m_slowdowns; }

 private:
  QScrollArea* m_scroll = nullptr;
  QWidget* m_body = nullptr;
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
  std::vector<QDoubleSpinBox*> m_shares, m_slowdowns;
  std::vector<double> m_savedShares;     // restored from the settings; applied to a plan of that many ranks
  std::vector<double> m_savedSlowdowns;  // the same for the slowdowns
};

}  // namespace hap::studio
