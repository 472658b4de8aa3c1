# Rule families: shape, matmul, convolution, indexing (included from tests/engine/CMakeLists.txt).
hap_add_test(tst_rules_shape rules/tst_rules_shape.cpp LIBS hap_engine)
hap_add_test(tst_rules_matmul rules/tst_rules_matmul.cpp LIBS hap_engine)
hap_add_test(tst_rules_convolution rules/tst_rules_convolution.cpp LIBS hap_engine)
hap_add_test(tst_rules_indexing rules/tst_rules_indexing.cpp LIBS hap_engine)
