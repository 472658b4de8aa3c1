// `hap` as a user runs it: exit codes, the inspect table, --json, --dot, --help, plan, pins and
// errors.
#include <QtTest>

#include "run_hap.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

namespace {

QString cluster(const char* name) {
  return qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/" + name + ".yaml";
}

QString zoo(const char* model) {
  return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + model + "-tiny.pt";
}

}  // namespace

class TstCli : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void help() {
    HapRun r = runHap({"--help"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("inspect"));
    HapRun sub = runHap({"inspect", "--help"});
    QCOMPARE(sub.exitCode, 0);
    for (const char* option : {"--input", "--depth", "--dot", "--json"})
      QVERIFY2(sub.out.contains(option), option);
  }

  void inspectTable() {
    HapRun r = runHap({"inspect", zoo("bert")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains("layers.0") && r.out.contains("layers.1"), qPrintable(r.out));
    QVERIFY(r.out.contains("total"));
    QVERIFY(r.out.contains("Diagnostics: none"));
    QVERIFY(r.out.contains("Inputs: x: int64 [4, 16]"));
  }

  void inspectWithInputOverride() {
    HapRun r = runHap({"inspect", zoo("vit"), "--input", "x=9x3x16x16", "--input", "y=9"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains("x: float32 [9, 3, 16, 16]"), qPrintable(r.out));
  }

  void inspectJson() {
    HapRun r = runHap({"inspect", zoo("mlp"), "--json"});
    QCOMPARE(r.exitCode, 0);
    QJsonParseError error;
    QJsonDocument doc = QJsonDocument::fromJson(r.out.toUtf8(), &error);
    QCOMPARE(error.error, QJsonParseError::NoError);
    QJsonObject graph = doc.object()["graph"].toObject();
    QCOMPARE(graph["format"].toString(), QString("hap-graph"));
    QVERIFY(graph["nodes"].toArray().size() > 3);
    QCOMPARE(doc.object()["summary"].toObject()["total"].toObject()["parameters"].toInteger(),
             qint64{1732});
  }

  void inspectDot() {
    QTemporaryDir dir;
    const QString file = dir.filePath("g.dot");
    HapRun r = runHap({"inspect", zoo("vgg19"), "--dot", file});
    QCOMPARE(r.exitCode, 0);
    QFile f(file);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString dot = QString::fromUtf8(f.readAll());
    QVERIFY(dot.startsWith("digraph"));
    QVERIFY(dot.contains("subgraph cluster_"));
    QVERIFY(dot.contains("relu_"));
  }

  void errorsExitOne() {
    HapRun missing = runHap({"inspect", "/nonexistent/model.pt"});
    QCOMPARE(missing.exitCode, 1);
    QVERIFY2(missing.err.startsWith("hap: error: /nonexistent/model.pt: no such file"),
             qPrintable(missing.err));
    HapRun badInput = runHap({"inspect", zoo("mlp"), "--input", "x=4xQ"});
    QCOMPARE(badInput.exitCode, 1);
    QVERIFY2(badInput.err.contains("dimension 'Q' is not a non-negative integer"),
             qPrintable(badInput.err));
    HapRun usage = runHap({"inspect"});
    QCOMPARE(usage.exitCode, 2);
    QVERIFY2(usage.err.contains("MODEL is required"), qPrintable(usage.err));
  }

  void planWritesVerifiedPlan() {
    QTemporaryDir dir;
    const QString out = dir.filePath("plan.json");
    HapRun r = runHap({"plan", zoo("mlp"), "--cluster", cluster("a100-p100-4"), "-o", out, "-q"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains("Plan verified. Written to"), qPrintable(r.out));
    QVERIFY(r.out.contains("DP-EV") && r.out.contains("DP-CP"));
    // The inventory names no profile: the plan says its figures are peak figures, unmeasured.
    QVERIFY2(r.out.contains("peak figures alone (no measured profile)"), qPrintable(r.out));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject plan = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(plan.value("format").toString(), QString("hap-plan"));
  }

  // --pin forces Megatron-style tensor parallelism; --explain shows it.
  void planWithPins() {
    HapRun r = runHap({"plan", zoo("bert"), "--cluster", cluster("a100-p100-4"), "-q", "--explain", "--no-baselines",
                 "--pin", "layers.*.attn.?=column", "--pin", "layers.*.attn.out=row",
                 "--pin", "layers.*.ffn.fc1=column", "--pin", "layers.*.ffn.fc2=row"});
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(r.out.count(QRegularExpression("linear +column +\\[layers\\.\\d\\.(attn\\.[qkv]|ffn\\.fc1)\\]")), 8);
    QCOMPARE(r.out.count(QRegularExpression("linear +row +\\[layers\\.\\d\\.(attn\\.out|ffn\\.fc2)\\]")), 4);
    // 2 machines × 2 GPUs behind a 10.4 Gbps network: the replicated parameters' gradient
    // all-reduces (and the program's own) run hierarchically.
    QVERIFY2(r.out.contains(QRegularExpression("replicate-parameter \\(hierarchical\\) +layers\\.")), qPrintable(r.out));
    QVERIFY(r.out.contains("Plan verified."));

    HapRun bad = runHap({"plan", zoo("bert"), "--cluster", cluster("a100-p100-4"), "-q", "--pin", "layers.*=diagonal"});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY2(bad.err.contains("pin 'layers.*=diagonal' selects no node"), qPrintable(bad.err));
    HapRun malformed = runHap({"plan", zoo("bert"), "--cluster", cluster("a100-p100-4"), "-q", "--pin", "column"});
    QCOMPARE(malformed.exitCode, 1);
    QVERIFY2(malformed.err.contains("is not PATTERN=VARIANT"), qPrintable(malformed.err));
  }

  // --baseline fsdp writes the FSDP baseline's program as an executable plan: every parameter
  // loaded as its rank's rows of dimension 0 and all-gathered for its use, none loaded whole, no
  // SFB.
  void planFsdpBaseline() {
    QTemporaryDir dir;
    const QString out = dir.filePath("fsdp.json");
    HapRun r = runHap({"plan", zoo("bert"), "--cluster", cluster("a100-p100-4"), "-q", "--baseline", "fsdp", "-o", out});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.startsWith("FSDP baseline plan for"), qPrintable(r.out));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject plan = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(plan.value("strategy").toString(), QString("fsdp"));
    QCOMPARE(plan.value("ratios").toObject().value("policy").toString(), QString("proportional"));
    int shardedParameters = 0, gathers = 0;
    for (const QJsonValue& v : plan.value("program").toArray()) {
      const QJsonObject s = v.toObject();
      const QString instruction = s.value("instruction").toString();
      const QString name = s.value("to").toObject().value("name").toString();
      const bool parameter = name.endsWith("weight") || name.endsWith("bias");
      QVERIFY2(instruction != "replicate-parameter", qPrintable(name + " loaded whole"));
      if (instruction == "load-shard" && parameter) {
        QCOMPARE(s.value("to").toObject().value("rel").toString(), QString("G(0)"));
        ++shardedParameters;
      }
      gathers += instruction == "all-gather" && parameter;
      QVERIFY(!s.value("sfb").toBool());
    }
    // Every parameter is gathered whole for its use: no variant reads one as a shard (tensor
    // parallelism is not FSDP).
    QVERIFY2(shardedParameters > 10 && gathers == shardedParameters,
             qPrintable(QString("%1 sharded parameters, %2 gathers").arg(shardedParameters).arg(gathers)));
  }

  // --baseline megatron writes Megatron's plan, executable: one machine's tensor-parallel program
  // (q/k/v and fc1 column-parallel, out and fc2 row-parallel, even shares) replicated on the two
  // machines; its prediction is the megatron baseline's (the P100 machine bounds it), the
  // simulator agrees, and the launch scripts start every machine's ranks. A model without those
  // linears gets an error that says so.
  void planMegatronBaseline() {
    QTemporaryDir dir;
    const QString out = dir.filePath("megatron.json");
    HapRun r = runHap({"plan", zoo("bert"), "--cluster", cluster("a100-p100-4"), "-q", "--baseline", "megatron", "-o", out});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.startsWith("MEGATRON baseline plan for"), qPrintable(r.out));
    QVERIFY2(r.out.contains("Replicated on 2 machines: each runs this 2-rank program on 1/2 of the batch"),
             qPrintable(r.out));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject plan = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(plan.value("strategy").toString(), QString("megatron"));
    const QJsonObject replication = plan.value("replication").toObject();
    QCOMPARE(replication.value("machines").toInt(), 2);
    QCOMPARE(replication.value("input_dims").toArray(), (QJsonArray{0, 0}));
    QCOMPARE(replication.value("loss_weight").toDouble(), 0.5);
    QVERIFY(replication.value("random_cuts").toArray().size() > 0);
    const QJsonArray devices = plan.value("cluster").toObject().value("devices").toArray();
    QCOMPARE(devices.size(), 2);
    QVERIFY2(devices[0].toObject().value("type").toString().startsWith("P100"), "the slowest machine's program");
    QCOMPARE(plan.value("model").toObject().value("inputs").toArray()[0].toObject().value("shape").toArray()[0].toInt(),
             2);  // the zoo's batch of 4, halved
    const double predicted = plan.value("prediction").toObject().value("iteration_seconds").toDouble();
    const double baseline =
        plan.value("baselines").toObject().value("megatron").toObject().value("iteration_seconds").toDouble();
    QVERIFY2(std::abs(predicted - baseline) <= 1e-9 * baseline, qPrintable(QString("%1 vs %2").arg(predicted).arg(baseline)));
    QVERIFY(replication.value("all_reduce_seconds").toDouble() > 0);
    QStringList variants;  // of the linears: 2 layers of q, k, v, out, fc1, fc2, then the head
    for (const QJsonValue& v : plan.value("program").toArray()) {
      const QJsonObject s = v.toObject();
      if (s.value("op").toString() == "aten::linear") variants << s.value("variant").toString();
    }
    QVERIFY2(variants.size() == 13 && variants.count("column") >= 8 && variants.count("row") >= 4,
             qPrintable(variants.join(",")));

    HapRun sim = runHap({"simulate", out});
    QCOMPARE(sim.exitCode, 0);
    QVERIFY2(sim.out.contains("2 devices per machine, replicated on 2 machines") &&
                 sim.out.contains("Simulated total equals the plan's prediction."),
             qPrintable(sim.out + sim.err));

    const QString scripts = dir.filePath("scripts");
    HapRun emit = runHap({"launch", out, "--emit", "torchrun", scripts});
    QCOMPARE(emit.exitCode, 0);
    QStringList runScripts = QDir(scripts).entryList({"run-*.sh"});
    QCOMPARE(runScripts.size(), 2);  // both machines start their ranks

    HapRun pinned = runHap({"plan", zoo("bert"), "--cluster", cluster("a100-p100-4"), "-q", "--baseline", "megatron", "--pin",
                      "head=column"});
    QCOMPARE(pinned.exitCode, 1);
    QVERIFY2(pinned.err.contains("--pin: --baseline megatron pins"), qPrintable(pinned.err));
    HapRun mlp = runHap({"plan", zoo("mlp"), "--cluster", cluster("a100-p100-4"), "-q", "--baseline", "megatron"});
    QCOMPARE(mlp.exitCode, 1);
    QVERIFY2(mlp.err.contains("Megatron's tensor parallelism does not apply") &&
                 mlp.err.contains("found no attention block"),
             qPrintable(mlp.err));
  }

  // --baseline dp-cp writes the DP-CP baseline as an executable plan: the same predicted time
  // as the baseline row of HAP's plan, proportional shares, every parameter loaded whole and
  // every input loaded as this rank's rows (never whole); --ratios cannot be combined with it.
  void planBaseline() {
    QTemporaryDir dir;
    const QString out = dir.filePath("dp-cp.json");
    HapRun hapPlan = runHap({"plan", zoo("bert"), "--cluster", cluster("a100-p100-4"), "-q", "--segments", "none"});
    HapRun r = runHap({"plan", zoo("bert"), "--cluster", cluster("a100-p100-4"), "-q", "--baseline", "dp-cp", "-o", out});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.startsWith("DP-CP baseline plan for"), qPrintable(r.out));
    const QRegularExpression row(R"(\n  DP-CP +([0-9.]+) ms)");
    const QRegularExpressionMatch self = row.match(r.out), priced = row.match(hapPlan.out);
    QVERIFY2(self.hasMatch() && priced.hasMatch(), qPrintable(r.out + hapPlan.out));
    QCOMPARE(self.captured(1), priced.captured(1));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject plan = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(plan.value("strategy").toString(), QString("dp-cp"));
    QCOMPARE(plan.value("ratios").toObject().value("policy").toString(), QString("proportional"));
    int inputs = 0;
    for (const QJsonValue& v : plan.value("program").toArray()) {
      const QJsonObject s = v.toObject();
      const QString instruction = s.value("instruction").toString();
      const QString rel = s.value("to").toObject().value("rel").toString();
      const QString name = s.value("to").toObject().value("name").toString();
      if (instruction == "load-shard" && (name == "x" || name == "y")) {
        QCOMPARE(rel, QString("G(0)"));
        ++inputs;
      }
      QVERIFY2(instruction != "load" || name != "x", "an input loaded whole");
      QVERIFY2(instruction != "load-shard" || name == "x" || name == "y", qPrintable(name + " loaded as shards"));
      QVERIFY(!s.value("sfb").toBool());
    }
    QCOMPARE(inputs, 2);
    HapRun both = runHap({"plan", zoo("bert"), "--cluster", cluster("a100-p100-4"), "--baseline", "dp-ev", "--ratios", "even"});
    QCOMPARE(both.exitCode, 2);
  }

