#include "app/studio/widgets/chart_style.h"
#include "app/studio/widgets/fixed_font.h"
#include "app/studio/widgets/profiles_view.h"

#include <QAction>
#include <QBoxLayout>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QSysInfo>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QTreeView>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLegend>
#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>

#include <algorithm>
#include <cmath>

namespace hap::studio {
namespace {

const QColor kLossColour(0x20, 0x20, 0x20);
// One colour per rank (the plan views' blues and greys would blur four ranks together).
const QColor kRankColours[] = {QColor(0x2b, 0x6c, 0xb0), QColor(0xd9, 0x7a, 0x1c), QColor(0x2e, 0x8b, 0x57),
                               QColor(0xb0, 0x3a, 0x8c), QColor(0x6a, 0x5a, 0xcd), QColor(0x8b, 0x5a, 0x2b)};

QFont smallFont(const QFont& base, double scale = 0.9) {
  QFont f = base;
  f.setPointSizeF(std::max(7.0, base.pointSizeF() * scale));
  return f;
}

template <class View>
void setUpView(View* v, const char* name) {
  v->setObjectName(QLatin1String(name));
  v->setAlternatingRowColors(true);
  v->setSelectionBehavior(QAbstractItemView::SelectRows);
  v->setSelectionMode(QAbstractItemView::SingleSelection);
  v->setEditTriggers(QAbstractItemView::NoEditTriggers);
  v->setWordWrap(false);
  v->setTextElideMode(Qt::ElideMiddle);
}

QTableView* makeTable(QWidget* parent, const char* name) {
  auto* t = new QTableView(parent);
  setUpView(t, name);
  t->verticalHeader()->hide();
  t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 8);
  t->horizontalHeader()->setStretchLastSection(true);
  t->horizontalHeader()->setHighlightSections(false);
  return t;
}

QLabel* makeHint(QWidget* parent, const char* name) {
  auto* l = new QLabel(parent);
  l->setObjectName(QLatin1String(name));
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  l->setStyleSheet(QStringLiteral("color: gray;"));
  return l;
}

// A caption above a table ("Device types", "Collective fits").
QWidget* titled(QWidget* parent, const QString& title, QWidget* body) {
  auto* box = new QWidget(parent);
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  auto* label = new QLabel(QStringLiteral("<b>%1</b>").arg(title), box);
  layout->addWidget(label);
  layout->addWidget(body, 1);
  return box;
}

}  // namespace

