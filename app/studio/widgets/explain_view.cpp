#include "app/studio/widgets/explain_view.h"

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelection>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "app/studio/widgets/fixed_font.h"

namespace hap::studio {

ExplainView::ExplainView(QWidget* parent) : QTabWidget(parent) {
  setObjectName(QStringLiteral("explainView"));
  setDocumentMode(true);
  m_model = new ExplainModel(this);
  m_proxy = new ExplainFilterModel(this);
  m_proxy->setSourceModel(m_model);

  auto* program = new QWidget(this);
  m_filter = new QLineEdit(program);
  m_filter->setObjectName(QStringLiteral("explainFilter"));
  m_filter->setPlaceholderText(tr("Filter by op, scope, variant, form…"));
  m_filter->setClearButtonEnabled(true);
  m_filter->setToolTip(tr("Show the steps whose op, scope, variant or collective, forms or segment contain "
                          "this text (ignoring case)"));
  m_kind = new QComboBox(program);
  m_kind->setObjectName(QStringLiteral("explainKind"));
  m_kind->addItem(tr("All steps"), static_cast<int>(ExplainFilterModel::Kind::All));
  m_kind->addItem(tr("Computations"), static_cast<int>(ExplainFilterModel::Kind::Computations));
  m_kind->addItem(tr("Communication only"), static_cast<int>(ExplainFilterModel::Kind::Communication));
  m_kind->setToolTip(tr("Computations (rule variants) or conversions (collectives, slices) only"));
  m_count = new QLabel(program);
  m_count->setObjectName(QStringLiteral("explainCount"));
  m_count->setMinimumWidth(m_count->fontMetrics().horizontalAdvance(tr("%1 of %2 steps").arg(8888).arg(8888)));
  m_count->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  m_count->setTextInteractionFlags(Qt::TextSelectableByMouse);

  m_table = new QTableView(program);
  m_table->setObjectName(QStringLiteral("explainTable"));
  m_table->setModel(m_proxy);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setAlternatingRowColors(true);
  m_table->setWordWrap(false);
  m_table->setTextElideMode(Qt::ElideMiddle);
  m_table->setHorizontalScrollMode(QAbstractItemView::ScrollPerPixel);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->horizontalHeader()->setHighlightSections(false);
  m_table->horizontalHeader()->setStretchLastSection(false);  // fitFormsColumn() fills the view
  m_table->horizontalHeader()->setSectionsMovable(true);
  // Unsorted until the user clicks a header: program order, as `hap plan --explain` prints it.
  m_table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
  m_table->setSortingEnabled(true);
  m_table->horizontalHeader()->setSortIndicatorClearable(true);

  m_table->viewport()->installEventFilter(this);

  auto* top = new QHBoxLayout;
  top->setContentsMargins(0, 0, 0, 0);
  top->addWidget(m_filter, 1);
  top->addWidget(m_kind);
  top->addWidget(m_count);
  auto* programLayout = new QVBoxLayout(program);
  programLayout->setContentsMargins(4, 4, 4, 4);
  programLayout->addLayout(top);
  programLayout->addWidget(m_table, 1);

  m_text = new QPlainTextEdit(this);
  m_text->setObjectName(QStringLiteral("explainText"));
  m_text->setReadOnly(true);
  m_text->setLineWrapMode(QPlainTextEdit::NoWrap);
  m_text->setFont(fixedFont());
  m_text->setPlaceholderText(tr("No plan"));

  addTab(program, tr("Program"));
  addTab(m_text, tr("Text"));
  setTabToolTip(ProgramTab, tr("The program step by step, sortable and filterable"));
  setTabToolTip(TextTab, tr("The text of hap plan --explain"));

  connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& text) {
    m_proxy->setText(text);
    updateCount();
  });
  connect(m_kind, &QComboBox::currentIndexChanged, this, [this] {
    m_proxy->setKind(static_cast<ExplainFilterModel::Kind>(m_kind->currentData().toInt()));
    updateCount();
  });
  connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { onCurrentChanged(current); });
  // Enter or a double-click on a row activates its node again.
  connect(m_table, &QTableView::activated, this, [this](const QModelIndex& index) { onCurrentChanged(index); });
  updateCount();
}

