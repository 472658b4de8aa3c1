#include "app/studio/widgets/launch_view.h"

#include <QAction>
#include <QApplication>
#include <QBoxLayout>
#include <QComboBox>
#include <QCoreApplication>
#include <QDateTime>
#include <QDesktopServices>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QFrame>
#include <QGridLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStyle>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolButton>
#include <QPointer>
#include <QTimer>
#include <QUrl>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLegend>
#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>

#include <algorithm>
#include <cmath>

#include "app/studio/core/plan_export.h"
#include "app/studio/widgets/chart_style.h"
#include "app/studio/widgets/error_bar.h"
#include "db/store.h"
#include "engine/base/error.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "runtime/launch_scripts.h"
#include "runtime/local_launch.h"

namespace hap::studio {
namespace {

// "1 rank", "3 ranks".
QString ranksText(int n) { return n == 1 ? QObject::tr("1 rank") : QObject::tr("%1 ranks").arg(n); }

// One colour per rank, as the Profiles dock's run chart draws them.
const QColor kRankColours[] = {QColor(0x2b, 0x6c, 0xb0), QColor(0xd9, 0x7a, 0x1c), QColor(0x2e, 0x8b, 0x57),
                               QColor(0xb0, 0x3a, 0x8c), QColor(0x6a, 0x5a, 0xcd), QColor(0x8b, 0x5a, 0x2b)};
const QColor kLossColour(0x20, 0x20, 0x20);
constexpr int kLogBlocks = 5000;  // lines kept per log tab

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

QString number(double v) { return QString::number(v, 'g', QLocale::FloatingPointShortest); }

// A number typed into a field ("0.01", "3e-4"); NaN when it is not one.
double parseNumber(const QString& text) {
  bool ok = false;
  const double v = QLocale::c().toDouble(text.trimmed(), &ok);
  return ok ? v : std::nan("");
}

QLabel* heading(const QString& text, QWidget* parent) {
  auto* l = new QLabel(QStringLiteral("<b>%1</b>").arg(text), parent);
  l->setContentsMargins(0, 6, 0, 0);
  return l;
}

// A line edit with a Browse button ("…") that asks for a file or folder.
QWidget* withBrowse(QLineEdit* edit, QToolButton** button, QWidget* parent) {
  auto* box = new QWidget(parent);
  auto* row = new QHBoxLayout(box);
  row->setContentsMargins(0, 0, 0, 0);
  row->setSpacing(2);
  row->addWidget(edit, 1);
  auto* b = new QToolButton(box);
  b->setText(QStringLiteral("…"));
  b->setObjectName(edit->objectName() + QStringLiteral("Browse"));
  row->addWidget(b);
  if (button) *button = b;
  return box;
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
  axis->setRange(first, last);
  axis->setTickInterval(interval);
  axis->setLabelFormat(QStringLiteral("%d"));
}

void setValueRange(QValueAxis* axis, double low, double high, bool fromZero) {
  if (!std::isfinite(low) || !std::isfinite(high)) {
    axis->setRange(0, 1);
    return;
  }
  if (fromZero) {
    axis->setRange(0, high > 0 ? high * 1.1 : 1);
  } else {
    const double pad = std::max((high - low) * 0.08, std::abs(high) * 0.01 + 1e-9);
    axis->setRange(low - pad, high + pad);
  }
  axis->applyNiceNumbers();
  axis->setLabelFormat(QStringLiteral("%.4g"));
}

}  // namespace

LaunchView::LaunchView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("launchView"));
  m_job = new LaunchJob(this);
  m_monitor = new RunMonitor(this);
  m_preflightJob = new PreflightJob(this);
  m_checkpoints = new CheckpointsModel(this);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->setObjectName(QStringLiteral("launchSplit"));
  split->addWidget(makeForm());
  split->addWidget(makeMonitor());
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setChildrenCollapsible(false);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(split);

  connect(m_job, &LaunchJob::started, this, &LaunchView::onStarted);
  connect(m_job, &LaunchJob::linesArrived, this, &LaunchView::onLines);
  connect(m_job, &LaunchJob::finished, this, &LaunchView::onFinished);
  connect(m_job, &LaunchJob::busyChanged, this, &LaunchView::syncBusy);
  connect(m_monitor, &RunMonitor::updated, this, &LaunchView::onMonitorUpdated);
  connect(m_preflightJob, &PreflightJob::finished, this, &LaunchView::onPreflightFinished);
  connect(m_checkpoints, &CheckpointsModel::listed, this, &LaunchView::updateCheckpointButtons);
  restoreSettings();
  setPlan(nullptr, {});
  resetMonitor(0);
}

LaunchView::~LaunchView() {
  saveSettings();
  // A start waiting for its preflight launches nothing; its run folder goes.
  m_preflightJob->disconnect(this);
  m_preflightJob->wait();
  if (m_pending && m_pending->kind == PendingLaunch::Kind::Start) {
    QFile::remove(m_pending->folder + QStringLiteral("/plan.json"));
    QDir().rmdir(m_pending->folder);
  }
  // The job's destructor would do it too; here the monitor and charts are still whole.
  m_job->disconnect(this);
  m_job->stopAndWait();
}

bool LaunchView::busy() const {
  return m_job->busy() || (m_pending && m_pending->kind != PendingLaunch::Kind::Check);
}

void LaunchView::syncBusy() {
  updateButtons();
  updateCheckpointButtons();
  const bool now = busy();
  if (now == m_lastBusy) return;
  m_lastBusy = now;
  Q_EMIT busyChanged(now);
}

