#include "app/studio/widgets/ratios_view.h"

#include <QBoxLayout>
#include <QCheckBox>
#include <QCursor>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QStyle>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QToolTip>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "app/studio/core/models/ratios_summary.h"
#include "app/studio/widgets/chart_style.h"

namespace hap::studio {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// A qualitative palette without red (red means "does not fit" in this view).
QColor typeColour(int type) {
  static const QColor palette[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0x59, 0xa1, 0x4f),
                                   QColor(0xb0, 0x7a, 0xa1), QColor(0x76, 0xb7, 0xb2), QColor(0xed, 0xc9, 0x48),
                                   QColor(0x9c, 0x75, 0x5f), QColor(0xba, 0xb0, 0xac)};
  return palette[type % 8];
}

// Neighbouring devices of one type alternate between three shades of the type's colour.
QColor deviceColour(int type, int indexInType) {
  const int shade = indexInType % 3;
  const QColor base = typeColour(type);
  return shade == 0 ? base : shade == 1 ? base.lighter(135) : base.darker(125);
}

QColor textOn(const QColor& fill) { return fill.lightnessF() > 0.6 ? QColor(0x20, 0x20, 0x20) : QColor(Qt::white); }

QTableView* makeTable(QWidget* parent, const QString& name) {
  auto* table = new QTableView(parent);
  table->setObjectName(name);
  table->setAlternatingRowColors(true);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->verticalHeader()->hide();
  table->verticalHeader()->setDefaultSectionSize(table->fontMetrics().height() + 8);
  table->horizontalHeader()->setHighlightSections(false);
  table->setWordWrap(false);
  return table;
}

QFont smallFont(const QFont& base, double scale = 0.9) {
  QFont f = base;
  f.setPointSizeF(std::max(7.0, base.pointSizeF() * scale));
  return f;
}

}  // namespace

