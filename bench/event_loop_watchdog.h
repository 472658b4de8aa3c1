// Measures the longest gap between ticks of a 5 ms timer on the GUI thread: how long the window
// went without processing events (over 100 ms feels frozen).
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <algorithm>

namespace hap::bench {

class Watchdog : public QObject {
 public:
  Watchdog() {
    m_timer.setInterval(5);
    QObject::connect(&m_timer, &QTimer::timeout, this, [this] {
      const qint64 now = m_clock.nsecsElapsed();
      if (m_last >= 0 && now - m_last > m_worst) {
        m_worst = now - m_last;
        m_worstAt = m_last;
      }
      m_last = now;
    });
  }
  void start() {
    m_worst = 0;
    m_worstAt = 0;
    m_last = -1;
    m_clock.start();
    m_timer.start();
  }
  double worstMs() const { return static_cast<double>(m_worst) / 1e6; }
  // When the longest stall began, in seconds since start().
  double worstAtSeconds() const { return static_cast<double>(m_worstAt) / 1e9; }

 private:
  QTimer m_timer;
  QElapsedTimer m_clock;
  qint64 m_last = -1, m_worst = 0, m_worstAt = 0;
};

}  // namespace hap::bench
