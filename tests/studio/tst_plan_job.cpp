// PlanJob: plans off the GUI thread exactly as `hap plan` does (the same JSON), streams the search's
// events at a bounded rate, cancels at once, and reports bad options as failures.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>

#include "app/studio/core/documents/model_document.h"
#include "app/studio/core/jobs/plan_job.h"
#include "engine/cost/cluster.h"
#include "engine/plan/plan_json.h"
#include "tests/studio/plan_fixture.h"

using namespace hap;
using namespace hap::studio;
using hap::studio::testing::clusterFile;
using hap::studio::testing::zooFile;

namespace {

std::shared_ptr<const ModelDocument> model(const char* name) {
  ImportResult r = importDocument(zooFile(name), {});
  if (!r.document) qFatal("%s", r.error.message.c_str());
  return r.document;
}

// The plan's JSON without its two wall-clock timings (search.seconds, balance.lp_seconds).
std::string timeless(const PlanDocument& d) {
  nlohmann::ordered_json j = plan::toJson(*d.plan, *d.imported);
  j["search"]["seconds"] = 0;
  j["balance"]["lp_seconds"] = 0;
  return j.dump(2);
}

}  // namespace

class TstPlanJob : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void plansAsTheCliDoes() {
    auto doc = model("bert-tiny.pt");
    const cost::Cluster cluster = cost::loadCluster(clusterFile("a100-p100-4.yaml"));
    plan::PlanRequest request;
    request.pins = {"*.ffn.fc1=column"};
    PlanJob job;
    QSignalSpy finished(&job, &PlanJob::finished);
    QSignalSpy events(&job, &PlanJob::searchEvents);
    job.start(doc, cluster, request, QStringLiteral("test"));
    QVERIFY(job.busy());
    QVERIFY(finished.wait(60000));
    QVERIFY(!job.busy());
    auto planned = finished.first().first().value<std::shared_ptr<const PlanDocument>>();
    QVERIFY(planned);
    QCOMPARE(planned->label, std::string("test"));
    QVERIFY(planned->request && *planned->request == request);
    // What `hap plan` computes (its code path: plan::planModel on the same import).
    auto direct = testing::planZoo("bert-tiny.pt", "a100-p100-4.yaml", request);
    QCOMPARE(timeless(*planned), timeless(*direct));
    // Everything the search said arrived: the last delivery came before finished().
    QVERIFY(!events.isEmpty());
    int searchesStarted = 0, stepsFinished = 0;
    for (const QList<QVariant>& e : events)
      for (const PlanningEvent& pe : e.first().value<SearchSnapshot>().events) {
        searchesStarted += pe.kind == PlanningEvent::Kind::SearchStarted;
        stepsFinished += pe.kind == PlanningEvent::Kind::StepFinished;
      }
    QVERIFY(searchesStarted >= 2);  // the alternation searches at least twice (start, after the LP)
    QVERIFY(stepsFinished >= 3);    // search, lp, baselines
  }

  void deliveriesAreBounded() {
    auto doc = model("bert_moe-48.pt");
    const cost::Cluster cluster = cost::loadCluster(clusterFile("paper-testbed-64.yaml"));
    PlanJob job;
    job.setInterval(50);
    QSignalSpy finished(&job, &PlanJob::finished);
    QSignalSpy events(&job, &PlanJob::searchEvents);
    QElapsedTimer t;
    t.start();
    job.start(doc, cluster, {}, QStringLiteral("moe"));
    QVERIFY(finished.wait(120000));
    const qint64 elapsed = t.elapsed();
    // One delivery per interval at most, plus the last one before finished().
    QVERIFY2(events.count() <= elapsed / 50 + 2, qPrintable(QStringLiteral("%1 deliveries in %2 ms").arg(events.count()).arg(elapsed)));
    QVERIFY(events.count() >= 2);  // and it did report while planning
  }

  void cancelReturnsAtOnce() {
    auto doc = model("bert_moe-48.pt");
    const cost::Cluster cluster = cost::loadCluster(clusterFile("paper-testbed-64.yaml"));
    PlanJob job;
    QSignalSpy finished(&job, &PlanJob::finished);
    QSignalSpy cancelled(&job, &PlanJob::cancelled);
    QSignalSpy stopped(&job, &PlanJob::workerStopped);
    job.start(doc, cluster, {}, QStringLiteral("moe"));
    QTest::qWait(300);
    QVERIFY(job.busy());
    job.cancel();
    QCOMPARE(cancelled.count(), 1);  // before cancel() returned
    QVERIFY(!job.busy());
    QVERIFY(stopped.wait(30000));
    QVERIFY(stopped.first().first().toDouble() < 1.0);
    QTest::qWait(100);
    QVERIFY(finished.isEmpty());  // the cancelled run's result is dropped
    // A newer plan supersedes a running one.
    job.start(doc, cluster, {}, QStringLiteral("first"));
    job.start(model("bert-tiny.pt"), cost::loadCluster(clusterFile("local-cpu-4.yaml")), {}, QStringLiteral("second"));
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.first().first().value<std::shared_ptr<const PlanDocument>>()->label, std::string("second"));
  }

  void badOptionsFail() {
    PlanJob job;
    QSignalSpy failed(&job, &PlanJob::failed);
    plan::PlanRequest request;
    request.pins = {"no.such.scope=column"};
    job.start(model("bert-tiny.pt"), cost::loadCluster(clusterFile("local-cpu-4.yaml")), request, {});
    QVERIFY(failed.wait(60000));
    QVERIFY2(failed.first().first().toString().contains("no.such.scope"), qPrintable(failed.first().first().toString()));
    QVERIFY(!job.busy());
  }
};

QTEST_MAIN(TstPlanJob)
#include "tst_plan_job.moc"
