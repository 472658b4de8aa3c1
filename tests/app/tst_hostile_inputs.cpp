// Hostile inputs other than plan files (issue 32): cluster inventories and --input shapes, given to
// the built `hap` (and `hap-worker`) as a user gives them. Each must end with exit status 1 and a
// message naming the file, the field (a YAML path with its line) or the argument: never an abort
// (exit 134, a signal), never the internal-error catch of main (exit 3), never a success.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

namespace {

struct Outcome {
  bool crashed = false;  // ended by a signal (an abort, a segfault)
  int exitCode = -1;
  QString err;
};

Outcome run(const QString& program, const QStringList& args, const QProcessEnvironment& env = {}) {
  QProcess p;
  if (!env.isEmpty()) p.setProcessEnvironment(env);
  p.start(program, args);
  if (!p.waitForFinished(180'000)) qFatal("%s %s did not finish", qPrintable(program), qPrintable(args.join(' ')));
  return {p.exitStatus() == QProcess::CrashExit, p.exitCode(), QString::fromUtf8(p.readAllStandardError())};
}

QString zoo(const char* model) {
  return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + model + "-tiny.pt";
}

// A one-machine cluster with one field replaced: `flops`, `memory`, `bandwidth` (the machine's
// link), `latency`, `overhead` or a whole extra line.
QByteArray clusterText(const QByteArray& flops = "10T", const QByteArray& memory = "16GiB",
                       const QByteArray& bandwidth = "100GB/s", const QByteArray& latency = "5us",
                       const QByteArray& overhead = "10us", const QByteArray& extra = "",
                       const QByteArray& name = "hostile") {
  return "name: " + name +
         "\n"
         "device_types:\n"
         "  gpu: {flops: {float32: " +
         flops + "}, memory: " + memory + ", memory_bandwidth: 900GB/s, op_overhead: " + overhead +
         "}\n"
         "machines:\n"
         "  - {name: m0, device_type: gpu, count: 2, link: {bandwidth: " +
         bandwidth + ", latency: " + latency + "}}\n" + extra;
}

}  // namespace

class TstHostileInputs : public QObject {
  Q_OBJECT

 public:
  QTemporaryDir dir_;

  QString write(const QString& name, const QByteArray& text) {
    QFile f(dir_.filePath(name));
    if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(f.fileName()));
    f.write(text);
    return f.fileName();
  }

  // Exit 1, no crash, no internal error, and every expected piece in the message.
  static void expectInputError(const Outcome& r, const QStringList& expected) {
    QVERIFY2(!r.crashed, qPrintable("crashed (a signal, e.g. an abort): " + r.err));
    QVERIFY2(r.exitCode != 3 && !r.err.contains("internal error"),
             qPrintable("reached main's internal-error catch: " + r.err));
    QVERIFY2(!r.err.contains("terminate called") && !r.err.contains("this is a bug"), qPrintable(r.err));
    QVERIFY2(r.exitCode == 1, qPrintable(QString("exit %1: %2").arg(r.exitCode).arg(r.err)));
    for (const QString& piece : expected)
      QVERIFY2(r.err.contains(piece), qPrintable("expected '" + piece + "' in: " + r.err));
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFileInfo(HAP_CLI_PATH).isExecutable(), "hap is not built");
    QVERIFY2(QFileInfo::exists(zoo("mlp")), "the tiny zoo is not exported (ctest runs the fixture)");
  }