RatiosView::RatiosView(QWidget* parent) : QWidget(parent) {
  m_ratios = new RatiosModel(this);
  m_memory = new MemoryModel(this);

  m_headline = new QLabel(this);
  m_headline->setObjectName(QStringLiteral("ratiosHeadline"));
  m_headline->setTextFormat(Qt::RichText);
  m_headline->setWordWrap(true);

  m_pages = new QTabWidget(this);
  m_pages->setObjectName(QStringLiteral("ratiosPages"));
  m_pages->setDocumentMode(true);

  // Shares page.
  auto* shares = new QWidget(m_pages);
  m_groupShares = new QCheckBox(tr("&Group equal devices"), shares);
  m_groupShares->setObjectName(QStringLiteral("groupShares"));
  m_groupShares->setToolTip(tr("One bar section and one column per device group (devices of one type that take "
                               "the same share of every segment) instead of one per device"));
  m_ratiosView = makeChartView(shares, QStringLiteral("ratiosChart"));
  m_historyView = makeChartView(shares, QStringLiteral("historyChart"));
  m_historyView->setMinimumWidth(240);
  m_historyText = new QLabel(shares);
  m_historyText->setObjectName(QStringLiteral("historyText"));
  m_historyText->setWordWrap(true);
  m_historyText->setTextFormat(Qt::RichText);
  m_historyText->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_balanceNote = new QLabel(shares);
  m_balanceNote->setObjectName(QStringLiteral("balanceNote"));
  m_balanceNote->setWordWrap(true);
  m_balanceNote->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_balanceNote->setStyleSheet(QStringLiteral("QLabel { background: #fff4ce; border: 1px solid #e0c97a; "
                                              "border-radius: 3px; padding: 4px; color: #5a4500; }"));
  m_balanceNote->hide();
  m_ratiosTable = makeTable(shares, QStringLiteral("ratiosTable"));
  m_ratiosTable->setModel(m_ratios);

  auto* historyBox = new QWidget(shares);
  auto* historyLayout = new QVBoxLayout(historyBox);
  historyLayout->setContentsMargins(0, 0, 0, 0);
  historyLayout->addWidget(m_historyView, 1);
  historyLayout->addWidget(m_historyText);
  historyLayout->addWidget(m_balanceNote);
  auto* chartsSplit = new QSplitter(Qt::Horizontal, shares);
  chartsSplit->addWidget(m_ratiosView);
  chartsSplit->addWidget(historyBox);
  chartsSplit->setStretchFactor(0, 3);
  chartsSplit->setStretchFactor(1, 1);
  chartsSplit->setSizes({800, 330});
  chartsSplit->setChildrenCollapsible(false);
  auto* sharesSplit = m_sharesSplit = new QSplitter(Qt::Vertical, shares);
  sharesSplit->addWidget(chartsSplit);
  sharesSplit->addWidget(m_ratiosTable);
  sharesSplit->setStretchFactor(0, 3);
  sharesSplit->setStretchFactor(1, 0);
  sharesSplit->setSizes({400, 200});
  sharesSplit->setChildrenCollapsible(false);
  auto* sharesLayout = new QVBoxLayout(shares);
  sharesLayout->setContentsMargins(4, 4, 4, 4);
  sharesLayout->addWidget(sharesSplit, 1);
  m_pages->addTab(shares, tr("Shares per segment"));

  // Memory page.
  auto* memory = new QWidget(m_pages);
  m_groupMemory = new QCheckBox(tr("G&roup identical devices"), memory);
  m_groupMemory->setObjectName(QStringLiteral("groupMemory"));
  m_groupMemory->setToolTip(tr("One bar per group of devices with the same type, capacity and predicted memory"));
  m_scaleToCapacity = new QCheckBox(tr("&Scale to capacity"), memory);
  m_scaleToCapacity->setObjectName(QStringLiteral("scaleToCapacity"));
  m_scaleToCapacity->setToolTip(tr("Extend the memory axis to the devices' capacity, so that the capacity line shows"));
  m_memoryView = makeChartView(memory, QStringLiteral("memoryChart"));
  m_memoryNote = new QLabel(memory);
  m_memoryNote->setObjectName(QStringLiteral("memoryNote"));
  m_memoryNote->setWordWrap(true);
  m_memoryNote->setTextFormat(Qt::RichText);
  m_memoryTable = makeTable(memory, QStringLiteral("memoryTable"));
  m_memoryTable->setModel(m_memory);
  auto* memorySplit = m_memorySplit = new QSplitter(Qt::Vertical, memory);
  memorySplit->addWidget(m_memoryView);
  memorySplit->addWidget(m_memoryTable);
  memorySplit->setStretchFactor(0, 3);
  memorySplit->setStretchFactor(1, 0);
  memorySplit->setSizes({400, 200});
  memorySplit->setChildrenCollapsible(false);
  auto* memoryLayout = new QVBoxLayout(memory);
  memoryLayout->setContentsMargins(4, 4, 4, 4);
  memoryLayout->addWidget(m_memoryNote);
  memoryLayout->addWidget(memorySplit, 1);
  m_pages->addTab(memory, tr("Memory per device"));
  // Each page's options beside the tabs (a row of their own took the charts' height in a short
  // dock), those of the page shown.
  auto* options = new QWidget(m_pages);
  auto* optionsRow = new QHBoxLayout(options);
  optionsRow->setContentsMargins(8, 0, 4, 0);
  for (QCheckBox* box : {m_groupShares, m_groupMemory, m_scaleToCapacity}) optionsRow->addWidget(box);
  m_pages->setCornerWidget(options, Qt::TopRightCorner);
  const auto showOptions = [this](int page) {
    m_groupShares->setVisible(page == 0);
    m_groupMemory->setVisible(page == 1);
    m_scaleToCapacity->setVisible(page == 1);
  };
  connect(m_pages, &QTabWidget::currentChanged, this, showOptions);
  showOptions(0);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(m_headline);
  layout->addWidget(m_pages, 1);

  connect(m_groupShares, &QCheckBox::toggled, this, [this](bool on) {
    m_ratios->setGrouped(on);
    m_ratiosTable->resizeColumnsToContents();
    rebuildRatiosChart();
  });
  connect(m_groupMemory, &QCheckBox::toggled, this, [this] { rebuildMemoryChart(); });
  connect(m_scaleToCapacity, &QCheckBox::toggled, this, [this] { rebuildMemoryChart(); });
  connect(m_ratiosTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (!m_syncing && current.isValid()) Q_EMIT segmentActivated(current.row());
          });
  connect(m_ratiosTable, &QTableView::activated, this, [this](const QModelIndex& index) {
    if (index.isValid()) Q_EMIT segmentActivated(index.row());
  });
  clear();
}

QChart* RatiosView::ratiosChart() const { return m_ratiosView->chart(); }
QChart* RatiosView::memoryChart() const { return m_memoryView->chart(); }
QChart* RatiosView::historyChart() const { return m_historyView->chart(); }

