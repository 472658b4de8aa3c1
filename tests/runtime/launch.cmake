# hap launch: the CLI run as a process with a fake worker (tests/runtime/fake_worker.sh), plus the
# launcher's duty cycle and the scripts' quoting tested directly; one test also launches the real
# hap-worker.
hap_add_test(tst_launch ${CMAKE_CURRENT_LIST_DIR}/tst_launch.cpp LIBS hap_launch Qt6::Core FIXTURES zoo TIMEOUT 400)
target_compile_definitions(tst_launch PRIVATE HAP_CLI_PATH="$<TARGET_FILE:hap>")
add_dependencies(tst_launch hap)
if(TARGET hap-worker)
  target_compile_definitions(tst_launch PRIVATE HAP_WORKER_PATH="$<TARGET_FILE:hap-worker>")
  add_dependencies(tst_launch hap-worker)
endif()
# cpuShareSlowsARank compares how far a CPU share slows a busy rank against an unthrottled one:
# beside other tests' workers on a small machine both are starved alike, so it runs alone.
set_tests_properties(tst_launch PROPERTIES RUN_SERIAL TRUE)
# hap-worker's options defined once (runtime/launch/worker_options.h): argument lists and back.
hap_add_test(tst_launch_worker_options ${CMAKE_CURRENT_LIST_DIR}/tst_launch_worker_options.cpp
             LIBS hap_launch CLI11::CLI11 fmt::fmt Qt6::Core TIMEOUT 60)
# Runs recorded in the profile store: hap launch --db with the real hap-worker on 3 ranks.
if(TARGET hap-worker)
  hap_add_test(tst_run_recording ${CMAKE_CURRENT_LIST_DIR}/tst_run_recording.cpp LIBS hap_db Qt6::Core FIXTURES zoo
               TIMEOUT 400)
  target_compile_definitions(tst_run_recording PRIVATE HAP_CLI_PATH="$<TARGET_FILE:hap>"
                                                       HAP_WORKER_PATH="$<TARGET_FILE:hap-worker>")
  add_dependencies(tst_run_recording hap hap-worker)
endif()
# Run recording's pure time splitting (runtime/train/run_recorder.h) on a hand-made plan: no processes.
hap_add_test(tst_run_recorder ${CMAKE_CURRENT_LIST_DIR}/tst_run_recorder.cpp LIBS hap_runtime Qt6::Core TIMEOUT 60)