  // `hap plan` on a cluster inventory that must be refused: the field (YAML path and line) named.
  void hostileCluster_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("flops 1e-300") << clusterText("1e-300")
                                  << QStringList{"c.yaml:3: device_types.gpu.flops.float32:", "'1e-300'",
                                                 "outside the range"};
    QTest::newRow("flops 1e308") << clusterText("1e308")
                                 << QStringList{"c.yaml:3: device_types.gpu.flops.float32:", "'1e308'",
                                                "outside the range"};
    QTest::newRow("link bandwidth 1e-300")
        << clusterText("10T", "16GiB", "1e-300")
        << QStringList{"c.yaml:5: machines[0].link.bandwidth:", "'1e-300'", "outside the range"};
    QTest::newRow("link bandwidth 1e308")
        << clusterText("10T", "16GiB", "1e308") << QStringList{"c.yaml:5: machines[0].link.bandwidth:"};
    QTest::newRow("memory 1e308") << clusterText("10T", "1e308")
                                  << QStringList{"c.yaml:3: device_types.gpu.memory:", "outside the range"};
    QTest::newRow("memory 1e-300") << clusterText("10T", "1e-300")
                                   << QStringList{"c.yaml:3: device_types.gpu.memory:"};
    QTest::newRow("latency 1e308")
        << clusterText("10T", "16GiB", "100GB/s", "1e308") << QStringList{"c.yaml:5: machines[0].link.latency:"};
    QTest::newRow("op_overhead 1e-300s")
        << clusterText("10T", "16GiB", "100GB/s", "5us", "1e-300s")
        << QStringList{"c.yaml:3: device_types.gpu.op_overhead:"};
    QTest::newRow("network bandwidth 1e-300")
        << clusterText("10T", "16GiB", "100GB/s", "5us", "10us",
                       "  - {name: m1, device_type: gpu, count: 1}\nnetwork: {bandwidth: 1e-300, latency: 5us}\n")
        << QStringList{"c.yaml:7: network.bandwidth:"};
    QTest::newRow("efficiency 1e-300")
        << clusterText("10T", "16GiB", "100GB/s", "5us", "10us", "collectives: {all_reduce: {efficiency: 1e-300}}\n")
        << QStringList{"c.yaml:6: collectives.all_reduce.efficiency:"};
    QTest::newRow("non-UTF-8 name") << clusterText("10T", "16GiB", "100GB/s", "5us", "10us", "",
                                                   "\"bad\xff\xfe name\"")
                                    << QStringList{"c.yaml:1: name:", "not valid UTF-8", "\\xff"};
    QTest::newRow("non-UTF-8 machine name")
        << clusterText("10T", "16GiB", "100GB/s", "5us", "10us", "  - {name: \"m\xc3\x28\", device_type: gpu, count: 1}\n"
                                                                 "network: {bandwidth: 1GB/s, latency: 5us}\n")
        << QStringList{"c.yaml:6: machines[1].name:", "not valid UTF-8"};
  }
  void hostileCluster() {
    QFETCH(QByteArray, text);
    QFETCH(QStringList, expected);
    const QString cluster = write("c.yaml", text);
    // With -o: a cluster that got through would have its name and numbers written into the plan.
    const Outcome r = run(HAP_CLI_PATH, {"plan", zoo("mlp"), "--cluster", cluster, "-o", dir_.filePath("p.json")});
    expectInputError(r, expected);
    QVERIFY2(!QFileInfo::exists(dir_.filePath("p.json")), "a plan was written");
  }

  // A directory given as the cluster file says so (it used to be "the file is empty").
  void clusterIsDirectory() {
    const QString folder = dir_.filePath("folder.yaml");
    QVERIFY(QDir().mkpath(folder));
    const Outcome r = run(HAP_CLI_PATH, {"plan", zoo("mlp"), "--cluster", folder});
    expectInputError(r, {folder + ": is a directory, not a cluster file"});
  }

  // --input shapes that cannot be made: refused before anything allocates, on inspect and plan.
  void hostileInputShape_data() {
    QTest::addColumn<QString>("command");
    QTest::addColumn<QString>("input");
    QTest::addColumn<QStringList>("expected");
    for (const char* command : {"inspect", "plan"}) {
      auto row = [&](const char* name, const QString& input, const QStringList& expected) {
        QTest::newRow(qPrintable(QString("%1 %2").arg(command, name))) << QString(command) << input << expected;
      };
      row("overflow", "x=4294967296x4294967296",
          {"--input 'x=4294967296x4294967296'", "shape [4294967296, 4294967296]", "more elements"});
      row("overflow with dtype", "x=4294967296x4294967296:float32",
          {"--input 'x=4294967296x4294967296:float32'", "more elements"});
      row("negative", "x=-4x16", {"--input 'x=-4x16'", "dimension '-4'"});
      row("over the byte limit", "x=65536x65536x65536:float32",
          {"--input 'x=65536x65536x65536:float32'", "more than HAP accepts for one input (1.00 TiB)"});
      // No dtype given: the file's (float32) decides, checked by the importer before any tensor.
      row("over the limit at the file's dtype", "x=300000000000x1",
          {"mlp-tiny.pt: input 'x'", "float32", "more than HAP accepts for one input"});
      row("too many dimensions", "x=" + QStringList(65, "1").join('x') + ":float32",
          {"65 dimensions", "at most 64"});
    }
  }
  void hostileInputShape() {
    QFETCH(QString, command);
    QFETCH(QString, input);
    QFETCH(QStringList, expected);
    QStringList args{command, zoo("mlp"), "--input", input};
    if (command == "plan")
      args << "--cluster" << qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/local-cpu-3.yaml";
    expectInputError(run(HAP_CLI_PATH, args), expected);
  }

  // The cluster a plan embeds is read through the same checks: an inventory edited inside a plan
  // to an extreme value is refused by hap simulate and by the worker, naming the field.
  void hostileClusterInsidePlan() {
    const QString plan = dir_.filePath("good.json");
    const Outcome made =
        run(HAP_CLI_PATH, {"plan", zoo("mlp"), "--cluster",
                           qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/local-cpu-3.yaml",
                           "-o", plan, "--no-baselines"});
    QVERIFY2(made.exitCode == 0 && !made.crashed, qPrintable(made.err));
    QFile f(plan);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
    QJsonObject cluster = doc["cluster"].toObject();
    QJsonObject inventory = cluster["inventory"].toObject();
    QJsonObject types = inventory["device_types"].toObject();
    QVERIFY2(!types.isEmpty(), "the plan embeds no cluster.inventory.device_types");
    const QString type = types.keys().front();
    QJsonObject t = types[type].toObject();
    QJsonObject flops = t["flops"].toObject();
    flops["float32"] = 1e-300;
    t["flops"] = flops;
    types[type] = t;
    inventory["device_types"] = types;
    cluster["inventory"] = inventory;
    doc["cluster"] = cluster;
    const QString bad = write("bad-flops.json", QJsonDocument(doc).toJson());
    const QString field = "device_types." + type + ".flops.float32";

    expectInputError(run(HAP_CLI_PATH, {"simulate", bad, "--model", zoo("mlp")}), {field});

    if (!QFileInfo(HAP_WORKER_PATH).isExecutable()) QSKIP("hap-worker is not built");
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("RANK", "0");
    env.insert("WORLD_SIZE", "3");
    env.insert("LOCAL_RANK", "0");
    env.insert("MASTER_ADDR", "127.0.0.1");
    env.insert("MASTER_PORT", "1");
    env.insert("HAP_TIMEOUT_S", "5");
    expectInputError(run(HAP_WORKER_PATH, {bad, "--model", zoo("mlp"), "--steps", "1"}, env), {field});
  }
};

QTEST_GUILESS_MAIN(TstHostileInputs)
#include "tst_hostile_inputs.moc"
