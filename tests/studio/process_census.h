// "No worker outlives the app" checked by the process list, not assumed (issue 20): a test marks
// itself with an environment variable that every process it starts inherits (hap, hap-worker,
// their children, even after they are re-parented to init), and at the end lists the live
// processes that carry the mark. Linux /proc; processes of this user only.
#pragma once

#include <QByteArray>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QStringList>
#include <QThread>

namespace hap::test {

inline QByteArray censusTag() { return "HAP_TEST_CENSUS=" + QByteArray::number(QCoreApplication::applicationPid()); }

// Call first (initTestCase): every process started from now on carries the mark.
inline void markChildren() { qputenv("HAP_TEST_CENSUS", QByteArray::number(QCoreApplication::applicationPid())); }

// Live processes other than this one that carry the mark: "PID COMMAND LINE" each.
inline QStringList markedProcesses() {
  const QByteArray tag = censusTag();
  const qint64 self = QCoreApplication::applicationPid();
  QStringList found;
  for (const QString& name : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    bool isPid = false;
    const qint64 pid = name.toLongLong(&isPid);
    if (!isPid || pid == self) continue;
    QFile environ(QStringLiteral("/proc/%1/environ").arg(pid));
    if (!environ.open(QIODevice::ReadOnly)) continue;  // gone, or another user's
    const QList<QByteArray> vars = environ.readAll().split('\0');
    if (!vars.contains(tag)) continue;
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (stat.open(QIODevice::ReadOnly)) {
      const QByteArray s = stat.readAll();
      const int close = s.lastIndexOf(')');
      if (close > 0 && s.mid(close + 2, 1) == "Z") continue;  // a zombie has ended; its parent reaps it
    }
    QFile cmdline(QStringLiteral("/proc/%1/cmdline").arg(pid));
    QByteArray cmd;
    if (cmdline.open(QIODevice::ReadOnly)) cmd = cmdline.readAll().replace('\0', ' ').trimmed();
    found << QStringLiteral("%1 %2").arg(pid).arg(QString::fromLocal8Bit(cmd));
  }
  return found;
}

// The marked processes still alive after `waitMs` (processes being reaped get that long).
inline QStringList survivors(int waitMs = 5000) {
  QElapsedTimer t;
  t.start();
  QStringList left = markedProcesses();
  while (!left.isEmpty() && t.elapsed() < waitMs) {
    QThread::msleep(50);
    QCoreApplication::processEvents();
    left = markedProcesses();
  }
  return left;
}

}  // namespace hap::test
