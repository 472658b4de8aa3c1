// Writing clusters as YAML: exact round trips of every bundled file, the unit spellings, raw
// field overrides (what editors validate with) and write errors.
#include <QtTest>

#include <QTemporaryDir>

#include <cstring>
#include <random>

#include "engine/cost/cluster.h"
#include "engine/cost/cluster_yaml.h"
#include "engine/cost/units.h"

using namespace hap;
using namespace hap::cost;

namespace {

QString clustersDir() {
  return qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/";
}

// Bitwise equality, so that -0/+0 or a last-bit difference is caught.
bool same(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Every field but `source`, doubles bit for bit; the first difference, or "".
QString difference(const Cluster& a, const Cluster& b) {
  auto d = [](double x, double y, const QString& what) {
    return same(x, y)
               ? QString()
               : QStringLiteral("%1: %2 != %3").arg(what).arg(x, 0, 'g', 17).arg(y, 0, 'g', 17);
  };
  if (a.name != b.name) return "name";
  if (a.description != b.description) return "description";
  if (a.profile != b.profile) return "profile";
  if (a.types.size() != b.types.size()) return "types.size";
  for (size_t i = 0; i < a.types.size(); ++i) {
    const DeviceType& x = a.types[i];
    const DeviceType& y = b.types[i];
    QString p = QStringLiteral("types[%1].").arg(i);
    if (x.name != y.name) return p + "name";
    if (x.source != y.source) return p + "source";
    for (QString e :
         {d(x.flops32, y.flops32, p + "flops32"), d(x.flops16, y.flops16, p + "flops16"),
          d(x.flops64, y.flops64, p + "flops64"),
          d(x.memoryBytes, y.memoryBytes, p + "memoryBytes"),
          d(x.memoryBandwidth, y.memoryBandwidth, p + "memoryBandwidth"),
          d(x.opOverheadSeconds, y.opOverheadSeconds, p + "opOverheadSeconds")})
      if (!e.isEmpty()) return e;
  }
  if (a.machines.size() != b.machines.size()) return "machines.size";
  for (size_t i = 0; i < a.machines.size(); ++i) {
    const Machine& x = a.machines[i];
    const Machine& y = b.machines[i];
    QString p = QStringLiteral("machines[%1].").arg(i);
    if (x.name != y.name) return p + "name";
    if (x.host != y.host) return p + "host";
    if (x.deviceType != y.deviceType) return p + "deviceType";
    if (x.count != y.count) return p + "count";
    for (QString e : {d(x.link.bandwidth, y.link.bandwidth, p + "link.bandwidth"),
                      d(x.link.latency, y.link.latency, p + "link.latency")})
      if (!e.isEmpty()) return e;
  }
  for (QString e : {d(a.network.bandwidth, b.network.bandwidth, "network.bandwidth"),
                    d(a.network.latency, b.network.latency, "network.latency")})
    if (!e.isEmpty()) return e;
  if (a.devices.size() != b.devices.size()) return "devices.size";
  for (size_t r = 0; r < a.devices.size(); ++r) {
    const Device& x = a.devices[r];
    const Device& y = b.devices[r];
    if (x.rank != y.rank || x.machine != y.machine || x.localRank != y.localRank ||
        x.type != y.type)
      return QStringLiteral("devices[%1]").arg(r);
  }
  for (int k = 0; k < kCollectiveCount; ++k)
    if (QString e = d(a.efficiency[k], b.efficiency[k], "efficiency"); !e.isEmpty()) return e;
  return {};
}

QString errorOf(const std::string& text) {
  try {
    parseCluster(text, "edit");
  } catch (const ClusterError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

Cluster small() {
  return parseCluster(
      "name: t\n"
      "device_types:\n"
      "  gpu: {flops: {float32: 10T}, memory: 16GiB, memory_bandwidth: 900GB/s}\n"
      "machines:\n"
      "  - {name: m0, device_type: gpu, count: 2, link: {bandwidth: 100GB/s, latency: 5us}}\n"
      "  - {name: m1, device_type: gpu, count: 1}\n"
      "network: {bandwidth: 10Gbps, latency: 50us}\n",
      "small");
}

}  // namespace

class TstClusterYaml : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY2(!qEnvironmentVariable("HAP_SOURCE_DIR").isEmpty(),
             "set HAP_SOURCE_DIR to the repository root (ctest does)");
  }

  // parse -> format -> parse gives the same cluster, and formatting is then a fixed point.
  void bundledRoundTrip_data() {
    QTest::addColumn<QString>("file");
    const QStringList files = QDir(clustersDir()).entryList({"*.yaml"}, QDir::Files);
    QVERIFY(files.size() >= 7);
    for (const QString& f : files) QTest::newRow(qPrintable(f)) << f;
  }
  void bundledRoundTrip() {
    QFETCH(QString, file);
    Cluster original = loadCluster((clustersDir() + file).toStdString());
    std::string text = formatClusterYaml(original);
    Cluster again;
    try {
      again = parseCluster(text, "formatted");
    } catch (const ClusterError& e) {
      QFAIL(qPrintable(QString::fromStdString(e.what()) + "\n" + QString::fromStdString(text)));
    }
    QString diff = difference(original, again);
    QVERIFY2(diff.isEmpty(), qPrintable(diff + "\n" + QString::fromStdString(text)));
    QCOMPARE(QString::fromStdString(formatClusterYaml(again)), QString::fromStdString(text));
  }

  // The a100-p100-4 file comes out as a person would write it.
  void readableOutput() {
    Cluster c = loadCluster((clustersDir() + "a100-p100-4.yaml").toStdString());
    QString text = QString::fromStdString(formatClusterYaml(c));
    QVERIFY2(text.contains("  A100-SXM4-40GB:\n"
                           "    flops: {float32: 19.5T, float16: 312T, float64: 9.7T}\n"
                           "    memory: 40GiB\n"
                           "    memory_bandwidth: 1555GB/s\n"
                           "    op_overhead: 10us\n"
                           "    source: \"NVIDIA A100 Tensor Core GPU datasheet (SXM4 40GB)\"\n"),
             qPrintable(text));
    QVERIFY2(text.contains("  - {name: a100-0, host: 10.0.1.1, device_type: A100-SXM4-40GB, "
                           "count: 2, link: {bandwidth: 300GB/s, latency: 5us}}\n"),
             qPrintable(text));
    QVERIFY2(text.contains("  - {name: p100-0, host: 10.0.1.2, device_type: P100-PCIE-16GB, "
                           "count: 2, link: {bandwidth: 15.75GB/s, latency: 6us}}\n"),
             qPrintable(text));
    QVERIFY2(text.contains("\nnetwork: {bandwidth: 1.3GB/s, latency: 70us}\n"), qPrintable(text));
    QVERIFY(
        text.startsWith("name: a100-p100-4\n"
                        "description: \"1 machine with 2 A100 (NVLink) + 1 machine with 2 "
                        "P100 (PCIe)\"\n"));
    QVERIFY(!text.contains("collectives"));
  }

  void unitSpellings_data() {
    QTest::addColumn<double>("value");
    QTest::addColumn<int>("unit");
    QTest::addColumn<QString>("text");
    auto row = [](const char* name, double v, Unit u, const char* t) {
      QTest::newRow(name) << v << int(u) << QString(t);
    };
    row("19.5T", 19.5e12, Unit::Flops, "19.5T");
    row("312T", 312e12, Unit::Flops, "312T");
    row("1.2P", 1.2e15, Unit::Flops, "1.2P");
    row("500 FLOP/s", 500, Unit::Flops, "500");
    row("2K", 2000, Unit::Flops, "2K");
    row("40GiB", 40.0 * (1 << 30), Unit::Bytes, "40GiB");
    row("1TiB", 0x1p40, Unit::Bytes, "1TiB");
    row("16GB", 16e9, Unit::Bytes, "16GB");
    row("1KB", 1000, Unit::Bytes, "1KB");
    row("0B", 0, Unit::Bytes, "0B");
    row("1555GB/s", 1555e9, Unit::Bandwidth, "1555GB/s");
    row("900GB/s", 900e9, Unit::Bandwidth, "900GB/s");
    row("15.75GB/s", 15.75e9, Unit::Bandwidth, "15.75GB/s");
    row("10Gbps", 1.25e9, Unit::Bandwidth, "10Gbps");
    row("100Gbps", 12.5e9, Unit::Bandwidth, "100Gbps");
    row("25GB/s", 25e9, Unit::Bandwidth, "25GB/s");
    row("1.3GB/s", 1.3e9, Unit::Bandwidth, "1.3GB/s");
    row("10us", 10e-6, Unit::Seconds, "10us");
    row("100us", 1e-4, Unit::Seconds, "100us");
    row("2ms", 2e-3, Unit::Seconds, "2ms");
    row("1.5s", 1.5, Unit::Seconds, "1.5s");
    row("0s", 0, Unit::Seconds, "0s");
    row("800ns", 8e-7, Unit::Seconds, "800ns");
    row("tiny", 1.5e-20, Unit::Seconds, "1.5e-20s");
    row("huge", 3e30, Unit::Flops, "3e30");
    row("negative", -5e-6, Unit::Seconds, "-5us");
    row("odd", 0.1 + 0.2, Unit::Seconds, "300.00000000000004ms");
  }
  void unitSpellings() {
    QFETCH(double, value);
    QFETCH(int, unit);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(formatYamlQuantity(value, Unit(unit))), text);
    std::optional<double> back = parseQuantity(text.toStdString(), Unit(unit));
    QVERIFY(back);
    QVERIFY2(same(*back, value), qPrintable(QString::number(*back, 'g', 17)));
  }

