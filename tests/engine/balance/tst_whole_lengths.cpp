// Whole lengths in the alternation (AlternationOptions::wholeLengths, --ratios milp) and cut cost
// tables (synth::ClassCut): a table cut by the MILP's lengths prices exactly what the MILP's model
// says; the alternation's plan is never worse than the LP's shares rounded, priced the same way;
// every class its program cuts has whole lengths; CBC's time limit is reported; plans record it.
#include <QtTest>

#include "engine/balance/alternation.h"
#include "engine/balance/share_milp.h"
#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "engine/plan/simulator.h"
#include "engine/synth/stages.h"

using namespace hap;

namespace {

ir::Graph zoo(const QString& model) {
  return import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + model.toStdString() + "-tiny.pt");
}

cost::Cluster bundled(const char* name) {
  return cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() + "/resources/clusters/" + name);
}

bool near(double a, double b, double rel = 1e-9) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }

// Whether the program moves data between two G forms (an all-to-all): the MILP prices those at
// the table's shares, the cut table at the cuts.
bool hasAllToAll(const synth::Program& p) {
  for (const synth::Step& s : p.steps)
    if (s.kind == synth::Step::Kind::Convert && s.conversion.kind == synth::ConversionKind::AllToAll) return true;
  return false;
}

}  // namespace

