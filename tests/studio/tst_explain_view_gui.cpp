// The Explain view and the compare view driven as a user would (offscreen), on real plans of
// bert-tiny on a100-p100-4: typing into the filter shrinks the table, the kind combo narrows it,
// a double-click on a step emits its node, the text tab holds `hap plan --explain`'s text; the
// compare view lists the nodes a pin changed and hands them to the graph. Screenshots go to
// /tmp/shots/ (or $HAP_SHOTS_DIR).
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QtTest>

#include <algorithm>
#include <memory>

#include "app/studio/widgets/compare_view.h"
#include "app/studio/widgets/explain_view.h"
#include "engine/plan/explain.h"
#include "tests/studio/plan_fixture.h"
#include "tests/studio/view_helpers.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::saveShot;

namespace {

void doubleClickRow(QTableView& view, int row, int column = 0) {
  const QModelIndex index = view.model()->index(row, column);
  view.scrollTo(index);
  const QRect rect = view.visualRect(index);
  QVERIFY(rect.isValid());
  // As a window system delivers it: press, release, then the double-click event and a release.
  QTest::mouseClick(view.viewport(), Qt::LeftButton, Qt::NoModifier, rect.center());
  QTest::mouseDClick(view.viewport(), Qt::LeftButton, Qt::NoModifier, rect.center());
  QTest::mouseRelease(view.viewport(), Qt::LeftButton, Qt::NoModifier, rect.center());
}

// The plan under another label, as the app names the plans it makes ("Plan 2 · lp · 4.94 ms").
std::shared_ptr<const PlanDocument> labelled(const std::shared_ptr<const PlanDocument>& d, const QString& name) {
  const QString label = QStringLiteral("%1 · %2 · %3 ms")
                            .arg(name, QString::fromStdString(d->p().ratioPolicy))
                            .arg(d->p().estimate.iterationSeconds * 1e3, 0, 'f', 2);
  return makePlanDocument(d->p(), d->imported, "", label.toStdString(), d->request);
}

}  // namespace

