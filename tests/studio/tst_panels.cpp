// The find bar, the summary panel and the properties panel driven as a user would (offscreen):
// typing, Enter, clicks on rows, links and headers, Ctrl+C. Saves a screenshot of each panel to
// /tmp/shots/ (or $HAP_SHOTS_DIR) for a look.
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QDir>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QTreeView>
#include <QtTest>

#include <memory>

#include "app/studio/core/graph/scope_tree.h"
#include "app/studio/widgets/find_bar.h"
#include "app/studio/widgets/properties_panel.h"
#include "app/studio/widgets/summary_panel.h"
#include "engine/import/importer.h"
#include "engine/ir/summary.h"
#include "tests/studio/view_helpers.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::saveShot;

namespace {

std::shared_ptr<const ir::Graph> loadZoo(const char* file) {
  const QByteArray dir = qgetenv("HAP_ZOO_DIR");
  return std::make_shared<const ir::Graph>(import::importModel(dir.toStdString() + "/" + file));
}

// Clicks the middle of `index`'s cell in `view`.
void clickCell(QTreeView& view, const QModelIndex& index) {
  view.scrollTo(index);
  const QRect rect = view.visualRect(index);
  QVERIFY(rect.isValid());
  QTest::mouseClick(view.viewport(), Qt::LeftButton, Qt::NoModifier, rect.center());
}

QModelIndex findRow(const QAbstractItemModel& m, const QString& name, const QModelIndex& parent = {}) {
  for (int r = 0; r < m.rowCount(parent); ++r)
    if (m.index(r, 0, parent).data().toString() == name) return m.index(r, 0, parent);
  return {};
}

}  // namespace

