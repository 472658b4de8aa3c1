# Exactness of the runtime (../shared/DESIGN.md §3 "Exactness"): real hap-worker processes on
# loopback run plans of every zoo model's tiny preset beside the single-device program (hap-worker
# --check).
hap_add_test(tst_exactness ${CMAKE_CURRENT_LIST_DIR}/tst_exactness.cpp LIBS Qt6::Core hap_runtime FIXTURES zoo fixtures
             TIMEOUT 900)
target_compile_definitions(tst_exactness PRIVATE HAP_CLI_PATH="$<TARGET_FILE:hap>" HAP_PYTHON_PATH="${HAP_PYTHON}"
                                                  HAP_WORKER_PATH="$<TARGET_FILE:hap-worker>")
add_dependencies(tst_exactness hap hap-worker)
