#include "app/studio/widgets/tune_dialog.h"

#include <QColor>
#include <QDateTime>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPen>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>

#include <algorithm>
#include <cmath>

#include "app/studio/core/models/tune_rounds_model.h"
#include "app/studio/widgets/chart_style.h"
#include "app/studio/widgets/fixed_font.h"

namespace hap::studio {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

QLabel* boldLabel(const QString& text, QWidget* parent) {
  auto* l = new QLabel(text, parent);
  QFont f = l->font();
  f.setBold(true);
  l->setFont(f);
  return l;
}

// One colour per plan, the same in every round: HAP's first, then the baselines in a fixed order.
QColor colourOf(const QString& strategy) {
  if (strategy == QLatin1String("hap")) return QColor(0x4e, 0x79, 0xa7);
  if (strategy == QLatin1String("hap-given")) return QColor(0x76, 0xb7, 0xb2);  // before tuning
  if (strategy == QLatin1String("dp-cp")) return QColor(0xf2, 0x8e, 0x2b);
  if (strategy == QLatin1String("dp-ev")) return QColor(0x59, 0xa1, 0x4f);
  if (strategy == QLatin1String("fsdp")) return QColor(0xb0, 0x7a, 0xa1);
  if (strategy == QLatin1String("megatron")) return QColor(0xe1, 0x57, 0x59);
  return QColor(0x9c, 0x75, 0x5f);
}

// "1, 0.5, 0.25".
QString listOf(const std::vector<double>& values) {
  QStringList parts;
  for (double v : values) parts << QString::number(v, 'g', 4);
  return parts.join(QStringLiteral(", "));
}

QString ms(double seconds) {
  return TuneRoundsModel::milliseconds(seconds);
}

}  // namespace

// A plan's two lines: its measured step per round (solid) and its predicted one (dashed).
struct TuneDialog::Series {
  QString strategy;
  int order = 0;
  QLineSeries* measured = nullptr;
  QLineSeries* predicted = nullptr;
};

