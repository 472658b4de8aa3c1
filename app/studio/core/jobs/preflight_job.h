// The launch's preflight (runtime/launch/preflight.h) for the Run dock (issue 20, item 1), off the GUI
// thread: what would make a worker refuse to start or fail at its first step, found before any
// process starts. The checks themselves are the runtime's (runtime::preflight, the worker's own code);
// this file only runs them and says what they found.
//
// Contract:
// - One preflight at a time: start() while busy returns false and does nothing.
// - finished(passed) comes exactly once per start() that returned true, queued to the GUI thread,
//   when checks() already holds the result (passed: no check failed; warnings do not count).
// - A preflight cannot be interrupted (it takes tens of milliseconds for the zoo's models; the
//   data file is scanned whole). wait() blocks until a running one is done and delivers its
//   finished() before it returns; the destructor waits too, and no signal comes after it.
// - Nothing it is given throws out of it: runtime::preflight never throws for a bad request, and
//   anything that escapes it anyway becomes one failed check "Preflight" with its message.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QString>

#include <memory>
#include <vector>

#include "runtime/launch/preflight.h"

namespace hap::studio {

// One line for the collapsed check list: "All 9 checks passed", "All 9 checks passed, 1 with a
// warning", "2 of 9 checks failed: Data, Resume", "No checks yet" (empty list).
QString preflightSummary(const std::vector<runtime::PreflightCheck>& checks);
// The failed checks as one line for an error bar: "Data: <message>; Resume: <message>" ("" when
// none failed).
QString preflightFailures(const std::vector<runtime::PreflightCheck>& checks);

class PreflightJob : public QObject {
  Q_OBJECT
 public:
  explicit PreflightJob(QObject* parent = nullptr);
  ~PreflightJob() override;  // waits for a running preflight

  bool start(runtime::PreflightRequest request);
  bool busy() const { return m_busy; }
  // Blocks until a running preflight is done; its finished() is emitted before this returns.
  void wait();

  // The last finished preflight's checks (empty before the first), and whether none failed.
  const std::vector<runtime::PreflightCheck>& checks() const { return m_checks; }
  bool passed() const { return runtime::preflightPassed(m_checks) && !m_checks.empty(); }
  // Wall time of the last preflight, in seconds.
  double seconds() const { return m_seconds; }

 Q_SIGNALS:
  void finished(bool passed);

 private:
  struct Result;
  void deliver();

  QFutureWatcher<std::shared_ptr<Result>>* m_watcher = nullptr;
  bool m_busy = false;
  std::vector<runtime::PreflightCheck> m_checks;
  double m_seconds = 0;
};

}  // namespace hap::studio
