#include "app/studio/widgets/cluster_panel.h"

#include <QAction>
#include <QComboBox>
#include <QFileDialog>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QStyledItemDelegate>
#include <QToolBar>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include "app/studio/core/documents/cluster_document.h"

// The bundled templates live in studio.qrc, compiled into this static library: register them
// (Q_INIT_RESOURCE must be called outside any namespace; calling it twice is harmless).
static void initStudioResources() {
  Q_INIT_RESOURCE(studio);
}

namespace hap::studio {
namespace {

// Line edits for values (typed in the cluster file's unit syntax), a combo box for a machine's
// device type. A value the model rejects leaves the old one; the panel shows why.
class ClusterDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;

  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem& option,
                        const QModelIndex& index) const override {
    const QStringList choices = index.data(ClusterModel::ChoicesRole).toStringList();
    if (!choices.isEmpty()) {
      auto* combo = new QComboBox(parent);
      combo->addItems(choices);
      // Commit as soon as a type is picked.
      connect(combo, &QComboBox::activated, this, [this, combo] {
        auto* self = const_cast<ClusterDelegate*>(this);
        Q_EMIT self->commitData(combo);
        Q_EMIT self->closeEditor(combo);
      });
      return combo;
    }
    auto* edit = new QLineEdit(parent);
    edit->setFrame(false);
    edit->setPlaceholderText(index.data(Qt::DisplayRole).toString());
    edit->setToolTip(index.data(Qt::ToolTipRole).toString());
    Q_UNUSED(option);
    return edit;
  }

  void setEditorData(QWidget* editor, const QModelIndex& index) const override {
    const QString text = index.data(Qt::EditRole).toString();
    if (auto* combo = qobject_cast<QComboBox*>(editor))
      combo->setCurrentText(text);
    else if (auto* edit = qobject_cast<QLineEdit*>(editor))
      edit->setText(text);
  }

  void setModelData(QWidget* editor, QAbstractItemModel* model,
                    const QModelIndex& index) const override {
    QString text;
    if (auto* combo = qobject_cast<QComboBox*>(editor))
      text = combo->currentText();
    else if (auto* edit = qobject_cast<QLineEdit*>(editor))
      text = edit->text();
    if (text == index.data(Qt::EditRole).toString()) return;  // unchanged: nothing to check
    model->setData(index, text, Qt::EditRole);
  }
};

}  // namespace

ClusterPanel::ClusterPanel(QWidget* parent) : QWidget(parent) {
  initStudioResources();
  m_model = new ClusterModel(this);

  m_addMachine = new QAction(tr("Add &Machine"), this);
  m_addMachine->setToolTip(tr("Add a machine like the last one"));
  m_addType = new QAction(tr("Add &Device Type"), this);
  m_addType->setToolTip(tr("Add a device type with the last type's numbers"));
  m_remove = new QAction(tr("&Remove"), this);
  m_remove->setToolTip(tr("Remove the selected machine or device type (Del)"));
  m_remove->setShortcut(QKeySequence::Delete);
  m_remove->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  m_save = new QAction(tr("&Save Cluster"), this);
  m_save->setShortcut(QKeySequence::Save);
  m_save->setToolTip(tr("Save the cluster as YAML"));
  m_saveAs = new QAction(tr("Save Cluster &As…"), this);
  m_saveAs->setShortcut(QKeySequence::SaveAs);
  // Short labels for the panel's narrow toolbar; menus show the full text.
  m_addMachine->setIconText(tr("+ Machine"));
  m_addType->setIconText(tr("+ Type"));
  m_save->setIconText(tr("Save"));
  m_saveAs->setIconText(tr("Save As…"));

  m_templateMenu = new QMenu(tr("New from Template"), this);
  for (const QString& path : ClusterModel::templatePaths()) {
    QAction* a = m_templateMenu->addAction(ClusterModel::templateName(path));
    a->setData(path);
    // A template that does not load says why when chosen.
    if (const ClusterFile t = openClusterTemplate(path); t.ok())
      a->setToolTip(QString::fromStdString(t.cluster.description));
    connect(a, &QAction::triggered, this, [this, path] { newFromTemplate(path); });
  }
  m_templateMenu->setToolTipsVisible(true);

  m_toolbar = new QToolBar(this);
  m_toolbar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  m_toolbar->setIconSize(QSize(16, 16));
  m_toolbar->addAction(m_addMachine);
  m_toolbar->addAction(m_addType);
  m_toolbar->addAction(m_remove);
  m_toolbar->addSeparator();
  auto* templates = new QToolButton(m_toolbar);
  templates->setText(tr("Template"));
  templates->setToolTip(tr("New cluster from a bundled template"));
  templates->setMenu(m_templateMenu);
  templates->setPopupMode(QToolButton::InstantPopup);
  m_toolbar->addWidget(templates);
  m_toolbar->addSeparator();
  m_toolbar->addAction(m_save);
  m_toolbar->addAction(m_saveAs);
  addAction(m_remove);  // Del while the tree has focus

  m_view = new QTreeView(this);
  m_view->setModel(m_model);
  m_view->setItemDelegate(new ClusterDelegate(m_view));
  m_view->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                          QAbstractItemView::AnyKeyPressed);
  m_view->setAlternatingRowColors(true);
  m_view->setUniformRowHeights(true);
  m_view->header()->setSectionResizeMode(ClusterModel::PropertyColumn,
                                         QHeaderView::ResizeToContents);
  m_view->header()->setStretchLastSection(true);

  m_message = new QLabel(this);
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_message->setStyleSheet(QStringLiteral("QLabel { color: #c62828; }"));
  m_message->hide();
  m_summary = new QLabel(this);
  m_summary->setWordWrap(true);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addWidget(m_toolbar);
  layout->addWidget(m_view, 1);
  layout->addWidget(m_message);
  layout->addWidget(m_summary);

  connect(m_addMachine, &QAction::triggered, this, [this] {
    int row = m_model->addMachine();
    if (row >= 0) selectRow(m_model->machineIndex(row));
  });
  connect(m_addType, &QAction::triggered, this, [this] {
    int row = m_model->addDeviceType();
    if (row >= 0) selectRow(m_model->deviceTypeIndex(row));
  });
  connect(m_remove, &QAction::triggered, this,
          [this] { m_model->removeItem(m_view->currentIndex()); });
  connect(m_save, &QAction::triggered, this, [this] { save(); });
  connect(m_saveAs, &QAction::triggered, this, [this] { saveAsDialog(); });

  connect(m_model, &ClusterModel::editRejected, this, &ClusterPanel::showMessage);
  connect(m_model, &ClusterModel::clusterChanged, this, [this] {
    m_hasCluster = m_hasCluster || !m_model->cluster().types.empty();
    showMessage({});
    updateSummary();
    updateActions();
    Q_EMIT clusterChanged();
  });
  connect(m_model, &ClusterModel::modifiedChanged, this, &ClusterPanel::modifiedChanged);
  connect(m_model, &QAbstractItemModel::modelReset, this, [this] { m_view->expandToDepth(0); });
  connect(m_view->selectionModel(), &QItemSelectionModel::currentChanged, this,
          &ClusterPanel::updateActions);

  m_discardGuard = [this] {
    return QMessageBox::question(this, tr("Unsaved cluster"),
                                 tr("The cluster has unsaved changes. Discard them?"),
                                 QMessageBox::Discard | QMessageBox::Cancel,
                                 QMessageBox::Cancel) == QMessageBox::Discard;
  };
  m_view->expandToDepth(0);
  updateSummary();
  updateActions();
}