void ExplainView::setPlan(std::shared_ptr<const PlanDocument> plan) {
  m_model->setPlan(plan);
  if (plan && plan->imported) {
    m_text->setPlainText(explainText(*plan));
  } else {
    m_text->clear();
  }
  updateCount();
  resizeColumns();
}

void ExplainView::selectNode(ir::NodeId node) {
  m_syncing = true;
  QItemSelection selection;
  QModelIndex first;
  if (node != ir::kNone && plan()) {
    for (int step : plan()->stepsOfNode(node)) {
      const QModelIndex index = m_proxy->mapFromSource(m_model->index(step, 0));
      if (!index.isValid()) continue;  // filtered out
      selection.select(index, index.siblingAtColumn(ExplainModel::ColumnCount - 1));
      if (!first.isValid() || index.row() < first.row()) first = index;
    }
  }
  auto* sm = m_table->selectionModel();
  if (first.isValid()) {
    sm->setCurrentIndex(first, QItemSelectionModel::NoUpdate);
    sm->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_table->scrollTo(first);
  } else {
    sm->clearSelection();
  }
  m_syncing = false;
}

void ExplainView::onCurrentChanged(const QModelIndex& current) {
  if (m_syncing || !current.isValid()) return;
  const ir::NodeId node = current.data(ExplainModel::NodeRole).toInt();
  if (node == ir::kNone) return;
  Q_EMIT nodeActivated(node);
}

void ExplainView::updateCount() {
  const int total = m_model->rowCount();
  const int shown = m_proxy->rowCount();
  const QString steps = total == 1 ? tr("1 step") : tr("%1 steps").arg(total);
  m_count->setText(shown == total ? steps : tr("%1 of %2").arg(shown).arg(steps));
}

void ExplainView::resizeColumns() {
  QHeaderView* header = m_table->horizontalHeader();
  header->setResizeContentsPrecision(500);
  m_table->resizeColumnsToContents();
  // Long scopes would push the times out of sight: cap them (the tooltip has it all). The forms
  // come last and take the rest.
  const int em = m_table->fontMetrics().horizontalAdvance(QLatin1Char('M'));
  header->resizeSection(ExplainModel::ScopeColumn, std::min(header->sectionSize(ExplainModel::ScopeColumn), 16 * em));
  header->resizeSection(ExplainModel::VariantColumn, std::min(header->sectionSize(ExplainModel::VariantColumn), 14 * em));
  // The method column only where some collective has one.
  bool methods = false;
  for (int row = 0; row < m_model->rowCount() && !methods; ++row)
    methods = !m_model->index(row, ExplainModel::MethodColumn).data().toString().isEmpty();
  m_table->setColumnHidden(ExplainModel::MethodColumn, !methods);
  m_formsWidth = header->sectionSize(ExplainModel::FormsColumn);
  fitFormsColumn();
}

void ExplainView::fitFormsColumn() {
  // The forms keep their full width (the view scrolls) and fill the view when it is wider.
  QHeaderView* header = m_table->horizontalHeader();
  int others = 0;
  for (int c = 0; c < ExplainModel::ColumnCount; ++c)
    if (c != ExplainModel::FormsColumn && !header->isSectionHidden(c)) others += header->sectionSize(c);
  header->resizeSection(ExplainModel::FormsColumn, std::max(m_formsWidth, m_table->viewport()->width() - others));
}

bool ExplainView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_table->viewport() && event->type() == QEvent::Resize) fitFormsColumn();
  return QTabWidget::eventFilter(watched, event);
}

}  // namespace hap::studio