  // Random doubles of every magnitude parse back bit for bit in every unit.
  void unitsRoundTripExactly() {
    std::mt19937_64 rng(17);
    std::uniform_real_distribution<double> exponent(-25, 25);
    std::uniform_real_distribution<double> mantissa(1, 10);
    std::uniform_int_distribution<int> digits(1, 17);
    for (int i = 0; i < 20000; ++i) {
      double v = mantissa(rng) * std::pow(10.0, std::floor(exponent(rng)));
      if (i % 3 == 0) {  // short decimals, as people write them
        double scale = std::pow(10.0, digits(rng) % 5);
        v = std::round(v * scale) / scale;
      }
      if (i % 7 == 0) v = std::ldexp(std::floor(mantissa(rng) * 100), 10 * (i % 5));  // binary
      for (Unit u : {Unit::Flops, Unit::Bytes, Unit::Bandwidth, Unit::Seconds}) {
        std::string text = formatYamlQuantity(v, u);
        std::optional<double> back = parseQuantity(text, u);
        if (!back || !same(*back, v))
          QFAIL(qPrintable(QStringLiteral("%1 -> '%2' -> %3")
                               .arg(v, 0, 'g', 17)
                               .arg(QString::fromStdString(text))
                               .arg(back ? QString::number(*back, 'g', 17) : "nothing")));
      }
    }
    QCOMPARE(QString::fromStdString(formatYamlQuantity(std::nan(""), Unit::Bytes)), "nan");
    QVERIFY(!parseQuantity(formatYamlQuantity(INFINITY, Unit::Flops), Unit::Flops));
  }

