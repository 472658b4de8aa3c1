#include "app/studio/core/jobs/launch_job.h"

#include <signal.h>

#include <QElapsedTimer>

#include <atomic>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>

#include "runtime/launch/launch_scripts.h"
#include "runtime/launch/launcher.h"

namespace hap::studio {

// What the launch thread and the GUI thread share. The thread only appends lines and sets the
// start and the result; the GUI thread drains them.
struct LaunchJob::Shared {
  std::atomic<int> interrupt{0};
  std::mutex mutex;
  std::deque<LaunchLine> lines;
  qint64 dropped = 0;
  std::optional<runtime::LocalLaunchStart> start;
  std::optional<runtime::LocalLaunchResult> result;
  QString error;  // the launch threw
  double seconds = 0;
  bool done = false;
  bool startDelivered = false;
  bool finishDelivered = false;
};

LaunchJob::LaunchJob(QObject* parent) : QObject(parent) {
  m_timer.setInterval(100);
  connect(&m_timer, &QTimer::timeout, this, &LaunchJob::deliverLines);
}

LaunchJob::~LaunchJob() {
  if (m_shared) m_shared->interrupt.store(SIGTERM);
  if (m_thread && m_thread->joinable()) m_thread->join();
}

bool LaunchJob::start(std::shared_ptr<const plan::Plan> plan, runtime::LocalLaunchRequest request) {
  if (busy() || !plan) return false;
  if (m_thread && m_thread->joinable()) m_thread->join();  // the last launch's thread, already done
  auto shared = std::make_shared<Shared>();
  m_shared = shared;
  m_stopRequested = false;
  m_run = 0;
  m_commandLine.clear();
  request.interrupt = &shared->interrupt;
  m_thread = std::make_unique<std::thread>([this, shared, plan = std::move(plan), request = std::move(request)] {
    QElapsedTimer clock;
    clock.start();
    const runtime::LineSink sink = [shared](int worker, runtime::OutputStream stream, std::string_view line) {
      LaunchLine l{worker, stream == runtime::OutputStream::Err,
                   QString::fromUtf8(line.data(), static_cast<qsizetype>(line.size()))};
      const std::lock_guard<std::mutex> lock(shared->mutex);
      shared->lines.push_back(std::move(l));
      if (shared->lines.size() > static_cast<size_t>(kMaxPendingLines)) {
        shared->lines.pop_front();
        ++shared->dropped;
      }
    };
    const auto onStart = [this, shared](const runtime::LocalLaunchStart& s) {
      {
        const std::lock_guard<std::mutex> lock(shared->mutex);
        shared->start = s;
      }
      QMetaObject::invokeMethod(this, [this, shared] { onStarted(shared); }, Qt::QueuedConnection);
    };
    std::optional<runtime::LocalLaunchResult> result;
    QString error;
    try {
      result = runtime::runLocalLaunch(*plan, request, sink, onStart);
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    {
      const std::lock_guard<std::mutex> lock(shared->mutex);
      shared->result = std::move(result);
      shared->error = error.isEmpty() && !shared->result ? tr("the launch ended without a result") : error;
      shared->seconds = clock.elapsed() / 1e3;
      shared->done = true;
    }
    QMetaObject::invokeMethod(this, [this, shared] { onDone(shared); }, Qt::QueuedConnection);
  });
  m_timer.start();
  Q_EMIT busyChanged(true);
  return true;
}

void LaunchJob::stop() {
  if (!m_shared) return;
  m_stopRequested = true;
  m_shared->interrupt.store(SIGTERM);
}

void LaunchJob::stopAndWait() {
  if (!m_shared) return;
  const std::shared_ptr<Shared> shared = m_shared;
  stop();
  if (m_thread && m_thread->joinable()) m_thread->join();
  onStarted(shared);  // when its queued call has not come yet
  onDone(shared);
}

void LaunchJob::onStarted(const std::shared_ptr<Shared>& shared) {
  if (shared != m_shared || shared->startDelivered) return;
  std::optional<runtime::LocalLaunchStart> start;
  {
    const std::lock_guard<std::mutex> lock(shared->mutex);
    start = shared->start;
  }
  if (!start) return;
  shared->startDelivered = true;
  QStringList words{QString::fromStdString(runtime::shellQuote(start->worker))};
  for (const std::string& a : start->args) words << QString::fromStdString(runtime::shellQuote(a));
  m_run = start->run;
  m_commandLine = words.join(QLatin1Char(' '));
  Q_EMIT started(start->run, start->port, start->ranks, m_commandLine);
}

void LaunchJob::deliverLines() {
  if (!m_shared) return;
  LaunchLines batch;
  qint64 dropped = 0;
  {
    const std::lock_guard<std::mutex> lock(m_shared->mutex);
    if (m_shared->lines.empty() && m_shared->dropped == 0) return;
    batch.reserve(static_cast<qsizetype>(m_shared->lines.size()) + 1);
    dropped = m_shared->dropped;
    m_shared->dropped = 0;
    for (LaunchLine& l : m_shared->lines) batch.push_back(std::move(l));
    m_shared->lines.clear();
  }
  if (dropped > 0)
    batch.prepend(LaunchLine{-1, true,
                             tr("[%1 earlier lines not shown: the workers printed faster than the log reads]").arg(dropped)});
  Q_EMIT linesArrived(batch);
}

void LaunchJob::onDone(const std::shared_ptr<Shared>& shared) {
  if (shared != m_shared || shared->finishDelivered) return;
  {
    const std::lock_guard<std::mutex> lock(shared->mutex);
    if (!shared->done) return;
  }
  shared->finishDelivered = true;
  onStarted(shared);
  deliverLines();
  m_timer.stop();
  if (m_thread && m_thread->joinable()) m_thread->join();

  LaunchOutcome o;
  o.seconds = shared->seconds;
  o.run = m_run;
  if (!shared->result) {
    o.kind = LaunchOutcome::Kind::Error;
    o.message = tr("The launch could not run: %1").arg(shared->error);
  } else {
    const runtime::LaunchResult& r = shared->result->result;
    o.run = shared->result->start.run;
    o.seconds = r.seconds;
    for (const runtime::WorkerExit& e : r.workers) o.exits << (e.succeeded() ? QString() : QString::fromStdString(runtime::describeExit(e)));
    switch (r.outcome) {
      case runtime::LaunchResult::Outcome::Succeeded:
        o.kind = LaunchOutcome::Kind::Succeeded;
        o.message = (r.workers.size() == 1 ? tr("The rank finished in %1 s")
                                          : tr("All %1 ranks finished in %2 s").arg(r.workers.size()))
                        .arg(r.seconds, 0, 'f', 1);
        break;
      case runtime::LaunchResult::Outcome::WorkerFailed: {
        o.kind = LaunchOutcome::Kind::RankFailed;
        o.failedRank = r.failedWorker;
        const runtime::WorkerExit& e = r.workers.at(static_cast<size_t>(r.failedWorker));
        o.exit = QString::fromStdString(runtime::describeExit(e));
        o.errorLine = QString::fromStdString(e.lastErrorLine);
        o.message = tr("Rank %1 failed (%2): %3")
                        .arg(o.failedRank)
                        .arg(o.exit, o.errorLine.isEmpty() ? tr("it printed no error") : o.errorLine);
        break;
      }
      case runtime::LaunchResult::Outcome::TimedOut:
        o.kind = LaunchOutcome::Kind::TimedOut;
        o.message = tr("Timed out after %1 s: every rank was stopped").arg(r.seconds, 0, 'f', 1);
        break;
      case runtime::LaunchResult::Outcome::Interrupted:
        o.kind = LaunchOutcome::Kind::Stopped;
        o.message = tr("Stopped after %1 s: every rank was ended (%2)")
                        .arg(r.seconds, 0, 'f', 1)
                        .arg(QString::fromLatin1(runtime::interruptName(r.signal)));
        break;
    }
  }
  m_shared.reset();
  Q_EMIT busyChanged(false);
  Q_EMIT finished(o);
}

}  // namespace hap::studio
