// Help ▸ Getting Started: a short walk through open → plan → run → tune on a bundled model, read
// from a resource (:/studio/help/getting_started.md, app/studio/help/) and shown as Markdown in a
// modeless dialog, made once.
#pragma once

#include <QDialog>

class QTextBrowser;

namespace hap::studio {

class GettingStartedDialog : public QDialog {
  Q_OBJECT
 public:
  explicit GettingStartedDialog(QWidget* parent = nullptr);
  QTextBrowser* browser() const { return m_browser; }
  // The page's Markdown ("" when the resource is missing: a build without studio.qrc).
  static QString markdown();

 private:
  QTextBrowser* m_browser = nullptr;
};

}  // namespace hap::studio
