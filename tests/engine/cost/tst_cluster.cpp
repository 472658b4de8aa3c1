// Cluster inventories: the bundled files, units, subsets and every validation message.
#include <QtTest>

#include <QTemporaryDir>

#include <random>

#include "engine/cost/cluster.h"
#include "engine/cost/units.h"

using namespace hap;
using namespace hap::cost;

namespace {

QString clustersDir() {
  return qEnvironmentVariable("HAP_SOURCE_DIR") + "/resources/clusters/";
}

Cluster bundled(const QString& file) {
  return loadCluster((clustersDir() + file).toStdString());
}

QString clusterError(const std::string& text, const std::string& origin = "clusters/x.yaml") {
  try {
    parseCluster(text, origin);
  } catch (const ClusterError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

int countOf(const Cluster& c, const std::string& typeName) {
  int n = 0;
  for (const Device& d : c.devices) n += c.types[d.type].name == typeName;
  return n;
}

// A valid two-machine cluster; the error cases edit one line of it. Line numbers matter.
const std::string kBase =
    "name: t\n"                                                                               // 1
    "device_types:\n"                                                                         // 2
    "  gpu:\n"                                                                                // 3
    "    flops: {float32: 10T}\n"                                                             // 4
    "    memory: 16GiB\n"                                                                     // 5
    "    memory_bandwidth: 900GB/s\n"                                                         // 6
    "machines:\n"                                                                             // 7
    "  - {name: m0, device_type: gpu, count: 2, link: {bandwidth: 100GB/s, latency: 5us}}\n"  // 8
    "  - {name: m1, device_type: gpu, count: 2, link: {bandwidth: 100GB/s, latency: 5us}}\n"  // 9
    "network: {bandwidth: 10Gbps, latency: 50us}\n";                                          // 10

const std::string kMachines =
    "machines:\n"
    "  - {name: m0, device_type: gpu, count: 2, link: {bandwidth: 100GB/s, latency: 5us}}\n"
    "  - {name: m1, device_type: gpu, count: 2, link: {bandwidth: 100GB/s, latency: 5us}}\n";

// kBase with the first occurrence of `from` at or after line `line` replaced by `to`.
std::string edit(const std::string& from, const std::string& to, int line = 1) {
  std::string text = kBase;
  size_t start = 0;
  for (int l = 1; l < line; ++l) start = text.find('\n', start) + 1;
  size_t at = text.find(from, start);
  Q_ASSERT(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

class TstCluster : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY2(!qEnvironmentVariable("HAP_SOURCE_DIR").isEmpty(),
             "set HAP_SOURCE_DIR to the repository root (ctest does)");
  }

  // ---- bundled files ----------------------------------------------------------------------

  void bundledFilesLoad_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("size");
    QTest::addColumn<int>("machines");
    QTest::addColumn<int>("v100");
    QTest::addColumn<int>("p100");
    QTest::addColumn<int>("a100");
    QTest::newRow("testbed 64") << "paper-testbed-64.yaml" << 64 << 8 << 16 << 48 << 0;
    QTest::newRow("testbed 32") << "paper-testbed-32.yaml" << 32 << 8 << 8 << 24 << 0;
    QTest::newRow("testbed 16") << "paper-testbed-16.yaml" << 16 << 8 << 4 << 12 << 0;
    QTest::newRow("testbed 8") << "paper-testbed-8.yaml" << 8 << 8 << 2 << 6 << 0;
    QTest::newRow("homogeneous 32") << "paper-homogeneous-32.yaml" << 32 << 4 << 0 << 32 << 0;
    QTest::newRow("a100 p100") << "a100-p100-4.yaml" << 4 << 2 << 0 << 2 << 2;
  }
  void bundledFilesLoad() {
    QFETCH(QString, file);
    QFETCH(int, size);
    QFETCH(int, machines);
    QFETCH(int, v100);
    QFETCH(int, p100);
    QFETCH(int, a100);
    Cluster c = bundled(file);
    QCOMPARE(QString::fromStdString(c.name) + ".yaml", file);
    QCOMPARE(c.size(), size);
    QCOMPARE(int(c.machines.size()), machines);
    QCOMPARE(countOf(c, "V100-SXM2-16GB"), v100);
    QCOMPARE(countOf(c, "P100-PCIE-16GB"), p100);
    QCOMPARE(countOf(c, "A100-SXM4-40GB"), a100);
    QVERIFY(c.spansMachines());
    QCOMPARE(QString::fromStdString(c.source), clustersDir() + file);
    for (const DeviceType& t : c.types) QVERIFY2(!t.source.empty(), t.name.c_str());
  }

  // Every file in resources/clusters loads, including ones added later.
  void everyBundledFileLoads() {
    QStringList files = QDir(clustersDir()).entryList({"*.yaml"}, QDir::Files);
    QVERIFY(files.size() >= 7);
    for (const QString& f : files) {
      try {
        Cluster c = bundled(f);
        QVERIFY(c.size() > 0);
      } catch (const ClusterError& e) {
        QFAIL(e.what());
      }
    }
  }

  void testbedDetails() {
    Cluster c = bundled("paper-testbed-64.yaml");
    QCOMPARE(QString::fromStdString(summary(c)),
             "paper-testbed-64: 64 devices (16 x V100-SXM2-16GB, 48 x P100-PCIE-16GB) on 8 "
             "machines");
    // Ranks machine by machine, local rank order within.
    QCOMPARE(c.devices[15].machine, 1);
    QCOMPARE(c.devices[15].localRank, 7);
    QCOMPARE(c.devices[16].machine, 2);
    QCOMPARE(c.devices[16].localRank, 0);
    QCOMPARE(c.devices[63].rank, 63);
    QCOMPARE(QString::fromStdString(c.machineOf(63).name), "p100-5");
    QCOMPARE(QString::fromStdString(c.machineOf(0).host), "10.0.0.1");
    // Exact base-unit values.
    const DeviceType& v100 = c.type(0);
    QVERIFY(v100.flops32 == 15.7e12);
    QVERIFY(v100.flops(ir::DType::Float16) == 125e12);
    QVERIFY(v100.flops(ir::DType::BFloat16) == 125e12);
    QVERIFY(v100.flops(ir::DType::Float64) == 7.8e12);
    QVERIFY(v100.flops(ir::DType::Int64) == 15.7e12);  // integers: as float32
    QVERIFY(v100.memoryBytes == 17179869184.0);
    QVERIFY(v100.memoryBandwidth == 900e9);
    QVERIFY(v100.opOverheadSeconds == 10e-6);
    const DeviceType& p100 = c.type(16);
    QVERIFY(p100.flops32 == 9.3e12);
    QVERIFY(p100.flops16 == 18.7e12);
    QVERIFY(p100.memoryBandwidth == 732e9);
    QVERIFY(c.machines[0].link.bandwidth == 150e9);
    QVERIFY(c.machines[0].link.latency == 5e-6);
    QVERIFY(c.machines[1].link.bandwidth == 150e9);  // YAML alias *nvlink
    QVERIFY(c.machines[7].link.bandwidth == 15.75e9);
    QVERIFY(c.network.bandwidth == 1.3e9);  // 10.4 Gbps
    QVERIFY(c.network.latency == 70e-6);
    for (Collective k : {Collective::AllGather, Collective::AllReduce, Collective::Broadcast})
      QCOMPARE(c.efficiencyOf(k), 1.0);
  }

  void localCpuCluster() {
    Cluster c = bundled("local-cpu-4.yaml");
    QCOMPARE(c.size(), 4);
    QVERIFY(!c.spansMachines());
    QCOMPARE(QString::fromStdString(c.machines[0].host), "127.0.0.1");
    QVERIFY(c.type(3).flops32 == 50e9);
    QVERIFY(c.type(3).flops(ir::DType::Float16) == 50e9);  // no float16 figure: as float32
    QVERIFY(c.type(3).memoryBytes == 4294967296.0);
    QVERIFY(c.machines[0].link.bandwidth == 1e9);
    QVERIFY(c.machines[0].link.latency == 100e-6);
    QCOMPARE(c.network.bandwidth, 0.0);  // one machine: no network needed
  }

  // The 8/16/32-GPU files are the paper's k-GPUs-per-machine subsets of the 64-GPU testbed.
  void subsetsMatchTakeDevices() {
    Cluster full = bundled("paper-testbed-64.yaml");
    for (int k : {1, 2, 4, 8}) {
      Cluster file = bundled(QString("paper-testbed-%1.yaml").arg(8 * k));
      Cluster taken = takeDevices(full, k);
      QCOMPARE(taken.size(), file.size());
      QCOMPARE(QString::fromStdString(taken.name), QString("paper-testbed-64[%1/machine]").arg(k));
      for (int r = 0; r < taken.size(); ++r) {
        QCOMPARE(taken.devices[r].rank, r);
        QCOMPARE(taken.devices[r].machine, file.devices[r].machine);
        QCOMPARE(taken.devices[r].localRank, file.devices[r].localRank);
        QCOMPARE(taken.type(r).name, file.type(r).name);
        QVERIFY(taken.type(r).flops32 == file.type(r).flops32);
        QVERIFY(taken.machineOf(r).link.bandwidth == file.machineOf(r).link.bandwidth);
        QCOMPARE(taken.machineOf(r).name, file.machineOf(r).name);
      }
      QVERIFY(taken.network.bandwidth == file.network.bandwidth);
      QVERIFY(taken.network.latency == file.network.latency);
      QCOMPARE(countOf(taken, "V100-SXM2-16GB") * 4, taken.size());  // a quarter V100
    }
  }

  void takeDevicesErrors() {
    Cluster full = bundled("paper-testbed-64.yaml");
    auto message = [&](int k) {
      try {
        takeDevices(full, k);
      } catch (const ClusterError& e) {
        return QString::fromStdString(e.what());
      }
      return QString();
    };
    QCOMPARE(message(0),
             "cluster 'paper-testbed-64': cannot take 0 devices per machine; take at least 1");
    QCOMPARE(message(9),
             "cluster 'paper-testbed-64': cannot take 9 devices per machine; machine 'v100-0' "
             "has only 8");
  }

  // ---- units ------------------------------------------------------------------------------

  void parsesUnits_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("unit");
    QTest::addColumn<double>("expected");
    auto row = [](const char* name, const char* text, Unit u, double v) {
      QTest::newRow(name) << QString::fromUtf8(text) << int(u) << v;
    };
    row("flops T", "15.7T", Unit::Flops, 15.7e12);
    row("flops G", "50G", Unit::Flops, 50e9);
    row("flops k", "2k", Unit::Flops, 2e3);
    row("flops P", "1P", Unit::Flops, 1e15);
    row("flops TFLOPS", "19.5 TFLOPS", Unit::Flops, 19.5e12);
    row("flops TFLOP/s", "312TFLOP/s", Unit::Flops, 312e12);
    row("flops plain", "1000", Unit::Flops, 1000);
    row("flops exponent", "1.5e3G", Unit::Flops, 1.5e12);
    row("bytes GiB", "16GiB", Unit::Bytes, 17179869184.0);
    row("bytes MiB space", "512 MiB", Unit::Bytes, 536870912.0);
    row("bytes KiB", "1.5KiB", Unit::Bytes, 1536);
    row("bytes GB", "16GB", Unit::Bytes, 16e9);
    row("bytes kB", "4kB", Unit::Bytes, 4000);
    row("bytes B", "100B", Unit::Bytes, 100);
    row("bytes plain", "1024", Unit::Bytes, 1024);
    row("bw GB/s", "900GB/s", Unit::Bandwidth, 900e9);
    row("bw fraction GB/s", "15.75GB/s", Unit::Bandwidth, 15.75e9);
    row("bw GiB/s", "1GiB/s", Unit::Bandwidth, 1073741824.0);
    row("bw MB/s", "250MB/s", Unit::Bandwidth, 250e6);
    row("bw Gbps", "10.4Gbps", Unit::Bandwidth, 1.3e9);
    row("bw Gbit/s", "10.4 Gbit/s", Unit::Bandwidth, 1.3e9);
    row("bw Mbps", "100Mbps", Unit::Bandwidth, 12.5e6);
    row("bw Tbps", "1.6Tbps", Unit::Bandwidth, 200e9);
    row("bw plain", "5e8", Unit::Bandwidth, 5e8);
    row("time us", "5us", Unit::Seconds, 5e-6);
    row("time micro sign", "5\u00b5s", Unit::Seconds, 5e-6);
    row("time ms", "1.5ms", Unit::Seconds, 1.5e-3);
    row("time ns", "30ns", Unit::Seconds, 30e-9);
    row("time s", "2s", Unit::Seconds, 2);
    row("time plain", "0.25", Unit::Seconds, 0.25);
    row("time exponent", "1e-6s", Unit::Seconds, 1e-6);
    row("padded", "  70 us ", Unit::Seconds, 70e-6);
    row("negative", "-5us", Unit::Seconds, -5e-6);
    row("plus sign", "+2ms", Unit::Seconds, 2e-3);
    row("exponent plus", "1e+3MB", Unit::Bytes, 1e9);
  }
  void parsesUnits() {
    QFETCH(QString, text);
    QFETCH(int, unit);
    QFETCH(double, expected);
    std::optional<double> v = parseQuantity(text.toStdString(), Unit(unit));
    QVERIFY2(v.has_value(), qPrintable(text));
    // Exact: decimal prefixes are applied before rounding.
    QVERIFY2(*v == expected, qPrintable(QString("%1 -> %2").arg(text).arg(*v, 0, 'g', 17)));
  }

  void rejectsBadUnits_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("unit");
    auto row = [](const char* text, Unit u) { QTest::newRow(text) << QString(text) << int(u); };
    row("", Unit::Bytes);
    row("GB", Unit::Bytes);
    row("15.7X", Unit::Flops);
    row("15.7t", Unit::Flops);      // prefixes are upper case (k excepted)
    row("1m", Unit::Flops);         // milli-FLOP/s is not a thing
    row("16Gb", Unit::Bytes);       // bits are not a memory size
    row("16GiB", Unit::Bandwidth);  // a size is not a bandwidth
    row("10 Gbs", Unit::Bandwidth);
    row("10Gb/s", Unit::Bandwidth);  // ambiguous: write Gbit/s or GB/s
    row("900GBps", Unit::Bandwidth);
    row("5 u s", Unit::Seconds);
    row("5 min", Unit::Seconds);
    row("5us", Unit::Bytes);
    row("1e999", Unit::Seconds);  // overflows
    row("inf", Unit::Seconds);
    row("nan", Unit::Seconds);
    row(".", Unit::Seconds);
    row("1e", Unit::Seconds);
    row("1.2.3", Unit::Seconds);
    row("0x10", Unit::Bytes);
  }
  void rejectsBadUnits() {
    QFETCH(QString, text);
    QFETCH(int, unit);
    QVERIFY2(!parseQuantity(text.toStdString(), Unit(unit)).has_value(), qPrintable(text));
  }

