// hap-studio end to end, driven as a user drives it: menu actions and shortcuts, the file dialogs,
// typing into the find bar, clicking and double-clicking in the graph, editing the cluster in its
// panel, saving and reopening; bad files show the CLI's message and leave the window usable.
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QLabel>
#include <QLineEdit>
#include <QTableWidget>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeView>
#include <QtTest>

#include "app/studio/core/models/cluster_model.h"
#include "app/studio/core/jobs/open_job.h"
#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/error_bar.h"
#include "app/studio/widgets/find_bar.h"
#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/inputs_dialog.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/properties_panel.h"
#include "app/studio/widgets/summary_panel.h"
#include "engine/cost/cluster.h"
#include "tests/studio/ui_driver.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::answerFileDialog;
using hap::studio::testing::whenDialog;

namespace {

QString zoo(const char* name) { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name; }
QString fixture(const char* name) { return qEnvironmentVariable("HAP_FIXTURE_DIR") + "/" + name; }
QString source(const char* name) { return qEnvironmentVariable("HAP_SOURCE_DIR") + "/" + name; }

// Every node box in the drawn layout that stands for node n: the node itself or its collapsed scope.
bool waitLaidOut(GraphView* view, QSignalSpy& spy, int timeout = 60000) {
  if (!spy.isEmpty() || spy.wait(timeout)) {
    // Further layouts may be queued behind this one (the view re-lays out after each change).
    while (view->layoutBusy()) spy.wait(200);
    return view->currentLayout() != nullptr;
  }
  return false;
}

QString propertiesText(PropertiesPanel* panel) {
  auto* tree = panel->findChild<QTreeView*>();
  QStringList rows;
  std::function<void(const QModelIndex&)> walk = [&](const QModelIndex& parent) {
    const QAbstractItemModel* m = tree->model();
    for (int r = 0; r < m->rowCount(parent); ++r) {
      rows << m->index(r, 0, parent).data().toString() + " = " + m->index(r, 1, parent).data().toString();
      walk(m->index(r, 0, parent));
    }
  };
  walk({});
  return rows.join('\n');
}

}  // namespace

