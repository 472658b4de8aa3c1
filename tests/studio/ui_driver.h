// Test helpers that drive modal dialogs and popup menus as a user does: wait until the dialog or
// menu is up, then type into it or pick an entry.
#pragma once

#include <QApplication>
#include <QFileDialog>
#include <QLineEdit>
#include <QMenu>
#include <QTimer>
#include <QtTest>

#include <functional>

namespace hap::studio::testing {

// Answers the next modal dialog of type D with `answer`, once it is up.
template <class D>
void whenDialog(std::function<void(D*)> answer) {
  auto* timer = new QTimer;
  timer->setInterval(20);
  QObject::connect(timer, &QTimer::timeout, [timer, answer] {
    if (auto* d = qobject_cast<D*>(QApplication::activeModalWidget())) {
      timer->stop();
      timer->deleteLater();
      answer(d);
    }
  });
  timer->start();
}

// Types `path` into the next file dialog's name box and presses Enter.
inline void answerFileDialog(const QString& path) {
  whenDialog<QFileDialog>([path](QFileDialog* d) {
    auto* edit = d->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"));
    QVERIFY(edit);
    edit->setText(path);
    QTest::keyClick(edit, Qt::Key_Return);
  });
}

// Answers the next popup menu: `answer` gets it once it is shown.
inline void whenMenu(std::function<void(QMenu*)> answer) {
  auto* timer = new QTimer;
  timer->setInterval(20);
  QObject::connect(timer, &QTimer::timeout, [timer, answer] {
    if (auto* m = qobject_cast<QMenu*>(QApplication::activePopupWidget())) {
      timer->stop();
      timer->deleteLater();
      answer(m);
    }
  });
  timer->start();
}

}  // namespace hap::studio::testing
