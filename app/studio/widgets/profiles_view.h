// The Profiles view (issue 20, item 4, browsing): the profile store's device types, link fits,
// runs and their steps, read-only.
//
// The store's path at the top (db::defaultPath() unless set: $HAP_DB, else the XDG data folder),
// with Open Store… and Refresh (F5 while the view has focus). Two tabs: Profiles (every stored
// profile version; selecting one fills its device types with their op rates, and its collective
// fits) and Runs (every recorded run, newest first; selecting one fills its steps per rank and a
// chart of loss and step time per step). A missing or unreadable store is said in the view, with
// what to do; nothing here throws or writes to the store.
//
// Profile This Machine… (issue 20, item 4) asks for the profile's name, device type, ranks and
// quick, then runs `hap profile --db <this store>` as a child (ProfileJob): its lines in a log
// under the tabs, with Cancel; on success the store is read again and the new profile selected.
// Its failure is said in the log and the message line. The child never outlives the view.
#pragma once

#include <QWidget>

#include <memory>
#include <vector>

#include "app/studio/core/jobs/profile_job.h"
#include "app/studio/core/models/profile_store_models.h"

class QAction;
class QChart;
class QChartView;
class QLabel;
class QLineEdit;
class QLineSeries;
class QPlainTextEdit;
class QPushButton;
class QSplitter;
class QTabWidget;
class QTableView;
class QTreeView;

namespace hap::studio {

class ProfilesView : public QWidget {
  Q_OBJECT

 public:
  enum Tab { ProfilesTab, RunsTab };

  explicit ProfilesView(QWidget* parent = nullptr);
  ~ProfilesView() override;

  QString storePath() const { return m_storePath; }
  // Shows the store at `path` (read at once).
  void setStorePath(const QString& path);
  // Reads the store again, keeping the selected profile and run where they still exist.
  void reload();
  // Asks for a store file, then shows it.
  void openStoreDialog();
  // Asks for the profile's options (a modal dialog), then profiles this machine into this store.
  void profileMachineDialog();
  // Runs `hap profile` with `options` into this view's store (options.storePath is replaced).
  void profileMachine(ProfileOptions options);

  // The store's reading failed (missing, not a store, ...): the message the view shows, else "".
  QString error() const;

  // The open cluster's device types (the main window keeps them current): Profile This Machine
  // offers them, the first by default, so that the profile's figures apply to that cluster.
  void setClusterDeviceTypes(const QStringList& types);

  // For tests and the main window.
  QAction* refreshAction() const { return m_refresh; }
  QAction* profileMachineAction() const { return m_profileMachine; }
  QAction* showMeasuredAction() const { return m_showMeasured; }  // Runs: Show in Measured
  QAction* openInRunPanelAction() const { return m_openInRunPanel; }  // Runs: Open in Run Panel
  QPlainTextEdit* profileLog() const { return m_profileLog; }
  QPushButton* cancelProfileButton() const { return m_cancelProfile; }
  QPushButton* useProfileButton() const { return m_useProfile; }  // after a profile run: use it
  ProfileJob* profileJob() const { return m_job; }
  QLineEdit* pathEdit() const { return m_pathEdit; }
  QPushButton* openButton() const { return m_openButton; }
  QLabel* message() const { return m_message; }
  QTabWidget* tabs() const { return m_tabs; }
  QTableView* profilesTable() const { return m_profilesTable; }
  QTreeView* devicesTree() const { return m_devicesTree; }
  QTableView* collectivesTable() const { return m_collectivesTable; }
  QTableView* runsTable() const { return m_runsTable; }
  QTableView* stepsTable() const { return m_stepsTable; }
  QChartView* chartView() const { return m_chartView; }
  ProfilesModel* profilesModel() const { return m_profiles; }
  DeviceProfilesModel* devicesModel() const { return m_devices; }
  CollectiveFitsModel* collectivesModel() const { return m_collectives; }
  RunsModel* runsModel() const { return m_runs; }
  StepsModel* stepsModel() const { return m_steps; }
  // The run chart's series (nullptr / empty without a run): loss per step (left axis), and each
  // rank's step time per step in milliseconds (right axis), warm-up steps included.
  QLineSeries* lossSeries() const { return m_lossSeries; }
  const std::vector<QLineSeries*>& stepTimeSeries() const { return m_stepSeries; }

 Q_SIGNALS:
  void storeLoaded();  // after every read of the store, failed or not
  void profileFinished(bool ok, const QString& message);  // after a profile run, once the store is read
  // Show in Measured (the Runs tab's button, or a double-click on a run): compare the run with its
  // plan's prediction in the Measured dock.
  void showMeasuredRequested(const QString& storePath, qint64 runId);
  // Open in Run Panel (the Runs tab's button): the run's charts, figures and checkpoints in the Run dock.
  void openInRunPanelRequested(const QString& storePath, qint64 runId);
  // Use for the Open Cluster (after Profile This Machine): the cluster's `profile:` becomes
  // `profile` ("NAME@N"), priced from this store.
  void useProfileRequested(const QString& profile, const QString& storePath);

 protected:
  bool event(QEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void showProfile(int row);
  void showRun(int row);
  void rebuildChart();
  void updateHints();
  void onProfileFinished(bool ok, const QString& message);
  static void fitColumns(QTableView* table);

  QString m_storePath;
  bool m_loaded = false;
  std::unique_ptr<StoreReader> m_reader;

  QAction* m_refresh = nullptr;
  QAction* m_profileMachine = nullptr;
  QAction* m_showMeasured = nullptr;
  QAction* m_openInRunPanel = nullptr;
  ProfileJob* m_job = nullptr;
  QWidget* m_profileBox = nullptr;  // the log and Cancel, shown once a run starts
  QPlainTextEdit* m_profileLog = nullptr;
  QPushButton* m_cancelProfile = nullptr;
  QPushButton* m_useProfile = nullptr;  // shown after a successful profile run
  QStringList m_clusterTypes;
  QLineEdit* m_pathEdit = nullptr;
  QPushButton* m_openButton = nullptr;
  QLabel* m_message = nullptr;
  QTabWidget* m_tabs = nullptr;
  QLabel* m_profilesHint = nullptr;
  QLabel* m_runsHint = nullptr;
  QTableView* m_profilesTable = nullptr;
  QTreeView* m_devicesTree = nullptr;
  QTableView* m_collectivesTable = nullptr;
  QTableView* m_runsTable = nullptr;
  QTableView* m_stepsTable = nullptr;
  QChartView* m_chartView = nullptr;
  QSplitter* m_profilesSplit = nullptr;
  QSplitter* m_runsSplit = nullptr;
  bool m_splitsSized = false;  // the splitters' first sizes are set once the view has a width
  ProfilesModel* m_profiles = nullptr;
  DeviceProfilesModel* m_devices = nullptr;
  CollectiveFitsModel* m_collectives = nullptr;
  RunsModel* m_runs = nullptr;
  StepsModel* m_steps = nullptr;
  QLineSeries* m_lossSeries = nullptr;
  std::vector<QLineSeries*> m_stepSeries;
};

}  // namespace hap::studio