ProfilesView::ProfilesView(QWidget* parent) : QWidget(parent) {
  m_profiles = new ProfilesModel(this);
  m_devices = new DeviceProfilesModel(this);
  m_collectives = new CollectiveFitsModel(this);
  m_runs = new RunsModel(this);
  m_steps = new StepsModel(this);

  // The store.
  auto* storeLabel = new QLabel(tr("Store:"), this);
  m_pathEdit = new QLineEdit(this);
  m_pathEdit->setObjectName(QStringLiteral("storePath"));
  m_pathEdit->setToolTip(tr("The profile store shown (hap --db, $HAP_DB, else the XDG data folder); edit and press "
                            "Enter to show another"));
  m_openButton = new QPushButton(tr("Open Store…"), this);
  m_openButton->setObjectName(QStringLiteral("openStore"));
  m_openButton->setToolTip(tr("Show another profile store (a .db file written by hap profile or hap launch --db)"));
  m_refresh = new QAction(tr("&Refresh"), this);
  m_refresh->setObjectName(QStringLiteral("profiles.refresh"));
  m_refresh->setShortcut(QKeySequence(Qt::Key_F5));
  m_refresh->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  m_refresh->setToolTip(tr("Read the store again (F5)"));
  addAction(m_refresh);
  auto* refreshButton = new QToolButton(this);
  refreshButton->setObjectName(QStringLiteral("refreshStore"));
  refreshButton->setDefaultAction(m_refresh);
  refreshButton->setToolButtonStyle(Qt::ToolButtonTextOnly);
  m_profileMachine = new QAction(tr("Profile This Machine…"), this);
  m_profileMachine->setObjectName(QStringLiteral("profiles.profileMachine"));
  m_profileMachine->setToolTip(tr("Measure this machine with hap profile and save the result into this store"));
  addAction(m_profileMachine);
  auto* profileButton = new QToolButton(this);
  profileButton->setObjectName(QStringLiteral("profileMachine"));
  profileButton->setDefaultAction(m_profileMachine);
  profileButton->setToolButtonStyle(Qt::ToolButtonTextOnly);
  auto* top = new QHBoxLayout;
  top->addWidget(storeLabel);
  top->addWidget(m_pathEdit, 1);
  top->addWidget(m_openButton);
  top->addWidget(refreshButton);
  top->addWidget(profileButton);

  // A profile run's lines, with Cancel.
  m_job = new ProfileJob(this);
  m_profileBox = new QWidget(this);
  m_profileBox->setObjectName(QStringLiteral("profileRun"));
  m_profileLog = new QPlainTextEdit(m_profileBox);
  m_profileLog->setObjectName(QStringLiteral("profileLog"));
  m_profileLog->setReadOnly(true);
  m_profileLog->setLineWrapMode(QPlainTextEdit::NoWrap);
  m_profileLog->setMaximumBlockCount(2000);
  m_profileLog->setFont(fixedFont());
  m_profileLog->setFixedHeight(m_profileLog->fontMetrics().lineSpacing() * 6 + 12);
  m_cancelProfile = new QPushButton(tr("Cancel"), m_profileBox);
  m_cancelProfile->setObjectName(QStringLiteral("cancelProfile"));
  m_cancelProfile->setToolTip(tr("Stop hap profile (nothing is saved)"));
  m_cancelProfile->setEnabled(false);
  m_useProfile = new QPushButton(tr("Use for the Open Cluster"), m_profileBox);
  m_useProfile->setObjectName(QStringLiteral("useProfile"));
  m_useProfile->setToolTip(tr("Set the open cluster's profile to the one just measured, so plans are priced with it"));
  m_useProfile->hide();
  connect(m_useProfile, &QPushButton::clicked, this, [this] {
    Q_EMIT useProfileRequested(QStringLiteral("%1@%2").arg(m_job->savedName()).arg(m_job->savedVersion()), m_storePath);
  });
  auto* profileButtons = new QVBoxLayout;
  profileButtons->addWidget(m_cancelProfile);
  profileButtons->addWidget(m_useProfile);
  profileButtons->addStretch(1);
  auto* runLayout = new QHBoxLayout(m_profileBox);
  runLayout->setContentsMargins(0, 0, 0, 0);
  runLayout->addWidget(m_profileLog, 1);
  runLayout->addLayout(profileButtons);
  m_profileBox->hide();

  m_message = new QLabel(this);
  m_message->setObjectName(QStringLiteral("profilesMessage"));
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_message->setStyleSheet(QStringLiteral("color: #b01c1c;"));
  m_message->hide();

  // Profiles: the versions on the left, the selected one's devices and link fits on the right.
  m_profilesTable = makeTable(this, "profilesTable");
  m_profilesTable->setModel(m_profiles);
  m_devicesTree = new QTreeView(this);
  setUpView(m_devicesTree, "deviceProfilesTree");
  m_devicesTree->setModel(m_devices);
  m_devicesTree->setUniformRowHeights(true);
  m_devicesTree->header()->setStretchLastSection(true);
  m_collectivesTable = makeTable(this, "collectiveFitsTable");
  m_collectivesTable->setModel(m_collectives);
  m_collectivesTable->horizontalHeader()->setStretchLastSection(false);
  m_profilesHint = makeHint(this, "profilesHint");
  auto* profilesBox = new QWidget(this);
  auto* profilesLayout = new QVBoxLayout(profilesBox);
  profilesLayout->setContentsMargins(0, 0, 0, 0);
  profilesLayout->setSpacing(2);
  profilesLayout->addWidget(m_profilesTable, 1);
  profilesLayout->addWidget(m_profilesHint);
  auto* details = new QSplitter(Qt::Vertical, this);
  details->addWidget(titled(this, tr("Device types and measured op rates"), m_devicesTree));
  details->addWidget(titled(this, tr("Collective fits: latency + size / bandwidth"), m_collectivesTable));
  details->setStretchFactor(0, 3);
  details->setStretchFactor(1, 2);
  details->setChildrenCollapsible(false);
  auto* profilesSplit = m_profilesSplit = new QSplitter(Qt::Horizontal, this);
  profilesSplit->addWidget(titled(this, tr("Profiles"), profilesBox));
  profilesSplit->addWidget(details);
  profilesSplit->setStretchFactor(0, 2);
  profilesSplit->setStretchFactor(1, 3);
  profilesSplit->setChildrenCollapsible(false);

  // Runs: the runs on the left, the selected one's steps and chart on the right.
  m_runsTable = makeTable(this, "runsTable");
  m_runsTable->setModel(m_runs);
  m_stepsTable = makeTable(this, "stepsTable");
  m_stepsTable->setModel(m_steps);
  m_stepsTable->horizontalHeader()->setStretchLastSection(false);
  m_runsHint = makeHint(this, "runsHint");
  auto* runsBox = new QWidget(this);
  auto* runsLayout = new QVBoxLayout(runsBox);
  runsLayout->setContentsMargins(0, 0, 0, 0);
  runsLayout->setSpacing(2);
  runsLayout->addWidget(m_runsTable, 1);
  runsLayout->addWidget(m_runsHint);
  // Show in Measured: the selected run against its plan's prediction (the Measured dock).
  m_showMeasured = new QAction(tr("Show in Measured"), this);
  m_showMeasured->setObjectName(QStringLiteral("profiles.showMeasured"));
  m_showMeasured->setToolTip(tr("Compare the selected run with its plan's prediction in the Measured dock (or "
                                "double-click the run)"));
  m_showMeasured->setEnabled(false);
  auto* showMeasured = new QToolButton(runsBox);
  showMeasured->setObjectName(QStringLiteral("showMeasured"));
  showMeasured->setDefaultAction(m_showMeasured);
  showMeasured->setToolButtonStyle(Qt::ToolButtonTextOnly);
  // Open in Run Panel: the selected run's loss and step-time charts and its checkpoints (the Run dock).
  m_openInRunPanel = new QAction(tr("Open in Run Panel"), this);
  m_openInRunPanel->setObjectName(QStringLiteral("profiles.openInRunPanel"));
  m_openInRunPanel->setToolTip(tr("Show the selected run's loss, step times and checkpoints in the Run dock"));
  m_openInRunPanel->setEnabled(false);
  auto* openInRunPanel = new QToolButton(runsBox);
  openInRunPanel->setObjectName(QStringLiteral("openInRunPanel"));
  openInRunPanel->setDefaultAction(m_openInRunPanel);
  openInRunPanel->setToolButtonStyle(Qt::ToolButtonTextOnly);
  auto* runButtons = new QHBoxLayout;
  runButtons->setSpacing(4);
  runButtons->addWidget(showMeasured);
  runButtons->addWidget(openInRunPanel);
  runButtons->addStretch(1);
  runsLayout->addLayout(runButtons);

  m_chartView = makeChartView(this, QStringLiteral("runChart"));
  m_chartView->setMinimumSize(280, 180);

  auto* runTables = new QSplitter(Qt::Vertical, this);
  runTables->addWidget(titled(this, tr("Runs"), runsBox));
  runTables->addWidget(titled(this, tr("Steps of the selected run, per rank"), m_stepsTable));
  runTables->setStretchFactor(0, 1);
  runTables->setStretchFactor(1, 1);
  runTables->setChildrenCollapsible(false);
  auto* runsSplit = m_runsSplit = new QSplitter(Qt::Horizontal, this);
  runsSplit->addWidget(runTables);
  runsSplit->addWidget(m_chartView);
  runsSplit->setStretchFactor(0, 3);
  runsSplit->setStretchFactor(1, 2);
  runsSplit->setChildrenCollapsible(false);

  m_tabs = new QTabWidget(this);
  m_tabs->setObjectName(QStringLiteral("profilesTabs"));
  m_tabs->setDocumentMode(true);
  m_tabs->addTab(profilesSplit, tr("Profiles"));
  m_tabs->addTab(runsSplit, tr("Runs"));

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(top);
  layout->addWidget(m_message);
  layout->addWidget(m_tabs, 1);
  layout->addWidget(m_profileBox);

  connect(m_refresh, &QAction::triggered, this, &ProfilesView::reload);
  connect(m_openButton, &QPushButton::clicked, this, &ProfilesView::openStoreDialog);
  connect(m_profileMachine, &QAction::triggered, this, &ProfilesView::profileMachineDialog);
  connect(m_cancelProfile, &QPushButton::clicked, m_job, [this] { m_job->cancel(); });
  connect(m_job, &ProfileJob::started, this, [this](const QString& commandLine) {
    m_profileLog->appendPlainText(QStringLiteral("$ ") + commandLine);
  });
  connect(m_job, &ProfileJob::progress, m_profileLog, &QPlainTextEdit::appendPlainText);
  connect(m_job, &ProfileJob::finished, this, &ProfilesView::onProfileFinished);
  connect(m_pathEdit, &QLineEdit::returnPressed, this, [this] { setStorePath(m_pathEdit->text().trimmed()); });
  connect(m_profilesTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { showProfile(current.isValid() ? current.row() : -1); });
  connect(m_runsTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) { showRun(current.isValid() ? current.row() : -1); });
  connect(m_showMeasured, &QAction::triggered, this, [this] {
    if (const int64_t id = m_runs->runId(m_runsTable->currentIndex().row())) Q_EMIT showMeasuredRequested(m_storePath, id);
  });
  connect(m_openInRunPanel, &QAction::triggered, this, [this] {
    if (const int64_t id = m_runs->runId(m_runsTable->currentIndex().row())) Q_EMIT openInRunPanelRequested(m_storePath, id);
  });
  connect(m_runsTable, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    if (const int64_t id = m_runs->runId(index.row())) Q_EMIT showMeasuredRequested(m_storePath, id);
  });

  m_storePath = StoreReader::defaultPath();
  m_pathEdit->setText(m_storePath);
  updateHints();
}

