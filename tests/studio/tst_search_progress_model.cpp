// The live search view's data and view: snapshots accumulate into a bounded series, a planning log
// with each step's cost and outcome, and the newest open states; an open state's partial program
// maps to variant names per imported node; the view charts finite points only and emits the
// clicked state's program.
#include <QAbstractItemModelTester>
#include <QLineSeries>
#include <QSignalSpy>
#include <QTableView>
#include <QtTest>

#include <cmath>
#include <limits>

#include "app/studio/core/models/search_progress_model.h"
#include "app/studio/widgets/search_view.h"

using namespace hap;
using namespace hap::studio;

namespace {

// Names for a searched graph of three nodes, the second a reshard (no imported node).
std::shared_ptr<const SearchGraphNames> names() {
  auto n = std::make_shared<SearchGraphNames>();
  n->variants = {{"replicate", "data"}, {"reshard"}, {"replicate", "column", "row"}};
  n->importedNode = {0, -1, 1};
  n->ops = {"embedding", "hap::reshard", "linear"};
  return n;
}

PlanningEvent step(PlanningEvent::Kind kind, const char* name, double at, double cost = -1, bool adopted = false) {
  PlanningEvent e;
  e.kind = kind;
  e.name = name;
  e.seconds = at;
  e.cost = cost;
  e.adopted = adopted;
  return e;
}

}  // namespace

class TstSearchProgressModel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void partialProgramsMapToImportedNodes() {
    const auto n = names();
    QCOMPARE(n->variantsByImportedNode({1, 0, 2}, 2), (std::vector<std::string>{"data", "row"}));
    QCOMPARE(n->variantsByImportedNode({1}, 2), (std::vector<std::string>{"data", ""}));  // undecided
    QCOMPARE(n->lastChoices({1, 0, 2}, 2), std::string("…, hap::reshard:reshard, linear:row"));
  }

  void logsStepsWithTheirOutcome() {
    PlanningLogModel log;
    QAbstractItemModelTester tester(&log, QAbstractItemModelTester::FailureReportingMode::QtTest);
    log.add({step(PlanningEvent::Kind::StepStarted, "search", 0.0),
             step(PlanningEvent::Kind::StepStarted, "search from even", 0.0)});
    QCOMPARE(log.rowCount(), 2);
    QVERIFY(log.index(0, PlanningLogModel::Outcome).data().toString().contains("running"));
    log.add({step(PlanningEvent::Kind::StepFinished, "search", 0.5, 0.004, true),
             step(PlanningEvent::Kind::StepFinished, "search from even", 0.6, 0.005, false),
             step(PlanningEvent::Kind::StepStarted, "lp", 0.6), step(PlanningEvent::Kind::StepFinished, "lp", 0.61, -1)});
    QCOMPARE(log.rowCount(), 3);
    QCOMPARE(log.rows()[0].cost, 0.004);
    QCOMPARE(log.index(0, PlanningLogModel::Outcome).data().toString(), QStringLiteral("adopted"));
    QCOMPARE(log.index(1, PlanningLogModel::Outcome).data().toString(), QStringLiteral("no better"));
    QCOMPARE(log.index(2, PlanningLogModel::Outcome).data().toString(), QStringLiteral("no feasible ratios"));
    QCOMPARE(log.index(0, PlanningLogModel::Cost).data().toString(), QStringLiteral("4.000 ms"));
  }

  void seriesIsBoundedAndOpenStatesFollowTheNewest() {
    SearchProgressModel model;
    QAbstractItemModelTester tester(model.openStates(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setMaxPoints(64);
    model.reset();
    SearchSnapshot first;
    first.events = {step(PlanningEvent::Kind::SearchStarted, "search", 0)};
    for (int i = 0; i < 200; ++i) first.samples.push_back({i * 0.01, 0, i * 10, 5, 0.001, -1});
    synth::SearchProgress p;
    p.expanded = 1990;
    p.nodes = 3;
    p.open = {{0.001, 0.002, 2, {1, 0}}, {0.0015, 0.002, 1, {0}}};
    first.latest = p;
    first.names = names();
    model.add(first);
    QVERIFY(model.samples().size() <= 64);
    QCOMPARE(model.samples().back().expanded, int64_t{1990});  // the newest kept
    QCOMPARE(model.openStates()->rowCount(), 2);
    QCOMPARE(model.openStates()->index(0, OpenStatesModel::F).data(Qt::UserRole).toDouble(), 0.003);
    QCOMPARE(model.openStates()->partialVariants(0, 2), (std::vector<std::string>{"data", ""}));
    QCOMPARE(model.searches(), 1);
    QCOMPARE(model.expanded(), int64_t{1990});
    // A finished search's states count once; the next search starts from zero.
    SearchSnapshot second;
    PlanningEvent done = step(PlanningEvent::Kind::SearchFinished, "search", 2);
    done.expanded = 2000;
    second.events = {done, step(PlanningEvent::Kind::SearchStarted, "search", 2)};
    p.expanded = 50;
    p.open = {{0.001, 0.002, 3, {1, 0, 2}}};
    second.latest = p;
    second.names = names();
    model.add(second);
    QCOMPARE(model.searches(), 2);
    QCOMPARE(model.expanded(), int64_t{2050});
    QCOMPARE(model.openStates()->rowCount(), 1);
    // A report without open states (they are sampled less often) keeps the table.
    SearchSnapshot third;
    p.expanded = 70;
    p.open.clear();
    third.latest = p;
    third.names = names();
    model.add(third);
    QCOMPARE(model.openStates()->rowCount(), 1);
    QCOMPARE(model.expanded(), int64_t{2070});
  }

  void viewChartsFinitePointsAndEmitsTheClickedProgram() {
    SearchProgressModel model;
    SearchView view(&model);
    view.resize(1000, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setImportedNodes(2);
    model.reset();
    SearchSnapshot s;
    const double inf = std::numeric_limits<double>::infinity();
    s.samples = {{0.1, 0, 10, 5, 0.002, -1}, {0.2, 0, 20, 6, inf, -1}, {0.3, 0, 30, 7, 0.003, 0.004}};
    synth::SearchProgress p;
    p.nodes = 3;
    p.open = {{0.001, inf, 2, {1, 0}}, {0.0015, 0.002, 3, {1, 0, 2}}};
    s.latest = p;
    s.names = names();
    model.add(s);
    QCOMPARE(view.expandedSeries()->count(), 3);
    QCOMPARE(view.boundSeries()->count(), 2);  // the infinite bound is not a point
    QCOMPARE(view.bestSeries()->count(), 1);
    QCOMPARE(model.openStates()->index(0, OpenStatesModel::H).data().toString(), QStringLiteral("∞"));
    QSignalSpy picked(&view, &SearchView::partialProgramSelected);
    QTableView* table = view.openStatesTable();
    const QRect cell = table->visualRect(table->model()->index(1, OpenStatesModel::Choices));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
    QCOMPARE(picked.count(), 1);
    QCOMPARE(picked.first().first().value<std::vector<std::string>>(), (std::vector<std::string>{"data", "row"}));
  }
};

QTEST_MAIN(TstSearchProgressModel)
#include "tst_search_progress_model.moc"
