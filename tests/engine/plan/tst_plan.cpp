// Plans: JSON round trip, verification of real plans, rejection of corrupted ones, baselines.
#include <QtTest>

#include "engine/cost/cluster.h"
#include "engine/import/importer.h"
#include "engine/plan/plan_json.h"
#include "engine/plan/planner.h"
#include "engine/plan/replication.h"
#include "engine/plan/simulator.h"
#include "engine/plan/verifier.h"

using namespace hap;

namespace {

cost::Cluster cluster() {
  return cost::loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                           "/resources/clusters/a100-p100-4.yaml");
}

ir::Graph zoo(const char* name) {
  return import::importModel(qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/" + name + "-tiny.pt");
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
    // ... and what the gradient buckets leave exposed after backward.
    QVERIFY(p.exposedGradientSeconds >= 0);
    stages += p.exposedGradientSeconds;
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
    ir::Graph bert = import::importModel(path);
    import::ImportOptions half;
    half.inputOverrides = import::dividedBatch(bert, 2);  // a100-p100-4: two machines
    ir::Graph perMachine = import::importModel(path, half);
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

  // Megatron's executable plan: one machine's program replicated on the two machines, which the
  // verifier, the JSON round trip and the simulator accept; the verifier rejects a replication
  // that does not fit the cluster or the model, and the planner explains what is not replicable.
  void megatronReplicatedPlan() {
    const std::string path = qEnvironmentVariable("HAP_ZOO_DIR").toStdString() + "/bert-tiny.pt";
    const ir::Graph bert = import::importModel(path);
    import::ImportOptions half;
    half.inputOverrides = import::dividedBatch(bert, 2);
    const ir::Graph perMachine = import::importModel(path, half);
    const plan::Plan p = plan::makeMegatronPlan(bert, perMachine, cluster(), {});
    QCOMPARE(p.strategy, std::string("megatron"));
    QCOMPARE(p.replication.machines, 2);
    QCOMPARE(p.devices.size(), size_t{2});
    QCOMPARE(plan::worldDevices(p).size(), size_t{4});
    QCOMPARE(plan::worldDevices(p)[2].machine, p.cluster.machines[1].name);
    QCOMPARE(p.replication.inputDims, (std::vector<int>{0, 0}));
    QCOMPARE(p.replication.lossWeight, 0.5);
    QCOMPARE(p.replication.lossTargets, std::string("y"));
    QVERIFY(!p.replication.randomCuts.empty());
    for (const plan::Replication::RandomCut& c : p.replication.randomCuts) QCOMPARE(c.dim, 0);  // dropout on batch rows
    const QStringList problems = problemsAfter(perMachine, p, [](plan::Plan&) {});
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join("\n")));
    QCOMPARE(p.baselines.size(), size_t{1});
    QVERIFY(std::abs(p.estimate.iterationSeconds - p.baselines[0].estimate.iterationSeconds) <=
            1e-9 * p.estimate.iterationSeconds);
    // The simulator replays the program and the gradient sums across machines: the prediction.
    const plan::Timeline t = plan::simulate(p);
    QVERIFY(plan::matchesPrediction(p, t));
    QVERIFY(t.stages.back().steps.empty() && t.stages.back().communicationSeconds == p.replication.allReduceSeconds);

    const auto once = plan::toJson(p, perMachine);
    const plan::Plan back = plan::planFromJson(nlohmann::json::parse(once.dump()), "plan.json");
    QVERIFY(nlohmann::json::parse(plan::toJson(back, perMachine).dump()) == nlohmann::json::parse(once.dump()));
    QCOMPARE(back.replication.randomCuts.size(), p.replication.randomCuts.size());

    auto has = [](const QStringList& problems, const char* fragment) {
      for (const QString& s : problems)
        if (s.contains(fragment)) return true;
      return false;
    };
    QVERIFY(has(problemsAfter(perMachine, p, [](plan::Plan& q) { q.replication.randomCuts.pop_back(); }),
                "has 0 cuts across machines"));
    QVERIFY(has(problemsAfter(perMachine, p, [](plan::Plan& q) { q.replication.inputDims[1] = 2; }),
                "which it does not have"));
    QVERIFY(has(problemsAfter(perMachine, p, [](plan::Plan& q) { q.replication.machines = 3; }),
                "not 3 machines of the program's 2 ranks"));
    // The targets cut by sequence position inside a machine, by batch row across machines.
    const int loadY = firstStep(p, [&](const plan::PlanStep& s) {
      return s.kind == plan::PlanStep::Kind::Convert && s.to.value == perMachine.inputs[1];
    });
    QVERIFY(loadY >= 0);
    QVERIFY(has(problemsAfter(perMachine, p,
                              [&](plan::Plan& q) {
                                plan::PlanStep& s = q.steps[static_cast<size_t>(loadY)];
                                s.instruction = "load-shard";
                                s.to.rel = rules::gather(1);
                                s.to.lengths = {8, 8};
                              }),
                "along dimension 1 inside a machine and along 0 across machines"));

    // A global batch the machines cannot split evenly, and a model without Megatron's linears.
    import::ImportOptions odd;
    odd.inputOverrides = {import::parseInputArg("x=5x16"), import::parseInputArg("y=5x16")};
    const ir::Graph five = import::importModel(path, odd);
    import::ImportOptions three;
    three.inputOverrides = import::dividedBatch(five, 2);
    QString message;
    try {
      plan::makeMegatronPlan(five, import::importModel(path, three), cluster(), {});
    } catch (const plan::NotReplicable& e) {
      message = e.what();
    }
    QVERIFY2(message.contains("must divide evenly by the 2 machines"), qPrintable(message));
    const ir::Graph mlp = zoo("mlp");
    import::ImportOptions halfMlp;
    halfMlp.inputOverrides = import::dividedBatch(mlp, 2);
    message.clear();
    try {
      plan::makeMegatronPlan(mlp, import::importModel(mlp.sourceFile, halfMlp), cluster(), {});
    } catch (const plan::NotReplicable& e) {
      message = e.what();
    }
    QVERIFY2(message.contains("does not apply"), qPrintable(message));
  }

  // Batch norm in training normalises over the whole batch: machines running the program on their
  // own rows would each use their own statistics, so the model is not replicable.
  void batchNormIsNotReplicable() {
    const std::string path = qEnvironmentVariable("HAP_FIXTURE_DIR").toStdString() + "/conv_bn.pt";
    const ir::Graph global = import::importModel(path);
    import::ImportOptions half;
    half.inputOverrides = import::dividedBatch(global, 2);
    QString message;
    try {
      plan::replicationFor(global, import::importModel(path, half), 2);
    } catch (const plan::NotReplicable& e) {
      message = e.what();
    }
    QVERIFY2(message.contains("aten::batch_norm") && message.contains("statistics over the whole batch"),
             qPrintable(message));
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
    // Each device's memory by kind sums to its predicted total, and survives the round trip; a
    // plan written before the breakdown was recorded reads as all zero.
    for (size_t j = 0; j < p.devices.size(); ++j) {
      const synth::MemoryBreakdown& m = p.devices[j].memory;
      QVERIFY(m.parameters > 0 && m.gradients > 0 && m.activations > 0);
      QVERIFY(std::abs(m.total() - p.devices[j].memoryBytes) <= 1e-9 * p.devices[j].memoryBytes);
      QCOMPARE(back.devices[j].memory.optimizer, m.optimizer);
    }
    nlohmann::json old = nlohmann::json::parse(once.dump());
    for (auto& d : old["cluster"]["devices"]) d.erase("memory_breakdown");
    QCOMPARE(plan::planFromJson(old, "old.json").devices[0].memory.total(), 0.0);
    // A damaged inventory is named.
    nlohmann::json bad = nlohmann::json::parse(once.dump());
    bad["cluster"]["inventory"]["machines"][0]["count"] = 0;
    QString message;
    try {
      plan::planFromJson(bad, "plan.json");
    } catch (const plan::PlanError& e) {
      message = e.what();
    }
    QVERIFY2(message.startsWith("plan.json: field '/cluster/inventory'") && message.contains("machines[0].count"),
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
    QCOMPARE(error(R"({"format":"x"})"), QString("p.json: not a HAP plan (field '/format' is \"x\"; expected \"hap-plan\")"));
    QCOMPARE(error(R"({"format":"hap-plan","version":7})"),
             QString("p.json: field '/version' is 7; expected the integer 2 (this HAP reads plan version 2; re-plan "
                     "older plans)"));
    QCOMPARE(error(R"({"format":"hap-plan","version":2})"), QString("p.json: field '/model' is missing; expected an object"));
  }

  void verifierRejectsCorruptedPlans() {
    ir::Graph g = zoo("bert");
    plan::Plan p = plan::makePlan(g, cluster(), {});
    QVERIFY(plan::verifyPlan(g, p).empty());
    const int gathered = firstStep(p, [](const plan::PlanStep& s) {
      return s.kind == plan::PlanStep::Kind::Compute && !s.outputs.empty() && rules::isGather(s.outputs[0].rel);
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