void RatiosView::clear() { setPlan(nullptr); }

void RatiosView::setPlan(std::shared_ptr<const PlanDocument> plan) {
  m_plan = std::move(plan);
  m_ratios->setPlan(m_plan);
  m_memory->setPlan(m_plan);
  {
    // Many devices read better grouped; a small cluster shows every device.
    const QSignalBlocker b1(m_groupShares), b2(m_groupMemory), b3(m_scaleToCapacity);
    const size_t devices = m_plan ? m_plan->p().devices.size() : 0;
    const bool groupShares = m_plan && devices > 8 && deviceGroups(m_plan->p()).size() < devices;
    m_groupShares->setChecked(groupShares);
    m_ratios->setGrouped(groupShares);
    m_groupMemory->setChecked(m_memory->rowCount() > 16 &&
                              m_memory->identicalRows().size() < static_cast<size_t>(m_memory->rowCount()));
    // The axis reaches the capacities when the bars stay readable at that scale.
    double mostUsed = 0, largest = 0;
    for (const plan::PlanDevice& d : m_memory->devices()) {
      mostUsed = std::max(mostUsed, d.memoryBytes);
      largest = std::max(largest, d.capacityBytes);
    }
    m_scaleToCapacity->setChecked(mostUsed >= 0.1 * largest);
  }
  m_groupShares->setEnabled(m_plan != nullptr);
  m_groupMemory->setEnabled(m_plan != nullptr);
  m_scaleToCapacity->setEnabled(m_plan != nullptr);

  if (m_plan) {
    const RatiosSummary summary = ratiosSummary(m_plan->p());
    m_headline->setText(summary.headline());
    m_pages->setTabText(1, summary.memoryPageTitle());
    m_pages->tabBar()->setTabTextColor(1, summary.overCapacity > 0 ? MemoryModel::overCapacityForeground()
                                                                   : palette().color(QPalette::WindowText));
  } else {
    m_headline->setText(tr("<i>No plan: plan the model to see how each segment is divided among the devices.</i>"));
    m_pages->setTabText(1, tr("Memory per device"));
  }
  m_ratiosTable->resizeColumnsToContents();
  m_memoryTable->resizeColumnsToContents();
  m_memoryTable->horizontalHeader()->setStretchLastSection(true);
  rebuildRatiosChart();
  rebuildMemoryChart();
  rebuildHistoryChart();
  fitTables();
}

void RatiosView::fitTables() {
  // Each table gets the height of its rows (up to a bound), the chart the rest.
  auto fit = [this](QSplitter* split, QTableView* table, int maxRows) {
    const int rows = std::clamp(table->model()->rowCount(), 2, maxRows);
    const int h = table->horizontalHeader()->sizeHint().height() + rows * table->verticalHeader()->defaultSectionSize() +
                  2 * table->frameWidth() + style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 2;
    const int total = std::max(split->height(), 560);
    split->setSizes({std::max(total - h, 240), h});
  };
  fit(m_sharesSplit, m_ratiosTable, 10);
  fit(m_memorySplit, m_memoryTable, 8);
}

int RatiosView::segmentOfBar(int bar) const {
  const int n = m_plan ? static_cast<int>(m_plan->p().segments.size()) : 0;
  return bar >= 0 && bar < n ? n - 1 - bar : -1;
}

void RatiosView::selectSegment(int segment) {
  m_syncing = true;
  if (segment >= 0 && segment < m_ratios->rowCount()) {
    const QModelIndex index = m_ratios->index(segment, 0);
    m_ratiosTable->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect |
                                                                QItemSelectionModel::Rows);
    m_ratiosTable->scrollTo(index);
  } else {
    m_ratiosTable->selectionModel()->clearSelection();
  }
  m_syncing = false;
}

void RatiosView::onBarClicked(int bar) {
  const int segment = segmentOfBar(bar);
  if (segment < 0) return;
  selectSegment(segment);
  Q_EMIT segmentActivated(segment);
}

