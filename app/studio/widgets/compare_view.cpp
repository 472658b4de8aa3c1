#include "app/studio/widgets/compare_view.h"

#include <QComboBox>
#include <QFrame>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "app/studio/core/display/units.h"

namespace hap::studio {
namespace {

QLabel* valueLabel(QWidget* parent, const char* name) {
  auto* l = new QLabel(parent);
  l->setObjectName(QString::fromLatin1(name));
  l->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return l;
}

QLabel* headLabel(const QString& text, QWidget* parent) {
  auto* l = new QLabel(text, parent);
  QFont f = l->font();
  f.setBold(true);
  l->setFont(f);
  l->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return l;
}

// "1.08× faster" (B faster than A), "1.10× slower", "same time".
QString speedupText(double a, double b) {
  if (a <= 0 || b <= 0) return {};
  const double s = a / b;
  if (std::abs(s - 1) < 5e-4) return QObject::tr("same time");
  return s > 1 ? QObject::tr("%1× faster").arg(s, 0, 'f', 3) : QObject::tr("%1× slower").arg(1 / s, 0, 'f', 3);
}

}  // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("compareView"));
  m_model = new ComparisonModel(this);

  m_comboA = new QComboBox(this);
  m_comboA->setObjectName(QStringLiteral("compareA"));
  m_comboB = new QComboBox(this);
  m_comboB->setObjectName(QStringLiteral("compareB"));
  for (QComboBox* c : {m_comboA, m_comboB}) {
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(18);
    c->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  }
  auto* labelA = new QLabel(tr("Plan &A:"), this);
  labelA->setBuddy(m_comboA);
  auto* labelB = new QLabel(tr("Plan &B:"), this);
  labelB->setBuddy(m_comboB);
  auto* swap = new QPushButton(tr("Swap"), this);
  swap->setObjectName(QStringLiteral("compareSwap"));
  swap->setToolTip(tr("Exchange plans A and B"));

  auto* choose = new QHBoxLayout;
  choose->setContentsMargins(0, 0, 0, 0);
  choose->addWidget(labelA);
  choose->addWidget(m_comboA, 1);
  choose->addSpacing(8);
  choose->addWidget(labelB);
  choose->addWidget(m_comboB, 1);
  choose->addWidget(swap);

  // Totals: one row per figure, plan A, plan B, the change.
  auto* totals = new QFrame(this);
  totals->setObjectName(QStringLiteral("compareTotals"));
  totals->setFrameShape(QFrame::StyledPanel);
  auto* grid = new QGridLayout(totals);
  grid->setContentsMargins(10, 6, 10, 6);
  grid->setHorizontalSpacing(18);
  grid->setVerticalSpacing(3);
  grid->addWidget(headLabel(tr("Plan A"), totals), 0, 1);
  grid->addWidget(headLabel(tr("Plan B"), totals), 0, 2);
  grid->addWidget(headLabel(tr("B against A"), totals), 0, 3);
  grid->addWidget(new QLabel(tr("Iteration time"), totals), 1, 0);
  grid->addWidget(new QLabel(tr("Memory (max device)"), totals), 2, 0);
  grid->addWidget(new QLabel(tr("Fits in memory"), totals), 3, 0);
  m_timeA = valueLabel(totals, "compareTimeA");
  m_timeB = valueLabel(totals, "compareTimeB");
  m_speedup = valueLabel(totals, "compareSpeedup");
  m_memoryA = valueLabel(totals, "compareMemoryA");
  m_memoryB = valueLabel(totals, "compareMemoryB");
  m_memoryChange = valueLabel(totals, "compareMemoryChange");
  m_fitsA = valueLabel(totals, "compareFitsA");
  m_fitsB = valueLabel(totals, "compareFitsB");
  grid->addWidget(m_timeA, 1, 1);
  grid->addWidget(m_timeB, 1, 2);
  grid->addWidget(m_speedup, 1, 3);
  grid->addWidget(m_memoryA, 2, 1);
  grid->addWidget(m_memoryB, 2, 2);
  grid->addWidget(m_memoryChange, 2, 3);
  grid->addWidget(m_fitsA, 3, 1);
  grid->addWidget(m_fitsB, 3, 2);
  grid->setColumnStretch(4, 1);