ProfilesView::~ProfilesView() = default;

QString ProfilesView::error() const { return m_reader ? m_reader->error() : QString(); }

void ProfilesView::setStorePath(const QString& path) {
  m_storePath = path;
  m_pathEdit->setText(path);
  m_profilesTable->selectionModel()->clearCurrentIndex();
  m_runsTable->selectionModel()->clearCurrentIndex();
  reload();
}

void ProfilesView::openStoreDialog() {
  QSettings s;
  const QString key = QStringLiteral("dirs/file.openStore");
  const QString start = QFileInfo::exists(m_storePath) ? m_storePath : s.value(key).toString();
  const QString path = QFileDialog::getOpenFileName(this, tr("Open Profile Store"), start,
                                                    tr("Profile stores (*.db *.sqlite *.sqlite3);;All files (*)"));
  if (path.isEmpty()) return;
  s.setValue(key, QFileInfo(path).absolutePath());
  setStorePath(path);
}

void ProfilesView::profileMachineDialog() {
  if (m_job->busy()) return;
  QDialog dialog(this);
  dialog.setObjectName(QStringLiteral("profileMachineDialog"));
  dialog.setWindowTitle(tr("Profile This Machine"));
  auto* name = new QLineEdit(QSysInfo::machineHostName(), &dialog);
  name->setObjectName(QStringLiteral("profileName"));
  name->setToolTip(tr("The profile's name: a new version of it is saved"));
  // The open cluster's types first: a profile applies to a cluster through its type names.
  auto* deviceType = new QComboBox(&dialog);
  deviceType->setEditable(true);
  deviceType->addItems(m_clusterTypes.isEmpty() ? QStringList{QStringLiteral("cpu")} : m_clusterTypes);
  deviceType->setObjectName(QStringLiteral("profileDeviceType"));
  deviceType->setToolTip(tr("The device type the figures belong to (a cluster's device_types key; the open "
                            "cluster's types are listed)"));
  auto* ranks = new QSpinBox(&dialog);
  ranks->setObjectName(QStringLiteral("profileRanks"));
  ranks->setRange(1, 64);
  ranks->setValue(2);
  ranks->setToolTip(tr("Local ranks for the collective benchmarks (1: no collectives)"));
  auto* quick = new QCheckBox(tr("Quick (fewer sizes and repeats)"), &dialog);
  quick->setObjectName(QStringLiteral("profileQuick"));
  auto* store = new QLabel(m_storePath, &dialog);
  store->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Profile"));
  connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  auto* form = new QFormLayout(&dialog);
  form->addRow(tr("Name:"), name);
  form->addRow(tr("Device type:"), deviceType);
  form->addRow(tr("Ranks:"), ranks);
  form->addRow(QString(), quick);
  form->addRow(tr("Store:"), store);
  form->addRow(buttons);
  if (dialog.exec() != QDialog::Accepted) return;
  ProfileOptions options;
  options.name = name->text().trimmed();
  options.deviceType = deviceType->currentText().trimmed();
  options.ranks = ranks->value();
  options.quick = quick->isChecked();
  profileMachine(options);
}

