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
  m_text->setTextFormat(Qt::PlainText);
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
  // The first lines say what and where; a long tail (a LibTorch dispatcher dump) goes to the
  // tooltip and the Problems panel, which keep the whole message.
  m_message = message;
  QString shown = message.section(QLatin1Char('\n'), 0, 2);
  if (shown.size() > 600) shown = shown.left(600) + QStringLiteral("…");
  else if (shown.size() < message.size()) shown += QStringLiteral(" …");
  m_text->setText(shown);
  m_text->setToolTip(message);
  show();
}

QString ErrorBar::message() const { return m_message; }

}  // namespace hap::studio
