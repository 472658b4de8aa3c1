// An inline message bar above the graph (as KMessageWidget or an IDE's notification bar): shows
// why a file could not be opened without a modal dialog, so the window stays usable.
#pragma once

#include <QFrame>

class QLabel;

namespace hap::studio {

class ErrorBar : public QFrame {
  Q_OBJECT
 public:
  explicit ErrorBar(QWidget* parent = nullptr);
  void showMessage(const QString& message);
  QString message() const;

 private:
  QLabel* m_text = nullptr;
  QString m_message;  // whole
};

}  // namespace hap::studio