class TstStudioE2e : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  std::unique_ptr<MainWindow> m_window;

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("HAP Studio tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_studio_e2e"));
    QSettings().clear();
    QVERIFY(m_dir.isValid());
    m_window = std::make_unique<MainWindow>();
    // A first start (no saved geometry) opens at the default size, not wider: every bottom dock
    // is tabbed, so the window's minimum is the widest one's.
    QCOMPARE(m_window->size(), QSize(1400, 900));
    // ... and fits a laptop's screen (1366 × 768, less the panel).
    QVERIFY2(m_window->minimumSize().width() <= 1100 && m_window->minimumSize().height() <= 700,
             qPrintable(QStringLiteral("%1 x %2").arg(m_window->minimumSize().width()).arg(m_window->minimumSize().height())));
    m_window->resize(1300, 850);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    m_window->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
  }

  void cleanupTestCase() { m_window.reset(); }

  // File ▸ Open Model…, through the file dialog, to the collapsed graph.
  void openModelFromMenu() {
    MainWindow& w = *m_window;
    QSignalSpy opened(&w, &MainWindow::modelOpened);
    QSignalSpy laidOut(w.graphView(), &GraphView::layoutFinished);
    answerFileDialog(zoo("bert-tiny.pt"));
    w.action("file.open")->trigger();
    QVERIFY(opened.wait(60000));
    QVERIFY(waitLaidOut(w.graphView(), laidOut));
    QVERIFY2(w.windowTitle().contains("bert-tiny.pt"), qPrintable(w.windowTitle()));
    // Collapsed by scope: every box is a collapsed scope, an input, or an op at the top level.
    const Layout* layout = w.graphView()->currentLayout();
    const ir::Graph& g = *w.model()->graph;
    int scopes = 0;
    for (const LayoutBox& b : layout->boxes) {
      if (b.kind == LayoutBox::Kind::CollapsedScope) ++scopes;
      if (b.kind == LayoutBox::Kind::Op) QCOMPARE(QString::fromStdString(g.node(b.id).scope), QString());
    }
    QVERIFY(scopes >= 2);
    QVERIFY(layout->boxes.size() < g.nodes.size() / 3);
    QVERIFY(w.recentFiles().value(0).endsWith("bert-tiny.pt"));
  }

  // Ctrl+F, type, Enter: the match is expanded into view, selected, and its properties shown.
  void findSelectsAndShowsProperties() {
    MainWindow& w = *m_window;
    QSignalSpy laidOut(w.graphView(), &GraphView::layoutFinished);
    // The user's keys go to the focused widget of the active window.
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    w.graphView()->setFocus();
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_F, Qt::ControlModifier);
    QVERIFY(w.findBar()->isVisible());
    QWidget* edit = QApplication::focusWidget();
    QVERIFY(qobject_cast<QLineEdit*>(edit));
    QTest::keyClicks(edit, "softmax");
    QTest::keyClick(edit, Qt::Key_Return);
    QVERIFY(waitLaidOut(w.graphView(), laidOut));
    const Selection s = w.graphView()->selection();
    QCOMPARE(s.kind, Selection::Kind::Node);
    const ir::Graph& g = *w.model()->graph;
    QCOMPARE(QString::fromStdString(g.node(s.id).op), QStringLiteral("aten::softmax"));
    // Expanded into view: the node has a box of its own.
    QVERIFY(w.graphView()->nodeBoxCentre(s.id).has_value());
    const QString props = propertiesText(w.propertiesPanel());
    QVERIFY2(props.contains("aten::softmax"), qPrintable(props));
    QVERIFY2(props.contains(QString::fromStdString(g.node(s.id).scope)), qPrintable(props));
    QTest::keyClick(edit, Qt::Key_Escape);
    QVERIFY(!w.findBar()->isVisible());
  }

  // Clicking a row of the model summary selects that scope in the graph.
  void summaryRowSelectsScope() {
    MainWindow& w = *m_window;
    QTreeView* table = w.summaryPanel()->view();
    const QAbstractItemModel* m = table->model();
    QModelIndex row;
    for (int r = 0; r < m->rowCount(); ++r)
      if (m->index(r, 0).data().toString() == "layers") row = m->index(r, 0);  // the ModuleList
    QVERIFY(row.isValid());
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(row).center());
    const ScopeId layer = w.model()->scopes->find("layers");
    QTRY_COMPARE(w.graphView()->selection(), Selection::scope(layer));
    QTRY_VERIFY(propertiesText(w.propertiesPanel()).contains("layers"));
  }

  // Double-click a collapsed scope to expand it; double-click its frame to collapse it again.
  void collapseAndExpandScope() {
    MainWindow& w = *m_window;
    GraphView* view = w.graphView();
    QSignalSpy laidOut(view, &GraphView::layoutFinished);
    view->collapseAll();
    QTRY_VERIFY_WITH_TIMEOUT(!view->layoutBusy() && view->layoutState() == view->collapseState(), 30000);
    const ScopeTree& tree = *w.model()->scopes;
    const ScopeId encoder = tree.find("layers");  // the ModuleList, one box collapsed
    QVERIFY(encoder > 0);
    QVERIFY(!view->collapseState().expanded(encoder));
    view->fitToWindow();
    auto centre = view->scopeBoxCentre(encoder);
    QVERIFY(centre.has_value());
    laidOut.clear();
    QTest::mouseDClick(view->viewport(), Qt::LeftButton, {}, view->mapFromScene(*centre));
    QVERIFY(waitLaidOut(view, laidOut));
    QVERIFY(view->collapseState().expanded(encoder));
    QVERIFY(!view->scopeBoxCentre(encoder).has_value());

    // Its frame: double-click the frame's label strip (top-left corner inside the frame).
    view->fitToWindow();
    const QRectF frame = view->clusterRect(encoder);
    QVERIFY(!frame.isEmpty());
    laidOut.clear();
    QTest::mouseDClick(view->viewport(), Qt::LeftButton, {}, view->mapFromScene(frame.topLeft() + QPointF(6, 6)));
    QVERIFY(waitLaidOut(view, laidOut));
    QVERIFY(!view->collapseState().expanded(encoder));
  }

  // File ▸ Open Cluster…, edit a machine's count in place, Save As…, reopen what was saved.
  void editSaveAndReopenCluster() {
    MainWindow& w = *m_window;
    ClusterPanel* panel = w.clusterPanel();
    answerFileDialog(source("resources/clusters/a100-p100-4.yaml"));
    w.action("file.openCluster")->trigger();
    QTRY_VERIFY(panel->hasCluster());
    QCOMPARE(panel->cluster().size(), 4);

    // The panel is a tab behind the summary: bring it up, then edit as a user does (F2, type, Enter).
    panel->parentWidget()->show();
    qobject_cast<QDockWidget*>(panel->parentWidget())->raise();
    QTreeView* tree = panel->view();
    ClusterModel* model = panel->model();
    const QModelIndex machine = model->machineIndex(1);
    tree->expand(machine);
    auto countCell = [model] {
      return model->propertyIndex(model->machineIndex(1), ClusterModel::Field::Count).siblingAtColumn(1);
    };
    QVERIFY(countCell().isValid());
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    tree->setFocus();
    // As a user edits a cell: select it, F2, type over the value, Enter.
    auto typeInto = [tree](const QModelIndex& index, const QString& text) {
      tree->scrollTo(index);
      tree->setCurrentIndex(index);
      QTest::keyClick(tree, Qt::Key_F2);
      auto* edit = tree->viewport()->findChild<QLineEdit*>();
      QVERIFY(edit);
      edit->selectAll();
      QTest::keyClicks(edit, text);
      QTest::keyClick(edit, Qt::Key_Return);
      QTRY_VERIFY(!tree->viewport()->findChild<QLineEdit*>() || !tree->viewport()->findChild<QLineEdit*>()->isVisible());
    };
    typeInto(countCell(), "3");
    QTRY_COMPARE(panel->cluster().size(), 5);
    QVERIFY(panel->isModified());
    QVERIFY2(w.windowTitle().contains("*"), qPrintable(w.windowTitle()));

    // An invalid count is refused with the loader's message, the value kept.
    typeInto(countCell(), "0");
    QVERIFY2(panel->message().contains("machines[1].count"), qPrintable(panel->message()));
    QCOMPARE(panel->cluster().size(), 5);

    const QString saved = m_dir.filePath("edited.yaml");
    answerFileDialog(saved);
    panel->saveAsAction()->trigger();
    QTRY_VERIFY(!panel->isModified());
    QCOMPARE(panel->path(), saved);

    // Reopen it through the menu: the edit is there.
    answerFileDialog(source("resources/clusters/local-cpu-3.yaml"));
    w.action("file.openCluster")->trigger();
    QTRY_COMPARE(panel->cluster().size(), 3);
    answerFileDialog(saved);
    w.action("file.openCluster")->trigger();
    QTRY_COMPARE(panel->path(), saved);
    const cost::Cluster reopened = panel->cluster();
    QCOMPARE(reopened.size(), 5);
    QCOMPARE(reopened.machines[1].count, 3);
    QCOMPARE(cost::loadCluster(saved.toStdString()).machines[1].count, 3);
  }

  // A file the CLI rejects shows the CLI's message; the window stays usable.
  void badFilesShowTheErrorAndStayUsable() {
    MainWindow& w = *m_window;
    QSignalSpy failed(&w, &MainWindow::openFailed);
    w.openModel(fixture("not_archive.pt"));
    QVERIFY(failed.wait(30000));
    QVERIFY2(w.lastError().contains("not_archive.pt") && w.lastError().contains("not a TorchScript archive"),
             qPrintable(w.lastError()));
    QVERIFY(w.findChild<ErrorBar*>()->isVisible());
    QVERIFY(w.model() && QString::fromStdString(w.model()->path).endsWith("bert-tiny.pt"));  // still open

    // An unsupported construct names the node and its source line.
    failed.clear();
    w.openModel(fixture("control_flow.pt"));
    QVERIFY(failed.wait(30000));
    QVERIFY2(w.lastError().contains("control_flow.pt") && w.lastError().contains(".py:"), qPrintable(w.lastError()));

    // A bad cluster names the field.
    const QString bad = m_dir.filePath("bad.yaml");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("name: bad\ndevice_types:\n  gpu: {flops: {float32: 1T}, memory: 1GiB, memory_bandwidth: 1GB/s}\n"
            "machines:\n  - {name: m0, host: h, device_type: gpu, count: -1}\n");
    f.close();
    QVERIFY(!w.openCluster(bad));
    QVERIFY2(w.lastError().contains("bad.yaml") && w.lastError().contains("count"), qPrintable(w.lastError()));

    // And it still opens a good model.
    QSignalSpy opened(&w, &MainWindow::modelOpened);
    w.openModel(zoo("mlp-tiny.pt"));
    QVERIFY(opened.wait(30000));
    QVERIFY(QString::fromStdString(w.model()->path).endsWith("mlp-tiny.pt"));
  }

  // A model without hap/inputs.json asks for forward's inputs by name.
  void modelWithoutInputSpecAsksForShapes() {
    MainWindow& w = *m_window;
    QSignalSpy opened(&w, &MainWindow::modelOpened);
    QStringList seen;
    whenDialog<InputsDialog>([&seen](InputsDialog* d) {
      seen << d->findChild<QTableWidget*>()->item(0, 0)->text() << d->findChild<QTableWidget*>()->item(1, 0)->text();
      d->setRow("x", "4x8", "float32");
      d->setRow("y", "4x", "int64");  // a typo: the CLI's message, the dialog stays
      d->accept();
      QVERIFY(d->isVisible());
      QVERIFY(d->findChild<QLabel*>("inputsError")->text().contains("--input"));
      d->setRow("y", "4", "int64", "0..10");
      d->accept();
    });
    w.openModel(fixture("no_spec.pt"));
    QVERIFY(opened.wait(30000));
    QCOMPARE(seen, (QStringList{"x", "y"}));
    const ir::Graph& g = *w.model()->graph;
    QCOMPARE(g.value(g.inputs[0]).shape, (ir::Shape{4, 8}));
  }

  // A plan is verified against the model before it is shown; a plan for another model is refused.
  void openPlanVerified() {
    MainWindow& w = *m_window;
    QSignalSpy modelOpened(&w, &MainWindow::modelOpened);
    w.openModel(zoo("mlp-tiny.pt"));
    QVERIFY(modelOpened.wait(30000));
    const QString plan = m_dir.filePath("mlp-plan.json");
    QProcess hap;
    hap.start(qEnvironmentVariable("HAP_BINARY_DIR") + "/app/cli/hap",
              {"plan", zoo("mlp-tiny.pt"), "-c", source("resources/clusters/a100-p100-4.yaml"), "-o", plan, "-q",
               "--no-baselines"});
    QVERIFY(hap.waitForFinished(120000));
    QVERIFY2(hap.exitCode() == 0, hap.readAllStandardError().constData());

    QSignalSpy planOpened(&w, &MainWindow::planOpened);
    answerFileDialog(plan);
    w.action("file.openPlan")->trigger();
    QVERIFY(planOpened.wait(60000));
    QVERIFY(w.plan());
    const QString text = w.findChild<QPlainTextEdit*>()->toPlainText();
    QVERIFY2(!text.isEmpty(), "the plan dock shows the plan's summary");

    // The same plan against another model: refused, naming why.
    QSignalSpy failed(&w, &MainWindow::openFailed);
    w.openPlan(plan, zoo("vit-tiny.pt"));
    QVERIFY(failed.wait(60000));
    QVERIFY2(w.lastError().contains("not the model this plan was made for"), qPrintable(w.lastError()));
  }

  // Drag and drop a model; the recent-files menu reopens it.
  void dropAndRecent() {
    MainWindow& w = *m_window;
    QSignalSpy opened(&w, &MainWindow::modelOpened);
    auto* mime = new QMimeData;
    mime->setUrls({QUrl::fromLocalFile(zoo("vit-tiny.pt"))});
    QDragEnterEvent enter(QPoint(200, 200), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(200, 200), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &drop);
    QVERIFY(opened.wait(30000));
    QVERIFY(QString::fromStdString(w.model()->path).endsWith("vit-tiny.pt"));
    delete mime;

    QVERIFY(w.recentFiles().size() >= 3);
    opened.clear();
    QAction* second = w.findChild<QAction*>("file.recent.1");  // the file before vit-tiny
    QVERIFY(second);
    const QString expected = w.recentFiles().value(1);
    second->trigger();
    if (MainWindow::kindOf(expected) == MainWindow::FileKind::Model) {
      QVERIFY(opened.wait(30000));
      QCOMPARE(QString::fromStdString(w.model()->path), expected);
    }
  }

  // Window layout persists.
  void stateSurvivesARestart() {
    m_window->close();
    QVERIFY(QSettings().contains("window/state"));
    m_window = std::make_unique<MainWindow>();
    QVERIFY(!m_window->recentFiles().isEmpty());
  }
};

QTEST_MAIN(TstStudioE2e)
#include "tst_studio_e2e.moc"