  void formatsQuantities() {
    QCOMPARE(QString::fromStdString(formatQuantity(15.7e12, Unit::Flops)), "15.7 TFLOP/s");
    QCOMPARE(QString::fromStdString(formatQuantity(17179869184.0, Unit::Bytes)), "16 GiB");
    QCOMPARE(QString::fromStdString(formatQuantity(1.3e9, Unit::Bandwidth)), "1.3 GB/s");
    QCOMPARE(QString::fromStdString(formatQuantity(5e-6, Unit::Seconds)), "5 us");
    QCOMPARE(QString::fromStdString(formatQuantity(0.01212, Unit::Seconds)), "12.12 ms");
    QCOMPARE(QString::fromStdString(formatQuantity(0, Unit::Seconds)), "0 s");
    QCOMPARE(QString::fromStdString(formatQuantity(512, Unit::Bytes)), "512 B");
  }

  // ---- parsing details --------------------------------------------------------------------

  void baseParses() {
    Cluster c = parseCluster(kBase, "clusters/x.yaml");
    QCOMPARE(c.size(), 4);
    QCOMPARE(QString::fromStdString(c.machines[1].host), "m1");  // host defaults to the name
    QCOMPARE(c.type(0).opOverheadSeconds, 0.0);                  // optional, default 0
    QCOMPARE(c.type(0).flops16, 0.0);
    QVERIFY(c.type(0).flops(ir::DType::Float16) == 10e12);  // falls back to float32
    QVERIFY(c.network.bandwidth == 1.25e9);
  }

