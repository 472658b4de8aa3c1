#include "app/studio/widgets/find_bar.h"

#include <QAction>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QStyle>
#include <QToolButton>

namespace hap::studio {

FindBar::FindBar(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("findBar"));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 2, 4, 2);
  layout->setSpacing(6);

  auto* label = new QLabel(tr("Find:"), this);
  m_edit = new QLineEdit(this);
  m_edit->setObjectName(QStringLiteral("findText"));
  m_edit->setPlaceholderText(tr("op, value or scope name"));
  m_edit->setClearButtonEnabled(true);
  m_edit->setMinimumWidth(220);
  m_edit->installEventFilter(this);
  label->setBuddy(m_edit);

  m_regex = new QCheckBox(tr("Rege&x"), this);
  m_regex->setToolTip(tr("Treat the text as a regular expression (the op also matches without "
                         "its \"aten::\" prefix, so ^linear$ works)"));
  m_matchCase = new QCheckBox(tr("Match &case"), this);

  m_status = new QLabel(this);
  m_status->setObjectName(QStringLiteral("findStatus"));
  m_status->setMinimumWidth(m_status->fontMetrics().horizontalAdvance(QStringLiteral("0000 of 0000")));

  m_nextAction = new QAction(tr("Find &Next"), this);
  m_nextAction->setShortcut(QKeySequence::FindNext);  // F3 (Ctrl+G on macOS)
  m_nextAction->setShortcutContext(Qt::WindowShortcut);
  m_nextAction->setIcon(style()->standardIcon(QStyle::SP_ArrowDown));
  m_previousAction = new QAction(tr("Find &Previous"), this);
  m_previousAction->setShortcut(QKeySequence::FindPrevious);  // Shift+F3
  m_previousAction->setShortcutContext(Qt::WindowShortcut);
  m_previousAction->setIcon(style()->standardIcon(QStyle::SP_ArrowUp));
  addAction(m_nextAction);
  addAction(m_previousAction);
  connect(m_nextAction, &QAction::triggered, this, &FindBar::findNext);
  connect(m_previousAction, &QAction::triggered, this, &FindBar::findPrevious);

  m_previous = new QToolButton(this);
  m_previous->setDefaultAction(m_previousAction);
  m_previous->setAutoRaise(true);
  m_next = new QToolButton(this);
  m_next->setDefaultAction(m_nextAction);
  m_next->setAutoRaise(true);
  auto* close = new QToolButton(this);
  close->setIcon(style()->standardIcon(QStyle::SP_TitleBarCloseButton));
  close->setAutoRaise(true);
  close->setToolTip(tr("Close (Esc)"));
  connect(close, &QToolButton::clicked, this, [this] {
    hide();
    Q_EMIT closed();
  });

  layout->addWidget(label);
  layout->addWidget(m_edit, 1);
  layout->addWidget(m_previous);
  layout->addWidget(m_next);
  layout->addWidget(m_regex);
  layout->addWidget(m_matchCase);
  layout->addWidget(m_status);
  layout->addStretch(0);
  layout->addWidget(close);

  connect(m_edit, &QLineEdit::textChanged, this, &FindBar::rerun);
  connect(m_regex, &QCheckBox::toggled, this, &FindBar::rerun);
  connect(m_matchCase, &QCheckBox::toggled, this, &FindBar::rerun);
  setFocusProxy(m_edit);
  updateStatus();
}

void FindBar::setGraph(std::shared_ptr<const ir::Graph> graph) {
  m_search.setGraph(std::move(graph));
  updateStatus();
}

void FindBar::focusAndSelectAll() {
  show();
  m_edit->setFocus(Qt::ShortcutFocusReason);
  m_edit->selectAll();
}

void FindBar::rerun() {
  SearchOptions options;
  options.text = m_edit->text();
  options.regex = m_regex->isChecked();
  options.matchCase = m_matchCase->isChecked();
  m_search.setOptions(options);
  updateStatus();
}

void FindBar::findNext() { step(true); }
void FindBar::findPrevious() { step(false); }

void FindBar::step(bool forward) {
  if (!isVisible()) {
    // F3 from the menu with the bar closed: open it on the last search.
    focusAndSelectAll();
    if (m_edit->text().isEmpty()) return;
  }
  const SearchMatch* match = forward ? m_search.next() : m_search.previous();
  updateStatus();
  if (match) Q_EMIT matchActivated(match->target);
}

void FindBar::updateStatus() {
  QPalette palette = m_status->palette();
  palette.setColor(QPalette::WindowText, this->palette().color(QPalette::WindowText));
  QString text;
  QString tip;
  const bool error = !m_search.error().isEmpty();
  if (error) {
    text = tr("Invalid regex");
    tip = m_search.error();
    palette.setColor(QPalette::WindowText, QColor(0xc0, 0x1c, 0x28));
  } else if (m_edit->text().isEmpty()) {
    text.clear();
  } else if (m_search.count() == 0) {
    text = tr("No matches");
    palette.setColor(QPalette::WindowText, QColor(0xc0, 0x1c, 0x28));
  } else if (m_search.currentIndex() < 0) {
    text = m_search.count() == 1 ? tr("1 match") : tr("%1 matches").arg(m_search.count());
  } else {
    text = tr("%1 of %2").arg(m_search.currentIndex() + 1).arg(m_search.count());
    const SearchMatch& m = m_search.matches()[static_cast<size_t>(m_search.currentIndex())];
    tip = m.matchedText;
  }
  m_status->setPalette(palette);
  m_status->setText(text);
  m_status->setToolTip(tip);
  m_edit->setToolTip(tip.isEmpty() ? QString() : tip);
  m_edit->setStyleSheet(error ? QStringLiteral("QLineEdit { border: 1px solid #c01c28; }")
                              : QString());
}

bool FindBar::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_edit && event->type() == QEvent::KeyPress) {
    auto* key = static_cast<QKeyEvent*>(event);
    if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
      step(!(key->modifiers() & Qt::ShiftModifier));
      return true;
    }
    if (key->key() == Qt::Key_Escape) {
      hide();
      Q_EMIT closed();
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

void FindBar::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Escape) {
    hide();
    Q_EMIT closed();
    return;
  }
  QWidget::keyPressEvent(event);
}

}  // namespace hap::studio
