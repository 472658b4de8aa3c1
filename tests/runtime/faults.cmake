# Faults during a run (issue 32 item 4): a rank killed (SIGKILL) or stopped (SIGSTOP), hap launch
# itself killed, and the profile store written by 8 processes while one is killed; real hap launch
# and hap-worker processes on loopback (free ports), each fault bounded well under a minute.
find_package(SQLiteCpp REQUIRED)  # the store's file read directly (PRAGMA integrity_check)
hap_add_test(tst_faults ${CMAKE_CURRENT_LIST_DIR}/tst_faults.cpp LIBS hap_db SQLiteCpp Qt6::Core FIXTURES zoo
             TIMEOUT 120)
target_compile_definitions(tst_faults PRIVATE HAP_CLI_PATH="$<TARGET_FILE:hap>" HAP_WORKER_PATH="$<TARGET_FILE:hap-worker>"
                                              STORE_WRITER_PATH="$<TARGET_FILE:store_writer>")
add_dependencies(tst_faults hap hap-worker store_writer)
# Its workers are timed against the collective timeout: alone, as tst_launch runs.
set_tests_properties(tst_faults PROPERTIES RUN_SERIAL TRUE)
