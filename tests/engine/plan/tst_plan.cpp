// Plans: JSON round trip, verification of real plans, rejection of corrupted ones, baselines.
#include <QtTest>

#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "engine/plan/verifier.h"

using namespace hap;

namespace {

cost::Cluster cluster() {
  return cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                           "/resources/clusters/a100-p100-4.yaml");
}

ir::Graph zoo(const char* name) {
  return ts::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + name + "-tiny.pt");
}

// The verifier's problems for a plan changed by `corrupt`.
QStringList problemsAfter(const ir::Graph& g, plan::Plan p, const std::function<void(plan::Plan&)>& corrupt) {
  corrupt(p);
  QStringList out;
  for (const std::string& s : plan::verifyPlan(g, p)) out << QString::fromStdString(s);
  return out;
}

int firstStep(const plan::Plan& p, const std::function<bool(const plan::PlanStep&)>& pred) {
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (pred(p.steps[i])) return static_cast<int>(i);
  return -1;
}

}  // namespace

class TstPlan : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void everyZooPlanVerifies_data() {
    QTest::addColumn<QString>("model");
    for (const char* m : {"mlp", "bert", "vit", "vgg19", "bert_moe"}) QTest::newRow(m) << m;
  }
  void everyZooPlanVerifies() {
    QFETCH(QString, model);
    ir::Graph g = zoo(model.toUtf8().constData());
    plan::Plan p = plan::makePlan(g, cluster(), {});
    QStringList problems;
    for (const std::string& s : plan::verifyPlan(g, p)) problems << QString::fromStdString(s);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join("\n")));
    // HAP's program space contains data parallelism and FSDP's programs: never slower.
    QCOMPARE(p.baselines.size(), size_t{3});
    QCOMPARE(QString::fromStdString(p.baselines[1].name), QString("dp-cp"));
    QCOMPARE(QString::fromStdString(p.baselines[2].name), QString("fsdp"));
    for (const plan::Plan::Baseline& b : p.baselines)
      QVERIFY2(p.estimate.iterationSeconds <= b.estimate.iterationSeconds * (1 + 1e-12), b.name.c_str());
    double stages = 0;
    for (const plan::Stage& s : p.stages) stages += s.communicationSeconds + s.computationSeconds;
    QVERIFY(std::abs(stages - p.estimate.iterationSeconds) <= 1e-9 * p.estimate.iterationSeconds);
  }

  // FSDP stores parameters sharded: less memory than data parallelism on a parameter-heavy model.
  // Megatron applies to models with attention and FFN linears, priced per machine.
  void baselines() {
    ir::Graph g = zoo("vgg19");
    plan::Plan p = plan::makePlan(g, cluster(), {});
    QVERIFY(p.baselines[2].estimate.maxMemoryBytes() < p.baselines[1].estimate.maxMemoryBytes());
    QVERIFY(p.baselines[2].estimate.iterationSeconds > p.baselines[1].estimate.iterationSeconds);

    const std::string path = qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt";
    ir::Graph bert = ts::importModel(path);
    ts::ImportOptions half;
    half.inputOverrides = ts::dividedBatch(bert, 2);  // a100-p100-4: two machines
    ir::Graph perMachine = ts::importModel(path, half);
    QCOMPARE(perMachine.value(perMachine.inputs[0]).shape[0], bert.value(bert.inputs[0]).shape[0] / 2);
    plan::PlanOptions o;
    o.machineBatchGraph = &perMachine;
    plan::Plan q = plan::makePlan(bert, cluster(), o);
    QCOMPARE(q.baselines.size(), size_t{4});
    const plan::Plan::Baseline& megatron = q.baselines[3];
    QCOMPARE(QString::fromStdString(megatron.name), QString("megatron"));
    QVERIFY2(megatron.applicable && megatron.estimate.iterationSeconds > 0, megatron.note.c_str());
    QCOMPARE(megatron.estimate.memoryBytes.size(), size_t{4});

    ir::Graph mlp = zoo("mlp");
    o.machineBatchGraph = &mlp;
    const plan::Plan::Baseline none = plan::makePlan(mlp, cluster(), o).baselines[3];
    QVERIFY2(!none.applicable && QString::fromStdString(none.note).contains("not applicable"), none.note.c_str());
  }

  void jsonRoundTrip() {
    ir::Graph g = zoo("bert");
    plan::Plan p = plan::makePlan(g, cluster(), {});
    const auto once = plan::toJson(p, g);
    plan::Plan back = plan::planFromJson(nlohmann::json::parse(once.dump()), "plan.json");
    // Equal as JSON documents (object key order is not significant).
    QVERIFY(nlohmann::json::parse(plan::toJson(back, g).dump()) == nlohmann::json::parse(once.dump()));
    QVERIFY(plan::verifyPlan(g, back).empty());
    QCOMPARE(back.modelSha256.size(), size_t{64});
    // The cluster inventory travels with the plan, exactly.
    QCOMPARE(back.cluster.size(), p.cluster.size());
    QCOMPARE(back.cluster.name, p.cluster.name);
    for (size_t t = 0; t < p.cluster.types.size(); ++t) {
      QCOMPARE(back.cluster.types[t].flops32, p.cluster.types[t].flops32);
      QCOMPARE(back.cluster.types[t].memoryBytes, p.cluster.types[t].memoryBytes);
      QCOMPARE(back.cluster.types[t].opOverheadSeconds, p.cluster.types[t].opOverheadSeconds);
    }
    QCOMPARE(back.cluster.network.bandwidth, p.cluster.network.bandwidth);
    QCOMPARE(back.cluster.machines.back().link.latency, p.cluster.machines.back().link.latency);
    // A damaged inventory is named.
    nlohmann::json bad = nlohmann::json::parse(once.dump());
    bad["cluster"]["inventory"]["machines"][0]["count"] = 0;
    QString message;
    try {
      plan::planFromJson(bad, "plan.json");
    } catch (const plan::PlanError& e) {
      message = e.what();
    }
    QVERIFY2(message.startsWith("plan.json: cluster.inventory") && message.contains("machines[0].count"),
             qPrintable(message));
  }

  void malformedPlanFiles() {
    auto error = [](const char* text) {
      try {
        plan::planFromJson(nlohmann::json::parse(text), "p.json");
      } catch (const plan::PlanError& e) {
        return QString(e.what());
      }
      return QString();
    };
    QCOMPARE(error(R"({"format":"x"})"), QString("p.json: not a HAP plan (field 'format' must be \"hap-plan\")"));
    QCOMPARE(error(R"({"format":"hap-plan","version":7})"),
             QString("p.json: field 'version' must be 2 (this HAP reads plan version 2; re-plan older plans)"));
    QCOMPARE(error(R"({"format":"hap-plan","version":2})"), QString("p.json: missing field 'model'"));
  }

  void verifierRejectsCorruptedPlans() {
    ir::Graph g = zoo("bert");
    plan::Plan p = plan::makePlan(g, cluster(), {});
    QVERIFY(plan::verifyPlan(g, p).empty());
    const int gathered = firstStep(p, [](const plan::PlanStep& s) {
      return s.kind == plan::PlanStep::Kind::Compute && !s.outputs.empty() && synth::isGather(s.outputs[0].rel);
    });
    QVERIFY(gathered >= 0);

    auto has = [](const QStringList& problems, const char* fragment) {
      for (const QString& s : problems)
        if (s.contains(fragment)) return true;
      return false;
    };
    // An unknown rule variant.
    QVERIFY(has(problemsAfter(g, p, [&](plan::Plan& q) { q.steps[static_cast<size_t>(gathered)].variant = "magic"; }),
                "has no variant 'magic'"));
    // Lengths that do not sum to the dimension.
    QVERIFY(has(problemsAfter(g, p, [&](plan::Plan& q) { q.steps[static_cast<size_t>(gathered)].outputs[0].lengths[0] += 1; }),
                "sum to"));
    // A node computed twice / out of order.
    QVERIFY(has(problemsAfter(g, p, [&](plan::Plan& q) { q.steps.push_back(q.steps[static_cast<size_t>(gathered)]); }),
                "is next"));
    // A collective removed: its consumer no longer holds the form it needs.
    const int collective = firstStep(p, [](const plan::PlanStep& s) {
      return s.kind == plan::PlanStep::Kind::Convert && s.instruction != "load" && s.instruction != "load-shard" &&
             s.instruction != "replicate-parameter";
    });
    if (collective >= 0)
      QVERIFY(has(problemsAfter(g, p, [&](plan::Plan& q) { q.steps.erase(q.steps.begin() + collective); }),
                  "which the program does not hold"));
    // A conversion that is not an instruction for its forms.
    const int load = firstStep(p, [](const plan::PlanStep& s) { return s.kind == plan::PlanStep::Kind::Convert; });
    QVERIFY(has(problemsAfter(g, p, [&](plan::Plan& q) {
                  q.steps[static_cast<size_t>(load)].instruction = "all-reduce";
                }),
                "cannot turn"));
    // The last node dropped: R(loss) is not derived.
    QVERIFY(has(problemsAfter(g, p, [&](plan::Plan& q) {
                  while (q.steps.back().kind == plan::PlanStep::Kind::Convert) q.steps.pop_back();
                  q.steps.pop_back();
                }),
                "computes"));
    // Ratios that do not sum to one.
    QVERIFY(has(problemsAfter(g, p, [&](plan::Plan& q) { q.segments[0].ratios[0] += 0.5; }), "sum to"));
  }
};

QTEST_GUILESS_MAIN(TstPlan)
#include "tst_plan.moc"
