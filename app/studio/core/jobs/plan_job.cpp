#include "app/studio/core/jobs/plan_job.h"

#include <QMetaObject>
#include <QPointer>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <exception>

#include "db/cluster_profile.h"
#include "db/store.h"
#include "engine/base/error.h"

namespace hap::studio {
namespace {
constexpr int kPlanningNice = 5;
}  // namespace

// One planning run: shared by the GUI thread and its planning thread.
struct PlanJob::Run {
  std::atomic<bool> cancel{false};
  std::atomic<bool> done{false};
  SearchEventThrottle throttle;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point cancelledAt;
  // Written by the planning thread before `done`; read by the GUI thread after it.
  std::shared_ptr<const PlanDocument> plan;
  std::string error;
  double seconds = 0;
};

PlanJob::PlanJob(QObject* parent) : QObject(parent) {
  qRegisterMetaType<SearchSnapshot>();
  qRegisterMetaType<std::shared_ptr<const PlanDocument>>();
  m_timer.setInterval(100);
  connect(&m_timer, &QTimer::timeout, this, &PlanJob::poll);
}

PlanJob::~PlanJob() {
  for (auto& [run, thread] : m_threads) {
    run->cancel.store(true);
    thread.join();
  }
}

void PlanJob::start(std::shared_ptr<const ModelDocument> model, const cost::Cluster& cluster,
                    const plan::PlanRequest& request, const QString& label) {
  if (m_running) cancel();
  reapThreads();
  auto run = std::make_shared<Run>();
  m_running = run;
  QPointer<PlanJob> self(this);
  std::thread thread([run, self, model, cluster, request, label = label.toStdString(),
                      store = m_storePath.isEmpty() ? db::defaultPath() : m_storePath.toStdString()] {
    // Planning yields to the window: its threads (and the alternation's, which inherit this) run
    // at a lower priority, so the GUI thread gets a core whenever it wakes on a 2-core machine.
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kPlanningNice);
    try {
      import::ImportOptions options;  // as the model was opened (and as `hap plan` imports it)
      options.metaWeights = true;
      options.inputOverrides = model->inputOverrides;
      // A cluster naming a profile is priced by it, from the profile store (`hap plan`'s default
      // store, db::defaultPath(), unless setStorePath); a profile the store lacks fails the plan with its message.
      cost::Cluster priced = cluster;
      db::attachProfile(priced, store);
      plan::PlannedModel planned =
          plan::planModel(model->graph, options, priced, request, &run->throttle, &run->cancel);
      run->plan = makePlanDocument(std::move(planned.plan), planned.graph, "", label, request);
    } catch (const std::exception& e) {
      run->error = e.what();
    }
    run->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run->started).count();
    run->done.store(true);
    if (!self) return;
    QMetaObject::invokeMethod(self.data(), [self, run] { if (self) self->deliver(run); }, Qt::QueuedConnection);
  });
  m_threads.emplace_back(run, std::move(thread));
  m_timer.start();
  Q_EMIT started();
  Q_EMIT busyChanged(true);
}

void PlanJob::cancel() {
  if (!m_running) return;
  m_running->cancelledAt = std::chrono::steady_clock::now();
  m_running->cancel.store(true);
  m_running.reset();
  m_timer.stop();
  Q_EMIT cancelled();
  Q_EMIT busyChanged(false);
}

void PlanJob::poll() {
  if (!m_running) return;
  SearchSnapshot s = m_running->throttle.take();
  if (!s.empty()) Q_EMIT searchEvents(s);
}

void PlanJob::deliver(const std::shared_ptr<Run>& run) {
  if (run != m_running) {  // cancelled: its thread has ended
    if (run->cancel.load())
      Q_EMIT workerStopped(std::chrono::duration<double>(std::chrono::steady_clock::now() - run->cancelledAt).count());
    reapThreads();
    return;
  }
  poll();
  m_running.reset();
  m_timer.stop();
  reapThreads();
  if (run->plan)
    Q_EMIT finished(run->plan, run->seconds);
  else
    Q_EMIT failed(QString::fromStdString(run->error));
  Q_EMIT busyChanged(false);
}

void PlanJob::reapThreads() {
  for (auto it = m_threads.begin(); it != m_threads.end();) {
    if (it->first->done.load()) {
      it->second.join();
      it = m_threads.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace hap::studio
