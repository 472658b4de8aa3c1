# runtime/core: what runs one rank's program. The worker environment and the runtime's errors,
# the counter-based generator and its dropout masks, the step kernel and the executor, gradient
# buckets, a module retargeted to a GPU, the heap policy, the injected faults of the check's
# mutation test, and the machine's microbenchmarks (profiler).
list(APPEND HAP_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/runtime_error.cpp
  ${CMAKE_CURRENT_LIST_DIR}/worker_env.cpp
  ${CMAKE_CURRENT_LIST_DIR}/heap_policy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fault_injection.cpp
  ${CMAKE_CURRENT_LIST_DIR}/counter_rng.cpp
  ${CMAKE_CURRENT_LIST_DIR}/counter_dropout.cpp
  ${CMAKE_CURRENT_LIST_DIR}/step_kernel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/executor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gradient_buckets.cpp
  ${CMAKE_CURRENT_LIST_DIR}/module_device.cpp
  ${CMAKE_CURRENT_LIST_DIR}/profiler.cpp
)