TuneDialog::TuneDialog(QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("tuneDialog"));
  setWindowTitle(tr("Tune: Plan, Run, Calibrate, Re-plan"));
  m_job = new TuneJob(this);
  m_rounds = new TuneRoundsModel(this);

  // What is tuned.
  m_target = new QLabel(this);
  m_target->setObjectName(QStringLiteral("tuneTarget"));
  m_target->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_target->setWordWrap(true);
  m_emulation = new QLabel(this);
  m_emulation->setObjectName(QStringLiteral("tuneEmulation"));
  m_emulation->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_emulation->setWordWrap(true);

  // How long each run is, and how many rounds at most.
  const tune::TuneRequest defaults;
  m_steps = new QSpinBox(this);
  m_steps->setObjectName(QStringLiteral("tuneSteps"));
  m_steps->setRange(1, 100000);
  m_steps->setValue(static_cast<int>(defaults.steps));
  m_steps->setToolTip(tr("Measured steps per run, after the warm-up (hap tune --steps)"));
  m_warmup = new QSpinBox(this);
  m_warmup->setObjectName(QStringLiteral("tuneWarmup"));
  m_warmup->setRange(0, 100000);
  m_warmup->setValue(static_cast<int>(defaults.warmup));
  m_warmup->setToolTip(
      tr("Warm-up steps per run, left out of the measurement (hap tune --warmup)"));
  m_roundsBox = new QSpinBox(this);
  m_roundsBox->setObjectName(QStringLiteral("tuneRounds"));
  m_roundsBox->setRange(1, 100);
  m_roundsBox->setValue(defaults.rounds);
  m_roundsBox->setToolTip(
      tr("At most this many rounds of plan, run, calibrate; the loop stops earlier when a round "
         "does not improve the best measured step (hap tune --rounds)"));
  m_start = new QPushButton(tr("&Start"), this);
  m_start->setObjectName(QStringLiteral("tuneStart"));
  m_start->setDefault(true);
  m_start->setToolTip(tr(
      "Profile the device types if the store has none, then plan, run HAP's plan and the baselines "
      "that matter, calibrate and re-plan, round after round (hap tune --local)"));
  m_stop = new QPushButton(tr("S&top"), this);
  m_stop->setObjectName(QStringLiteral("tuneStop"));
  m_stop->setAutoDefault(false);
  m_stop->setToolTip(tr(
      "Stop the loop: the running workers are ended; the runs recorded so far stay in the store"));
  m_busy = new QLabel(this);
  m_busy->setObjectName(QStringLiteral("tuneBusy"));
  auto* controls = new QHBoxLayout;
  const auto addBox = [&](const QString& text, QSpinBox* box) {
    auto* l = new QLabel(text, this);
    l->setBuddy(box);
    controls->addWidget(l);
    controls->addWidget(box);
    controls->addSpacing(8);
  };
  addBox(tr("Ste&ps:"), m_steps);
  addBox(tr("&Warm-up:"), m_warmup);
  addBox(tr("&Rounds:"), m_roundsBox);
  controls->addStretch(1);
  controls->addWidget(m_busy);
  controls->addWidget(m_start);
  controls->addWidget(m_stop);

  // The rounds: chart and table side by side.
  m_chart = makeChartView(this, QStringLiteral("tuneChart"));
  m_chart->setMinimumSize(320, 240);
  QChart* chart = m_chart->chart();
  // Short enough for the chart's narrowest width; the axis says which line is which.
  chart->setTitle(tr("Step time per round"));
  m_xAxis = new QValueAxis;
  m_xAxis->setTitleText(tr("Round"));
  m_xAxis->setLabelFormat(QStringLiteral("%.0f"));
  m_xAxis->setTickType(QValueAxis::TicksDynamic);
  m_xAxis->setTickAnchor(1);
  m_xAxis->setTickInterval(1);
  m_xAxis->setRange(0.5, 1.5);
  m_yAxis = new QValueAxis;
  m_yAxis->setTitleText(tr("ms: measured —, predicted - -"));
  m_yAxis->setLabelFormat(QStringLiteral("%.3g"));
  m_yAxis->setRange(0, 1);
  chart->addAxis(m_xAxis, Qt::AlignBottom);
  chart->addAxis(m_yAxis, Qt::AlignLeft);
  m_chosen = new QScatterSeries;
  m_chosen->setName(tr("chosen"));
  m_chosen->setMarkerShape(QScatterSeries::MarkerShapeCircle);
  m_chosen->setMarkerSize(18);
  m_chosen->setBrush(Qt::NoBrush);
  m_chosen->setPen(QPen(QColor(0x20, 0x20, 0x20), 2));
  chart->addSeries(m_chosen);
  m_chosen->attachAxis(m_xAxis);
  m_chosen->attachAxis(m_yAxis);

  m_table = new QTableView(this);
  m_table->setObjectName(QStringLiteral("tuneRounds"));
  m_table->setModel(m_rounds);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setAlternatingRowColors(true);
  m_table->setWordWrap(false);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->horizontalHeader()->setHighlightSections(false);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setSectionResizeMode(TuneRoundsModel::NoteColumn,
                                                    QHeaderView::Stretch);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->setObjectName(QStringLiteral("tuneSplit"));
  split->setChildrenCollapsible(false);
  split->addWidget(m_chart);
  split->addWidget(m_table);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);

  m_log = new QPlainTextEdit(this);
  m_log->setObjectName(QStringLiteral("tuneLog"));
  m_log->setReadOnly(true);
  m_log->setLineWrapMode(QPlainTextEdit::NoWrap);
  m_log->setMaximumBlockCount(5000);
  m_log->setFont(fixedFont());
  m_log->setMinimumHeight(m_log->fontMetrics().height() * 5);

  // The end: the chosen plan.
  m_resultLabel = new QLabel(this);
  m_resultLabel->setObjectName(QStringLiteral("tuneResult"));
  m_resultLabel->setWordWrap(true);
  m_resultLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_resultLabel->hide();
  m_message = new QLabel(this);
  m_message->setObjectName(QStringLiteral("tuneMessage"));
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_message->hide();
  m_openPlan = new QPushButton(tr("&Open Tuned Plan"), this);
  m_openPlan->setObjectName(QStringLiteral("tuneOpenPlan"));
  m_openPlan->setAutoDefault(false);
  m_openPlan->setToolTip(tr("Open the plan measured fastest in the main window, with its model"));
  auto* close = new QPushButton(tr("Close"), this);
  close->setAutoDefault(false);
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  buttons->addWidget(m_openPlan);
  buttons->addWidget(close);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_target);
  layout->addWidget(m_emulation);
  layout->addLayout(controls);
  layout->addWidget(split, 3);
  layout->addWidget(boldLabel(tr("Log"), this));
  layout->addWidget(m_log, 1);
  layout->addWidget(m_resultLabel);
  layout->addWidget(m_message);
  layout->addLayout(buttons);
  resize(1100, 760);

  connect(m_start, &QPushButton::clicked, this, [this] { start(); });
  connect(m_stop, &QPushButton::clicked, this, &TuneDialog::stop);
  connect(close, &QPushButton::clicked, this, &QDialog::close);
  connect(m_openPlan, &QPushButton::clicked, this, [this] {
    if (!m_tunedPlan.isEmpty()) Q_EMIT openPlanRequested(m_tunedPlan, m_runningModel);
  });
  connect(m_job, &TuneJob::busyChanged, this, [this] { updateButtons(); });
  connect(m_job, &TuneJob::message, this, &TuneDialog::appendLog);
  connect(m_job, &TuneJob::roundStarted, this, [this](int round, const QString& profile) {
    m_busy->setText(tr("Round %1 of at most %2, priced under %3…")
                        .arg(round)
                        .arg(m_roundsBox->value())
                        .arg(profile));
  });
  connect(m_job, &TuneJob::runFinished, this, &TuneDialog::onRunFinished);
  connect(m_job, &TuneJob::calibrated, this, [this](int round, const tune::TuneCalibration& c) {
    appendLog(tr("Calibrated after round %1: %2 from %3 runs of %4 plans, step MAPE %5% → %6%")
                  .arg(round)
                  .arg(qs(c.saved))
                  .arg(c.runs)
                  .arg(c.plans)
                  .arg(c.mapeBefore * 100, 0, 'f', 1)
                  .arg(c.mapeAfter * 100, 0, 'f', 1));
  });
  connect(m_job, &TuneJob::roundFinished, this, [this](const tune::TuneRound& round) {
    appendLog(tr("Round %1: prediction error %2% (mean |predicted/measured − 1|), best measured so "
                 "far %3")
                  .arg(round.round)
                  .arg(round.mape() * 100, 0, 'f', 1)
                  .arg(ms(round.bestSeconds)));
  });
  connect(m_job, &TuneJob::finished, this, &TuneDialog::onFinished);
  connect(m_job, &TuneJob::failed, this, &TuneDialog::onFailed);
  showSetup();
  updateButtons();
}

