#include "runtime/core/heap_policy.h"

#include <cstdlib>  // before the tests below: brings <features.h>, which defines __GLIBC__

#if !defined(HAP_HAVE_JEMALLOC) && defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(HAP_HAVE_JEMALLOC)
// jemalloc reads this at its initialisation (before main): never purge freed pages. This object
// is part of every program that calls retainFreedHeapMemory(), so the definition is in it.
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1";
}
#endif

namespace hap::runtime {

void retainFreedHeapMemory() {
#if !defined(HAP_HAVE_JEMALLOC) && defined(__GLIBC__)
  constexpr int kOneGiB = 1 << 30;
  // Setting either fixes both thresholds (glibc's dynamic adjustment stops), so set both.
  mallopt(M_MMAP_THRESHOLD, kOneGiB);
  mallopt(M_TRIM_THRESHOLD, kOneGiB);
#endif
}

const char* heapAllocatorName() {
#if defined(HAP_HAVE_JEMALLOC)
  return "jemalloc";
#elif defined(__GLIBC__)
  return "glibc malloc";
#else
  return "malloc";
#endif
}

}  // namespace hap::runtime
