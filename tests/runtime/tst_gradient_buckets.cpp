// GradientBuckets (runtime/core/gradient_buckets.h) against a recording communicator: buckets follow
// reverse parameter order at the requested size, start strictly in order whatever order
// gradients arrive in, a parameter without a gradient contributes zeros, and every gradient ends
// as the all-reduced sum.
#include <QtTest>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <stdexcept>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/core/executor.h"
#include "runtime/core/gradient_buckets.h"
#include "runtime/launch/worker_options.h"

using namespace hap::runtime;

namespace {

// A world of `ranks` identical ranks seen from one: an all-reduce multiplies by `ranks`, applied
// at wait(). Records the order in which all-reduces start and their sizes.
class RecordingComm : public Communicator {
 public:
  explicit RecordingComm(int ranks) : ranks_(ranks) {}
  int rank() const override { return 0; }
  c10::Device device() const override { return c10::kCPU; }
  int size() const override { return ranks_; }
  void allReduce(at::Tensor&) override { throw std::logic_error("not used"); }
  void allReduceMax(at::Tensor&) override { throw std::logic_error("not used"); }
  at::Tensor allGather(const at::Tensor&, int, const std::vector<int64_t>&, CommMethod) override {
    throw std::logic_error("not used");
  }
  at::Tensor reduceScatter(const at::Tensor&, int, const std::vector<int64_t>&, CommMethod) override {
    throw std::logic_error("not used");
  }
  at::Tensor allToAll(const at::Tensor&, int, const std::vector<int64_t>&, int, const std::vector<int64_t>&) override {
    throw std::logic_error("not used");
  }
  void broadcast(at::Tensor&, int) override { throw std::logic_error("not used"); }
  void barrier() override {}

  class Scale : public Pending {
   public:
    Scale(at::Tensor t, int by) : t_(std::move(t)), by_(by) {}
    void wait() override {
      if (by_) t_.mul_(by_);
      by_ = 0;
    }

   private:
    at::Tensor t_;
    int by_;
  };
  std::unique_ptr<Pending> allReduceAsync(at::Tensor& t) override {
    started.push_back(t.numel());
    return std::make_unique<Scale>(t, ranks_);
  }
  AllReduceCounts allReduceCounts() const override {
    return {static_cast<int64_t>(started.size()), 0, 0, 0};
  }
  std::vector<int64_t> started;  // element counts, in start order

 private:
  int ranks_;
};

std::vector<LocalParameter> parameters(const std::vector<int64_t>& sizes) {
  std::vector<LocalParameter> ps;
  for (size_t i = 0; i < sizes.size(); ++i) {
    LocalParameter p;
    p.name = "p" + std::to_string(i);
    p.fullShape = {sizes[i]};
    p.value = at::ones({sizes[i]}).set_requires_grad(true);
    ps.push_back(std::move(p));
  }
  return ps;
}

}  // namespace

class TstGradientBuckets : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // hap-worker's --bucket-mb default (WorkerOptions, plain C++ and so unable to name the executor's
  // options) is the executor's own.
  void workerDefaultIsTheExecutors() {
    QCOMPARE(hap::runtime::WorkerOptions{}.bucketBytes, hap::runtime::ExecutorOptions{}.bucketBytes);
  }

  // Three 1 KiB parameters in 1 KiB buckets: one bucket each, last parameter first. Gradients
  // arriving first-to-last start nothing until the last parameter's, then all three in order.
  void startsInOrderWhateverTheArrival() {
    RecordingComm comm(3);
    std::vector<LocalParameter> ps = parameters({256, 256, 256});
    GradientBuckets buckets(ps, {0, 1, 2}, comm, 1024);
    QCOMPARE(buckets.bucketCount(), size_t{3});
    buckets.begin();
    (ps[0].value * 1).sum().backward();
    (ps[1].value * 2).sum().backward();
    QVERIFY2(comm.started.empty(), "a bucket started before the buckets ahead of it were complete");
    (ps[2].value * 3).sum().backward();
    QCOMPARE(comm.started, (std::vector<int64_t>{256, 256, 256}));
    buckets.finish();
    for (int i = 0; i < 3; ++i)
      QVERIFY(at::equal(ps[static_cast<size_t>(i)].value.grad(), at::full({256}, 3.0 * (i + 1))));
  }

  // The reverse order fills bucket by bucket: each starts as soon as its gradient is in.
  void startsEarlyInBackwardOrder() {
    RecordingComm comm(2);
    std::vector<LocalParameter> ps = parameters({256, 256, 256});
    GradientBuckets buckets(ps, {0, 1, 2}, comm, 1024);
    buckets.begin();
    (ps[2].value * 1).sum().backward();
    QCOMPARE(comm.started.size(), size_t{1});
    (ps[1].value * 1).sum().backward();
    QCOMPARE(comm.started.size(), size_t{2});
    (ps[0].value * 1).sum().backward();
    QCOMPARE(comm.started.size(), size_t{3});
    buckets.finish();
  }

  // A parameter that gets no gradient on this rank contributes zeros; its bucket starts in
  // finish(), and its gradient is the sum of the others' (here zero).
  void missingGradientIsZero() {
    RecordingComm comm(2);
    std::vector<LocalParameter> ps = parameters({100, 100});
    GradientBuckets buckets(ps, {0, 1}, comm, 1 << 20);  // one bucket (the first is <= 1 MiB)
    QCOMPARE(buckets.bucketCount(), size_t{1});
    buckets.begin();
    (ps[1].value * 5).sum().backward();
    QVERIFY(comm.started.empty());
    buckets.finish();
    QCOMPARE(comm.started, (std::vector<int64_t>{200}));
    QVERIFY(at::equal(ps[1].value.grad(), at::full({100}, 10.0)));
    QVERIFY(at::equal(ps[0].value.grad(), at::zeros({100})));
  }

  // Sizes: the first bucket holds at most 1 MiB, later ones the requested size; <= 0 is one
  // bucket; a parameter larger than a bucket gets one of its own. Hooks leave gradients alone
  // outside begin()..finish(), and a parameter's gradient used twice arrives once, summed.
  void bucketSizesAndHooks() {
    RecordingComm comm(2);
    std::vector<LocalParameter> ps = parameters({1 << 18, 1 << 18, 1 << 18, 1 << 19});  // 1, 1, 1, 2 MiB
    {
      GradientBuckets buckets(ps, {0, 1, 2, 3}, comm, 2 << 20);
      QCOMPARE(buckets.bucketCount(), size_t{3});  // [p3] (2 MiB alone), [p2, p1], [p0]
    }
    {
      GradientBuckets one(ps, {0, 1, 2, 3}, comm, 0);
      QCOMPARE(one.bucketCount(), size_t{1});
      (ps[0].value * 2).sum().backward();  // not armed: the plain local gradient
      QVERIFY(at::equal(ps[0].value.grad(), at::full({1 << 18}, 2.0)));
      ps[0].value.mutable_grad() = at::Tensor();
      one.begin();
      const at::Tensor x = ps[0].value;
      (x * 2 + x * 3).sum().backward();  // two uses, one arrival
      for (size_t i = 1; i < ps.size(); ++i) (ps[i].value * 1).sum().backward();
      one.finish();
      QVERIFY(at::equal(ps[0].value.grad(), at::full({1 << 18}, 10.0)));
    }
  }
};

QTEST_GUILESS_MAIN(TstGradientBuckets)
#include "tst_gradient_buckets.moc"
