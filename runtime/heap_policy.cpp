#include "runtime/heap_policy.h"

#include <cstdlib>  // before the test below: brings <features.h>, which defines __GLIBC__

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace hap::rt {

void retainFreedHeapMemory() {
#if defined(__GLIBC__)
  constexpr int kOneGiB = 1 << 30;
  // Setting either fixes both thresholds (glibc's dynamic adjustment stops), so set both.
  mallopt(M_MMAP_THRESHOLD, kOneGiB);
  mallopt(M_TRIM_THRESHOLD, kOneGiB);
#endif
}

}  // namespace hap::rt