TuneDialog::~TuneDialog() {
  // The job (a child) is destroyed after this body: stop it first so that its wait is short, and
  // take no more of its signals.
  m_job->disconnect(this);
  m_job->stop();
}

bool TuneDialog::busy() const {
  return m_job->busy();
}

bool TuneDialog::setSetup(const TuneSetup& s) {
  if (busy()) return false;
  m_setup = s;
  if (!m_setupGiven) {
    m_steps->setValue(static_cast<int>(s.steps));
    m_warmup->setValue(static_cast<int>(s.warmup));
    m_roundsBox->setValue(s.rounds);
    m_setupGiven = true;
  }
  showSetup();
  updateButtons();
  return true;
}

void TuneDialog::showSetup() {
  const TuneSetup& s = m_setup;
  if (s.modelPath.isEmpty() || s.cluster.size() == 0) {
    m_target->setText(
        tr("Open a model and a cluster to tune (File ▸ Open Model…, File ▸ Open Cluster…)."));
    m_emulation->clear();
    return;
  }
  QString clusterFile;
  if (s.clusterPath.isEmpty())
    clusterFile = tr("not saved: written to the tune's folder");
  else if (s.clusterModified)
    clusterFile = tr("%1, changed: written to the tune's folder as it is now").arg(s.clusterPath);
  else
    clusterFile = s.clusterPath;
  m_target->setText(
      tr("<b>Model</b> %1 &nbsp; <b>Cluster</b> %2, %3 ranks (%4) &nbsp; <b>Store</b> %5")
          .arg(QFileInfo(s.modelPath).fileName().toHtmlEscaped(),
               qs(s.cluster.name).toHtmlEscaped())
          .arg(s.cluster.size())
          .arg(clusterFile.toHtmlEscaped(),
               (s.storePath.isEmpty() ? tr("the default store") : s.storePath).toHtmlEscaped()));
  m_target->setToolTip(s.modelPath);
  const TuneEmulation e = tuneEmulation(s);
  m_emulation->setText(
      e.fromRunDock
          ? tr("Each rank held to CPU share %1, computation slowed down %2 (the Run dock's form: "
               "change them in the Run dock).")
                .arg(listOf(e.cpuShares), listOf(e.slowdowns))
          : tr("Each rank held to CPU share %1 (the cluster's relative speeds), no slowdown; the "
               "Run "
               "dock has no shares for %2 ranks: show a plan of this cluster there to change them.")
                .arg(listOf(e.cpuShares))
                .arg(s.cluster.size()));
}

