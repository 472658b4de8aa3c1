#include "app/studio/widgets/measured_view.h"

#include <QBoxLayout>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QToolButton>

#include <algorithm>

#include "app/studio/core/models/profile_store_models.h"
#include "app/studio/core/display/units.h"

namespace hap::studio {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QLabel* makeLabel(QWidget* parent, const char* name, bool rich) {
  auto* l = new QLabel(parent);
  l->setObjectName(QLatin1String(name));
  l->setWordWrap(true);
  l->setTextFormat(rich ? Qt::RichText : Qt::PlainText);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return l;
}

QString statusColour(db::RunStatus s) {
  switch (s) {
    case db::RunStatus::Succeeded: return QStringLiteral("#2e7d32");
    case db::RunStatus::Failed: return QStringLiteral("#b01c1c");
    case db::RunStatus::Running: return QStringLiteral("#2b6cb0");
    case db::RunStatus::Stopped:
    case db::RunStatus::Aborted: return QStringLiteral("#6b7280");
  }
  return QStringLiteral("#1f2329");
}

// "2 s", "3 min 4 s" between two of the store's UTC times; "" when either is missing.
QString elapsed(const std::string& from, const std::string& to) {
  const QDateTime a = QDateTime::fromString(qs(from), Qt::ISODate), b = QDateTime::fromString(qs(to), Qt::ISODate);
  if (!a.isValid() || !b.isValid()) return {};
  const qint64 s = std::max<qint64>(0, a.secsTo(b));
  if (s < 60) return QObject::tr("%1 s").arg(s);
  if (s < 3600) return QObject::tr("%1 min %2 s").arg(s / 60).arg(s % 60);
  return QObject::tr("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

}  // namespace

MeasuredView::MeasuredView(QWidget* parent) : QWidget(parent) {
  m_model = new MeasuredComparisonModel(this);

  auto* runLabel = new QLabel(tr("Run:"), this);
  m_combo = new QComboBox(this);
  m_combo->setObjectName(QStringLiteral("measuredRuns"));
  m_combo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  m_combo->setMinimumContentsLength(28);
  m_refresh = new QToolButton(this);
  m_refresh->setObjectName(QStringLiteral("measuredRefresh"));
  m_refresh->setText(tr("Refresh"));
  m_refresh->setToolTip(tr("Read the store's runs and the shown run again"));
  auto* top = new QHBoxLayout;
  top->addWidget(runLabel);
  top->addWidget(m_combo);
  top->addWidget(m_refresh);
  top->addStretch(1);

  m_header = makeLabel(this, "measuredHeader", true);
  m_planLine = makeLabel(this, "measuredPlan", true);
  m_openPlan = new QPushButton(tr("Open the Run's Plan"), this);
  m_openPlan->setObjectName(QStringLiteral("openRunPlan"));
  m_openPlan->setToolTip(tr("Open the plan stored with this run (and its model), to see the measured trace in the "
                            "Stages view"));
  m_openPlan->hide();
  auto* planRow = new QHBoxLayout;
  planRow->addWidget(m_planLine, 1);
  planRow->addWidget(m_openPlan, 0, Qt::AlignTop);
  m_message = makeLabel(this, "measuredMessage", false);
  m_message->setStyleSheet(QStringLiteral("color: #b01c1c;"));
  m_message->hide();

  m_table = new QTableView(this);
  m_table->setObjectName(QStringLiteral("measuredTable"));
  m_table->setModel(m_model);
  m_table->setAlternatingRowColors(true);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setWordWrap(false);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 8);
  m_table->horizontalHeader()->setStretchLastSection(false);
  m_table->horizontalHeader()->setHighlightSections(false);

  m_legend = makeLabel(this, "measuredLegend", false);
  m_legend->setStyleSheet(QStringLiteral("color: gray;"));
  m_legend->setText(tr("Ratio: measured ÷ predicted per step; red above %1× (slower than predicted), blue below "
                       "%2× (faster). Measured figures are means over the steps after warm-up; measured communication "
                       "includes waiting for slower ranks.")
                        .arg(MeasuredComparisonModel::kSlowRatio)
                        .arg(MeasuredComparisonModel::kFastRatio));

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->setSpacing(4);
  layout->addLayout(top);
  layout->addWidget(m_header);
  layout->addLayout(planRow);
  layout->addWidget(m_message);
  layout->addWidget(m_table, 1);
  layout->addWidget(m_legend);

  connect(m_combo, qOverload<int>(&QComboBox::activated), this, [this](int index) {
    const qint64 id = m_combo->itemData(index).toLongLong();
    if (id > 0) showRun(m_storePath, id);
  });
  connect(m_refresh, &QToolButton::clicked, this, &MeasuredView::reload);
  connect(m_openPlan, &QPushButton::clicked, this, &MeasuredView::openRunPlan);

  updateHeader();
  updatePlanMatch();
}

QString MeasuredView::traceName() const { return tr("Measured run %1").arg(m_run.runId); }

void MeasuredView::setStorePath(const QString& path) {
  m_storePath = path;
  requestChooser();
}

void MeasuredView::setPlan(std::shared_ptr<const PlanDocument> plan) {
  m_plan = std::move(plan);
  m_identity.reset();
  requestChooser();
  updatePlanMatch();
}

const PlanIdentity& MeasuredView::identity() {
  if (!m_identity) m_identity = m_plan ? planIdentity(*m_plan) : PlanIdentity{};
  return *m_identity;
}

void MeasuredView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  ensureChooser();
}

