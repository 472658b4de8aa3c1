// The Baselines table's DP-EV and DP-CP rows are the plans that Open Baseline (and `hap plan
// --baseline NAME`) makes: the same predicted time and the same memory per device (issue 31: DP-EV
// showed 7.48 MiB in the table and 7.19 MiB opened, the row priced on HAP's segmented graph with
// its reshards, the opened plan in one segment). FSDP's row adds what its plan does not price
// (re-gathering in backward) and is not compared.
#include <QtTest>

#include <cmath>

#include "app/studio/core/models/memory_model.h"
#include "tests/studio/plan_fixture.h"

using namespace hap;
using namespace hap::studio;
using namespace hap::studio::testing;

class TstBaselineRows : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void rowIsTheOpenedPlan_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("cluster");
    for (const char* m : {"bert-tiny.pt", "vit-tiny.pt"})
      for (const char* c : {"a100-p100-4.yaml", "local-cpu-hetero-3.yaml"})
        QTest::newRow(qPrintable(QStringLiteral("%1 on %2").arg(m, c))) << m << c;
  }
  void rowIsTheOpenedPlan() {
    QFETCH(QString, model);
    QFETCH(QString, cluster);
    const QByteArray m = model.toUtf8(), c = cluster.toUtf8();
    const std::shared_ptr<const PlanDocument> hap = planZoo(m.constData(), c.constData());
    QVERIFY2(hap->p().segments.size() > 1, "HAP's plan is segmented (else the rows agree trivially)");
    for (const std::string name : {"dp-ev", "dp-cp"}) {
      const plan::Plan::Baseline* row = nullptr;
      for (const plan::Plan::Baseline& b : hap->p().baselines)
        if (b.name == name) row = &b;
      QVERIFY(row && row->applicable);
      // As the Baselines view's Open Baseline asks for it (main_window_plan.cpp).
      plan::PlanRequest request;
      request.baseline = name;
      request.ratios = "lp";
      const std::shared_ptr<const PlanDocument> opened = planZoo(m.constData(), c.constData(), request);
      const plan::Estimate& a = row->estimate;
      const plan::Estimate& b = opened->p().estimate;
      QVERIFY2(std::abs(a.iterationSeconds - b.iterationSeconds) <= 1e-9 * b.iterationSeconds,
               qPrintable(QStringLiteral("%1: %2 s in the table, %3 s opened")
                              .arg(QString::fromStdString(name))
                              .arg(a.iterationSeconds)
                              .arg(b.iterationSeconds)));
      QCOMPARE(a.memoryBytes.size(), b.memoryBytes.size());
      for (size_t r = 0; r < a.memoryBytes.size(); ++r) QCOMPARE(a.memoryBytes[r], b.memoryBytes[r]);
      QCOMPARE(MemoryModel::formatBytes(a.maxMemoryBytes()), MemoryModel::formatBytes(b.maxMemoryBytes()));
      QCOMPARE(a.fits, b.fits);
    }
  }
};

QTEST_GUILESS_MAIN(TstBaselineRows)
#include "tst_baseline_rows.moc"
