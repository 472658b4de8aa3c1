// Planning in hap-studio end to end, driven through the window's own actions: open a tiny zoo model
// and the 4-device cluster, Plan, wait, and check that every view holds the plan's figures; export
// the plan, trace, report and launch scripts through the menus and compare them with what the CLI
// writes for the same options; cancel a long search and get control back; pin a variant from the
// graph's context menu and re-plan; open a baseline as a plan; compare two plans.
#include <QAction>
#include <QContextMenuEvent>
#include <QMenu>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "app/studio/core/models/baselines_model.h"
#include "app/studio/core/models/explain_model.h"
#include "app/studio/core/models/plan_comparison.h"
#include "app/studio/core/models/plan_history_model.h"
#include "app/studio/core/jobs/plan_job.h"
#include "app/studio/core/models/search_progress_model.h"
#include "app/studio/widgets/baselines_view.h"
#include "app/studio/widgets/cluster_panel.h"
#include "app/studio/widgets/compare_view.h"
#include "app/studio/widgets/explain_view.h"
#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/plan_panel.h"
#include "app/studio/widgets/ratios_view.h"
#include "app/studio/widgets/search_view.h"
#include "app/studio/widgets/stages_view.h"
#include "engine/plan/explain.h"
#include "tests/studio/ui_driver.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::answerFileDialog;

namespace {

QString zoo(const char* name) { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name; }
QString source(const char* name) { return qEnvironmentVariable("HAP_SOURCE_DIR") + "/" + name; }
QString hap() { return qEnvironmentVariable("HAP_BINARY_DIR") + "/app/cli/hap"; }

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// A plan file with its two wall-clock timings (search.seconds, balance.lp_seconds; no other key is
// named so) set to zero: the only bytes two runs of the same planning may differ in.
QByteArray withoutTimings(const QByteArray& json) {
  QString text = QString::fromUtf8(json);
  text.replace(QRegularExpression(QStringLiteral("(?<=\"seconds\": |\"lp_seconds\": )[0-9.eE+-]+")), QStringLiteral("0"));
  return text.toUtf8();
}

bool runHap(const QStringList& args, QString* output = nullptr) {
  QProcess p;
  p.start(hap(), args);
  if (!p.waitForFinished(120000)) return false;
  if (output) *output = QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
  if (p.exitCode() != 0) qWarning().noquote() << "hap" << args.join(' ') << ":" << p.readAllStandardError();
  return p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

}  // namespace

class TstStudioPlanE2e : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  std::unique_ptr<MainWindow> m_window;