class TstWholeLengths : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void models_data() {
    QTest::addColumn<QString>("model");
    for (const char* m : {"mlp", "bert", "vgg19", "vit", "bert_moe"}) QTest::newRow(m) << QString(m);
  }

  // The cut table at the MILP's lengths prices the program as the MILP's model does (exactly,
  // where the program has no all-to-all), and at the rounded shares as priceCuts does.
  void cutTablePricesTheCuts_data() { models_data(); }
  void cutTablePricesTheCuts() {
    QFETCH(QString, model);
    const ir::Graph g = zoo(model);
    const cost::Cluster c = bundled("a100-p100-4.yaml");
    const synth::Theory t(g);
    const balance::AlternationResult a = balance::alternate(t, c, {0.4, 0.4, 0.1, 0.1}, {});
    balance::ShareMilpOptions o;
    o.timeLimitSeconds = 10;
    const balance::ShareMilpResult r = balance::optimiseLengths(*a.table, a.program, {}, o);
    std::vector<synth::ClassCut> cuts;
    for (const balance::DimCut& d : r.cuts)
      if (d.dimClass >= 0) cuts.push_back({d.segment, d.dimClass, d.lengths});
    QVERIFY(!cuts.empty());
    const synth::CostTable at(t, c, r.shares, {}, cuts);
    const synth::Program same = synth::buildProgram(at, a.program.variantOf);
    const double priced = synth::iterationSeconds(at, same);
    if (!hasAllToAll(a.program))
      QVERIFY2(near(priced, r.seconds), qPrintable(QString("cut table %1 s, MILP %2 s").arg(priced).arg(r.seconds)));
    else
      QVERIFY2(near(priced, r.seconds, 0.05), qPrintable(QString("cut table %1 s, MILP %2 s").arg(priced).arg(r.seconds)));
    // Every G form of the program is cut by whole lengths summing to the class's units.
    for (const synth::Step& s : same.steps) {
      if (s.kind != synth::Step::Kind::Convert || !rules::isGather(s.conversion.to)) continue;
      const synth::ClassCut* cut = at.cutOf(s.value, s.conversion.to);
      QVERIFY(cut);
      int64_t sum = 0;
      for (int64_t u : cut->units) sum += u;
      QCOMPARE(sum, t.classes().units(cut->dimClass));
    }
  }

  // The alternation with whole lengths ends no worse than the LP's plan priced at the lengths it
  // executes (balance::executed), its history ends in MILP and search steps, and every class its
  // program cuts has whole lengths.
  void neverWorseThanRoundedLp_data() { models_data(); }
  void neverWorseThanRoundedLp() {
    QFETCH(QString, model);
    const ir::Graph g = zoo(model);
    const cost::Cluster c = bundled("a100-p100-4.yaml");
    const synth::Theory t(g);
    const std::vector<double> start{0.4, 0.4, 0.1, 0.1};
    balance::AlternationOptions lpOptions;
    lpOptions.moreStarts = {{"even", std::vector<double>(4, 0.25)}};
    balance::AlternationResult lp = balance::alternate(t, c, start, lpOptions);
    const balance::Executed rounded = balance::executed(*lp.table, lp.program);
    QVERIFY(rounded.table);
    const double roundedSeconds = synth::iterationSeconds(*rounded.table, rounded.program);
    QVERIFY(near(roundedSeconds, lp.seconds));  // the alternation prices at executed lengths
    balance::AlternationOptions wholeOptions = lpOptions;
    wholeOptions.wholeLengths = true;
    wholeOptions.milp.timeLimitSeconds = 10;
    const balance::AlternationResult whole = balance::alternate(t, c, start, wholeOptions);
    QVERIFY(whole.fits);
    QVERIFY2(whole.seconds <= roundedSeconds * (1 + 1e-9),
             qPrintable(QString("MILP %1 s, LP rounded %2 s").arg(whole.seconds).arg(roundedSeconds)));
    QCOMPARE(whole.seconds, synth::iterationSeconds(*whole.table, whole.program));
    QVERIFY(whole.milpSolves >= 1);
    bool sawMilp = false;
    for (const balance::HistoryEntry& h : whole.history)
      if (h.step == "milp") {
        sawMilp = true;
        QVERIFY(!h.note.empty());
      }
    QVERIFY(sawMilp);
    QVERIFY(!balance::executed(*whole.table, whole.program).table);  // already whole
    for (const synth::Step& s : whole.program.steps)
      if (s.kind == synth::Step::Kind::Convert && rules::isGather(s.conversion.to) &&
          t.classes().units(t.classes().classOf({s.value, s.conversion.to})) > 0)
        QVERIFY(whole.table->cutOf(s.value, s.conversion.to));
    qInfo("%s: LP %.4f ms (shares rounded), MILP %.4f ms", qPrintable(model), roundedSeconds * 1e3,
          whole.seconds * 1e3);
  }

  // A plan made with --ratios milp records whole lengths that the verifier accepts, predicts what
  // the simulator replays, says how CBC ended in its history, and keeps it through JSON.
  void planRecordsWholeLengths() {
    const ir::Graph g = zoo("bert");
    const cost::Cluster c = bundled("a100-p100-4.yaml");
    plan::PlanOptions o;
    o.ratios = plan::PlanOptions::Ratios::WholeLengths;
    o.baselines = false;
    const plan::Plan p = plan::makePlan(g, c, o);
    QCOMPARE(p.ratioPolicy, std::string("milp"));
    QVERIFY(p.milpSolves >= 1);
    bool noted = false;
    for (const plan::Plan::HistoryEntry& h : p.history) noted = noted || (h.step == "milp" && !h.note.empty());
    QVERIFY(noted);
    const plan::Timeline timeline = plan::simulate(p);
    QVERIFY2(plan::matchesPrediction(p, timeline),
             qPrintable(QString("%1 vs %2").arg(timeline.totalSeconds).arg(p.estimate.iterationSeconds)));
    const plan::Plan back = plan::planFromJson(nlohmann::json::parse(plan::toJson(p, g).dump()), "plan.json");
    QCOMPARE(back.history.size(), p.history.size());
    for (size_t i = 0; i < p.history.size(); ++i) QCOMPARE(back.history[i].note, p.history[i].note);
    QCOMPARE(back.milpSolves, p.milpSolves);
    // The LP's plan, priced at the lengths it executes, is no faster.
    o.ratios = plan::PlanOptions::Ratios::Optimised;
    const plan::Plan lp = plan::makePlan(g, c, o);
    QVERIFY(p.estimate.iterationSeconds <= lp.estimate.iterationSeconds * (1 + 1e-9));
    // The LP's history prices each step at the lengths it would execute: its last step is the plan.
    QVERIFY(!lp.history.empty());
    double best = lp.history.front().seconds;
    for (const plan::Plan::HistoryEntry& h : lp.history) best = std::min(best, h.seconds);
    QVERIFY2(near(best, lp.estimate.iterationSeconds),
             qPrintable(QString("history best %1 s, plan %2 s").arg(best).arg(lp.estimate.iterationSeconds)));
  }

  // At CBC's time limit the history says so and the result is still no worse than the rounding.
  void timeLimitIsReported() {
    const ir::Graph g = zoo("bert_moe");
    const cost::Cluster c = bundled("a100-p100-4.yaml");
    const synth::Theory t(g);
    balance::AlternationOptions o;
    o.wholeLengths = true;
    o.milp.timeLimitSeconds = 1e-9;
    const balance::AlternationResult r = balance::alternate(t, c, {0.4, 0.4, 0.1, 0.1}, o);
    QVERIFY(r.milpTimeLimit);
    bool said = false;
    for (const balance::HistoryEntry& h : r.history) said = said || h.note.find("time limit") != std::string::npos;
    QVERIFY(said);
  }
};

QTEST_GUILESS_MAIN(TstWholeLengths)
#include "tst_whole_lengths.moc"
