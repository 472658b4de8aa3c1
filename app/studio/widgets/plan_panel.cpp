#include "app/studio/widgets/plan_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QRegularExpression>
#include <QAction>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "app/studio/widgets/fixed_font.h"

namespace hap::studio {
namespace {

// Quotes an argument for a POSIX shell when it needs it.
QString shellQuoted(const QString& s) {
  static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_./:=,@%+-]+$"));
  if (plain.match(s).hasMatch()) return s;
  QString q = s;
  q.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
  return QLatin1Char('\'') + q + QLatin1Char('\'');
}

}  // namespace

PlanPanel::PlanPanel(QWidget* parent) : QWidget(parent) {
  m_strategy = new QComboBox(this);
  m_strategy->addItem(tr("HAP (every rule variant)"), QString());
  m_strategy->addItem(tr("Baseline: DP-EV (data parallel, even shares)"), QStringLiteral("dp-ev"));
  m_strategy->addItem(tr("Baseline: DP-CP (data parallel, shares by FLOP/s)"), QStringLiteral("dp-cp"));
  m_strategy->addItem(tr("Baseline: FSDP (fully sharded)"), QStringLiteral("fsdp"));
  m_strategy->addItem(tr("Baseline: Megatron (tensor parallel in machines)"), QStringLiteral("megatron"));

  m_ratios = new QComboBox(this);
  m_ratios->addItem(tr("Optimised (search ⇄ LP)"), QStringLiteral("lp"));
  m_ratios->addItem(tr("Whole lengths (search ⇄ LP ⇄ MILP)"), QStringLiteral("milp"));
  m_ratios->addItem(tr("Proportional to FLOP/s"), QStringLiteral("proportional"));
  m_ratios->addItem(tr("Even"), QStringLiteral("even"));
  m_ratios->addItem(tr("Fixed shares…"), QStringLiteral("fixed"));
  m_shares = new QLineEdit(this);
  m_shares->setPlaceholderText(tr("one share per device, e.g. 0.4,0.4,0.1,0.1"));
  m_shares->hide();

  m_segments = new QComboBox(this);
  m_segments->setEditable(true);
  m_segments->addItems({QStringLiteral("layer"), QStringLiteral("none"), QStringLiteral("scope:1"),
                        QStringLiteral("scope:2"), QStringLiteral("auto:4")});
  m_segments->setToolTip(tr("Groups of nodes with their own ratios: layer (one per repeated block), none, "
                            "scope:DEPTH, auto:PARTS (METIS). Empty: layer for HAP, none for a baseline."));
  m_collectives = new QComboBox(this);
  m_collectives->addItems({QStringLiteral("auto"), QStringLiteral("padded"), QStringLiteral("grouped")});

  m_pins = new QListWidget(this);
  m_pins->setMaximumHeight(90);
  m_pins->setToolTip(tr("Pins: PATTERN=VARIANT, a glob on module scope or op. Right-click a node in the graph ▸ "
                        "Compute under variant to add one. Del removes the selected pin."));
  m_newPin = new QLineEdit(this);
  m_newPin->setPlaceholderText(tr("add a pin: layers.*.ffn.fc1=column"));
  auto* removePin = new QToolButton(this);
  removePin->setText(tr("Remove"));

  m_maxStates = new QSpinBox(this);
  m_maxStates->setRange(1, 2'000'000'000);
  m_maxStates->setGroupSeparatorShown(true);
  m_maxStates->setToolTip(tr("--max-states: A* state budget; beyond it the beam search takes over"));
  m_beamWidth = new QSpinBox(this);
  m_beamWidth->setRange(0, 1'000'000);
  m_beamWidth->setToolTip(tr("--beam-width: states kept per position by the fallback beam search (0: fail)"));
  m_baselines = new QCheckBox(tr("Price the baselines (DP-EV, DP-CP, FSDP, Megatron)"), this);

  m_command = new QLineEdit(this);
  m_command->setReadOnly(true);
  m_command->setToolTip(tr("The same plan from the command line"));
  m_command->setFont(fixedFont());

  m_plan = new QPushButton(tr("Plan"), this);
  m_plan->setDefault(true);
  m_plan->setToolTip(tr("Synthesise the program and its ratios (Ctrl+R)"));
  m_cancel = new QPushButton(tr("Cancel"), this);
  m_cancel->setEnabled(false);

  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
  form->addRow(tr("Strategy"), m_strategy);
  auto* ratios = new QVBoxLayout;
  ratios->setContentsMargins(0, 0, 0, 0);
  ratios->addWidget(m_ratios);
  ratios->addWidget(m_shares);
  form->addRow(tr("Ratios"), ratios);
  form->addRow(tr("Segments"), m_segments);
  form->addRow(tr("Collectives"), m_collectives);
  auto* pinRow = new QHBoxLayout;
  pinRow->addWidget(m_newPin, 1);
  pinRow->addWidget(removePin);
  auto* pins = new QVBoxLayout;
  pins->setContentsMargins(0, 0, 0, 0);
  pins->addWidget(m_pins);
  pins->addLayout(pinRow);
  form->addRow(tr("Pins"), pins);
  form->addRow(tr("Max states"), m_maxStates);
  form->addRow(tr("Beam width"), m_beamWidth);
  form->addRow(QString(), m_baselines);
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  buttons->addWidget(m_cancel);
  buttons->addWidget(m_plan);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(new QLabel(tr("Command line:"), this));
  layout->addWidget(m_command);
  layout->addLayout(buttons);
  layout->addStretch(1);

  setRequest({});
  auto changed = [this] {
    updateEnabled();
    updateCommand();
    Q_EMIT requestChanged();
  };
  connect(m_strategy, &QComboBox::currentIndexChanged, this, [this, changed] {
    // The segments follow the strategy's default unless the user chose others.
    const bool hap = m_strategy->currentData().toString().isEmpty();
    const QString text = m_segments->currentText();
    if (text == QLatin1String(hap ? "none" : "layer")) {
      const QSignalBlocker block(m_segments);
      m_segments->setCurrentText(QLatin1String(hap ? "layer" : "none"));
    }
    changed();
  });
  connect(m_ratios, &QComboBox::currentIndexChanged, this, changed);
  connect(m_shares, &QLineEdit::textChanged, this, changed);
  connect(m_segments, &QComboBox::currentTextChanged, this, changed);
  connect(m_collectives, &QComboBox::currentIndexChanged, this, changed);
  connect(m_maxStates, &QSpinBox::valueChanged, this, changed);
  connect(m_beamWidth, &QSpinBox::valueChanged, this, changed);
  connect(m_baselines, &QCheckBox::toggled, this, changed);
  connect(m_newPin, &QLineEdit::returnPressed, this, [this, changed] {
    const QString text = m_newPin->text().trimmed();
    const int eq = text.indexOf(QLatin1Char('='));
    if (eq <= 0 || eq == text.size() - 1) return;  // not PATTERN=VARIANT yet
    addPin(text.left(eq), text.mid(eq + 1));
    m_newPin->clear();
  });
  auto remove = [this, changed] {
    qDeleteAll(m_pins->selectedItems());
    changed();
  };
  connect(removePin, &QToolButton::clicked, this, remove);
  auto* del = new QAction(m_pins);
  del->setShortcut(QKeySequence::Delete);
  del->setShortcutContext(Qt::WidgetShortcut);
  m_pins->addAction(del);
  connect(del, &QAction::triggered, this, remove);
  connect(m_plan, &QPushButton::clicked, this, &PlanPanel::planRequested);
  connect(m_cancel, &QPushButton::clicked, this, &PlanPanel::cancelRequested);
}

plan::PlanRequest PlanPanel::request() const {
  plan::PlanRequest r;
  r.baseline = m_strategy->currentData().toString().toStdString();
  const QString ratios = m_ratios->currentData().toString();
  r.ratios = ratios == QLatin1String("fixed") ? m_shares->text().trimmed().toStdString() : ratios.toStdString();
  const QString segments = m_segments->currentText().trimmed();
  // The default segmentation is left unsaid, as `hap plan` without --segments.
  const QString defaultSegments = r.baseline.empty() ? QStringLiteral("layer") : QStringLiteral("none");
  r.segments = segments == defaultSegments ? std::string() : segments.toStdString();
  r.collectives = m_collectives->currentText().toStdString();
  for (int i = 0; i < m_pins->count(); ++i) r.pins.push_back(m_pins->item(i)->text().toStdString());
  r.maxStates = m_maxStates->value();
  r.beamWidth = m_beamWidth->value();
  r.baselines = m_baselines->isChecked();
  return r;
}

void PlanPanel::setRequest(const plan::PlanRequest& r) {
  const QSignalBlocker b1(m_strategy), b2(m_ratios), b3(m_shares), b4(m_segments), b5(m_collectives), b6(m_maxStates),
      b7(m_beamWidth), b8(m_baselines);
  m_strategy->setCurrentIndex(std::max(0, m_strategy->findData(QString::fromStdString(r.baseline))));
  const int ratios = m_ratios->findData(QString::fromStdString(r.ratios));
  m_ratios->setCurrentIndex(ratios >= 0 ? ratios : m_ratios->findData(QStringLiteral("fixed")));
  m_shares->setText(ratios >= 0 ? QString() : QString::fromStdString(r.ratios));
  m_segments->setCurrentText(QString::fromStdString(r.effectiveSegments()));
  m_collectives->setCurrentText(QString::fromStdString(r.collectives));
  m_pins->clear();
  for (const std::string& p : r.pins) m_pins->addItem(QString::fromStdString(p));
  m_maxStates->setValue(static_cast<int>(std::min<int64_t>(r.maxStates, m_maxStates->maximum())));
  m_beamWidth->setValue(r.beamWidth);
  m_baselines->setChecked(r.baselines);
  updateEnabled();
  updateCommand();
  Q_EMIT requestChanged();
}

void PlanPanel::addPin(const QString& pattern, const QString& variant) {
  const QString prefix = pattern + QLatin1Char('=');
  for (int i = m_pins->count() - 1; i >= 0; --i)
    if (m_pins->item(i)->text().startsWith(prefix)) delete m_pins->takeItem(i);
  m_pins->addItem(prefix + variant);
  updateCommand();
  Q_EMIT requestChanged();
}

void PlanPanel::setFiles(const QString& model, const QString& cluster) {
  m_model = model;
  m_cluster = cluster;
  updateCommand();
}

QString PlanPanel::commandLine() const { return m_command->text(); }

void PlanPanel::setBusy(bool busy) {
  m_cancel->setEnabled(busy);
  m_plan->setText(busy ? tr("Re-plan") : tr("Plan"));
}

void PlanPanel::updateEnabled() {
  const bool hap = m_strategy->currentData().toString().isEmpty();
  m_ratios->setEnabled(hap);  // a baseline's shares are its own (even or proportional)
  m_shares->setVisible(hap && m_ratios->currentData().toString() == QLatin1String("fixed"));
}

void PlanPanel::updateCommand() {
  QStringList args{QStringLiteral("hap"), QStringLiteral("plan"),
                   m_model.isEmpty() ? QStringLiteral("MODEL.pt") : QFileInfo(m_model).fileName(),
                   QStringLiteral("--cluster"),
                   m_cluster.isEmpty() ? QStringLiteral("CLUSTER.yaml") : QFileInfo(m_cluster).fileName()};
  for (const std::string& a : request().arguments()) args << shellQuoted(QString::fromStdString(a));
  m_command->setText(args.join(QLatin1Char(' ')));
  m_command->setCursorPosition(0);
}

}  // namespace hap::studio