void ProfilesView::setClusterDeviceTypes(const QStringList& types) { m_clusterTypes = types; }

void ProfilesView::profileMachine(ProfileOptions options) {
  if (m_job->busy()) return;
  m_useProfile->hide();
  options.storePath = m_storePath;
  m_profileLog->clear();
  m_profileBox->show();
  m_profileMachine->setEnabled(false);
  m_cancelProfile->setEnabled(true);
  m_job->start(options);  // a failure to start comes back through finished()
}

void ProfilesView::onProfileFinished(bool ok, const QString& message) {
  m_profileMachine->setEnabled(true);
  m_cancelProfile->setEnabled(false);
  m_profileBox->show();
  m_profileLog->appendPlainText(ok ? message : tr("Failed: %1").arg(message));
  if (ok) {
    m_useProfile->setVisible(!m_job->savedName().isEmpty() && m_job->savedVersion() > 0 && !m_clusterTypes.isEmpty());
    reload();
    // Select the new profile.
    for (int row = 0; row < m_profiles->rowCount(); ++row) {
      const db::ProfileInfo* info = m_profiles->info(row);
      if (info && QString::fromStdString(info->name) == m_job->savedName() && info->version == m_job->savedVersion()) {
        m_tabs->setCurrentIndex(ProfilesTab);
        m_profilesTable->selectRow(row);
        m_profilesTable->scrollTo(m_profiles->index(row, 0));
        break;
      }
    }
  } else {
    m_message->setStyleSheet(QStringLiteral("color: #b01c1c;"));
    m_message->setText(tr("hap profile: %1").arg(message));
    m_message->show();
  }
  Q_EMIT profileFinished(ok, message);
}

