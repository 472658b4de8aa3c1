// The heap of a training process.
//
// A training step frees and allocates again the same large buffers (activations, gradients,
// communication buffers) every iteration. If the allocator gives freed memory back to the kernel,
// the next step faults the same pages in again. With glibc's default thresholds that was 1,700
// (rank at share 0.25) to 11,000 (rank 0) minor page faults per step in benchmark (b), 15-20% of a
// throttled rank's CPU time, and it made the 1-rank BERT step 1.7x slower.
//
// Contract: after retainFreedHeapMemory(), memory the process frees stays mapped, so that once
// the heap has settled (a few steps) a step that allocates what the step before freed faults
// nothing in; resident memory stays near the peak of a step. The price is that the process does
// not shrink after a peak, as PyTorch's CUDA caching allocator does not for device memory.
//
// How (chosen at build time, HAP_WITH_JEMALLOC):
// - jemalloc (libjemalloc-dev), linked into every program that links hap_runtime. This file sets
//   its configuration (`malloc_conf`): no decay of dirty or muzzy pages, so freed extents are
//   reused, never purged. MALLOC_CONF in the environment still overrides it.
// - otherwise glibc malloc with fixed mmap and trim thresholds of 1 GiB: blocks below 1 GiB come
//   from the heap, which is not trimmed. Weaker: glibc before 2.38 reuses freed memalign'ed blocks
//   (LibTorch's CPU tensors) poorly (its bug 14581), so a loop of a few huge tensors can grow the
//   heap several times over its working set; real steps with hundreds of allocations settle.
//
// Call it once, first thing in main(), before threads start.
#pragma once

namespace hap::runtime {

void retainFreedHeapMemory();

// "jemalloc" or "glibc malloc" (or "malloc" for another C library): which heap this build uses.
const char* heapAllocatorName();

}  // namespace hap::runtime
