#include "app/studio/widgets/chart_style.h"
#include "app/studio/widgets/baselines_view.h"

#include <QBoxLayout>
#include <QCursor>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QValueAxis>

#include <algorithm>

#include "app/studio/core/models/memory_model.h"
#include "app/studio/core/display/units.h"

namespace hap::studio {
namespace {

const QColor kPlanColour(0x2b, 0x6c, 0xb0);
const QColor kFitsColour(0xa9, 0xb8, 0xc8);
const QColor kMisfitColour(0xd9, 0x4b, 0x4b);

QFont smallFont(const QFont& base, double scale = 0.9) {
  QFont f = base;
  f.setPointSizeF(std::max(7.0, base.pointSizeF() * scale));
  return f;
}


}  // namespace

BaselinesView::BaselinesView(QWidget* parent) : QWidget(parent) {
  m_model = new BaselinesModel(this);

  m_headline = new QLabel(this);
  m_headline->setObjectName(QStringLiteral("baselinesHeadline"));
  m_headline->setTextFormat(Qt::RichText);
  m_headline->setWordWrap(true);

  m_table = new QTableView(this);
  m_table->setObjectName(QStringLiteral("baselinesTable"));
  m_table->setModel(m_model);
  m_table->setAlternatingRowColors(true);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setWordWrap(false);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 10);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->horizontalHeader()->setHighlightSections(false);

  m_open = new QPushButton(tr("&Open as Plan"), this);
  m_open->setObjectName(QStringLiteral("openBaseline"));
  m_open->setToolTip(tr("Plan the selected baseline on its own (hap plan --baseline NAME) to look at its program "
                        "and export it"));
  m_open->setEnabled(false);
  auto* hint = new QLabel(tr("Select a baseline, then open it as a plan (or double-click its row)."), this);
  hint->setObjectName(QStringLiteral("baselinesHint"));
  hint->setStyleSheet(QStringLiteral("color: gray;"));

  m_chartView = makeChartView(this, QStringLiteral("baselinesChart"));
  m_chartView->setMinimumHeight(160);

  auto* tableBox = new QWidget(this);
  auto* tableLayout = new QVBoxLayout(tableBox);
  tableLayout->setContentsMargins(0, 0, 0, 0);
  tableLayout->addWidget(m_table, 1);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(hint);
  buttons->addStretch(1);
  buttons->addWidget(m_open);
  tableLayout->addLayout(buttons);

  auto* split = m_split = new QSplitter(Qt::Vertical, this);
  split->addWidget(tableBox);
  split->addWidget(m_chartView);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({260, 380});
  split->setChildrenCollapsible(false);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(m_headline);
  layout->addWidget(split, 1);

  // A click moves the current row before it selects it: follow both.
  connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] { updateButton(); });
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] { updateButton(); });
  connect(m_table, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    if (index.isValid()) openRow(index.row());
  });
  connect(m_open, &QPushButton::clicked, this, [this] { openRow(openableRow()); });
  clear();
}

QChart* BaselinesView::chart() const { return m_chartView->chart(); }

void BaselinesView::clear() { setPlan(nullptr); }

void BaselinesView::setPlan(std::shared_ptr<const PlanDocument> plan) {
  m_plan = std::move(plan);
  m_model->setPlan(m_plan);
  m_table->resizeColumnsToContents();
  for (int c = 0; c < BaselinesModel::NoteColumn; ++c)
    m_table->setColumnWidth(c, m_table->columnWidth(c) + 16);

  if (!m_plan) {
    m_headline->setText(tr("<i>No plan: plan the model to compare it with the baselines.</i>"));
  } else {
    const plan::Plan& p = m_plan->p();
    const QString self = BaselinesModel::displayName(p.strategy);
    QString line = tr("<b>%1</b>: %2 per iteration, %3 at most per device")
                       .arg(self, formatMilliseconds(p.estimate.iterationSeconds), MemoryModel::formatBytes(p.estimate.maxMemoryBytes()));
    if (!p.estimate.fits)
      line += QStringLiteral(" <span style=\"color:%1\"><b>(%2)</b></span>")
                  .arg(MemoryModel::overCapacityForeground().name(), tr("does not fit"));
    line += QStringLiteral(". ");
    int best = -1;
    for (int row = 1; row < m_model->rowCount(); ++row) {
      const plan::Estimate* e = m_model->estimate(row);
      if (m_model->applicable(row) && e->fits &&
          (best < 0 || e->iterationSeconds < m_model->estimate(best)->iterationSeconds))
        best = row;
    }
    if (p.baselines.empty()) {
      line += tr("No baselines were priced for this plan.");
    } else if (best < 0) {
      line += tr("No baseline fits in memory.");
    } else {
      const double t = m_model->estimate(best)->iterationSeconds;
      const QString name = m_model->index(best, BaselinesModel::NameColumn).data().toString();
      line += t >= p.estimate.iterationSeconds
                  ? tr("<b>%1× faster</b> than the best baseline that fits (%2, %3).")
                        .arg(t / p.estimate.iterationSeconds, 0, 'f', 2)
                        .arg(name, formatMilliseconds(t))
                  : tr("The best baseline that fits, %1 (%2), is %3× faster.")
                        .arg(name, formatMilliseconds(t))
                        .arg(p.estimate.iterationSeconds / t, 0, 'f', 2);
    }
    m_headline->setText(line);
  }
  rebuildChart();
  updateButton();
  // The table gets the height of its rows and the button, the chart the rest.
  const int rows = std::max(m_model->rowCount(), 2);
  const int h = m_table->horizontalHeader()->sizeHint().height() + rows * m_table->verticalHeader()->defaultSectionSize() +
                2 * m_table->frameWidth() + m_open->sizeHint().height() + 12;
  const int total = std::max(m_split->height(), 600);
  m_split->setSizes({h, std::max(total - h, 200)});
}