  void optionalFields() {
    std::string text = kBase +
                       "description: two machines\n"
                       "profile: lab-2024\n"
                       "collectives:\n"
                       "  all_reduce: {efficiency: 0.8}\n"
                       "  all_to_all: {efficiency: 1}\n";
    Cluster c = parseCluster(text, "x");
    QCOMPARE(QString::fromStdString(c.description), "two machines");
    QCOMPARE(QString::fromStdString(c.profile), "lab-2024");
    QCOMPARE(c.efficiencyOf(Collective::AllReduce), 0.8);
    QCOMPARE(c.efficiencyOf(Collective::AllToAll), 1.0);
    QCOMPARE(c.efficiencyOf(Collective::AllGather), 1.0);
    QCOMPARE(QString::fromStdString(std::string(collectiveName(Collective::ReduceScatter))),
             "reduce_scatter");
  }

  // A one-device machine needs no link; a one-machine cluster needs no network.
  void linkAndNetworkOptionalWhereUnused() {
    Cluster c = parseCluster(
        "name: solo\n"
        "device_types: {gpu: {flops: {float32: 1T}, memory: 1GB, memory_bandwidth: 1GB/s}}\n"
        "machines: [{name: m0, device_type: gpu, count: 1}]\n",
        "x");
    QCOMPARE(c.size(), 1);
    QVERIFY(!c.spansMachines());
    QCOMPARE(c.machines[0].link.bandwidth, 0.0);
  }

