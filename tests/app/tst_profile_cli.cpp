// `hap profile --quick` as a user runs it: it measures this machine, stores a profile whose every
// op family and collective was measured and fitted, and exports a cluster inventory that loads.
#include <QtTest>

#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <cmath>
#include <string>

#include "db/store.h"
#include "engine/cost/cluster.h"
#include "engine/cost/collective_cost.h"
#include "engine/cost/profile.h"

using namespace hap;

namespace {

struct Run {
  int exitCode = -1;
  QString out, err;
  double seconds = 0;
};

Run runHap(const QStringList& args) {
  QProcess p;
  QElapsedTimer timer;
  timer.start();
  p.start(HAP_CLI_PATH, args);
  if (!p.waitForFinished(240'000)) {
    p.kill();
    p.waitForFinished(5'000);
    qFatal("hap %s did not finish in 240 s", qPrintable(args.join(' ')));
  }
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError()),
          timer.elapsed() / 1000.0};
}

}  // namespace

class TstProfileCli : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void quickProfileIsStoredAndExported() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString db = dir.filePath("profiles.db"), yaml = dir.filePath("c.yaml");
    const Run r = runHap({"profile", "--quick", "--ranks", "2", "--name", "test-box", "--db", db, "--export-cluster", yaml});
    QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
    qInfo("hap profile --quick --ranks 2 took %.1f s", r.seconds);
    QVERIFY2(r.out.contains("profile test-box v1 saved to " + db), qPrintable(r.out));
    QVERIFY2(r.out.contains(QRegularExpression("matmul float32: 3 sizes, [0-9.]+ [MGT]FLOP/s at the largest")),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("all_reduce ring: 6 sizes"), qPrintable(r.out));

    const db::Store store(db.toStdString(), db::Store::Mode::ReadOnly);
    const std::optional<cost::Profile> p = store.loadProfile("test-box");
    QVERIFY(p.has_value());
    QCOMPARE(p->version, 1);
    QVERIFY(!p->host.empty() && !p->createdAt.empty());
    QCOMPARE(p->devices.size(), size_t{1});
    const cost::DeviceProfile& d = p->devices.front();
    QCOMPARE(QString::fromStdString(d.deviceType), QString("cpu"));
    QCOMPARE(d.threads, 1);
    QVERIFY(d.memoryBandwidth > 1e8);
    for (int f = 0; f < cost::kOpFamilyCount; ++f) {
      const auto family = static_cast<cost::OpFamily>(f);
      for (ir::DType t : {ir::DType::Float32, ir::DType::Float64}) {
        const cost::OpThroughput* o = d.find(family, t);
        const std::string what = std::string(cost::opFamilyName(family)) + " " + std::string(ir::dtypeName(t));
        QVERIFY2(o && o->samples.size() >= 3, what.c_str());
        for (size_t i = 0; i < o->samples.size(); ++i) {
          QVERIFY2(o->samples[i].seconds > 0, what.c_str());
          if (i > 0) QVERIFY2(o->samples[i].work > o->samples[i - 1].work, what.c_str());
        }
      }
    }
    // Matmul work is counted as the planner counts it: 2·n³ for the n×n product.
    const cost::OpThroughput* mm = d.find(cost::OpFamily::MatMul, ir::DType::Float32);
    const double n = std::round(std::cbrt(mm->samples.front().work / 2));
    QCOMPARE(mm->samples.front().work, 2 * n * n * n);

    struct Expected {
      cost::Collective collective;
      const char* algorithm;
    };
    for (const Expected& e : {Expected{cost::Collective::AllReduce, ""}, Expected{cost::Collective::AllGather, "padded"},
                              Expected{cost::Collective::AllGather, "grouped"},
                              Expected{cost::Collective::ReduceScatter, "padded"},
                              Expected{cost::Collective::ReduceScatter, "grouped"},
                              Expected{cost::Collective::AllToAll, ""}, Expected{cost::Collective::Broadcast, ""}}) {
      const cost::CollectiveFit* fit = p->collective(e.collective, cost::LinkClass::Intra, e.algorithm);
      const std::string what = std::string(cost::collectiveName(e.collective)) + " " + e.algorithm;
      QVERIFY2(fit, what.c_str());
      QVERIFY2(fit->link.bandwidth > 0 && fit->link.latency >= 0, what.c_str());
      // A sane fit, not a tight one: a quick profile on a loaded 2-core machine measures small sizes
      // with noise (residuals of 8-50% were seen), while a fit of the wrong formula is off by
      // multiples.
      QVERIFY2(fit->relativeResidual < 1.0,
               qPrintable(QString("%1: residual %2").arg(what.c_str()).arg(fit->relativeResidual)));
      QCOMPARE(fit->ranks, 2);
      QCOMPARE(fit->samples, 6);
    }

    const cost::Cluster c = cost::loadCluster(yaml.toStdString());
    QCOMPARE(QString::fromStdString(c.profile), QString("test-box"));
    QCOMPARE(c.size(), 2);
    QCOMPARE(c.types.size(), size_t{1});
    QCOMPARE(QString::fromStdString(c.types[0].name), QString("cpu"));
    QCOMPARE(c.types[0].flops32, mm->samples.back().work / mm->samples.back().seconds);
    QVERIFY(c.types[0].flops64 > 0);
    QVERIFY(c.types[0].memoryBytes > 1e8);
    QCOMPARE(c.types[0].memoryBandwidth, d.memoryBandwidth);
    QVERIFY(c.types[0].opOverheadSeconds > 0);
    const cost::CollectiveFit* ring = p->collective(cost::Collective::AllReduce, cost::LinkClass::Intra, "ring");
    QVERIFY(ring);
    QCOMPARE(c.machines[0].link.bandwidth, ring->link.bandwidth);
    QCOMPARE(c.machines[0].link.latency, ring->link.latency);
  }

  // An emulated heterogeneous cluster's profile: a type measured at half a core by the
  // launcher's quota is about half as fast, --merge adds a second type to the latest version, and
  // --link-class stores the collective fits for both classes.
  void throttledTypesMergeIntoOneProfile() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString db = dir.filePath("profiles.db");
    const Run half = runHap({"profile", "--quick", "--ranks", "2", "--link-class", "intra,inter", "--name", "emu",
                             "--device-type", "cpu-0.5", "--cpu-share", "0.5", "--db", db});
    QVERIFY2(half.exitCode == 0, qPrintable(half.out + half.err));
    const Run full = runHap({"profile", "--quick", "--ranks", "1", "--name", "emu", "--device-type", "cpu-1", "--merge",
                             "--cpu-share", "1", "--db", db});
    QVERIFY2(full.exitCode == 0, qPrintable(full.out + full.err));
    QVERIFY2(full.out.contains("profile emu v2 saved"), qPrintable(full.out));

    const db::Store store(db.toStdString(), db::Store::Mode::ReadOnly);
    const std::optional<cost::Profile> p = store.loadProfile("emu");
    QVERIFY(p && p->version == 2);
    QCOMPARE(p->devices.size(), size_t{2});
    const cost::DeviceProfile *a = p->device("cpu-0.5"), *b = p->device("cpu-1");
    QVERIFY(a && b);
    const cost::OpThroughput *ma = a->find(cost::OpFamily::MatMul, ir::DType::Float32),
                             *mb = b->find(cost::OpFamily::MatMul, ir::DType::Float32);
    QVERIFY(ma && mb);
    // At the largest size (the quota's 20 ms periods average out over the loop): about 2x.
    const double ratio = ma->samples.back().seconds / mb->samples.back().seconds;
    QVERIFY2(ratio > 1.4 && ratio < 3.5, qPrintable(QString("half a core is %1x as slow").arg(ratio)));
    // The collectives measured with the first type are kept by the merge, under both classes.
    for (cost::LinkClass k : {cost::LinkClass::Intra, cost::LinkClass::Inter})
      QVERIFY2(p->collective(cost::Collective::AllReduce, k, "ring"), cost::linkClassName(k).data());
  }

  void badDatabaseFailsBeforeMeasuring() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString bad = dir.filePath("not-a-db");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(4096, 'x'));
    f.close();
    const Run r = runHap({"profile", "--quick", "--ranks", "1", "--db", bad});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.startsWith("hap: error: ") && r.err.contains(bad), qPrintable(r.err));
    QVERIFY2(!r.out.contains("matmul"), qPrintable(r.out));  // nothing was measured
  }
};

QTEST_GUILESS_MAIN(TstProfileCli)
#include "tst_profile_cli.moc"
