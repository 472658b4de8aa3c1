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
#include <QList>
#include <QStringList>
#include <QThread>

namespace hap::test {

// Every process id in /proc (this user can see them all; its files may be unreadable).
inline QList<qint64> processIds() {
  QList<qint64> ids;
  for (const QString& name : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    bool isPid = false;
    const qint64 pid = name.toLongLong(&isPid);
    if (isPid) ids << pid;
  }
  return ids;
}

// Process `pid`'s command line with spaces between its arguments; empty when it is gone.
inline QByteArray commandLine(qint64 pid) {
  QFile f(QStringLiteral("/proc/%1/cmdline").arg(pid));
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll().replace('\0', ' ').trimmed();
}

// Whether process `pid` exists (a zombie too) and its command line contains `needle`.
inline bool alive(qint64 pid, const QByteArray& needle) {
  const QByteArray cmd = commandLine(pid);
  return !cmd.isEmpty() && cmd.contains(needle);
}

// Every process but this one whose command line contains `needle` (zombies included).
inline QList<qint64> processesWith(const QByteArray& needle) {
  QList<qint64> out;
  for (qint64 pid : processIds())
    if (pid != QCoreApplication::applicationPid() && alive(pid, needle)) out << pid;
  return out;
}

// /proc/PID/stat's fields after the command name (which may hold spaces): state, ppid, ...
inline QList<QByteArray> statFields(qint64 pid) {
  QFile f(QStringLiteral("/proc/%1/stat").arg(pid));
  if (!f.open(QIODevice::ReadOnly)) return {};
  const QByteArray stat = f.readAll();
  return stat.mid(stat.lastIndexOf(')') + 2).split(' ');
}

// The processes whose parent is `pid`.
inline QList<qint64> childrenOf(qint64 pid) {
  QList<qint64> out;
  for (qint64 id : processIds()) {
    const QList<QByteArray> fields = statFields(id);
    if (fields.size() > 1 && fields[1].toLongLong() == pid) out << id;
  }
  return out;
}

inline QByteArray censusTag() { return "HAP_TEST_CENSUS=" + QByteArray::number(QCoreApplication::applicationPid()); }

// Call first (initTestCase): every process started from now on carries the mark.
inline void markChildren() { qputenv("HAP_TEST_CENSUS", QByteArray::number(QCoreApplication::applicationPid())); }

// Live processes other than this one that carry the mark: "PID COMMAND LINE" each.
inline QStringList markedProcesses() {
  const QByteArray tag = censusTag();
  QStringList found;
  for (qint64 pid : processIds()) {
    if (pid == QCoreApplication::applicationPid()) continue;
    QFile environ(QStringLiteral("/proc/%1/environ").arg(pid));
    if (!environ.open(QIODevice::ReadOnly)) continue;  // gone, or another user's
    if (!environ.readAll().split('\0').contains(tag)) continue;
    const QList<QByteArray> fields = statFields(pid);
    if (!fields.isEmpty() && fields[0] == "Z") continue;  // a zombie has ended; its parent reaps it
    found << QStringLiteral("%1 %2").arg(pid).arg(QString::fromLocal8Bit(commandLine(pid)));
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
