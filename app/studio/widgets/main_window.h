// The main window: the graph in the middle; model summary, properties, cluster, plan and problems
// as dockable panels; menus with standard shortcuts; a status bar with the open model and any
// background work. It owns no data logic: it opens files through OpenJob, hands the documents to
// the panels, and keeps the selection in step between them. Window layout and recent files persist
// through QSettings.
#pragma once

#include <QMainWindow>
#include <QStringList>
#include <memory>

#include "app/studio/core/model_document.h"
#include "app/studio/core/selection.h"

class QAction;
class QDockWidget;
class QLabel;
class QListWidget;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QToolButton;

namespace hap::studio {

class ClusterPanel;
class ErrorBar;
class FindBar;
class GraphView;
class OpenJob;
class PropertiesPanel;
class SummaryPanel;

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
  void openModel(const QString& path, const std::vector<ts::InputSpec>& inputOverrides = {});
  bool openCluster(const QString& path);
  // Opens a plan and its model as planned: `modelPath`, else the open model, else the plan's own.
  void openPlan(const QString& path, const QString& modelPath = {});
  void openFile(const QString& path);  // by kind

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
  FindBar* findBar() const { return m_findBar; }
  // An action by its stable id ("file.open", "edit.find", "view.fit", ...; see createActions).
  QAction* action(const QString& id) const;

 Q_SIGNALS:
  void modelOpened();
  void planOpened();
  void openFailed(const QString& message);

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
  void onOpenFailed(const QString& path, const OpenError& error);
  QAction* addAction(const QString& id, const QString& text, const QKeySequence& shortcut = {});
  bool confirmDiscardCluster();

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
  QMenu* m_recentMenu = nullptr;
  QMenu* m_viewMenu = nullptr;
  QLabel* m_statusModel = nullptr;
  QLabel* m_statusLayout = nullptr;
  QProgressBar* m_progress = nullptr;
  QToolButton* m_cancel = nullptr;
  std::map<QString, QAction*> m_actions;

  std::shared_ptr<const ModelDocument> m_model;
  std::shared_ptr<const PlanDocument> m_plan;
  QString m_lastError;
  Selection m_selection;
};

}  // namespace hap::studio