void RatiosView::rebuildRatiosChart() {
  QChart* chart = ratiosChart();
  emptyChart(chart);
  m_ratiosSeries = nullptr;
  if (!m_plan || m_plan->p().segments.empty()) {
    chart->setTitle(m_plan ? tr("The plan has no segments") : QString());
    return;
  }
  const plan::Plan& p = m_plan->p();
  const int segments = static_cast<int>(p.segments.size());
  chart->setTitle(tr("Share of each segment's work per device"));

  // Bars from the top in plan order: a horizontal chart draws category 0 at the bottom.
  QStringList categories;
  std::set<QString> seen;
  for (int bar = 0; bar < segments; ++bar) {
    QString name = qs(p.segments[static_cast<size_t>(segmentOfBar(bar))].name);
    if (!seen.insert(name).second) name += QStringLiteral(" (%1)").arg(segmentOfBar(bar));
    categories << name;
  }

  auto* series = new QHorizontalStackedBarSeries;
  std::map<std::string, int> typeIndex, seenOfType;
  for (const plan::PlanDevice& d : p.devices) typeIndex.try_emplace(d.type, static_cast<int>(typeIndex.size()));
  const std::vector<DeviceGroup>& groups = m_ratios->columnGroups();
  for (const DeviceGroup& g : groups) {
    auto* set = new QBarSet(g.count() == 1 ? QStringLiteral("%1 · %2").arg(g.ranks.front()).arg(qs(g.type)) : g.label());
    const QColor fill = deviceColour(typeIndex[g.type], seenOfType[g.type]++);
    set->setColor(fill);
    set->setBorderColor(fill.darker(115));
    set->setLabelColor(textOn(fill));
    bool narrow = false;
    for (int bar = 0; bar < segments; ++bar) {
      const std::vector<double>& r = p.segments[static_cast<size_t>(segmentOfBar(bar))].ratios;
      const size_t rank = static_cast<size_t>(g.ranks.front());
      const double percent = (rank < r.size() ? r[rank] : 0.0) * g.count() * 100.0;
      set->append(percent);
      narrow = narrow || (percent > 0 && percent < 6);
    }
    // Labels are per series: a set with a bar too narrow for its number shows none (the table
    // and the tooltip have them).
    if (narrow) set->setLabelColor(Qt::transparent);
    series->append(set);
  }
  series->setBarWidth(segments > 24 ? 0.85 : 0.7);
  // Numbers on the bars while they have room; the table has them all.
  series->setLabelsVisible(groups.size() <= 8 && segments <= 24);
  series->setLabelsFormat(QStringLiteral("@value%"));
  series->setLabelsPrecision(3);
  series->setLabelsPosition(QAbstractBarSeries::LabelsCenter);
  chart->addSeries(series);

  auto* axisY = new QBarCategoryAxis;
  axisY->append(categories);
  axisY->setLabelsFont(smallFont(font()));
  axisY->setGridLineVisible(false);
  chart->addAxis(axisY, Qt::AlignLeft);
  series->attachAxis(axisY);
  auto* axisX = new QValueAxis;
  axisX->setRange(0, 100);
  axisX->setTickCount(11);
  axisX->setLabelFormat(QStringLiteral("%.0f%%"));
  axisX->setLabelsFont(smallFont(font()));
  chart->addAxis(axisX, Qt::AlignBottom);
  series->attachAxis(axisX);
  chart->legend()->setVisible(groups.size() <= 16);
  chart->legend()->setFont(smallFont(font()));
  m_ratiosSeries = series;

  connect(series, &QAbstractBarSeries::clicked, this, [this](int index, QBarSet*) { onBarClicked(index); });
  connect(series, &QAbstractBarSeries::hovered, this, [this, series](bool status, int index, QBarSet* set) {
    if (!status || series != m_ratiosSeries) {
      QToolTip::hideText();
      return;
    }
    const int column = 1 + static_cast<int>(series->barSets().indexOf(set));
    const int segment = segmentOfBar(index);
    if (segment < 0 || column >= m_ratios->columnCount()) return;
    QToolTip::showText(QCursor::pos(), m_ratios->index(segment, column).data(Qt::ToolTipRole).toString());
  });
}