  // ---- validation: one exact message per kind of mistake ----------------------------------

  void validationErrors_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");
    auto row = [](const char* name, const std::string& text, const char* message) {
      QTest::newRow(name) << QString::fromStdString(text) << QString::fromUtf8(message);
    };
    row("unknown key", edit("count: 2", "cout: 2", 9),
        "clusters/x.yaml:9: machines[1].cout: unknown key (did you mean 'count'?); allowed "
        "keys: name, host, device_type, count, link");
    row("unknown top-level key", edit("network:", "netwrok:"),
        "clusters/x.yaml:10: netwrok: unknown key (did you mean 'network'?); allowed keys: "
        "name, description, profile, device_types, machines, network, collectives");
    row("unknown key, no suggestion", edit("memory: 16GiB", "colour: red"),
        "clusters/x.yaml:5: device_types.gpu.colour: unknown key; allowed keys: flops, memory, "
        "memory_bandwidth, op_overhead, collective_call, source");
    row("unknown dtype", edit("float32: 10T", "float32: 10T, int8: 100T"),
        "clusters/x.yaml:4: device_types.gpu.flops.int8: unknown key; allowed keys: float32, "
        "float16, float64");
    row("bad unit", edit("10Gbps", "10Gbs"),
        "clusters/x.yaml:10: network.bandwidth: '10Gbs' is not a bandwidth; write a number "
        "with a unit B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s or bits: bps, "
        "Kbps, Mbps, Gbps, Tbps, bit/s, Kbit/s, Mbit/s, Gbit/s, Tbit/s; e.g. 900GB/s or "
        "10.4Gbps");
    row("bad memory unit", edit("16GiB", "16Gb"),
        "clusters/x.yaml:5: device_types.gpu.memory: '16Gb' is not a byte size; write a "
        "number with an optional unit B, KB, MB, GB, TB (decimal) or KiB, MiB, GiB, TiB "
        "(binary), e.g. 16GiB");
    row("bad flops", edit("10T", "10 teraflops"),
        "clusters/x.yaml:4: device_types.gpu.flops.float32: '10 teraflops' is not a FLOP/s "
        "value; write a number with an optional suffix K, M, G, T or P (decimal), e.g. 15.7T");
    row("bad time", edit("latency: 50us", "latency: 50 minutes"),
        "clusters/x.yaml:10: network.latency: '50 minutes' is not a time; write a number with "
        "an optional unit s, ms, us or ns, e.g. 5us");
    row("missing field", edit("    memory: 16GiB\n", ""),
        "clusters/x.yaml:4: device_types.gpu.memory: missing; give the device memory, e.g. "
        "memory: 16GiB");
    row("missing count", edit("count: 2, ", "", 8),
        "clusters/x.yaml:8: machines[0].count: missing; give the number of devices on this "
        "machine, e.g. count: 8");
    row("missing float32", edit("{float32: 10T}", "{float16: 10T}"),
        "clusters/x.yaml:4: device_types.gpu.flops.float32: missing; give the float32 peak, "
        "e.g. float32: 15.7T");
    row("missing name", edit("name: t\n", ""),
        "clusters/x.yaml:1: name: missing; give the cluster a name, e.g. name: my-cluster");
    row("unknown device type", edit("device_type: gpu", "device_type: gpus", 9),
        "clusters/x.yaml:9: machines[1].device_type: unknown device type 'gpus'; known types: "
        "gpu (define it under device_types)");
    row("negative count", edit("count: 2", "count: -1", 9),
        "clusters/x.yaml:9: machines[1].count: must be a positive integer (got '-1')");
    row("zero count", edit("count: 2", "count: 0"),
        "clusters/x.yaml:8: machines[0].count: must be a positive integer (got '0')");
    row("fractional count", edit("count: 2", "count: 2.5"),
        "clusters/x.yaml:8: machines[0].count: must be a positive integer (got '2.5')");
    row("huge count", edit("count: 2", "count: 5000"),
        "clusters/x.yaml:8: machines[0].count: 5000 is more than HAP supports (at most 1024)");
    row("zero bandwidth", edit("bandwidth: 100GB/s", "bandwidth: 0GB/s"),
        "clusters/x.yaml:8: machines[0].link.bandwidth: must be positive (got '0GB/s')");
    row("negative memory", edit("16GiB", "-16GiB"),
        "clusters/x.yaml:5: device_types.gpu.memory: must be positive (got '-16GiB')");
    row("negative latency", edit("latency: 50us", "latency: -50us"),
        "clusters/x.yaml:10: network.latency: must be zero or positive (got '-50us')");
    // Outside what the solvers represent (units.h, supportedRange; issue 32).
    row("flops 1e-300", edit("10T", "1e-300"),
        "clusters/x.yaml:4: device_types.gpu.flops.float32: '1e-300' is outside the range HAP "
        "supports for a FLOP/s value (1M to 1000P FLOP/s); check the number and its unit "
        "(docs/cost-model.md, \"Ranges\")");
    row("flops 1e308", edit("10T", "1e308"),
        "clusters/x.yaml:4: device_types.gpu.flops.float32: '1e308' is outside the range HAP "
        "supports for a FLOP/s value (1M to 1000P FLOP/s); check the number and its unit "
        "(docs/cost-model.md, \"Ranges\")");
    row("memory 100B", edit("16GiB", "100B"),
        "clusters/x.yaml:5: device_types.gpu.memory: '100B' is outside the range HAP supports "
        "for a byte size (1MiB to 1024TiB); check the number and its unit (docs/cost-model.md, "
        "\"Ranges\")");
    row("bandwidth 1e-300", edit("bandwidth: 100GB/s", "bandwidth: 1e-300"),
        "clusters/x.yaml:8: machines[0].link.bandwidth: '1e-300' is outside the range HAP "
        "supports for a bandwidth (1KB/s to 10000TB/s); check the number and its unit "
        "(docs/cost-model.md, \"Ranges\")");
    row("latency of an hour", edit("latency: 50us", "latency: 3600s"),
        "clusters/x.yaml:10: network.latency: '3600s' is outside the range HAP supports for a "
        "time (1ns to 60s, or 0); check the number and its unit (docs/cost-model.md, "
        "\"Ranges\")");
    row("tiny efficiency", kBase + "collectives: {all_reduce: {efficiency: 1e-300}}\n",
        "clusters/x.yaml:11: collectives.all_reduce.efficiency: '1e-300' is below the smallest "
        "efficiency HAP supports (0.001); a collective achieves at least that fraction of the "
        "link bandwidth");
    row("duplicate machine", edit("name: m1", "name: m0"),
        "clusters/x.yaml:9: machines[1].name: duplicate machine name 'm0' (also machines[0]); "
        "give every machine its own name");
    row("no machines", edit(kMachines, "machines: []\n"),
        "clusters/x.yaml:7: machines: no machines; list at least one, e.g. - {name: m0, "
        "device_type: ..., count: 8, link: {...}}");
    row("machines not a list", edit(kMachines, "machines: m0\n"),
        "clusters/x.yaml:7: machines: must be a list of machines, e.g. - {name: m0, "
        "device_type: ..., count: 8, link: {...}}");
    row("machine not a mapping", edit("  - {name: m0", "  - m0\n  - {name: m0"),
        "clusters/x.yaml:8: machines[0]: must be a mapping (a machine's name, host, "
        "device_type, count, link)");
    row("missing network", edit("network: {bandwidth: 10Gbps, latency: 50us}\n", ""),
        "clusters/x.yaml:1: network: missing; a cluster with 2 machines needs the network "
        "between them, e.g. network: {bandwidth: 10Gbps, latency: 50us}");
    row("missing link", edit(", link: {bandwidth: 100GB/s, latency: 5us}", "", 9),
        "clusters/x.yaml:9: machines[1].link: missing; a machine with 2 devices needs the link "
        "between them, e.g. link: {bandwidth: 150GB/s, latency: 5us}");
    row("misspelt latency", edit("latency: 50us", "lat: 50us"),
        "clusters/x.yaml:10: network.lat: unknown key (did you mean 'latency'?); allowed "
        "keys: bandwidth, latency");
    row("no device types",
        edit("device_types:\n  gpu:\n    flops: {float32: 10T}\n    memory: "
             "16GiB\n    memory_bandwidth: 900GB/s\n",
             "device_types: {}\n"),
        "clusters/x.yaml:2: device_types: must be a mapping from type name to {flops, memory, "
        "memory_bandwidth, op_overhead, collective_call, source} with at least one type");
    row("duplicate key", edit("network:", "name: u\nnetwork:"),
        "clusters/x.yaml:10: name: duplicate key; give each key once");
    row("string expected", edit("name: t", "name: [a, b]"),
        "clusters/x.yaml:1: name: must be a non-empty string");
    row("efficiency range", kBase + "collectives: {all_reduce: {efficiency: 80}}\n",
        "clusters/x.yaml:11: collectives.all_reduce.efficiency: must be a number in (0, 1], "
        "the fraction of the link bandwidth achieved (got '80')");
    row("efficiency with unit", kBase + "collectives: {all_reduce: {efficiency: 80%}}\n",
        "clusters/x.yaml:11: collectives.all_reduce.efficiency: must be a number in (0, 1], "
        "the fraction of the link bandwidth achieved (got '80%')");
    row("unknown collective", kBase + "collectives: {allreduce: {efficiency: 0.8}}\n",
        "clusters/x.yaml:11: collectives.allreduce: unknown key (did you mean 'all_reduce'?); "
        "allowed keys: all_gather, reduce_scatter, all_reduce, all_to_all, broadcast");
    row("not a mapping", "just text\n",
        "clusters/x.yaml:1: expected a mapping with keys name, device_types, machines and "
        "network (see docs/cost-model.md)");
    row("empty", "",
        "clusters/x.yaml: the file is empty; expected a mapping with keys name, device_types, "
        "machines and network (see docs/cost-model.md)");
    row("comments only", "# nothing here\n",
        "clusters/x.yaml: the file is empty; expected a mapping with keys name, device_types, "
        "machines and network (see docs/cost-model.md)");
  }
  void validationErrors() {
    QFETCH(QString, text);
    QFETCH(QString, message);
    QCOMPARE(clusterError(text.toStdString()), message);
  }

  void invalidYaml() {
    QCOMPARE(clusterError("name: t\nnetwork: {bandwidth: 10Gbps, latency: 50us\n"),
             "clusters/x.yaml:3: not valid YAML: end of map flow not found; check the "
             "indentation, brackets and quotes on or before that line");
    QCOMPARE(clusterError("name: a\n  bad indent: [\n"),
             "clusters/x.yaml:2: not valid YAML: illegal map value; check the indentation, "
             "brackets and quotes on or before that line");
  }

  // Names are UTF-8; a message quotes the hostile bytes as \xNN, so it stays valid UTF-8 itself
  // (raw bytes here: validationErrors' QString rows would turn them into U+FFFD).
  void nonUtf8Names() {
    QCOMPARE(clusterError(edit("name: t", "name: \"t\xff\"")),
             "clusters/x.yaml:1: name: 't\\xff' is not valid UTF-8 (byte 0xff at offset 1); write "
             "names and texts in UTF-8 and save the file as UTF-8");
    QCOMPARE(clusterError(edit("  gpu:", "  \"g\xc3\x28\":")),
             "clusters/x.yaml:3: device_types.g\\xc3(: 'g\\xc3(' is not valid UTF-8 (byte 0xc3 at "
             "offset 1); write names and texts in UTF-8 and save the file as UTF-8");
    QCOMPARE(clusterError(edit("name: m1", "name: \"m\xed\xa0\x80\"")),  // a surrogate
             "clusters/x.yaml:9: machines[1].name: 'm\\xed\\xa0\\x80' is not valid UTF-8 (byte 0xed "
             "at offset 1); write names and texts in UTF-8 and save the file as UTF-8");
    QVERIFY(clusterError(edit("name: t", "name: \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80\"")).isEmpty());
  }

  // A directory is not "empty" (issue 32): readTextFile says what it is.
  void directoryIsNotAClusterFile() {
    QTemporaryDir dir;
    try {
      loadCluster(dir.path().toStdString());
      QFAIL("no error");
    } catch (const ClusterError& e) {
      QCOMPARE(QString(e.what()), dir.path() +
                                      ": is a directory, not a cluster file; check the path (bundled "
                                      "clusters are in resources/clusters/)");
    }
  }

  // What a solver that failed names: the extremes of each kind, with their fields.
  void extremeValuesNameTheirFields() {
    const Cluster c = parseCluster(kBase + "collectives: {all_reduce: {efficiency: 0.5}}\n", "x");
    QCOMPARE(QString::fromStdString(extremeValues(c)),
             "FLOP/s 10 TFLOP/s (device_types.gpu.flops.float32); memory 16 GiB "
             "(device_types.gpu.memory); bandwidth 1.25 GB/s (network.bandwidth) to 900 GB/s "
             "(device_types.gpu.memory_bandwidth); time 5 us (machines[0].link.latency) to 50 us "
             "(network.latency); efficiency 0.5 (collectives.all_reduce.efficiency)");
  }

  void missingFile() {
    try {
      loadCluster("/nonexistent/dir/x.yaml");
      QFAIL("no error");
    } catch (const ClusterError& e) {
      QCOMPARE(QString(e.what()),
               "/nonexistent/dir/x.yaml: cannot open the cluster file; check the path (bundled "
               "clusters are in resources/clusters/)");
    }
  }

  // Never crash on bad YAML: every prefix of a real file, and random corruptions of it, either
  // parse or throw ClusterError.
  void neverCrashesOnBadYaml() {
    QFile f(clustersDir() + "paper-testbed-64.yaml");
    QVERIFY(f.open(QIODevice::ReadOnly));
    const std::string text = f.readAll().toStdString();
    auto survives = [](const std::string& t) {
      try {
        parseCluster(t, "fuzz.yaml");
      } catch (const ClusterError&) {
      }
    };
    for (size_t n = 0; n <= text.size(); n += 7) survives(text.substr(0, n));
    for (size_t n = 0; n <= kBase.size(); ++n) survives(kBase.substr(0, n));
    survives(
        std::string(100000, '['));  // deep nesting: yaml-cpp's depth guard, not a stack overflow
    survives("machines: " + std::string(100000, '{'));
    survives("a: &x [*x]\n");  // a self-referencing alias
    std::mt19937 rng(12345);
    const std::string alphabet = "{}[]:,-#&*!|>'\"\n %@`?0123456789abcXYZ.\t\\";
    for (int round = 0; round < 2000; ++round) {
      std::string t = round % 2 ? text : kBase;
      int edits = 1 + int(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        size_t at = rng() % t.size();
        switch (rng() % 3) {
          case 0:
            t[at] = alphabet[rng() % alphabet.size()];
            break;
          case 1:
            t.erase(at, 1 + rng() % 8);
            break;
          default:
            t.insert(at, 1, alphabet[rng() % alphabet.size()]);
            break;
        }
      }
      survives(t);
    }
  }
};

QTEST_GUILESS_MAIN(TstCluster)
#include "tst_cluster.moc"
