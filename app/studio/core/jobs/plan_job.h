// Plans the open model off the GUI thread, as `hap plan` does (plan::planModel: the same options
// give the same plan), streaming the search's events through a SearchEventThrottle and honouring
// cancellation.
//
// Contract:
// - One plan at a time: start() while busy cancels the running one first.
// - cancel() returns control at once: the job is idle and emits cancelled() before it returns; the
//   engine notices the flag at its next check (A* every 128 states, the beam every 64, the LP between
//   solves) and its thread ends in the background, its result dropped; workerStopped() says when
//   (for the benchmark). The destructor cancels and joins every planning thread.
// - searchEvents() comes at most once per interval (default 100 ms) while planning, and once more,
//   with everything left, just before finished() or failed().
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "app/studio/core/documents/model_document.h"
#include "app/studio/core/jobs/search_event_throttle.h"
#include "engine/cost/cluster.h"
#include "engine/plan/plan_request.h"

namespace hap::studio {

class PlanJob : public QObject {
  Q_OBJECT
 public:
  explicit PlanJob(QObject* parent = nullptr);
  ~PlanJob() override;

  // Plans `model` on `cluster` with `request`; the result is labelled `label`.
  void start(std::shared_ptr<const ModelDocument> model, const cost::Cluster& cluster,
             const plan::PlanRequest& request, const QString& label);
  void cancel();
  bool busy() const { return m_running != nullptr; }
  // The delivery interval of searchEvents (milliseconds).
  void setInterval(int milliseconds) { m_timer.setInterval(milliseconds); }
  int interval() const { return m_timer.interval(); }
  // The profile store a cluster's `profile:` is read from ("" = db::defaultPath(), as `hap plan`);
  // the next start() uses it (Run ▸ Calibrate… points it at the store it calibrated into).
  void setStorePath(const QString& path) { m_storePath = path; }
  QString storePath() const { return m_storePath; }

 Q_SIGNALS:
  void started();
  void searchEvents(const hap::studio::SearchSnapshot& snapshot);
  void finished(std::shared_ptr<const hap::studio::PlanDocument> plan, double seconds);
  void failed(const QString& message);
  void cancelled();
  void busyChanged(bool busy);
  // A cancelled job's planning thread has ended, `seconds` after cancel() (the engine's latency).
  void workerStopped(double seconds);

 private:
  struct Run;
  void poll();
  void deliver(const std::shared_ptr<Run>& run);
  void reapThreads();

  QTimer m_timer;
  QString m_storePath;
  std::shared_ptr<Run> m_running;
  std::vector<std::pair<std::shared_ptr<Run>, std::thread>> m_threads;
};

}  // namespace hap::studio