  // Names that YAML would misread are quoted; defaults are left out; efficiencies are kept.
  void stringsDefaultsAndEfficiencies() {
    Cluster c = small();
    c.name = "my cluster: \"v2\"";
    c.description = "line one\nline two";
    c.profile = "lab-2024";
    c.types[0].name = "GPU #1";
    c.types[0].source = "a \\ backslash";
    c.machines[1].host = "null";
    c.efficiency[static_cast<int>(Collective::AllReduce)] = 0.8;
    c.efficiency[static_cast<int>(Collective::AllToAll)] = 0.123456789;
    std::string text = formatClusterYaml(c);
    Cluster back = parseCluster(text, "x");
    QVERIFY2(difference(c, back).isEmpty(), qPrintable(difference(c, back)));
    QString t = QString::fromStdString(text);
    QVERIFY2(t.contains("  all_reduce: {efficiency: 0.8}\n"), qPrintable(t));
    QVERIFY(!t.contains("all_gather"));
    QVERIFY(!t.contains("op_overhead"));                                   // 0: the default
    QVERIFY(!t.contains("float16"));                                       // 0: as float32
    QVERIFY(t.contains("{name: m0, device_type: \"GPU #1\", count: 2,"));  // host = name: omitted
    QVERIFY(t.contains("{name: m1, host: \"null\", device_type: \"GPU #1\", count: 1}"));
  }

