#include "app/studio/widgets/calibrate_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>
#include <set>

#include "app/studio/core/jobs/calibrate_job.h"
#include "app/studio/core/models/calibration_models.h"
#include "app/studio/core/models/profile_store_models.h"

namespace hap::studio {
namespace {

// A read-only table whose column `stretch` takes the width left (a text column: numbers stay
// beside their neighbours instead of at the far right).
QTableView* makeTable(QWidget* parent, const char* name, QAbstractItemModel* model, int stretch) {
  auto* t = new QTableView(parent);
  t->setObjectName(QString::fromLatin1(name));
  t->setModel(model);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setSelectionMode(QAbstractItemView::SingleSelection);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->setAlternatingRowColors(true);
  t->setWordWrap(false);
  t->verticalHeader()->hide();
  t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 6);
  t->horizontalHeader()->setHighlightSections(false);
  t->horizontalHeader()->setStretchLastSection(false);
  t->horizontalHeader()->setSectionResizeMode(stretch, QHeaderView::Stretch);
  return t;
}

QLabel* boldLabel(const QString& text, QWidget* parent) {
  auto* l = new QLabel(text, parent);
  QFont f = l->font();
  f.setBold(true);
  l->setFont(f);
  return l;
}

// "bench" for "bench@2".
QString nameOf(const std::string& base) { return QString::fromStdString(base.substr(0, base.rfind('@'))); }

}  // namespace

