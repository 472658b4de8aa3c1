#include "app/studio/core/models/profile_store_models.h"

#include <QColor>
#include <QFileInfo>
#include <QFont>

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>

#include "app/studio/core/models/memory_model.h"
#include "app/studio/core/display/units.h"
#include "engine/ir/dtype.h"

namespace hap::studio {
namespace {

const QString kDash = QStringLiteral("—");
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }

QVariant alignRight() { return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter); }
QVariant alignLeft() { return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter); }

QString bytesPerSecond(double b) { return b > 0 && std::isfinite(b) ? MemoryModel::formatBytes(b) + QStringLiteral("/s") : kDash; }
QString bytesOrDash(double b) { return b > 0 && std::isfinite(b) ? MemoryModel::formatBytes(b) : kDash; }
QString durationOrDash(double s) { return std::isfinite(s) ? formatDuration(s) : kDash; }
QString numberOrDash(double v, int digits = 4) { return std::isfinite(v) ? QString::number(v, 'g', digits) : kDash; }
QVariant valueOrNull(double v) { return std::isfinite(v) ? QVariant(v) : QVariant(); }
QString scale(double v) { return QStringLiteral("%1×").arg(trimmedNumber(v, 3)); }

// The work an op family is measured against, with its unit.
QString formatWork(cost::OpFamily f, double work, bool perSecond) {
  if (cost::flopBound(f)) return formatFlops(work, perSecond);
  return perSecond ? bytesPerSecond(work) : MemoryModel::formatBytes(work);
}

}  // namespace

QString formatFlops(double flops, bool perSecond) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  double v = flops;
  while (std::abs(v) >= 1000 && i < 6) v /= 1000, ++i;
  const int decimals = std::abs(v) >= 100 ? 0 : std::abs(v) >= 10 ? 1 : 2;
  return QStringLiteral("%1 %2FLOP%3").arg(trimmedNumber(v, decimals), QLatin1String(prefixes[i]),
                                            perSecond ? QStringLiteral("/s") : QString());
}

QString formatStoreTime(const std::string& iso) {
  QString s = qs(iso);
  s.replace(QLatin1Char('T'), QLatin1Char(' '));
  if (s.endsWith(QLatin1Char('Z'))) s.chop(1);
  return s;
}

// ---------------------------------------------------------------------------------------------
// StoreReader

QString StoreReader::defaultPath() {
  return QString::fromStdString(db::defaultPath());
}

StoreReader::StoreReader(QString path) : m_path(std::move(path)) {
  if (m_path.isEmpty() || !QFileInfo::exists(m_path)) {
    m_missing = true;
    m_error = QObject::tr("No profile store at %1: run `hap profile` or `hap launch --db %1`").arg(m_path);
    return;
  }
  try {
    m_store = std::make_unique<db::Store>(m_path.toStdString(), db::Store::Mode::ReadOnly);
  } catch (const std::exception& e) {
    m_error = QString::fromUtf8(e.what());
  }
}

StoreReader::~StoreReader() = default;

template <class F>
auto StoreReader::guarded(F f) -> decltype(f()) {
  if (!m_store) return {};
  try {
    return f();
  } catch (const std::exception& e) {
    m_error = QObject::tr("%1: %2").arg(m_path, QString::fromUtf8(e.what()));
    m_store.reset();
    return {};
  }
}

std::vector<db::ProfileInfo> StoreReader::profiles() {
  return guarded([&] { return m_store->profiles(); });
}

std::optional<cost::Profile> StoreReader::loadProfile(const QString& name, int version) {
  return guarded([&] { return m_store->loadProfile(name.toStdString(), version); });
}

std::vector<db::RunRecord> StoreReader::runs() {
  return guarded([&] { return m_store->runs(); });
}

std::optional<db::PlanRecord> StoreReader::plan(int64_t id) {
  return guarded([&] { return m_store->plan(id); });
}

std::optional<db::RunRecord> StoreReader::run(int64_t id) {
  return guarded([&] { return m_store->run(id); });
}

std::vector<db::StepRecord> StoreReader::steps(int64_t run) {
  return guarded([&] { return m_store->steps(run); });
}

// ---------------------------------------------------------------------------------------------
// ProfilesModel