  // A field the loader rejects is still written, so parsing names it.
  void invalidFieldsAreWrittenForTheLoaderToReport() {
    Cluster c = small();
    c.machines[1].count = 0;
    QCOMPARE(errorOf(formatClusterYaml(c)),
             "edit:11: machines[1].count: must be a positive integer (got '0')");
    c = small();
    c.machines[0].name = "";
    QVERIFY(errorOf(formatClusterYaml(c)).contains("machines[0].name: must be a non-empty string"));
    c = small();
    c.types[0].memoryBytes = -1;
    QVERIFY(errorOf(formatClusterYaml(c)).contains("device_types.gpu.memory: must be positive"));
    c = small();
    c.machines[0].link = {};
    QCOMPARE(errorOf(formatClusterYaml(c)),
             "edit:10: machines[0].link: missing; a machine with 2 devices needs the link between "
             "them, e.g. link: {bandwidth: 150GB/s, latency: 5us}");
    c = small();
    c.machines.pop_back();
    c.devices.pop_back();
    c.network = {};
    QVERIFY(errorOf(formatClusterYaml(c)).isEmpty());  // one machine: the network may go
    c.machines.clear();
    QVERIFY(errorOf(formatClusterYaml(c)).contains("machines: no machines"));
    Cluster empty;
    QVERIFY(errorOf(formatClusterYaml(empty)).contains("name: must be a non-empty string"));
    empty.name = "x";
    QVERIFY(errorOf(formatClusterYaml(empty)).contains("device_types: must be a mapping"));
  }

  // Raw overrides reach the loader verbatim, quoted, so its message names the field.
  void rawOverrides() {
    Cluster c = small();
    QCOMPARE(errorOf(formatClusterYaml(c, {{"device_types.gpu.memory", "40Gb"}})),
             "edit:6: device_types.gpu.memory: '40Gb' is not a byte size; write a number with an "
             "optional unit B, KB, MB, GB, TB (decimal) or KiB, MiB, GiB, TiB (binary), e.g. "
             "16GiB");
    QCOMPARE(errorOf(formatClusterYaml(c, {{"machines[1].count", "two"}})),
             "edit:11: machines[1].count: must be a positive integer (got 'two')");
    QVERIFY(errorOf(formatClusterYaml(c, {{"machines[0].device_type", "tpu"}}))
                .contains("machines[0].device_type: unknown device type 'tpu'; known types: gpu"));
    // Text that would break the document stays one scalar.
    QVERIFY(errorOf(formatClusterYaml(c, {{"network.latency", "1}, x: {"}}))
                .contains("network.latency: '1}, x: {' is not a time"));
    // An optional field that was absent is written when overridden.
    Cluster back = parseCluster(formatClusterYaml(c, {{"device_types.gpu.flops.float16", "125T"},
                                                      {"machines[1].link.bandwidth", "16GB/s"},
                                                      {"machines[1].link.latency", "0"}}),
                                "x");
    QVERIFY(back.types[0].flops16 == 125e12);
    QVERIFY(back.machines[1].link.bandwidth == 16e9);
  }

  void saveAndLoad() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    Cluster c = loadCluster((clustersDir() + "paper-testbed-64.yaml").toStdString());
    std::string path = dir.filePath("out.yaml").toStdString();
    saveCluster(c, path);
    Cluster back = loadCluster(path);
    QVERIFY2(difference(c, back).isEmpty(), qPrintable(difference(c, back)));
    QCOMPARE(QString::fromStdString(back.source), QString::fromStdString(path));
  }

  void writeError() {
    QTemporaryDir dir;
    std::string path = dir.filePath("no/such/folder/out.yaml").toStdString();
    try {
      saveCluster(small(), path);
      QFAIL("expected a ClusterError");
    } catch (const ClusterError& e) {
      QString message = QString::fromStdString(e.what());
      QVERIFY2(
          message.startsWith(QString::fromStdString(path) + ": cannot write the cluster file: "),
          qPrintable(message));
      QVERIFY2(message.contains("No such file or directory"), qPrintable(message));
    }
    // A directory is not a file either.
    QVERIFY_THROWS_EXCEPTION(ClusterError, saveCluster(small(), dir.path().toStdString()));
  }
};

QTEST_GUILESS_MAIN(TstClusterYaml)
#include "tst_cluster_yaml.moc"
