#include "app/studio/widgets/launch_view.h"

#include <QAction>
#include <QBoxLayout>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFrame>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStyle>
#include <QTemporaryDir>
#include <QToolButton>

#include <algorithm>

#include "app/studio/core/documents/launch_requests.h"

namespace hap::studio {
namespace {

// "1 rank", "3 ranks".
QString ranksText(int n) { return n == 1 ? QObject::tr("1 rank") : QObject::tr("%1 ranks").arg(n); }

using Tone = RunMonitorView::Tone;

}  // namespace

LaunchView::LaunchView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("launchView"));
  m_job = new LaunchJob(this);
  m_monitor = new RunMonitor(this);
  m_preflightJob = new PreflightJob(this);
  m_checkpoints = new CheckpointsModel(this);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->setObjectName(QStringLiteral("launchSplit"));
  split->addWidget(makeLeftPanel());
  m_monitorView = new RunMonitorView(m_monitor, this);
  m_logs = new RunLogs(m_monitorView);
  m_checkpointsPanel = new CheckpointsPanel(m_checkpoints, this);
  m_logs->setLastPage(m_checkpointsPanel, m_checkpointsPanel->title());
  m_monitorView->addBeside(m_logs);
  split->addWidget(m_monitorView);
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
  connect(m_preflight, &PreflightList::checkRequested, this, [this] { check(); });
  connect(m_checkpointsPanel, &CheckpointsPanel::titleChanged, m_logs, &RunLogs::setLastPageTitle);
  connect(m_checkpointsPanel, &CheckpointsPanel::resumeRequested, this, [this](int row) { resumeFrom(row); });
  connect(m_checkpointsPanel, &CheckpointsPanel::exportRequested, this, &LaunchView::exportModelDialog);
  restoreSettings();
  setPlan(nullptr, {});
  resetMonitor(0);
}