QWidget* LaunchView::makeForm() {
  auto* panel = new QWidget(this);
  panel->setObjectName(QStringLiteral("launchForm"));
  auto* column = new QVBoxLayout(panel);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(4);

  auto* scroll = new QScrollArea(panel);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* body = new QWidget(scroll);
  auto* form = new QFormLayout(body);
  form->setContentsMargins(2, 0, 8, 0);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
  form->setVerticalSpacing(3);
  scroll->setWidget(body);

  auto spin = [body](const char* name, int low, int high, int value, const QString& tip) {
    auto* s = new QSpinBox(body);
    s->setObjectName(QLatin1String(name));
    s->setRange(low, high);
    s->setValue(value);
    s->setToolTip(tip);
    s->setAccelerated(true);
    return s;
  };
  auto line = [body](const char* name, const QString& placeholder, const QString& tip) {
    auto* e = new QLineEdit(body);
    e->setObjectName(QLatin1String(name));
    e->setPlaceholderText(placeholder);
    e->setToolTip(tip);
    e->setClearButtonEnabled(true);
    return e;
  };

  // Ranks: the CPU share of each (a slower device emulated on this machine).
  form->addRow(heading(tr("CPU share per rank"), body));
  m_sharesBox = new QWidget(body);
  m_sharesBox->setObjectName(QStringLiteral("shares"));
  m_sharesGrid = new QGridLayout(m_sharesBox);
  m_sharesGrid->setContentsMargins(0, 0, 0, 0);
  m_sharesGrid->setHorizontalSpacing(6);
  m_sharesGrid->setVerticalSpacing(2);
  form->addRow(m_sharesBox);
  m_sharesHint = new QLabel(body);
  m_sharesHint->setWordWrap(true);
  m_sharesHint->setStyleSheet(QStringLiteral("color: gray;"));
  form->addRow(m_sharesHint);

  // Training.
  form->addRow(heading(tr("Training"), body));
  m_steps = spin("steps", 0, 100000000, 20, tr("Optimizer steps measured after the warm-up (hap-worker --steps)"));
  form->addRow(tr("Steps:"), m_steps);
  m_warmup = spin("warmup", 0, 1000000, 2, tr("Steps run first and left out of the timing (--warmup)"));
  form->addRow(tr("Warm-up steps:"), m_warmup);
  m_seed = spin("seed", 0, std::numeric_limits<int>::max(), 0, tr("Seed of random ops (dropout) and synthetic data (--seed)"));
  form->addRow(tr("Seed:"), m_seed);
  m_threads = spin("threads", 0, 256, 0, tr("Intra-op threads per rank (--threads); default: LibTorch's"));
  m_threads->setSpecialValueText(tr("default"));
  form->addRow(tr("Threads per rank:"), m_threads);
  m_timeout = spin("timeout", 0, 7 * 24 * 3600, 0, tr("Stop every rank and fail the run after this long"));
  m_timeout->setSpecialValueText(tr("none"));
  m_timeout->setSuffix(tr(" s"));
  form->addRow(tr("Timeout:"), m_timeout);
  m_label = line("label", tr("model · strategy"), tr("The recorded run's label (the Profiles dock's Runs tab shows it)"));
  form->addRow(tr("Label:"), m_label);

  // Data.
  form->addRow(heading(tr("Data"), body));
  m_data = new QComboBox(body);
  m_data->setObjectName(QStringLiteral("data"));
  m_data->addItem(tr("Synthetic (seeded random batches)"), QStringLiteral("synthetic"));
  m_data->addItem(tr("Token file (.bin of token ids)"), QStringLiteral("tokens"));
  m_data->addItem(tr("CIFAR-10 (binary batch)"), QStringLiteral("cifar"));
  m_data->setToolTip(tr("Where batches come from (--data)"));
  form->addRow(tr("Source:"), m_data);
  m_dataPath = line("dataPath", tr("a data file"), tr("The token or CIFAR-10 file every rank reads (--data-path)"));
  form->addRow(tr("File:"), withBrowse(m_dataPath, &m_dataBrowse, body));
  m_tokenDtype = new QComboBox(body);
  m_tokenDtype->setObjectName(QStringLiteral("tokenDtype"));
  m_tokenDtype->addItems({QStringLiteral("uint16"), QStringLiteral("int32")});
  m_tokenDtype->setToolTip(tr("How the token file stores ids (--token-dtype)"));
  form->addRow(tr("Token dtype:"), m_tokenDtype);

  // Optimizer.
  form->addRow(heading(tr("Optimizer"), body));
  m_optimizer = new QComboBox(body);
  m_optimizer->setObjectName(QStringLiteral("optimizer"));
  m_optimizer->addItem(tr("SGD with momentum"), QStringLiteral("sgd"));
  m_optimizer->addItem(QStringLiteral("Adam"), QStringLiteral("adam"));
  m_optimizer->addItem(QStringLiteral("AdamW"), QStringLiteral("adamw"));
  form->addRow(tr("Optimizer:"), m_optimizer);
  m_lr = line("lr", QString(), tr("Learning rate (--lr), e.g. 0.01 or 3e-4"));
  m_lr->setText(QStringLiteral("0.01"));
  m_lr->setClearButtonEnabled(false);
  form->addRow(tr("Learning rate:"), m_lr);
  m_momentum = new QDoubleSpinBox(body);
  m_momentum->setObjectName(QStringLiteral("momentum"));
  m_momentum->setRange(0, 0.999);
  m_momentum->setDecimals(3);
  m_momentum->setSingleStep(0.05);
  m_momentum->setValue(0.9);
  m_momentum->setToolTip(tr("SGD momentum (--momentum); 0 keeps no momentum buffer"));
  form->addRow(tr("Momentum:"), m_momentum);
  m_weightDecay = line("weightDecay", QString(), tr("Weight decay (--weight-decay; AdamW: decoupled)"));
  m_weightDecay->setText(QStringLiteral("0"));
  m_weightDecay->setClearButtonEnabled(false);
  form->addRow(tr("Weight decay:"), m_weightDecay);
  m_clipNorm = new QDoubleSpinBox(body);
  m_clipNorm->setObjectName(QStringLiteral("clipNorm"));
  m_clipNorm->setRange(0, 1e6);
  m_clipNorm->setDecimals(2);
  m_clipNorm->setSpecialValueText(tr("off"));
  m_clipNorm->setToolTip(tr("Clip the gradients to this global L2 norm (--clip-norm)"));
  form->addRow(tr("Clip gradient norm:"), m_clipNorm);

  // Checkpoints and results.
  form->addRow(heading(tr("Checkpoints and results"), body));
  m_checkpointDir = line("checkpointDir", tr("run folder/checkpoints"), tr("Where step-N.pt checkpoints go (--checkpoint-dir)"));
  QToolButton* checkpointBrowse = nullptr;
  form->addRow(tr("Checkpoints:"), withBrowse(m_checkpointDir, &checkpointBrowse, body));
  m_checkpointEvery = spin("checkpointEvery", 0, 100000000, 0, tr("Write a checkpoint every N steps and at the end (--checkpoint-every)"));
  m_checkpointEvery->setSpecialValueText(tr("at the end only"));
  m_checkpointEvery->setPrefix(tr("every "));
  m_checkpointEvery->setSuffix(tr(" steps"));
  form->addRow(tr("Interval:"), m_checkpointEvery);
  m_resume = line("resume", tr("none"), tr("Continue from this checkpoint (--resume)"));
  QToolButton* resumeBrowse = nullptr;
  form->addRow(tr("Resume from:"), withBrowse(m_resume, &resumeBrowse, body));
  m_export = line("export", tr("none"), tr("Write the trained model as a TorchScript file (--export)"));
  QToolButton* exportBrowse = nullptr;
  form->addRow(tr("Export model to:"), withBrowse(m_export, &exportBrowse, body));
  column->addWidget(scroll, 1);

  // The preflight check list (issue 20, item 1): above Start, separated; one line when all is well.
  m_preflight = new QFrame(panel);
  m_preflight->setObjectName(QStringLiteral("preflightArea"));
  auto* preflightLayout = new QVBoxLayout(m_preflight);
  preflightLayout->setContentsMargins(0, 0, 0, 0);
  preflightLayout->setSpacing(2);
  m_preflightToggle = new QToolButton(m_preflight);
  m_preflightToggle->setObjectName(QStringLiteral("preflightSummary"));
  m_preflightToggle->setCheckable(true);
  m_preflightToggle->setAutoRaise(true);
  m_preflightToggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  m_preflightToggle->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);  // a long summary never widens the form
  // A line, not a button: no frame or pressed look when open.
  m_preflightToggle->setStyleSheet(QStringLiteral("QToolButton { text-align: left; border: none; padding: 2px; }"
                                                  "QToolButton:hover { text-decoration: underline; }"));
  m_check = new QPushButton(tr("Check"), m_preflight);
  m_check->setObjectName(QStringLiteral("checkRun"));
  auto* preflightHead = new QHBoxLayout;
  preflightHead->setSpacing(4);
  preflightHead->addWidget(m_preflightToggle, 1);
  preflightHead->addWidget(m_check);
  preflightLayout->addLayout(preflightHead);
  m_preflightList = new QScrollArea(m_preflight);
  m_preflightList->setObjectName(QStringLiteral("preflightList"));
  m_preflightList->setWidgetResizable(true);
  m_preflightList->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  m_preflightList->setFrameShape(QFrame::StyledPanel);
  m_preflightList->setMaximumHeight(170);  // the form above keeps some room in a low dock
  m_preflightList->hide();
  preflightLayout->addWidget(m_preflightList);
  connect(m_preflightToggle, &QToolButton::toggled, this, &LaunchView::setPreflightOpen);
  connect(m_check, &QPushButton::clicked, this, [this] { check(); });
  showChecks({}, false);
  auto* rule = new QFrame(panel);
  rule->setFrameShape(QFrame::HLine);
  rule->setFrameShadow(QFrame::Sunken);
  column->addWidget(rule);
  column->addWidget(m_preflight);

  m_start = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), tr("Start"), panel);
  m_start->setObjectName(QStringLiteral("startRun"));
  m_stop = new QPushButton(style()->standardIcon(QStyle::SP_MediaStop), tr("Stop"), panel);
  m_stop->setObjectName(QStringLiteral("stopRun"));
  m_stop->setToolTip(tr("Stop every rank: SIGTERM, then SIGKILL after 3 s"));
  m_scripts = new QToolButton(panel);
  m_scripts->setObjectName(QStringLiteral("writeLaunchScripts"));
  m_scripts->setText(tr("Write Launch Scripts"));
  m_scripts->setToolTip(tr("Write the scripts that run this plan on a real cluster, with these worker options"));
  m_scripts->setPopupMode(QToolButton::InstantPopup);
  m_scripts->setToolButtonStyle(Qt::ToolButtonTextOnly);
  auto* scriptsMenu = new QMenu(m_scripts);
  scriptsMenu->setObjectName(QStringLiteral("launchScriptsMenu"));
  const std::pair<rt::ScriptKind, QString> kinds[] = {{rt::ScriptKind::Torchrun, tr("torchrun (one script per machine)…")},
                                                      {rt::ScriptKind::Slurm, tr("Slurm (sbatch)…")},
                                                      {rt::ScriptKind::Ssh, tr("ssh (one script starting every machine)…")}};
  for (const auto& [kind, text] : kinds) {
    QAction* a = scriptsMenu->addAction(text);
    a->setObjectName(QStringLiteral("scripts.%1").arg(static_cast<int>(kind)));
    connect(a, &QAction::triggered, this, [this, kind = kind] { chooseScripts(static_cast<int>(kind)); });
  }
  m_scripts->setMenu(scriptsMenu);
  auto* buttons = new QHBoxLayout;
  buttons->setSpacing(4);
  buttons->addWidget(m_start);
  buttons->addWidget(m_stop);
  buttons->addStretch(1);
  buttons->addWidget(m_scripts);
  column->addLayout(buttons);

  connect(m_start, &QPushButton::clicked, this, [this] { start(); });
  connect(m_stop, &QPushButton::clicked, this, &LaunchView::stop);
  const auto dataChanged = [this] {
    const QString kind = m_data->currentData().toString();
    const bool file = kind != QLatin1String("synthetic");
    m_dataPath->setEnabled(file);
    m_dataBrowse->setEnabled(file);
    m_tokenDtype->setEnabled(kind == QLatin1String("tokens"));
  };
  connect(m_data, &QComboBox::currentIndexChanged, this, dataChanged);
  dataChanged();
  connect(m_optimizer, &QComboBox::currentIndexChanged, this,
          [this] { m_momentum->setEnabled(m_optimizer->currentData().toString() == QLatin1String("sgd")); });
  connect(m_dataBrowse, &QToolButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Data File"), m_dataPath->text(),
                                                      tr("Data files (*.bin);;All files (*)"));
    if (!path.isEmpty()) m_dataPath->setText(path);
  });
  connect(checkpointBrowse, &QToolButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Checkpoint Folder"), m_checkpointDir->text());
    if (!dir.isEmpty()) m_checkpointDir->setText(dir);
  });
  connect(resumeBrowse, &QToolButton::clicked, this, [this] {
    const QString start = !m_resume->text().isEmpty() ? m_resume->text() : runsDirectory();
    const QString path = QFileDialog::getOpenFileName(this, tr("Resume From Checkpoint"), start,
                                                      tr("Checkpoints (*.pt);;All files (*)"));
    if (!path.isEmpty()) m_resume->setText(path);
  });
  connect(exportBrowse, &QToolButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Trained Model"), m_export->text(),
                                                      tr("TorchScript models (*.pt)"));
    if (!path.isEmpty()) m_export->setText(path);
  });

  // Wide enough for the form, so that the scroll area never shifts it sideways (its horizontal
  // scroll bar is off: focusing a field would scroll the labels out of sight).
  const int formWidth = body->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width();
  panel->setMinimumWidth(std::max(340, formWidth));
  panel->setMaximumWidth(std::max(460, formWidth));
  return panel;
}

