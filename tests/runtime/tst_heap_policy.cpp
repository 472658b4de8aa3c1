// retainFreedHeapMemory (runtime/core/heap_policy.h) with jemalloc (the test is built only then): once
// the heap has settled, training steps that allocate what the step before freed fault nothing
// in, resident memory stays near one step's peak, and jemalloc runs with heap_policy.cpp's
// configuration.
#include <QtTest>

#include <ATen/ATen.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "runtime/core/heap_policy.h"

#if !defined(HAP_HAVE_JEMALLOC)
#error "tst_heap_policy is built only with jemalloc (tests/runtime/train.cmake)"
#endif
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen);

namespace {

long minorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

double residentMiB() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

// One training step whose activations are 40 MiB each (above every threshold glibc would choose
// by itself): the input, four intermediate results and their gradients.
struct Steps {
  at::Tensor w = at::rand({4096}).requires_grad_(true);
  void step() {
    at::Tensor x = at::rand({2560, 4096});
    at::Tensor y = (x * w).exp() * 0.5;
    at::Tensor loss = (y * x).sum();
    loss.backward();
    w.mutable_grad().zero_();
  }
};

}  // namespace

class TestHeapPolicy : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { hap::runtime::retainFreedHeapMemory(); }

  // Without the policy every step faults every page of its activations again (about 92,000 a
  // step here).
  void settledStepsDoNotFaultAgain() {
    Steps s;
    for (int k = 0; k < 6; ++k) s.step();  // the heap settles
    const long faults = minorFaults();
    for (int k = 0; k < 4; ++k) s.step();
    const long perStep = (minorFaults() - faults) / 4;
    QVERIFY2(perStep < 500, qPrintable(QStringLiteral("%1 minor page faults per settled step").arg(perStep)));
  }

  // Kept memory is reused, not added to: twenty steps later the process is no larger than after
  // the first two (plus a little).
  void residentMemoryStaysNearAStepsPeak() {
    Steps s;
    for (int k = 0; k < 2; ++k) s.step();
    const double early = residentMiB();
    for (int k = 0; k < 20; ++k) s.step();
    const double late = residentMiB();
    QVERIFY2(late <= early * 1.25 + 16,
             qPrintable(QStringLiteral("resident %1 MiB after 22 steps, %2 MiB after 2").arg(late).arg(early)));
  }

  void allocatorIsConfigured() {
    QCOMPARE(QString(hap::runtime::heapAllocatorName()), QString("jemalloc"));
    // jemalloc serves this process (linked before the C library) and read heap_policy.cpp's
    // malloc_conf: dirty pages are never purged.
    ssize_t decay = 0;
    size_t size = sizeof(decay);
    QCOMPARE(mallctl("opt.dirty_decay_ms", &decay, &size, nullptr, 0), 0);
    QCOMPARE(decay, ssize_t{-1});
  }
};

QTEST_APPLESS_MAIN(TestHeapPolicy)
#include "tst_heap_policy.moc"
