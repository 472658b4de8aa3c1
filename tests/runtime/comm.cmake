# Collectives across real ranks: tst_collectives starts comm_probe as 1-4 processes on loopback
# (Gloo, free ports), each run bounded by a 30 s limit.
add_executable(comm_probe ${CMAKE_CURRENT_LIST_DIR}/comm_probe.cpp)
target_link_libraries(comm_probe PRIVATE hap_runtime)

hap_add_test(tst_collectives ${CMAKE_CURRENT_LIST_DIR}/tst_collectives.cpp LIBS hap_runtime Qt6::Core TIMEOUT 240)
target_compile_definitions(tst_collectives PRIVATE HAP_COMM_PROBE="$<TARGET_FILE:comm_probe>")
add_dependencies(tst_collectives comm_probe)