void RatiosView::rebuildMemoryChart() {
  QChart* chart = memoryChart();
  emptyChart(chart);
  m_memorySeries = nullptr;
  m_capacitySeries.clear();
  m_memoryBars.clear();
  m_memoryNote->clear();
  m_memoryNote->hide();
  if (!m_plan || m_memory->rowCount() == 0) {
    chart->setTitle(QString());
    return;
  }
  const std::vector<plan::PlanDevice>& devices = m_memory->devices();
  if (m_groupMemory->isChecked()) {
    m_memoryBars = m_memory->identicalRows();
  } else {
    for (int row = 0; row < m_memory->rowCount(); ++row) m_memoryBars.push_back({row});
  }
  const int bars = static_cast<int>(m_memoryBars.size());
  const bool breakdown = m_memory->breakdownRecorded();
  const bool toCapacity = m_scaleToCapacity->isChecked();

  double top = 0;
  for (const plan::PlanDevice& d : devices) {
    top = std::max(top, d.memoryBytes);
    if (toCapacity) top = std::max(top, d.capacityBytes);
  }
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && top >= std::ldexp(1.0, 10 * (unit + 1))) ++unit;
  m_memoryUnit = std::ldexp(1.0, 10 * unit);
  chart->setTitle(tr("Predicted memory per device"));

  QStringList categories;
  for (const std::vector<int>& rows : m_memoryBars) {
    const plan::PlanDevice& d = devices[static_cast<size_t>(rows.front())];
    if (rows.size() == 1) {
      categories << (bars <= 8 ? QStringLiteral("rank %1 · %2").arg(d.rank).arg(qs(d.type)) : QString::number(d.rank));
    } else {
      DeviceGroup g{d.type, {}};
      for (int row : rows) g.ranks.push_back(devices[static_cast<size_t>(row)].rank);
      std::sort(g.ranks.begin(), g.ranks.end());
      categories << QStringLiteral("%1 (%2)").arg(g.rankRanges(), g.label());
    }
  }

  auto* series = new QStackedBarSeries;
  struct Kind {
    int column;
    QColor fill, overFill;
  };
  const std::vector<Kind> kinds =
      breakdown ? std::vector<Kind>{{MemoryModel::ParametersColumn, QColor(0x4e, 0x79, 0xa7), QColor(0x9b, 0x1b, 0x1b)},
                                    {MemoryModel::GradientsColumn, QColor(0x76, 0xb7, 0xb2), QColor(0xc6, 0x28, 0x28)},
                                    {MemoryModel::OptimizerColumn, QColor(0x59, 0xa1, 0x4f), QColor(0xe5, 0x39, 0x35)},
                                    {MemoryModel::ActivationsColumn, QColor(0xf2, 0x8e, 0x2b), QColor(0xef, 0x73, 0x73)},
                                    {MemoryModel::OtherColumn, QColor(0xba, 0xb0, 0xac), QColor(0xeb, 0x8a, 0x8a)}}
                : std::vector<Kind>{{MemoryModel::TotalColumn, QColor(0x6f, 0x8f, 0xb8), QColor(0xc6, 0x28, 0x28)}};
  for (const Kind& k : kinds) {
    auto* set = new QBarSet(breakdown ? MemoryModel::columnName(k.column) : tr("Total (breakdown not recorded)"));
    set->setColor(k.fill);
    set->setBorderColor(k.fill.darker(115));
    set->setSelectedColor(k.overFill);
    for (int bar = 0; bar < bars; ++bar) {
      const plan::PlanDevice& d = devices[static_cast<size_t>(m_memoryBars[static_cast<size_t>(bar)].front())];
      set->append((breakdown ? MemoryModel::breakdownBytes(d, k.column) : d.memoryBytes) / m_memoryUnit);
      // Bars of devices over capacity are drawn in reds (the set's selected colour).
      if (!MemoryModel::fits(d)) set->selectBar(bar);
    }
    series->append(set);
  }
  series->setBarWidth(0.6);
  chart->addSeries(series);

  // Capacity: a dashed line across each run of bars with one capacity (no vertical joins, so
  // that a capacity above the axis leaves nothing behind in the plot).
  QPen pen(QColor(0x33, 0x33, 0x33));
  pen.setWidthF(2);
  pen.setStyle(Qt::DashLine);
  auto capacityOf = [&](int bar) {
    return devices[static_cast<size_t>(m_memoryBars[static_cast<size_t>(bar)].front())].capacityBytes;
  };
  for (int first = 0; first < bars;) {
    int last = first;
    while (last + 1 < bars && capacityOf(last + 1) == capacityOf(first)) ++last;
    auto* capacity = new QLineSeries;
    capacity->setName(tr("Capacity"));
    capacity->setPen(pen);
    capacity->append(first - 0.5, capacityOf(first) / m_memoryUnit);
    capacity->append(last + 0.5, capacityOf(first) / m_memoryUnit);
    chart->addSeries(capacity);
    m_capacitySeries.push_back(capacity);
    first = last + 1;
  }

  auto* axisX = new QBarCategoryAxis;
  axisX->append(categories);
  axisX->setLabelsFont(smallFont(font(), bars > 24 ? 0.75 : 0.9));
  if (bars > 24) {  // rank numbers of many devices side by side, whole
    axisX->setLabelsAngle(-90);
    axisX->setTruncateLabels(false);
  }
  axisX->setGridLineVisible(false);
  chart->addAxis(axisX, Qt::AlignBottom);
  series->attachAxis(axisX);
  for (QLineSeries* capacity : m_capacitySeries) capacity->attachAxis(axisX);
  auto* axisY = new QValueAxis;
  axisY->setRange(0, top > 0 ? top / m_memoryUnit * 1.08 : 1);
  axisY->applyNiceNumbers();
  axisY->setLabelFormat(QStringLiteral("%.4g"));
  axisY->setTitleText(QString::fromLatin1(units[unit]));
  axisY->setLabelsFont(smallFont(font()));
  chart->addAxis(axisY, Qt::AlignLeft);
  series->attachAxis(axisY);
  for (QLineSeries* capacity : m_capacitySeries) capacity->attachAxis(axisY);
  chart->legend()->setFont(smallFont(font()));
  chart->legend()->setVisible(true);
  // One legend entry for the capacity lines, and only while one shows.
  int above = 0;
  double offScaleUse = 0;  // the largest fraction of its memory a device whose capacity is off the scale uses
  for (int bar = 0; bar < bars; ++bar) {
    if (capacityOf(bar) / m_memoryUnit <= axisY->max()) continue;
    ++above;
    const plan::PlanDevice& d = devices[static_cast<size_t>(m_memoryBars[static_cast<size_t>(bar)].front())];
    offScaleUse = std::max(offScaleUse, d.memoryBytes / d.capacityBytes);
  }
  for (size_t i = 0; i < m_capacitySeries.size(); ++i)
    for (QLegendMarker* marker : chart->legend()->markers(m_capacitySeries[i]))
      marker->setVisible(i == 0 && above < bars);
  m_memorySeries = series;

  connect(series, &QAbstractBarSeries::hovered, this, [this, series](bool status, int index, QBarSet* set) {
    if (!status || series != m_memorySeries || index < 0 || index >= static_cast<int>(m_memoryBars.size())) {
      QToolTip::hideText();
      return;
    }
    const std::vector<int>& rows = m_memoryBars[static_cast<size_t>(index)];
    const plan::PlanDevice& d = m_memory->devices()[static_cast<size_t>(rows.front())];
    const int kind = static_cast<int>(series->barSets().indexOf(set));
    QString text = rows.size() == 1 ? tr("Rank %1 (%2)").arg(d.rank).arg(qs(d.type))
                                    : tr("%1 devices like rank %2 (%3)").arg(rows.size()).arg(d.rank).arg(qs(d.type));
    if (m_memory->breakdownRecorded())
      text += QStringLiteral("\n%1: %2").arg(set->label(),
                                            MemoryModel::formatBytes(MemoryModel::breakdownBytes(d, MemoryModel::ParametersColumn + kind)));
    text += tr("\nTotal %1 of %2").arg(MemoryModel::formatBytes(d.memoryBytes), MemoryModel::formatBytes(d.capacityBytes));
    if (!MemoryModel::fits(d)) text += tr(" — does not fit");
    QToolTip::showText(QCursor::pos(), text);
  });

  QStringList notes;
  if (!breakdown) notes << tr("Breakdown not recorded in this plan: totals only.");
  if (const int over = m_memory->overCapacity(); over > 0)
    notes << QStringLiteral("<span style=\"color:%1\"><b>%2</b></span>")
                 .arg(MemoryModel::overCapacityForeground().name(),
                      over == 1 ? tr("1 of %1 devices does not fit in memory (red).").arg(m_memory->rowCount())
                                : tr("%1 of %2 devices do not fit in memory (red).").arg(over).arg(m_memory->rowCount()));
  if (above > 0)
    notes << tr("%1 off the scale: %2 use at most %3% of their memory (tick <i>Scale to capacity</i> to draw %4).")
                 .arg(above == bars ? tr("The capacity is") : tr("Some capacities are"),
                      above == bars ? tr("the devices") : tr("those devices"))
                 .arg(offScaleUse * 100, 0, offScaleUse < 0.01 ? 'g' : 'f', offScaleUse < 0.01 ? 2 : 0)
                 .arg(above == bars ? tr("it") : tr("them"));
  if (!notes.isEmpty()) {
    m_memoryNote->setText(notes.join(QLatin1Char(' ')));
    m_memoryNote->show();
  }
}

