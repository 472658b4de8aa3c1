// Device roofline and collective formulas, against values computed by hand (docs/cost-model.md).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "engine/cost/bucketed_gradients.h"
#include "engine/cost/cluster.h"
#include "engine/cost/cluster_yaml.h"
#include "engine/cost/collective_cost.h"
#include "engine/cost/device_cost.h"

using namespace hap;
using namespace hap::cost;

namespace {

const std::string kType =
    "device_types: {t: {flops: {float32: 1T, float16: 4T}, memory: 1GB, "
    "memory_bandwidth: 100GB/s, op_overhead: 10us}}\n";

// 2 devices on one machine; link α = 10 us, β = 1 GB/s.
Cluster one2(const std::string& extra = "") {
  return parseCluster("name: one2\n" + kType +
                          "machines: [{name: m0, device_type: t, count: 2, link: {bandwidth: "
                          "1GB/s, latency: 10us}}]\n" +
                          extra,
                      "one2");
}

// 2 machines × 2 devices; links α = 5 us, β = 10 GB/s; network α = 20 us, β = 1 GB/s.
// Ranks 0, 1 on m0; 2, 3 on m1. Bottleneck link: α = 20 us, β = 1 GB/s.
Cluster two2(const std::string& extra = "") {
  return parseCluster("name: two2\n" + kType +
                          "machines:\n"
                          "  - {name: m0, device_type: t, count: 2, link: {bandwidth: 10GB/s, "
                          "latency: 5us}}\n"
                          "  - {name: m1, device_type: t, count: 2, link: {bandwidth: 10GB/s, "
                          "latency: 5us}}\n"
                          "network: {bandwidth: 1GB/s, latency: 20us}\n" +
                          extra,
                      "two2");
}

// 4 machines × 1 device; network α = 20 us, β = 1 GB/s: the flat all-reduce of two2's
// bottleneck link, without the machine grid a hierarchical all-reduce needs.
Cluster four1(const std::string& extra = "") {
  return parseCluster("name: four1\n" + kType +
                          "machines:\n"
                          "  - {name: m0, device_type: t, count: 1}\n"
                          "  - {name: m1, device_type: t, count: 1}\n"
                          "  - {name: m2, device_type: t, count: 1}\n"
                          "  - {name: m3, device_type: t, count: 1}\n"
                          "network: {bandwidth: 1GB/s, latency: 20us}\n" +
                          extra,
                      "four1");
}

Cluster single() {
  return parseCluster(
      "name: single\n" + kType + "machines: [{name: m0, device_type: t, count: 1}]\n", "single");
}

using V = std::vector<double>;

}  // namespace

