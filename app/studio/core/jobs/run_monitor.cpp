#include "app/studio/core/jobs/run_monitor.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <limits>
#include <cmath>
#include <exception>

#include <nlohmann/json.hpp>

#include "engine/plan/plan_json.h"

namespace hap::studio {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A worker option from the run's settings (strings as given on the command line, null when the
// worker's default held).
int64_t settingValue(const QJsonObject& settings, const char* key, int64_t fallback) {
  const QJsonValue v = settings.value(QLatin1String(key));
  if (v.isString()) {
    bool ok = false;
    const qlonglong n = v.toString().toLongLong(&ok);
    return ok ? n : fallback;
  }
  if (v.isDouble()) return static_cast<int64_t>(v.toDouble());
  return fallback;
}

}  // namespace

int64_t globalBatchSize(const plan::Plan& p) {
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const ir::Shape& shape = p.inputs[i].shape;
    if (p.replication.replicated()) {
      const int dim = i < p.replication.inputDims.size() ? p.replication.inputDims[i] : -1;
      if (dim >= 0 && dim < static_cast<int>(shape.size()))
        return shape[static_cast<size_t>(dim)] * p.replication.machines;
      continue;
    }
    if (!shape.empty()) return shape[0];
  }
  return 0;
}

RunMonitor::RunMonitor(QObject* parent) : QObject(parent) {
  m_timer.setInterval(250);
  connect(&m_timer, &QTimer::timeout, this, &RunMonitor::poll);
}

RunMonitor::~RunMonitor() = default;

void RunMonitor::clear() {
  m_timer.stop();
  m_store.reset();
  m_path.clear();
  m_run = 0;
  m_record.reset();
  m_steps.clear();
  m_error.clear();
  m_globalBatch = 0;
  m_batchFromStore = false;
  m_total = 0;
  compute();
}

void RunMonitor::follow(const QString& storePath, qint64 run, int64_t globalBatch) {
  clear();
  m_path = storePath;
  m_run = run;
  m_globalBatch = globalBatch;
  m_batchFromStore = globalBatch <= 0;
  m_timer.start();
  poll();
}

void RunMonitor::refresh() {
  if (m_run == 0) return;
  poll();
}

void RunMonitor::stop() {
  m_timer.stop();
  m_store.reset();  // no handle on the file while nothing is read
}

void RunMonitor::poll() {
  const size_t before = m_steps.size();
  const int statusBefore = m_record ? static_cast<int>(m_record->status) : -1;
  const QString errorBefore = m_error;
  try {
    if (!m_store) m_store = std::make_unique<db::Store>(m_path.toStdString(), db::Store::Mode::ReadOnly);
    // The run first: steps written after this read are picked up next time, and a run read as
    // ended has all its steps in (the launcher finishes it after the last rank is reaped).
    std::optional<db::RunRecord> r = m_store->run(m_run);
    if (!r) {
      m_error = tr("Run %1 is not in %2").arg(m_run).arg(m_path);
      m_timer.stop();
    } else {
      // Only the steps recorded since the last poll: a long run is not read whole four times a
      // second.
      std::vector<int64_t> after(static_cast<size_t>(std::max(r->ranks, 0)), std::numeric_limits<int64_t>::min());
      for (const db::StepRecord& s : m_steps)
        if (s.rank >= 0 && s.rank < r->ranks) after[static_cast<size_t>(s.rank)] = std::max(after[static_cast<size_t>(s.rank)], s.step);
      std::vector<db::StepRecord> fresh = m_store->steps(m_run, after, r->ranks);
      m_steps.insert(m_steps.end(), fresh.begin(), fresh.end());
      m_error.clear();
      if (!m_record || m_total == 0) {
        const QJsonObject settings = QJsonDocument::fromJson(QByteArray::fromStdString(r->settingsJson)).object();
        m_total = settingValue(settings, "warmup", 2) + settingValue(settings, "steps", 20);
      }
      if (m_batchFromStore && r->planId != 0) {
        m_batchFromStore = false;
        if (std::optional<db::PlanRecord> p = m_store->plan(r->planId)) {
          try {
            m_globalBatch = globalBatchSize(plan::planFromJson(nlohmann::json::parse(p->json), m_path.toStdString()));
          } catch (const std::exception&) {
            m_globalBatch = 0;  // an older plan format: no throughput
          }
        }
      }
      m_record = std::move(r);
      if (m_record->status != db::RunStatus::Running) stop();
    }
  } catch (const std::exception& e) {
    m_error = QString::fromUtf8(e.what());
    m_store.reset();  // opened again at the next poll
  }
  const bool changed = m_steps.size() != before || m_error != errorBefore ||
                       (m_record && statusBefore != static_cast<int>(m_record->status));
  if (!changed) return;
  compute();
  Q_EMIT updated();
}

void RunMonitor::compute() {
  m_loss.clear();
  m_stepTime.clear();
  m_cpuTime.clear();
  m_stepsDone = 0;
  m_meanStep = kNaN;
  int ranks = m_record ? m_record->ranks : 0;
  int64_t firstStep = 0;
  for (const db::StepRecord& s : m_steps) {
    ranks = std::max(ranks, s.rank + 1);
    if (firstStep == 0 || s.step < firstStep) firstStep = s.step;
  }
  m_stepTime.resize(static_cast<size_t>(std::max(ranks, 0)));
  m_cpuTime.resize(m_stepTime.size());
  double measured = 0, all = 0;
  int measuredCount = 0, allCount = 0;
  for (const db::StepRecord& s : m_steps) {
    if (s.rank < 0) continue;
    const auto x = static_cast<double>(s.step);
    m_stepTime[static_cast<size_t>(s.rank)].append(QPointF(x, s.seconds));
    m_cpuTime[static_cast<size_t>(s.rank)].append(QPointF(x, s.cpuSeconds));
    if (s.rank != 0) continue;
    if (std::isfinite(s.loss)) m_loss.append(QPointF(x, s.loss));
    m_stepsDone = std::max(m_stepsDone, s.step);
    if (!std::isfinite(s.seconds)) continue;
    all += s.seconds;
    ++allCount;
    if (!s.warmup) {
      measured += s.seconds;
      ++measuredCount;
    }
  }
  if (measuredCount > 0) m_meanStep = measured / measuredCount;
  else if (allCount > 0) m_meanStep = all / allCount;
  m_lastStep = m_total > 0 ? (firstStep > 0 ? firstStep - 1 : 0) + m_total : 0;
  m_lastStep = std::max(m_lastStep, m_stepsDone);
}

double RunMonitor::samplesPerSecond() const {
  return m_globalBatch > 0 && m_meanStep > 0 ? static_cast<double>(m_globalBatch) / m_meanStep : kNaN;
}

double RunMonitor::secondsLeft() const {
  if (m_record && m_record->status != db::RunStatus::Running) return 0;
  if (!std::isfinite(m_meanStep) || m_lastStep == 0) return kNaN;
  return m_meanStep * static_cast<double>(std::max<int64_t>(m_lastStep - m_stepsDone, 0));
}

const QList<QPointF>& RunMonitor::stepSeconds(int rank) const {
  static const QList<QPointF> none;
  return rank >= 0 && rank < static_cast<int>(m_stepTime.size()) ? m_stepTime[static_cast<size_t>(rank)] : none;
}

const QList<QPointF>& RunMonitor::cpuSeconds(int rank) const {
  static const QList<QPointF> none;
  return rank >= 0 && rank < static_cast<int>(m_cpuTime.size()) ? m_cpuTime[static_cast<size_t>(rank)] : none;
}

}  // namespace hap::studio