void RatiosView::rebuildHistoryChart() {
  QChart* chart = historyChart();
  emptyChart(chart);
  m_historySeries = nullptr;
  m_historyMisfits = nullptr;
  m_historyText->clear();
  m_balanceNote->hide();
  if (!m_plan) {
    chart->setTitle(QString());
    return;
  }
  const plan::Plan& p = m_plan->p();
  if (!p.balanceNote.empty()) {
    m_balanceNote->setText(tr("Note: %1.").arg(qs(p.balanceNote)));
    m_balanceNote->show();
  }
  if (p.history.empty()) {
    chart->setTitle(tr("No Q/B alternation (ratios %1)").arg(qs(p.ratioPolicy)));
    chart->legend()->setVisible(false);
    return;
  }
  chart->setTitle(tr("Alternation: iteration time after each step"));
  auto* line = new QLineSeries;
  line->setName(tr("Iteration (ms)"));
  line->setPointsVisible(true);
  QPen pen(typeColour(0));
  pen.setWidthF(2);
  line->setPen(pen);
  auto* misfits = new QScatterSeries;
  misfits->setName(tr("Does not fit"));
  misfits->setColor(MemoryModel::overCapacityForeground());
  misfits->setBorderColor(MemoryModel::overCapacityForeground());
  misfits->setMarkerSize(10);
  auto* axisX = new QCategoryAxis;
  axisX->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  axisX->setStartValue(0.5);
  double low = p.history.front().seconds, high = low;
  QStringList steps;
  for (size_t i = 0; i < p.history.size(); ++i) {
    const plan::Plan::HistoryEntry& h = p.history[i];
    const double x = static_cast<double>(i + 1), ms = h.seconds * 1e3;
    line->append(x, ms);
    if (!h.fits) misfits->append(x, ms);
    axisX->append(QString::number(i + 1), x);
    low = std::min(low, h.seconds);
    high = std::max(high, h.seconds);
    QString step = QStringLiteral("<span style=\"color:gray\">%1</span>&nbsp;%2 <b>%3&nbsp;ms</b>")
                       .arg(i + 1)
                       .arg(qs(h.step).toHtmlEscaped())
                       .arg(ms, 0, 'f', 3);
    if (!h.fits)
      step += QStringLiteral(" <span style=\"color:%1\">(does not fit)</span>").arg(MemoryModel::overCapacityForeground().name());
    steps << step;
  }
  axisX->setRange(0.5, static_cast<double>(p.history.size()) + 0.5);
  axisX->setLabelsFont(smallFont(font(), 0.85));
  axisX->setGridLineVisible(false);
  axisX->setTitleText(tr("step"));
  chart->addSeries(line);
  chart->addSeries(misfits);
  chart->addAxis(axisX, Qt::AlignBottom);
  line->attachAxis(axisX);
  misfits->attachAxis(axisX);
  auto* axisY = new QValueAxis;
  const double pad = std::max((high - low) * 0.15, high * 0.02) * 1e3;
  axisY->setRange(std::max(0.0, low * 1e3 - pad), high * 1e3 + pad);
  axisY->setTickCount(5);
  axisY->setLabelFormat(QStringLiteral("%.3g"));
  axisY->setTitleText(tr("ms"));
  axisY->setLabelsFont(smallFont(font(), 0.85));
  chart->addAxis(axisY, Qt::AlignLeft);
  line->attachAxis(axisY);
  misfits->attachAxis(axisY);
  chart->legend()->setVisible(misfits->count() > 0);
  for (QLegendMarker* marker : chart->legend()->markers(line)) marker->setVisible(false);
  chart->legend()->setFont(smallFont(font(), 0.85));
  m_historySeries = line;
  m_historyMisfits = misfits;
  m_historyText->setText(steps.join(QStringLiteral(" → ")) + QStringLiteral("<br><span style=\"color:gray\">") +
                         ratiosSummary(p).solves() + QStringLiteral("</span>"));
}

}  // namespace hap::studio