void ProfilesView::reload() {
  m_loaded = true;
  // Keep the selection by identity: the rows move when something new was recorded.
  const db::ProfileInfo* info = m_profiles->info(m_profilesTable->currentIndex().row());
  const std::string profileName = info ? info->name : std::string();
  const int profileVersion = info ? info->version : 0;
  const int64_t runId = m_runs->runId(m_runsTable->currentIndex().row());

  m_reader = std::make_unique<StoreReader>(m_storePath);
  {
    const QSignalBlocker a(m_profilesTable->selectionModel()), b(m_runsTable->selectionModel());
    m_profiles->load(*m_reader);
    m_runs->load(*m_reader);
  }
  // Errors are said once, at the top; an absent store is not broken, only empty.
  const QString error = m_reader->error();
  m_message->setText(error);
  m_message->setStyleSheet(m_reader->missing() ? QStringLiteral("color: gray;") : QStringLiteral("color: #b01c1c;"));
  m_message->setVisible(!error.isEmpty());

  int profileRow = -1;
  for (int row = 0; row < m_profiles->rowCount(); ++row)
    if (m_profiles->info(row)->name == profileName && m_profiles->info(row)->version == profileVersion) profileRow = row;
  if (profileRow < 0 && m_profiles->rowCount() > 0 && !profileName.empty()) profileRow = 0;
  const int runRow = m_runs->rowOf(runId);
  fitColumns(m_profilesTable);
  fitColumns(m_runsTable);
  if (profileRow >= 0) m_profilesTable->selectRow(profileRow);
  showProfile(profileRow);
  if (runRow >= 0) m_runsTable->selectRow(runRow);
  showRun(runRow);
  updateHints();
  Q_EMIT storeLoaded();
}

