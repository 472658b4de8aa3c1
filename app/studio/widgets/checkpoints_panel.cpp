#include "app/studio/widgets/checkpoints_panel.h"

#include <QBoxLayout>
#include <QDesktopServices>
#include <QDir>
#include <QFileInfo>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QStyle>
#include <QTableView>
#include <QUrl>

#include "app/studio/core/models/checkpoints_model.h"

namespace hap::studio {

CheckpointsPanel::CheckpointsPanel(CheckpointsModel* model, QWidget* parent) : QWidget(parent), m_model(model) {
  setObjectName(QStringLiteral("checkpointsPage"));
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(4, 4, 4, 4);
  column->setSpacing(4);
  m_message = new QLabel(this);
  m_message->setObjectName(QStringLiteral("checkpointsMessage"));
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_message->setStyleSheet(QStringLiteral("color: gray;"));
  m_message->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  column->addWidget(m_message);

  m_table = new QTableView(this);
  m_table->setObjectName(QStringLiteral("checkpointsTable"));
  m_table->setModel(m_model);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setAlternatingRowColors(true);
  m_table->setWordWrap(false);
  column->addWidget(m_table, 1);

  m_resume = new QPushButton(tr("Resume From"), this);
  m_resume->setObjectName(QStringLiteral("resumeFrom"));
  m_resume->setToolTip(tr("Put the selected checkpoint in the form (Resume from), with its optimizer and the steps "
                          "that take the run to its last step; Start continues from there"));
  m_export = new QPushButton(tr("Export Model…"), this);
  m_export->setObjectName(QStringLiteral("exportModel"));
  m_export->setToolTip(tr("Write the model of the selected checkpoint as a TorchScript file: the plan's ranks "
                          "load it and export it without a training step"));
  m_openFolder = new QPushButton(style()->standardIcon(QStyle::SP_DirOpenIcon), tr("Open Folder"), this);
  m_openFolder->setObjectName(QStringLiteral("openCheckpointFolder"));
  m_openFolder->setToolTip(tr("Show the checkpoint folder in the file manager"));
  auto* buttons = new QHBoxLayout;
  buttons->setSpacing(4);
  buttons->addWidget(m_resume);
  buttons->addWidget(m_export);
  buttons->addStretch(1);
  buttons->addWidget(m_openFolder);
  column->addLayout(buttons);
  m_result = new QLabel(this);
  m_result->setObjectName(QStringLiteral("checkpointsResult"));
  m_result->setWordWrap(true);
  m_result->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_result->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  column->addWidget(m_result);

  connect(m_model, &CheckpointsModel::listed, this, &CheckpointsPanel::refresh);
  connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &CheckpointsPanel::refresh);
  connect(m_table, &QTableView::doubleClicked, this, [this](const QModelIndex& index) { Q_EMIT resumeRequested(index.row()); });
  connect(m_resume, &QPushButton::clicked, this, [this] { Q_EMIT resumeRequested(currentRow()); });
  connect(m_export, &QPushButton::clicked, this, [this] { Q_EMIT exportRequested(currentRow()); });
  connect(m_openFolder, &QPushButton::clicked, this, [this] {
    if (!m_model->folder().isEmpty()) QDesktopServices::openUrl(QUrl::fromLocalFile(m_model->folder()));
  });
}

int CheckpointsPanel::currentRow() const { return m_table->currentIndex().row(); }

QString CheckpointsPanel::title() const {
  const int n = m_model->rowCount();
  return n > 0 ? tr("Checkpoints (%1)").arg(n) : tr("Checkpoints");
}

void CheckpointsPanel::list(const QString& dir) {
  // The selected checkpoint stays selected when the same folder is listed again; else the newest
  // (the one a user resumes from or exports most often).
  const int64_t selected = dir == m_model->folder() ? m_model->step(currentRow()) : -1;
  m_model->setFolder(dir);
  const int row = m_model->rowOfStep(selected);
  if (row >= 0) m_table->selectRow(row);
  else if (m_model->rowCount() > 0) m_table->selectRow(m_model->rowCount() - 1);
  m_table->resizeColumnsToContents();
  for (int c = 0; c + 1 < m_model->columnCount(); ++c) m_table->setColumnWidth(c, m_table->columnWidth(c) + 12);
  refresh();
}

void CheckpointsPanel::setState(bool busy, bool havePlan) {
  m_busy = busy;
  m_havePlan = havePlan;
  refresh();
}

void CheckpointsPanel::refresh() {
  const int n = m_model->rowCount();
  const QString dir = m_model->folder();
  if (dir.isEmpty())
    m_message->setText(tr("No checkpoint folder: a run started here writes its checkpoints into its run "
                          "folder; a recorded run shows them when it was given --checkpoint-dir."));
  else if (!m_model->error().isEmpty())
    m_message->setText(m_model->error());
  else if (n == 0)
    m_message->setText(tr("No checkpoint in %1 yet: the run writes one every “Interval” steps and at the end.")
                           .arg(QDir::toNativeSeparators(dir)));
  else
    m_message->setText(n == 1 ? tr("1 checkpoint in %1").arg(QDir::toNativeSeparators(dir))
                              : tr("%1 checkpoints in %2").arg(n).arg(QDir::toNativeSeparators(dir)));
  m_message->setToolTip(m_message->text());
  Q_EMIT titleChanged(title());

  const runtime::CheckpointInfo* c = m_model->info(currentRow());
  const bool usable = c && c->error.empty();
  m_resume->setEnabled(usable && !m_busy);
  m_export->setEnabled(usable && !m_busy && m_havePlan);
  m_export->setToolTip(m_havePlan ? tr("Write the model of the selected checkpoint as a TorchScript file: the plan's "
                                       "ranks load it and export it without a training step")
                                  : tr("Needs the plan: show a plan of this model (its ranks load the checkpoint)"));
  m_openFolder->setEnabled(!dir.isEmpty() && QFileInfo(dir).isDir());
}

void CheckpointsPanel::setResult(const QString& text, bool asToolTip) {
  m_result->setText(text);
  if (asToolTip) m_result->setToolTip(text);
}

void CheckpointsPanel::setResultTone(Tone tone) {
  switch (tone) {
    case Tone::Plain: m_result->setStyleSheet(QString()); break;
    case Tone::Succeeded: m_result->setStyleSheet(QStringLiteral("color: #2e7d32;")); break;
    case Tone::Failed: m_result->setStyleSheet(QStringLiteral("color: #b01c1c;")); break;
  }
}

}  // namespace hap::studio
