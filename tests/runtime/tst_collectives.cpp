// Collectives across real processes on loopback (Gloo): comm_probe runs every collective and its
// autograd dual as 1-4 ranks and checks them against locally computed results; a rank that never
// arrives, or one that stops answering, makes the others fail with a RuntimeError naming the
// step within HAP_TIMEOUT_S, never hang.
#include <QDeadlineTimer>
#include <QProcess>
#include <QtTest>

#include <ATen/ATen.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/launch/free_port.h"
#include "runtime/core/runtime_error.h"
#include "tests/runtime/torchrun_env.h"

namespace {

constexpr int kRunLimitMs = 30'000;  // one multi-process run, start to last exit

struct Rank {
  int rank = 0;
  std::unique_ptr<QProcess> process;
  QString output;
  int exitCode = -1;
  bool finished = false;
};

// Starts `modes.size()` ranks (modes[i] for rank i, then the arguments `extra`; an empty mode
// leaves that rank absent) of a world of `world` on 127.0.0.1:`port`.
std::vector<Rank> start(int world, const QStringList& modes, int port, int timeoutS, const QStringList& extra = {}) {
  std::vector<Rank> ranks;
  for (int r = 0; r < modes.size(); ++r) {
    if (modes[r].isEmpty()) continue;
    Rank k;
    k.rank = r;
    k.process = std::make_unique<QProcess>();
    k.process->setProcessEnvironment(torchrunEnvironment(r, world, port, timeoutS));
    k.process->setProcessChannelMode(QProcess::MergedChannels);
    k.process->start(HAP_COMM_PROBE, QStringList{modes[r]} + extra);
    ranks.push_back(std::move(k));
  }
  return ranks;
}

// Waits for every rank until the run's deadline; ranks still running then are killed (they
// count as not finished).
void finish(std::vector<Rank>& ranks, int limitMs = kRunLimitMs) {
  QDeadlineTimer deadline(limitMs);
  for (Rank& k : ranks) {
    k.finished = k.process->waitForFinished(static_cast<int>(std::max<qint64>(deadline.remainingTime(), 1)));
    if (!k.finished) {
      k.process->kill();
      k.process->waitForFinished(5000);
    }
    k.exitCode = k.process->exitStatus() == QProcess::NormalExit ? k.process->exitCode() : -1;
    k.output = QString::fromLocal8Bit(k.process->readAll());
  }
}

QString report(const std::vector<Rank>& ranks) {
  QString out;
  for (const Rank& k : ranks)
    out += QString("--- rank %1: %2, exit %3\n%4\n")
               .arg(k.rank)
               .arg(k.finished ? "finished" : "KILLED after the time limit")
               .arg(k.exitCode)
               .arg(k.output.trimmed());
  return out;
}

}  // namespace