CalibrateDialog::CalibrateDialog(QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("calibrateDialog"));
  setWindowTitle(tr("Calibrate the Cost Model"));
  m_job = new CalibrateJob(this);
  m_runs = new CalibrationRunsModel(this);
  m_resultModel = new CalibrationResultModel(this);
  m_terms = new CalibrationTermsModel(this);

  // What to fit: the store, the profile's name, the hold-out, saving.
  auto* choose = new QGridLayout;
  choose->setHorizontalSpacing(10);
  m_store = new QLabel(this);
  m_store->setObjectName(QStringLiteral("calibrateStore"));
  m_store->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_profile = new QComboBox(this);
  m_profile->setObjectName(QStringLiteral("calibrateProfile"));
  m_profile->setEditable(true);
  m_profile->setInsertPolicy(QComboBox::NoInsert);
  m_profile->setMinimumContentsLength(16);
  m_profile->lineEdit()->setPlaceholderText(tr("name of the calibrated profile"));
  m_profile->setToolTip(tr("The profile the fit is saved under, as its next version (hap calibrate --name). "
                           "Choosing one checks the runs planned under it."));
  m_split = new QComboBox(this);
  m_split->setObjectName(QStringLiteral("calibrateSplit"));
  m_split->addItem(tr("Every second plan (by id)"), static_cast<int>(db::CalibrationRequest::Split::Half));
  m_split->addItem(tr("None: fit every run"), static_cast<int>(db::CalibrationRequest::Split::None));
  m_split->setToolTip(tr("Runs of held-out plans are only reported, not fitted: how well the fit predicts plans it "
                         "has not seen (hap calibrate --split)"));
  m_save = new QCheckBox(tr("Save as a new profile version"), this);
  m_save->setObjectName(QStringLiteral("calibrateSave"));
  m_save->setChecked(true);
  m_save->setToolTip(tr("Unchecked: report the fit without saving it (hap calibrate --dry-run)"));
  auto* profileLabel = new QLabel(tr("&Profile:"), this);
  profileLabel->setBuddy(m_profile);
  auto* splitLabel = new QLabel(tr("&Hold out:"), this);
  splitLabel->setBuddy(m_split);
  choose->addWidget(new QLabel(tr("Store:"), this), 0, 0);
  choose->addWidget(m_store, 0, 1, 1, 4);
  choose->addWidget(profileLabel, 1, 0);
  choose->addWidget(m_profile, 1, 1);
  choose->addWidget(splitLabel, 1, 2);
  choose->addWidget(m_split, 1, 3);
  choose->addWidget(m_save, 1, 4);
  choose->setColumnStretch(1, 1);
  choose->setColumnStretch(3, 1);

  // The runs to fit on.
  m_runsTable = makeTable(this, "calibrateRuns", m_runs, CalibrationRunsModel::LabelColumn);
  m_runsTable->setMinimumHeight(m_runsTable->verticalHeader()->defaultSectionSize() * 5);
  m_runsHint = new QLabel(this);
  m_runsHint->setObjectName(QStringLiteral("calibrateRunsHint"));
  m_fit = new QPushButton(tr("&Fit"), this);
  m_fit->setObjectName(QStringLiteral("calibrateFit"));
  m_fit->setDefault(true);
  m_fit->setToolTip(tr("Fit the cost model to the checked runs (hap calibrate)"));
  m_busy = new QLabel(this);
  auto* fitRow = new QHBoxLayout;
  fitRow->addWidget(m_runsHint, 1);
  fitRow->addWidget(m_busy);
  fitRow->addWidget(m_fit);

  // Accuracy before → after, fitted and held-out runs.
  auto* accuracy = new QGroupBox(tr("Accuracy: before → after"), this);
  auto* grid = new QGridLayout(accuracy);
  grid->setHorizontalSpacing(18);
  grid->setVerticalSpacing(4);
  const QString rowNames[AccuracyRowCount] = {tr("Step time MAPE"), tr("Step time Pearson"), tr("Peak memory MAPE"),
                                              tr("Plan ranking (pairs right)")};
  const char* keys[AccuracyRowCount] = {"stepMape", "stepPearson", "memoryMape", "ranking"};
  for (int set = 0; set < 2; ++set) {
    m_accuracyHeader[set] = boldLabel(set == 0 ? tr("Fit runs") : tr("Held-out runs"), accuracy);
    m_accuracyHeader[set]->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    grid->addWidget(m_accuracyHeader[set], 0, set + 1);
  }
  for (int row = 0; row < AccuracyRowCount; ++row) {
    grid->addWidget(new QLabel(rowNames[row], accuracy), row + 1, 0);
    for (int set = 0; set < 2; ++set) {
      auto* l = new QLabel(QStringLiteral("—"), accuracy);
      l->setObjectName(QStringLiteral("accuracy.%1.%2").arg(set == 0 ? "fit" : "heldOut", keys[row]));
      l->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
      l->setTextInteractionFlags(Qt::TextSelectableByMouse);
      m_accuracy[set][row] = l;
      grid->addWidget(l, row + 1, set + 1);
    }
  }
  grid->setRowStretch(AccuracyRowCount + 1, 1);

  // The fitted terms and what was saved.
  auto* terms = new QGroupBox(tr("Fitted terms (relative to the base profile)"), this);
  auto* termsLayout = new QVBoxLayout(terms);
  m_termsTable = makeTable(terms, "calibrateTerms", m_terms, CalibrationTermsModel::TypeColumn);
  m_termsTable->setMinimumHeight(m_termsTable->verticalHeader()->defaultSectionSize() * 4);
  m_termsTable->setMaximumHeight(m_termsTable->verticalHeader()->defaultSectionSize() * 5);
  m_exposure = new QLabel(terms);
  m_exposure->setObjectName(QStringLiteral("calibrateExposure"));
  m_saved = new QLabel(terms);
  m_saved->setObjectName(QStringLiteral("calibrateSaved"));
  m_saved->setWordWrap(true);
  m_saved->setTextInteractionFlags(Qt::TextSelectableByMouse);
  termsLayout->addWidget(m_termsTable, 1);
  termsLayout->addWidget(m_exposure);
  termsLayout->addWidget(m_saved);
  auto* figures = new QHBoxLayout;
  figures->addWidget(accuracy, 0);
  figures->addWidget(terms, 1);

  // Each run: measured, predicted before and after.
  m_resultTable = makeTable(this, "calibrateResult", m_resultModel, CalibrationResultModel::WhatColumn);

  m_message = new QLabel(this);
  m_message->setObjectName(QStringLiteral("calibrateMessage"));
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_message->hide();
  m_change = new QLabel(this);
  m_change->setObjectName(QStringLiteral("calibrateChange"));
  m_change->setWordWrap(true);
  m_change->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_change->hide();

  m_replan = new QPushButton(tr("&Re-plan with Calibrated Model"), this);
  m_replan->setObjectName(QStringLiteral("calibrateReplan"));
  m_replan->setToolTip(tr("Give the cluster the new profile version (profile: NAME@N), plan the open model again, "
                          "and compare the new plan with the one shown now"));
  auto* close = new QPushButton(tr("Close"), this);
  close->setAutoDefault(false);
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  buttons->addWidget(m_replan);
  buttons->addWidget(close);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(choose);
  layout->addWidget(boldLabel(tr("Runs to calibrate on"), this));
  layout->addWidget(m_runsTable, 2);
  layout->addLayout(fitRow);
  layout->addLayout(figures, 0);
  layout->addWidget(boldLabel(tr("Each run: step time measured, predicted before and after"), this));
  layout->addWidget(m_resultTable, 3);
  layout->addWidget(m_message);
  layout->addWidget(m_change);
  layout->addLayout(buttons);
  resize(1040, 760);

  connect(m_fit, &QPushButton::clicked, this, [this] { fit(); });
  connect(close, &QPushButton::clicked, this, &QDialog::close);
  connect(m_replan, &QPushButton::clicked, this, [this] {
    if (!m_result || m_result->saved.empty()) return;
    showChange(tr("Re-planning under %1…").arg(QString::fromStdString(m_result->saved)));
    Q_EMIT replanRequested(QString::fromStdString(m_result->saved), m_storePath);
  });
  connect(m_profile, &QComboBox::textActivated, this, [this](const QString& name) {
    m_runs->checkBase(name);
    updateRunsHint();
  });
  connect(m_runs, &QAbstractItemModel::dataChanged, this, [this] {
    updateRunsHint();
    updateButtons();
  });
  connect(m_job, &CalibrateJob::candidatesLoaded, this, &CalibrateDialog::onCandidates);
  connect(m_job, &CalibrateJob::candidatesFailed, this, [this](const QString& message) {
    m_runs->setCandidates({});
    showMessage(message, true);
    updateRunsHint();
    updateButtons();
    Q_EMIT candidatesLoaded();
  });
  connect(m_job, &CalibrateJob::finished, this, &CalibrateDialog::onFinished);
  connect(m_job, &CalibrateJob::failed, this, &CalibrateDialog::onFailed);
  connect(m_job, &CalibrateJob::busyChanged, this, [this](bool busy) {
    m_busy->setText(busy ? tr("Working…") : QString());
    updateButtons();
  });
  showResult();
  updateButtons();
}

