// The Plan panel: `hap plan`'s options as a form (strategy or baseline, ratios, segments,
// collectives, pins, the search's state and beam bounds, baselines), the equivalent command line,
// and the Plan / Cancel buttons. It holds no planning logic: request() is a plan::PlanRequest that
// the main window hands to PlanJob, exactly as `hap plan` would be given it.
#pragma once

#include <QWidget>

#include "app/studio/core/jobs/plan_job.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;

namespace hap::studio {

class PlanPanel : public QWidget {
  Q_OBJECT
 public:
  explicit PlanPanel(QWidget* parent = nullptr);

  plan::PlanRequest request() const;
  void setRequest(const plan::PlanRequest& request);
  // Adds a pin (a later pin on the same nodes wins, as in `hap plan`); replaces an equal pattern's.
  void addPin(const QString& pattern, const QString& variant);
  // The command line shown under the form: `hap plan MODEL --cluster CLUSTER …`.
  void setFiles(const QString& model, const QString& cluster);
  QString commandLine() const;
  // Busy: the Plan button becomes Cancel's neighbour; the form stays editable for the next plan.
  void setBusy(bool busy);

  QPushButton* planButton() const { return m_plan; }
  QPushButton* cancelButton() const { return m_cancel; }
  QListWidget* pinList() const { return m_pins; }

 Q_SIGNALS:
  void planRequested();
  void cancelRequested();
  void requestChanged();

 private:
  void updateCommand();
  void updateEnabled();

  QComboBox* m_strategy = nullptr;
  QComboBox* m_ratios = nullptr;
  QLineEdit* m_shares = nullptr;
  QComboBox* m_segments = nullptr;
  QComboBox* m_collectives = nullptr;
  QListWidget* m_pins = nullptr;
  QLineEdit* m_newPin = nullptr;
  QSpinBox* m_maxStates = nullptr;
  QSpinBox* m_beamWidth = nullptr;
  QCheckBox* m_baselines = nullptr;
  QLineEdit* m_command = nullptr;
  QPushButton* m_plan = nullptr;
  QPushButton* m_cancel = nullptr;
  QString m_model, m_cluster;
};

}  // namespace hap::studio
