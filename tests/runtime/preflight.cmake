# The launch panel's runtime pieces (issue 20): the preflight checks (runtime/launch/preflight.h) and a
# run's checkpoints (runtime/train/checkpoint_list.h; resume and export from a checkpoint), with the real
# hap-worker on 3 CPU ranks started by hap launch.
if(TARGET hap-worker)
  foreach(t tst_preflight tst_checkpoints)
    hap_add_test(${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.cpp LIBS hap_runtime Qt6::Core FIXTURES zoo TIMEOUT 300)
    target_compile_definitions(${t} PRIVATE HAP_CLI_PATH="$<TARGET_FILE:hap>" HAP_WORKER_PATH="$<TARGET_FILE:hap-worker>")
    add_dependencies(${t} hap hap-worker)
  endforeach()
endif()
