#include "app/studio/core/models/checkpoints_model.h"

#include <QColor>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocale>

#include <algorithm>
#include <chrono>
#include <exception>

namespace hap::studio {
namespace {

qint64 epochSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

CheckpointsModel::CheckpointsModel(QObject* parent) : QAbstractTableModel(parent) {}

void CheckpointsModel::setFolder(const QString& dir) {
  m_folder = dir;
  reload();
}

void CheckpointsModel::reload() {
  beginResetModel();
  m_rows.clear();
  m_error.clear();
  if (!m_folder.isEmpty()) {
    try {
      m_rows = runtime::listCheckpoints(m_folder.toStdString());
    } catch (const std::exception& e) {
      m_error = QString::fromUtf8(e.what());
    }
  }
  endResetModel();
  Q_EMIT listed();
}

bool CheckpointsModel::update(const QString& file) {
  if (m_folder.isEmpty() || QFileInfo(file).absoluteDir() != QDir(m_folder)) return false;
  runtime::CheckpointInfo c = runtime::readCheckpointInfo(file.toStdString());
  if (c.step < 0 || QFileInfo(file).fileName() != QStringLiteral("step-%1.pt").arg(c.step)) return false;
  const auto at = std::lower_bound(m_rows.begin(), m_rows.end(), c.step,
                                   [](const runtime::CheckpointInfo& r, int64_t step) { return r.step < step; });
  const int row = static_cast<int>(at - m_rows.begin());
  if (at != m_rows.end() && at->step == c.step) {
    *at = std::move(c);
    Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
  } else {
    beginInsertRows({}, row, row);
    m_rows.insert(at, std::move(c));
    endInsertRows();
  }
  Q_EMIT listed();
  return true;
}

const runtime::CheckpointInfo* CheckpointsModel::info(int row) const {
  return row >= 0 && static_cast<size_t>(row) < m_rows.size() ? &m_rows[static_cast<size_t>(row)] : nullptr;
}

QString CheckpointsModel::path(int row) const {
  const runtime::CheckpointInfo* c = info(row);
  return c ? QString::fromStdString(c->path) : QString();
}

int64_t CheckpointsModel::step(int row) const {
  const runtime::CheckpointInfo* c = info(row);
  return c ? c->step : -1;
}

int CheckpointsModel::rowOfStep(int64_t step) const {
  for (size_t r = 0; r < m_rows.size(); ++r)
    if (m_rows[r].step == step) return static_cast<int>(r);
  return -1;
}

int64_t CheckpointsModel::lastStep() const { return m_rows.empty() ? -1 : m_rows.back().step; }

int CheckpointsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int CheckpointsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CheckpointsModel::data(const QModelIndex& index, int role) const {
  const runtime::CheckpointInfo* c = info(index.row());
  if (!c) return {};
  if (role == PathRole) return QString::fromStdString(c->path);
  const QDateTime written = QDateTime::fromSecsSinceEpoch(epochSeconds(c->modified));
  if (role == ValueRole) {
    switch (index.column()) {
      case StepColumn: return QVariant::fromValue<qint64>(c->step);
      case SizeColumn: return QVariant::fromValue<qint64>(c->bytes);
      case WrittenColumn: return QVariant::fromValue<qint64>(epochSeconds(c->modified));
      case StatusColumn: return QString::fromStdString(c->error);
    }
    return {};
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case StepColumn: return QStringLiteral("step-%1.pt").arg(c->step);
      case SizeColumn: return formatFileSize(c->bytes);
      case WrittenColumn:  // the time alone today, else the day too
        return written.date() == QDate::currentDate() ? written.toString(QStringLiteral("HH:mm:ss"))
                                                      : written.toString(QStringLiteral("yyyy-MM-dd HH:mm"));
      case StatusColumn:
        if (!c->error.empty()) return QString::fromStdString(c->error);
        return tr("%1 · %2 parameters").arg(QString::fromStdString(c->optimizer)).arg(QLocale().toString(static_cast<qlonglong>(c->parameterElements)));
    }
    return {};
  }
  if (role == Qt::ToolTipRole) {
    if (!c->error.empty()) return QString::fromStdString(c->error);
    return tr("%1\nstep %2, optimizer %3 (%4 optimizer steps), %5 parameter tensors, %6 buffers")
        .arg(QDir::toNativeSeparators(QString::fromStdString(c->path)))
        .arg(c->iteration)
        .arg(QString::fromStdString(c->optimizer))
        .arg(c->optimizerSteps)
        .arg(c->parameters.size())
        .arg(c->buffers.size());
  }
  if (role == Qt::TextAlignmentRole && (index.column() == StepColumn || index.column() == SizeColumn))
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ForegroundRole && index.column() == StatusColumn && !c->error.empty())
    return QColor(0xb0, 0x1c, 0x1c);
  return {};
}

QVariant CheckpointsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case StepColumn: return tr("Checkpoint");
    case SizeColumn: return tr("Size");
    case WrittenColumn: return tr("Written");
    case StatusColumn: return tr("Holds");
  }
  return {};
}

QString formatFileSize(int64_t bytes) {
  if (bytes < 1024) return QObject::tr("%1 B").arg(bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return QStringLiteral("%1 %2").arg(v, 0, 'f', v < 10 ? 1 : 0).arg(QLatin1String(units[u]));
}

QString recordedCheckpointDir(const std::string& settingsJson) {
  const QJsonObject settings = QJsonDocument::fromJson(QByteArray::fromStdString(settingsJson)).object();
  const QJsonArray args = settings.value(QStringLiteral("worker_args")).toArray();
  QString dir;
  const QString flag = QStringLiteral("--checkpoint-dir");
  for (qsizetype i = 0; i < args.size(); ++i) {
    const QString a = args[i].toString();
    if (a == flag && i + 1 < args.size()) dir = args[i + 1].toString();
    else if (a.startsWith(flag + QLatin1Char('='))) dir = a.mid(flag.size() + 1);
  }
  if (dir.isEmpty() || QDir::isAbsolutePath(dir)) return QDir::cleanPath(dir);
  const QString plan = settings.value(QStringLiteral("plan")).toString();
  return QDir::cleanPath(QFileInfo(plan).absoluteDir().absoluteFilePath(dir));
}

ResumeSteps resumeSteps(int64_t checkpointStep, int64_t lastStep, int64_t warmup, int64_t steps) {
  if (lastStep <= checkpointStep) return {warmup, steps};
  const int64_t left = lastStep - checkpointStep;
  const int64_t w = std::clamp<int64_t>(warmup, 0, left - 1);
  return {w, left - w};
}

}  // namespace hap::studio