int BaselinesView::openableRow() const {
  const QModelIndex current = m_table->selectionModel()->currentIndex();
  if (!current.isValid() || !m_table->selectionModel()->isRowSelected(current.row(), {})) return -1;
  return m_model->openable(current.row()) ? current.row() : -1;
}

void BaselinesView::updateButton() {
  const int row = openableRow();
  m_open->setEnabled(row > 0);
  m_open->setToolTip(row > 0 ? tr("Plan %1 on its own (hap plan --baseline %2) to look at its program and export it")
                                   .arg(m_model->index(row, BaselinesModel::NameColumn).data().toString(),
                                        m_model->baselineName(row))
                             : tr("Select an applicable baseline to plan it on its own (hap plan --baseline NAME)"));
}

void BaselinesView::openRow(int row) {
  if (!m_model->openable(row)) return;
  Q_EMIT openBaselineRequested(m_model->baselineName(row));
}

void BaselinesView::rebuildChart() {
  QChart* c = chart();
  emptyChart(c);
  m_series = nullptr;
  m_chartRows.clear();
  if (!m_plan) {
    c->setTitle(QString());
    return;
  }
  c->setTitle(tr("Predicted iteration time (shorter is better)"));
  // Table order from the top: a horizontal chart draws category 0 at the bottom.
  for (int row = m_model->rowCount() - 1; row >= 0; --row)
    if (m_model->applicable(row)) m_chartRows.push_back(row);

  const QString self = BaselinesModel::displayName(m_plan->p().strategy);
  auto* plan = new QBarSet(self);
  auto* fits = new QBarSet(tr("baseline"));
  auto* misfits = new QBarSet(tr("does not fit in memory"));
  plan->setColor(kPlanColour);
  fits->setColor(kFitsColour);
  misfits->setColor(kMisfitColour);
  // Labels sit past the bar's end (a short bar has no room inside).
  for (QBarSet* set : {plan, fits, misfits}) set->setLabelColor(QColor(0x20, 0x20, 0x20));
  QStringList categories;
  double longest = 0;
  for (int row : m_chartRows) {
    const plan::Estimate& e = *m_model->estimate(row);
    const double t = e.iterationSeconds * 1e3;
    longest = std::max(longest, t);
    plan->append(row == 0 ? t : 0.0);
    fits->append(row != 0 && e.fits ? t : 0.0);
    misfits->append(row != 0 && !e.fits ? t : 0.0);
    QString label = m_model->index(row, BaselinesModel::NameColumn).data().toString();
    if (row != 0) label += QStringLiteral("  (%1)").arg(m_model->index(row, BaselinesModel::SpeedupColumn).data().toString());
    categories << label;
  }
  auto* series = new QHorizontalStackedBarSeries;
  series->append(plan);
  series->append(fits);
  series->append(misfits);
  series->setBarWidth(0.6);
  series->setLabelsVisible(true);
  series->setLabelsFormat(QStringLiteral("@value ms"));
  series->setLabelsPrecision(4);
  series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
  c->addSeries(series);
  auto* axisY = new QBarCategoryAxis;
  axisY->append(categories);
  axisY->setGridLineVisible(false);
  axisY->setLabelsFont(smallFont(font()));
  c->addAxis(axisY, Qt::AlignLeft);
  series->attachAxis(axisY);
  auto* axisX = new QValueAxis;
  axisX->setRange(0, longest > 0 ? longest * 1.15 : 1);  // room for the longest bar's label
  axisX->applyNiceNumbers();
  axisX->setLabelFormat(QStringLiteral("%.4g"));
  axisX->setTitleText(tr("ms per iteration"));
  axisX->setLabelsFont(smallFont(font()));
  c->addAxis(axisX, Qt::AlignBottom);
  series->attachAxis(axisX);
  c->legend()->setVisible(true);
  c->legend()->setFont(smallFont(font()));
  bool anyMisfit = false;
  for (int i = 0; i < misfits->count(); ++i) anyMisfit = anyMisfit || misfits->at(i) > 0;
  for (QLegendMarker* marker : c->legend()->markers(series))
    if (marker->label() == misfits->label()) marker->setVisible(anyMisfit);
  m_series = series;

  connect(series, &QAbstractBarSeries::clicked, this, [this](int index, QBarSet*) {
    if (index < 0 || index >= static_cast<int>(m_chartRows.size())) return;
    m_table->selectRow(m_chartRows[static_cast<size_t>(index)]);
  });
  connect(series, &QAbstractBarSeries::hovered, this, [this, series](bool status, int index, QBarSet*) {
    if (!status || series != m_series || index < 0 || index >= static_cast<int>(m_chartRows.size())) {
      QToolTip::hideText();
      return;
    }
    const int row = m_chartRows[static_cast<size_t>(index)];
    auto cell = [&](int column) { return m_model->index(row, column).data().toString(); };
    QToolTip::showText(QCursor::pos(), tr("%1: %2, %3 at most per device, fits: %4\n%5")
                                           .arg(cell(BaselinesModel::NameColumn), cell(BaselinesModel::TimeColumn),
                                                cell(BaselinesModel::MemoryColumn), cell(BaselinesModel::FitsColumn),
                                                cell(BaselinesModel::NoteColumn)));
  });
}

}  // namespace hap::studio