void TuneDialog::updateButtons() {
  const bool running = busy();
  const bool ready = !m_setup.modelPath.isEmpty() && m_setup.cluster.size() > 0;
  m_start->setEnabled(!running && ready);
  m_stop->setEnabled(running && !m_job->stopping());
  for (QSpinBox* b : {m_steps, m_warmup, m_roundsBox}) b->setEnabled(!running);
  m_openPlan->setEnabled(!running && !m_tunedPlan.isEmpty() && m_result);
  if (!running)
    m_busy->clear();
  else if (m_job->stopping())
    m_busy->setText(tr("Stopping…"));
}

bool TuneDialog::start() {
  if (busy()) return false;
  if (m_provider) setSetup(m_provider());
  TuneSetup s = m_setup;
  s.steps = m_steps->value();
  s.warmup = m_warmup->value();
  s.rounds = m_roundsBox->value();
  QString why;
  const std::optional<PreparedTune> p = prepareTune(s, QDateTime::currentDateTime(), &why);
  if (!p) {
    showMessage(why, true);
    return false;
  }
  m_rounds->clear();
  m_result.reset();
  for (const auto& series : m_series) {
    series->measured->clear();
    series->predicted->clear();
  }
  m_chosen->clear();
  m_log->clear();
  m_resultLabel->hide();
  m_message->hide();
  m_folder = p->folder;
  m_tunedPlan = p->tunedPlan;
  m_runningModel = s.modelPath;
  appendLog(tr("Tuning %1 on %2; the rounds' plans and the tuned plan go to %3")
                .arg(QFileInfo(s.modelPath).fileName(), qs(s.cluster.name), m_folder));
  if (!m_job->start(p->request)) return false;
  m_busy->setText(tr("Starting…"));
  updateButtons();
  return true;
}

void TuneDialog::stop() {
  if (!busy()) return;
  m_job->stop();
  appendLog(tr("Stopping: the running workers are ended"));
  updateButtons();
}

void TuneDialog::appendLog(const QString& line) {
  m_log->appendPlainText(line);
}

void TuneDialog::showMessage(const QString& text, bool error) {
  m_message->setText(text);
  m_message->setStyleSheet(error ? QStringLiteral("color: #b3261e;") : QString());
  m_message->setVisible(!text.isEmpty());
}

void TuneDialog::onRunFinished(const tune::TuneRun& run) {
  m_rounds->addRun(run);
  m_table->scrollToBottom();
  if (!run.reused)
    appendLog(tr("Round %1: %2 measured %3 ± %4 (predicted %5)")
                  .arg(run.round)
                  .arg(qs(run.strategy), ms(run.measuredSeconds), ms(run.spreadSeconds),
                       ms(run.predictedSeconds)));
  redrawChart();
}

void TuneDialog::onFinished(std::shared_ptr<const tune::TuneResult> result) {
  m_result = result;
  m_rounds->setResult(*result);
  redrawChart();
  const tune::TuneRun& c = result->chosen;
  QString versus = tr("no baseline ran");
  if (!result->bestBaseline.strategy.empty())
    versus = tr("%1× the best baseline measured (%2, %3)")
                 .arg(result->bestBaseline.measuredSeconds / c.measuredSeconds, 0, 'f', 2)
                 .arg(qs(result->bestBaseline.strategy), ms(result->bestBaseline.measuredSeconds));
  QString text = tr("<b>Chosen: %1</b> (round %2), measured %3 ± %4 a step, %5.")
                     .arg(qs(c.strategy).toHtmlEscaped())
                     .arg(c.round)
                     .arg(ms(c.measuredSeconds), ms(c.spreadSeconds), versus.toHtmlEscaped());
  if (c.baseline())
    text += QLatin1Char(' ') +
            tr("The baseline %1 won: every plan of HAP's measured slower.").arg(qs(c.strategy));
  text += QStringLiteral("<br>") + tr("Stopped: %1. %2 s in all; the plan is %3.")
                                       .arg(qs(result->stopReason).toHtmlEscaped())
                                       .arg(result->seconds, 0, 'f', 1)
                                       .arg(m_tunedPlan.toHtmlEscaped());
  if (!result->profiled.empty())
    text += QStringLiteral("<br>") +
            tr("Profiled first: %1.").arg(qs(result->profiled).toHtmlEscaped());
  m_resultLabel->setText(text);
  m_resultLabel->show();
  appendLog(tr("Stopped: %1. Chosen: %2 (round %3), measured %4.")
                .arg(qs(result->stopReason), qs(c.strategy))
                .arg(c.round)
                .arg(ms(c.measuredSeconds)));
  showMessage({}, false);
  updateButtons();
  Q_EMIT tunedPlanReady(m_tunedPlan, m_runningModel);
  Q_EMIT tuneFinished(true);
}