  void planErrors() {
    HapRun missing = runHap({"plan", zoo("mlp"), "--cluster", "/nonexistent/c.yaml"});
    QCOMPARE(missing.exitCode, 1);
    QVERIFY2(missing.err.contains("/nonexistent/c.yaml"), qPrintable(missing.err));
    HapRun usage = runHap({"plan", zoo("mlp")});
    QCOMPARE(usage.exitCode, 2);
  }

  // `hap simulate` replays a written plan, agrees with its prediction, writes trace and report.
  void simulateWritesTraceAndReport() {
    QTemporaryDir dir;
    const QString plan = dir.filePath("plan.json"), trace = dir.filePath("t.json"), report = dir.filePath("r.md");
    QCOMPARE(runHap({"plan", zoo("mlp"), "--cluster", cluster("a100-p100-4"), "-o", plan, "-q"}).exitCode, 0);
    HapRun r = runHap({"simulate", plan, "--trace", trace, "--report", report});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains("Simulated total equals the plan's prediction."), qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("bottleneck rank"), qPrintable(r.out));
    QVERIFY(QFile::exists(trace) && QFile::exists(report));
    QFile f(trace);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(QJsonDocument::fromJson(f.readAll()).object().value("traceEvents").isArray());
    HapRun missing = runHap({"simulate", dir.filePath("none.json")});
    QCOMPARE(missing.exitCode, 1);
    QVERIFY2(missing.err.contains("none.json: cannot open the plan file"), qPrintable(missing.err));

