#include "app/studio/widgets/getting_started.h"

#include <QDialogButtonBox>
#include <QFile>
#include <QTextBrowser>
#include <QVBoxLayout>

// The resources of the widgets library (a static library: its resources are registered by hand;
// Q_INIT_RESOURCE must be called outside any namespace; twice is harmless).
static void initStudioResources() { Q_INIT_RESOURCE(studio); }

namespace hap::studio {

QString GettingStartedDialog::markdown() {
  initStudioResources();
  QFile file(QStringLiteral(":/studio/help/getting_started.md"));
  if (!file.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(file.readAll());
}

GettingStartedDialog::GettingStartedDialog(QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("gettingStarted"));
  setWindowTitle(tr("Getting Started"));
  m_browser = new QTextBrowser(this);
  m_browser->setObjectName(QStringLiteral("gettingStartedText"));
  m_browser->setOpenExternalLinks(true);
  m_browser->setMarkdown(markdown());
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);
  auto* column = new QVBoxLayout(this);
  column->addWidget(m_browser, 1);
  column->addWidget(buttons);
  resize(720, 640);
}

}  // namespace hap::studio