void TuneDialog::onFailed(const QString& message) {
  appendLog(message);
  showMessage(message, true);
  updateButtons();
  Q_EMIT tuneFinished(false);
}

TuneDialog::Series& TuneDialog::seriesOf(const QString& strategy) {
  for (const auto& s : m_series)
    if (s->strategy == strategy) return *s;
  auto s = std::make_unique<Series>();
  s->strategy = strategy;
  s->order = static_cast<int>(m_series.size());
  const QColor colour = colourOf(strategy);
  s->measured = new QLineSeries;
  s->measured->setName(strategy);  // the legend names each plan once, by its solid line
  s->measured->setPen(QPen(colour, 2));
  s->measured->setPointsVisible(true);
  s->predicted = new QLineSeries;
  s->predicted->setName(tr("%1 predicted").arg(strategy));
  s->predicted->setPen(QPen(colour, 1.5, Qt::DashLine));
  s->predicted->setPointsVisible(true);
  QChart* chart = m_chart->chart();
  for (QLineSeries* l : {s->measured, s->predicted}) {
    chart->addSeries(l);
    l->attachAxis(m_xAxis);
    l->attachAxis(m_yAxis);
  }
  // Only the measured line in the legend: nine markers leave no room for their names.
  for (QLegendMarker* m : chart->legend()->markers(s->predicted)) m->setVisible(false);
  // The chosen ring stays on top and last in the legend.
  chart->removeSeries(m_chosen);
  chart->addSeries(m_chosen);
  m_chosen->attachAxis(m_xAxis);
  m_chosen->attachAxis(m_yAxis);
  m_series.push_back(std::move(s));
  return *m_series.back();
}

void TuneDialog::redrawChart() {
  const std::vector<tune::TuneRun>& runs = m_rounds->runs();
  for (const auto& s : m_series) {
    s->measured->clear();
    s->predicted->clear();
  }
  m_chosen->clear();
  double top = 0;
  int rounds = 1;
  // Each plan a little beside the round's tick, so that plans of equal step do not hide each other.
  const auto xOf = [this](const tune::TuneRun& r) {
    const Series& s = seriesOf(qs(r.strategy));
    return r.round + (s.order - 1) * 0.06;
  };
  for (const tune::TuneRun& r : runs) {
    const double x = xOf(r);
    Series& s = seriesOf(qs(r.strategy));
    s.measured->append(x, r.measuredSeconds * 1e3);
    s.predicted->append(x, r.predictedSeconds * 1e3);
    top = std::max({top, r.measuredSeconds * 1e3, r.predictedSeconds * 1e3});
    rounds = std::max(rounds, r.round);
  }
  if (m_result) {
    const tune::TuneRun& c = m_result->chosen;
    for (const tune::TuneRun& r : runs)
      if (r.runId == c.runId && !r.reused) m_chosen->append(xOf(r), r.measuredSeconds * 1e3);
  }
  m_xAxis->setRange(0.5, rounds + 0.5);
  m_yAxis->setRange(0, top > 0 ? top * 1.15 : 1);
  m_yAxis->applyNiceNumbers();
}

int TuneDialog::chartPoints(bool measured) const {
  int n = 0;
  for (const auto& s : m_series)
    n += static_cast<int>((measured ? s->measured : s->predicted)->count());
  return n;
}

}  // namespace hap::studio
