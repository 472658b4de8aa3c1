#include "app/studio/widgets/summary_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTreeView>
#include <QVBoxLayout>

namespace hap::studio {

DepthSpinBox::DepthSpinBox(QWidget* parent) : QSpinBox(parent) {
  setRange(0, 0);
  setToolTip(tr("Module-scope depth of the rows, as hap inspect --depth: 0 is one row for the "
                "whole model, \"all\" shows full scopes; list indices stay with their parent"));
}

QString DepthSpinBox::textFromValue(int value) const {
  return value == maximum() ? tr("all") : QString::number(value);
}

int DepthSpinBox::valueFromText(const QString& text) const {
  if (text.trimmed().compare(tr("all"), Qt::CaseInsensitive) == 0) return maximum();
  return text.trimmed().toInt();
}

QValidator::State DepthSpinBox::validate(QString& text, int&) const {
  const QString t = text.trimmed();
  const QString all = tr("all");
  if (t.compare(all, Qt::CaseInsensitive) == 0) return QValidator::Acceptable;
  if (t.isEmpty() || all.startsWith(t, Qt::CaseInsensitive)) return QValidator::Intermediate;
  bool ok = false;
  const int v = t.toInt(&ok);
  if (!ok) return QValidator::Invalid;
  return v >= minimum() && v <= maximum() ? QValidator::Acceptable : QValidator::Intermediate;
}

SummaryPanel::SummaryPanel(QWidget* parent) : QWidget(parent) {
  m_model = new SummaryModel(this);
  m_proxy = new SummaryProxyModel(this);
  m_proxy->setSourceModel(m_model);

  m_depth = new DepthSpinBox(this);
  m_depth->setObjectName(QStringLiteral("summaryDepth"));
  auto* depthLabel = new QLabel(tr("&Depth:"), this);
  depthLabel->setBuddy(m_depth);

  m_view = new QTreeView(this);
  m_view->setObjectName(QStringLiteral("summaryView"));
  m_view->setRootIsDecorated(false);
  m_view->setUniformRowHeights(true);
  m_view->setAlternatingRowColors(true);
  m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_view->setSelectionMode(QAbstractItemView::SingleSelection);
  m_view->setModel(m_proxy);
  // Unsorted until the user clicks a header: rows in graph order, as `hap inspect` prints them.
  m_view->header()->setSortIndicator(-1, Qt::AscendingOrder);
  m_view->setSortingEnabled(true);
  m_view->header()->setSortIndicatorClearable(true);  // a third click returns to graph order
  m_view->header()->setStretchLastSection(true);

  auto* top = new QHBoxLayout;
  top->setContentsMargins(0, 0, 0, 0);
  top->addWidget(depthLabel);
  top->addWidget(m_depth);
  top->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addLayout(top);
  layout->addWidget(m_view, 1);

  connect(m_depth, &QSpinBox::valueChanged, this, [this] { setDepth(m_depth->depth()); });
  connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { onCurrentChanged(current); });
  // Enter or a double-click on the current row selects its scope again.
  connect(m_view, &QTreeView::activated, this,
          [this](const QModelIndex& index) { onCurrentChanged(index); });
  m_depth->setDepth(m_model->depth());
}

void SummaryPanel::setGraph(std::shared_ptr<const ir::Graph> graph) {
  const int depth = m_model->depth();
  m_model->setGraph(std::move(graph));
  {
    QSignalBlocker block(m_depth);
    m_depth->setRange(0, std::max(1, m_model->maxDepth()));
    m_depth->setDepth(depth);
  }
  // Depth counts the graph's levels; inside a model wrapped in one module, from that module.
  const QString wrapper = m_model->wrapperPath();
  m_depth->setToolTip(wrapper.isEmpty()
                          ? tr("Module levels shown as rows (0: the whole model; all: every scope)")
                          : tr("Module levels shown as rows, counted inside %1, the module the "
                               "model is wrapped in (0: the whole model; all: every scope)")
                                .arg(wrapper));
  setDepth(m_depth->depth());
  resizeColumns();
}

void SummaryPanel::setDepth(int depth) {
  {
    QSignalBlocker block(m_depth);
    m_depth->setDepth(depth);
  }
  // At the spin box's maximum the rows are the full scopes whatever the number.
  depth = m_depth->depth();
  if (depth == m_model->depth()) return;
  m_model->setDepth(depth);
  resizeColumns();
}

void SummaryPanel::selectScope(const QString& path) {
  m_syncing = true;
  QModelIndex found;
  for (int row = 0; row < m_proxy->rowCount(); ++row) {
    QModelIndex index = m_proxy->index(row, 0);
    QVariant p = index.data(SummaryModel::ScopePathRole);
    if (!p.isNull() && p.toString() == path) {
      found = index;
      break;
    }
  }
  if (found.isValid()) {
    m_view->selectionModel()->setCurrentIndex(
        found, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_view->scrollTo(found);
  } else {
    m_view->selectionModel()->clearSelection();
  }
  m_syncing = false;
}

void SummaryPanel::onCurrentChanged(const QModelIndex& current) {
  if (m_syncing || !current.isValid()) return;
  const QVariant path = current.data(SummaryModel::ScopePathRole);
  if (path.isNull()) return;  // the totals row
  Q_EMIT scopeActivated(path.toString());
}

void SummaryPanel::resizeColumns() {
  for (int c = 0; c < SummaryModel::TopOpsColumn; ++c) m_view->resizeColumnToContents(c);
}

}  // namespace hap::studio
