#include "app/studio/core/jobs/open_job.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QThreadPool>
#include <QtConcurrent/QtConcurrentRun>
#include <fmt/format.h>

#include <exception>
#include <string>

#include "engine/base/utf8.h"

namespace hap::studio {

OpenJob::OpenJob(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const ModelDocument>>();
  qRegisterMetaType<std::shared_ptr<const PlanDocument>>();
  qRegisterMetaType<OpenError>();
}

OpenJob::~OpenJob() {
  // A running import stops at its next node; its queued result dies with this object.
  cancel();
  QThreadPool::globalInstance()->waitForDone();
}

void OpenJob::cancel() {
  if (m_cancel) m_cancel->store(true);
}

template <class Work, class Deliver>
void OpenJob::run(const QString& path, Work work, Deliver deliver) {
  cancel();
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  const quint64 generation = ++m_generation;
  if (m_running++ == 0) Q_EMIT busyChanged(true);
  Q_EMIT started(path);
  auto flag = m_cancel;
  QPointer<OpenJob> self(this);
  auto report = [self, generation](int done, int total) {
    // Called on the worker thread; hand the numbers to the GUI thread.
    if (!self) return;
    QMetaObject::invokeMethod(
        self.data(),
        [self, generation, done, total] {
          if (self && generation == self->m_generation) Q_EMIT self->progress(done, total);
        },
        Qt::QueuedConnection);
  };
  (void)QtConcurrent::run([self, generation, flag, work, deliver, report, path]() {
    // Last line of defence: the documents' functions return their failures, but an exception that
    // escapes them anyway would vanish into the discarded QFuture and leave the job busy for ever.
    // It is delivered as a failure naming the file instead.
    using Result = decltype(work(flag.get(), report));
    Result result;
    auto internal = [&](const std::string& what) {
      result = Result{};
      result.error = {OpenError::Kind::Failed,
                      fmt::format("{}: internal error while opening it: {} (please report it with the file)",
                                  path.toStdString(), what),
                      {}};
    };
    try {
      result = work(flag.get(), report);
    } catch (const std::exception& e) {
      internal(printableUtf8(e.what()));
    } catch (...) {
      internal("an exception of unknown type");
    }
    if (!self) return;
    QMetaObject::invokeMethod(
        self.data(),
        [self, generation, result, deliver, path] {
          if (!self) return;
          const bool busyBefore = self->m_running > 0;
          --self->m_running;
          if (generation == self->m_generation) deliver(self.data(), path, result);
          if (busyBefore && self->m_running == 0) Q_EMIT self->busyChanged(false);
        },
        Qt::QueuedConnection);
  });
}

void OpenJob::openModel(const QString& path, const std::vector<import::InputSpec>& inputOverrides) {
  const std::string file = path.toStdString();
  run(
      path,
      [file, inputOverrides](const std::atomic<bool>* cancel, std::function<void(int, int)> progress) {
        return importDocument(file, inputOverrides, cancel, std::move(progress));
      },
      [](OpenJob* self, const QString& p, const ImportResult& r) {
        if (r.document)
          Q_EMIT self->modelOpened(r.document);
        else
          Q_EMIT self->failed(p, r.error);
      });
}

void OpenJob::openPlan(const QString& planPath, const QString& modelPath) {
  const std::string plan = planPath.toStdString(), model = modelPath.toStdString();
  run(
      planPath,
      [plan, model](const std::atomic<bool>* cancel, std::function<void(int, int)> progress) {
        return studio::openPlan(plan, model, cancel, std::move(progress));
      },
      [](OpenJob* self, const QString& p, const PlanResult& r) {
        if (r.plan)
          Q_EMIT self->planOpened(r.plan, r.model);
        else
          Q_EMIT self->failed(p, r.error);
      });
}

}  // namespace hap::studio
