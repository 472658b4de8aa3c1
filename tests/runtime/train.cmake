# Training state: optimizers on pieces, global-norm clipping, consolidated checkpoints, export.
hap_add_test(tst_training_state tst_training_state.cpp LIBS hap_runtime Qt6::Core FIXTURES zoo TIMEOUT 180)
# Python with torch reads a checkpoint back (torch.load); the test skips that check without it.
target_compile_definitions(tst_training_state PRIVATE HAP_PYTHON="${HAP_PYTHON}")
# Checkpoints that cannot be loaded wrong: checksums as documented, damaged bytes and headers,
# counts, truncation, a write that fails part-way (tst_checkpoints runs the worker processes).
hap_add_test(tst_checkpoint_integrity tst_checkpoint_integrity.cpp LIBS hap_runtime Qt6::Core TIMEOUT 300)
# Gradient buckets: the start order and sums of the all-reduces overlapped with backward.
hap_add_test(tst_gradient_buckets tst_gradient_buckets.cpp LIBS hap_runtime Qt6::Core TIMEOUT 60)
# The counter-based generator and its dropout masks: Philox's published vectors, pieces that put
# together are the whole mask, the single-device forms drawing the same.
hap_add_test(tst_counter_rng tst_counter_rng.cpp LIBS hap_runtime Qt6::Core TIMEOUT 60)
# The heap policy of hap-worker: freed activations are kept, not faulted in again every step. Its
# contract holds with jemalloc (scripts/setup.sh installs it); the glibc fallback is weaker
# (runtime/core/heap_policy.h), so without jemalloc there is nothing to test.
if(HAP_WITH_JEMALLOC AND HAP_JEMALLOC_LIBRARY)
  hap_add_test(tst_heap_policy tst_heap_policy.cpp LIBS hap_runtime Qt6::Core TIMEOUT 60)
endif()