class TstCollectiveCost : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // ---- device roofline --------------------------------------------------------------------

  void rooflineRegimes() {
    DeviceType t = one2().types[0];  // 1 TFLOP/s fp32, 4 fp16, 100 GB/s, 10 us overhead
    // Compute-bound: 1e9 FLOP / 1e12 = 1 ms > 1e6 B / 1e11 = 10 us; + 10 us.
    QCOMPARE(computeSeconds(t, 1e9, 1e6, ir::DType::Float32), 0.00101);
    // Memory-bound: 1e6 FLOP → 1 us < 1e9 B / 1e11 = 10 ms; + 10 us.
    QCOMPARE(computeSeconds(t, 1e6, 1e9, ir::DType::Float32), 0.01001);
    // Float16 arithmetic at 4 TFLOP/s: 0.25 ms + 10 us; bfloat16 likewise.
    QCOMPARE(computeSeconds(t, 1e9, 1e6, ir::DType::Float16), 0.00026);
    QCOMPARE(computeSeconds(t, 1e9, 1e6, ir::DType::BFloat16), 0.00026);
    // Integers and float64 (no float64 figure given): the float32 rate.
    QCOMPARE(computeSeconds(t, 1e9, 0, ir::DType::Int64), 0.00101);
    QCOMPARE(computeSeconds(t, 1e9, 0, ir::DType::Float64), 0.00101);
    // No work, no kernel: a view costs nothing, not even the overhead.
    QCOMPARE(computeSeconds(t, 0, 0, ir::DType::Float32), 0.0);
    // Overhead alone dominates a tiny op.
    QCOMPARE(computeSeconds(t, 1, 4, ir::DType::Float32), 1e-5 + 4e-11);
    // The NodeCost form sums bytes read and written.
    ir::NodeCost cost{1e6, 600'000'000, 400'000'000};
    QCOMPARE(computeSeconds(t, cost, ir::DType::Float32), 0.01001);
  }

  // Bytes, not elements: the same elementwise op on float16 moves half the bytes.
  void rooflineBytesNotElements() {
    DeviceType t = one2().types[0];
    const double elements = 2.5e8;  // out = a + b: read a, b and write out
    auto bytes = [&](ir::DType d) { return 3 * elements * double(ir::dtypeSize(d)); };
    QCOMPARE(computeSeconds(t, elements, bytes(ir::DType::Float32), ir::DType::Float32),
             3e9 / 1e11 + 1e-5);  // 30.01 ms
    QCOMPARE(computeSeconds(t, elements, bytes(ir::DType::Float16), ir::DType::Float16),
             1.5e9 / 1e11 + 1e-5);  // 15.01 ms
  }

  // ---- link classes -----------------------------------------------------------------------

  void collectiveLinkClasses() {
    Link l = collectiveLink(one2(), Collective::AllGather);
    QCOMPARE(l.bandwidth, 1e9);
    QCOMPARE(l.latency, 10e-6);
    l = collectiveLink(two2(), Collective::AllGather);  // bottleneck: the network
    QCOMPARE(l.bandwidth, 1e9);
    QCOMPARE(l.latency, 20e-6);
    l = collectiveLink(single(), Collective::AllReduce);
    QVERIFY(std::isinf(l.bandwidth));
    QCOMPARE(l.latency, 0.0);

    // Heterogeneous links: min bandwidth, max latency over the network and every machine with
    // two or more devices; a one-device machine's (absent) link does not count.
    Cluster mixed = parseCluster(
        "name: mixed\n" + kType +
            "machines:\n"
            "  - {name: fast, device_type: t, count: 2, link: {bandwidth: 10GB/s, latency: 5us}}\n"
            "  - {name: slow, device_type: t, count: 2, link: {bandwidth: 2GB/s, latency: 30us}}\n"
            "  - {name: lone, device_type: t, count: 1}\n"
            "network: {bandwidth: 4GB/s, latency: 20us}\n",
        "mixed");
    l = collectiveLink(mixed, Collective::AllReduce);
    QCOMPARE(l.bandwidth, 2e9);
    QCOMPARE(l.latency, 30e-6);

    // Efficiency scales the bandwidth of that collective only.
    Cluster slow = two2("collectives: {all_reduce: {efficiency: 0.5}}\n");
    QCOMPARE(collectiveLink(slow, Collective::AllReduce).bandwidth, 0.5e9);
    QCOMPARE(collectiveLink(slow, Collective::AllGather).bandwidth, 1e9);

    // The paper's testbed is bound by its 10.4 Gbps network.
    Cluster testbed = loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                                  "/resources/clusters/paper-testbed-64.yaml");
    l = collectiveLink(testbed, Collective::AllGather);
    QVERIFY(l.bandwidth == 1.3e9);
    QVERIFY(l.latency == 70e-6);
  }

  void ceilLog2Values() {
    QCOMPARE(ceilLog2(1), 0);
    QCOMPARE(ceilLog2(2), 1);
    QCOMPARE(ceilLog2(3), 2);
    QCOMPARE(ceilLog2(4), 2);
    QCOMPARE(ceilLog2(5), 3);
    QCOMPARE(ceilLog2(64), 6);
  }

  // ---- all-gather / reduce-scatter ----------------------------------------------------------

  void allGatherOneMachine() {
    Cluster c = one2();
    // Padded: (n−1)(α + max/β) = 1 · (10 us + 3e6/1e9) = 3.01 ms.
    QCOMPARE(allGatherSeconds(c, Method::Padded, V{1e6, 3e6}), 0.00301);
    // Grouped: Σ (⌈log2 2⌉·α + shard/β) = (10 us + 1 ms) + (10 us + 3 ms) = 4.02 ms.
    QCOMPARE(allGatherSeconds(c, Method::Grouped, V{1e6, 3e6}), 0.00402);
    QCOMPARE(reduceScatterSeconds(c, Method::Padded, V{1e6, 3e6}), 0.00301);
    QCOMPARE(reduceScatterSeconds(c, Method::Grouped, V{1e6, 3e6}), 0.00402);
  }

  // Padded wins on even shards; grouped wins on very uneven ones (the paper's §2.5.1).
  void paddedVersusGrouped() {
    Cluster c = two2();  // n = 4, α = 20 us, β = 1 GB/s, ⌈log2 4⌉ = 2
    const V even{1e6, 1e6, 1e6, 1e6};
    // Padded: 3 · (20 us + 1 ms) = 3.06 ms. Grouped: 4 · (2 · 20 us) + 4e6/1e9 = 4.16 ms.
    double padded = allGatherSeconds(c, Method::Padded, even);
    double grouped = allGatherSeconds(c, Method::Grouped, even);
    QCOMPARE(padded, 0.00306);
    QCOMPARE(grouped, 0.00416);
    QVERIFY(padded < grouped);

    const V skewed{8e6, 1e6, 1e6, 0};
    // Padded: 3 · (20 us + 8 ms) = 24.06 ms. Grouped (the empty shard is not broadcast):
    // 3 · 40 us + 10e6/1e9 = 10.12 ms.
    padded = allGatherSeconds(c, Method::Padded, skewed);
    grouped = allGatherSeconds(c, Method::Grouped, skewed);
    QCOMPARE(padded, 0.02406);
    QCOMPARE(grouped, 0.01012);
    QVERIFY(grouped < padded);

    // Reduce-scatter is the dual: the same numbers over the output pieces.
    QCOMPARE(reduceScatterSeconds(c, Method::Padded, skewed), 0.02406);
    QCOMPARE(reduceScatterSeconds(c, Method::Grouped, skewed), 0.01012);
    QCOMPARE(reduceScatterSeconds(c, Method::Padded, even), 0.00306);
    QCOMPARE(reduceScatterSeconds(c, Method::Grouped, even), 0.00416);
  }

  // A float16 tensor costs half the bandwidth term of a float32 one with as many elements.
  void collectivesCountBytes() {
    Cluster c = two2();
    const double elements = 1e6;  // split evenly over 4 devices
    auto shards = [&](ir::DType d) { return V(4, elements / 4 * double(ir::dtypeSize(d))); };
    // float32: shard = 1e6 bytes → 3 · (20 us + 1 ms) = 3.06 ms.
    QCOMPARE(allGatherSeconds(c, Method::Padded, shards(ir::DType::Float32)), 0.00306);
    // float16: shard = 0.5e6 bytes → 3 · (20 us + 0.5 ms) = 1.56 ms.
    QCOMPARE(allGatherSeconds(c, Method::Padded, shards(ir::DType::Float16)), 0.00156);
    // All-reduce of 4e6 elements over 4 single-device machines: float32 16e6 bytes vs float16
    // 8e6 bytes (ring): 6 · (20 us + 16e6/4e9) = 24.12 ms; 6 · (20 us + 8e6/4e9) = 12.12 ms.
    QCOMPARE(allReduceSeconds(four1(), 4e6 * 4), 0.02412);
    QCOMPARE(allReduceSeconds(four1(), 4e6 * 2), 0.01212);
  }

  // ---- all-reduce, broadcast ------------------------------------------------------------------

  void allReduceRingAndTree() {
    // One machine, n = 2, S = 2e6: ring 2 · (10 us + 2e6/2e9) = 2.02 ms;
    // tree 2 · 1 · 10 us + 2 · 2e6/1e9 = 4.02 ms → ring.
    QCOMPARE(allReduceSeconds(one2(), 2e6), 0.00202);
    QCOMPARE(allReduceCost(one2(), 2e6).algorithm, AllReduceAlgorithm::Ring);
    Cluster c = four1();
    // Large, n = 4, S = 8e6: ring 6 · (20 us + 8e6/4e9) = 12.12 ms;
    // tree 2 · 2 · 20 us + 2 · 8e6/1e9 = 16.08 ms → ring.
    QCOMPARE(allReduceSeconds(c, 8e6), 0.01212);
    // Small, S = 1e3: ring 6 · (20 us + 250 ns) = 121.5 us; tree 80 us + 2 us = 82 us → tree.
    QCOMPARE(allReduceSeconds(c, 1e3), 82e-6);
    QCOMPARE(allReduceCost(c, 1e3).algorithm, AllReduceAlgorithm::Tree);
    // Efficiency 0.5 halves β: ring 6 · (20 us + 8e6/2e9) = 24.12 ms.
    QCOMPARE(allReduceSeconds(four1("collectives: {all_reduce: {efficiency: 0.5}}\n"), 8e6), 0.02412);
  }

  // Only M ≥ 2 machines of equally many (≥ 2) devices form the grid.
  void machineGrids() {
    QVERIFY(!machineGrid(one2()));
    QVERIFY(!machineGrid(four1()));
    QVERIFY(!machineGrid(single()));
    const std::optional<MachineGrid> g = machineGrid(two2());
    QVERIFY(g);
    QCOMPARE(g->machines, 2);
    QCOMPARE(g->perMachine, 2);
    const Cluster uneven = parseCluster("name: uneven\n" + kType +
                                            "machines:\n"
                                            "  - {name: m0, device_type: t, count: 2, link: {bandwidth: 10GB/s, "
                                            "latency: 5us}}\n"
                                            "  - {name: m1, device_type: t, count: 3, link: {bandwidth: 10GB/s, "
                                            "latency: 5us}}\n"
                                            "network: {bandwidth: 1GB/s, latency: 20us}\n",
                                        "uneven");
    QVERIFY(!machineGrid(uneven));
    QCOMPARE(allReduceCost(uneven, 8e6).algorithm, AllReduceAlgorithm::Ring);
    // takeDevices keeps the grid: 2 of each machine's devices.
    QCOMPARE(machineGrid(takeDevices(uneven, 2))->perMachine, 2);
  }

  // 2 machines × 2 devices (inside α = 5 us, β = 10 GB/s; network α = 20 us, β = 1 GB/s).
  void allReduceHierarchical() {
    Cluster c = two2();
    // S = 8e6: inside 2 · 1 · (5 us + 8e6/2e10) = 0.81 ms; across ring 2 · 1 · (20 us + 8e6/2e9)
    // = 8.04 ms (tree 2 · 20 us + 16 ms) → 8.85 ms, against the flat ring's 12.12 ms.
    AllReduceCost big = allReduceCost(c, 8e6);
    QCOMPARE(big.algorithm, AllReduceAlgorithm::Hierarchical);
    QCOMPARE(big.seconds, 0.00885);
    QCOMPARE(allReduceSeconds(c, 8e6), 0.00885);
    // S = 1e3: inside 2 · (5 us + 0.05 us) + across 2 · (20 us + 0.5 us) = 51.1 us < tree 82 us.
    QCOMPARE(allReduceCost(c, 1e3).algorithm, AllReduceAlgorithm::Hierarchical);
    QVERIFY(std::abs(allReduceSeconds(c, 1e3) - 51.1e-6) < 1e-12);
    // Efficiency 0.5 halves every β: 2 · (5 us + 8e6/1e10) + 2 · (20 us + 8e6/1e9) = 17.65 ms.
    QCOMPARE(allReduceSeconds(two2("collectives: {all_reduce: {efficiency: 0.5}}\n"), 8e6), 0.01765);
    // A network as fast as the machines' links leaves the flat ring cheaper, since the phases
    // run one after another: inside 2 · (5 us + 8e6/2e10) = 0.81 ms, across 2 · (5 us +
    // 8e6/2e10) = 0.81 ms → 1.62 ms, against the ring's 6 · (5 us + 8e6/4e10) = 1.23 ms.
    Cluster fast = parseCluster("name: fast\n" + kType +
                                    "machines:\n"
                                    "  - {name: m0, device_type: t, count: 2, link: {bandwidth: 10GB/s, latency: 5us}}\n"
                                    "  - {name: m1, device_type: t, count: 2, link: {bandwidth: 10GB/s, latency: 5us}}\n"
                                    "network: {bandwidth: 10GB/s, latency: 5us}\n",
                                "fast");
    QCOMPARE(allReduceCost(fast, 8e6).algorithm, AllReduceAlgorithm::Ring);
    QCOMPARE(allReduceSeconds(fast, 8e6), 0.00123);
    QCOMPARE(allReduceAlgorithmName(AllReduceAlgorithm::Hierarchical), std::string_view("hierarchical"));
  }

  void broadcast() {
    // ⌈log2 4⌉ · 20 us + 4e6/1e9 = 4.04 ms.
    QCOMPARE(broadcastSeconds(two2(), 4e6), 0.00404);
    QCOMPARE(broadcastSeconds(one2(), 1e6), 0.00101);
  }

  // The local CPU cluster reproduces the measured 16 MiB Gloo all-reduce between 2 processes
  // (~17 ms): 2 · (100 us + 8 MiB / 1 GB/s), plus the ranks' own 400 us per call
  // (collective_call).
  void localCpuAllReduce() {
    Cluster c = loadCluster(qEnvironmentVariable("HAP_SOURCE_DIR").toStdString() +
                            "/resources/clusters/local-cpu-4.yaml");
    Cluster two = takeDevices(c, 2);
    QCOMPARE(allReduceSeconds(two, 16.0 * 1024 * 1024), 400e-6 + 2 * (100e-6 + 8388608.0 / 1e9));
  }

  // ---- all-to-all -------------------------------------------------------------------------

  void allToAll() {
    Cluster c = two2();
    // Even: every device sends 1e6 to each other device. Device 0: 1e6 to rank 1 over the
    // 10 GB/s link (0.1 ms); machine m0 sends 4e6 through its NIC (4 ms). (n−1)α = 60 us.
    QCOMPARE(allToAllSeconds(c, V{4e6, 4e6, 4e6, 4e6}, V{0.25, 0.25, 0.25, 0.25}), 0.00406);
    // Uneven shares: everything goes to ranks 0 and 1. m1 sends 3e6+3e6 (rank 2) + 1e6+1e6
    // (rank 3) = 8e6 bytes into m0 → 8 ms + 60 us.
    QCOMPARE(allToAllSeconds(c, V{2e6, 2e6, 6e6, 2e6}, V{0.5, 0.5, 0, 0}), 0.00806);
    // One machine: device 1 sends 2e6 to device 0, which receives 2e6 (receiving counts too):
    // 10 us + 2e6/1e9 = 2.01 ms.
    QCOMPARE(allToAllSeconds(one2(), V{2e6, 4e6}, V{0.5, 0.5}), 0.00201);
    // A device's share for itself stays local: all to rank 0 from rank 0 moves nothing.
    QCOMPARE(allToAllSeconds(one2(), V{2e6, 0}, V{1, 0}), 10e-6);
  }

  // The pair sums factor into per-machine totals: the result is the definition's, pair by pair,
  // on machines of different sizes and links, with zero shares and zero bytes among them.
  void allToAllMatchesPairByPairDefinition() {
    const Cluster c = parseCluster(
        "name: mixed\n" + kType +
            "machines:\n"
            "  - {name: m0, device_type: t, count: 3, link: {bandwidth: 10GB/s, latency: 5us}}\n"
            "  - {name: m1, device_type: t, count: 1}\n"
            "  - {name: m2, device_type: t, count: 4, link: {bandwidth: 2GB/s, latency: 7us}}\n"
            "network: {bandwidth: 1GB/s, latency: 20us}\n",
        "mixed");
    const int n = c.size();
    auto definition = [&](const V& bytes, const V& shares) {
      V sent(n, 0), received(n, 0), egress(3, 0), ingress(3, 0);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          if (i == j) continue;
          const int mi = c.devices[i].machine, mj = c.devices[j].machine;
          const double b = bytes[i] * shares[j];
          if (mi == mj) sent[i] += b, received[j] += b;
          else egress[mi] += b, ingress[mj] += b;
        }
      double transfer = 0;
      for (int i = 0; i < n; ++i)
        if (std::max(sent[i], received[i]) > 0)
          transfer = std::max(transfer, std::max(sent[i], received[i]) /
                                            c.machines[c.devices[i].machine].link.bandwidth);
      for (int m = 0; m < 3; ++m) transfer = std::max(transfer, std::max(egress[m], ingress[m]) / 1e9);
      return (n - 1) * 20e-6 + transfer;
    };
    const V cases[][2] = {
        {V{1e6, 2e6, 3e6, 4e6, 5e6, 6e6, 7e6, 8e6}, V{0.05, 0.1, 0.15, 0.2, 0.1, 0.1, 0.2, 0.1}},
        {V{0, 5e6, 0, 1e6, 0, 0, 3e6, 0}, V{0.5, 0, 0, 0, 0.25, 0.25, 0, 0}},
        {V{8e6, 0, 0, 0, 0, 0, 0, 0}, V{0, 0, 0, 1, 0, 0, 0, 0}},
        {V{1e6, 1e6, 1e6, 0, 0, 0, 0, 0}, V{0.3, 0.3, 0.4, 0, 0, 0, 0, 0}},  // inside m0 only
    };
    for (const auto& [bytes, shares] : cases) {
      const double expected = definition(bytes, shares);
      const double got = allToAllSeconds(c, bytes, shares);
      QVERIFY2(std::abs(got - expected) <= 1e-12 * expected,
               qPrintable(QString("got %1, expected %2").arg(got, 0, 'g', 17).arg(expected, 0, 'g', 17)));
    }
  }

  // ---- the runtime's own cost per call (collective_call) -------------------------------------

  // 3 devices on 2 machines: m0 has one device of type `a`, m1 two of type `b`.
  static Cluster withCalls(const std::string& a, const std::string& b) {
    return parseCluster("name: calls\ndevice_types:\n"
                        "  a: {flops: {float32: 1T}, memory: 1GB, memory_bandwidth: 100GB/s" + a + "}\n"
                        "  b: {flops: {float32: 1T}, memory: 1GB, memory_bandwidth: 100GB/s" + b + "}\n"
                        "machines:\n"
                        "  - {name: m0, device_type: a, count: 1}\n"
                        "  - {name: m1, device_type: b, count: 2, link: {bandwidth: 10GB/s, latency: 5us}}\n"
                        "network: {bandwidth: 1GB/s, latency: 20us}\n",
                        "calls");
  }

  void callCostIsTheSlowestParticipants() {
    const Cluster plain = withCalls("", "");
    const Cluster calls = withCalls(", collective_call: 100us", ", collective_call: 400us");
    QCOMPARE(callSeconds(plain), 0.0);
    QCOMPARE(callSeconds(calls), 400e-6);
    QCOMPARE(callSeconds(single()), 0.0);
    const double call = 400e-6;
    auto near = [](double got, double expected) { return std::abs(got - expected) <= 1e-12 + 1e-9 * expected; };
    const V shards{1e6, 2e6, 0};
    // Once per call: padded gathers, all-to-all, re-shard, broadcast, a flat all-reduce.
    QVERIFY(near(allGatherSeconds(calls, Method::Padded, shards), allGatherSeconds(plain, Method::Padded, shards) + call));
    QVERIFY(near(reduceScatterSeconds(calls, Method::Padded, shards),
                 reduceScatterSeconds(plain, Method::Padded, shards) + call));
    QVERIFY(near(allToAllSeconds(calls, V{1e6, 1e6, 1e6}, V{0.2, 0.3, 0.5}),
                 allToAllSeconds(plain, V{1e6, 1e6, 1e6}, V{0.2, 0.3, 0.5}) + call));
    QVERIFY(near(reshardSeconds(calls, 1e6, V{0.5, 0.25, 0.25}, V{0.25, 0.5, 0.25}),
                 reshardSeconds(plain, 1e6, V{0.5, 0.25, 0.25}, V{0.25, 0.5, 0.25}) + call));
    QCOMPARE(reshardSeconds(calls, 1e6, V{0.5, 0.25, 0.25}, V{0.5, 0.25, 0.25}), 0.0);  // no call at all
    QVERIFY(near(broadcastSeconds(calls, 1e6), broadcastSeconds(plain, 1e6) + call));
    QVERIFY(near(allReduceSeconds(calls, 1e6), allReduceSeconds(plain, 1e6) + call));
    // Grouped: one broadcast (or reduce) per non-empty piece.
    QVERIFY(near(allGatherSeconds(calls, Method::Grouped, shards), allGatherSeconds(plain, Method::Grouped, shards) + 2 * call));
    // The LP's affine form agrees with the exact cost at positive shares.
    const GatherLinear lin = gatherLinear(calls, Collective::AllGather, Method::Padded, 3e6);
    QVERIFY(near(lin.constant + lin.perLargestShare * (2.0 / 3), allGatherSeconds(calls, Method::Padded, V{1e6, 2e6, 0})));
    // A YAML round trip keeps the field (plans embed the cluster).
    QCOMPARE(parseCluster(formatClusterYaml(calls), "again").types[1].collectiveCallSeconds, 400e-6);
  }

  void gradientsPayTheirPartOfABucketCall() {
    const Cluster c = withCalls(", collective_call: 100us", ", collective_call: 400us");
    const double fixed = allReduceSeconds(c, 0), bucket = static_cast<double>(kGradientBucketBytes);
    QVERIFY(fixed > 400e-6);
    // A parameter filling a quarter of a bucket pays a quarter of the call and all of its bytes.
    const double quarter = bucket / 4;
    QVERIFY(std::abs(bucketedGradientSeconds(c, quarter) - (allReduceSeconds(c, quarter) - 0.75 * fixed)) < 1e-12);
    // One of a bucket or more pays a whole call, as an all-reduce of its own.
    QCOMPARE(bucketedGradientSeconds(c, 2 * bucket), allReduceSeconds(c, 2 * bucket));
    // Four quarter-bucket parameters cost what one bucket's call does.
    QVERIFY(std::abs(4 * bucketedGradientSeconds(c, quarter) - allReduceSeconds(c, bucket)) < 1e-9);
    // Without buckets, one call per parameter.
    QCOMPARE(bucketedGradientSeconds(c, quarter, 0), allReduceSeconds(c, quarter));
    QCOMPARE(bucketedGradientSeconds(single(), quarter), 0.0);
  }

  // The buckets the stage model prices are the runtime's (tests/runtime/tst_gradient_buckets'
  // bucketSizesAndHooks runs the same sizes through GradientBuckets): reverse parameter order, the
  // first at most 1 MiB, a parameter larger than a bucket alone, a dtype change starts a bucket,
  // and <= 0 is one bucket per dtype run.
  void bucketsAsTheRuntimeFormsThem() {
    const int64_t mib = int64_t{1} << 20;
    const std::vector<GradientSlot> slots{{mib, 0}, {mib, 0}, {mib, 0}, {2 * mib, 0}};
    using Buckets = std::vector<std::vector<size_t>>;
    QCOMPARE(assignGradientBuckets(slots, 2 * mib), (Buckets{{3}, {2, 1}, {0}}));
    QCOMPARE(assignGradientBuckets(slots, 0), (Buckets{{3, 2, 1, 0}}));
    QCOMPARE(assignGradientBuckets(slots, 4 * mib), (Buckets{{3}, {2, 1, 0}}));
    const std::vector<GradientSlot> small{{100, 0}, {100, 1}, {100, 1}, {100, 0}};
    QCOMPARE(assignGradientBuckets(small, 4 * mib), (Buckets{{3}, {2, 1}, {0}}));
    QCOMPARE(assignGradientBuckets({}, 4 * mib), Buckets{});
  }

  // Buckets run one after another, each from when its gradients are in and the one before has
  // started; the last ends at max_k (ready_k + the seconds of k and every later bucket).
  void bucketsRunOneAfterAnother() {
    const std::vector<double> ready{1, 1.5, 4, 3}, seconds{2, 1, 0.5, 1};
    const std::vector<BucketSpan> s = scheduleBuckets(ready, seconds);
    QCOMPARE(s.size(), size_t{4});
    QCOMPARE(s[0].start, 1.0);
    QCOMPARE(s[0].end, 3.0);
    QCOMPARE(s[1].start, 3.0);
    QCOMPARE(s[1].end, 4.0);  // waits for the channel
    QCOMPARE(s[2].start, 4.0);
    QCOMPARE(s[2].end, 4.5);
    QCOMPARE(s[3].start, 4.5);
    QCOMPARE(s[3].end, 5.5);  // ready at 3, but starts after bucket 2
    double last = 0;
    for (size_t k = 0; k < ready.size(); ++k) {
      double suffix = 0;
      for (size_t j = k; j < ready.size(); ++j) suffix += seconds[j];
      last = std::max(last, ready[k] + suffix);
    }
    QCOMPARE(s.back().end, last);
  }

  // ---- one device: nothing to communicate ---------------------------------------------------

  void oneDeviceCostsNothing() {
    Cluster c = single();
    QCOMPARE(allGatherSeconds(c, Method::Padded, V{1e9}), 0.0);
    QCOMPARE(allGatherSeconds(c, Method::Grouped, V{1e9}), 0.0);
    QCOMPARE(reduceScatterSeconds(c, Method::Padded, V{1e9}), 0.0);
    QCOMPARE(reduceScatterSeconds(c, Method::Grouped, V{1e9}), 0.0);
    QCOMPARE(allReduceSeconds(c, 1e9), 0.0);
    QCOMPARE(broadcastSeconds(c, 1e9), 0.0);
    QCOMPARE(allToAllSeconds(c, V{1e9}, V{1}), 0.0);
  }

  void wrongVectorSizeIsACallerBug() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             allGatherSeconds(two2(), Method::Padded, V{1, 2, 3}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, allToAllSeconds(two2(), V{1, 2, 3, 4}, V{1}));
  }
};

QTEST_GUILESS_MAIN(TstCollectiveCost)
#include "tst_collective_cost.moc"
