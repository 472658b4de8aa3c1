# Pipelined plans executed exactly (issue 34 item 2): real hap-worker processes on loopback (free
# ports, 60 s collective timeout) run `hap plan --pipeline N` plans of the zoo's tiny MLP and BERT
# with --check (float64 against the single-device program, every step).
hap_add_test(tst_pipeline ${CMAKE_CURRENT_LIST_DIR}/tst_pipeline.cpp LIBS Qt6::Core hap_runtime FIXTURES zoo fixtures
             TIMEOUT 900)
target_compile_definitions(tst_pipeline PRIVATE HAP_CLI_PATH="$<TARGET_FILE:hap>"
                                                 HAP_WORKER_PATH="$<TARGET_FILE:hap-worker>")
add_dependencies(tst_pipeline hap hap-worker)
