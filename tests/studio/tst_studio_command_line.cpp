// hap-studio's command line as a user types it (issue 31): the real executable, run with a model
// and a good or a bad cluster, a model that does not exist, an --input the model does not take, a
// plan with its model; and the same argument handling in this process (openFromCommandLine), the
// window then driven only through its menus and shortcuts. Plan is enabled after MODEL --cluster C
// and Ctrl+R plans; every file that fails is named on stderr (exit status 1 with --screenshot)
// and listed in the Problems dock, whatever else the command line opened.
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QProcess>
#include <QRegularExpression>
#include <QTextBrowser>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

#include "app/studio/core/documents/plan_export.h"
#include "app/studio/widgets/error_bar.h"
#include "app/studio/widgets/getting_started.h"
#include "app/studio/widgets/graph_view.h"
#include "app/studio/widgets/main_window.h"
#include "app/studio/widgets/studio_main.h"

using namespace hap::studio;

namespace {

QString zoo(const char* name) { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name; }
QString source(const char* name) { return qEnvironmentVariable("HAP_SOURCE_DIR") + "/" + name; }

struct Run {
  int exitCode = -1;
  QString err;
};

// The real hap-studio, offscreen, with the user's arguments and --screenshot FILE.
Run studio(QStringList args, const QString& picture) {
  args << "--screenshot" << picture;
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("QT_QPA_PLATFORM", "offscreen");
  env.insert("XDG_CONFIG_HOME", QDir::temp().filePath("hap-studio-command-line-test-config"));  // not the user's
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(HAP_STUDIO_PATH), args);
  if (!p.waitForFinished(60000)) p.kill();
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardError())};
}

QString plain(QString text) { return text.remove(QLatin1Char('&')).remove(QStringLiteral("…")).simplified(); }

// An entry of the menu bar's menu `menu`, by the text the user reads ("Plan", "Compare Plans").
QAction* menuItem(QMainWindow& w, const QString& menu, const QString& item) {
  for (QAction* top : w.menuBar()->actions())
    if (top->menu() && plain(top->text()) == menu)
      for (QAction* a : top->menu()->actions())
        if (plain(a->text()) == item) return a;
  return nullptr;
}

QStringList problems(MainWindow& w) {
  QStringList rows;
  auto* list = w.findChild<QListWidget*>(QStringLiteral("problems"));
  for (int i = 0; list && i < list->count(); ++i) rows << list->item(i)->text();
  return rows;
}

bool problemsShown(MainWindow& w) {
  auto* dock = w.findChild<QDockWidget*>(QStringLiteral("dock.problems"));
  return dock && dock->isVisible();
}

}  // namespace

