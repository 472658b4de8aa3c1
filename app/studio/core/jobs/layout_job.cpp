#include "app/studio/core/jobs/layout_job.h"

#include <QFutureWatcher>
#include <QMetaType>
#include <QThreadPool>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>
#include <string>

namespace hap::studio {

namespace {

struct JobResult {
  std::shared_ptr<const Layout> layout;
  std::string error;  // non-empty when layoutGraph threw
};

// One worker thread for every layout job of the process: see the header.
QThreadPool* layoutPool() {
  static QThreadPool* pool = [] {
    auto* p = new QThreadPool;  // intentionally leaked: jobs may outlive every LayoutJob
    p->setMaxThreadCount(1);
    p->setExpiryTimeout(-1);
    return p;
  }();
  return pool;
}

}  // namespace

LayoutJob::LayoutJob(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const Layout>>("std::shared_ptr<const hap::studio::Layout>");
}

LayoutJob::~LayoutJob() {
  if (m_cancel) m_cancel->store(true);
}

quint64 LayoutJob::request(std::shared_ptr<const ir::Graph> graph,
                           std::shared_ptr<const ScopeTree> tree, CollapseState state,
                           LayoutOptions options) {
  if (m_cancel) m_cancel->store(true);
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  const quint64 generation = ++m_generation;

  auto cancel = m_cancel;
  auto future = QtConcurrent::run(layoutPool(), [graph = std::move(graph), tree = std::move(tree),
                                                 state = std::move(state), options, cancel]() {
    JobResult result;
    if (cancel->load() || !graph || !tree) return result;  // superseded while queued
    try {
      auto layout = std::make_shared<Layout>(layoutGraph(*graph, *tree, state, options, cancel.get()));
      result.layout = std::move(layout);
    } catch (const std::exception& e) {
      result.error = e.what();
    } catch (...) {
      result.error = "unknown error in graph layout";
    }
    return result;
  });

  auto* watcher = new QFutureWatcher<JobResult>(this);
  connect(watcher, &QFutureWatcher<JobResult>::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    if (generation != m_generation || !m_busy) return;  // superseded or cancelled: drop it
    const JobResult result = watcher->result();
    if (!result.error.empty()) {
      setBusy(false);
      Q_EMIT failed(QString::fromStdString(result.error), generation);
      return;
    }
    if (!result.layout || result.layout->cancelled) return;
    setBusy(false);
    Q_EMIT layoutReady(result.layout, generation);
  });
  watcher->setFuture(future);
  setBusy(true);
  return generation;
}

void LayoutJob::cancel() {
  if (m_cancel) m_cancel->store(true);
  setBusy(false);
}

void LayoutJob::setBusy(bool busy) {
  if (busy == m_busy) return;
  m_busy = busy;
  Q_EMIT busyChanged(busy);
}

}  // namespace hap::studio