ProfilesModel::ProfilesModel(QObject* parent) : QAbstractTableModel(parent) {}

void ProfilesModel::load(StoreReader& reader) {
  beginResetModel();
  m_rows = reader.profiles();
  m_error = reader.error();
  // Newest first: by creation time, then version (the store's order, made explicit).
  std::stable_sort(m_rows.begin(), m_rows.end(), [](const db::ProfileInfo& a, const db::ProfileInfo& b) {
    if (a.createdAt != b.createdAt) return a.createdAt > b.createdAt;
    return a.name == b.name && a.version > b.version;
  });
  endResetModel();
}

void ProfilesModel::clear() {
  beginResetModel();
  m_rows.clear();
  m_error.clear();
  endResetModel();
}

const db::ProfileInfo* ProfilesModel::info(int row) const {
  return row >= 0 && row < rowCount() ? &m_rows[static_cast<size_t>(row)] : nullptr;
}

int ProfilesModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(m_rows.size()); }
int ProfilesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ProfilesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const db::ProfileInfo& p = m_rows[static_cast<size_t>(index.row())];
  const auto column = static_cast<Column>(index.column());
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case NameColumn: return qs(p.name);
        case VersionColumn: return p.version;
        case HostColumn: return p.host.empty() ? kDash : qs(p.host);
        case CreatedColumn: return formatStoreTime(p.createdAt);
        case NoteColumn: return qs(p.note);
        case DevicesColumn: return p.devices;
        case CollectivesColumn: return p.collectives;
        case ColumnCount: break;
      }
      break;
    case ValueRole:
      switch (column) {
        case NameColumn: return qs(p.name);
        case VersionColumn: return p.version;
        case HostColumn: return qs(p.host);
        case CreatedColumn: return qs(p.createdAt);
        case NoteColumn: return qs(p.note);
        case DevicesColumn: return p.devices;
        case CollectivesColumn: return p.collectives;
        case ColumnCount: break;
      }
      break;
    case Qt::ToolTipRole:
      if (column == NameColumn)
        return tr("A cluster inventory uses it with `profile: %1` (latest) or `profile: %1@%2`").arg(qs(p.name)).arg(p.version);
      if (column == NoteColumn) return qs(p.note);
      break;
    case Qt::TextAlignmentRole:
      return column == VersionColumn || column == DevicesColumn || column == CollectivesColumn ? alignRight() : alignLeft();
    default: break;
  }
  return {};
}

QVariant ProfilesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    switch (static_cast<Column>(section)) {
      case NameColumn: return tr("Profile");
      case VersionColumn: return tr("Version");
      case HostColumn: return tr("Host");
      case CreatedColumn: return tr("Created (UTC)");
      case NoteColumn: return tr("Note");
      case DevicesColumn: return tr("Devices");
      case CollectivesColumn: return tr("Collectives");
      case ColumnCount: break;
    }
  }
  if (role == Qt::TextAlignmentRole)
    return section == VersionColumn || section == DevicesColumn || section == CollectivesColumn ? alignRight() : alignLeft();
  return {};
}

// ---------------------------------------------------------------------------------------------
// DeviceProfilesModel
//
// Internal ids: 0 for a device row, device index + 1 for an op row under that device.

DeviceProfilesModel::DeviceProfilesModel(QObject* parent) : QAbstractItemModel(parent) {}

void DeviceProfilesModel::setProfile(std::optional<cost::Profile> profile, QString error) {
  beginResetModel();
  m_profile = std::move(profile);
  m_error = std::move(error);
  endResetModel();
}

QModelIndex DeviceProfilesModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  if (!parent.isValid()) return createIndex(row, column, quintptr(0));
  return createIndex(row, column, quintptr(parent.row() + 1));
}

QModelIndex DeviceProfilesModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == 0) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, quintptr(0));
}

int DeviceProfilesModel::rowCount(const QModelIndex& parent) const {
  if (!m_profile) return 0;
  if (!parent.isValid()) return static_cast<int>(m_profile->devices.size());
  if (parent.internalId() != 0 || parent.column() != 0) return 0;
  return static_cast<int>(m_profile->devices[static_cast<size_t>(parent.row())].ops.size());
}

int DeviceProfilesModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant DeviceProfilesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid) || !m_profile) return {};
  if (index.internalId() == 0) return deviceData(m_profile->devices[static_cast<size_t>(index.row())], index.column(), role);
  const cost::DeviceProfile& d = m_profile->devices[index.internalId() - 1];
  return opData(d.ops[static_cast<size_t>(index.row())], index.column(), role);
}

QVariant DeviceProfilesModel::deviceData(const cost::DeviceProfile& d, int column, int role) const {
  const bool calibratedMemory = d.baseMemoryBytes != 0 || d.memoryScale != 1;
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case NameColumn: return qs(d.deviceType);
        case ThreadsColumn: return d.threads > 0 ? QVariant(d.threads) : QVariant(kDash);
        case BandwidthColumn: return bytesPerSecond(d.memoryBandwidth);
        case ComputeScaleColumn: return scale(d.computeScale);
        case CollectiveSlowdownColumn: return scale(d.collectiveSlowdown);
        case RuntimeMemoryColumn:
          return calibratedMemory ? tr("%1 + %2 × model").arg(MemoryModel::formatBytes(d.baseMemoryBytes), trimmedNumber(d.memoryScale, 3))
                                  : kDash;
        case DescriptionColumn: return qs(d.description);
        default: return {};
      }
    case ValueRole:
      switch (column) {
        case NameColumn: return qs(d.deviceType);
        case ThreadsColumn: return d.threads;
        case BandwidthColumn: return d.memoryBandwidth;
        case ComputeScaleColumn: return d.computeScale;
        case CollectiveSlowdownColumn: return d.collectiveSlowdown;
        case RuntimeMemoryColumn: return d.baseMemoryBytes;
        case DescriptionColumn: return qs(d.description);
        default: return {};
      }
    case Qt::ToolTipRole:
      switch (column) {
        case ComputeScaleColumn: return tr("Every compute time of this type is multiplied by this (hap calibrate; 1×: as measured)");
        case CollectiveSlowdownColumn: return tr("Every collective this type takes part in is slowed by this (hap calibrate)");
        case RuntimeMemoryColumn:
          return tr("Peak memory of a rank = the runtime's own memory + scale × the model's bytes (hap calibrate)");
        case DescriptionColumn: return qs(d.description);
        default: return {};
      }
    case Qt::FontRole:
      if (column == NameColumn) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::TextAlignmentRole:
      return column == NameColumn || column == DescriptionColumn || column == RuntimeMemoryColumn ? alignLeft() : alignRight();
    default: return {};
  }
}

QVariant DeviceProfilesModel::opData(const cost::OpThroughput& op, int column, int role) const {
  const bool any = !op.samples.empty();
  const cost::OpSample* last = any ? &op.samples.back() : nullptr;
  const double rate = any && last->seconds > 0 ? last->work / last->seconds : kNaN;
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case NameColumn: return QStringLiteral("%1 · %2").arg(qs(cost::opFamilyName(op.family)), qs(ir::dtypeName(op.dtype)));
        case SamplesColumn: return static_cast<int>(op.samples.size());
        case SizesColumn:
          if (!any) return kDash;
          if (op.samples.size() == 1) return formatWork(op.family, last->work, false);
          return QStringLiteral("%1 – %2").arg(formatWork(op.family, op.samples.front().work, false),
                                                formatWork(op.family, last->work, false));
        case RateColumn: return std::isfinite(rate) ? formatWork(op.family, rate, true) : kDash;
        default: return {};
      }
    case ValueRole:
      switch (column) {
        case NameColumn: return qs(cost::opFamilyName(op.family));
        case SamplesColumn: return static_cast<int>(op.samples.size());
        case SizesColumn: return any ? QVariant(last->work) : QVariant();
        case RateColumn: return valueOrNull(rate);
        default: return {};
      }
    case Qt::ToolTipRole:
      if (column == RateColumn && any)
        return tr("%1 took %2 at the largest size measured").arg(formatWork(op.family, last->work, false), formatDuration(last->seconds));
      if (column == SizesColumn)
        return cost::flopBound(op.family) ? tr("Work of the sizes measured, in FLOPs") : tr("Bytes moved by the sizes measured");
      return {};
    case Qt::TextAlignmentRole: return column == NameColumn ? alignLeft() : alignRight();
    default: return {};
  }
}