LaunchView::~LaunchView() {
  saveSettings();
  // A start waiting for its preflight launches nothing; its run folder goes.
  m_preflightJob->disconnect(this);
  m_preflightJob->wait();
  if (m_pending && m_pending->kind == PendingLaunch::Kind::Start) discardRunFolder(m_pending->folder);
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

// Left: the form, the preflight list under a rule, then Start, Stop and Write Launch Scripts.
QWidget* LaunchView::makeLeftPanel() {
  auto* panel = new QWidget(this);
  panel->setObjectName(QStringLiteral("launchForm"));
  auto* column = new QVBoxLayout(panel);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(4);

  m_form = new LaunchForm(panel);
  column->addWidget(m_form, 1);

  // The preflight check list (issue 20, item 1): above Start, separated; one line when all is well.
  m_preflight = new PreflightList(panel);
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
  const std::pair<runtime::ScriptKind, QString> kinds[] = {{runtime::ScriptKind::Torchrun, tr("torchrun (one script per machine)…")},
                                                      {runtime::ScriptKind::Slurm, tr("Slurm (sbatch)…")},
                                                      {runtime::ScriptKind::Ssh, tr("ssh (one script starting every machine)…")}};
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

  // Wide enough for the form, so that the scroll area never shifts it sideways (its horizontal
  // scroll bar is off: focusing a field would scroll the labels out of sight).
  const int formWidth = m_form->fittingWidth();
  panel->setMinimumWidth(std::max(340, formWidth));
  panel->setMaximumWidth(std::max(460, formWidth));
  return panel;
}

void LaunchView::setPlan(std::shared_ptr<const PlanDocument> plan, const QString& modelPath) {
  m_plan = std::move(plan);
  m_modelPath = modelPath;
  m_form->setDevices(launchDevices(m_plan.get()), emulatedShares(m_plan.get()));
  updateButtons();
  updateCheckpointButtons();
}

LaunchSettings LaunchView::settings() const { return m_form->settings(); }

void LaunchView::setSettings(const LaunchSettings& s) { m_form->setSettings(s); }

void LaunchView::updateButtons() {
  const bool busy = this->busy();
  m_start->setEnabled(m_plan != nullptr && !busy);
  m_preflight->setCanCheck(m_plan != nullptr && !busy && !m_pending, m_plan != nullptr);
  m_start->setToolTip(!m_plan ? tr("Needs a plan: open a model and a cluster and plan (Plan ▸ Plan), or open a plan file")
                      : busy  ? tr("A run is going: stop it first")
                              : tr("Run the plan on this machine, one rank per device (Ctrl+F5)"));
  m_stop->setEnabled(busy && !m_job->stopping() && !(m_pending && m_pending->cancelled));
  m_scripts->setEnabled(m_plan != nullptr);
  m_scripts->setToolTip(m_plan ? tr("Write the scripts that run this plan on a real cluster, with these worker options")
                               : tr("Needs a plan"));
}

void LaunchView::updateCheckpointButtons() { m_checkpointsPanel->setState(busy(), m_plan != nullptr); }

void LaunchView::showError(const QString& message) { m_monitorView->showError(message); }

void LaunchView::hideError() { m_monitorView->hideError(); }

LaunchSettings LaunchView::launchSettings() const {
  LaunchSettings s = settings();
  s.worker.modelPath = launchModelPath(m_plan.get(), m_modelPath).toStdString();
  return s;
}

bool LaunchView::start() {
  if (busy()) return false;
  if (!m_plan) {
    showError(tr("There is no plan to run: open a model and a cluster and plan first (Plan ▸ Plan)"));
    return false;
  }
  m_preflightJob->wait();  // a Check going: its list is shown, then replaced by Start's
  saveSettings();
  QString error;
  std::optional<PreparedLaunch> prepared = prepareStart(*m_plan, launchSettings(), storePath(), &error);
  if (!prepared) {
    showError(error);
    return false;
  }
  PendingLaunch p;
  static_cast<PreparedLaunch&>(p) = std::move(*prepared);
  p.kind = PendingLaunch::Kind::Start;
  m_monitorView->setStatus(tr("Checking before the start…"), Tone::Plain);
  runPreflight(std::move(p));
  return true;
}

QString LaunchView::scratchPlanPath() {
  m_scratch = std::make_unique<QTemporaryDir>();
  if (!m_scratch->isValid()) {
    showError(tr("Cannot make a temporary folder for the plan file: %1").arg(m_scratch->errorString()));
    return {};
  }
  return m_scratch->filePath(QStringLiteral("plan.json"));
}

QString LaunchView::storePath() const { return m_storePath ? m_storePath() : QString(); }

bool LaunchView::check() {
  if (busy() || !m_plan || (m_pending && m_pending->kind == PendingLaunch::Kind::Check)) return false;
  const QString planPath = scratchPlanPath();
  if (planPath.isEmpty()) return false;
  QString error;
  std::optional<PreparedLaunch> prepared = prepareCheck(*m_plan, launchSettings(), planPath, &error);
  if (!prepared) {
    showError(error);
    return false;
  }
  PendingLaunch p;
  static_cast<PreparedLaunch&>(p) = std::move(*prepared);
  p.kind = PendingLaunch::Kind::Check;
  runPreflight(std::move(p));
  return true;
}

void LaunchView::runPreflight(PendingLaunch pending) {
  hideError();
  runtime::PreflightRequest request = pending.preflight;
  m_pending = std::move(pending);
  if (!m_preflightJob->start(std::move(request))) {  // cannot happen: every caller waits for the last one
    m_pending.reset();
    return;
  }
  m_preflight->showChecking();
  syncBusy();
}

void LaunchView::onPreflightFinished(bool passed) {
  if (!m_pending) return;
  const std::vector<runtime::PreflightCheck>& checks = m_preflightJob->checks();
  // The list opens on a failure or a warning; when all is well it is one line.
  bool notOk = false;
  for (const runtime::PreflightCheck& c : checks) notOk = notOk || c.status != runtime::PreflightCheck::Status::Ok;
  m_preflight->showChecks(checks, notOk);
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
  if (p.kind == PendingLaunch::Kind::Start) discardRunFolder(p.folder);  // only when nothing else is in it
  m_scratch.reset();
  if (passed) {  // cancelled
    m_monitorView->setStatus(isExport ? tr("Export cancelled") : tr("Start cancelled: nothing was launched"), Tone::Muted);
  } else {
    m_outcome = (isExport ? tr("Not exported: %1") : tr("Not started: %1")).arg(preflightFailures(checks));
    showError(m_outcome);
    m_monitorView->setStatus(isExport ? tr("Not exported: a check failed") : tr("Not started: a check failed"), Tone::Failed);
    if (isExport) m_checkpointsPanel->setResult(m_outcome);
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
    m_monitorView->setStatus(tr("Exporting %1…").arg(QFileInfo(p.checkpoint).fileName()), Tone::Going);
    m_checkpointsPanel->setResult(
        tr("Exporting %1 to %2…").arg(QFileInfo(p.checkpoint).fileName(), QDir::toNativeSeparators(p.exportPath)));
    m_checkpointsPanel->setResultTone(CheckpointsPanel::Tone::Plain);
  } else {
    m_runFolder = p.folder;
    m_globalBatch = globalBatchSize(*p.plan);
    m_monitor->clear();
    resetMonitor(p.ranks);
    m_monitorView->setStatus(tr("Starting %1…").arg(ranksText(p.ranks)));
    m_monitorView->setNote(tr("Folder: %1").arg(QFileInfo(p.folder).fileName()),
                           tr("The run's folder, with its plan.json and checkpoints:\n%1").arg(QDir::toNativeSeparators(p.folder)));
    m_checkpointsPanel->setResult(QString());
    m_checkpointsPanel->list(p.checkpointDir);
  }
  if (!m_job->start(p.plan, p.request)) {  // cannot happen: busy() was false
    m_exporting = false;
    syncBusy();
  }
}

void LaunchView::stop() {
  if (m_pending && m_pending->kind != PendingLaunch::Kind::Check) {
    m_pending->cancelled = true;  // the preflight ends in a moment; nothing is launched
    m_monitorView->setStatus(tr("Cancelling the start…"));
    updateButtons();
    return;
  }
  if (!m_job->busy()) return;
  m_job->stop();
  m_monitorView->setStatus(m_exporting ? tr("Stopping the export…") : tr("Stopping every rank…"));
  updateButtons();
}

void LaunchView::stopAndWait() {
  if (m_pending) m_pending->cancelled = true;
  m_preflightJob->wait();
  m_job->stopAndWait();
}

void LaunchView::resetMonitor(int ranks) {
  m_ranks = ranks;
  m_monitorView->setStatus(m_plan ? tr("Ready to run %1").arg(ranksText(ranks)) : tr("No run yet"), Tone::Plain);
  m_monitorView->reset(ranks);
  m_logs->reset(ranks);
  updateCheckpointButtons();
}

void LaunchView::onStarted(qint64 run, int port, int ranks, const QString& commandLine) {
  if (m_exporting) {
    // The shown run's charts stay; the export's lines follow in the logs.
    m_logs->appendAll(QStringLiteral("$ ") + commandLine);
    m_logs->appendAll(tr("Export run %1 recorded in %2; %4, rendezvous on 127.0.0.1:%3")
                          .arg(run)
                          .arg(m_dbPath)
                          .arg(port)
                          .arg(ranksText(ranks)));
    return;
  }
  if (ranks != m_ranks) resetMonitor(ranks);
  m_monitorView->setStatus(tr("<b>Run %1</b> · running · %2 on 127.0.0.1:%3").arg(run).arg(ranksText(ranks)).arg(port),
                           Tone::Going);
  m_monitorView->showStarting();
  m_logs->appendAll(QStringLiteral("$ ") + commandLine);
  m_logs->appendAll(tr("Run %1 recorded in %2; %4, rendezvous on 127.0.0.1:%3")
                        .arg(run)
                        .arg(m_dbPath)
                        .arg(port)
                        .arg(ranksText(ranks)));
  if (run != 0) m_monitor->follow(m_dbPath, run, m_globalBatch);
  Q_EMIT runStarted(run);
}

void LaunchView::onLines(const LaunchLines& lines) {
  m_logs->append(lines);
  if (m_exporting) return;
  for (const LaunchLine& l : lines)  // one header each, not a listing
    if (l.rank == 0 && !l.stderrLine && l.text.startsWith(QLatin1String("checkpoint: ")))
      m_checkpoints->update(l.text.mid(12).trimmed());
}

void LaunchView::onFinished(const LaunchOutcome& o) {
  if (m_exporting) {
    m_exporting = false;
    m_scratch.reset();
    const QFileInfo written(m_exportPath);
    const bool ok = o.succeeded() && written.isFile() && written.size() > 0;
    m_logs->appendAll(o.message);
    if (ok) {
      m_outcome = tr("Model written to %1 (%2)").arg(QDir::toNativeSeparators(m_exportPath), formatFileSize(written.size()));
      m_monitorView->setStatus(tr("<b>Exported</b> · %1").arg(QFileInfo(m_exportPath).fileName()), Tone::Succeeded);
      m_checkpointsPanel->setResultTone(CheckpointsPanel::Tone::Succeeded);
    } else {
      m_outcome = o.succeeded() ? tr("The export ended without writing %1").arg(QDir::toNativeSeparators(m_exportPath))
                                : tr("Export failed: %1").arg(o.message);
      m_monitorView->setStatus(tr("Export failed"), Tone::Failed);
      m_checkpointsPanel->setResultTone(CheckpointsPanel::Tone::Failed);
      showError(m_outcome);
    }
    m_checkpointsPanel->setResult(m_outcome, true);
    updateButtons();
    updateCheckpointButtons();
    Q_EMIT exportFinished(ok, m_exportPath);
    return;
  }
  m_monitor->refresh();  // the launcher has finished the run in the store: the last read
  m_monitor->stop();
  m_outcome = o.message;
  m_logs->appendAll(o.message);
  const QString run = o.run != 0 ? tr("<b>Run %1</b> · ").arg(o.run) : QString();
  switch (o.kind) {
    case LaunchOutcome::Kind::Succeeded:
      m_monitorView->setStatus(run + tr("succeeded in %1 s").arg(o.seconds, 0, 'f', 1), Tone::Succeeded);
      break;
    case LaunchOutcome::Kind::RankFailed:
      m_monitorView->setStatus(run + tr("failed: rank %1").arg(o.failedRank), Tone::Failed);
      showError(o.message);
      m_logs->markFailed(o.failedRank, o.message);
      break;
    case LaunchOutcome::Kind::Stopped:
      m_monitorView->setStatus(run + tr("stopped after %1 s").arg(o.seconds, 0, 'f', 1), Tone::Muted);
      break;
    case LaunchOutcome::Kind::TimedOut:
      m_monitorView->setStatus(run + tr("timed out after %1 s").arg(o.seconds, 0, 'f', 1), Tone::Failed);
      showError(o.message);
      break;
    case LaunchOutcome::Kind::Error:
      m_monitorView->setStatus(run + tr("could not run"), Tone::Failed);
      showError(o.message);
      break;
  }
  m_monitorView->showEnded();
  m_checkpointsPanel->list(m_checkpoints->folder());  // all of them again: the run is over
  updateButtons();
  Q_EMIT runFinished(o);
}

// The monitor view draws the figures and charts; the status line is the dock's.
void LaunchView::onMonitorUpdated() {
  const RunMonitor& m = *m_monitor;
  if (!m.error().isEmpty() && m.steps().empty()) return;
  if (!m.running() && m.record() && !m_job->busy()) {
    // A run opened later, or the last read of this one.
    const db::RunRecord& r = *m.record();
    if (m_outcome.isEmpty())
      m_monitorView->setStatus(tr("<b>Run %1</b> · %2").arg(r.id).arg(runStatusText(r.status)));
  }
}

void LaunchView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  m_monitorView->fitPanes();
}

