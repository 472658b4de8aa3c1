#include "app/studio/widgets/launch_form.h"

#include <QBoxLayout>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QFrame>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QToolButton>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hap::studio {
namespace {

// "1 rank", "3 ranks".
QString ranksText(int n) { return n == 1 ? QObject::tr("1 rank") : QObject::tr("%1 ranks").arg(n); }

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

}  // namespace

LaunchForm::LaunchForm(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("launchOptions"));
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(0);

  auto* scroll = new QScrollArea(this);
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
  m_scroll = scroll;
  m_body = body;

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
  form->addRow(heading(tr("Per rank: CPU share, slowdown"), body));
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
}

int LaunchForm::fittingWidth() const {
  return m_body->minimumSizeHint().width() + m_scroll->verticalScrollBar()->sizeHint().width();
}

void LaunchForm::setDevices(const std::vector<plan::PlanDevice>& devices, const std::vector<double>& shares) {
  const int ranks = static_cast<int>(devices.size());
  // The shares and slowdowns stay while the rank count does (a plan of another cluster resets them).
  if (!m_shares.empty()) {
    m_savedShares.clear();
    m_savedSlowdowns.clear();
    for (QDoubleSpinBox* b : m_shares) m_savedShares.push_back(b->value());
    for (QDoubleSpinBox* b : m_slowdowns) m_savedSlowdowns.push_back(b->value());
  }
  const auto kept = [&](const std::vector<double>& saved) {
    return static_cast<int>(saved.size()) == ranks ? saved : std::vector<double>{};
  };
  const std::vector<double> keep = kept(m_savedShares), keepSlowdowns = kept(m_savedSlowdowns);
  const std::vector<double> start = static_cast<int>(shares.size()) == ranks ? shares : std::vector<double>{};
  m_shares.clear();
  m_slowdowns.clear();
  while (QLayoutItem* item = m_sharesGrid->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  // Rank, share, slowdown: one rank a row up to 4 ranks, two a row beyond.
  const int kColumns = ranks <= 4 ? 1 : 2;
  for (int r = 0; r < ranks; ++r) {
    auto* label = new QLabel(tr("Rank %1:").arg(r), m_sharesBox);
    auto* b = new QDoubleSpinBox(m_sharesBox);
    b->setObjectName(QStringLiteral("share%1").arg(r));
    b->setRange(0.05, 1);
    b->setSingleStep(0.05);
    b->setDecimals(2);
    b->setValue(!keep.empty() ? keep[static_cast<size_t>(r)] : !start.empty() ? start[static_cast<size_t>(r)] : 1.0);
    b->setSuffix(tr(" CPU"));
    const plan::PlanDevice& d = devices[static_cast<size_t>(r)];
    b->setToolTip(tr("Rank %1 (%2 on %3) may use this share of one CPU core: 0.25 runs it about 4× slower")
                      .arg(r)
                      .arg(QString::fromStdString(d.type), QString::fromStdString(d.machine)));
    label->setBuddy(b);
    auto* slow = new QDoubleSpinBox(m_sharesBox);
    slow->setObjectName(QStringLiteral("slowdown%1").arg(r));
    slow->setRange(1, 64);
    slow->setSingleStep(0.5);
    slow->setDecimals(2);
    slow->setPrefix(QStringLiteral("× "));
    slow->setSuffix(tr(" slower"));
    slow->setValue(keepSlowdowns.empty() ? 1.0 : keepSlowdowns[static_cast<size_t>(r)]);
    slow->setToolTip(tr("Rank %1 computes this many times slower (it sleeps after its ops) while its "
                        "collectives run at full speed: a slower GPU, where the CPU share also slows its "
                        "communication (hap launch --slowdown)")
                         .arg(r));
    m_sharesGrid->addWidget(label, r / kColumns, (r % kColumns) * 3, Qt::AlignRight);
    m_sharesGrid->addWidget(b, r / kColumns, (r % kColumns) * 3 + 1);
    m_sharesGrid->addWidget(slow, r / kColumns, (r % kColumns) * 3 + 2);
    m_shares.push_back(b);
    m_slowdowns.push_back(slow);
  }
  m_sharesHint->setText(ranks == 0 ? tr("Plan first: one rank per device of the plan.")
                                   : tr("%1 on this machine, one per device of the plan: its share of one core "
                                        "(1 = a full core) and how many times slower it computes.")
                                         .arg(ranksText(ranks)));
}

LaunchSettings LaunchForm::settings() const {
  LaunchSettings s;
  runtime::WorkerOptions& w = s.worker;
  w.steps = m_steps->value();
  w.warmup = m_warmup->value();
  w.seed = static_cast<uint64_t>(m_seed->value());
  w.threads = m_threads->value();
  s.timeoutSeconds = m_timeout->value();
  s.label = m_label->text().trimmed();
  w.data.kind = m_data->currentData().toString().toStdString();
  w.data.path = m_dataPath->text().trimmed().toStdString();
  w.data.tokenDtype = m_tokenDtype->currentText().toStdString();
  w.optimizer.kind = optimizerKind(m_optimizer->currentData().toString());
  w.optimizer.lr = parseNumber(m_lr->text());
  w.optimizer.momentum = m_momentum->value();
  w.optimizer.weightDecay = m_weightDecay->text().trimmed().isEmpty() ? 0 : parseNumber(m_weightDecay->text());
  w.optimizer.clipNorm = m_clipNorm->value();
  w.checkpointDir = m_checkpointDir->text().trimmed().toStdString();
  w.checkpointEvery = m_checkpointEvery->value();
  w.resumePath = m_resume->text().trimmed().toStdString();
  w.exportPath = m_export->text().trimmed().toStdString();
  for (QDoubleSpinBox* b : m_shares) s.cpuShares.push_back(b->value());
  // All at full speed: no --slowdown at all.
  if (std::any_of(m_slowdowns.begin(), m_slowdowns.end(), [](const QDoubleSpinBox* b) { return b->value() != 1; }))
    for (QDoubleSpinBox* b : m_slowdowns) s.slowdowns.push_back(b->value());
  return s;
}

void LaunchForm::setSettings(const LaunchSettings& s) {
  const runtime::WorkerOptions& w = s.worker;
  m_steps->setValue(static_cast<int>(w.steps));
  m_warmup->setValue(static_cast<int>(w.warmup));
  m_seed->setValue(static_cast<int>(w.seed));
  m_threads->setValue(w.threads);
  m_timeout->setValue(static_cast<int>(std::lround(s.timeoutSeconds)));
  m_label->setText(s.label);
  m_data->setCurrentIndex(m_data->findData(QString::fromStdString(w.data.kind)));
  m_dataPath->setText(QString::fromStdString(w.data.path));
  m_tokenDtype->setCurrentText(QString::fromStdString(w.data.tokenDtype));
  m_optimizer->setCurrentIndex(m_optimizer->findData(optimizerName(w.optimizer.kind)));
  m_lr->setText(number(w.optimizer.lr));
  m_momentum->setValue(w.optimizer.momentum);
  m_weightDecay->setText(number(w.optimizer.weightDecay));
  m_clipNorm->setValue(w.optimizer.clipNorm);
  m_checkpointDir->setText(QString::fromStdString(w.checkpointDir));
  m_checkpointEvery->setValue(static_cast<int>(w.checkpointEvery));
  m_resume->setText(QString::fromStdString(w.resumePath));
  m_export->setText(QString::fromStdString(w.exportPath));
  for (size_t r = 0; r < m_shares.size() && r < s.cpuShares.size(); ++r) m_shares[r]->setValue(s.cpuShares[r]);
  for (size_t r = 0; r < m_slowdowns.size(); ++r) m_slowdowns[r]->setValue(r < s.slowdowns.size() ? s.slowdowns[r] : 1.0);
}

void LaunchForm::setResume(const QString& checkpoint, const QString& optimizer, int64_t warmup, int64_t steps) {
  m_resume->setText(checkpoint);
  const int o = m_optimizer->findData(optimizer);
  if (o >= 0) m_optimizer->setCurrentIndex(o);
  m_warmup->setValue(static_cast<int>(warmup));
  m_steps->setValue(static_cast<int>(steps));
}

// ---- Settings ----

void LaunchForm::saveSettings() const {
  const LaunchSettings s = settings();
  const runtime::WorkerOptions& w = s.worker;
  QSettings q;
  q.beginGroup(QStringLiteral("launch"));
  q.setValue(QStringLiteral("steps"), static_cast<qlonglong>(w.steps));
  q.setValue(QStringLiteral("warmup"), static_cast<qlonglong>(w.warmup));
  q.setValue(QStringLiteral("seed"), static_cast<qulonglong>(w.seed));
  q.setValue(QStringLiteral("threads"), w.threads);
  q.setValue(QStringLiteral("timeout"), s.timeoutSeconds);
  q.setValue(QStringLiteral("label"), s.label);
  q.setValue(QStringLiteral("data"), QString::fromStdString(w.data.kind));
  q.setValue(QStringLiteral("dataPath"), QString::fromStdString(w.data.path));
  q.setValue(QStringLiteral("tokenDtype"), QString::fromStdString(w.data.tokenDtype));
  q.setValue(QStringLiteral("optimizer"), optimizerName(w.optimizer.kind));
  q.setValue(QStringLiteral("lr"), m_lr->text().trimmed());
  q.setValue(QStringLiteral("momentum"), w.optimizer.momentum);
  q.setValue(QStringLiteral("weightDecay"), m_weightDecay->text().trimmed());
  q.setValue(QStringLiteral("clipNorm"), w.optimizer.clipNorm);
  q.setValue(QStringLiteral("checkpointDir"), QString::fromStdString(w.checkpointDir));
  q.setValue(QStringLiteral("checkpointEvery"), static_cast<qlonglong>(w.checkpointEvery));
  QVariantList shares;
  for (double v : s.cpuShares.empty() ? m_savedShares : s.cpuShares) shares << v;
  q.setValue(QStringLiteral("cpuShares"), shares);
  QVariantList slowdowns;
  for (double v : m_slowdowns.empty() ? m_savedSlowdowns : s.slowdowns) slowdowns << v;
  q.setValue(QStringLiteral("slowdowns"), slowdowns);
  q.endGroup();
}

void LaunchForm::restoreSettings() {
  QSettings q;
  q.beginGroup(QStringLiteral("launch"));
  if (q.childKeys().isEmpty()) return;  // the form's defaults (the worker's)
  LaunchSettings s = settings();
  runtime::WorkerOptions& w = s.worker;
  w.steps = q.value(QStringLiteral("steps"), static_cast<qlonglong>(w.steps)).toLongLong();
  w.warmup = q.value(QStringLiteral("warmup"), static_cast<qlonglong>(w.warmup)).toLongLong();
  w.seed = q.value(QStringLiteral("seed"), static_cast<qulonglong>(w.seed)).toULongLong();
  w.threads = q.value(QStringLiteral("threads"), w.threads).toInt();
  s.timeoutSeconds = q.value(QStringLiteral("timeout"), s.timeoutSeconds).toDouble();
  s.label = q.value(QStringLiteral("label"), s.label).toString();
  const QString data = q.value(QStringLiteral("data")).toString();
  if (m_data->findData(data) >= 0) w.data.kind = data.toStdString();
  w.data.path = q.value(QStringLiteral("dataPath"), QString::fromStdString(w.data.path)).toString().toStdString();
  w.data.tokenDtype =
      q.value(QStringLiteral("tokenDtype"), QString::fromStdString(w.data.tokenDtype)).toString().toStdString();
  const QString optimizer = q.value(QStringLiteral("optimizer")).toString();
  if (m_optimizer->findData(optimizer) >= 0) w.optimizer.kind = optimizerKind(optimizer);
  w.optimizer.momentum = q.value(QStringLiteral("momentum"), w.optimizer.momentum).toDouble();
  w.optimizer.clipNorm = q.value(QStringLiteral("clipNorm"), w.optimizer.clipNorm).toDouble();
  w.checkpointDir =
      q.value(QStringLiteral("checkpointDir"), QString::fromStdString(w.checkpointDir)).toString().toStdString();
  w.checkpointEvery =
      q.value(QStringLiteral("checkpointEvery"), static_cast<qlonglong>(w.checkpointEvery)).toLongLong();
  w.resumePath.clear();
  w.exportPath.clear();
  setSettings(s);
  // The numbers as typed (a learning rate of "3e-4" stays so), even when they do not parse.
  if (q.contains(QStringLiteral("lr"))) m_lr->setText(q.value(QStringLiteral("lr")).toString());
  if (q.contains(QStringLiteral("weightDecay"))) m_weightDecay->setText(q.value(QStringLiteral("weightDecay")).toString());
  m_savedShares.clear();
  for (const QVariant& v : q.value(QStringLiteral("cpuShares")).toList()) m_savedShares.push_back(v.toDouble());
  m_savedSlowdowns.clear();
  for (const QVariant& v : q.value(QStringLiteral("slowdowns")).toList()) m_savedSlowdowns.push_back(v.toDouble());
  q.endGroup();
}

}  // namespace hap::studio