    // It opens the plan as the worker does (plan::openPlan): a plan that does not verify against its
    // model is refused, naming the plan.
    QFile in(plan);
    QVERIFY(in.open(QIODevice::ReadOnly));
    QJsonObject json = QJsonDocument::fromJson(in.readAll()).object();
    in.close();
    QJsonArray program = json.value("program").toArray();
    for (int i = 0; i < program.size(); ++i) {
      QJsonObject step = program[i].toObject();
      if (step.value("kind").toString() != "compute") continue;
      step["variant"] = "bogus";
      program[i] = step;
      break;
    }
    json["program"] = program;
    const QString broken = dir.filePath("broken.json");
    QFile out(broken);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(QJsonDocument(json).toJson());
    out.close();
    HapRun refused = runHap({"simulate", broken});
    QCOMPARE(refused.exitCode, 1);
    QVERIFY2(refused.err.contains("broken.json: the plan does not verify") && refused.err.contains("bogus"),
             qPrintable(refused.err));
    // Without its model the plan cannot be verified, so it is not replayed either.
    QJsonObject model = json.value("model").toObject();
    model["path"] = dir.filePath("gone.pt");
    json["model"] = model;
    QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
    out.write(QJsonDocument(json).toJson());
    out.close();
    HapRun unverified = runHap({"simulate", broken});
    QCOMPARE(unverified.exitCode, 1);
    QVERIFY2(unverified.err.contains("broken.json: the plan's model") && unverified.err.contains("--model"),
             qPrintable(unverified.err));
  }
};

QTEST_GUILESS_MAIN(TstCli)
#include "tst_cli.moc"