CalibrateDialog::~CalibrateDialog() = default;

void CalibrateDialog::setStorePath(const QString& path) {
  if (path != m_storePath) {  // the same store again keeps the last fit on show
    m_result.reset();
    showResult();
    showMessage({}, false);
    showChange({});
  }
  m_storePath = path;
  m_store->setText(path);
  m_runs->setCandidates({});
  m_runsHint->setText(tr("Reading the store…"));
  // The profiles to name the fit after: quick, on this thread (StoreReader never throws).
  const QString current = m_profile->currentText();
  m_profile->clear();
  StoreReader reader(path);
  std::set<QString> names;
  for (const db::ProfileInfo& p : reader.profiles()) names.insert(QString::fromStdString(p.name));
  for (const QString& n : names) m_profile->addItem(n);
  m_profile->setCurrentIndex(-1);
  m_profile->setEditText(current);
  if (!m_job->loadCandidates(path)) {
    // A fit still runs: read again once it ends.
    connect(m_job, &CalibrateJob::busyChanged, this, [this, path](bool busy) {
      if (!busy && m_storePath == path) m_job->loadCandidates(path);
    }, Qt::SingleShotConnection);
  }
  updateButtons();
}

void CalibrateDialog::onCandidates(const std::vector<db::CalibrationCandidate>& runs) {
  m_runs->setCandidates(runs);
  // Name the fit after the profile the newest usable run was planned under, and check its runs.
  if (m_profile->currentText().isEmpty())
    for (auto it = runs.rbegin(); it != runs.rend(); ++it)
      if (it->usable() && !it->base.empty()) {
        m_profile->setEditText(nameOf(it->base));
        break;
      }
  bool anyBase = false;
  for (const db::CalibrationCandidate& c : runs) anyBase = anyBase || (c.usable() && !c.base.empty());
  if (anyBase) m_runs->checkBase(m_profile->currentText());
  m_runsTable->resizeColumnsToContents();
  if (runs.empty()) showMessage(tr("%1 holds no recorded runs: record some with Run ▸ Launch or `hap launch --local ... "
                                   "--db %1`").arg(m_storePath), true);
  updateRunsHint();
  updateButtons();
  Q_EMIT candidatesLoaded();
}

db::CalibrationRequest CalibrateDialog::request() const {
  db::CalibrationRequest r;
  r.storePath = m_storePath.toStdString();
  r.name = m_profile->currentText().trimmed().toStdString();
  r.runs = m_runs->checkedRuns();
  r.split = static_cast<db::CalibrationRequest::Split>(m_split->currentData().toInt());
  r.dryRun = !m_save->isChecked();
  r.origin = "hap-studio calibrate";
  return r;
}

bool CalibrateDialog::fit() {
  if (m_job->busy() || m_runs->checkedRuns().empty()) return false;
  showMessage({}, false);
  showChange({});
  return m_job->start(request());
}

void CalibrateDialog::onFinished(std::shared_ptr<const db::CalibrationResult> result) {
  m_result = std::move(result);
  showResult();
  QStringList left;
  for (const db::SkippedRun& s : m_result->skipped)
    left << tr("run %1 (%2)").arg(s.run).arg(QString::fromStdString(s.why));
  showMessage(left.isEmpty() ? QString() : tr("Left out: %1.").arg(left.join(QStringLiteral(", "))), false);
  updateButtons();
  Q_EMIT fitFinished(true);
}

