#include "app/studio/widgets/search_view.h"

#include <QChart>
#include <QChartView>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QLocale>
#include <QSplitter>
#include <QTableView>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "app/studio/core/models/search_progress_model.h"
#include "app/studio/widgets/chart_style.h"

namespace hap::studio {
namespace {

QLineSeries* addSeries(QChart* chart, const QString& name, const QColor& colour, QValueAxis* x, QValueAxis* y) {
  auto* s = new QLineSeries(chart);
  s->setName(name);
  QPen pen(colour);
  pen.setWidthF(2);
  s->setPen(pen);
  // A fast search reports a handful of times: its samples show as points, not only as a line.
  s->setPointsVisible(true);
  chart->addSeries(s);
  s->attachAxis(x);
  s->attachAxis(y);
  return s;
}

QChartView* makeChart(const QString& title, QValueAxis*& x, QValueAxis*& y, const QString& yTitle) {
  auto* chart = new QChart;
  chart->setTitle(title);
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->setAnimationOptions(QChart::NoAnimation);  // a live chart redrawn ten times a second
  x = new QValueAxis(chart);
  x->setTitleText(QObject::tr("seconds"));
  x->setLabelFormat("%.1f");
  y = new QValueAxis(chart);
  y->setTitleText(yTitle);
  y->setLabelFormat("%.3g");
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  chart->legend()->setShowToolTips(true);
  auto* view = new QChartView(chart);
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumHeight(160);
  fitChartView(view);  // ticks at round values written exactly (0.25, not 0.3), titles that fit
  return view;
}

// A round upper bound for an axis: 1, 2 or 5 × 10^k, at least `value`.
double niceCeiling(double value) {
  if (!(value > 0)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(value)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= value) return m * p;
  return 10 * p;
}

}  // namespace

SearchView::SearchView(SearchProgressModel* model, QWidget* parent) : QWidget(parent), m_model(model) {
  m_status = new QLabel(tr("Plan the model (Plan ▸ Plan, Ctrl+R) to watch the search here."), this);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_outcome = new QLabel(this);
  m_outcome->setWordWrap(true);
  m_outcome->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_outcome->hide();

  m_statesChart = makeChart(tr("Search effort"), m_statesTime, m_statesCount, tr("states"));
  m_expanded = addSeries(m_statesChart->chart(), tr("states expanded"), QColor(0x1f, 0x77, 0xb4), m_statesTime,
                         m_statesCount);
  m_frontier = addSeries(m_statesChart->chart(), tr("open set"), QColor(0xff, 0x7f, 0x0e), m_statesTime, m_statesCount);
  m_costChart = makeChart(tr("Cost bounds"), m_costTime, m_costMs, tr("ms per iteration"));
  m_bound = addSeries(m_costChart->chart(), tr("best f-bound"), QColor(0x2c, 0xa0, 0x2c), m_costTime, m_costMs);
  m_best = addSeries(m_costChart->chart(), tr("best complete cost"), QColor(0xd6, 0x27, 0x28), m_costTime, m_costMs);

  m_open = new QTableView(this);
  m_open->setModel(model->openStates());
  m_open->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_open->setSelectionMode(QAbstractItemView::SingleSelection);
  m_open->verticalHeader()->hide();
  m_open->horizontalHeader()->setStretchLastSection(true);
  m_open->setToolTip(tr("The best states waiting in the A* open set, lowest f first. Click one to colour the "
                        "graph by its partial program."));
  m_log = new QTableView(this);
  m_log->setModel(model->log());
  m_log->verticalHeader()->hide();
  m_log->horizontalHeader()->setStretchLastSection(true);
  // Columns as wide as their header and cells (a handful of rows: one per search, LP and baseline).
  m_log->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_log->setSelectionBehavior(QAbstractItemView::SelectRows);

  auto* charts = new QSplitter(Qt::Horizontal);
  charts->addWidget(m_statesChart);
  charts->addWidget(m_costChart);
  charts->addWidget(m_log);
  m_statesChart->setMinimumWidth(220);
  m_costChart->setMinimumWidth(220);
  charts->setSizes({420, 420, 560});
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(charts);
  split->addWidget(m_open);
  split->setSizes({300, 160});

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(m_status);
  layout->addWidget(m_outcome);
  layout->addWidget(split, 1);

  connect(model, &SearchProgressModel::changed, this, &SearchView::refresh);
  connect(m_open, &QTableView::clicked, this, &SearchView::onOpenStateClicked);
}

QString SearchView::statusText() const { return m_status->text(); }
QString SearchView::outcomeText() const { return m_outcome->isHidden() ? QString() : m_outcome->text(); }

void SearchView::refresh() {
  const std::vector<SearchSample>& samples = m_model->samples();
  if (m_generation != m_model->generation() || m_drawn > samples.size()) {
    // Reset or halved: redraw from the model's samples.
    m_expanded->clear();
    m_frontier->clear();
    m_bound->clear();
    m_best->clear();
    m_drawn = 0;
    m_maxSeconds = m_maxCount = m_maxMs = 0;
    m_generation = m_model->generation();
    m_outcome->hide();
  }
  QList<QPointF> expanded, frontier, bound, best;
  for (size_t i = m_drawn; i < samples.size(); ++i) {
    const SearchSample& s = samples[i];
    expanded.append({s.seconds, static_cast<double>(s.expanded)});
    frontier.append({s.seconds, static_cast<double>(s.frontier)});
    // A state without a completion has an infinite bound: not a point (Qt Charts would spend
    // hundreds of milliseconds clipping it).
    if (std::isfinite(s.bound)) bound.append({s.seconds, s.bound * 1e3});
    if (s.best >= 0 && std::isfinite(s.best)) best.append({s.seconds, s.best * 1e3});
    m_maxSeconds = std::max(m_maxSeconds, s.seconds);
    m_maxCount = std::max({m_maxCount, static_cast<double>(s.expanded), static_cast<double>(s.frontier)});
    if (std::isfinite(s.bound)) m_maxMs = std::max(m_maxMs, s.bound * 1e3);
    if (std::isfinite(s.best)) m_maxMs = std::max(m_maxMs, s.best * 1e3);
  }
  m_drawn = samples.size();
  if (!expanded.isEmpty()) {
    m_expanded->append(expanded);
    m_frontier->append(frontier);
    if (!bound.isEmpty()) m_bound->append(bound);
    if (!best.isEmpty()) m_best->append(best);
  }
  setAxisRange(m_statesTime, 0, std::max(0.5, m_maxSeconds * 1.02));
  setAxisRange(m_costTime, 0, std::max(0.5, m_maxSeconds * 1.02));
  setAxisRange(m_statesCount, 0, niceCeiling(m_maxCount));
  setAxisRange(m_costMs, 0, niceCeiling(m_maxMs));
  const QString status = m_model->statusText();
  if (!status.isEmpty()) m_status->setText(status);
  if (m_open->columnWidth(OpenStatesModel::Choices) < 50) m_open->resizeColumnsToContents();
  m_log->resizeColumnToContents(PlanningLogModel::Time);
  m_log->resizeColumnToContents(PlanningLogModel::Step);
}

void SearchView::setOutcome(std::shared_ptr<const PlanDocument> doc, const QString& message) {
  QString text;
  if (doc) {
    const plan::Plan& p = doc->p();
    const int searches = m_model->searches();
    text = tr("Planned: %1 reported, %2 states expanded in them; the plan's program: %3 states expanded in %4 s, %5.")
               .arg(searches == 1 ? tr("1 search") : tr("%1 searches").arg(searches))
               .arg(QLocale().toString(static_cast<qlonglong>(m_model->expanded())))
               .arg(QLocale().toString(static_cast<qlonglong>(p.expanded)))
               .arg(p.searchSeconds, 0, 'f', 2)
               .arg(p.provenOptimal ? tr("proven optimal under the cost model")
                                    : tr("not proven optimal: %1").arg(QString::fromStdString(p.notOptimal)));
    // HAP chose a baseline's program within the cost model's error (Plan::choice).
    if (!p.choice.empty()) text += QLatin1Char(' ') + tr("Chosen: %1.").arg(QString::fromStdString(p.choice));
    m_status->setText(tr("Done: %1 ms per iteration predicted").arg(p.estimate.iterationSeconds * 1e3, 0, 'f', 3));
  } else {
    text = message;
    m_status->setText(message);
  }
  m_outcome->setText(text);
  m_outcome->setVisible(!text.isEmpty());
}

void SearchView::onOpenStateClicked() {
  const QModelIndexList rows = m_open->selectionModel()->selectedRows();
  if (rows.isEmpty()) {
    Q_EMIT partialProgramSelected({});
    return;
  }
  Q_EMIT partialProgramSelected(m_model->openStates()->partialVariants(rows.front().row(), m_importedNodes));
}

}  // namespace hap::studio
