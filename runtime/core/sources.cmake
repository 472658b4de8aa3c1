# runtime/core: the worker environment, the step kernel and executor, gradient buckets, the heap, the profiler's microbenchmarks
list(APPEND HAP_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/runtime_error.cpp
  ${CMAKE_CURRENT_LIST_DIR}/worker_env.cpp
  ${CMAKE_CURRENT_LIST_DIR}/heap_policy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fault_injection.cpp
  ${CMAKE_CURRENT_LIST_DIR}/step_kernel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/executor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gradient_buckets.cpp
  ${CMAKE_CURRENT_LIST_DIR}/module_device.cpp
  ${CMAKE_CURRENT_LIST_DIR}/profiler.cpp
)