void ProfilesView::showProfile(int row) {
  const db::ProfileInfo* info = m_reader ? m_profiles->info(row) : nullptr;
  std::optional<cost::Profile> profile;
  QString error;
  if (info) {
    profile = m_reader->loadProfile(QString::fromStdString(info->name), info->version);
    error = m_reader->error();
    if (!profile && error.isEmpty())
      error = tr("Profile %1 version %2 is no longer in the store: press Refresh (F5)")
                  .arg(QString::fromStdString(info->name))
                  .arg(info->version);
  }
  m_devices->setProfile(profile, error);
  m_collectives->setProfile(profile);
  m_devicesTree->expandAll();
  for (int c = 0; c < m_devices->columnCount(); ++c) {
    m_devicesTree->resizeColumnToContents(c);
    if (c != DeviceProfilesModel::DescriptionColumn)
      m_devicesTree->setColumnWidth(c, m_devicesTree->columnWidth(c) + 8);
  }
  fitColumns(m_collectivesTable);
  updateHints();
}

void ProfilesView::showRun(int row) {
  const int64_t id = m_runs->runId(row);
  if (m_reader && id != 0)
    m_steps->load(*m_reader, id);
  else
    m_steps->clear();
  fitColumns(m_stepsTable);
  rebuildChart();
  updateHints();
  m_showMeasured->setEnabled(id != 0);
  m_openInRunPanel->setEnabled(id != 0);
}

void ProfilesView::fitColumns(QTableView* table) {
  table->resizeColumnsToContents();
  QHeaderView* header = table->horizontalHeader();
  const int n = table->model()->columnCount();
  const int last = header->stretchLastSection() ? n - 1 : n;
  for (int c = 0; c < last; ++c)
    if (header->sectionResizeMode(c) != QHeaderView::Stretch) table->setColumnWidth(c, std::min(table->columnWidth(c) + 8, 360));
}

void ProfilesView::updateHints() {
  const QString path = m_storePath;
  const bool ok = m_reader && m_reader->ok();
  if (!m_reader) {
    m_profilesHint->setText(QString());
    m_runsHint->setText(QString());
  } else if (!ok) {
    m_profilesHint->setText(tr("Open a profile store (Open Store…), or make one: `hap profile --db %1`.").arg(path));
    m_runsHint->setText(tr("Open a profile store (Open Store…), or record runs into one: `hap launch --db %1`.").arg(path));
  } else {
    m_profilesHint->setText(m_profiles->rowCount() == 0
                                ? tr("No profiles in this store: measure this machine with `hap profile --db %1`.").arg(path)
                            : m_profilesTable->currentIndex().isValid()
                                ? QString()
                                : tr("Select a profile to see its device types and collective fits."));
    m_runsHint->setText(m_runs->rowCount() == 0
                            ? tr("No runs recorded in this store: `hap launch --db %1` records them.").arg(path)
                        : m_runsTable->currentIndex().isValid() ? QString()
                                                                : tr("Select a run to see its steps."));
  }
  m_profilesHint->setVisible(!m_profilesHint->text().isEmpty());
  m_runsHint->setVisible(!m_runsHint->text().isEmpty());
}

