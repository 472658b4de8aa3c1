// The C heap policy of a training process.
//
// A training step frees and allocates again the same large buffers (activations, gradients,
// communication buffers) every iteration. With glibc's defaults, blocks above a dynamic threshold
// are mmapped and unmapped, and free memory at the top of the heap is trimmed, so the next step
// faults the same memory in again: on benchmark (b)'s slowest rank about 1,700 minor page faults
// per step, 15-20% of its CPU time, which a throttled rank pays at its share.
//
// retainFreedHeapMemory() makes the process keep what it frees (as PyTorch's CUDA caching
// allocator does for device memory): blocks below 1 GiB come from the heap, and the heap is not
// trimmed below 1 GiB of free memory at its top. The heap settles within a few steps; from then on a
// step faults nothing in. The price is a resident size that stays near the peak of a step (on
// benchmark (b)'s rank 0, 558 MB against 507 MB). Caveat: glibc before 2.38 does not reuse freed
// memalign'ed blocks well (its bug 14581); a loop of only a few huge tensors can make the heap
// grow, where a real step's hundreds of allocations settle. Call it once, first thing in main(),
// before threads start. A no-op where the C library is not glibc.
#pragma once

namespace hap::rt {

void retainFreedHeapMemory();

}  // namespace hap::rt