void CalibrateDialog::onFailed(const QString& message) {
  m_result.reset();
  showResult();
  QStringList left;
  for (const db::SkippedRun& s : m_job->lastSkipped())
    left << tr("run %1 (%2)").arg(s.run).arg(QString::fromStdString(s.why));
  showMessage(left.isEmpty() ? message : tr("%1\nLeft out: %2.").arg(message, left.join(QStringLiteral(", "))), true);
  updateButtons();
  Q_EMIT fitFinished(false);
}

void CalibrateDialog::showResult() {
  m_resultModel->setResult(m_result);
  m_terms->setResult(m_result);
  for (int set = 0; set < 2; ++set) {
    const db::AccuracyChange* a = !m_result ? nullptr : set == 0 ? &m_result->fit : &m_result->heldOut;
    const bool has = a && a->after.runs > 0;
    m_accuracyHeader[set]->setText((set == 0 ? tr("Fit runs") : tr("Held-out runs")) +
                                   (a ? tr(" (%1)").arg(a->after.runs) : QString()));
    const QString none = QStringLiteral("—");
    m_accuracy[set][StepMapeRow]->setText(
        has ? calibrationChange(a->before.stepMape, a->after.stepMape, calibrationPercent) : none);
    m_accuracy[set][StepPearsonRow]->setText(  // a correlation needs two runs
        has && a->after.runs >= 2 ? calibrationChange(a->before.stepPearson, a->after.stepPearson, calibrationPearson)
                                  : none);
    m_accuracy[set][MemoryMapeRow]->setText(
        has ? calibrationChange(a->before.memoryMape, a->after.memoryMape, calibrationPercent) : none);
    m_accuracy[set][RankingRow]->setText(has ? calibrationRanking(a->before, a->after) : none);
    // Better after: green; worse: red (the MAPE rows).
    for (AccuracyRow row : {StepMapeRow, MemoryMapeRow}) {
      const double before = !has ? 0 : row == StepMapeRow ? a->before.stepMape : a->before.memoryMape;
      const double after = !has ? 0 : row == StepMapeRow ? a->after.stepMape : a->after.memoryMape;
      m_accuracy[set][row]->setStyleSheet(!has || std::abs(after - before) < 5e-4 ? QString()
                                          : after < before ? QStringLiteral("color: #1b7f3a; font-weight: bold;")
                                                           : QStringLiteral("color: #b3261e; font-weight: bold;"));
    }
  }
  if (m_result) {
    m_exposure->setText(tr("Gradient all-reduces: %1% of their time exposed (the rest behind backward)")
                            .arg(m_result->calibration.gradientExposure * 100, 0, 'f', 0));
    const QString base = m_result->base.empty() ? tr("the inventory alone") : QString::fromStdString(m_result->base);
    const QString holds = savedTermsText(*m_result).toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"));
    m_saved->setText(m_result->saved.empty()
                         ? tr("Not saved (save was unchecked). Base: %1. It would hold:<br>%2").arg(base, holds)
                         : tr("Saved as <b>%1</b> (base %2): plan with <code>profile: %1</code>. It holds:<br>%3")
                               .arg(QString::fromStdString(m_result->saved), base, holds));
  } else {
    m_exposure->clear();
    m_saved->setText(tr("Fit to see the calibrated terms."));
  }
  m_termsTable->resizeColumnsToContents();
  m_resultTable->resizeColumnsToContents();
}

void CalibrateDialog::showMessage(const QString& text, bool error) {
  m_message->setText(text);
  m_message->setStyleSheet(error ? QStringLiteral("color: #b3261e;") : QStringLiteral("color: #8a5a00;"));
  m_message->setVisible(!text.isEmpty());
}

void CalibrateDialog::showChange(const QString& text, bool error) {
  m_change->setText(text);
  m_change->setStyleSheet(error ? QStringLiteral("color: #b3261e;") : QStringLiteral("font-weight: bold;"));
  m_change->setVisible(!text.isEmpty());
}

void CalibrateDialog::updateRunsHint() {
  const int checked = static_cast<int>(m_runs->checkedRuns().size());
  const int total = m_runs->rowCount();
  m_runsHint->setText(total == 0 ? tr("No recorded runs.")
                                 : tr("%1 of %2 runs checked (%3 usable: succeeded, with measured steps).")
                                       .arg(checked)
                                       .arg(total)
                                       .arg(m_runs->usableCount()));
}

void CalibrateDialog::updateButtons() {
  const bool busy = m_job->busy();
  m_fit->setEnabled(!busy && !m_runs->checkedRuns().empty());
  m_replan->setEnabled(!busy && m_result && !m_result->saved.empty());
}

}  // namespace hap::studio