QVariant DeviceProfilesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    switch (static_cast<Column>(section)) {
      case NameColumn: return tr("Device type · op");
      case ThreadsColumn: return tr("Threads");
      case BandwidthColumn: return tr("Memory bw");
      case ComputeScaleColumn: return tr("Compute ×");
      case CollectiveSlowdownColumn: return tr("Collective ×");
      case RuntimeMemoryColumn: return tr("Runtime memory");
      case SamplesColumn: return tr("Sizes");
      case SizesColumn: return tr("Size range");
      case RateColumn: return tr("Rate");
      case DescriptionColumn: return tr("Measured on");
      case ColumnCount: break;
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (static_cast<Column>(section)) {
      case BandwidthColumn: return tr("Measured memory bandwidth (copy of a large buffer)");
      case ComputeScaleColumn: return tr("Calibrated compute scale");
      case CollectiveSlowdownColumn: return tr("Calibrated collective slowdown");
      case SamplesColumn: return tr("How many sizes of the op family were measured");
      case RateColumn: return tr("FLOP/s (matmul, convolution) or bytes/s (the others) at the largest size measured");
      default: break;
    }
  }
  if (role == Qt::TextAlignmentRole)
    return section == NameColumn || section == DescriptionColumn || section == RuntimeMemoryColumn ? alignLeft() : alignRight();
  return {};
}

// ---------------------------------------------------------------------------------------------
// CollectiveFitsModel

CollectiveFitsModel::CollectiveFitsModel(QObject* parent) : QAbstractTableModel(parent) {}

void CollectiveFitsModel::setProfile(const std::optional<cost::Profile>& profile) {
  beginResetModel();
  m_rows = profile ? profile->collectives : std::vector<cost::CollectiveFit>{};
  endResetModel();
}

int CollectiveFitsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(m_rows.size()); }
int CollectiveFitsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CollectiveFitsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const cost::CollectiveFit& f = m_rows[static_cast<size_t>(index.row())];
  const auto column = static_cast<Column>(index.column());
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case CollectiveColumn: return qs(cost::collectiveName(f.collective));
        case AlgorithmColumn: return f.algorithm.empty() ? kDash : qs(f.algorithm);
        case LinkColumn: return qs(cost::linkClassName(f.linkClass));
        case LatencyColumn: return durationOrDash(f.link.latency);
        case BandwidthColumn: return bytesPerSecond(f.link.bandwidth);
        case RanksColumn: return f.ranks;
        case SamplesColumn: return f.samples;
        case ResidualColumn:
          return std::isfinite(f.relativeResidual) ? QStringLiteral("%1%").arg(trimmedNumber(f.relativeResidual * 100, 1)) : kDash;
        case ColumnCount: break;
      }
      break;
    case ValueRole:
      switch (column) {
        case CollectiveColumn: return qs(cost::collectiveName(f.collective));
        case AlgorithmColumn: return qs(f.algorithm);
        case LinkColumn: return qs(cost::linkClassName(f.linkClass));
        case LatencyColumn: return f.link.latency;
        case BandwidthColumn: return f.link.bandwidth;
        case RanksColumn: return f.ranks;
        case SamplesColumn: return f.samples;
        case ResidualColumn: return valueOrNull(f.relativeResidual);
        case ColumnCount: break;
      }
      break;
    case Qt::ToolTipRole:
      if (column == ResidualColumn) return tr("Root-mean-square of (fit − measured) / measured over the sizes measured");
      if (column == LatencyColumn || column == BandwidthColumn)
        return tr("seconds = steps(n) · latency + volume(n, bytes) / bandwidth");
      break;
    case Qt::TextAlignmentRole:
      return column == CollectiveColumn || column == AlgorithmColumn || column == LinkColumn ? alignLeft() : alignRight();
    default: break;
  }
  return {};
}

QVariant CollectiveFitsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    switch (static_cast<Column>(section)) {
      case CollectiveColumn: return tr("Collective");
      case AlgorithmColumn: return tr("Algorithm");
      case LinkColumn: return tr("Link");
      case LatencyColumn: return tr("Latency");
      case BandwidthColumn: return tr("Bandwidth");
      case RanksColumn: return tr("Ranks");
      case SamplesColumn: return tr("Sizes");
      case ResidualColumn: return tr("Residual");
      case ColumnCount: break;
    }
  }
  if (role == Qt::TextAlignmentRole)
    return section == CollectiveColumn || section == AlgorithmColumn || section == LinkColumn ? alignLeft() : alignRight();
  return {};
}

