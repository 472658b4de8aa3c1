#include "app/studio/widgets/error_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>

namespace hap::studio {

ErrorBar::ErrorBar(QWidget* parent) : QFrame(parent) {
  setObjectName(QStringLiteral("errorBar"));
  setStyleSheet(QStringLiteral("#errorBar { background: #fdecea; border: 1px solid #e0a39e; border-radius: 4px; }"
                               "#errorBar QLabel { color: #5f1611; }"));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(10, 6, 6, 6);
  m_text = new QLabel(this);
  m_text->setWordWrap(true);
  m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(m_text, 1);
  auto* close = new QToolButton(this);
  close->setText(QStringLiteral("✕"));
  close->setAutoRaise(true);
  close->setToolTip(tr("Dismiss"));
  connect(close, &QToolButton::clicked, this, &QWidget::hide);
  layout->addWidget(close, 0, Qt::AlignTop);
  hide();
}

void ErrorBar::showMessage(const QString& message) {
  m_text->setText(message);
  show();
}

QString ErrorBar::message() const { return m_text->text(); }

}  // namespace hap::studio