class TstStudioCommandLine : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;
  QString m_badCluster, m_badPlan, m_plan;
  QString m_model = zoo("mlp-tiny.pt");
  QString m_cluster = source("resources/clusters/local-cpu-3.yaml");

  // A window with `args` (the program's name first) opened as main() opens them, once every file
  // has opened or failed.
  std::unique_ptr<MainWindow> opened(const QStringList& args, QStringList* failures = nullptr) {
    auto w = std::make_unique<MainWindow>();
    w->resize(1280, 720);
    QString error;
    CommandLineOpening* opening = openFromCommandLine(*w, QStringList{"hap-studio"} + args, &error);
    if (!opening) {
      qWarning("usage error: %s", qPrintable(error));
      return nullptr;
    }
    QSignalSpy done(opening, &CommandLineOpening::finished);
    if (!done.wait(60000)) {
      qWarning("the command line's files did not finish opening");
      return nullptr;
    }
    if (failures) *failures = opening->failures();
    return w;
  }

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("HAP Studio tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_studio_command_line"));
    QSettings().clear();
    QVERIFY(m_dir.isValid());
    QVERIFY2(QFile::exists(m_model), qPrintable(m_model));
    m_badCluster = m_dir.filePath("broken-cluster.yaml");
    QFile bad(m_badCluster);
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("name: broken\nmachines: [oops\n");
    bad.close();
    m_badPlan = m_dir.filePath("not-a-plan.json");
    QFile plan(m_badPlan);
    QVERIFY(plan.open(QIODevice::WriteOnly));
    plan.write("{}\n");
  }

  // MODEL --cluster C, as the README says: Plan is enabled, Ctrl+R plans, and then the plan's
  // commands are enabled (they were not before).
  void modelAndClusterThenCtrlR() {
    QStringList failures;
    std::unique_ptr<MainWindow> w = opened({m_model, "--cluster", m_cluster}, &failures);
    QVERIFY(w);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.join('\n')));
    QVERIFY(w->model());
    QVERIFY(!problemsShown(*w));
    QAction* plan = menuItem(*w, "Plan", "Plan");
    QAction* launchScripts = menuItem(*w, "Plan", "Export Launch Scripts");
    QAction* compare = menuItem(*w, "Plan", "Compare Plans");
    QAction* start = menuItem(*w, "Run", "Start Training Run");
    QVERIFY(plan && launchScripts && compare && start);
    QVERIFY(plan->isEnabled());
    QVERIFY(menuItem(*w, "Run", "Tune")->isEnabled());
    QVERIFY(!launchScripts->isEnabled());
    QVERIFY(!compare->isEnabled());
    QVERIFY(!start->isEnabled());
    QVERIFY(!start->toolTip().isEmpty());  // says what it waits for

    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    QSignalSpy planned(w.get(), &MainWindow::planFinished);
    QSignalSpy failed(w.get(), &MainWindow::planFailed);
    // The user's keys go to the focused widget of the active window.
    w->graphView()->setFocus();
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_R, Qt::ControlModifier);
    QVERIFY2(w->isPlanning() || !planned.isEmpty(), qPrintable(w->lastError()));
    QVERIFY2(planned.wait(30000), qPrintable(failed.isEmpty() ? QString() : failed[0][0].toString()));
    QVERIFY(w->plan());
    QVERIFY(launchScripts->isEnabled());
    QVERIFY(compare->isEnabled());
    QVERIFY(start->isEnabled());
    compare->trigger();
    QVERIFY(w->findChild<QDockWidget*>(QStringLiteral("dock.compare"))->isVisible());

    // The plan, written for the tests below.
    m_plan = m_dir.filePath("mlp-local-cpu-3.json");
    QCOMPARE(QString::fromStdString(exportPlanFile(*w->plan(), m_plan.toStdString())), QString());
  }

  // A bad cluster given with a good model: the model opens, the cluster's error stays in the error
  // bar and in Problems, and Plan waits for a cluster.
  void badClusterWithAModelIsShown() {
    QStringList failures;
    std::unique_ptr<MainWindow> w = opened({m_model, "--cluster", m_badCluster}, &failures);
    QVERIFY(w);
    QVERIFY(w->model());
    QCOMPARE(failures.size(), 1);
    QVERIFY2(failures[0].contains("broken-cluster.yaml"), qPrintable(failures[0]));
    QVERIFY(problemsShown(*w));
    const QStringList rows = problems(*w);
    QVERIFY2(rows.size() == 1 && rows[0].contains("broken-cluster.yaml:"), qPrintable(rows.join('\n')));
    auto* bar = w->findChild<ErrorBar*>();
    QVERIFY(bar && bar->isVisible());
    QVERIFY2(bar->message().contains("broken-cluster.yaml"), qPrintable(bar->message()));
    QVERIFY(!menuItem(*w, "Plan", "Plan")->isEnabled());
    // The Problems dock is wide enough to read (it opened 150 px wide).
    QVERIFY2(w->findChild<QDockWidget*>(QStringLiteral("dock.problems"))->width() >= 400,
             qPrintable(QString::number(w->findChild<QDockWidget*>(QStringLiteral("dock.problems"))->width())));
  }

  // Every input that fails is listed, each naming its file.
  void everyFailedInputIsListed() {
    const QString missing = m_dir.filePath("no-such-model.pt");
    QStringList failures;
    std::unique_ptr<MainWindow> w = opened({missing, "--cluster", m_badCluster}, &failures);
    QVERIFY(w);
    QCOMPARE(failures.size(), 2);
    const QString rows = problems(*w).join('\n');
    QVERIFY2(problems(*w).size() == 2 && rows.contains("no-such-model.pt") && rows.contains("broken-cluster.yaml"),
             qPrintable(rows));

    // An --input the model does not take: the model's import fails, naming the file and the input.
    w = opened({m_model, "--input", "zz=4x8"}, &failures);
    QVERIFY(w);
    QVERIFY(!w->model());
    QCOMPARE(failures.size(), 1);
    QVERIFY2(problems(*w).join('\n').contains("mlp-tiny.pt") && problems(*w).join('\n').contains("'zz'"),
             qPrintable(problems(*w).join('\n')));

    // A plan that is not one, with its model: the plan's error is listed, and the model opens.
    w = opened({m_model, "--cluster", m_cluster, "--plan", m_badPlan}, &failures);
    QVERIFY(w);
    QCOMPARE(failures.size(), 1);
    QVERIFY2(problems(*w).join('\n').contains("not-a-plan.json"), qPrintable(problems(*w).join('\n')));
    QVERIFY(w->model());
    QVERIFY(menuItem(*w, "Plan", "Plan")->isEnabled());

    // An --input that does not parse is a usage error, as hap plan's.
    MainWindow unused;
    QString error;
    QVERIFY(!openFromCommandLine(unused, QStringList{"hap-studio", m_model, "--input", "x=4xz"}, &error));
    QVERIFY2(error.contains("--input 'x=4xz'"), qPrintable(error));
  }

  // MODEL --cluster C --plan PLAN: the plan is shown and everything it enables is.
  void planWithItsModel() {
    QVERIFY(!m_plan.isEmpty());
    QStringList failures;
    std::unique_ptr<MainWindow> w = opened({m_model, "--cluster", m_cluster, "--plan", m_plan}, &failures);
    QVERIFY(w);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.join('\n')));
    QVERIFY(w->plan() && w->model());
    for (const char* item : {"Plan", "Export Launch Scripts", "Compare Plans"})
      QVERIFY2(menuItem(*w, "Plan", item)->isEnabled(), item);
    QVERIFY(menuItem(*w, "Run", "Start Training Run")->isEnabled());
  }

  // Help ▸ Getting Started: the page opens, and every menu entry it names ("**Plan ▸ Plan**
  // (Ctrl+R)") is one of the window's, with that shortcut.
  void gettingStartedNamesRealMenus() {
    MainWindow w;
    w.show();
    QAction* help = menuItem(w, "Help", "Getting Started");
    QVERIFY(help && help->isEnabled());
    help->trigger();
    auto* page = w.findChild<GettingStartedDialog*>();
    QVERIFY(page && page->isVisible());
    const QString text = GettingStartedDialog::markdown();
    QVERIFY(text.contains("open → plan → run → tune"));
    QVERIFY(page->browser()->toPlainText().contains("Getting started"));
    static const QRegularExpression entry(QStringLiteral("\\*\\*(\\w+) ▸ ([^*]+)\\*\\*(?: \\(([^)]+)\\))?"));
    int checked = 0;
    for (auto m = entry.globalMatch(text); m.hasNext();) {
      const QRegularExpressionMatch e = m.next();
      QAction* a = menuItem(w, e.captured(1), plain(e.captured(2)));
      QVERIFY2(a, qPrintable(e.captured(0)));
      const QString keys = e.captured(3);
      if (keys.contains('+') && !keys.contains(' '))
        QVERIFY2(a->shortcut().toString() == keys, qPrintable(e.captured(0) + " is " + a->shortcut().toString()));
      ++checked;
    }
    QVERIFY(checked >= 10);
  }

  // The real executable: exit status and stderr.
  void theExecutable_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QStringList>("named");  // what stderr must name
    QTest::newRow("model and cluster") << QStringList{m_model, "--cluster", m_cluster} << 0 << QStringList{};
    QTest::newRow("model and a bad cluster")
        << QStringList{m_model, "--cluster", m_badCluster} << 1 << QStringList{"broken-cluster.yaml"};
    QTest::newRow("a model that does not exist")
        << QStringList{m_dir.filePath("no-such-model.pt"), "--cluster", m_badCluster} << 1
        << QStringList{"no-such-model.pt", "broken-cluster.yaml"};
    QTest::newRow("an input the model does not take")
        << QStringList{m_model, "--input", "zz=4x8"} << 1 << QStringList{"mlp-tiny.pt", "'zz'"};
    QTest::newRow("a model without input shapes")  // the window would ask for them
        << QStringList{qEnvironmentVariable("HAP_FIXTURE_DIR") + "/no_spec.pt"} << 1
        << QStringList{"no_spec.pt", "--input x="};
    QTest::newRow("an input that does not parse")
        << QStringList{m_model, "--input", "x=4xz"} << 2 << QStringList{"--input 'x=4xz'"};
    QTest::newRow("a plan with its model")
        << QStringList{m_model, "--cluster", m_cluster, "--plan", m_plan} << 0 << QStringList{};
    QTest::newRow("a bad plan with a model")
        << QStringList{m_model, "--plan", m_badPlan} << 1 << QStringList{"not-a-plan.json"};
  }
  void theExecutable() {
    QFETCH(QStringList, args);
    QFETCH(int, exitCode);
    QFETCH(QStringList, named);
    const QString picture = m_dir.filePath(QStringLiteral("%1.png").arg(QTest::currentDataTag()).replace(' ', '-'));
    const Run r = studio(args, picture);
    QVERIFY2(r.exitCode == exitCode, qPrintable(QStringLiteral("exit %1: %2").arg(r.exitCode).arg(r.err)));
    for (const QString& name : named) QVERIFY2(r.err.contains(name), qPrintable(name + " not in: " + r.err));
    if (exitCode != 2) QVERIFY(!QImage(picture).isNull());  // the window, showing why when a file failed
  }
};

QTEST_MAIN(TstStudioCommandLine)
#include "tst_studio_command_line.moc"