void ProfilesView::rebuildChart() {
  QChart* c = m_chartView->chart();
  emptyChart(c);
  m_lossSeries = nullptr;
  m_stepSeries.clear();
  if (m_steps->rowCount() == 0) {
    c->setTitle(m_steps->runId() != 0 ? tr("Run %1 recorded no steps").arg(m_steps->runId()) : QString());
    return;
  }
  c->setTitle(tr("Run %1: loss and step time per step").arg(m_steps->runId()));
  auto* loss = new QLineSeries;
  loss->setName(tr("loss"));
  QPen lossPen(kLossColour);
  lossPen.setWidthF(2);
  loss->setPen(lossPen);
  double lossMin = INFINITY, lossMax = -INFINITY, timeMax = 0;
  int64_t firstStep = m_steps->step(0), lastStep = firstStep;
  for (int row = 0; row < m_steps->rowCount(); ++row) {
    const double l = m_steps->loss(row);
    const auto x = static_cast<double>(m_steps->step(row));
    firstStep = std::min(firstStep, m_steps->step(row));
    lastStep = std::max(lastStep, m_steps->step(row));
    if (std::isfinite(l)) {
      loss->append(x, l);
      lossMin = std::min(lossMin, l);
      lossMax = std::max(lossMax, l);
    }
  }
  for (int rank = 0; rank < m_steps->ranks(); ++rank) {
    auto* s = new QLineSeries;
    s->setName(tr("rank %1 step").arg(rank));
    QPen pen(kRankColours[rank % std::size(kRankColours)]);
    pen.setWidthF(1.5);
    pen.setStyle(Qt::DashLine);
    s->setPen(pen);
    for (int row = 0; row < m_steps->rowCount(); ++row)
      if (const db::StepRecord* r = m_steps->record(row, rank); r && std::isfinite(r->seconds)) {
        s->append(static_cast<double>(r->step), r->seconds * 1e3);
        timeMax = std::max(timeMax, r->seconds * 1e3);
      }
    m_stepSeries.push_back(s);
  }
  c->addSeries(loss);
  for (QLineSeries* s : m_stepSeries) c->addSeries(s);

  auto* axisX = new QValueAxis;
  axisX->setRange(static_cast<double>(firstStep), static_cast<double>(std::max(lastStep, firstStep + 1)));
  axisX->setLabelFormat(QStringLiteral("%d"));
  axisX->setTickType(QValueAxis::TicksDynamic);
  axisX->setTickAnchor(static_cast<double>(firstStep));
  const double span = static_cast<double>(std::max<int64_t>(lastStep - firstStep, 1));
  axisX->setTickInterval(std::max(1.0, std::ceil(span / 8)));
  axisX->setTitleText(tr("step"));
  axisX->setLabelsFont(smallFont(font()));
  c->addAxis(axisX, Qt::AlignBottom);
  auto* axisLoss = new QValueAxis;
  if (std::isfinite(lossMin)) {
    const double pad = std::max((lossMax - lossMin) * 0.08, std::abs(lossMax) * 0.01 + 1e-9);
    axisLoss->setRange(lossMin - pad, lossMax + pad);
  }
  axisLoss->applyNiceNumbers();
  axisLoss->setLabelFormat(QStringLiteral("%.4g"));
  axisLoss->setTitleText(tr("loss"));
  axisLoss->setLabelsFont(smallFont(font()));
  c->addAxis(axisLoss, Qt::AlignLeft);
  auto* axisTime = new QValueAxis;
  axisTime->setRange(0, timeMax > 0 ? timeMax * 1.1 : 1);
  axisTime->applyNiceNumbers();
  axisTime->setLabelFormat(QStringLiteral("%.4g"));
  axisTime->setTitleText(tr("ms per step"));
  axisTime->setLabelsFont(smallFont(font()));
  axisTime->setGridLineVisible(false);
  c->addAxis(axisTime, Qt::AlignRight);
  loss->attachAxis(axisX);
  loss->attachAxis(axisLoss);
  for (QLineSeries* s : m_stepSeries) {
    s->attachAxis(axisX);
    s->attachAxis(axisTime);
  }
  m_lossSeries = loss;
  c->legend()->setVisible(true);
  c->legend()->setFont(smallFont(font()));
}

bool ProfilesView::event(QEvent* e) {
  // F5 is also the window's Reload Model: while focus is in this view, F5 refreshes the store
  // (the key comes here as a key press instead of an ambiguous shortcut).
  if (e->type() == QEvent::ShortcutOverride && static_cast<QKeyEvent*>(e)->key() == Qt::Key_F5 &&
      static_cast<QKeyEvent*>(e)->modifiers() == Qt::NoModifier) {
    e->accept();
    return true;
  }
  return QWidget::event(e);
}

void ProfilesView::keyPressEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_F5 && e->modifiers() == Qt::NoModifier) {
    m_refresh->trigger();
    e->accept();
    return;
  }
  QWidget::keyPressEvent(e);
}

void ProfilesView::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  // The lists take what their columns need; the details (device rates, the chart) the rest.
  const int w = width();
  if (m_splitsSized || w < 400) return;
  m_splitsSized = true;
  m_profilesSplit->setSizes({w * 9 / 25, w - w * 9 / 25});
  m_runsSplit->setSizes({w * 13 / 20, w - w * 13 / 20});
}

void ProfilesView::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (!m_loaded) reload();
}

}  // namespace hap::studio