  bool planAndWait(int timeout = 120000) {
    QSignalSpy finished(m_window.get(), &MainWindow::planFinished);
    QSignalSpy failed(m_window.get(), &MainWindow::planFailed);
    m_window->action(QStringLiteral("plan.plan"))->trigger();
    if (!m_window->isPlanning()) return false;
    QTest::qWaitFor([&] { return !finished.isEmpty() || !failed.isEmpty(); }, timeout);
    if (!failed.isEmpty()) qWarning() << "planning failed:" << failed.first().first().toString();
    return !finished.isEmpty();
  }

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("HAP Studio tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_studio_plan_e2e"));
    QSettings().clear();
    QVERIFY(m_dir.isValid());
    m_window = std::make_unique<MainWindow>();
    m_window->resize(1400, 900);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
  }

  void cleanupTestCase() { m_window.reset(); }

  // File ▸ Open Model… and Open Cluster… through their dialogs, then Plan ▸ Plan (Ctrl+R).
  void planFromTheMenu() {
    MainWindow& w = *m_window;
    QVERIFY(!w.action(QStringLiteral("plan.plan"))->isEnabled());  // nothing to plan yet
    QSignalSpy opened(&w, &MainWindow::modelOpened);
    answerFileDialog(zoo("bert-tiny.pt"));
    w.action(QStringLiteral("file.open"))->trigger();
    QVERIFY(opened.wait(60000));
    answerFileDialog(source("resources/clusters/local-cpu-4.yaml"));
    w.action(QStringLiteral("file.openCluster"))->trigger();
    QVERIFY(w.clusterPanel()->hasCluster());
    QVERIFY(w.action(QStringLiteral("plan.plan"))->isEnabled());
    QCOMPARE(w.planPanel()->commandLine(), QStringLiteral("hap plan bert-tiny.pt --cluster local-cpu-4.yaml"));

    QVERIFY(planAndWait());
    auto doc = w.plan();
    QVERIFY(doc);
    const plan::Plan& p = doc->p();

    // Search: the log holds the searches and the LP, the outcome says what the search proved.
    QVERIFY(w.searchProgress()->searches() >= 1);
    QVERIFY(w.searchProgress()->log()->rowCount() >= 2);
    bool sawLp = false;
    for (const PlanningLogModel::Row& r : w.searchProgress()->log()->rows()) sawLp = sawLp || r.name == "lp";
    QVERIFY(sawLp);
    QVERIFY(w.searchProgress()->openStates()->rowCount() > 0);  // the last search's best open states
    QVERIFY(w.searchView()->outcomeText().contains(p.provenOptimal ? "proven optimal" : "not proven optimal"));
    // The views behind other tabs fill when their tab is chosen.
    QCOMPARE(w.stagesView()->rowCount(), 0);
    auto showTab = [&w](const char* dock) {
      auto* d = w.findChild<QDockWidget*>(QString::fromLatin1(dock));
      QVERIFY(d);
      d->raise();
      QTRY_VERIFY(!d->visibleRegion().isEmpty());
    };
    showTab("dock.stages");
    showTab("dock.ratios");
    showTab("dock.baselines");
    showTab("dock.explain");
    // Stages: a row per device, the simulated total equal to the prediction.
    QCOMPARE(w.stagesView()->rowCount(), static_cast<int>(p.devices.size()));
    QCOMPARE(w.stagesView()->timeline(0).totalSeconds, doc->timeline.totalSeconds);
    QVERIFY(std::abs(doc->timeline.totalSeconds - p.estimate.iterationSeconds) <= 1e-9 * p.estimate.iterationSeconds);
    // Clicking a collapsed scope in the graph highlights the stages its nodes run in.
    {
      GraphView* view = w.graphView();
      const ScopeId layer = w.model()->scopes->find("layers");  // the ModuleList, one box
      QVERIFY(layer >= 0);
      view->collapseAll();
      QTRY_VERIFY_WITH_TIMEOUT(!view->layoutBusy() && view->scopeBoxCentre(layer).has_value(), 30000);
      view->centerOn(*view->scopeBoxCentre(layer));
      QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->mapFromScene(*view->scopeBoxCentre(layer)));
      const std::vector<int> steps = w.stagesView()->highlightedSteps();
      QVERIFY(!steps.empty());
      for (int step : steps) {
        const ir::NodeId n = doc->stepNode(step);
        QVERIFY(w.model()->scopes->contains(layer, w.model()->scopes->scopeOfNode(n)));
      }
    }
    // Ratios: a row per segment with the LP's shares.
    const QAbstractItemModel* ratios = w.ratiosView()->ratiosModel();
    QCOMPARE(ratios->rowCount(), static_cast<int>(p.segments.size()));
    for (int s = 0; s < ratios->rowCount(); ++s)
      for (size_t j = 0; j < p.devices.size(); ++j)
        QCOMPARE(ratios->index(s, static_cast<int>(j) + 1).data(Qt::UserRole).toDouble(),
                 p.segments[static_cast<size_t>(s)].ratios[j]);
    // Baselines: HAP and each baseline, with their predicted times.
    const QAbstractItemModel* baselines = w.baselinesView()->findChild<QTableView*>()->model();
    QCOMPARE(baselines->rowCount(), static_cast<int>(p.baselines.size()) + 1);
    QCOMPARE(baselines->index(0, BaselinesModel::TimeColumn).data(BaselinesModel::ValueRole).toDouble(),
             p.estimate.iterationSeconds);
    for (size_t b = 0; b < p.baselines.size(); ++b)
      if (p.baselines[b].applicable)
        QCOMPARE(baselines->index(static_cast<int>(b) + 1, BaselinesModel::TimeColumn)
                     .data(BaselinesModel::ValueRole)
                     .toDouble(),
                 p.baselines[b].estimate.iterationSeconds);
    // Explain: a row per step with its variant; the text is `hap plan --explain`'s.
    const QAbstractItemModel* explain = w.explainView()->findChild<QTableView*>()->model();
    QCOMPARE(explain->rowCount(), static_cast<int>(p.steps.size()));
    for (int r = 0; r < explain->rowCount(); ++r) {
      const int step = explain->index(r, 0).data(ExplainModel::StepRole).toInt();
      const plan::PlanStep& ps = p.steps[static_cast<size_t>(step)];
      QCOMPARE(explain->index(r, ExplainModel::VariantColumn).data().toString().toStdString(),
               ps.kind == plan::PlanStep::Kind::Compute ? ps.variant : ps.instruction);
    }
    QCOMPARE(w.findChild<QPlainTextEdit*>(QStringLiteral("planSummary"))->toPlainText(),
             QString::fromStdString(plan::formatSummary(p)));
    // The plan's colourings are enabled.
    QVERIFY(w.action(QStringLiteral("view.colourBy.%1").arg(static_cast<int>(ColourBy::ShardingForm)))->isEnabled());
    QCOMPARE(w.planHistory()->rowCount(), 1);
  }

  // Every export equals what the CLI writes for the same options.
  void exportsEqualTheCli() {
    MainWindow& w = *m_window;
    const QString model = zoo("bert-tiny.pt"), cluster = source("resources/clusters/local-cpu-4.yaml");
    const QString cliPlan = m_dir.filePath("cli-plan.json"), appPlan = m_dir.filePath("app-plan.json");
    QVERIFY(runHap({"plan", model, "--cluster", cluster, "-o", cliPlan, "-q"}));
    answerFileDialog(appPlan);
    w.action(QStringLiteral("plan.exportPlan"))->trigger();
    QVERIFY(QFile::exists(appPlan));
    QCOMPARE(QString::fromStdString(w.plan()->path), appPlan);
    const QByteArray cli = readAll(cliPlan), app = readAll(appPlan);
    QVERIFY(!cli.isEmpty());
    QCOMPARE(withoutTimings(app), withoutTimings(cli));

    // Trace and report: `hap simulate PLAN --trace --report` on the app's own plan file.
    const QString cliTrace = m_dir.filePath("cli-trace.json"), cliReport = m_dir.filePath("cli-report.md");
    QVERIFY(runHap({"simulate", appPlan, "--trace", cliTrace, "--report", cliReport}));
    const QString appTrace = m_dir.filePath("app-trace.json"), appReport = m_dir.filePath("app-report.md");
    answerFileDialog(appTrace);
    w.action(QStringLiteral("plan.exportTrace"))->trigger();
    answerFileDialog(appReport);
    w.action(QStringLiteral("plan.exportReport"))->trigger();
    QCOMPARE(readAll(appTrace), readAll(cliTrace));
    QCOMPARE(readAll(appReport), readAll(cliReport));

    // Launch scripts: `hap launch PLAN --emit slurm DIR`.
    const QString cliDir = m_dir.filePath("cli-slurm"), appDir = m_dir.filePath("app-slurm");
    QVERIFY(runHap({"launch", appPlan, "--emit", "slurm", cliDir}));
    QVERIFY(QDir().mkpath(appDir));
    answerFileDialog(appDir);
    w.action(QStringLiteral("plan.exportSlurm"))->trigger();
    const QStringList files = QDir(cliDir).entryList(QDir::Files);
    QVERIFY(!files.isEmpty());
    QCOMPARE(QDir(appDir).entryList(QDir::Files), files);
    for (const QString& f : files) QCOMPARE(readAll(appDir + "/" + f), readAll(cliDir + "/" + f));
    // The same refusal: a folder that is not empty.
    QSignalSpy failed(&w, &MainWindow::openFailed);
    answerFileDialog(appDir);
    w.action(QStringLiteral("plan.exportSlurm"))->trigger();
    QCOMPARE(failed.count(), 1);
    QVERIFY2(w.lastError().contains("not empty"), qPrintable(w.lastError()));
  }

  // Right-click a node ▸ Compute under variant ▸ X: the pin is added and the model re-planned.
  void pinFromTheGraphAndReplan() {
    MainWindow& w = *m_window;
    auto before = w.plan();
    // A linear computed under another variant than the plan chose.
    ir::NodeId node = ir::kNone;
    std::string chosen;
    for (const plan::PlanStep& s : before->p().steps) {
      const ir::NodeId n = s.kind == plan::PlanStep::Kind::Compute ? before->importedNode[static_cast<size_t>(s.node)] : ir::kNone;
      if (n >= 0 && before->imported->node(n).op == "aten::linear") {
        node = n;
        chosen = s.variant;
        break;
      }
    }
    QVERIFY(node >= 0);
    const QString pattern = QString::fromStdString(before->imported->node(node).scope);
    const QString other = QString::fromStdString(chosen == "replicate" ? "data" : "replicate");
    // Bring the node into view, right-click it, Compute under variant ▸ other.
    GraphView* view = w.graphView();
    QSignalSpy laidOut(view, &GraphView::layoutFinished);
    view->reveal(node);
    QTRY_VERIFY_WITH_TIMEOUT(!view->layoutBusy() && view->nodeBoxCentre(node).has_value(), 30000);
    view->waitForRuleVariants();
    view->centerOn(*view->nodeBoxCentre(node));
    const QPoint at = view->mapFromScene(*view->nodeBoxCentre(node));
    QSignalSpy finished(&w, &MainWindow::planFinished);
    QSignalSpy pins(view, &GraphView::pinRequested);
    bool picked = false;
    hap::studio::testing::whenMenu([&](QMenu* menu) {
      for (QAction* a : menu->actions())
        if (a->menu() && a->menu()->objectName() == QStringLiteral("graph.computeUnderVariant"))
          for (QAction* v : a->menu()->actions())
            if (v->text() == other) {
              picked = true;
              v->trigger();
            }
      menu->close();
    });
    QContextMenuEvent click(QContextMenuEvent::Mouse, at, view->viewport()->mapToGlobal(at));
    QApplication::sendEvent(view->viewport(), &click);
    QVERIFY(picked);
    QCOMPARE(pins.count(), 1);
    QVERIFY(w.isPlanning());
    QVERIFY(finished.wait(120000));
    QCOMPARE(w.planPanel()->request().pins, std::vector<std::string>{(pattern + "=" + other).toStdString()});
    auto after = w.plan();
    QVERIFY(after != before);
    const std::vector<int> steps = after->stepsOfNode(node);
    bool pinned = false;
    for (int s : steps)
      if (after->p().steps[static_cast<size_t>(s)].kind == plan::PlanStep::Kind::Compute)
        pinned = after->p().steps[static_cast<size_t>(s)].variant == other.toStdString();
    QVERIFY(pinned);
    QCOMPARE(w.planHistory()->rowCount(), 2);
  }

  // Baselines ▸ Open as Plan plans the baseline; the Compare view lists what changed.
  void baselineAsPlanAndCompare() {
    MainWindow& w = *m_window;
    QSignalSpy finished(&w, &MainWindow::planFinished);
    Q_EMIT w.baselinesView()->openBaselineRequested(QStringLiteral("dp-cp"));
    QVERIFY(finished.wait(120000));
    QCOMPARE(w.plan()->p().strategy, std::string("dp-cp"));
    QCOMPARE(w.planHistory()->rowCount(), 3);
    // Compare: the two newest, the pinned HAP plan against DP-CP, with the nodes whose variant
    // changed outlined in the graph by the Highlight button.
    CompareView* compare = w.compareView();
    QCOMPARE(compare->rowA(), 1);
    QCOMPARE(compare->rowB(), 2);
    const PlanComparison& c = compare->comparison();
    QCOMPARE(c.a.iterationSeconds, w.planHistory()->plan(1)->p().estimate.iterationSeconds);
    QCOMPARE(c.b.iterationSeconds, w.plan()->p().estimate.iterationSeconds);
    QVERIFY(!c.changedNodes().empty());
    QTest::mouseClick(compare->highlightButton(), Qt::LeftButton);
    QCOMPARE(w.graphView()->highlightedNodes(), c.changedNodes());
    bool marked = false;
    QTRY_VERIFY(w.graphView()->currentLayout() != nullptr);
    for (size_t b = 0; b < w.graphView()->currentLayout()->boxes.size(); ++b)
      marked = marked || w.graphView()->boxMarked(static_cast<int>(b));
    QVERIFY(marked);
  }

  // A long planning run (BERT-MoE, 48 layers, on the 64-GPU testbed) is cancelled from the Plan
  // panel; control returns at once, nothing is delivered, and planning again works.
  void cancelGivesControlBack() {
    MainWindow& w = *m_window;
    QSignalSpy opened(&w, &MainWindow::modelOpened);
    w.openModel(zoo("bert_moe-48.pt"));
    QVERIFY(opened.wait(60000));
    QCOMPARE(w.planHistory()->rowCount(), 0);  // plans of the previous model are gone
    answerFileDialog(source("resources/clusters/paper-testbed-64.yaml"));
    w.action(QStringLiteral("file.openCluster"))->trigger();
    QCOMPARE(w.clusterPanel()->cluster().size(), 64);
    QSignalSpy cancelled(&w, &MainWindow::planCancelled);
    QSignalSpy stopped(w.planJob(), &PlanJob::workerStopped);
    QVERIFY(w.startPlanning());
    QTest::qWait(300);  // searching
    QVERIFY(w.isPlanning());
    QElapsedTimer t;
    t.start();
    QTest::mouseClick(w.planPanel()->cancelButton(), Qt::LeftButton);
    const qint64 control = t.elapsed();
    QCOMPARE(cancelled.count(), 1);
    QVERIFY(!w.isPlanning());
    QVERIFY2(control < 100, qPrintable(QStringLiteral("%1 ms").arg(control)));
    QVERIFY(w.searchView()->statusText().contains("cancelled"));
    QVERIFY(stopped.wait(30000));  // the engine noticed and its thread ended
    QVERIFY2(stopped.first().first().toDouble() < 1.0, qPrintable(QString::number(stopped.first().first().toDouble())));
    QCOMPARE(w.planHistory()->rowCount(), 0);  // nothing delivered from the cancelled run
    QVERIFY(planAndWait());
    QCOMPARE(w.planHistory()->rowCount(), 1);
    QCOMPARE(w.plan()->p().devices.size(), size_t{64});
  }
};

QTEST_MAIN(TstStudioPlanE2e)
#include "tst_studio_plan_e2e.moc"