// ---------------------------------------------------------------------------------------------
// RunsModel

RunsModel::RunsModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunsModel::load(StoreReader& reader) {
  beginResetModel();
  m_rows.clear();
  std::map<int64_t, std::optional<db::PlanRecord>> plans;
  for (db::RunRecord& r : reader.runs()) {
    Row row;
    if (r.planId != 0) {
      auto it = plans.find(r.planId);
      if (it == plans.end()) it = plans.emplace(r.planId, reader.plan(r.planId)).first;
      row.plan = it->second;
    }
    row.figures = db::RunFigures::of(reader.steps(r.id));
    row.run = std::move(r);
    m_rows.push_back(std::move(row));
  }
  m_error = reader.error();
  if (!m_error.isEmpty()) m_rows.clear();
  std::stable_sort(m_rows.begin(), m_rows.end(), [](const Row& a, const Row& b) {
    if (a.run.startedAt != b.run.startedAt) return a.run.startedAt > b.run.startedAt;
    return a.run.id > b.run.id;
  });
  endResetModel();
}

void RunsModel::clear() {
  beginResetModel();
  m_rows.clear();
  m_error.clear();
  endResetModel();
}

int64_t RunsModel::runId(int row) const { return row >= 0 && row < rowCount() ? m_rows[static_cast<size_t>(row)].run.id : 0; }

int RunsModel::rowOf(int64_t runId) const {
  for (size_t i = 0; i < m_rows.size(); ++i)
    if (m_rows[i].run.id == runId) return static_cast<int>(i);
  return -1;
}

int RunsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(m_rows.size()); }
int RunsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& r = m_rows[static_cast<size_t>(index.row())];
  const auto column = static_cast<Column>(index.column());
  const double predicted = r.plan ? r.plan->predictedSeconds : kNaN;
  const QString model = r.plan && !r.plan->modelPath.empty() ? QFileInfo(qs(r.plan->modelPath)).fileName() : QString();
  switch (role) {
    case Qt::DisplayRole:
      switch (column) {
        case IdColumn: return static_cast<qlonglong>(r.run.id);
        case StatusColumn: return qs(db::runStatusName(r.run.status));
        case LabelColumn: return qs(r.run.label);
        case StartedColumn: return formatStoreTime(r.run.startedAt);
        case RanksColumn: return r.run.ranks;
        case StrategyColumn: return r.plan ? qs(r.plan->strategy) : kDash;
        case ModelColumn: return model.isEmpty() ? kDash : model;
        case StepsColumn: return static_cast<qlonglong>(r.figures.steps);
        case MeanStepColumn: return std::isfinite(r.figures.meanStepSeconds) ? formatMilliseconds(r.figures.meanStepSeconds) : kDash;
        case PredictedColumn: return std::isfinite(predicted) && predicted > 0 ? formatMilliseconds(predicted) : kDash;
        case FinalLossColumn: return numberOrDash(r.figures.finalLoss);
        case ColumnCount: break;
      }
      break;
    case ValueRole:
      switch (column) {
        case IdColumn: return static_cast<qlonglong>(r.run.id);
        case StatusColumn: return qs(db::runStatusName(r.run.status));
        case LabelColumn: return qs(r.run.label);
        case StartedColumn: return qs(r.run.startedAt);
        case RanksColumn: return r.run.ranks;
        case StrategyColumn: return r.plan ? QVariant(qs(r.plan->strategy)) : QVariant();
        case ModelColumn: return r.plan ? QVariant(qs(r.plan->modelPath)) : QVariant();
        case StepsColumn: return static_cast<qlonglong>(r.figures.steps);
        case MeanStepColumn: return valueOrNull(r.figures.meanStepSeconds);
        case PredictedColumn: return valueOrNull(predicted);
        case FinalLossColumn: return valueOrNull(r.figures.finalLoss);
        case ColumnCount: break;
      }
      break;
    case RunIdRole: return static_cast<qlonglong>(r.run.id);
    case Qt::ToolTipRole:
      switch (column) {
        case StatusColumn:
          return r.run.exitReason.empty() ? QVariant() : QVariant(qs(r.run.exitReason));
        case StartedColumn:
          return r.run.endedAt.empty() ? tr("Not ended") : tr("Ended %1 UTC").arg(formatStoreTime(r.run.endedAt));
        case ModelColumn: return r.plan ? QVariant(qs(r.plan->modelPath)) : QVariant();
        case MeanStepColumn: return tr("Rank 0's mean measured step time over the steps after warm-up");
        case PredictedColumn: return tr("The plan's predicted step time");
        case LabelColumn: return qs(r.run.label);
        default: break;
      }
      break;
    case Qt::ForegroundRole:
      if (column == StatusColumn) {
        switch (r.run.status) {
          case db::RunStatus::Failed: return MemoryModel::overCapacityForeground();
          case db::RunStatus::Aborted:
          case db::RunStatus::Stopped: return QColor(Qt::gray);
          case db::RunStatus::Running: return QColor(0x2b, 0x6c, 0xb0);
          case db::RunStatus::Succeeded: break;
        }
      }
      break;
    case Qt::TextAlignmentRole:
      return column == IdColumn || column == RanksColumn || column == StepsColumn || column == MeanStepColumn ||
                     column == PredictedColumn || column == FinalLossColumn
                 ? alignRight()
                 : alignLeft();
    default: break;
  }
  return {};
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::DisplayRole) {
    switch (static_cast<Column>(section)) {
      case IdColumn: return tr("Run");
      case StatusColumn: return tr("Status");
      case LabelColumn: return tr("Label");
      case StartedColumn: return tr("Started (UTC)");
      case RanksColumn: return tr("Ranks");
      case StrategyColumn: return tr("Strategy");
      case ModelColumn: return tr("Model");
      case StepsColumn: return tr("Steps");
      case MeanStepColumn: return tr("Step (r0)");
      case PredictedColumn: return tr("Predicted");
      case FinalLossColumn: return tr("Final loss");
      case ColumnCount: break;
    }
  }
  if (role == Qt::ToolTipRole) {
    if (section == MeanStepColumn) return tr("Rank 0's mean measured step time over the steps after warm-up");
    if (section == PredictedColumn) return tr("The plan's predicted step time");
  }
  if (role == Qt::TextAlignmentRole)
    return section == IdColumn || section == RanksColumn || section == StepsColumn || section == MeanStepColumn ||
                   section == PredictedColumn || section == FinalLossColumn
               ? alignRight()
               : alignLeft();
  return {};
}

// ---------------------------------------------------------------------------------------------
// StepsModel

StepsModel::StepsModel(QObject* parent) : QAbstractTableModel(parent) {}

void StepsModel::load(StoreReader& reader, int64_t runId) {
  beginResetModel();
  m_rows.clear();
  m_ranks = 0;
  m_runId = runId;
  m_error.clear();
  if (runId != 0) {
    const std::optional<db::RunRecord> run = reader.run(runId);
    const std::vector<db::StepRecord> steps = reader.steps(runId);
    m_error = reader.error();
    m_ranks = run ? run->ranks : 0;
    for (const db::StepRecord& s : steps) m_ranks = std::max(m_ranks, s.rank + 1);
    for (const db::StepRecord& s : steps) {  // by step, then rank
      if (s.rank < 0) continue;
      if (m_rows.empty() || m_rows.back().step != s.step)
        m_rows.push_back({s.step, s.warmup, s.loss, std::vector<std::optional<db::StepRecord>>(static_cast<size_t>(m_ranks))});
      Row& row = m_rows.back();
      row.warmup = row.warmup || s.warmup;
      if (s.rank == 0) row.loss = s.loss;
      row.ranks[static_cast<size_t>(s.rank)] = s;
    }
  }
  endResetModel();
}

void StepsModel::clear() {
  beginResetModel();
  m_rows.clear();
  m_ranks = 0;
  m_runId = 0;
  m_error.clear();
  endResetModel();
}

