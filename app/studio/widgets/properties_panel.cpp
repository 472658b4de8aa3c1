#include "app/studio/widgets/properties_panel.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QMenu>
#include <QMouseEvent>
#include <QStyledItemDelegate>
#include <QTreeView>
#include <QVBoxLayout>

namespace hap::studio {
namespace {

// Draws the value of a row that links somewhere in the palette's link colour (the cursor turns
// into a pointing hand over it).
class LinkDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;

 protected:
  void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override {
    QStyledItemDelegate::initStyleOption(option, index);
    if (index.column() != PropertiesModel::ValueColumn || PropertiesModel::link(index).empty())
      return;
    const QColor link = option->palette.color(QPalette::Link);
    option->palette.setColor(QPalette::Text, link);
    option->palette.setColor(QPalette::WindowText, link);
  }
};

}  // namespace

PropertiesPanel::PropertiesPanel(QWidget* parent) : QWidget(parent) {
  m_model = new PropertiesModel(this);

  m_title = new QLabel(this);
  m_title->setObjectName(QStringLiteral("propertiesTitle"));
  m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = m_title->font();
  bold.setBold(true);
  m_title->setFont(bold);

  m_view = new QTreeView(this);
  m_view->setObjectName(QStringLiteral("propertiesView"));
  m_view->setModel(m_model);
  m_view->setItemDelegate(new LinkDelegate(m_view));
  m_view->setUniformRowHeights(true);
  m_view->setAlternatingRowColors(true);
  m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_view->setMouseTracking(true);
  m_view->setTextElideMode(Qt::ElideMiddle);
  m_view->header()->setStretchLastSection(true);
  m_view->viewport()->installEventFilter(this);
  m_view->installEventFilter(this);
  m_view->setContextMenuPolicy(Qt::ActionsContextMenu);

  auto* copy = new QAction(tr("&Copy"), m_view);
  copy->setShortcut(QKeySequence::Copy);
  copy->setShortcutContext(Qt::WidgetShortcut);
  connect(copy, &QAction::triggered, this, &PropertiesPanel::copySelection);
  m_view->addAction(copy);
  auto* copyValue = new QAction(tr("Copy &Value"), m_view);
  connect(copyValue, &QAction::triggered, this, [this] {
    QModelIndex current = m_view->currentIndex();
    if (current.isValid())
      QApplication::clipboard()->setText(
          current.siblingAtColumn(PropertiesModel::ValueColumn).data().toString());
  });
  m_view->addAction(copyValue);

  connect(m_view, &QTreeView::entered, this, [this](const QModelIndex& index) {
    const bool link = index.column() == PropertiesModel::ValueColumn &&
                      !PropertiesModel::link(index).empty();
    m_view->viewport()->setCursor(link ? Qt::PointingHandCursor : Qt::ArrowCursor);
  });

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(m_title);
  layout->addWidget(m_view, 1);
  showSelection({});
}

void PropertiesPanel::setGraph(std::shared_ptr<const ir::Graph> graph,
                               std::shared_ptr<const ScopeTree> scopes) {
  m_model->setGraph(std::move(graph), std::move(scopes));
  showSelection({});
}

void PropertiesPanel::setPlan(std::shared_ptr<const PlanDocument> plan) {
  m_model->setPlan(std::move(plan));
  showSelection(m_model->selection());
}

void PropertiesPanel::showSelection(Selection selection) {
  m_model->setSelection(selection);
  m_view->expandAll();
  m_view->resizeColumnToContents(PropertiesModel::PropertyColumn);
  const QString title = m_model->title();
  m_title->setText(title.isEmpty() ? tr("Select a node, value or scope to see its properties.")
                                   : title);
  m_title->setToolTip(title);
}

QString PropertiesPanel::selectedText() const {
  QModelIndexList rows = m_view->selectionModel()->selectedRows(PropertiesModel::PropertyColumn);
  if (rows.isEmpty() && m_view->currentIndex().isValid())
    rows << m_view->currentIndex().siblingAtColumn(PropertiesModel::PropertyColumn);
  // In the order the rows are shown.
  std::sort(rows.begin(), rows.end(), [this](const QModelIndex& a, const QModelIndex& b) {
    return m_view->visualRect(a).top() < m_view->visualRect(b).top();
  });
  QStringList lines;
  for (const QModelIndex& row : rows)
    lines << row.data().toString() + QLatin1Char('\t') +
                 row.siblingAtColumn(PropertiesModel::ValueColumn).data().toString();
  return lines.join(QLatin1Char('\n'));
}

void PropertiesPanel::copySelection() const {
  const QString text = selectedText();
  if (!text.isEmpty()) QApplication::clipboard()->setText(text);
}

void PropertiesPanel::activateLink(const QModelIndex& index) {
  const Selection target = PropertiesModel::link(index);
  if (!target.empty()) Q_EMIT selectionRequested(target);
}

bool PropertiesPanel::eventFilter(QObject* watched, QEvent* event) {
  // A single click on a link in the value column follows it, as in a browser.
  if (watched == m_view->viewport() && event->type() == QEvent::MouseButtonRelease) {
    auto* mouse = static_cast<QMouseEvent*>(event);
    const QModelIndex index = m_view->indexAt(mouse->position().toPoint());
    // The second click of a double-click lands on what the first one navigated to: ignore it.
    const bool secondClick = m_sinceFollowed.isValid() &&
                             m_sinceFollowed.elapsed() < QApplication::doubleClickInterval();
    if (mouse->button() == Qt::LeftButton && mouse->modifiers() == Qt::NoModifier &&
        index.column() == PropertiesModel::ValueColumn && !PropertiesModel::link(index).empty() &&
        !secondClick) {
      m_sinceFollowed.start();
      activateLink(index);
    }
  }
  // Enter on a row that names something follows it.
  if (watched == m_view && event->type() == QEvent::KeyPress) {
    auto* key = static_cast<QKeyEvent*>(event);
    if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) &&
        !PropertiesModel::link(m_view->currentIndex()).empty()) {
      activateLink(m_view->currentIndex());
      return true;
    }
  }
  if (watched == m_view && event->type() == QEvent::Leave)
    m_view->viewport()->unsetCursor();
  return QWidget::eventFilter(watched, event);
}

}  // namespace hap::studio
