#include "app/studio/core/jobs/tune_job.h"

#include <signal.h>

#include <QDir>
#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <exception>
#include <string_view>

#include "app/studio/core/documents/cluster_document.h"
#include "app/studio/core/documents/launch_requests.h"
#include "app/studio/core/documents/launch_settings.h"
#include "app/studio/core/jobs/profile_job.h"
#include "engine/ir/dtype.h"

namespace hap::studio {

// The loop's callbacks, made on the loop's thread, posted to the job on the GUI thread. A posted
// call still queued when the job is destroyed is discarded with it (QObject removes its posted
// events), so no signal comes after the destructor.
class TuneJob::Listener : public tune::TuneListener {
 public:
  explicit Listener(TuneJob* job) : m_job(job) {}

  void onMessage(std::string_view line) override {
    post([job = m_job, text = QString::fromUtf8(line.data(), static_cast<qsizetype>(line.size()))] {
      Q_EMIT job->message(text);
    });
  }
  void onOutput(int rank, bool error, std::string_view line) override {
    // As `hap tune` without --verbose: the lines that say something went wrong.
    if (!error || line.find("rror") == std::string_view::npos) return;
    const QString text = QString::fromUtf8(line.data(), static_cast<qsizetype>(line.size()));
    post([job = m_job, text = (rank >= 0 ? QStringLiteral("[rank %1] ").arg(rank)
                                         : QStringLiteral("[profile] ")) +
                              text] { Q_EMIT job->message(text); });
  }
  void onRoundStarted(int round, const std::string& profile) override {
    post([job = m_job, round, p = QString::fromStdString(profile)] {
      Q_EMIT job->roundStarted(round, p);
    });
  }
  void onRunFinished(const tune::TuneRun& run) override {
    post([job = m_job, run] { Q_EMIT job->runFinished(run); });
  }
  void onCalibrated(int round, const tune::TuneCalibration& c) override {
    post([job = m_job, round, c] { Q_EMIT job->calibrated(round, c); });
  }
  void onRoundFinished(const tune::TuneRound& round) override {
    post([job = m_job, round] { Q_EMIT job->roundFinished(round); });
  }

  template <class F>
  void post(F&& f) {
    QMetaObject::invokeMethod(m_job, std::forward<F>(f), Qt::QueuedConnection);
  }