class TestPanels : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    m_mlp = loadZoo("mlp-tiny.pt");
    m_bert = loadZoo("bert-tiny.pt");
  }

  void findBar() {
    FindBar bar;
    bar.setGraph(m_mlp);
    bar.resize(760, bar.sizeHint().height());
    bar.show();
    QVERIFY(QTest::qWaitForWindowExposed(&bar));
    std::vector<Selection> activated;
    connect(&bar, &FindBar::matchActivated, this, [&](Selection s) { activated.push_back(s); });
    auto* status = bar.findChild<QLabel*>(QStringLiteral("findStatus"));
    QVERIFY(status);

    bar.focusAndSelectAll();
    QTest::keyClicks(bar.lineEdit(), QStringLiteral("relu"));
    QCOMPARE(bar.search().count(), 2);
    QCOMPARE(status->text(), QStringLiteral("2 matches"));
    QVERIFY(activated.empty());  // typing alone does not move the view

    QTest::keyClick(bar.lineEdit(), Qt::Key_Return);
    QCOMPARE(activated.size(), size_t(1));
    QCOMPARE(activated.back(), Selection::node(1));
    QCOMPARE(status->text(), QStringLiteral("1 of 2"));
    QTest::keyClick(bar.lineEdit(), Qt::Key_Enter);
    QCOMPARE(activated.back(), Selection::node(3));
    QTest::keyClick(bar.lineEdit(), Qt::Key_Return);
    QCOMPARE(activated.back(), Selection::node(1));  // wrapped
    QTest::keyClick(bar.lineEdit(), Qt::Key_Return, Qt::ShiftModifier);
    QCOMPARE(activated.back(), Selection::node(3));  // back, wrapped
    QCOMPARE(status->text(), QStringLiteral("2 of 2"));
    bar.findPreviousAction()->trigger();
    QCOMPARE(activated.back(), Selection::node(1));
    bar.findNextAction()->trigger();
    QCOMPARE(activated.back(), Selection::node(3));
    // F3 / Shift+F3 as keys (window shortcuts: the window must be active).
    bar.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&bar));
    QTest::keyClick(bar.lineEdit(), Qt::Key_F3);
    QCOMPARE(activated.back(), Selection::node(1));
    QTest::keyClick(bar.lineEdit(), Qt::Key_F3, Qt::ShiftModifier);
    QCOMPARE(activated.back(), Selection::node(3));
    saveShot(bar, QStringLiteral("find_bar"));

    // A new text: the first Enter gives the first match in graph order.
    bar.focusAndSelectAll();
    QTest::keyClicks(bar.lineEdit(), QStringLiteral("linear"));
    QCOMPARE(bar.lineEdit()->text(), QStringLiteral("linear"));
    QTest::keyClick(bar.lineEdit(), Qt::Key_Return);
    QCOMPARE(activated.back(), Selection::node(0));
    QCOMPARE(status->text(), QStringLiteral("1 of 3"));

    // An invalid regex shows the error in red and activates nothing.
    auto boxes = bar.findChildren<QCheckBox*>();
    QCheckBox* regex = nullptr;
    for (QCheckBox* b : boxes)
      if (b->text().remove(QLatin1Char('&')) == QStringLiteral("Regex")) regex = b;
    QVERIFY(regex);
    QTest::mouseClick(regex, Qt::LeftButton);
    QVERIFY(regex->isChecked());
    bar.focusAndSelectAll();
    QTest::keyClicks(bar.lineEdit(), QStringLiteral("lin(ear"));
    QCOMPARE(status->text(), QStringLiteral("Invalid regex"));
    QVERIFY(status->toolTip().contains(QStringLiteral("Invalid regular expression")));
    QCOMPARE(status->palette().color(QPalette::WindowText), QColor(0xc0, 0x1c, 0x28));
    const size_t before = activated.size();
    QTest::keyClick(bar.lineEdit(), Qt::Key_Return);
    QCOMPARE(activated.size(), before);
    saveShot(bar, QStringLiteral("find_bar_error"));

    // A valid regex again.
    bar.lineEdit()->setText(QStringLiteral("^relu$"));
    QCOMPARE(status->text(), QStringLiteral("2 matches"));

    // Esc hides the bar and says so.
    bool closed = false;
    connect(&bar, &FindBar::closed, this, [&] { closed = true; });
    QTest::keyClick(bar.lineEdit(), Qt::Key_Escape);
    QVERIFY(closed);
    QVERIFY(!bar.isVisible());
  }

  void summaryPanel() {
    // The rows SummaryModel has at a depth (tst_summary_model checks them).
    const auto summaryRows = [&](int depth) {
      SummaryModel reference;
      reference.setGraph(m_bert);
      reference.setDepth(depth);
      return reference.rowCount();
    };
    SummaryPanel panel;
    panel.resize(820, 420);
    panel.setGraph(m_bert);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QCOMPARE(panel.depth(), 1);
    QCOMPARE(panel.view()->model()->rowCount(), summaryRows(1));

    // The spin box changes the depth; its maximum reads "all" and means full scopes.
    DepthSpinBox* spin = panel.depthSpinBox();
    spin->setValue(2);
    QCOMPARE(panel.depth(), 2);
    QCOMPARE(panel.view()->model()->rowCount(), summaryRows(2));
    spin->setValue(spin->maximum());
    QCOMPARE(spin->text(), QStringLiteral("all"));
    QCOMPARE(panel.depth(), -1);
    QCOMPARE(panel.view()->model()->rowCount(), int(ir::summarize(*m_bert, -1).scopes.size()) + 1);
    spin->setValue(2);

    // Clicking the FLOPs header sorts by FLOPs, the totals row stays last.
    QHeaderView* header = panel.view()->header();
    const int x = header->sectionViewportPosition(SummaryModel::FlopsColumn) +
                  header->sectionSize(SummaryModel::FlopsColumn) / 2;
    QTest::mouseClick(header->viewport(), Qt::LeftButton, Qt::NoModifier,
                      QPoint(x, header->height() / 2));
    QCOMPARE(panel.proxy()->sortColumn(), int(SummaryModel::FlopsColumn));
    QAbstractItemModel* m = panel.view()->model();
    const int rows = m->rowCount();
    QVERIFY(m->index(rows - 1, 0).data(SummaryModel::IsTotalRole).toBool());
    const double first = m->index(0, SummaryModel::FlopsColumn).data(SummaryModel::SortRole).toDouble();
    const double last = m->index(rows - 2, SummaryModel::FlopsColumn).data(SummaryModel::SortRole).toDouble();
    QVERIFY(first > last);  // a first click sorts numbers largest first
    saveShot(panel, QStringLiteral("summary_panel"));

    // Selecting a row asks for its scope; the totals row asks for nothing.
    QStringList activated;
    connect(&panel, &SummaryPanel::scopeActivated, this, [&](const QString& p) { activated << p; });
    const QModelIndex target = m->index(1, SummaryModel::ScopeColumn);
    clickCell(*panel.view(), target);
    QCOMPARE(activated, QStringList{target.data(SummaryModel::ScopePathRole).toString()});
    clickCell(*panel.view(), m->index(rows - 1, 0));
    QCOMPARE(activated.size(), 1);
    // Keyboard: Up from the totals row selects the row above it.
    QTest::keyClick(panel.view(), Qt::Key_Up);
    QCOMPARE(activated.size(), 2);
    QCOMPARE(activated.back(), m->index(rows - 2, 0).data(SummaryModel::ScopePathRole).toString());

    // Selecting from the graph side does not echo back.
    panel.selectScope(QStringLiteral("layers.0"));  // a row at depth 2: layers > layers.0
    QCOMPARE(activated.size(), 2);
    QCOMPARE(panel.view()->currentIndex().data(SummaryModel::ScopePathRole).toString(),
             QStringLiteral("layers.0"));

    // A new graph keeps the depth.
    panel.setGraph(m_mlp);
    QCOMPARE(panel.depth(), -1);  // mlp-tiny's scopes are at most 1 deep: 2 is "all" there
    QCOMPARE(m->rowCount(), int(ir::summarize(*m_mlp, -1).scopes.size()) + 1);
    panel.setGraph(nullptr);
    QCOMPARE(m->rowCount(), 0);
  }

  void propertiesPanel() {
    auto scopes = std::make_shared<const ScopeTree>(*m_mlp);
    PropertiesPanel panel;
    panel.resize(560, 560);
    panel.setGraph(m_mlp, scopes);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QCOMPARE(panel.model()->rowCount(), 0);

    panel.showSelection(Selection::node(0));
    QTreeView* view = panel.view();
    const PropertiesModel& m = *panel.model();
    const QModelIndex inputs = findRow(m, QStringLiteral("Inputs"));
    QVERIFY(view->isExpanded(inputs));
    QVERIFY(view->isExpanded(findRow(m, QStringLiteral("Outputs"))));
    saveShot(panel, QStringLiteral("properties_panel_node"));

    // Clicking the output's link asks for that value.
    std::vector<Selection> requested;
    connect(&panel, &PropertiesPanel::selectionRequested, this,
            [&](Selection s) { requested.push_back(s); });
    const QModelIndex output = m.index(0, PropertiesModel::ValueColumn, findRow(m, QStringLiteral("Outputs")));
    clickCell(*view, output);
    QCOMPARE(requested.size(), size_t(1));
    QCOMPARE(requested.back(), Selection::value(m_mlp->node(0).outputs.front()));
    // Clicking a cell that links nowhere does nothing.
    clickCell(*view, findRow(m, QStringLiteral("op")).siblingAtColumn(PropertiesModel::ValueColumn));
    QCOMPARE(requested.size(), size_t(1));

    // Ctrl+C copies the selected row.
    QApplication::clipboard()->clear();
    view->setFocus();
    QTest::keyClick(view, Qt::Key_C, Qt::ControlModifier);
    QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("op\taten::linear"));

    // Enter on a linked row follows it.
    view->setCurrentIndex(findRow(m, QStringLiteral("scope")));
    QTest::keyClick(view, Qt::Key_Return);
    QCOMPARE(requested.back(), Selection::scope(scopes->find("hidden.0")));

    // What the main window does with the request: show it. The value's producer links back.
    panel.showSelection(requested.front());
    QCOMPARE(panel.selection(), requested.front());
    saveShot(panel, QStringLiteral("properties_panel_value"));
    const QModelIndex producer = findRow(m, QStringLiteral("producer"));
    QTest::qWait(QApplication::doubleClickInterval() + 50);
    clickCell(*view, producer.siblingAtColumn(PropertiesModel::ValueColumn));
    QCOMPARE(requested.back(), Selection::node(0));

    // Wired as the main window does (the request shows the target at once, resetting the model
    // under the click), following links hop by hop.
    connect(&panel, &PropertiesPanel::selectionRequested, &panel, &PropertiesPanel::showSelection);
    QTest::qWait(QApplication::doubleClickInterval() + 50);
    clickCell(*view, findRow(m, QStringLiteral("producer")).siblingAtColumn(PropertiesModel::ValueColumn));
    QCOMPARE(panel.selection(), Selection::node(0));
    QTest::qWait(QApplication::doubleClickInterval() + 50);
    clickCell(*view, findRow(m, QStringLiteral("scope")).siblingAtColumn(PropertiesModel::ValueColumn));
    QCOMPARE(panel.selection(), Selection::scope(scopes->find("hidden.0")));
    QTest::qWait(QApplication::doubleClickInterval() + 50);
    clickCell(*view, findRow(m, QStringLiteral("parent")).siblingAtColumn(PropertiesModel::ValueColumn));
    QCOMPARE(panel.selection(), Selection::scope(kRootScope));
    QVERIFY(m.rowCount() > 0);
    saveShot(panel, QStringLiteral("properties_panel_scope"));
    panel.showSelection({});
    QCOMPARE(m.rowCount(), 0);
  }

 private:
  std::shared_ptr<const ir::Graph> m_mlp, m_bert;
};

QTEST_MAIN(TestPanels)
#include "tst_panels.moc"
