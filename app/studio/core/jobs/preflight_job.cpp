#include "app/studio/core/jobs/preflight_job.h"

#include <QElapsedTimer>
#include <QObject>
#include <QStringList>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>

namespace hap::studio {

QString preflightSummary(const std::vector<runtime::PreflightCheck>& checks) {
  if (checks.empty()) return QObject::tr("No checks yet");
  QStringList failed;
  int warnings = 0;
  for (const runtime::PreflightCheck& c : checks) {
    if (c.status == runtime::PreflightCheck::Status::Failed) failed << QString::fromStdString(c.what);
    if (c.status == runtime::PreflightCheck::Status::Warning) ++warnings;
  }
  const auto n = static_cast<qsizetype>(checks.size());
  const QString all = n == 1 ? QObject::tr("1 check") : QObject::tr("%1 checks").arg(n);
  if (!failed.isEmpty()) return QObject::tr("%1 of %2 failed: %3").arg(failed.size()).arg(all, failed.join(QStringLiteral(", ")));
  if (warnings == 1) return QObject::tr("All %1 passed, 1 with a warning").arg(all);
  if (warnings > 1) return QObject::tr("All %1 passed, %2 with a warning").arg(all).arg(warnings);
  return n == 1 ? QObject::tr("The check passed") : QObject::tr("All %1 passed").arg(all);
}

QString preflightFailures(const std::vector<runtime::PreflightCheck>& checks) {
  QStringList out;
  for (const runtime::PreflightCheck& c : checks)
    if (c.status == runtime::PreflightCheck::Status::Failed)
      out << QStringLiteral("%1: %2").arg(QString::fromStdString(c.what), QString::fromStdString(c.message));
  return out.join(QStringLiteral("; "));
}

// What the worker thread hands to the GUI thread.
struct PreflightJob::Result {
  std::vector<runtime::PreflightCheck> checks;
  double seconds = 0;
};

PreflightJob::PreflightJob(QObject* parent) : QObject(parent) {
  m_watcher = new QFutureWatcher<std::shared_ptr<Result>>(this);
  connect(m_watcher, &QFutureWatcherBase::finished, this, &PreflightJob::deliver);
}

PreflightJob::~PreflightJob() {
  m_watcher->disconnect(this);
  m_watcher->waitForFinished();
}

bool PreflightJob::start(runtime::PreflightRequest request) {
  if (m_busy) return false;
  m_busy = true;
  m_watcher->setFuture(QtConcurrent::run([request = std::move(request)] {
    auto result = std::make_shared<Result>();
    QElapsedTimer clock;
    clock.start();
    try {
      result->checks = runtime::preflight(request);
    } catch (const std::exception& e) {
      result->checks = {{"Preflight", runtime::PreflightCheck::Status::Failed, e.what()}};
    }
    result->seconds = clock.elapsed() / 1e3;
    return result;
  }));
  return true;
}

void PreflightJob::wait() {
  if (!m_busy) return;
  m_watcher->waitForFinished();
  deliver();  // its queued finished() finds the job idle and does nothing
}

void PreflightJob::deliver() {
  if (!m_busy || !m_watcher->isFinished()) return;
  m_busy = false;
  const std::shared_ptr<Result> r = m_watcher->result();
  m_checks = r ? r->checks : std::vector<runtime::PreflightCheck>{};
  m_seconds = r ? r->seconds : 0;
  Q_EMIT finished(passed());
}

}  // namespace hap::studio