  m_note = new QLabel(this);
  m_note->setObjectName(QStringLiteral("compareNote"));
  m_note->setWordWrap(true);
  m_note->setStyleSheet(QStringLiteral("color: #8a5a00;"));
  m_note->hide();

  m_summary = new QLabel(this);
  m_summary->setObjectName(QStringLiteral("compareSummary"));
  m_highlight = new QPushButton(tr("Highlight in graph"), this);
  m_highlight->setObjectName(QStringLiteral("compareHighlight"));
  m_highlight->setToolTip(tr("Select the nodes whose variant changed in the graph"));
  auto* summaryRow = new QHBoxLayout;
  summaryRow->setContentsMargins(0, 0, 0, 0);
  summaryRow->addWidget(m_summary, 1);
  summaryRow->addWidget(m_highlight);

  m_table = new QTableView(this);
  m_table->setObjectName(QStringLiteral("compareTable"));
  // Sortable by any column on its raw values; unsorted (nodes, then segments) until a header is
  // clicked.
  auto* sorted = new QSortFilterProxyModel(this);
  sorted->setSourceModel(m_model);
  sorted->setSortRole(ComparisonModel::SortRole);
  m_table->setModel(sorted);
  m_table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
  m_table->setSortingEnabled(true);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setAlternatingRowColors(true);
  m_table->setWordWrap(false);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->horizontalHeader()->setHighlightSections(false);
  m_table->horizontalHeader()->setStretchLastSection(true);

  m_caption = new QLabel(this);
  m_caption->setObjectName(QStringLiteral("compareCaption"));
  m_caption->setWordWrap(true);
  m_caption->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_caption->setStyleSheet(QStringLiteral("font-weight: bold;"));
  m_caption->hide();

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(m_caption);
  layout->addLayout(choose);
  layout->addWidget(totals);
  layout->addWidget(m_note);
  layout->addLayout(summaryRow);
  layout->addWidget(m_table, 1);

  connect(m_comboA, &QComboBox::currentIndexChanged, this, [this] {
    if (m_choosing) return;
    setCaption({});
    recompare();
  });
  connect(m_comboB, &QComboBox::currentIndexChanged, this, [this] {
    if (m_choosing) return;
    setCaption({});
    recompare();
  });
  connect(swap, &QPushButton::clicked, this, [this] { setPlans(rowB(), rowA()); });
  connect(m_highlight, &QPushButton::clicked, this,
          [this] { Q_EMIT highlightNodes(m_model->comparison().changedNodes()); });
  connect(m_table, &QTableView::activated, this, [this](const QModelIndex& index) {
    const ir::NodeId node = index.data(ComparisonModel::NodeRole).toInt();
    if (node != ir::kNone) Q_EMIT nodeActivated(node);
  });
  updateHeader();
}

void CompareView::setHistory(PlanHistoryModel* history) {
  if (m_history == history) return;
  if (m_history) disconnect(m_history, nullptr, this, nullptr);
  m_history = history;
  m_choosing = true;
  if (!history && !m_empty) m_empty = new PlanHistoryModel(this);
  m_comboA->setModel(history ? history : m_empty);
  m_comboB->setModel(history ? history : m_empty);
  m_comboA->setModelColumn(PlanHistoryModel::LabelColumn);
  m_comboB->setModelColumn(PlanHistoryModel::LabelColumn);
  m_choosing = false;
  if (history) {
    connect(history, &QAbstractItemModel::rowsInserted, this, [this] { onHistoryRowsInserted(); });
    connect(history, &QAbstractItemModel::modelReset, this, [this] { onHistoryRowsInserted(); });
    connect(history, &QAbstractItemModel::rowsRemoved, this, [this] { onHistoryRowsInserted(); });
    // A plan replaced in place (PlanHistoryModel::replace): compare the new one.
    connect(history, &QAbstractItemModel::dataChanged, this, [this] {
      if (m_model->planA() != m_history->plan(rowA()) || m_model->planB() != m_history->plan(rowB())) recompare();
    });
  }
  onHistoryRowsInserted();
}

void CompareView::setCaption(const QString& text) {
  m_caption->setText(text);
  m_caption->setVisible(!text.isEmpty());
}

