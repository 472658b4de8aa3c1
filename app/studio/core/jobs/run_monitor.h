// Follows a run recorded in the profile store (issue 20, items 2 and 5): its ranks' steps as they
// are written, as the series and figures the Run dock shows. Works the same on a run that is going
// (polled) and on a finished one (read once, e.g. opened later from the store).
//
// Contract:
// - The store is opened read-only and each poll is two short reads (the run, its steps), so the
//   ranks writing into it are never held up (WAL: readers do not block writers). A store that
//   cannot be read is said in error() and tried again at the next poll; nothing throws.
// - follow() reads at once and then every interval (default 250 ms) while the run is `running`;
//   the read that finds it ended is the last. updated() comes after every read that changed
//   something (new steps, another status, an error).
// - Figures: the loss is rank 0's (every rank reports the same global loss); steps done is the
//   last step rank 0 recorded; the last step is the first recorded step - 1 (a resumed run) plus
//   warm-up + steps from the run's settings (the worker's defaults where not given); the mean step
//   time is rank 0's over its measured (not warm-up) steps, or over all while only warm-up steps
//   are in; throughput is the plan's global batch over that mean; the time left is that mean times
//   the steps left (0 once the run has ended). NaN where not known yet.
#pragma once

#include <QList>
#include <QObject>
#include <QPointF>
#include <QString>
#include <QTimer>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "db/store.h"
#include "engine/plan/plan.h"

namespace hap::studio {

// The samples of one optimizer step across all ranks (Plan::inputs' first input, times the
// machines of a replicated plan); 0 when the plan has no input with a batch dimension.
int64_t globalBatchSize(const plan::Plan& p);

class RunMonitor : public QObject {
  Q_OBJECT
 public:
  explicit RunMonitor(QObject* parent = nullptr);
  ~RunMonitor() override;

  // Follows run `run` of the store at `storePath` (contract above). `globalBatch` 0: read the
  // run's plan from the store.
  void follow(const QString& storePath, qint64 run, int64_t globalBatch = 0);
  // Reads now (e.g. once the launcher says the run ended).
  void refresh();
  // Stops polling; the figures stay.
  void stop();
  // Forgets the run.
  void clear();
  bool polling() const { return m_timer.isActive(); }
  void setInterval(int milliseconds) { m_timer.setInterval(milliseconds); }

  qint64 runId() const { return m_run; }
  QString storePath() const { return m_path; }
  // The run as last read (nullopt before the first read that found it).
  const std::optional<db::RunRecord>& record() const { return m_record; }
  bool running() const { return m_record && m_record->status == db::RunStatus::Running; }
  QString error() const { return m_error; }

  int ranks() const { return static_cast<int>(m_stepTime.size()); }
  int64_t stepsDone() const { return m_stepsDone; }
  int64_t lastStep() const { return m_lastStep; }
  int64_t globalBatch() const { return m_globalBatch; }
  double meanStepSeconds() const { return m_meanStep; }
  double samplesPerSecond() const;
  double secondsLeft() const;
  double lastLoss() const { return m_loss.isEmpty() ? std::numeric_limits<double>::quiet_NaN() : m_loss.back().y(); }

  // Series by step (x: the step, 1-based): rank 0's loss; each rank's wall time and CPU time of
  // each step, in seconds. Empty for a rank out of range.
  const QList<QPointF>& loss() const { return m_loss; }
  const QList<QPointF>& stepSeconds(int rank) const;
  const QList<QPointF>& cpuSeconds(int rank) const;
  // Every step read so far, in the order read (each poll adds what came since, by rank, then step).
  const std::vector<db::StepRecord>& steps() const { return m_steps; }

 Q_SIGNALS:
  void updated();

 private:
  void poll();
  void compute();

  QTimer m_timer;
  QString m_path;
  qint64 m_run = 0;
  std::unique_ptr<db::Store> m_store;
  std::optional<db::RunRecord> m_record;
  std::vector<db::StepRecord> m_steps;
  QString m_error;
  int64_t m_globalBatch = 0;
  bool m_batchFromStore = false;
  int64_t m_total = 0;  // warm-up + steps from the settings
  int64_t m_stepsDone = 0, m_lastStep = 0;
  double m_meanStep = std::numeric_limits<double>::quiet_NaN();
  QList<QPointF> m_loss;
  std::vector<QList<QPointF>> m_stepTime, m_cpuTime;
};

}  // namespace hap::studio
