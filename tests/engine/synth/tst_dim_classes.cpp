// Dimension classes: linking, units and the deterministic rounding of shard lengths.
#include <QtTest>

#include <random>

#include "engine/synth/dim_classes.h"
#include "../rules/rule_test_util.h"

using namespace hap;
using synth::DimClasses;

class TstDimClasses : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void roundingPreservesTotals_data() {
    QTest::addColumn<qint64>("units");
    QTest::addColumn<QList<double>>("shares");
    QTest::addColumn<QList<qint64>>("expected");
    QTest::newRow("even") << qint64{8} << QList<double>{0.25, 0.25, 0.25, 0.25} << QList<qint64>{2, 2, 2, 2};
    QTest::newRow("remainder to largest fraction")
        << qint64{10} << QList<double>{0.5, 0.3, 0.2} << QList<qint64>{5, 3, 2};
    QTest::newRow("thirds: ties go to the lower rank")
        << qint64{10} << QList<double>{1.0 / 3, 1.0 / 3, 1.0 / 3} << QList<qint64>{4, 3, 3};
    QTest::newRow("zero-length shard") << qint64{3} << QList<double>{0.7, 0.3, 0.0} << QList<qint64>{2, 1, 0};
    QTest::newRow("fewer units than devices")
        << qint64{2} << QList<double>{0.3, 0.3, 0.2, 0.2} << QList<qint64>{1, 1, 0, 0};
    QTest::newRow("proportional 16 V100 : 48 P100 of 64")
        << qint64{64} << QList<double>{0.1, 0.1, 0.8} << QList<qint64>{7, 6, 51};
  }
  void roundingPreservesTotals() {
    QFETCH(qint64, units);
    QFETCH(QList<double>, shares);
    QFETCH(QList<qint64>, expected);
    std::vector<double> s(shares.begin(), shares.end());
    std::vector<int64_t> got = DimClasses::roundUnits(units, s);
    QCOMPARE(QList<qint64>(got.begin(), got.end()), expected);
    QCOMPARE(std::accumulate(got.begin(), got.end(), int64_t{0}), units);
    QCOMPARE(DimClasses::roundUnits(units, s), got);  // deterministic
  }

  // Random shares: the total is kept, each piece is within one unit of its exact share, and the
  // same shares give the same pieces.
  void roundingStaysWithinOneUnit() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(0, 1);
    for (int trial = 0; trial < 500; ++trial) {
      const int n = 1 + trial % 9;
      std::vector<double> s(static_cast<size_t>(n));
      for (double& v : s) v = u(rng);
      if (n > 1 && trial % 5 == 0) s[0] = 0;  // zero-length shards occur (the LP may give 0)
      double sum = 0;
      for (double v : s) sum += v;
      for (double& v : s) v /= sum;
      const int64_t units = 1 + trial * 7 % 97;
      const std::vector<int64_t> got = DimClasses::roundUnits(units, s);
      QCOMPARE(std::accumulate(got.begin(), got.end(), int64_t{0}), units);
      for (int j = 0; j < n; ++j)
        QVERIFY(std::abs(static_cast<double>(got[static_cast<size_t>(j)]) - s[static_cast<size_t>(j)] * units) < 1 + 1e-9);
      if (s[0] == 0) QCOMPARE(got[0], int64_t{0});  // a zero share gets nothing
      QVERIFY(DimClasses::roundUnits(units, s) == got);
    }
  }

  void viewLinksGiveGranularity() {
    // q [B, S, E=768] viewed as [B, S, 12, 64]: E may only be cut at multiples of 64.
    test::GraphBuilder b;
    ir::ValueId q = b.input("q", {4, 16, 768});
    ir::ValueId heads = b.input("heads", {4, 16, 12, 64});
    ir::ValueId w = b.param("w", {768, 768});
    DimClasses c(b.g);
    QVERIFY(c.link({q, 2}, {heads, 2}));
    QVERIFY(c.link({w, 0}, {q, 2}));
    QCOMPARE(c.classOf({w, 0}), c.classOf({heads, 2}));
    QCOMPARE(c.units(c.classOf({q, 2})), int64_t{12});
    QCOMPARE(c.unitSize({q, 2}), int64_t{64});
    QCOMPARE(c.unitSize({heads, 2}), int64_t{1});
    std::vector<double> shares{0.5, 0.3, 0.2};
    QCOMPARE(c.lengths({q, 2}, shares), (std::vector<int64_t>{384, 256, 128}));  // 6, 4, 2 heads
    QCOMPARE(c.lengths({heads, 2}, shares), (std::vector<int64_t>{6, 4, 2}));
    QCOMPARE(c.lengths({w, 0}, shares), c.lengths({q, 2}, shares));
    // Dimensions whose lengths do not divide each other are never linked.
    QVERIFY(!c.link({q, 1}, {heads, 2}));  // 16 and 12
    QVERIFY(c.classOf({q, 1}) != c.classOf({heads, 2}));
  }
};

QTEST_GUILESS_MAIN(TstDimClasses)
#include "tst_dim_classes.moc"