void MeasuredView::ensureChooser() {
  if (m_chooserStale) fillChooser();
}

void MeasuredView::requestChooser() {
  // (A dock behind another tab is visible to Qt, without a visible region.)
  if (isVisible() && !visibleRegion().isEmpty())
    fillChooser();
  else
    m_chooserStale = true;
}

void MeasuredView::reload() {
  if (m_run.runId > 0)
    showRun(m_run.storePath, m_run.runId);
  else
    fillChooser();
}

void MeasuredView::showRun(const QString& storePath, qint64 runId) {
  m_storePath = storePath;
  m_run = loadMeasuredRun(storePath, runId);
  m_model->setRun(m_run);
  m_table->resizeColumnsToContents();
  for (int c = 0; c < m_model->columnCount(); ++c) m_table->setColumnWidth(c, m_table->columnWidth(c) + 10);
  fillChooser();
  updateHeader();
  updatePlanMatch();
  Q_EMIT runShown();
}

void MeasuredView::chooseRun() {
  fillChooser();
  if (!(m_run.ok() && m_showsRunPlan)) {
    int64_t pick = 0;  // the newest run of the shown plan, else (nothing shown yet) the newest
    for (const RunChoice& c : m_choices)
      if (identity().matches(c.planSha256)) {
        pick = c.id;
        break;
      }
    if (pick == 0 && m_run.runId == 0 && !m_choices.empty()) pick = m_choices.front().id;
    if (pick > 0) showRun(m_storePath, pick);
  }
  if (m_choices.empty()) {
    m_message->setText(m_plan ? tr("No run of this plan's model in %1: launch the plan with `hap launch --local --db %1`, "
                                   "or show another store in the Profiles dock")
                                    .arg(m_storePath)
                              : tr("No run in %1: launch a plan with `hap launch --local --db %1`, or show another "
                                   "store in the Profiles dock")
                                    .arg(m_storePath));
    m_message->setStyleSheet(QStringLiteral("color: gray;"));
    m_message->show();
  }
  m_combo->setFocus();
}

void MeasuredView::fillChooser() {
  m_chooserStale = false;
  QString error;
  m_choices = listRuns(m_storePath, m_plan ? m_plan->p().modelSha256 : std::string(), &error);
  // The shown run stays listed, whatever its model.
  if (m_run.run && m_run.storePath == m_storePath &&
      std::none_of(m_choices.begin(), m_choices.end(), [&](const RunChoice& c) { return c.id == m_run.runId; })) {
    RunChoice c;
    c.id = m_run.runId;
    c.text = tr("Run %1 · %2 · %3")
                 .arg(m_run.runId)
                 .arg(qs(std::string(db::runStatusName(m_run.run->status))), formatStoreTime(m_run.run->startedAt));
    if (m_run.planRecord) c.planSha256 = m_run.planRecord->sha256, c.modelSha256 = m_run.planRecord->modelSha256;
    m_choices.insert(m_choices.begin(), c);
  }
  const QSignalBlocker block(m_combo);
  m_combo->clear();
  int current = -1;
  for (const RunChoice& c : m_choices) {
    if (c.id == m_run.runId && m_run.storePath == m_storePath) current = m_combo->count();
    m_combo->addItem(c.text, QVariant::fromValue<qlonglong>(c.id));
  }
  m_combo->setPlaceholderText(m_choices.empty() ? (m_plan ? tr("No run of this model in the store") : tr("No run in the store"))
                                                : tr("Choose a run…"));
  m_combo->setCurrentIndex(current);
  m_combo->setEnabled(!m_choices.empty());
  m_combo->setToolTip(error.isEmpty() ? tr("Runs recorded in %1%2, newest first")
                                            .arg(m_storePath, m_plan ? tr(" of the shown plan's model") : QString())
                                      : error);
}