void ClusterPanel::setCluster(const cost::Cluster& cluster, const QString& path) {
  m_hasCluster = true;
  m_model->setCluster(cluster);
  if (m_path != path) {
    m_path = path;
    Q_EMIT pathChanged(path);
  }
  updateActions();
}

bool ClusterPanel::hasCluster() const {
  return m_hasCluster;
}

QString ClusterPanel::message() const {
  return m_message->isVisible() || !m_message->text().isEmpty() ? m_message->text() : QString();
}

QList<QAction*> ClusterPanel::templateActions() const {
  return m_templateMenu->actions();
}

bool ClusterPanel::newFromTemplate(const QString& resourcePath) {
  if (m_model->isModified() && m_discardGuard && !m_discardGuard()) return false;
  ClusterFile file = openClusterTemplate(resourcePath);
  if (!file.ok()) {
    showMessage(file.error);
    return false;
  }
  cost::Cluster c = std::move(file.cluster);
  c.source.clear();
  setCluster(c, QString());
  m_model->markSaved(false);  // saved nowhere yet
  return true;
}

bool ClusterPanel::save() {
  if (m_path.isEmpty()) return saveAsDialog();
  return saveAs(m_path);
}

bool ClusterPanel::saveAsDialog() {
  QString suggestion =
      m_path.isEmpty() ? QString::fromStdString(m_model->cluster().name) + ".yaml" : m_path;
  QString path = QFileDialog::getSaveFileName(this, tr("Save Cluster"), suggestion,
                                              tr("Cluster inventories (*.yaml *.yml)"));
  if (path.isEmpty()) return false;
  return saveAs(path);
}

bool ClusterPanel::saveAs(const QString& path) {
  if (const QString error = saveClusterFile(m_model->cluster(), path); !error.isEmpty()) {
    showMessage(error);
    return false;
  }
  m_model->markSaved();
  showMessage({});
  if (m_path != path) {
    m_path = path;
    Q_EMIT pathChanged(path);
  }
  Q_EMIT saved(path);
  return true;
}

void ClusterPanel::showMessage(const QString& message) {
  m_message->setText(message);
  m_message->setVisible(!message.isEmpty());
}

void ClusterPanel::updateSummary() {
  if (!m_hasCluster) {
    m_summary->setText(tr("No cluster. Open one, or start from a template."));
    return;
  }
  m_summary->setText(m_model->summary().text());
}

void ClusterPanel::updateActions() {
  m_remove->setEnabled(m_model->canRemove(m_view->currentIndex()));
  m_save->setEnabled(m_hasCluster);
  m_saveAs->setEnabled(m_hasCluster);
}

void ClusterPanel::selectRow(const QModelIndex& index) {
  m_view->expand(index.parent());
  m_view->expand(index);
  m_view->setCurrentIndex(index);
  m_view->scrollTo(index);
}

}  // namespace hap::studio
