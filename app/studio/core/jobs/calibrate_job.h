// Run ▸ Calibrate… off the GUI thread (issue 20, item 4): db::calibrateStore, the same calibration
// `hap calibrate` runs, and db::calibrationCandidates, the store's runs as the calibration sees them.
//
// Contract:
// - One operation at a time: start() and loadCandidates() return false (and do nothing) while busy.
// - Each ends with exactly one signal, queued to the GUI thread: finished(result) or failed(message)
//   for start(); candidatesLoaded(runs) or candidatesFailed(message) for loadCandidates(). Nothing
//   it is given throws out of it: every error a user can cause is a message naming the store.
// - A calibration cannot be interrupted (it takes well under a second for tens of runs); the
//   destructor waits for a running one, and no signal comes after it.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QString>

#include <functional>
#include <memory>
#include <vector>

#include "db/store_calibration.h"

namespace hap::studio {

class CalibrateJob : public QObject {
  Q_OBJECT
 public:
  explicit CalibrateJob(QObject* parent = nullptr);
  ~CalibrateJob() override;

  bool start(const db::CalibrationRequest& request);
  bool loadCandidates(const QString& storePath);
  bool busy() const { return m_busy; }
  // The runs the last failed calibration had left out before it failed (CalibrationError::skipped).
  const std::vector<db::SkippedRun>& lastSkipped() const { return m_lastSkipped; }

 Q_SIGNALS:
  void finished(std::shared_ptr<const hap::db::CalibrationResult> result);
  void failed(const QString& message);
  void candidatesLoaded(const std::vector<hap::db::CalibrationCandidate>& runs);
  void candidatesFailed(const QString& message);
  void busyChanged(bool busy);

 private:
  struct Outcome;
  bool launch(std::function<Outcome()> work);

  QFutureWatcher<std::shared_ptr<Outcome>>* m_watcher = nullptr;
  bool m_busy = false;
  std::vector<db::SkippedRun> m_lastSkipped;
};

}  // namespace hap::studio

Q_DECLARE_METATYPE(std::shared_ptr<const hap::db::CalibrationResult>)