QPlainTextEdit* LaunchView::log(int rank) const { return m_logs->log(rank); }

bool LaunchView::showRecordedRun(const QString& storePath, qint64 run) {
  if (busy()) {
    showError(tr("A run is going: stop it before opening run %1").arg(run));
    return false;
  }
  m_outcome.clear();
  hideError();
  m_monitorView->setNote(QString(), QString());
  QString error;
  const std::optional<RecordedRun> recorded = readRecordedRun(storePath, run, &error);
  if (!recorded) {
    showError(error);
    return false;
  }
  const int ranks = recorded->ranks;
  const QString checkpoints = recorded->checkpointDir;
  if (!recorded->exitReason.isEmpty()) showError(tr("Run %1: %2").arg(run).arg(recorded->exitReason));
  resetMonitor(ranks);
  m_monitorView->clearStatus();
  m_dbPath = storePath;
  m_runFolder.clear();
  m_checkpointsPanel->setResult(QString());
  m_checkpointsPanel->list(checkpoints);
  if (!checkpoints.isEmpty()) {
    const QString note = tr("Checkpoints: %1").arg(QDir::toNativeSeparators(checkpoints));
    m_monitorView->setNote(note, note);
  }
  m_logs->appendAll(tr("Run %1 of %2, opened from the store: its steps are recorded, its workers' output is not.")
                        .arg(run)
                        .arg(storePath));
  m_monitor->follow(storePath, run);
  return true;
}