void MeasuredView::updateHeader() {
  QStringList problems;
  if (m_run.runId == 0) {
    m_header->setText(tr("No run shown: choose one above, or open one from the Profiles dock (Runs ▸ Show in Measured)."));
  } else if (!m_run.run) {
    m_header->setText(tr("<b>Run %1</b>").arg(m_run.runId));
  } else {
    const db::RunRecord& r = *m_run.run;
    QStringList parts;
    parts << tr("<b>Run %1</b>").arg(r.id);
    parts << QStringLiteral("<span style='color:%1'>%2</span>")
                 .arg(statusColour(r.status), qs(std::string(db::runStatusName(r.status))));
    if (!r.label.empty()) parts << QStringLiteral("“%1”").arg(qs(r.label).toHtmlEscaped());
    parts << (r.ranks == 1 ? tr("1 rank") : tr("%1 ranks").arg(r.ranks));
    const int64_t steps = m_run.stepCount(), warm = m_run.warmupCount();
    parts << (warm > 0 ? tr("%1 steps (%2 warm-up)").arg(steps).arg(warm) : tr("%1 steps").arg(steps));
    const QString took = elapsed(r.startedAt, r.endedAt);
    parts << tr("started %1 UTC").arg(formatStoreTime(r.startedAt)) + (took.isEmpty() ? QString() : tr(", took %1").arg(took));
    m_header->setText(parts.join(QStringLiteral(" · ")));
    m_header->setToolTip(tr("Store: %1").arg(m_run.storePath));
    if (!r.exitReason.empty()) problems << tr("Ended: %1").arg(qs(r.exitReason));
  }
  if (!m_run.error.isEmpty()) problems << m_run.error;
  if (m_run.ok()) {
    if (!m_run.measured.ok())
      problems << tr("No measured trace for the Stages view: %1").arg(qs(m_run.measured.error));
    for (int rank : m_run.measured.ranksWithoutStages)
      problems << tr("Rank %1 recorded no stage times (an empty row in the Stages view)").arg(rank);
    if (m_run.measured.missingRecords > 0)
      problems << tr("%1 stage records are missing (counted as zero)").arg(m_run.measured.missingRecords);
  }
  m_message->setStyleSheet(QStringLiteral("color: #b01c1c;"));
  m_message->setText(problems.join(QLatin1Char('\n')));
  m_message->setVisible(!problems.isEmpty());
}

void MeasuredView::updatePlanMatch() {
  const bool offered = m_traceOffered;
  m_showsRunPlan = m_plan && m_run.planRecord && identity().matches(m_run.planRecord->sha256);
  m_trace.reset();
  if (m_showsRunPlan) m_trace = studio::measuredTrace(*m_plan, m_run);

  if (!m_run.ok()) {
    m_planLine->hide();
    m_openPlan->hide();
  } else {
    const db::PlanRecord& rec = *m_run.planRecord;
    const QString model = QFileInfo(qs(rec.modelPath)).fileName();
    const QString plan = tr("%1 · %2 · %3 predicted per step")
                             .arg(model.isEmpty() ? tr("model") : model.toHtmlEscaped(), qs(rec.strategy).toHtmlEscaped(),
                                  formatMilliseconds(m_run.plan->estimate.iterationSeconds));
    QString text;
    if (m_showsRunPlan) {
      text = tr("Plan: %1, the plan shown.").arg(plan);
      if (m_trace)
        text += QStringLiteral(" ") + tr("Stages view: the measured trace below the prediction (%1 per iteration over %2 "
                                         "stages, communication per stage the least any rank measured).")
                                          .arg(formatMilliseconds(m_trace->totalSeconds))
                                          .arg(m_trace->stages.size());
    } else if (m_plan) {
      const bool otherModel = m_plan->p().modelSha256 != rec.modelSha256;
      text = QStringLiteral("<span style='color:#b25e00'>") +
             tr("This run ran another plan than the one shown%1: %2.").arg(otherModel ? tr(", of another model") : QString(), plan) +
             QStringLiteral("</span> ") +
             tr("The table compares the run with its own plan; open it to see the measured trace in the Stages view.");
    } else {
      text = tr("Plan: %1 (not open). Open it to see the measured trace in the Stages view.").arg(plan);
    }
    m_planLine->setText(text);
    m_planLine->show();
    m_openPlan->setVisible(!m_showsRunPlan);
  }

  if (m_trace) {
    m_traceOffered = true;
    Q_EMIT traceReady(traceName(), *m_trace);
  } else if (offered) {
    m_traceOffered = false;
    Q_EMIT traceCleared();
  }
}

void MeasuredView::openRunPlan() {
  if (!m_run.ok()) return;
  const QString dir = QDir::temp().filePath(QStringLiteral("hap-studio-runs"));
  const QString path = QDir(dir).filePath(
      QStringLiteral("%1-run-%2-plan.json").arg(QFileInfo(m_run.storePath).completeBaseName()).arg(m_run.runId));
  QFile f(path);
  if (!QDir().mkpath(dir) || !f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
      f.write(QByteArray::fromStdString(m_run.planRecord->json)) != static_cast<qint64>(m_run.planRecord->json.size())) {
    m_message->setStyleSheet(QStringLiteral("color: #b01c1c;"));
    m_message->setText(tr("%1: cannot write the run's plan there (%2); check the temporary folder").arg(path, f.errorString()));
    m_message->show();
    return;
  }
  f.close();
  const QString model = qs(m_run.planRecord->modelPath);
  Q_EMIT openPlanRequested(path, QFileInfo::exists(model) ? model : QString());
}

}  // namespace hap::studio
