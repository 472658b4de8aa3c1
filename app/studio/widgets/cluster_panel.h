// The cluster panel (issue 17, item 5): the inventory as an editable tree (ClusterModel), a
// toolbar (add machine, add device type, remove, new from template, save, save as), a red
// message line for rejected edits and failed saves, and the summary line.
//
// Edits go through ClusterModel::setData, so a rejected value leaves the cluster as it was and
// the loader's message (naming the field) appears under the tree.
#pragma once

#include <QList>
#include <QString>
#include <QWidget>

#include <functional>

#include "app/studio/core/models/cluster_model.h"

class QAction;
class QLabel;
class QMenu;
class QToolBar;
class QTreeView;

namespace hap::studio {

class ClusterPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ClusterPanel(QWidget* parent = nullptr);

  // Shows `cluster`, read from `path` ("" for one not saved yet); unmodified.
  void setCluster(const cost::Cluster& cluster, const QString& path);
  cost::Cluster cluster() const { return m_model->cluster(); }
  // True once a cluster was set, made from a template or built with the add actions.
  bool hasCluster() const;
  QString path() const { return m_path; }
  bool isModified() const { return m_model->isModified(); }

  // Writes the YAML to path() (asks for a file when there is none); false, with the message
  // shown, when writing fails or the user cancels.
  bool save();
  // Writes to `path` and makes it the panel's path.
  bool saveAs(const QString& path);
  // The message of the last rejected edit or failed save ("" after a success).
  QString message() const;

  // Replaces the cluster with the bundled template at `resourcePath` (path() becomes "", the
  // cluster counts as modified). Asks the discard guard first.
  bool newFromTemplate(const QString& resourcePath);
  // Called before a template replaces a modified cluster; false keeps the current one. The
  // default asks with a message box.
  void setDiscardGuard(std::function<bool()> guard) { m_discardGuard = std::move(guard); }

  // For the main window's menus; each also sits in the panel's toolbar.
  QAction* addMachineAction() const { return m_addMachine; }
  QAction* addDeviceTypeAction() const { return m_addType; }
  QAction* removeAction() const { return m_remove; }
  QAction* saveAction() const { return m_save; }
  QAction* saveAsAction() const { return m_saveAs; }
  // One action per bundled template ("a100-p100-4", ...), and the menu holding them.
  QList<QAction*> templateActions() const;
  QMenu* templateMenu() const { return m_templateMenu; }

  ClusterModel* model() const { return m_model; }
  QTreeView* view() const { return m_view; }

 Q_SIGNALS:
  void clusterChanged();
  void modifiedChanged(bool modified);
  void pathChanged(const QString& path);
  // A cluster file was written.
  void saved(const QString& path);

 private:
  void showMessage(const QString& message);
  void updateSummary();
  void updateActions();
  void selectRow(const QModelIndex& index);
  bool saveAsDialog();

  ClusterModel* m_model = nullptr;
  QTreeView* m_view = nullptr;
  QToolBar* m_toolbar = nullptr;
  QLabel* m_message = nullptr;
  QLabel* m_summary = nullptr;
  QAction* m_addMachine = nullptr;
  QAction* m_addType = nullptr;
  QAction* m_remove = nullptr;
  QAction* m_save = nullptr;
  QAction* m_saveAs = nullptr;
  QMenu* m_templateMenu = nullptr;
  QString m_path;
  bool m_hasCluster = false;
  std::function<bool()> m_discardGuard;
};

}  // namespace hap::studio