void CompareView::onHistoryRowsInserted() {
  setCaption({});
  const int n = m_history ? m_history->size() : 0;
  setPlans(n >= 2 ? n - 2 : n - 1, n - 1);
}

int CompareView::rowA() const { return m_comboA->currentIndex(); }
int CompareView::rowB() const { return m_comboB->currentIndex(); }

void CompareView::setPlans(int rowA, int rowB) {
  m_choosing = true;
  m_comboA->setCurrentIndex(rowA);
  m_comboB->setCurrentIndex(rowB);
  m_choosing = false;
  recompare();
}

void CompareView::recompare() {
  std::shared_ptr<const PlanDocument> a, b;
  if (m_history) {
    a = m_history->plan(rowA());
    b = m_history->plan(rowB());
  }
  m_model->setPlans(a, b);
  updateHeader();
  resizeColumns();
  Q_EMIT highlightNodes(m_model->comparison().changedNodes());
}

void CompareView::updateHeader() {
  const std::shared_ptr<const PlanDocument>& a = m_model->planA();
  const std::shared_ptr<const PlanDocument>& b = m_model->planB();
  const PlanComparison& c = m_model->comparison();
  const bool both = a && b;
  const QString none = QStringLiteral("—");
  m_timeA->setText(a ? formatMilliseconds(c.a.iterationSeconds) : none);
  m_timeB->setText(b ? formatMilliseconds(c.b.iterationSeconds) : none);
  m_speedup->setText(both ? speedupText(c.a.iterationSeconds, c.b.iterationSeconds) : QString());
  m_speedup->setStyleSheet(both && c.speedup > 1 + 5e-4   ? QStringLiteral("color: #1b7f3a; font-weight: bold;")
                           : both && c.speedup < 1 - 5e-4 ? QStringLiteral("color: #b3261e; font-weight: bold;")
                                                           : QString());
  m_memoryA->setText(a ? formatBytes(c.a.maxMemoryBytes) : none);
  m_memoryB->setText(b ? formatBytes(c.b.maxMemoryBytes) : none);
  if (both && c.a.maxMemoryBytes > 0) {
    const double change = (c.b.maxMemoryBytes - c.a.maxMemoryBytes) / c.a.maxMemoryBytes * 100;
    m_memoryChange->setText(std::abs(change) < 0.05 ? tr("same memory")
                                                    : tr("%1%2%").arg(change > 0 ? QStringLiteral("+") : QString())
                                                          .arg(change, 0, 'f', 1));
  } else {
    m_memoryChange->clear();
  }
  auto fits = [&](QLabel* l, bool has, bool fit) {
    l->setText(!has ? none : fit ? tr("yes") : tr("NO"));
    l->setStyleSheet(has && !fit ? QStringLiteral("color: #b3261e; font-weight: bold;") : QString());
  };
  fits(m_fitsA, a != nullptr, c.a.fits);
  fits(m_fitsB, b != nullptr, c.b.fits);

  m_note->setText(QString::fromStdString(c.note));
  m_note->setVisible(both && !c.note.empty());
  if (!both) {
    m_summary->setText(tr("Make or open two plans to compare them."));
  } else if (a == b) {
    m_summary->setText(tr("Plan A and plan B are the same plan."));
  } else if (c.identical()) {
    m_summary->setText(c.sameGraph ? tr("Same program and ratios.") : QString());
  } else {
    const int nodes = static_cast<int>(c.nodes.size()), segments = static_cast<int>(c.segments.size());
    m_summary->setText((nodes == 1 ? tr("1 node changed variant") : tr("%1 nodes changed variant").arg(nodes)) +
                       QStringLiteral(", ") +
                       (segments == 1 ? tr("1 segment's ratios moved") : tr("%1 segments' ratios moved").arg(segments)) +
                       QLatin1Char('.'));
  }
  m_highlight->setEnabled(!c.nodes.empty());
}

void CompareView::resizeColumns() {
  m_table->resizeColumnsToContents();
  QHeaderView* header = m_table->horizontalHeader();
  const int em = m_table->fontMetrics().horizontalAdvance(QLatin1Char('M'));
  header->resizeSection(ComparisonModel::ScopeColumn, std::min(header->sectionSize(ComparisonModel::ScopeColumn), 16 * em));
}

}  // namespace hap::studio
