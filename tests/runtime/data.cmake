hap_add_test(tst_data tst_data.cpp LIBS hap_runtime Qt6::Core TIMEOUT 120)