QWidget* LaunchView::makeMonitor() {
  auto* panel = new QWidget(this);
  panel->setObjectName(QStringLiteral("runMonitor"));
  auto* column = new QVBoxLayout(panel);
  column->setContentsMargins(4, 0, 0, 0);
  column->setSpacing(4);

  m_monitorColumn = column;  // the error bar goes on top when first needed (showError)

  m_status = new QLabel(panel);
  m_status->setObjectName(QStringLiteral("runStatus"));
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_progress = new QProgressBar(panel);
  m_progress->setObjectName(QStringLiteral("runProgress"));
  m_progress->setMinimumWidth(160);
  m_progress->setTextVisible(true);
  m_timeLeft = new QLabel(panel);
  m_timeLeft->setObjectName(QStringLiteral("timeLeft"));
  m_timeLeft->setToolTip(tr("Mean step time of the measured steps so far × steps left"));
  auto* top = new QHBoxLayout;
  top->setSpacing(10);
  top->addWidget(m_status, 0);
  top->addWidget(m_progress, 1);
  top->addWidget(m_timeLeft, 0);
  column->addLayout(top);

  m_throughput = new QLabel(panel);
  m_throughput->setObjectName(QStringLiteral("throughput"));
  m_throughput->setToolTip(tr("The plan's global batch over rank 0's mean step time"));
  m_meanStep = new QLabel(panel);
  m_meanStep->setObjectName(QStringLiteral("meanStep"));
  m_meanStep->setToolTip(tr("Rank 0's mean wall time per step, warm-up steps left out"));
  m_loss = new QLabel(panel);
  m_loss->setObjectName(QStringLiteral("lastLoss"));
  m_folder = new QLabel(panel);
  m_folder->setObjectName(QStringLiteral("runFolder"));
  m_folder->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_folder->setStyleSheet(QStringLiteral("color: gray;"));
  m_folder->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the window
  m_folder->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  m_rankKey = new QLabel(panel);
  m_rankKey->setObjectName(QStringLiteral("rankKey"));
  m_rankKey->setTextFormat(Qt::RichText);
  m_rankKey->setToolTip(tr("The colour of each rank in the step time and CPU time charts"));
  auto* figures = new QHBoxLayout;
  figures->setSpacing(18);
  figures->addWidget(m_throughput);
  figures->addWidget(m_meanStep);
  figures->addWidget(m_loss);
  figures->addWidget(m_rankKey);
  figures->addWidget(m_folder, 1);
  column->addLayout(figures);

  m_lossView = makeChartView(panel, QStringLiteral("lossChart"));
  m_stepView = makeChartView(panel, QStringLiteral("stepTimeChart"));
  m_cpuView = makeChartView(panel, QStringLiteral("cpuTimeChart"));
  for (QChartView* v : {m_lossView, m_stepView, m_cpuView}) v->setMinimumSize(170, 170);

  m_logs = new QTabWidget(panel);
  m_logs->setObjectName(QStringLiteral("runLogs"));
  m_logs->setDocumentMode(true);
  m_logs->setUsesScrollButtons(true);
  m_checkpointsPage = makeCheckpointsPage();

  auto* charts = new QSplitter(Qt::Horizontal, panel);
  charts->setObjectName(QStringLiteral("runCharts"));
  charts->addWidget(m_lossView);
  charts->addWidget(m_stepView);
  charts->addWidget(m_cpuView);
  charts->addWidget(m_logs);
  charts->setStretchFactor(0, 2);
  charts->setStretchFactor(1, 2);
  charts->setStretchFactor(2, 2);
  charts->setStretchFactor(3, 3);
  charts->setChildrenCollapsible(false);
  m_chartsSplit = charts;
  column->addWidget(charts, 1);
  return panel;
}

void LaunchView::setPlan(std::shared_ptr<const PlanDocument> plan, const QString& modelPath) {
  m_plan = std::move(plan);
  m_modelPath = modelPath;
  const int ranks = m_plan ? static_cast<int>(plan::worldDevices(m_plan->p()).size()) : 0;
  rebuildShares(ranks);
  updateButtons();
  updateCheckpointButtons();
}

