// OpenJob: models and plans open off the GUI thread, report progress, can be cancelled, and a newer
// request supersedes an older one; failures come back classified, never thrown.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QThreadPool>
#include <QtTest>

#include "app/studio/core/jobs/open_job.h"

using namespace hap;
using namespace hap::studio;

namespace {
QString zoo(const char* name) { return qEnvironmentVariable("HAP_ZOO_DIR") + "/" + name; }
QString fixture(const char* name) { return qEnvironmentVariable("HAP_FIXTURE_DIR") + "/" + name; }
}  // namespace

class TstOpenJob : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void opensWithProgress() {
    OpenJob job;
    QSignalSpy opened(&job, &OpenJob::modelOpened);
    QSignalSpy progress(&job, &OpenJob::progress);
    QSignalSpy busy(&job, &OpenJob::busyChanged);
    job.openModel(zoo("bert-tiny.pt"));
    QVERIFY(job.busy());
    QVERIFY(opened.wait(30000));
    QVERIFY(!job.busy());
    QCOMPARE(busy.count(), 2);  // true, then false
    auto doc = opened.first().first().value<std::shared_ptr<const ModelDocument>>();
    QVERIFY(doc && doc->graph && doc->scopes);
    QCOMPARE(doc->graph->nodes.size(), size_t{65});
    // Progress climbs to its total and ends there.
    QVERIFY(!progress.isEmpty());
    int last = -1;
    for (const QList<QVariant>& p : progress) {
      QVERIFY(p[0].toInt() >= last);
      QVERIFY(p[0].toInt() <= p[1].toInt());
      last = p[0].toInt();
    }
    QCOMPARE(progress.last()[0].toInt(), progress.last()[1].toInt());
  }

  void cancelStopsTheImport() {
    OpenJob job;
    QSignalSpy opened(&job, &OpenJob::modelOpened);
    QSignalSpy failed(&job, &OpenJob::failed);
    job.openModel(zoo("bert-tiny.pt"));
    job.cancel();  // before the archive has even loaded: the walk stops at its first node
    QVERIFY(failed.wait(30000));
    QCOMPARE(failed.first()[1].value<OpenError>().kind, OpenError::Kind::Cancelled);
    QVERIFY(opened.isEmpty());
    QVERIFY(!job.busy());
  }

  void newerRequestWins() {
    OpenJob job;
    QSignalSpy opened(&job, &OpenJob::modelOpened);
    QSignalSpy failed(&job, &OpenJob::failed);
    job.openModel(zoo("bert-tiny.pt"));
    job.openModel(zoo("mlp-tiny.pt"));
    QVERIFY(opened.wait(30000));
    QTRY_VERIFY(!job.busy());
    QCOMPARE(opened.count(), 1);
    QVERIFY(failed.isEmpty());  // the superseded import is dropped, not reported
    auto doc = opened.first().first().value<std::shared_ptr<const ModelDocument>>();
    QVERIFY(QString::fromStdString(doc->path).endsWith("mlp-tiny.pt"));
  }

  void failuresAreClassified() {
    OpenJob job;
    QSignalSpy failed(&job, &OpenJob::failed);
    job.openModel(fixture("no_spec.pt"));
    QVERIFY(failed.wait(30000));
    OpenError e = failed.takeFirst()[1].value<OpenError>();
    QCOMPARE(e.kind, OpenError::Kind::InputsMissing);
    QCOMPARE(e.arguments.size(), size_t{2});
    QCOMPARE(QString::fromStdString(e.arguments[0].name), QStringLiteral("x"));
    QCOMPARE(QString::fromStdString(e.arguments[1].name), QStringLiteral("y"));
    QVERIFY(!e.arguments[0].spec.has_value());

    job.openModel(fixture("not_archive.pt"));
    QVERIFY(failed.wait(30000));
    e = failed.takeFirst()[1].value<OpenError>();
    QCOMPARE(e.kind, OpenError::Kind::Failed);
    QVERIFY2(QString::fromStdString(e.message).contains("not a TorchScript archive"), e.message.c_str());

    job.openPlan(fixture("not_archive.pt"), zoo("mlp-tiny.pt"));
    QVERIFY(failed.wait(30000));
    e = failed.takeFirst()[1].value<OpenError>();
    QCOMPARE(e.kind, OpenError::Kind::Failed);
    QVERIFY2(QString::fromStdString(e.message).contains("not_archive.pt"), e.message.c_str());
  }

  // Destroying a job while it runs: the destructor cancels the import and waits for its thread
  // (the pool is idle once it returns), nothing is delivered afterwards, and nothing crashes.
  void destroyedWhileRunning() {
    auto job = std::make_unique<OpenJob>();
    QObject receiver;  // outlives the job: what it would still be told arrives here
    int delivered = 0;
    const auto count = [&delivered] { ++delivered; };
    connect(job.get(), &OpenJob::progress, &receiver, count);
    connect(job.get(), &OpenJob::modelOpened, &receiver, count);
    connect(job.get(), &OpenJob::failed, &receiver, count);
    connect(job.get(), &OpenJob::busyChanged, &receiver, count);
    job->openModel(zoo("bert-tiny.pt"));
    QVERIFY(job->busy());
    QVERIFY2(QThreadPool::globalInstance()->activeThreadCount() > 0, "the import is not running");
    QElapsedTimer timer;
    timer.start();
    job.reset();
    const qint64 ms = timer.elapsed();
    QCOMPARE(QThreadPool::globalInstance()->activeThreadCount(), 0);
    QVERIFY2(ms < 30000, qPrintable(QString("the destructor took %1 ms").arg(ms)));
    const int atDestruction = delivered;
    QCOMPARE(atDestruction, 1);  // busyChanged(true) only: neither a result nor busyChanged(false)
    // Queued progress and the result, had they survived the job, would arrive now.
    QTest::qWait(300);
    QCoreApplication::processEvents();
    QCOMPARE(delivered, atDestruction);
  }
};

QTEST_MAIN(TstOpenJob)
#include "tst_open_job.moc"