class TestExplainViewGui : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    qRegisterMetaType<std::vector<hap::ir::NodeId>>();
    m_default = labelled(testing::planWithCollectives(), QStringLiteral("Plan 1"));
    plan::PlanRequest pinned;
    pinned.pins = {"layers.*.ffn.fc1=row"};
    m_pinned = labelled(testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml", pinned), QStringLiteral("Plan 2 (pinned)"));
    plan::PlanRequest even;
    even.ratios = "even";
    m_even = labelled(testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml", even), QStringLiteral("Plan 3"));
  }

  void explainFilterAndActivate() {
    ExplainView view;
    view.resize(1280, 640);
    view.setPlan(m_default);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const int steps = int(m_default->p().steps.size());
    QTableView* table = view.table();
    QCOMPARE(table->model()->rowCount(), steps);
    QCOMPARE(view.countLabel()->text(), QStringLiteral("%1 steps").arg(steps));
    saveShot(view, QStringLiteral("explain-program"));

    // Typing narrows the table to the steps mentioning the text.
    QSignalSpy activated(&view, &ExplainView::nodeActivated);
    view.filterEdit()->setFocus();
    QTest::keyClicks(view.filterEdit(), QStringLiteral("all-reduce"));
    const int allReduces = int(std::count_if(m_default->p().steps.begin(), m_default->p().steps.end(),
                                             [](const plan::PlanStep& s) { return s.instruction == "all-reduce"; }));
    QVERIFY(allReduces > 0);
    QCOMPARE(table->model()->rowCount(), allReduces);
    for (int r = 0; r < table->model()->rowCount(); ++r)
      QCOMPARE(table->model()->index(r, ExplainModel::VariantColumn).data().toString(), QStringLiteral("all-reduce"));
    QCOMPARE(view.countLabel()->text(), QStringLiteral("%1 of %2 steps").arg(allReduces).arg(steps));
    QVERIFY(activated.isEmpty());  // typing does not move the graph
    saveShot(view, QStringLiteral("explain-filtered"));

    // Clear the filter; the kind combo: computations only.
    view.filterEdit()->selectAll();
    QTest::keyClick(view.filterEdit(), Qt::Key_Backspace);
    QCOMPARE(table->model()->rowCount(), steps);
    QTest::keyClick(view.kindCombo(), Qt::Key_Down);
    QCOMPARE(view.kindCombo()->currentIndex(), 1);
    const int computations = int(std::count_if(m_default->p().steps.begin(), m_default->p().steps.end(), [](const plan::PlanStep& s) {
      return s.kind == plan::PlanStep::Kind::Compute;
    }));
    QCOMPARE(table->model()->rowCount(), computations);

    // A filter on a scope, then double-click its linear: the step's node.
    QTest::keyClicks(view.filterEdit(), QStringLiteral("layers.1.ffn.fc2"));
    QVERIFY(table->model()->rowCount() >= 1);
    int linear = -1;
    for (int r = 0; r < table->model()->rowCount(); ++r)
      if (table->model()->index(r, ExplainModel::OpColumn).data().toString() == QStringLiteral("linear")) linear = r;
    QVERIFY(linear >= 0);
    const int step = table->model()->index(linear, 0).data(ExplainModel::StepRole).toInt();
    const ir::NodeId node = m_default->stepNode(step);
    QVERIFY(node != ir::kNone);
    QCOMPARE(QString::fromStdString(m_default->imported->node(node).scope), QStringLiteral("layers.1.ffn.fc2"));
    doubleClickRow(*table, linear, ExplainModel::OpColumn);
    QVERIFY(!activated.isEmpty());
    for (const QList<QVariant>& args : activated) QCOMPARE(args.at(0).value<ir::NodeId>(), node);

    // Sorting by a header click: the slowest step first.
    view.kindCombo()->setCurrentIndex(0);
    view.filterEdit()->clear();
    QHeaderView* header = table->horizontalHeader();
    QTest::mouseClick(header->viewport(), Qt::LeftButton, Qt::NoModifier,
                      QPoint(header->sectionViewportPosition(ExplainModel::TotalColumn) + 5, header->height() / 2));
    double most = 0;
    for (const plan::PlanStep& s : m_default->p().steps) most = std::max(most, s.seconds());
    QCOMPARE(table->model()->index(0, ExplainModel::TotalColumn).data(ExplainModel::SortRole).toDouble(), most);
    saveShot(view, QStringLiteral("explain-sorted"));
  }

  void selectNodeSelectsItsSteps() {
    ExplainView view;
    view.resize(1200, 600);
    view.setPlan(m_default);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy activated(&view, &ExplainView::nodeActivated);
    // A linear with load-shard steps preparing its weight: several rows.
    ir::NodeId node = ir::kNone;
    for (const ir::Node& n : m_default->imported->nodes)
      if (n.op == "aten::linear" && m_default->stepsOfNode(n.id).size() > 1) {
        node = n.id;
        break;
      }
    QVERIFY(node != ir::kNone);
    view.selectNode(node);
    QVERIFY(activated.isEmpty());
    const QModelIndexList rows = view.table()->selectionModel()->selectedRows();
    std::vector<int> selected;
    for (const QModelIndex& i : rows) selected.push_back(i.data(ExplainModel::StepRole).toInt());
    std::sort(selected.begin(), selected.end());
    QCOMPARE(selected, m_default->stepsOfNode(node));
    view.selectNode(ir::kNone);
    QVERIFY(view.table()->selectionModel()->selectedRows().isEmpty());
    QVERIFY(activated.isEmpty());
  }

  void textTab() {
    ExplainView view;
    view.resize(1100, 600);
    view.setPlan(m_default);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QString expected = QString::fromStdString(plan::formatExplain(*m_default->imported, m_default->p()));
    QCOMPARE(view.textEdit()->toPlainText(), expected);
    QVERIFY(view.textEdit()->isReadOnly());
    QVERIFY(view.textEdit()->font().fixedPitch() || QFontInfo(view.textEdit()->font()).fixedPitch());
    view.setCurrentIndex(ExplainView::TextTab);
    saveShot(view, QStringLiteral("explain-text"));
    view.clear();
    QCOMPARE(view.table()->model()->rowCount(), 0);
    QVERIFY(view.textEdit()->toPlainText().isEmpty());
  }

  void compareView() {
    PlanHistoryModel history;
    CompareView view;
    view.resize(1100, 560);
    QSignalSpy highlight(&view, &CompareView::highlightNodes);
    QSignalSpy activated(&view, &CompareView::nodeActivated);
    view.setHistory(&history);
    history.add(m_default);
    QCOMPARE(view.rowA(), 0);
    QCOMPARE(view.rowB(), 0);
    QCOMPARE(view.table()->model()->rowCount(), 0);
    history.add(m_pinned);
    // The two newest: A the default plan, B the pinned one.
    QCOMPARE(view.rowA(), 0);
    QCOMPARE(view.rowB(), 1);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));

    const PlanComparison expected = compare(*m_default, *m_pinned);
    QVERIFY(!expected.nodes.empty());
    QCOMPARE(view.table()->model()->rowCount(), int(expected.nodes.size() + expected.segments.size()));
    for (int r = 0; r < int(expected.nodes.size()); ++r) {
      QCOMPARE(view.table()->model()->index(r, 0).data(ComparisonModel::NodeRole).toInt(), expected.nodes[size_t(r)].node);
      QCOMPARE(view.table()->model()->index(r, ComparisonModel::BColumn).data().toString(),
               QString::fromStdString(expected.nodes[size_t(r)].variantB));
    }
    QVERIFY(!highlight.isEmpty());
    QCOMPARE(highlight.last().at(0).value<std::vector<ir::NodeId>>(), expected.changedNodes());
    auto* timeA = view.findChild<QLabel*>(QStringLiteral("compareTimeA"));
    auto* timeB = view.findChild<QLabel*>(QStringLiteral("compareTimeB"));
    QVERIFY(timeA && timeB);
    QCOMPARE(timeA->text(), QStringLiteral("%1 ms").arg(m_default->p().estimate.iterationSeconds * 1e3, 0, 'f', 3));
    QCOMPARE(timeB->text(), QStringLiteral("%1 ms").arg(m_pinned->p().estimate.iterationSeconds * 1e3, 0, 'f', 3));
    QCOMPARE(view.speedupLabel()->text(),
             QStringLiteral("%1× slower").arg(m_pinned->p().estimate.iterationSeconds / m_default->p().estimate.iterationSeconds, 0, 'f', 3));
    saveShot(view, QStringLiteral("compare-pinned"));

    // "Highlight in graph" hands the changed nodes over again.
    const int before = int(highlight.count());
    QTest::mouseClick(view.highlightButton(), Qt::LeftButton);
    QCOMPARE(int(highlight.count()), before + 1);
    QCOMPARE(highlight.last().at(0).value<std::vector<ir::NodeId>>(), expected.changedNodes());

    // Double-click the first node row.
    doubleClickRow(*view.table(), 0, ComparisonModel::ItemColumn);
    QVERIFY(!activated.isEmpty());
    QCOMPARE(activated.last().at(0).value<ir::NodeId>(), expected.nodes.front().node);

    // Click the Δ header: the rows sort by their raw deltas, ascending; again: descending.
    QHeaderView* header = view.table()->horizontalHeader();
    const int x = header->sectionViewportPosition(ComparisonModel::DeltaColumn) + 5;
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, QPoint(x, header->height() / 2));
    const QAbstractItemModel* m = view.table()->model();
    auto deltaAt = [m](int r) { return m->index(r, ComparisonModel::DeltaColumn).data(ComparisonModel::SortRole).toDouble(); };
    for (int r = 1; r < m->rowCount(); ++r) QVERIFY(deltaAt(r - 1) <= deltaAt(r));
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, QPoint(x, header->height() / 2));
    for (int r = 1; r < m->rowCount(); ++r) QVERIFY(deltaAt(r - 1) >= deltaAt(r));
    header->setSortIndicator(-1, Qt::AscendingOrder);  // back to program order for what follows

    // A third plan: even ratios, compared with the pinned one; then plan B chosen by keyboard.
    history.add(m_even);
    QCOMPARE(view.rowA(), 1);
    QCOMPARE(view.rowB(), 2);
    QTest::keyClick(view.comboA(), Qt::Key_Up);  // plan A: the default plan
    QCOMPARE(view.rowA(), 0);
    const PlanComparison even = compare(*m_default, *m_even);
    QVERIFY(!even.segments.empty());
    QCOMPARE(view.table()->model()->rowCount(), int(even.nodes.size() + even.segments.size()));
    QCOMPARE(highlight.last().at(0).value<std::vector<ir::NodeId>>(), even.changedNodes());
    saveShot(view, QStringLiteral("compare-even"));

    // The same plan on both sides: no differences.
    view.setPlans(0, 0);
    QCOMPARE(view.table()->model()->rowCount(), 0);
    QVERIFY(highlight.last().at(0).value<std::vector<ir::NodeId>>().empty());
    QVERIFY(!view.highlightButton()->isEnabled());
  }

 private:
  std::shared_ptr<const PlanDocument> m_default, m_pinned, m_even;
};

QTEST_MAIN(TestExplainViewGui)
#include "tst_explain_view_gui.moc"