void LaunchView::rebuildShares(int ranks) {
  // The shares stay while the rank count does (a plan of another cluster resets them to 1).
  if (!m_shares.empty()) {
    m_savedShares.clear();
    for (QDoubleSpinBox* b : m_shares) m_savedShares.push_back(b->value());
  }
  const std::vector<double> keep = static_cast<int>(m_savedShares.size()) == ranks ? m_savedShares : std::vector<double>{};
  m_shares.clear();
  while (QLayoutItem* item = m_sharesGrid->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  constexpr int kColumns = 2;
  const std::vector<plan::PlanDevice> devices = m_plan ? plan::worldDevices(m_plan->p()) : std::vector<plan::PlanDevice>{};
  for (int r = 0; r < ranks; ++r) {
    auto* label = new QLabel(tr("Rank %1:").arg(r), m_sharesBox);
    auto* b = new QDoubleSpinBox(m_sharesBox);
    b->setObjectName(QStringLiteral("share%1").arg(r));
    b->setRange(0.05, 1);
    b->setSingleStep(0.05);
    b->setDecimals(2);
    b->setValue(keep.empty() ? 1.0 : keep[static_cast<size_t>(r)]);
    b->setSuffix(tr(" CPU"));
    const plan::PlanDevice& d = devices[static_cast<size_t>(r)];
    b->setToolTip(tr("Rank %1 (%2 on %3) may use this share of one CPU core: 0.25 runs it about 4× slower")
                      .arg(r)
                      .arg(QString::fromStdString(d.type), QString::fromStdString(d.machine)));
    label->setBuddy(b);
    m_sharesGrid->addWidget(label, r / kColumns, (r % kColumns) * 2, Qt::AlignRight);
    m_sharesGrid->addWidget(b, r / kColumns, (r % kColumns) * 2 + 1);
    m_shares.push_back(b);
  }
  m_sharesHint->setText(ranks == 0 ? tr("Plan first: one rank per device of the plan.")
                                   : tr("%1 on this machine, one per device of the plan; 1 = a full core.").arg(ranksText(ranks)));
}

LaunchSettings LaunchView::settings() const {
  LaunchSettings s;
  s.steps = m_steps->value();
  s.warmup = m_warmup->value();
  s.seed = static_cast<uint64_t>(m_seed->value());
  s.threads = m_threads->value();
  s.timeoutSeconds = m_timeout->value();
  s.label = m_label->text().trimmed();
  const QString data = m_data->currentData().toString();
  s.data = data == QLatin1String("tokens")  ? LaunchSettings::Data::Tokens
           : data == QLatin1String("cifar") ? LaunchSettings::Data::Cifar
                                            : LaunchSettings::Data::Synthetic;
  s.dataPath = m_dataPath->text().trimmed();
  s.tokenDtype = m_tokenDtype->currentText();
  const QString optimizer = m_optimizer->currentData().toString();
  s.optimizer = optimizer == QLatin1String("adam")    ? LaunchSettings::Optimizer::Adam
                : optimizer == QLatin1String("adamw") ? LaunchSettings::Optimizer::AdamW
                                                      : LaunchSettings::Optimizer::Sgd;
  s.lr = parseNumber(m_lr->text());
  s.momentum = m_momentum->value();
  s.weightDecay = m_weightDecay->text().trimmed().isEmpty() ? 0 : parseNumber(m_weightDecay->text());
  s.clipNorm = m_clipNorm->value();
  s.checkpointDir = m_checkpointDir->text().trimmed();
  s.checkpointEvery = m_checkpointEvery->value();
  s.resumePath = m_resume->text().trimmed();
  s.exportPath = m_export->text().trimmed();
  for (QDoubleSpinBox* b : m_shares) s.cpuShares.push_back(b->value());
  return s;
}

void LaunchView::setSettings(const LaunchSettings& s) {
  m_steps->setValue(static_cast<int>(s.steps));
  m_warmup->setValue(static_cast<int>(s.warmup));
  m_seed->setValue(static_cast<int>(s.seed));
  m_threads->setValue(s.threads);
  m_timeout->setValue(static_cast<int>(std::lround(s.timeoutSeconds)));
  m_label->setText(s.label);
  m_data->setCurrentIndex(m_data->findData(dataName(s.data)));
  m_dataPath->setText(s.dataPath);
  m_tokenDtype->setCurrentText(s.tokenDtype);
  m_optimizer->setCurrentIndex(m_optimizer->findData(optimizerName(s.optimizer)));
  m_lr->setText(number(s.lr));
  m_momentum->setValue(s.momentum);
  m_weightDecay->setText(number(s.weightDecay));
  m_clipNorm->setValue(s.clipNorm);
  m_checkpointDir->setText(s.checkpointDir);
  m_checkpointEvery->setValue(static_cast<int>(s.checkpointEvery));
  m_resume->setText(s.resumePath);
  m_export->setText(s.exportPath);
  for (size_t r = 0; r < m_shares.size() && r < s.cpuShares.size(); ++r) m_shares[r]->setValue(s.cpuShares[r]);
}

void LaunchView::updateButtons() {
  const bool busy = this->busy();
  m_start->setEnabled(m_plan != nullptr && !busy);
  m_check->setEnabled(m_plan != nullptr && !busy && !m_pending);
  m_check->setToolTip(m_plan ? tr("Run the checks Start runs first, without starting: the model file and its hash, a "
                                  "rank per device, the CPU shares, a free port, the worker, the data file against the "
                                  "model's inputs, the checkpoint to resume, the checkpoint and export folders")
                             : tr("Needs a plan"));
  m_start->setToolTip(!m_plan ? tr("Needs a plan: open a model and a cluster and plan (Plan ▸ Plan), or open a plan file")
                      : busy  ? tr("A run is going: stop it first")
                              : tr("Run the plan on this machine, one rank per device (Ctrl+F5)"));
  m_stop->setEnabled(busy && !m_job->stopping() && !(m_pending && m_pending->cancelled));
  m_scripts->setEnabled(m_plan != nullptr);
  m_scripts->setToolTip(m_plan ? tr("Write the scripts that run this plan on a real cluster, with these worker options")
                               : tr("Needs a plan"));
}

void LaunchView::showError(const QString& message) {
  if (!m_errorBar) {
    // Made on the first error: the window's own error bar stays the first ErrorBar among its children.
    m_errorBar = new ErrorBar(m_monitorColumn->parentWidget());
    m_errorBar->setObjectName(QStringLiteral("runErrorBar"));
    m_monitorColumn->insertWidget(0, m_errorBar);
  }
  m_errorBar->showMessage(message);
}

void LaunchView::hideError() {
  if (m_errorBar) m_errorBar->hide();
}

QString LaunchView::findWorker() const {
  try {
    return QString::fromStdString(rt::resolveWorker(qEnvironmentVariable("HAP_WORKER").toStdString(),
                                                    QCoreApplication::applicationFilePath().toStdString()));
  } catch (const std::exception&) {
    return {};  // the preflight's Worker check says what to do
  }
}

QString LaunchView::modelPath() const {
  if (!m_modelPath.isEmpty() || !m_plan) return m_modelPath;
  return QString::fromStdString(m_plan->p().modelPath);
}

std::shared_ptr<const plan::Plan> LaunchView::writePlan(const QString& planPath, QString* error) const {
  if (const std::string e = exportPlanFile(*m_plan, planPath.toStdString()); !e.empty()) {
    *error = QString::fromStdString(e);
    return nullptr;
  }
  try {
    return std::make_shared<const plan::Plan>(plan::readPlan(planPath.toStdString()));
  } catch (const std::exception& e) {
    *error = tr("The plan file %1 cannot be read back: %2").arg(planPath, QString::fromUtf8(e.what()));
    return nullptr;
  }
}

bool LaunchView::start() {
  if (busy()) return false;
  if (!m_plan) {
    showError(tr("There is no plan to run: open a model and a cluster and plan first (Plan ▸ Plan)"));
    return false;
  }
  m_preflightJob->wait();  // a Check going: its list is shown, then replaced by Start's
  saveSettings();
  const int ranks = static_cast<int>(plan::worldDevices(m_plan->p()).size());
  LaunchSettings s = settings();
  if (const QString why = validate(s, ranks); !why.isEmpty()) {
    showError(why);
    return false;
  }
  const QString worker = findWorker();
  s.modelPath = modelPath();
  QString error;
  const QString folder = makeRunFolder(runsDirectory(), s.modelPath, QDateTime::currentDateTime(), &error);
  if (folder.isEmpty()) {
    showError(error);
    return false;
  }
  // The plan as the workers will read it: written into the run folder, then read back.
  const QString planPath = folder + QStringLiteral("/plan.json");
  std::shared_ptr<const plan::Plan> plan = writePlan(planPath, &error);
  if (!plan) {
    QFile::remove(planPath);
    QDir().rmdir(folder);
    showError(error);
    return false;
  }
  if (s.checkpointDir.isEmpty()) s.checkpointDir = folder + QStringLiteral("/checkpoints");

  PendingLaunch p;
  p.kind = PendingLaunch::Kind::Start;
  p.plan = plan;
  p.folder = folder;
  p.checkpointDir = s.checkpointDir;
  p.ranks = ranks;
  rt::LocalLaunchRequest& r = p.request;
  r.planPath = planPath.toStdString();
  r.worker = worker.toStdString();
  r.workerArgs = toStdStrings(workerArguments(s));
  r.cpuShares = s.cpuShares;
  r.timeoutSeconds = s.timeoutSeconds;
  const QString store = m_storePath ? m_storePath() : QString();
  r.dbPath = (!store.isEmpty() ? store : QString::fromStdString(db::defaultPath())).toStdString();
  r.label = !s.label.isEmpty() ? s.label.toStdString()
                               : QStringLiteral("%1 · %2 · hap-studio")
                                     .arg(QFileInfo(s.modelPath).completeBaseName(), QString::fromStdString(m_plan->p().strategy))
                                     .toStdString();
  const rt::PreflightRequest request = preflightRequest(*plan, planPath, s, worker);
  m_status->setText(tr("Checking before the start…"));
  m_status->setStyleSheet(QString());
  runPreflight(std::move(p), request);
  return true;
}

std::shared_ptr<const plan::Plan> LaunchView::writeScratchPlan(QString* planPath) {
  m_scratch = std::make_unique<QTemporaryDir>();
  if (!m_scratch->isValid()) {
    showError(tr("Cannot make a temporary folder for the plan file: %1").arg(m_scratch->errorString()));
    return nullptr;
  }
  *planPath = m_scratch->filePath(QStringLiteral("plan.json"));
  QString error;
  std::shared_ptr<const plan::Plan> plan = writePlan(*planPath, &error);
  if (!plan) showError(error);
  return plan;
}

bool LaunchView::check() {
  if (busy() || !m_plan || (m_pending && m_pending->kind == PendingLaunch::Kind::Check)) return false;
  LaunchSettings s = settings();
  s.modelPath = modelPath();
  QString planPath;
  std::shared_ptr<const plan::Plan> plan = writeScratchPlan(&planPath);
  if (!plan) return false;
  // Where Start would put the checkpoints: a new folder in the runs folder.
  if (s.checkpointDir.isEmpty())
    s.checkpointDir = QDir(runsDirectory()).filePath(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-")) +
                                                     QFileInfo(s.modelPath).completeBaseName() + QStringLiteral("/checkpoints"));
  PendingLaunch p;
  p.kind = PendingLaunch::Kind::Check;
  p.plan = plan;
  runPreflight(std::move(p), preflightRequest(*plan, planPath, s, findWorker()));
  return true;
}

void LaunchView::runPreflight(PendingLaunch pending, const rt::PreflightRequest& request) {
  hideError();
  m_pending = std::move(pending);
  if (!m_preflightJob->start(request)) {  // cannot happen: every caller waits for the last one
    m_pending.reset();
    return;
  }
  m_preflightToggle->setIcon(style()->standardIcon(QStyle::SP_BrowserReload));
  m_preflightToggle->setText(tr("Checking…"));
  syncBusy();
}

void LaunchView::onPreflightFinished(bool passed) {
  if (!m_pending) return;
  const std::vector<rt::PreflightCheck>& checks = m_preflightJob->checks();
  // The list opens on a failure or a warning; when all is well it is one line.
  bool notOk = false;
  for (const rt::PreflightCheck& c : checks) notOk = notOk || c.status != rt::PreflightCheck::Status::Ok;
  showChecks(checks, notOk);
  if (m_pending->kind == PendingLaunch::Kind::Check) {
    m_pending.reset();
    m_scratch.reset();
    syncBusy();
    Q_EMIT preflightFinished(passed);
    return;
  }
  // Passed: said before any process starts, while the dock is still busy (a receiver may Stop).
  if (passed && !m_pending->cancelled) Q_EMIT preflightFinished(true);
  PendingLaunch p = std::move(*m_pending);
  m_pending.reset();
  if (passed && !p.cancelled) {
    launch(std::move(p));
    return;
  }
  const bool isExport = p.kind == PendingLaunch::Kind::Export;
  if (p.kind == PendingLaunch::Kind::Start) {
    QFile::remove(p.folder + QStringLiteral("/plan.json"));
    QDir().rmdir(p.folder);  // only when nothing else is in it
  }
  m_scratch.reset();
  if (passed) {  // cancelled
    m_status->setText(isExport ? tr("Export cancelled") : tr("Start cancelled: nothing was launched"));
    m_status->setStyleSheet(QStringLiteral("color: #6b6b6b;"));
  } else {
    m_outcome = (isExport ? tr("Not exported: %1") : tr("Not started: %1")).arg(preflightFailures(checks));
    showError(m_outcome);
    m_status->setText(isExport ? tr("Not exported: a check failed") : tr("Not started: a check failed"));
    m_status->setStyleSheet(QStringLiteral("color: #b01c1c;"));
    if (isExport) m_checkpointsResult->setText(m_outcome);
  }
  syncBusy();
  Q_EMIT preflightFinished(passed);
  if (isExport) Q_EMIT exportFinished(false, p.exportPath);
}

void LaunchView::launch(PendingLaunch p) {
  m_exporting = p.kind == PendingLaunch::Kind::Export;
  m_dbPath = QString::fromStdString(p.request.dbPath);
  m_outcome.clear();
  hideError();
  if (m_exporting) {
    m_exportPath = p.exportPath;
    m_status->setText(tr("Exporting %1…").arg(QFileInfo(p.checkpoint).fileName()));
    m_status->setStyleSheet(QStringLiteral("color: #1d5a9e;"));
    m_checkpointsResult->setText(tr("Exporting %1 to %2…").arg(QFileInfo(p.checkpoint).fileName(), QDir::toNativeSeparators(p.exportPath)));
    m_checkpointsResult->setStyleSheet(QString());
  } else {
    m_runFolder = p.folder;
    m_globalBatch = globalBatchSize(*p.plan);
    m_monitor->clear();
    resetMonitor(p.ranks);
    m_status->setText(tr("Starting %1…").arg(ranksText(p.ranks)));
    m_folder->setText(tr("Folder: %1").arg(QFileInfo(p.folder).fileName()));
    m_folder->setToolTip(tr("The run's folder, with its plan.json and checkpoints:\n%1").arg(QDir::toNativeSeparators(p.folder)));
    m_checkpointsResult->clear();
    listCheckpoints(p.checkpointDir);
  }
  if (!m_job->start(p.plan, p.request)) {  // cannot happen: busy() was false
    m_exporting = false;
    syncBusy();
  }
}

void LaunchView::stop() {
  if (m_pending && m_pending->kind != PendingLaunch::Kind::Check) {
    m_pending->cancelled = true;  // the preflight ends in a moment; nothing is launched
    m_status->setText(tr("Cancelling the start…"));
    updateButtons();
    return;
  }
  if (!m_job->busy()) return;
  m_job->stop();
  m_status->setText(m_exporting ? tr("Stopping the export…") : tr("Stopping every rank…"));
  updateButtons();
}

void LaunchView::stopAndWait() {
  if (m_pending) m_pending->cancelled = true;
  m_preflightJob->wait();
  m_job->stopAndWait();
}

void LaunchView::resetMonitor(int ranks) {
  m_ranks = ranks;
  m_status->setText(m_plan ? tr("Ready to run %1").arg(ranksText(ranks)) : tr("No run yet"));
  m_status->setStyleSheet(QString());
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setFormat(tr("No steps yet"));
  m_timeLeft->setText(tr("Time left: —"));
  m_throughput->setText(tr("Throughput: —"));
  m_meanStep->setText(tr("Mean step: —"));
  m_loss->setText(tr("Loss: —"));
  rebuildCharts(ranks);

  // Logs: All, then one tab per rank.
  m_logs->clear();
  for (QPlainTextEdit* l : m_rankLogs) delete l;
  m_rankLogs.clear();
  delete m_allLog;
  const auto makeLog = [this](const QString& name) {
    auto* log = new QPlainTextEdit(m_logs);
    log->setObjectName(name);
    log->setReadOnly(true);
    log->setLineWrapMode(QPlainTextEdit::WidgetWidth);  // an error line reads whole
    log->setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
    log->setMaximumBlockCount(kLogBlocks);
    log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    log->setFrameShape(QFrame::NoFrame);
    return log;
  };
  m_allLog = makeLog(QStringLiteral("log.all"));
  m_logs->addTab(m_allLog, tr("All"));
  for (int r = 0; r < ranks; ++r) {
    QPlainTextEdit* log = makeLog(QStringLiteral("log.rank%1").arg(r));
    m_rankLogs.push_back(log);
    m_logs->addTab(log, tr("Rank %1").arg(r));
  }
  m_logs->addTab(m_checkpointsPage, tr("Checkpoints"));
  updateCheckpointButtons();
}

void LaunchView::rebuildCharts(int ranks) {
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

void LaunchView::onStarted(qint64 run, int port, int ranks, const QString& commandLine) {
  if (m_exporting) {
    // The shown run's charts stay; the export's lines follow in the logs.
    m_allLog->appendPlainText(QStringLiteral("$ ") + commandLine);
    m_allLog->appendPlainText(tr("Export run %1 recorded in %2; %4, rendezvous on 127.0.0.1:%3")
                                  .arg(run)
                                  .arg(m_dbPath)
                                  .arg(port)
                                  .arg(ranksText(ranks)));
    return;
  }
  if (ranks != m_ranks) resetMonitor(ranks);
  m_status->setText(tr("<b>Run %1</b> · running · %2 on 127.0.0.1:%3").arg(run).arg(ranksText(ranks)).arg(port));
  m_status->setStyleSheet(QStringLiteral("color: #1d5a9e;"));
  m_progress->setRange(0, 0);  // busy until the first step is recorded
  m_progress->setFormat(tr("Starting…"));
  m_allLog->appendPlainText(QStringLiteral("$ ") + commandLine);
  m_allLog->appendPlainText(tr("Run %1 recorded in %2; %4, rendezvous on 127.0.0.1:%3")
                                .arg(run)
                                .arg(m_dbPath)
                                .arg(port)
                                .arg(ranksText(ranks)));
  if (run != 0) m_monitor->follow(m_dbPath, run, m_globalBatch);
  Q_EMIT runStarted(run);
}

void LaunchView::onLines(const LaunchLines& lines) {
  // One append per tab per batch: a chatty run costs a few layouts, not one per line.
  QStringList all;
  std::vector<QStringList> perRank(m_rankLogs.size());
  all.reserve(lines.size());
  QStringList checkpointsWritten;
  for (const LaunchLine& l : lines) {
    if (l.rank < 0) {
      all << l.text;
      continue;
    }
    if (l.rank == 0 && !l.stderrLine && l.text.startsWith(QLatin1String("checkpoint: ")))
      checkpointsWritten << l.text.mid(12).trimmed();
    all << QStringLiteral("[rank %1] %2").arg(l.rank).arg(l.text);
    if (static_cast<size_t>(l.rank) < perRank.size()) perRank[static_cast<size_t>(l.rank)] << l.text;
  }
  if (!all.isEmpty()) m_allLog->appendPlainText(all.join(QLatin1Char('\n')));
  for (size_t r = 0; r < perRank.size(); ++r)
    if (!perRank[r].isEmpty()) m_rankLogs[r]->appendPlainText(perRank[r].join(QLatin1Char('\n')));
  if (!m_exporting)
    for (const QString& file : checkpointsWritten) m_checkpoints->update(file);  // one header each, not a listing
}

void LaunchView::onFinished(const LaunchOutcome& o) {
  if (m_exporting) {
    m_exporting = false;
    m_scratch.reset();
    const QFileInfo written(m_exportPath);
    const bool ok = o.succeeded() && written.isFile() && written.size() > 0;
    m_allLog->appendPlainText(o.message);
    if (ok) {
      m_outcome = tr("Model written to %1 (%2)").arg(QDir::toNativeSeparators(m_exportPath), formatFileSize(written.size()));
      m_status->setText(tr("<b>Exported</b> · %1").arg(QFileInfo(m_exportPath).fileName()));
      m_status->setStyleSheet(QStringLiteral("color: #2e7d32;"));
      m_checkpointsResult->setStyleSheet(QStringLiteral("color: #2e7d32;"));
    } else {
      m_outcome = o.succeeded() ? tr("The export ended without writing %1").arg(QDir::toNativeSeparators(m_exportPath))
                                : tr("Export failed: %1").arg(o.message);
      m_status->setText(tr("Export failed"));
      m_status->setStyleSheet(QStringLiteral("color: #b01c1c;"));
      m_checkpointsResult->setStyleSheet(QStringLiteral("color: #b01c1c;"));
      showError(m_outcome);
    }
    m_checkpointsResult->setText(m_outcome);
    m_checkpointsResult->setToolTip(m_outcome);
    updateButtons();
    updateCheckpointButtons();
    Q_EMIT exportFinished(ok, m_exportPath);
    return;
  }
  m_monitor->refresh();  // the launcher has finished the run in the store: the last read
  m_monitor->stop();
  m_outcome = o.message;
  m_allLog->appendPlainText(o.message);
  const QString run = o.run != 0 ? tr("<b>Run %1</b> · ").arg(o.run) : QString();
  switch (o.kind) {
    case LaunchOutcome::Kind::Succeeded:
      m_status->setText(run + tr("succeeded in %1 s").arg(o.seconds, 0, 'f', 1));
      m_status->setStyleSheet(QStringLiteral("color: #2e7d32;"));
      break;
    case LaunchOutcome::Kind::RankFailed: {
      m_status->setText(run + tr("failed: rank %1").arg(o.failedRank));
      m_status->setStyleSheet(QStringLiteral("color: #b01c1c;"));
      showError(o.message);
      const int tab = o.failedRank + 1;  // after All
      if (tab > 0 && tab < m_logs->count()) {
        m_logs->setTabText(tab, tr("Rank %1 — failed").arg(o.failedRank));
        m_logs->setTabIcon(tab, style()->standardIcon(QStyle::SP_MessageBoxCritical));
        m_logs->tabBar()->setTabTextColor(tab, QColor(0xb0, 0x1c, 0x1c));
        m_logs->setTabToolTip(tab, o.message);
        m_logs->setCurrentIndex(tab);
      }
      break;
    }
    case LaunchOutcome::Kind::Stopped:
      m_status->setText(run + tr("stopped after %1 s").arg(o.seconds, 0, 'f', 1));
      m_status->setStyleSheet(QStringLiteral("color: #6b6b6b;"));
      break;
    case LaunchOutcome::Kind::TimedOut:
      m_status->setText(run + tr("timed out after %1 s").arg(o.seconds, 0, 'f', 1));
      m_status->setStyleSheet(QStringLiteral("color: #b01c1c;"));
      showError(o.message);
      break;
    case LaunchOutcome::Kind::Error:
      m_status->setText(run + tr("could not run"));
      m_status->setStyleSheet(QStringLiteral("color: #b01c1c;"));
      showError(o.message);
      break;
  }
  if (m_progress->maximum() == 0) {  // no step was recorded
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setFormat(tr("No steps recorded"));
  }
  listCheckpoints(m_checkpoints->folder());  // all of them again: the run is over
  updateButtons();
  Q_EMIT runFinished(o);
}

void LaunchView::onMonitorUpdated() {
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
  if (!m.running() && m.record() && !m_job->busy()) {
    // A run opened later, or the last read of this one.
    const db::RunRecord& r = *m.record();
    if (m_outcome.isEmpty())
      m_status->setText(tr("<b>Run %1</b> · %2").arg(r.id).arg(QString::fromStdString(std::string(db::runStatusName(r.status)))));
  }

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

void LaunchView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  // The charts share 60 % of the monitor's width, the logs the rest; set once there is a width.
  const int w = m_chartsSplit->width();
  if (m_splitSized || w < 600) return;
  m_splitSized = true;
  const int chart = w * 3 / 5 / 3;
  m_chartsSplit->setSizes({chart, chart, chart, w - 3 * chart});
}

QPlainTextEdit* LaunchView::log(int rank) const {
  if (rank < 0) return m_allLog;
  return static_cast<size_t>(rank) < m_rankLogs.size() ? m_rankLogs[static_cast<size_t>(rank)] : nullptr;
}

bool LaunchView::showRecordedRun(const QString& storePath, qint64 run) {
  if (busy()) {
    showError(tr("A run is going: stop it before opening run %1").arg(run));
    return false;
  }
  m_outcome.clear();
  hideError();
  m_folder->clear();
  m_folder->setToolTip(QString());
  int ranks = 0;
  QString checkpoints;
  try {
    const db::Store store(storePath.toStdString(), db::Store::Mode::ReadOnly);
    const std::optional<db::RunRecord> r = store.run(run);
    if (!r) {
      showError(tr("Run %1 is not in %2: choose a run the store lists (Profiles ▸ Runs)").arg(run).arg(storePath));
      return false;
    }
    ranks = r->ranks;
    checkpoints = recordedCheckpointDir(r->settingsJson);
    if (!r->exitReason.empty()) showError(tr("Run %1: %2").arg(run).arg(QString::fromStdString(r->exitReason)));
  } catch (const std::exception& e) {
    showError(QString::fromUtf8(e.what()));
    return false;
  }
  resetMonitor(ranks);
  m_status->clear();
  m_dbPath = storePath;
  m_runFolder.clear();
  m_checkpointsResult->clear();
  listCheckpoints(checkpoints);
  if (!checkpoints.isEmpty()) {
    m_folder->setText(tr("Checkpoints: %1").arg(QDir::toNativeSeparators(checkpoints)));
    m_folder->setToolTip(m_folder->text());
  }
  m_allLog->appendPlainText(tr("Run %1 of %2, opened from the store: its steps are recorded, its workers' output is not.")
                                .arg(run)
                                .arg(storePath));
  m_monitor->follow(storePath, run);
  return true;
}

// ---- Checkpoints ----

QWidget* LaunchView::makeCheckpointsPage() {
  auto* page = new QWidget(this);
  page->setObjectName(QStringLiteral("checkpointsPage"));
  auto* column = new QVBoxLayout(page);
  column->setContentsMargins(4, 4, 4, 4);
  column->setSpacing(4);
  m_checkpointsMessage = new QLabel(page);
  m_checkpointsMessage->setObjectName(QStringLiteral("checkpointsMessage"));
  m_checkpointsMessage->setWordWrap(true);
  m_checkpointsMessage->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_checkpointsMessage->setStyleSheet(QStringLiteral("color: gray;"));
  m_checkpointsMessage->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  column->addWidget(m_checkpointsMessage);

  m_checkpointsTable = new QTableView(page);
  m_checkpointsTable->setObjectName(QStringLiteral("checkpointsTable"));
  m_checkpointsTable->setModel(m_checkpoints);
  m_checkpointsTable->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_checkpointsTable->setSelectionMode(QAbstractItemView::SingleSelection);
  m_checkpointsTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_checkpointsTable->verticalHeader()->hide();
  m_checkpointsTable->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
  m_checkpointsTable->horizontalHeader()->setStretchLastSection(true);
  m_checkpointsTable->setAlternatingRowColors(true);
  m_checkpointsTable->setWordWrap(false);
  column->addWidget(m_checkpointsTable, 1);

  m_resumeButton = new QPushButton(tr("Resume From"), page);
  m_resumeButton->setObjectName(QStringLiteral("resumeFrom"));
  m_resumeButton->setToolTip(tr("Put the selected checkpoint in the form (Resume from), with its optimizer and the steps "
                                "that take the run to its last step; Start continues from there"));
  m_exportButton = new QPushButton(tr("Export Model…"), page);
  m_exportButton->setObjectName(QStringLiteral("exportModel"));
  m_exportButton->setToolTip(tr("Write the model of the selected checkpoint as a TorchScript file: the plan's ranks "
                                "load it and export it without a training step"));
  m_openFolderButton = new QPushButton(style()->standardIcon(QStyle::SP_DirOpenIcon), tr("Open Folder"), page);
  m_openFolderButton->setObjectName(QStringLiteral("openCheckpointFolder"));
  m_openFolderButton->setToolTip(tr("Show the checkpoint folder in the file manager"));
  auto* buttons = new QHBoxLayout;
  buttons->setSpacing(4);
  buttons->addWidget(m_resumeButton);
  buttons->addWidget(m_exportButton);
  buttons->addStretch(1);
  buttons->addWidget(m_openFolderButton);
  column->addLayout(buttons);
  m_checkpointsResult = new QLabel(page);
  m_checkpointsResult->setObjectName(QStringLiteral("checkpointsResult"));
  m_checkpointsResult->setWordWrap(true);
  m_checkpointsResult->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_checkpointsResult->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  column->addWidget(m_checkpointsResult);

  connect(m_checkpointsTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          &LaunchView::updateCheckpointButtons);
  connect(m_checkpointsTable, &QTableView::doubleClicked, this, [this](const QModelIndex& index) { resumeFrom(index.row()); });
  connect(m_resumeButton, &QPushButton::clicked, this, [this] { resumeFrom(m_checkpointsTable->currentIndex().row()); });
  connect(m_exportButton, &QPushButton::clicked, this, &LaunchView::exportModelDialog);
  connect(m_openFolderButton, &QPushButton::clicked, this, [this] {
    if (!checkpointFolder().isEmpty()) QDesktopServices::openUrl(QUrl::fromLocalFile(checkpointFolder()));
  });
  return page;
}

QString LaunchView::checkpointFolder() const { return m_checkpoints->folder(); }

void LaunchView::listCheckpoints(const QString& dir) {
  // The selected checkpoint stays selected when the same folder is listed again; else the newest
  // (the one a user resumes from or exports most often).
  const int64_t selected = dir == m_checkpoints->folder() ? m_checkpoints->step(m_checkpointsTable->currentIndex().row()) : -1;
  m_checkpoints->setFolder(dir);
  const int row = m_checkpoints->rowOfStep(selected);
  if (row >= 0) m_checkpointsTable->selectRow(row);
  else if (m_checkpoints->rowCount() > 0) m_checkpointsTable->selectRow(m_checkpoints->rowCount() - 1);
  m_checkpointsTable->resizeColumnsToContents();
  for (int c = 0; c + 1 < m_checkpoints->columnCount(); ++c)
    m_checkpointsTable->setColumnWidth(c, m_checkpointsTable->columnWidth(c) + 12);
  updateCheckpointButtons();
}

void LaunchView::updateCheckpointButtons() {
  if (!m_checkpointsTable) return;
  const int n = m_checkpoints->rowCount();
  const QString dir = m_checkpoints->folder();
  if (dir.isEmpty())
    m_checkpointsMessage->setText(tr("No checkpoint folder: a run started here writes its checkpoints into its run "
                                     "folder; a recorded run shows them when it was given --checkpoint-dir."));
  else if (!m_checkpoints->error().isEmpty())
    m_checkpointsMessage->setText(m_checkpoints->error());
  else if (n == 0)
    m_checkpointsMessage->setText(tr("No checkpoint in %1 yet: the run writes one every “Interval” steps and at the end.")
                                      .arg(QDir::toNativeSeparators(dir)));
  else
    m_checkpointsMessage->setText(n == 1 ? tr("1 checkpoint in %1").arg(QDir::toNativeSeparators(dir))
                                         : tr("%1 checkpoints in %2").arg(n).arg(QDir::toNativeSeparators(dir)));
  m_checkpointsMessage->setToolTip(m_checkpointsMessage->text());
  const int tab = m_logs->indexOf(m_checkpointsPage);
  if (tab >= 0) m_logs->setTabText(tab, n > 0 ? tr("Checkpoints (%1)").arg(n) : tr("Checkpoints"));

  const rt::CheckpointInfo* c = m_checkpoints->info(m_checkpointsTable->currentIndex().row());
  const bool usable = c && c->error.empty();
  const bool busy = this->busy();
  m_resumeButton->setEnabled(usable && !busy);
  m_exportButton->setEnabled(usable && !busy && m_plan != nullptr);
  m_exportButton->setToolTip(m_plan ? tr("Write the model of the selected checkpoint as a TorchScript file: the plan's "
                                         "ranks load it and export it without a training step")
                                    : tr("Needs the plan: show a plan of this model (its ranks load the checkpoint)"));
  m_openFolderButton->setEnabled(!dir.isEmpty() && QFileInfo(dir).isDir());
}

bool LaunchView::resumeFrom(int row) {
  const rt::CheckpointInfo* c = m_checkpoints->info(row);
  if (!c || busy()) return false;
  if (!c->error.empty()) {
    showError(QString::fromStdString(c->error));
    return false;
  }
  m_resume->setText(QString::fromStdString(c->path));
  const int o = m_optimizer->findData(QString::fromStdString(c->optimizer));
  if (o >= 0) m_optimizer->setCurrentIndex(o);
  // The run that wrote it was going to reach the monitor's last step (or at least its last checkpoint).
  const int64_t last = std::max<int64_t>(m_monitor->lastStep(), m_checkpoints->lastStep());
  const ResumeSteps rs = resumeSteps(c->step, last, m_warmup->value(), m_steps->value());
  m_warmup->setValue(static_cast<int>(rs.warmup));
  m_steps->setValue(static_cast<int>(rs.steps));
  m_checkpointsResult->setStyleSheet(QString());
  m_checkpointsResult->setText(tr("Resume from step-%1.pt: Start continues with step %2 to step %3 (%4).")
                                   .arg(c->step)
                                   .arg(c->step + 1)
                                   .arg(c->step + rs.warmup + rs.steps)
                                   .arg(QString::fromStdString(c->optimizer)));
  m_checkpointsResult->setToolTip(m_checkpointsResult->text());
  return true;
}

void LaunchView::exportModelDialog() {
  const QString checkpoint = m_checkpoints->path(m_checkpointsTable->currentIndex().row());
  if (checkpoint.isEmpty()) return;
  const QFileInfo ckpt(checkpoint);
  const QString proposal = QDir(ckpt.dir()).filePath(QFileInfo(modelPath()).completeBaseName() + QStringLiteral("-") +
                                                     ckpt.completeBaseName() + QStringLiteral(".pt"));
  QString path = QFileDialog::getSaveFileName(this, tr("Export Trained Model"), proposal, tr("TorchScript models (*.pt)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".pt");
  exportModel(checkpoint, path);
}

bool LaunchView::exportModel(const QString& checkpoint, const QString& path) {
  if (busy()) return false;
  if (!m_plan) {
    showError(tr("Export needs a plan of the checkpoint's model: its ranks load the checkpoint. Open or make the plan first"));
    return false;
  }
  m_preflightJob->wait();
  QString planPath;
  std::shared_ptr<const plan::Plan> plan = writeScratchPlan(&planPath);
  if (!plan) return false;
  // No step: load the checkpoint, write the model. The checkpoint's optimizer (a resume must match it).
  LaunchSettings s = settings();
  s.modelPath = modelPath();
  s.steps = 0;
  s.warmup = 0;
  s.data = LaunchSettings::Data::Synthetic;
  s.dataPath.clear();
  s.checkpointDir.clear();
  s.checkpointEvery = 0;
  s.resumePath = checkpoint;
  s.exportPath = path;
  s.cpuShares.clear();
  const rt::CheckpointInfo info = rt::readCheckpointInfo(checkpoint.toStdString());
  if (info.error.empty()) {
    if (info.optimizer == "adam") s.optimizer = LaunchSettings::Optimizer::Adam;
    else if (info.optimizer == "adamw") s.optimizer = LaunchSettings::Optimizer::AdamW;
    else if (info.optimizer == "sgd") s.optimizer = LaunchSettings::Optimizer::Sgd;
  }
  PendingLaunch p;
  p.kind = PendingLaunch::Kind::Export;
  p.plan = plan;
  p.checkpoint = checkpoint;
  p.exportPath = path;
  p.ranks = static_cast<int>(plan::worldDevices(*plan).size());
  const QString worker = findWorker();
  rt::LocalLaunchRequest& r = p.request;
  r.planPath = planPath.toStdString();
  r.worker = worker.toStdString();
  r.workerArgs = toStdStrings(workerArguments(s));
  r.timeoutSeconds = s.timeoutSeconds;
  const QString store = m_storePath ? m_storePath() : QString();
  r.dbPath = (!store.isEmpty() ? store : QString::fromStdString(db::defaultPath())).toStdString();
  r.label = QStringLiteral("%1 · export of %2 · hap-studio")
                .arg(QFileInfo(s.modelPath).completeBaseName(), QFileInfo(checkpoint).fileName())
                .toStdString();
  m_status->setText(tr("Checking before the export…"));
  m_status->setStyleSheet(QString());
  m_checkpointsResult->setText(tr("Checking before the export…"));
  runPreflight(std::move(p), preflightRequest(*plan, planPath, s, worker));
  return true;
}

// ---- Preflight list ----

void LaunchView::showChecks(const std::vector<rt::PreflightCheck>& checks, bool open) {
  bool failed = false, warned = false;
  for (const rt::PreflightCheck& c : checks) {
    failed = failed || c.status == rt::PreflightCheck::Status::Failed;
    warned = warned || c.status == rt::PreflightCheck::Status::Warning;
  }
  const QString summary = checks.empty() ? tr("Not checked yet: Start checks first") : hap::studio::preflightSummary(checks);
  // ▸ closed, ▾ open (as a tree's branch).
  m_preflightToggle->setText(checks.empty() ? summary : summary + (open ? QStringLiteral("  ▾") : QStringLiteral("  ▸")));
  m_preflightToggle->setToolTip(checks.empty() ? tr("Check runs the checks now; Start runs them before any process starts")
                                               : tr("%1 — click to %2 the list").arg(summary, open ? tr("close") : tr("open")));
  m_preflightToggle->setIcon(style()->standardIcon(checks.empty() ? QStyle::SP_MessageBoxQuestion
                                                   : failed        ? QStyle::SP_MessageBoxCritical
                                                   : warned        ? QStyle::SP_MessageBoxWarning
                                                                   : QStyle::SP_DialogApplyButton));
  m_preflightToggle->setEnabled(!checks.empty());
  QPalette pal = m_preflightToggle->palette();
  pal.setColor(QPalette::ButtonText, failed ? QColor(0xb0, 0x1c, 0x1c) : palette().color(QPalette::ButtonText));
  m_preflightToggle->setPalette(pal);

  // One row per check: its icon, then "Title: message", wrapped and selectable.
  auto* rows = new QWidget;
  rows->setObjectName(QStringLiteral("preflightRows"));
  auto* grid = new QGridLayout(rows);
  grid->setContentsMargins(4, 4, 4, 4);
  grid->setHorizontalSpacing(6);
  grid->setVerticalSpacing(3);
  const int icon = style()->pixelMetric(QStyle::PM_SmallIconSize);
  for (size_t k = 0; k < checks.size(); ++k) {
    const rt::PreflightCheck& c = checks[k];
    const auto pixmap = c.status == rt::PreflightCheck::Status::Failed    ? QStyle::SP_MessageBoxCritical
                        : c.status == rt::PreflightCheck::Status::Warning ? QStyle::SP_MessageBoxWarning
                                                                           : QStyle::SP_DialogApplyButton;
    auto* mark = new QLabel(rows);
    mark->setPixmap(style()->standardIcon(pixmap).pixmap(icon, icon));
    mark->setAlignment(Qt::AlignHCenter | Qt::AlignTop);
    mark->setToolTip(c.status == rt::PreflightCheck::Status::Failed    ? tr("failed")
                     : c.status == rt::PreflightCheck::Status::Warning ? tr("warning")
                                                                        : tr("ok"));
    auto* text = new QLabel(rows);
    text->setObjectName(QStringLiteral("preflight.%1").arg(QString::fromStdString(c.what)));
    text->setTextFormat(Qt::RichText);
    text->setWordWrap(true);
    text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    const QString colour = c.status == rt::PreflightCheck::Status::Failed ? QStringLiteral(" style=\"color:#b01c1c\"") : QString();
    text->setText(QStringLiteral("<b%1>%2</b>&nbsp;&nbsp;%3")
                      .arg(colour, QString::fromStdString(c.what).toHtmlEscaped(),
                           QString::fromStdString(c.message).toHtmlEscaped()));
    grid->addWidget(mark, static_cast<int>(k), 0, Qt::AlignTop);
    grid->addWidget(text, static_cast<int>(k), 1);
  }
  grid->setColumnStretch(1, 1);
  grid->setRowStretch(static_cast<int>(checks.size()), 1);
  delete m_preflightList->takeWidget();
  m_preflightList->setWidget(rows);
  m_preflightRows = rows;
  {
    const QSignalBlocker block(m_preflightToggle);
    m_preflightToggle->setChecked(open && !checks.empty());
  }
  setPreflightOpen(open && !checks.empty());
  // The first failed check in view (the list may scroll).
  for (size_t k = 0; k < checks.size(); ++k)
    if (checks[k].status == rt::PreflightCheck::Status::Failed) {
      QWidget* row = grid->itemAtPosition(static_cast<int>(k), 1)->widget();
      QTimer::singleShot(0, m_preflightList, [list = m_preflightList, row = QPointer<QWidget>(row)] {
        if (row) list->ensureWidgetVisible(row, 0, 4);
      });
      break;
    }
}

void LaunchView::setPreflightOpen(bool open) {
  m_preflightList->setVisible(open);
  const std::vector<rt::PreflightCheck>& checks = m_preflightJob->checks();
  if (checks.empty()) return;
  const QString summary = hap::studio::preflightSummary(checks);
  m_preflightToggle->setText(summary + (open ? QStringLiteral("  ▾") : QStringLiteral("  ▸")));
  m_preflightToggle->setToolTip(tr("%1 — click to %2 the list").arg(summary, open ? tr("close") : tr("open")));
}

// ---- Settings ----

void LaunchView::saveSettings() const {
  const LaunchSettings s = settings();
  QSettings q;
  q.beginGroup(QStringLiteral("launch"));
  q.setValue(QStringLiteral("steps"), static_cast<qlonglong>(s.steps));
  q.setValue(QStringLiteral("warmup"), static_cast<qlonglong>(s.warmup));
  q.setValue(QStringLiteral("seed"), static_cast<qulonglong>(s.seed));
  q.setValue(QStringLiteral("threads"), s.threads);
  q.setValue(QStringLiteral("timeout"), s.timeoutSeconds);
  q.setValue(QStringLiteral("label"), s.label);
  q.setValue(QStringLiteral("data"), dataName(s.data));
  q.setValue(QStringLiteral("dataPath"), s.dataPath);
  q.setValue(QStringLiteral("tokenDtype"), s.tokenDtype);
  q.setValue(QStringLiteral("optimizer"), optimizerName(s.optimizer));
  q.setValue(QStringLiteral("lr"), m_lr->text().trimmed());
  q.setValue(QStringLiteral("momentum"), s.momentum);
  q.setValue(QStringLiteral("weightDecay"), m_weightDecay->text().trimmed());
  q.setValue(QStringLiteral("clipNorm"), s.clipNorm);
  q.setValue(QStringLiteral("checkpointDir"), s.checkpointDir);
  q.setValue(QStringLiteral("checkpointEvery"), static_cast<qlonglong>(s.checkpointEvery));
  QVariantList shares;
  for (double v : s.cpuShares.empty() ? m_savedShares : s.cpuShares) shares << v;
  q.setValue(QStringLiteral("cpuShares"), shares);
  q.endGroup();
}

void LaunchView::restoreSettings() {
  QSettings q;
  q.beginGroup(QStringLiteral("launch"));
  if (q.childKeys().isEmpty()) return;  // the form's defaults (the worker's)
  LaunchSettings s = settings();
  s.steps = q.value(QStringLiteral("steps"), static_cast<qlonglong>(s.steps)).toLongLong();
  s.warmup = q.value(QStringLiteral("warmup"), static_cast<qlonglong>(s.warmup)).toLongLong();
  s.seed = q.value(QStringLiteral("seed"), static_cast<qulonglong>(s.seed)).toULongLong();
  s.threads = q.value(QStringLiteral("threads"), s.threads).toInt();
  s.timeoutSeconds = q.value(QStringLiteral("timeout"), s.timeoutSeconds).toDouble();
  s.label = q.value(QStringLiteral("label"), s.label).toString();
  const QString data = q.value(QStringLiteral("data")).toString();
  for (auto d : {LaunchSettings::Data::Synthetic, LaunchSettings::Data::Tokens, LaunchSettings::Data::Cifar})
    if (dataName(d) == data) s.data = d;
  s.dataPath = q.value(QStringLiteral("dataPath"), s.dataPath).toString();
  s.tokenDtype = q.value(QStringLiteral("tokenDtype"), s.tokenDtype).toString();
  const QString optimizer = q.value(QStringLiteral("optimizer")).toString();
  for (auto o : {LaunchSettings::Optimizer::Sgd, LaunchSettings::Optimizer::Adam, LaunchSettings::Optimizer::AdamW})
    if (optimizerName(o) == optimizer) s.optimizer = o;
  s.momentum = q.value(QStringLiteral("momentum"), s.momentum).toDouble();
  s.clipNorm = q.value(QStringLiteral("clipNorm"), s.clipNorm).toDouble();
  s.checkpointDir = q.value(QStringLiteral("checkpointDir"), s.checkpointDir).toString();
  s.checkpointEvery = q.value(QStringLiteral("checkpointEvery"), static_cast<qlonglong>(s.checkpointEvery)).toLongLong();
  s.resumePath.clear();
  s.exportPath.clear();
  setSettings(s);
  // The numbers as typed (a learning rate of "3e-4" stays so), even when they do not parse.
  if (q.contains(QStringLiteral("lr"))) m_lr->setText(q.value(QStringLiteral("lr")).toString());
  if (q.contains(QStringLiteral("weightDecay"))) m_weightDecay->setText(q.value(QStringLiteral("weightDecay")).toString());
  m_savedShares.clear();
  for (const QVariant& v : q.value(QStringLiteral("cpuShares")).toList()) m_savedShares.push_back(v.toDouble());
  q.endGroup();
}

QString LaunchView::writeLaunchScripts(int kind, const QString& dir, bool force) {
  if (!m_plan) return tr("There is no plan: plan first");
  LaunchSettings s = settings();
  const int ranks = static_cast<int>(plan::worldDevices(m_plan->p()).size());
  s.cpuShares.clear();  // a local emulation only
  if (const QString why = validate(s, ranks); !why.isEmpty()) return why;
  QTemporaryDir scratch;
  if (!scratch.isValid()) return tr("Cannot make a temporary folder for the plan file");
  const QString planPath = scratch.filePath(QStringLiteral("plan.json"));
  if (const std::string e = exportPlanFile(*m_plan, planPath.toStdString()); !e.empty()) return QString::fromStdString(e);
  rt::EmitRequest request;
  request.kind = static_cast<rt::ScriptKind>(kind);
  request.dir = dir.toStdString();
  request.force = force;
  request.workerArgs = toStdStrings(workerArguments(s));  // no --model: the scripts name the model's file
  try {
    (void)rt::emitLaunchFolder(m_plan->p(), planPath.toStdString(), request);
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

void LaunchView::chooseScripts(int kind) {
  if (!m_plan) return;
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Write Launch Scripts Into"), runsDirectory());
  if (dir.isEmpty()) return;
  bool force = false;
  if (!QDir(dir).isEmpty()) {
    const auto answer = QMessageBox::question(
        this, tr("Folder Not Empty"),
        tr("%1 is not empty. Write the launch scripts into it anyway, replacing files of the same names?").arg(dir),
        QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Yes) return;
    force = true;
  }
  if (const QString error = writeLaunchScripts(kind, dir, force); !error.isEmpty()) {
    showError(error);
    return;
  }
  hideError();
  m_folder->setText(tr("Launch scripts written to %1").arg(QDir::toNativeSeparators(dir)));
  m_folder->setToolTip(m_folder->text());
}

}  // namespace hap::studio
