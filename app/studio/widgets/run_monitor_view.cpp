#include "app/studio/widgets/run_monitor_view.h"

#include <QBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QSplitter>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLegend>
#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "app/studio/core/jobs/run_monitor.h"
#include "app/studio/widgets/chart_style.h"
#include "app/studio/widgets/error_bar.h"

namespace hap::studio {
namespace {

// One colour per rank, as the Profiles dock's run chart draws them.
const QColor kRankColours[] = {QColor(0x2b, 0x6c, 0xb0), QColor(0xd9, 0x7a, 0x1c), QColor(0x2e, 0x8b, 0x57),
                               QColor(0xb0, 0x3a, 0x8c), QColor(0x6a, 0x5a, 0xcd), QColor(0x8b, 0x5a, 0x2b)};
const QColor kLossColour(0x20, 0x20, 0x20);

QColor rankColour(int rank) { return kRankColours[static_cast<size_t>(rank) % std::size(kRankColours)]; }

// "<1 s", "42 s", "3 min 05 s", "2 h 10 min".
QString formatTimeLeft(double seconds) {
  if (!std::isfinite(seconds)) return QStringLiteral("—");
  if (seconds < 1) return QObject::tr("<1 s");
  const auto s = static_cast<qint64>(std::llround(seconds));
  if (s < 60) return QObject::tr("%1 s").arg(s);
  if (s < 3600) return QObject::tr("%1 min %2 s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
  return QObject::tr("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QLatin1Char('0'));
}

QValueAxis* makeAxis(const QString& title, const QFont& font) {
  auto* a = new QValueAxis;
  a->setTitleText(title);
  QFont f = font;
  f.setPointSizeF(std::max(7.0, font.pointSizeF() * 0.85));
  a->setLabelsFont(f);
  QFont t = f;
  a->setTitleFont(t);
  return a;
}

// Integer steps on the x axis: ticks at multiples of 1, 2 or 5 × 10^k, about 5 of them.
void setStepRange(QValueAxis* axis, double first, double last) {
  last = std::max(last, first + 1);
  const double raw = std::max(1.0, (last - first) / 5);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double interval = raw <= magnitude ? magnitude
                          : raw <= 2 * magnitude ? 2 * magnitude
                          : raw <= 5 * magnitude ? 5 * magnitude
                                                 : 10 * magnitude;
  // The interval before the range: a wide range with the old interval would lay out every tick.
  if (axis->tickInterval() < interval) axis->setTickInterval(interval);
  axis->setTickType(QValueAxis::TicksDynamic);
  axis->setTickAnchor(0);
  setAxisRange(axis, first, last);
  axis->setTickInterval(interval);
  axis->setLabelFormat(QStringLiteral("%d"));
}

void setValueRange(QValueAxis* axis, double low, double high, bool fromZero) {
  if (!std::isfinite(low) || !std::isfinite(high)) {
    axis->setRange(0, 1);
    return;
  }
  if (fromZero) {
    setAxisRange(axis, 0, high > 0 ? high * 1.1 : 1);
  } else {
    const double pad = std::max((high - low) * 0.08, std::abs(high) * 0.01 + 1e-9);
    setAxisRange(axis, low - pad, high + pad);
  }
  axis->applyNiceNumbers();
  axis->setLabelFormat(QStringLiteral("%.4g"));
}

}  // namespace

RunMonitorView::RunMonitorView(const RunMonitor* monitor, QWidget* parent) : QWidget(parent), m_monitor(monitor) {
  setObjectName(QStringLiteral("runMonitor"));
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(4, 0, 0, 0);
  column->setSpacing(4);

  m_column = column;  // the error bar goes on top when first needed (showError)

  m_status = new QLabel(this);
  m_status->setObjectName(QStringLiteral("runStatus"));
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_progress = new QProgressBar(this);
  m_progress->setObjectName(QStringLiteral("runProgress"));
  m_progress->setMinimumWidth(160);
  m_progress->setTextVisible(true);
  m_timeLeft = new QLabel(this);
  m_timeLeft->setObjectName(QStringLiteral("timeLeft"));
  m_timeLeft->setToolTip(tr("Mean step time of the measured steps so far × steps left"));
  auto* top = new QHBoxLayout;
  top->setSpacing(10);
  top->addWidget(m_status, 0);
  top->addWidget(m_progress, 1);
  top->addWidget(m_timeLeft, 0);
  column->addLayout(top);

  m_throughput = new QLabel(this);
  m_throughput->setObjectName(QStringLiteral("throughput"));
  m_throughput->setToolTip(tr("The plan's global batch over rank 0's mean step time"));
  m_meanStep = new QLabel(this);
  m_meanStep->setObjectName(QStringLiteral("meanStep"));
  m_meanStep->setToolTip(tr("Rank 0's mean wall time per step, warm-up steps left out"));
  m_loss = new QLabel(this);
  m_loss->setObjectName(QStringLiteral("lastLoss"));
  m_note = new QLabel(this);
  m_note->setObjectName(QStringLiteral("runFolder"));
  m_note->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_note->setStyleSheet(QStringLiteral("color: gray;"));
  m_note->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the window
  m_note->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  m_rankKey = new QLabel(this);
  m_rankKey->setObjectName(QStringLiteral("rankKey"));
  m_rankKey->setTextFormat(Qt::RichText);
  m_rankKey->setToolTip(tr("The colour of each rank in the step time and CPU time charts"));
  auto* figures = new QHBoxLayout;
  figures->setSpacing(18);
  figures->addWidget(m_throughput);
  figures->addWidget(m_meanStep);
  figures->addWidget(m_loss);
  figures->addWidget(m_rankKey);
  figures->addWidget(m_note, 1);
  column->addLayout(figures);

  m_lossView = makeChartView(this, QStringLiteral("lossChart"));
  m_stepView = makeChartView(this, QStringLiteral("stepTimeChart"));
  m_cpuView = makeChartView(this, QStringLiteral("cpuTimeChart"));
  for (QChartView* v : {m_lossView, m_stepView, m_cpuView}) v->setMinimumSize(170, 170);

  auto* charts = new QSplitter(Qt::Horizontal, this);
  charts->setObjectName(QStringLiteral("runCharts"));
  charts->addWidget(m_lossView);
  charts->addWidget(m_stepView);
  charts->addWidget(m_cpuView);
  charts->setStretchFactor(0, 2);
  charts->setStretchFactor(1, 2);
  charts->setStretchFactor(2, 2);
  charts->setChildrenCollapsible(false);
  m_chartsSplit = charts;
  column->addWidget(charts, 1);

  connect(m_monitor, &RunMonitor::updated, this, &RunMonitorView::onMonitorUpdated);
}

void RunMonitorView::addBeside(QWidget* pane) {
  m_chartsSplit->addWidget(pane);
  m_chartsSplit->setStretchFactor(m_chartsSplit->indexOf(pane), 3);
}

void RunMonitorView::fitPanes() {
  // The charts share 60 % of the splitter's width, the pane beside them the rest; set once there is a width.
  const int w = m_chartsSplit->width();
  if (m_splitSized || w < 600) return;
  m_splitSized = true;
  const int chart = w * 3 / 5 / 3;
  QList<int> sizes{chart, chart, chart};
  for (int k = 3; k < m_chartsSplit->count(); ++k) sizes << w - 3 * chart;
  m_chartsSplit->setSizes(sizes);
}

void RunMonitorView::reset(int ranks) {
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setFormat(tr("No steps yet"));
  m_timeLeft->setText(tr("Time left: —"));
  m_throughput->setText(tr("Throughput: —"));
  m_meanStep->setText(tr("Mean step: —"));
  m_loss->setText(tr("Loss: —"));
  rebuildCharts(ranks);
}

void RunMonitorView::setStatus(const QString& text) { m_status->setText(text); }

void RunMonitorView::setStatus(const QString& text, Tone tone) {
  m_status->setText(text);
  switch (tone) {
    case Tone::Plain: m_status->setStyleSheet(QString()); break;
    case Tone::Going: m_status->setStyleSheet(QStringLiteral("color: #1d5a9e;")); break;
    case Tone::Succeeded: m_status->setStyleSheet(QStringLiteral("color: #2e7d32;")); break;
    case Tone::Failed: m_status->setStyleSheet(QStringLiteral("color: #b01c1c;")); break;
    case Tone::Muted: m_status->setStyleSheet(QStringLiteral("color: #6b6b6b;")); break;
  }
}

void RunMonitorView::clearStatus() { m_status->clear(); }

void RunMonitorView::showStarting() {
  m_progress->setRange(0, 0);  // busy until the first step is recorded
  m_progress->setFormat(tr("Starting…"));
}

void RunMonitorView::showEnded() {
  if (m_progress->maximum() == 0) {  // no step was recorded
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setFormat(tr("No steps recorded"));
  }
}

void RunMonitorView::setNote(const QString& text, const QString& toolTip) {
  m_note->setText(text);
  m_note->setToolTip(toolTip);
}

void RunMonitorView::showError(const QString& message) {
  if (!m_errorBar) {
    // Made on the first error: the window's own error bar stays the first ErrorBar among its children.
    m_errorBar = new ErrorBar(this);
    m_errorBar->setObjectName(QStringLiteral("runErrorBar"));
    m_column->insertWidget(0, m_errorBar);
  }
  m_errorBar->showMessage(message);
}

void RunMonitorView::hideError() {
  if (m_errorBar) m_errorBar->hide();
}

void RunMonitorView::rebuildCharts(int ranks) {
  const QFont f = font();
  const auto setUp = [&](QChartView* view, const QString& title, const QString& yTitle, QValueAxis** x, QValueAxis** y) {
    QChart* c = view->chart();
    emptyChart(c);
    c->setTitle(title);
    *x = makeAxis(tr("step"), f);
    *y = makeAxis(yTitle, f);
    c->addAxis(*x, Qt::AlignBottom);
    c->addAxis(*y, Qt::AlignLeft);
    setStepRange(*x, 1, 2);
    setValueRange(*y, NAN, NAN, true);
    QFont legend = f;
    legend.setPointSizeF(std::max(7.0, f.pointSizeF() * 0.85));
    c->legend()->setFont(legend);
  };
  setUp(m_lossView, tr("Loss"), tr("loss"), &m_lossX, &m_lossY);
  setUp(m_stepView, tr("Step time per rank"), tr("ms per step"), &m_stepX, &m_stepY);
  setUp(m_cpuView, tr("CPU time per rank"), tr("CPU ms per step"), &m_cpuX, &m_cpuY);

  m_lossSeries = new QLineSeries;
  m_lossSeries->setName(tr("loss (all ranks)"));
  QPen lossPen(kLossColour);
  lossPen.setWidthF(2);
  m_lossSeries->setPen(lossPen);
  m_lossView->chart()->addSeries(m_lossSeries);
  m_lossSeries->attachAxis(m_lossX);
  m_lossSeries->attachAxis(m_lossY);
  m_lossView->chart()->legend()->setVisible(false);

  m_stepSeries.clear();
  m_cpuSeries.clear();
  for (int r = 0; r < ranks; ++r) {
    for (auto [view, list, x, y] : {std::tuple{m_stepView, &m_stepSeries, m_stepX, m_stepY},
                                    std::tuple{m_cpuView, &m_cpuSeries, m_cpuX, m_cpuY}}) {
      auto* s = new QLineSeries;
      s->setName(tr("rank %1").arg(r));
      QPen pen(rankColour(r));
      pen.setWidthF(1.5);
      s->setPen(pen);
      view->chart()->addSeries(s);
      s->attachAxis(x);
      s->attachAxis(y);
      list->push_back(s);
    }
  }
  // One legend for both per-rank charts, in the figures row (a chart's own is too narrow).
  m_stepView->chart()->legend()->setVisible(false);
  m_cpuView->chart()->legend()->setVisible(false);
  QStringList keys;
  for (int r = 0; r < ranks; ++r)
    keys << QStringLiteral("<span style=\"color:%1\">&#9632;</span>&nbsp;%2").arg(rankColour(r).name()).arg(r);
  m_rankKey->setText(ranks > 0 ? tr("Ranks: %1").arg(keys.join(QStringLiteral("&nbsp;&nbsp;"))) : QString());
}

void RunMonitorView::onMonitorUpdated() {
  const RunMonitor& m = *m_monitor;
  if (m.ranks() > 0 && static_cast<size_t>(m.ranks()) != m_stepSeries.size()) rebuildCharts(m.ranks());
  if (!m.error().isEmpty() && m.steps().empty()) {
    m_progress->setFormat(tr("Cannot read the store: %1").arg(m.error()));
    return;
  }
  const int64_t last = m.lastStep(), done = m.stepsDone();
  if (last > 0 && done > 0) {
    m_progress->setRange(0, static_cast<int>(std::min<int64_t>(last, std::numeric_limits<int>::max())));
    m_progress->setValue(static_cast<int>(std::min<int64_t>(done, std::numeric_limits<int>::max())));
    m_progress->setFormat(tr("Step %1 of %2").arg(done).arg(last));
  } else if (!m.running() && m.record()) {
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setFormat(tr("No steps recorded"));
  }
  m_timeLeft->setText(tr("Time left: %1").arg(m.running() ? formatTimeLeft(m.secondsLeft()) : QStringLiteral("—")));
  const double sps = m.samplesPerSecond();
  m_throughput->setText(std::isfinite(sps) ? tr("Throughput: %1 samples/s").arg(sps, 0, 'f', sps < 100 ? 1 : 0)
                                           : tr("Throughput: —"));
  m_meanStep->setText(std::isfinite(m.meanStepSeconds())
                          ? tr("Mean step: %1 ms").arg(m.meanStepSeconds() * 1e3, 0, 'f', 1)
                          : tr("Mean step: —"));
  m_loss->setText(std::isfinite(m.lastLoss()) ? tr("Loss: %1").arg(m.lastLoss(), 0, 'g', 5) : tr("Loss: —"));

  // Charts: x from the first recorded step to the last step the run will reach.
  double first = INFINITY, lossLow = INFINITY, lossHigh = -INFINITY, stepHigh = 0, cpuHigh = 0;
  for (const QPointF& p : m.loss()) {
    first = std::min(first, p.x());
    lossLow = std::min(lossLow, p.y());
    lossHigh = std::max(lossHigh, p.y());
  }
  m_lossSeries->replace(m.loss());
  for (int r = 0; r < m.ranks() && static_cast<size_t>(r) < m_stepSeries.size(); ++r) {
    QList<QPointF> step = m.stepSeconds(r), cpu = m.cpuSeconds(r);
    for (QPointF& p : step) {
      p.setY(p.y() * 1e3);
      first = std::min(first, p.x());
      stepHigh = std::max(stepHigh, p.y());
    }
    for (QPointF& p : cpu) {
      p.setY(p.y() * 1e3);
      cpuHigh = std::max(cpuHigh, p.y());
    }
    m_stepSeries[static_cast<size_t>(r)]->replace(step);
    m_cpuSeries[static_cast<size_t>(r)]->replace(cpu);
  }
  // x: the steps recorded so far (the progress bar says how far the run goes).
  double lastX = first;
  for (QLineSeries* s : m_stepSeries)
    if (s->count() > 0) lastX = std::max(lastX, s->at(s->count() - 1).x());
  if (!m.loss().isEmpty()) lastX = std::max(lastX, m.loss().back().x());
  if (!std::isfinite(first)) first = lastX = 1;
  for (QValueAxis* x : {m_lossX, m_stepX, m_cpuX}) setStepRange(x, first, lastX);
  setValueRange(m_lossY, lossLow, lossHigh, false);
  setValueRange(m_stepY, 0, stepHigh, true);
  setValueRange(m_cpuY, 0, cpuHigh, true);
}

}  // namespace hap::studio