int64_t StepsModel::step(int row) const { return m_rows.at(static_cast<size_t>(row)).step; }
double StepsModel::loss(int row) const { return m_rows.at(static_cast<size_t>(row)).loss; }
bool StepsModel::warmup(int row) const { return m_rows.at(static_cast<size_t>(row)).warmup; }

const db::StepRecord* StepsModel::record(int row, int rank) const {
  if (row < 0 || row >= rowCount() || rank < 0 || rank >= m_ranks) return nullptr;
  const auto& r = m_rows[static_cast<size_t>(row)].ranks[static_cast<size_t>(rank)];
  return r ? &*r : nullptr;
}

int StepsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(m_rows.size()); }
int StepsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || m_runId == 0 ? 0 : FirstRankColumn + m_ranks * RankColumns;
}

QVariant StepsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& r = m_rows[static_cast<size_t>(index.row())];
  const int column = index.column();
  if (column < FirstRankColumn) {
    switch (role) {
      case Qt::DisplayRole:
        if (column == StepColumn) return static_cast<qlonglong>(r.step);
        if (column == WarmupColumn) return r.warmup ? tr("warm-up") : QString();
        return numberOrDash(r.loss, 5);
      case ValueRole:
        if (column == StepColumn) return static_cast<qlonglong>(r.step);
        if (column == WarmupColumn) return r.warmup;
        return valueOrNull(r.loss);
      case Qt::ForegroundRole:
        if (r.warmup) return QColor(Qt::gray);
        break;
      case Qt::TextAlignmentRole: return column == WarmupColumn ? alignLeft() : alignRight();
      default: break;
    }
    return {};
  }
  const int rank = (column - FirstRankColumn) / RankColumns;
  const auto field = static_cast<RankField>((column - FirstRankColumn) % RankColumns);
  const auto& rec = r.ranks[static_cast<size_t>(rank)];
  switch (role) {
    case Qt::DisplayRole:
      if (!rec) return kDash;
      switch (field) {
        case StepTimeField: return durationOrDash(rec->seconds);
        case ComputeField: return durationOrDash(rec->computeSeconds);
        case CommunicationField: return durationOrDash(rec->communicationSeconds);
        case PeakMemoryField: return bytesOrDash(rec->peakMemoryBytes);
        case RankColumns: break;
      }
      break;
    case ValueRole:
      if (!rec) return {};
      switch (field) {
        case StepTimeField: return rec->seconds;
        case ComputeField: return rec->computeSeconds;
        case CommunicationField: return rec->communicationSeconds;
        case PeakMemoryField: return rec->peakMemoryBytes;
        case RankColumns: break;
      }
      break;
    case Qt::ForegroundRole:
      if (r.warmup) return QColor(Qt::gray);
      break;
    case Qt::TextAlignmentRole: return alignRight();
    default: break;
  }
  return {};
}

QVariant StepsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= columnCount()) return {};
  if (role == Qt::DisplayRole) {
    if (section == StepColumn) return tr("Step");
    if (section == WarmupColumn) return QString();
    if (section == LossColumn) return tr("Loss");
    const int rank = (section - FirstRankColumn) / RankColumns;
    switch (static_cast<RankField>((section - FirstRankColumn) % RankColumns)) {
      case StepTimeField: return tr("r%1 step").arg(rank);
      case ComputeField: return tr("r%1 compute").arg(rank);
      case CommunicationField: return tr("r%1 comm").arg(rank);
      case PeakMemoryField: return tr("r%1 peak mem").arg(rank);
      case RankColumns: break;
    }
  }
  if (role == Qt::ToolTipRole && section >= FirstRankColumn) {
    const int rank = (section - FirstRankColumn) / RankColumns;
    switch (static_cast<RankField>((section - FirstRankColumn) % RankColumns)) {
      case StepTimeField: return tr("Rank %1's wall time of the step").arg(rank);
      case ComputeField: return tr("Rank %1's compute spans in the step").arg(rank);
      case CommunicationField: return tr("Rank %1's collectives' spans in the step").arg(rank);
      case PeakMemoryField: return tr("Rank %1's peak memory so far").arg(rank);
      case RankColumns: break;
    }
  }
  if (role == Qt::TextAlignmentRole) return section == WarmupColumn ? alignLeft() : alignRight();
  return {};
}

}  // namespace hap::studio
