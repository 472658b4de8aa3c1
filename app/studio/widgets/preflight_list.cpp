#include "app/studio/widgets/preflight_list.h"

#include <QBoxLayout>
#include <QGridLayout>
#include <QLabel>
#include <QPointer>
#include <QPushButton>
#include <QScrollArea>
#include <QStyle>
#include <QTimer>
#include <QToolButton>

#include "app/studio/core/jobs/preflight_job.h"

namespace hap::studio {

PreflightList::PreflightList(QWidget* parent) : QFrame(parent) {
  setObjectName(QStringLiteral("preflightArea"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  m_toggle = new QToolButton(this);
  m_toggle->setObjectName(QStringLiteral("preflightSummary"));
  m_toggle->setCheckable(true);
  m_toggle->setAutoRaise(true);
  m_toggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  m_toggle->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);  // a long summary never widens the form
  // A line, not a button: no frame or pressed look when open.
  m_toggle->setStyleSheet(QStringLiteral("QToolButton { text-align: left; border: none; padding: 2px; }"
                                         "QToolButton:hover { text-decoration: underline; }"));
  m_check = new QPushButton(tr("Check"), this);
  m_check->setObjectName(QStringLiteral("checkRun"));
  auto* head = new QHBoxLayout;
  head->setSpacing(4);
  head->addWidget(m_toggle, 1);
  head->addWidget(m_check);
  layout->addLayout(head);
  m_list = new QScrollArea(this);
  m_list->setObjectName(QStringLiteral("preflightList"));
  m_list->setWidgetResizable(true);
  m_list->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  m_list->setFrameShape(QFrame::StyledPanel);
  m_list->setMaximumHeight(170);  // the form above keeps some room in a low dock
  m_list->hide();
  layout->addWidget(m_list);
  connect(m_toggle, &QToolButton::toggled, this, &PreflightList::setOpen);
  connect(m_check, &QPushButton::clicked, this, &PreflightList::checkRequested);
  showChecks({}, false);
}

void PreflightList::setCanCheck(bool enabled, bool havePlan) {
  m_check->setEnabled(enabled);
  m_check->setToolTip(havePlan ? tr("Run the checks Start runs first, without starting: the model file and its hash, a "
                                    "rank per device, the CPU shares, a free port, the worker, the data file against the "
                                    "model's inputs, the checkpoint to resume, the checkpoint and export folders")
                               : tr("Needs a plan"));
}

void PreflightList::showChecking() {
  m_toggle->setIcon(style()->standardIcon(QStyle::SP_BrowserReload));
  m_toggle->setText(tr("Checking…"));
}

void PreflightList::showChecks(const std::vector<runtime::PreflightCheck>& checks, bool open) {
  m_checks = checks;
  bool failed = false, warned = false;
  for (const runtime::PreflightCheck& c : checks) {
    failed = failed || c.status == runtime::PreflightCheck::Status::Failed;
    warned = warned || c.status == runtime::PreflightCheck::Status::Warning;
  }
  const QString summary = checks.empty() ? tr("Not checked yet: Start checks first") : preflightSummary(checks);
  // ▸ closed, ▾ open (as a tree's branch).
  m_toggle->setText(checks.empty() ? summary : summary + (open ? QStringLiteral("  ▾") : QStringLiteral("  ▸")));
  m_toggle->setToolTip(checks.empty() ? tr("Check runs the checks now; Start runs them before any process starts")
                                      : tr("%1 — click to %2 the list").arg(summary, open ? tr("close") : tr("open")));
  m_toggle->setIcon(style()->standardIcon(checks.empty() ? QStyle::SP_MessageBoxQuestion
                                          : failed        ? QStyle::SP_MessageBoxCritical
                                          : warned        ? QStyle::SP_MessageBoxWarning
                                                          : QStyle::SP_DialogApplyButton));
  m_toggle->setEnabled(!checks.empty());
  QPalette pal = m_toggle->palette();
  pal.setColor(QPalette::ButtonText, failed ? QColor(0xb0, 0x1c, 0x1c) : palette().color(QPalette::ButtonText));
  m_toggle->setPalette(pal);

  // One row per check: its icon, then "Title: message", wrapped and selectable.
  auto* rows = new QWidget;
  rows->setObjectName(QStringLiteral("preflightRows"));
  auto* grid = new QGridLayout(rows);
  grid->setContentsMargins(4, 4, 4, 4);
  grid->setHorizontalSpacing(6);
  grid->setVerticalSpacing(3);
  const int icon = style()->pixelMetric(QStyle::PM_SmallIconSize);
  for (size_t k = 0; k < checks.size(); ++k) {
    const runtime::PreflightCheck& c = checks[k];
    const auto pixmap = c.status == runtime::PreflightCheck::Status::Failed    ? QStyle::SP_MessageBoxCritical
                        : c.status == runtime::PreflightCheck::Status::Warning ? QStyle::SP_MessageBoxWarning
                                                                           : QStyle::SP_DialogApplyButton;
    auto* mark = new QLabel(rows);
    mark->setPixmap(style()->standardIcon(pixmap).pixmap(icon, icon));
    mark->setAlignment(Qt::AlignHCenter | Qt::AlignTop);
    mark->setToolTip(c.status == runtime::PreflightCheck::Status::Failed    ? tr("failed")
                     : c.status == runtime::PreflightCheck::Status::Warning ? tr("warning")
                                                                        : tr("ok"));
    auto* text = new QLabel(rows);
    text->setObjectName(QStringLiteral("preflight.%1").arg(QString::fromStdString(c.what)));
    text->setTextFormat(Qt::RichText);
    text->setWordWrap(true);
    text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    const QString colour = c.status == runtime::PreflightCheck::Status::Failed ? QStringLiteral(" style=\"color:#b01c1c\"") : QString();
    text->setText(QStringLiteral("<b%1>%2</b>&nbsp;&nbsp;%3")
                      .arg(colour, QString::fromStdString(c.what).toHtmlEscaped(),
                           QString::fromStdString(c.message).toHtmlEscaped()));
    grid->addWidget(mark, static_cast<int>(k), 0, Qt::AlignTop);
    grid->addWidget(text, static_cast<int>(k), 1);
  }
  grid->setColumnStretch(1, 1);
  grid->setRowStretch(static_cast<int>(checks.size()), 1);
  delete m_list->takeWidget();
  m_list->setWidget(rows);
  {
    const QSignalBlocker block(m_toggle);
    m_toggle->setChecked(open && !checks.empty());
  }
  setOpen(open && !checks.empty());
  // The first failed check in view (the list may scroll).
  for (size_t k = 0; k < checks.size(); ++k)
    if (checks[k].status == runtime::PreflightCheck::Status::Failed) {
      QWidget* row = grid->itemAtPosition(static_cast<int>(k), 1)->widget();
      QTimer::singleShot(0, m_list, [list = m_list, row = QPointer<QWidget>(row)] {
        if (row) list->ensureWidgetVisible(row, 0, 4);
      });
      break;
    }
}

void PreflightList::setOpen(bool open) {
  m_list->setVisible(open);
  if (m_checks.empty()) return;
  const QString summary = preflightSummary(m_checks);
  m_toggle->setText(summary + (open ? QStringLiteral("  ▾") : QStringLiteral("  ▸")));
  m_toggle->setToolTip(tr("%1 — click to %2 the list").arg(summary, open ? tr("close") : tr("open")));
}

}  // namespace hap::studio
