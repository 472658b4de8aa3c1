#include "app/studio/core/models/tune_rounds_model.h"

#include <QFont>
#include <QObject>

#include <algorithm>
#include <cmath>

namespace hap::studio {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

// "+12.3%" / "−4.0%" / "0.0%"; "—" without a measurement.
QString signedPercent(const tune::TuneRun& run) {
  if (!(run.measuredSeconds > 0)) return QStringLiteral("—");
  const double p = run.error() * 100;
  if (std::abs(p) < 0.05) return QStringLiteral("0.0%");
  return QStringLiteral("%1%2%")
      .arg(p > 0 ? QStringLiteral("+") : QStringLiteral("−"))
      .arg(std::abs(p), 0, 'f', 1);
}

}  // namespace

TuneRoundsModel::TuneRoundsModel(QObject* parent) : QAbstractTableModel(parent) {}

QString TuneRoundsModel::milliseconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("—");
  return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', 2);
}

void TuneRoundsModel::clear() {
  beginResetModel();
  m_runs.clear();
  m_chosenRun = 0;
  m_hasResult = false;
  endResetModel();
}

void TuneRoundsModel::addRun(const tune::TuneRun& run) {
  const int row = rowCount();
  beginInsertRows({}, row, row);
  m_runs.push_back(run);
  endInsertRows();
}

void TuneRoundsModel::setResult(const tune::TuneResult& result) {
  std::vector<tune::TuneRun> all;
  for (const tune::TuneRound& round : result.rounds)
    all.insert(all.end(), round.runs.begin(), round.runs.end());
  const bool same =
      all.size() == m_runs.size() &&
      std::equal(all.begin(), all.end(), m_runs.begin(),
                 [](const tune::TuneRun& a, const tune::TuneRun& b) {
                   return a.round == b.round && a.strategy == b.strategy && a.runId == b.runId;
                 });
  if (!same) {
    beginResetModel();
    m_runs = std::move(all);
    m_chosenRun = result.chosen.runId;
    m_hasResult = true;
    endResetModel();
    return;
  }
  m_chosenRun = result.chosen.runId;
  m_hasResult = true;
  if (!m_runs.empty())
    Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1),
                       {Qt::DisplayRole, Qt::FontRole, Qt::ToolTipRole});
}

bool TuneRoundsModel::isChosen(int row) const {
  return m_hasResult && row >= 0 && row < rowCount() && m_chosenRun != 0 &&
         run(row).runId == m_chosenRun;
}

int TuneRoundsModel::chosenRow() const {
  for (int r = 0; r < rowCount(); ++r)
    if (isChosen(r) && !run(r).reused) return r;
  return -1;
}

int TuneRoundsModel::rounds() const {
  int n = 0;
  for (const tune::TuneRun& r : m_runs) n = std::max(n, r.round);
  return n;
}

int TuneRoundsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_runs.size());
}

int TuneRoundsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant TuneRoundsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const tune::TuneRun& r = run(index.row());
  const bool chosen = isChosen(index.row());
  const int column = index.column();
  if (role == Qt::TextAlignmentRole) {
    const bool number = column == RoundColumn || column == PredictedColumn ||
                        column == MeasuredColumn || column == ErrorColumn;
    return number ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                  : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
  }
  if (role == Qt::FontRole) {
    if (!chosen) return {};
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::ToolTipRole) {
    switch (column) {
      case PlanColumn:
        return QObject::tr("%1's plan, written to %2").arg(qs(r.strategy), qs(r.planPath));
      case ProfileColumn:
        return QObject::tr("The profile version the round planned and predicted under");
      case MeasuredColumn:
        return QObject::tr(
                   "Mean over %1 measured steps of the slowest rank's step time, ± its standard "
                   "deviation "
                   "(run %2 in the store)")
            .arg(r.measuredSteps)
            .arg(r.runId);
      case ErrorColumn:
        return QObject::tr("Predicted / measured − 1");
      case NoteColumn: {
        QStringList why;
        if (r.reused)
          why << QObject::tr(
                     "The same program as %1's plan of round %2: not run again, its measurement "
                     "reused")
                     .arg(qs(r.sameAs))
                     .arg(r.reused);
        if (chosen)
          why << QObject::tr(
              "The plan measured fastest of everything the loop ran: the tuned plan");
        return why.isEmpty() ? QVariant() : QVariant(why.join(QLatin1Char('\n')));
      }
      default:
        return {};
    }
  }
  const bool display = role == Qt::DisplayRole;
  if (!display && role != ValueRole) return {};
  switch (column) {
    case RoundColumn:
      return display ? QVariant(QString::number(r.round)) : QVariant(r.round);
    case PlanColumn:
      return qs(r.strategy);
    case ProfileColumn:
      return qs(r.profile);
    case PredictedColumn:
      return display ? QVariant(milliseconds(r.predictedSeconds)) : QVariant(r.predictedSeconds);
    case MeasuredColumn:
      return display ? QVariant(QStringLiteral("%1 ± %2 ms")
                                    .arg(r.measuredSeconds * 1e3, 0, 'f', 2)
                                    .arg(r.spreadSeconds * 1e3, 0, 'f', 2))
                     : QVariant(r.measuredSeconds);
    case ErrorColumn:
      return display ? QVariant(signedPercent(r)) : QVariant(r.error());
    case NoteColumn: {
      QString note;
      if (r.reused) note = QObject::tr("= round %1 %2").arg(r.reused).arg(qs(r.sameAs));
      if (chosen)
        note = note.isEmpty() ? QObject::tr("chosen") : QObject::tr("%1, chosen").arg(note);
      return note;
    }
    default:
      return {};
  }
}

QVariant TuneRoundsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  if (role == Qt::TextAlignmentRole)
    return section == PlanColumn || section == ProfileColumn || section == NoteColumn
               ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
               : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case RoundColumn:
      return QObject::tr("Round");
    case PlanColumn:
      return QObject::tr("Plan");
    case ProfileColumn:
      return QObject::tr("Priced under");
    case PredictedColumn:
      return QObject::tr("Predicted");
    case MeasuredColumn:
      return QObject::tr("Measured (mean ± sd)");
    case ErrorColumn:
      return QObject::tr("Error");
    case NoteColumn:
      return QObject::tr("Note");
    default:
      return {};
  }
}

}  // namespace hap::studio
