#include "app/studio/core/jobs/calibrate_job.h"

#include <QtConcurrent/QtConcurrentRun>

#include <exception>
#include <optional>

namespace hap::studio {

// What one operation produced, handed from the worker thread to the GUI thread.
struct CalibrateJob::Outcome {
  std::shared_ptr<const db::CalibrationResult> result;
  std::optional<std::vector<db::CalibrationCandidate>> candidates;
  QString error;
  std::vector<db::SkippedRun> skipped;
  bool isCandidates = false;
};

CalibrateJob::CalibrateJob(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const db::CalibrationResult>>();
  m_watcher = new QFutureWatcher<std::shared_ptr<Outcome>>(this);
  connect(m_watcher, &QFutureWatcherBase::finished, this, [this] {
    const std::shared_ptr<Outcome> o = m_watcher->result();
    m_busy = false;
    Q_EMIT busyChanged(false);
    if (o->isCandidates) {
      if (o->candidates) Q_EMIT candidatesLoaded(*o->candidates);
      else Q_EMIT candidatesFailed(o->error);
    } else if (o->result) {
      m_lastSkipped.clear();
      Q_EMIT finished(o->result);
    } else {
      m_lastSkipped = o->skipped;
      Q_EMIT failed(o->error);
    }
  });
}

CalibrateJob::~CalibrateJob() {
  m_watcher->disconnect(this);
  m_watcher->waitForFinished();
}

bool CalibrateJob::launch(std::function<Outcome()> work) {
  if (m_busy) return false;
  m_busy = true;
  Q_EMIT busyChanged(true);
  m_watcher->setFuture(QtConcurrent::run([work = std::move(work)] { return std::make_shared<Outcome>(work()); }));
  return true;
}

bool CalibrateJob::start(const db::CalibrationRequest& request) {
  return launch([request] {
    Outcome o;
    try {
      o.result = std::make_shared<const db::CalibrationResult>(db::calibrateStore(request));
    } catch (const db::CalibrationError& e) {
      o.error = QString::fromStdString(e.what());
      o.skipped = e.skipped();
    } catch (const std::exception& e) {
      o.error = QString::fromStdString(e.what());
    }
    return o;
  });
}

bool CalibrateJob::loadCandidates(const QString& storePath) {
  return launch([path = storePath.toStdString()] {
    Outcome o;
    o.isCandidates = true;
    try {
      o.candidates = db::calibrationCandidates(path);
    } catch (const std::exception& e) {
      o.error = QString::fromStdString(e.what());
    }
    return o;
  });
}

}  // namespace hap::studio
