// retainFreedHeapMemory (runtime/heap_policy.h): after it, a large block comes from the heap, not
// from mmap; freeing it does not give it back to the kernel; and training steps that allocate the
// same tensors again do not fault their pages in again.
#include <QtTest>

#include <ATen/ATen.h>
#include <malloc.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

#include "runtime/heap_policy.h"

namespace {

long minorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

constexpr size_t kBlock = size_t{64} << 20;  // above glibc's largest dynamic mmap threshold (32 MiB)

}  // namespace

class TestHeapPolicy : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { hap::rt::retainFreedHeapMemory(); }

  void largeBlockComesFromTheHeapAndStays() {
    const struct mallinfo2 before = mallinfo2();
    void* p = std::malloc(kBlock);
    QVERIFY(p != nullptr);
    std::memset(p, 1, kBlock);
    const struct mallinfo2 held = mallinfo2();
    QCOMPARE(held.hblkhd, before.hblkhd);  // not mmapped
    QVERIFY(held.arena >= before.arena + kBlock);
    std::free(p);
    const struct mallinfo2 after = mallinfo2();
    QCOMPARE(after.arena, held.arena);  // not trimmed
  }

  // Training steps whose activations are large (40 MiB, above every threshold glibc would choose
  // by itself): once the heap has settled, a step faults next to nothing in. Without the policy
  // every step faults every page of them again (about 10,000 pages each).
  void settledStepsDoNotFaultAgain() {
    const int64_t rows = 2560, columns = 4096;  // 40 MiB of float
    at::Tensor w = at::rand({columns}).requires_grad_(true);
    auto step = [&] {
      at::Tensor x = at::rand({rows, columns});
      at::Tensor y = (x * w).exp() * 0.5;
      at::Tensor loss = (y * x).sum();
      loss.backward();
      w.mutable_grad().zero_();
    };
    for (int k = 0; k < 6; ++k) step();  // the heap settles
    const long faults = minorFaults();
    for (int k = 0; k < 4; ++k) step();
    const long perStep = (minorFaults() - faults) / 4;
    QVERIFY2(perStep < 500, qPrintable(QStringLiteral("%1 minor page faults per settled step").arg(perStep)));
  }
};

QTEST_APPLESS_MAIN(TestHeapPolicy)
#include "tst_heap_policy.moc"
