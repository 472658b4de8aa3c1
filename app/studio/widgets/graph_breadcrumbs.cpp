#include "app/studio/widgets/graph_breadcrumbs.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>

namespace hap::studio {

GraphBreadcrumbs::GraphBreadcrumbs(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("graph.breadcrumbs"));
  setAutoFillBackground(true);
  QPalette pal = palette();
  pal.setColor(QPalette::Window, QColor(0xf1f3f4));
  setPalette(pal);
  m_row = new QHBoxLayout(this);
  m_row->setContentsMargins(6, 1, 6, 1);
  m_row->setSpacing(0);
  m_row->addStretch(1);
}

QSize GraphBreadcrumbs::sizeHint() const {
  return {QWidget::sizeHint().width(), fontMetrics().height() + 10};
}

QToolButton* GraphBreadcrumbs::crumb(int i) const {
  return i >= 0 && i < m_buttons.size() ? m_buttons[i] : nullptr;
}

void GraphBreadcrumbs::setTrail(const QStringList& labels, int focusIndex) {
  if (labels == m_labels && focusIndex == m_focusIndex) return;
  m_labels = labels;
  m_focusIndex = focusIndex;
  while (m_row->count() > 1) {
    QLayoutItem* item = m_row->takeAt(0);
    delete item->widget();
    delete item;
  }
  m_buttons.clear();
  for (int i = 0; i < labels.size(); ++i) {
    if (i > 0) {
      auto* sep = new QLabel(QStringLiteral("›"), this);
      sep->setStyleSheet(QStringLiteral("QLabel { color: #80868b; padding: 0 2px; }"));
      m_row->insertWidget(m_row->count() - 1, sep);
    }
    auto* b = new QToolButton(this);
    b->setAutoRaise(true);
    b->setText(labels[i]);
    b->setObjectName(QStringLiteral("graph.crumb%1").arg(i));
    QFont f = b->font();
    f.setBold(i == focusIndex && focusIndex > 0);
    b->setFont(f);
    b->setToolTip(i == 0 ? tr("Show the whole graph (Esc)")
                         : tr("Show only %1 (F on a selected box)").arg(labels[i]));
    connect(b, &QToolButton::clicked, this, [this, i] { Q_EMIT crumbClicked(i); });
    m_row->insertWidget(m_row->count() - 1, b);
    m_buttons.push_back(b);
  }
}

}  // namespace hap::studio
