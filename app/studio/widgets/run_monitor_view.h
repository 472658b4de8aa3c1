// The Run dock's live monitor (issue 20, item 2): the run's status line, its progress toward the
// last step with the time left, the throughput, mean step time and loss, a key of the rank colours
// and a folder note; under them charts of the loss, the step time and the CPU time per step (one
// series per rank), all from a RunMonitor, redrawn at each of its updated(). The run's error bar
// goes on top, made when the first error is shown. It starts and stops nothing and emits nothing:
// the Run dock (LaunchView) says what the status line and the error bar say.
//
// Contract:
// - reset(ranks): no steps, every figure "—", empty charts with one series per rank. A monitor
//   update with another rank count draws the charts anew for that count.
// - A pane given to addBeside (the logs) shares the charts' splitter: once the splitter is first at
//   least 600 px wide (fitPanes, called by the dock when it is resized), the three charts get 60 %
//   of its width and the pane the rest.
#pragma once

#include <QWidget>

#include <vector>

class QBoxLayout;
class QChartView;
class QLabel;
class QLineSeries;
class QProgressBar;
class QSplitter;
class QValueAxis;

namespace hap::studio {

class ErrorBar;
class RunMonitor;

class RunMonitorView : public QWidget {
  Q_OBJECT
 public:
  // How the status line is coloured.
  enum class Tone { Plain, Going, Succeeded, Failed, Muted };

  explicit RunMonitorView(const RunMonitor* monitor, QWidget* parent = nullptr);

  void addBeside(QWidget* pane);
  void fitPanes();

  void reset(int ranks);
  // The status line's text; with a tone, its colour too.
  void setStatus(const QString& text);
  void setStatus(const QString& text, Tone tone);
  void clearStatus();
  // The run has started: the progress bar is busy until the first step is recorded.
  void showStarting();
  // The run has ended: a progress bar still busy says that no step was recorded.
  void showEnded();
  // The note at the end of the figures row (the run's folder, ...), and its tooltip.
  void setNote(const QString& text, const QString& toolTip);
  void showError(const QString& message);
  void hideError();

  QLabel* statusLabel() const { return m_status; }
  QProgressBar* progressBar() const { return m_progress; }
  QLabel* timeLeftLabel() const { return m_timeLeft; }
  QLabel* throughputLabel() const { return m_throughput; }
  QLabel* meanStepLabel() const { return m_meanStep; }
  ErrorBar* errorBar() const { return m_errorBar; }  // null before the first error
  QChartView* lossChart() const { return m_lossView; }
  QChartView* stepTimeChart() const { return m_stepView; }
  QChartView* cpuTimeChart() const { return m_cpuView; }
  QLineSeries* lossSeries() const { return m_lossSeries; }
  const std::vector<QLineSeries*>& stepTimeSeries() const { return m_stepSeries; }
  const std::vector<QLineSeries*>& cpuTimeSeries() const { return m_cpuSeries; }

 private:
  void rebuildCharts(int ranks);
  void onMonitorUpdated();

  const RunMonitor* m_monitor;
  ErrorBar* m_errorBar = nullptr;
  QBoxLayout* m_column = nullptr;
  QLabel* m_status = nullptr;
  QProgressBar* m_progress = nullptr;
  QLabel* m_timeLeft = nullptr;
  QLabel* m_throughput = nullptr;
  QLabel* m_meanStep = nullptr;
  QLabel* m_loss = nullptr;
  QLabel* m_note = nullptr;
  QLabel* m_rankKey = nullptr;
  QSplitter* m_chartsSplit = nullptr;
  bool m_splitSized = false;
  QChartView* m_lossView = nullptr;
  QChartView* m_stepView = nullptr;
  QChartView* m_cpuView = nullptr;
  QLineSeries* m_lossSeries = nullptr;
  std::vector<QLineSeries*> m_stepSeries, m_cpuSeries;
  QValueAxis* m_lossX = nullptr;
  QValueAxis* m_lossY = nullptr;
  QValueAxis* m_stepX = nullptr;
  QValueAxis* m_stepY = nullptr;
  QValueAxis* m_cpuX = nullptr;
  QValueAxis* m_cpuY = nullptr;
};

}  // namespace hap::studio