 private:
  TuneJob* m_job;
};

TuneJob::TuneJob(QObject* parent) : QObject(parent) {
  qRegisterMetaType<tune::TuneRun>();
  qRegisterMetaType<tune::TuneCalibration>();
  qRegisterMetaType<tune::TuneRound>();
  qRegisterMetaType<std::shared_ptr<const tune::TuneResult>>();
  m_pool.setMaxThreadCount(1);
}

TuneJob::~TuneJob() {
  m_interrupt.store(SIGTERM);
  m_future.waitForFinished();
}

bool TuneJob::start(tune::TuneRequest request) {
  if (m_busy) return false;
  m_future.waitForFinished();  // the last loop's thread, already done
  m_interrupt.store(0);
  request.interrupt = &m_interrupt;
  m_busy = true;
  Q_EMIT busyChanged(true);
  m_future = QtConcurrent::run(&m_pool, [this, request = std::move(request)] {
    Listener listener(this);
    std::shared_ptr<const tune::TuneResult> result;
    QString error;
    try {
      result = std::make_shared<const tune::TuneResult>(tune::runTune(request, &listener));
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    } catch (...) {
      error = tr("hap tune: the loop failed for an unknown reason");
    }
    // Queued after every callback of the loop: the end comes last.
    listener.post([this, result, error] {
      m_busy = false;
      Q_EMIT busyChanged(false);
      if (result)
        Q_EMIT finished(result);
      else
        Q_EMIT failed(error);
    });
  });
  return true;
}

void TuneJob::stop() {
  if (m_busy) m_interrupt.store(SIGTERM);
}

std::vector<std::string> TuneJob::inputArguments(const std::vector<import::InputSpec>& overrides) {
  std::vector<std::string> out;
  for (const import::InputSpec& s : overrides) {
    std::string arg = s.name + "=";
    for (size_t i = 0; i < s.shape.size(); ++i) arg += (i ? "x" : "") + std::to_string(s.shape[i]);
    if (s.dtypeGiven || (s.low && s.high)) arg += ":" + std::string(ir::dtypeName(s.dtype));
    if (s.low && s.high) arg += ":" + std::to_string(*s.low) + ".." + std::to_string(*s.high);
    out.push_back(std::move(arg));
  }
  return out;
}

std::string TuneJob::perRankList(const std::vector<double>& values) {
  if (std::all_of(values.begin(), values.end(), [](double v) { return v == 1; })) return {};
  QStringList parts;
  for (double v : values) parts << QString::number(v, 'g', 6);
  return parts.join(QLatin1Char(',')).toStdString();
}

std::vector<double> TuneJob::emulatedShares(const cost::Cluster& cluster) {
  return studio::emulatedShares(cluster);
}

TuneEmulation tuneEmulation(const TuneSetup& s) {
  const size_t n = static_cast<size_t>(s.cluster.size());
  TuneEmulation e;
  if (n > 0 && s.cpuShares.size() == n) {
    e.fromRunDock = true;
    e.cpuShares = s.cpuShares;
    e.slowdowns = s.slowdowns.size() == n ? s.slowdowns : std::vector<double>(n, 1.0);
  } else {
    e.cpuShares = TuneJob::emulatedShares(s.cluster);
    e.slowdowns.assign(n, 1.0);
  }
  return e;
}

std::optional<PreparedTune> prepareTune(const TuneSetup& s, const QDateTime& at, QString* error) {
  const auto fail = [error](const QString& why) {
    if (error) *error = why;
    return std::optional<PreparedTune>();
  };
  if (s.modelPath.isEmpty())
    return fail(QObject::tr("Open the model to tune first (File ▸ Open Model…)."));
  if (s.cluster.size() == 0)
    return fail(QObject::tr("Open the cluster to tune on first (File ▸ Open Cluster…)."));
  QString why;
  const QString folder =
      makeRunFolder(runsDirectory(),
                    QFileInfo(s.modelPath).completeBaseName() + QStringLiteral("-tune"), at, &why);
  if (folder.isEmpty()) return fail(why);
  const QString rounds = QDir(folder).filePath(QStringLiteral("rounds"));
  if (!QDir().mkpath(rounds)) {
    QDir(folder).removeRecursively();
    return fail(QObject::tr("Cannot create %1: make the runs folder writable or set $HAP_RUNS_DIR")
                    .arg(rounds));
  }
  QString clusterPath = s.clusterPath;
  if (clusterPath.isEmpty() || s.clusterModified) {
    clusterPath = QDir(folder).filePath(QStringLiteral("cluster.yaml"));
    const QString written = saveClusterFile(s.cluster, clusterPath);
    if (!written.isEmpty()) {
      QDir(folder).removeRecursively();
      return fail(written);
    }
  }
  const TuneEmulation e = tuneEmulation(s);
  PreparedTune p;
  p.folder = folder;
  p.tunedPlan = QDir(folder).filePath(QStringLiteral("tuned-plan.json"));
  tune::TuneRequest& r = p.request;
  r.modelPath = s.modelPath.toStdString();
  r.inputs = TuneJob::inputArguments(s.inputOverrides);
  r.clusterPath = clusterPath.toStdString();
  r.storePath = launchStorePath(s.storePath).toStdString();
  r.cpuShares = TuneJob::perRankList(e.cpuShares);
  r.slowdowns = TuneJob::perRankList(e.slowdowns);
  r.steps = s.steps;
  r.warmup = s.warmup;
  r.rounds = s.rounds;
  r.worker = launchWorker().toStdString();  // "" = the loop's own search, which says what to do
  r.hap = ProfileJob::locateHap().toStdString();  // the same
  r.workDir = rounds.toStdString();
  r.output = p.tunedPlan.toStdString();
  return p;
}

}  // namespace hap::studio
