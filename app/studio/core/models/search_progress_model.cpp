#include "app/studio/core/models/search_progress_model.h"

#include <QBrush>
#include <QColor>
#include <QLocale>

#include <cmath>

#include "app/studio/core/display/units.h"

namespace hap::studio {
namespace {

QString count(int64_t n) { return QLocale().toString(static_cast<qlonglong>(n)); }

}  // namespace

// --- OpenStatesModel ---

void OpenStatesModel::setStates(std::vector<synth::OpenState> states, int nodes,
                                std::shared_ptr<const SearchGraphNames> names) {
  const int before = static_cast<int>(m_states.size()), after = static_cast<int>(states.size());
  // Rows are replaced in place (the table keeps its scroll position and selection row).
  if (after < before) {
    beginRemoveRows({}, after, before - 1);
    m_states.resize(static_cast<size_t>(after));
    endRemoveRows();
  } else if (after > before) {
    beginInsertRows({}, before, after - 1);
    m_states.resize(static_cast<size_t>(after));
    endInsertRows();
  }
  m_states = std::move(states);
  m_nodes = nodes;
  m_names = std::move(names);
  if (after > 0) Q_EMIT dataChanged(index(0, 0), index(after - 1, ColumnCount - 1));
}

void OpenStatesModel::clear() {
  beginResetModel();
  m_states.clear();
  m_names.reset();
  endResetModel();
}

std::vector<std::string> OpenStatesModel::partialVariants(int row, size_t importedNodes) const {
  if (!m_names || row < 0 || row >= rowCount()) return {};
  return m_names->variantsByImportedNode(state(row).partial, importedNodes);
}

int OpenStatesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_states.size());
}
int OpenStatesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant OpenStatesModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const synth::OpenState& s = state(index.row());
  if (role == Qt::UserRole) {
    switch (index.column()) {
      case G: return s.g;
      case H: return s.h;
      case F: return s.f();
      case Depth: return s.depth;
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() != Choices)
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  switch (index.column()) {
    case G: return formatMilliseconds(s.g);
    case H: return formatMilliseconds(s.h);
    case F: return formatMilliseconds(s.f());
    case Depth:
      return m_nodes > 0 ? QStringLiteral("%1 / %2 (%3%)").arg(s.depth).arg(m_nodes).arg(100 * s.depth / m_nodes)
                         : QString::number(s.depth);
    case Choices: {
      if (!m_names) return {};
      const int shown = role == Qt::ToolTipRole ? 24 : 6;
      return QString::fromStdString(m_names->lastChoices(s.partial, shown));
    }
    default: return {};
  }
}

QVariant OpenStatesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case G: return tr("The cost of the nodes decided so far");
      case H: return tr("A lower bound on the cost of the rest of the graph");
      case F: return tr("g + h: a lower bound on any program completing this state");
      case Depth: return tr("Nodes decided, of the searched graph's");
      case Choices: return tr("The rule variants of the last nodes decided (hover a cell for more)");
      default: return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case G: return tr("g");
    case H: return tr("h");
    case F: return tr("f = g + h");
    case Depth: return tr("Depth");
    case Choices: return tr("Latest variants chosen");
    default: return {};
  }
}

// --- PlanningLogModel ---

void PlanningLogModel::add(const std::vector<PlanningEvent>& events) {
  for (const PlanningEvent& e : events) {
    switch (e.kind) {
      case PlanningEvent::Kind::StepStarted: {
        const int row = static_cast<int>(m_rows.size());
        beginInsertRows({}, row, row);
        m_rows.push_back({e.seconds, -1, e.name, -1, true, false, {}});
        endInsertRows();
        break;
      }
      case PlanningEvent::Kind::StepFinished:
      case PlanningEvent::Kind::BeamFallback:
      case PlanningEvent::Kind::SearchFinished: {
        // The newest running row of that name (further starts run side by side).
        for (int row = static_cast<int>(m_rows.size()) - 1; row >= 0; --row) {
          Row& r = m_rows[static_cast<size_t>(row)];
          if (r.name != e.name || (e.kind == PlanningEvent::Kind::StepFinished && r.finished >= 0)) continue;
          if (e.kind == PlanningEvent::Kind::StepFinished) {
            r.finished = e.seconds;
            r.cost = e.cost;
            r.fits = e.fits;
            r.adopted = e.adopted;
          } else if (!e.text.empty()) {
            r.note = r.note.empty() ? e.text : r.note + "; " + e.text;
          }
          Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
          break;
        }
        break;
      }
      case PlanningEvent::Kind::SearchStarted: break;
    }
  }
}

void PlanningLogModel::clear() {
  beginResetModel();
  m_rows.clear();
  endResetModel();
}

int PlanningLogModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}
int PlanningLogModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PlanningLogModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Row& r = m_rows[static_cast<size_t>(index.row())];
  if (role == Qt::UserRole) {
    switch (index.column()) {
      case Time: return r.started;
      case Cost: return r.cost;
      default: return {};
    }
  }
  if (role == Qt::ForegroundRole && index.column() == Fits && r.finished >= 0 && !r.fits)
    return QBrush(QColor(0xc6, 0x28, 0x28));
  if (role == Qt::ToolTipRole && !r.note.empty()) return QString::fromStdString(r.note);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case Time:
      return r.finished < 0 ? QStringLiteral("%1 s …").arg(r.started, 0, 'f', 2)
                            : QStringLiteral("%1 s (%2)").arg(r.started, 0, 'f', 2).arg(formatMilliseconds(r.finished - r.started));
    case Step: return QString::fromStdString(r.name);
    case Cost: return r.finished < 0 ? QString() : formatMilliseconds(r.cost);
    case Fits: return r.finished < 0 || r.cost < 0 ? QString() : r.fits ? tr("fits") : tr("does not fit");
    case Outcome: {
      QString text = r.finished < 0 ? tr("running") : r.adopted ? tr("adopted") : QString();
      if (r.finished >= 0 && !r.adopted && r.cost >= 0 && r.name.rfind("baseline", 0) != 0) text = tr("no better");
      if (r.finished >= 0 && r.cost < 0) text = (r.name == "lp" || r.name == "milp") ? tr("no feasible ratios") : tr("not applicable");
      if (!r.note.empty()) text += (text.isEmpty() ? QString() : QStringLiteral(" · ")) + QString::fromStdString(r.note);
      return text;
    }
    default: return {};
  }
}

QVariant PlanningLogModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Time: return tr("Started (took)");
    case Step: return tr("Step");
    case Cost: return tr("Iteration time after");
    case Fits: return tr("Memory");
    case Outcome: return tr("Outcome");
    default: return {};
  }
}

// --- SearchProgressModel ---

SearchProgressModel::SearchProgressModel(QObject* parent) : QObject(parent), m_open(this), m_log(this) {}

void SearchProgressModel::reset() {
  m_samples.clear();
  ++m_generation;
  m_open.clear();
  m_log.clear();
  m_latest.reset();
  m_names.reset();
  m_searches = 0;
  m_expanded = m_finishedExpanded = 0;
  m_beam = false;
  m_beamNote.clear();
  m_step.clear();
  m_running = true;
  Q_EMIT changed();
}

void SearchProgressModel::add(const SearchSnapshot& s) {
  for (const SearchSample& sample : s.samples) {
    if (m_samples.size() >= m_maxPoints) {
      size_t kept = 0;
      for (size_t i = 0; i < m_samples.size(); i += 2) m_samples[kept++] = m_samples[i];
      m_samples.resize(kept);
      ++m_generation;
    }
    m_samples.push_back(sample);
  }
  int64_t running = m_latest ? m_latest->expanded : 0;
  for (const PlanningEvent& e : s.events) {
    switch (e.kind) {
      case PlanningEvent::Kind::SearchStarted:
        ++m_searches;
        running = 0;
        m_latest.reset();
        m_open.clear();  // the previous search's states
        break;
      case PlanningEvent::Kind::SearchFinished:
        m_finishedExpanded += e.expanded;
        running = 0;
        break;
      case PlanningEvent::Kind::BeamFallback:
        m_beam = true;
        m_beamNote = QString::fromStdString(e.text);
        break;
      case PlanningEvent::Kind::StepStarted: m_step = e.name; break;
      case PlanningEvent::Kind::StepFinished: break;
    }
  }
  m_log.add(s.events);
  if (s.latest) {
    m_latest = s.latest;
    m_names = s.names;
    running = s.latest->expanded;
    // Open states come with some reports only (SearchEventThrottle::Options::openStatesSeconds).
    if (!s.latest->open.empty()) m_open.setStates(s.latest->open, s.latest->nodes, s.names);
  }
  m_expanded = m_finishedExpanded + running;
  Q_EMIT changed();
}

QString SearchProgressModel::statusText() const {
  if (!m_latest) return m_step.empty() ? QString() : tr("Planning: %1").arg(QString::fromStdString(m_step));
  const synth::SearchProgress& p = *m_latest;
  QString text = tr("%1: %2 states expanded, %3 open, bound %4, best %5, at node %6 of %7")
                     .arg(QString::fromStdString(m_step.empty() ? std::string("search") : m_step), count(p.expanded),
                          count(p.frontier), formatMilliseconds(p.boundSeconds), formatMilliseconds(p.bestSeconds))
                     .arg(p.depth)
                     .arg(p.nodes);
  if (p.beam) text += tr(" (beam search)");
  return text;
}

}  // namespace hap::studio