// ---- Checkpoints ----

QString LaunchView::checkpointFolder() const { return m_checkpoints->folder(); }

bool LaunchView::resumeFrom(int row) {
  const runtime::CheckpointInfo* c = m_checkpoints->info(row);
  if (!c || busy()) return false;
  if (!c->error.empty()) {
    showError(QString::fromStdString(c->error));
    return false;
  }
  // The run that wrote it was going to reach the monitor's last step (or at least its last checkpoint).
  const int64_t last = std::max<int64_t>(m_monitor->lastStep(), m_checkpoints->lastStep());
  const ResumeSteps rs = resumeSteps(c->step, last, m_form->warmupBox()->value(), m_form->stepsBox()->value());
  m_form->setResume(QString::fromStdString(c->path), QString::fromStdString(c->optimizer), rs.warmup, rs.steps);
  m_checkpointsPanel->setResultTone(CheckpointsPanel::Tone::Plain);
  m_checkpointsPanel->setResult(tr("Resume from step-%1.pt: Start continues with step %2 to step %3 (%4).")
                                    .arg(c->step)
                                    .arg(c->step + 1)
                                    .arg(c->step + rs.warmup + rs.steps)
                                    .arg(QString::fromStdString(c->optimizer)),
                                true);
  return true;
}

void LaunchView::exportModelDialog(int row) {
  const QString checkpoint = m_checkpoints->path(row);
  if (checkpoint.isEmpty()) return;
  const QFileInfo ckpt(checkpoint);
  const QString proposal = QDir(ckpt.dir()).filePath(QFileInfo(launchModelPath(m_plan.get(), m_modelPath)).completeBaseName() + QStringLiteral("-") +
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
  const QString planPath = scratchPlanPath();
  if (planPath.isEmpty()) return false;
  QString error;
  std::optional<PreparedLaunch> prepared =
      prepareExport(*m_plan, launchSettings(), planPath, checkpoint, path, storePath(), &error);
  if (!prepared) {
    showError(error);
    return false;
  }
  PendingLaunch p;
  static_cast<PreparedLaunch&>(p) = std::move(*prepared);
  p.kind = PendingLaunch::Kind::Export;
  p.checkpoint = checkpoint;
  p.exportPath = path;
  m_monitorView->setStatus(tr("Checking before the export…"), Tone::Plain);
  m_checkpointsPanel->setResult(tr("Checking before the export…"));
  runPreflight(std::move(p));
  return true;
}

// ---- Settings and launch scripts ----

void LaunchView::saveSettings() const { m_form->saveSettings(); }

void LaunchView::restoreSettings() { m_form->restoreSettings(); }

QString LaunchView::writeLaunchScripts(int kind, const QString& dir, bool force) {
  if (!m_plan) return tr("There is no plan: plan first");
  return studio::writeLaunchScripts(*m_plan, settings(), static_cast<runtime::ScriptKind>(kind), dir, force);
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
  const QString note = tr("Launch scripts written to %1").arg(QDir::toNativeSeparators(dir));
  m_monitorView->setNote(note, note);
}

}  // namespace hap::studio