class TstCollectives : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // Every collective, both methods, three dtypes, forward and backward, on 1-4 ranks.
  void everyCollective_data() {
    QTest::addColumn<int>("world");
    for (int n : {1, 2, 3, 4}) QTest::newRow(qPrintable(QString("world %1").arg(n))) << n;
  }
  void everyCollective() {
    QFETCH(int, world);
    QStringList modes;
    for (int r = 0; r < world; ++r) modes << "all";
    std::vector<Rank> ranks = start(world, modes, hap::runtime::freeTcpPort(), 20);
    finish(ranks);
    for (const Rank& k : ranks) {
      QVERIFY2(k.finished && k.exitCode == 0, qPrintable(report(ranks)));
      QVERIFY2(k.output.contains("all checks passed"), qPrintable(report(ranks)));
    }
  }

  // The same checks on a machine grid (M machines of world / M ranks behind a slow network), where
  // every sum all-reduce runs hierarchically: 2 × 2, and 2 × 3 (chunks that do not divide evenly).
  void everyCollectiveOnAMachineGrid_data() {
    QTest::addColumn<int>("world");
    QTest::addColumn<int>("machines");
    QTest::newRow("2 machines x 2") << 4 << 2;
    QTest::newRow("2 machines x 3") << 6 << 2;
  }
  void everyCollectiveOnAMachineGrid() {
    QFETCH(int, world);
    QFETCH(int, machines);
    QStringList modes;
    for (int r = 0; r < world; ++r) modes << "grid";
    std::vector<Rank> ranks = start(world, modes, hap::runtime::freeTcpPort(), 20, {QString::number(machines)});
    finish(ranks, 2 * kRunLimitMs);
    for (const Rank& k : ranks) {
      QVERIFY2(k.finished && k.exitCode == 0, qPrintable(report(ranks)));
      QVERIFY2(k.output.contains(QString("hierarchical checks passed (%1 machines x %2 ranks").arg(machines).arg(world / machines)),
               qPrintable(report(ranks)));
      QVERIFY2(k.output.contains("all checks passed"), qPrintable(report(ranks)));
    }
  }

  // Rank 2 of 3 never starts: ranks 0 and 1 fail the rendezvous with a RuntimeError that names
  // the rank and the rendezvous address, within the timeout.
  void absentRankFailsTheOthers() {
    const int port = hap::runtime::freeTcpPort();
    QElapsedTimer clock;
    clock.start();
    std::vector<Rank> ranks = start(3, {"all", "all"}, port, 2);
    finish(ranks);
    QVERIFY2(clock.elapsed() < 20'000, qPrintable(report(ranks)));
    for (const Rank& k : ranks) {
      QVERIFY2(k.finished && k.exitCode == 3, qPrintable(report(ranks)));
      QVERIFY2(k.output.contains(QString("rendezvous failed on rank %1 of 3").arg(k.rank)),
               qPrintable(report(ranks)));
      QVERIFY2(k.output.contains(QString("127.0.0.1:%1").arg(port)), qPrintable(report(ranks)));
      QVERIFY2(k.output.contains("MASTER_PORT"), qPrintable(report(ranks)));
    }
  }

  // Both ranks meet, then rank 1 stops answering: rank 0's all-reduce fails naming the collective.
  void silentPeerFailsTheCollective() {
    const int port = hap::runtime::freeTcpPort();
    QElapsedTimer clock;
    clock.start();
    // 5 s: long enough for both ranks to meet on a loaded machine, so the all-reduce is what fails.
    std::vector<Rank> ranks = start(2, {"allreduce", "stall"}, port, 5);
    std::vector<Rank> first;
    first.push_back(std::move(ranks[0]));
    finish(first);
    const qint64 elapsed = clock.elapsed();
    std::vector<Rank> stalled;
    stalled.push_back(std::move(ranks[1]));
    finish(stalled, 1);  // kills it
    QVERIFY2(first[0].finished && first[0].exitCode == 3, qPrintable(report(first)));
    QVERIFY2(first[0].output.contains("all-reduce of a Float tensor [4] failed on rank 0 of 2"),
             qPrintable(report(first)));
    QVERIFY2(elapsed < 20'000, qPrintable(report(first)));
  }

  // NCCL needs a CUDA LibTorch: without one, asking for it is a clear error, not a crash.
  void cudaWithoutCudaLibTorch() {
#ifdef HAP_HAVE_CUDA
    QSKIP("this LibTorch has CUDA");
#else
    hap::runtime::WorkerEnv env;
    env.worldSize = 2;
    try {
      hap::runtime::Communicator::connect(env, /*cuda=*/true);
      QFAIL("connect(cuda) succeeded without CUDA");
    } catch (const hap::runtime::RuntimeError& e) {
      QVERIFY2(QString(e.what()).contains("no CUDA"), e.what());
    }
#endif
  }

  // A world of one needs no peers: every collective is local.
  void worldOfOneInProcess() {
    hap::runtime::WorkerEnv env;
    auto comm = hap::runtime::Communicator::connect(env);
    QCOMPARE(comm->size(), 1);
    at::Tensor t = at::arange(6).reshape({2, 3});
    comm->allReduce(t);
    QVERIFY(at::equal(t, at::arange(6).reshape({2, 3})));
    at::Tensor g = comm->allGather(t, 1, {3}, hap::runtime::CommMethod::Grouped);
    QVERIFY(at::equal(g, t) && !g.is_same(t));
    QVERIFY(at::equal(hap::runtime::localPiece(t, 1, {3}, 0), t));
    QVERIFY_EXCEPTION_THROWN(comm->allGather(t, 1, {2}, hap::runtime::CommMethod::Padded), hap::runtime::RuntimeError);
    QVERIFY_EXCEPTION_THROWN(hap::runtime::localPiece(t, 3, {2}, 0), hap::runtime::RuntimeError);
  }
};

QTEST_GUILESS_MAIN(TstCollectives)
#include "tst_collectives.moc"
