# Cluster inventory, units, device and collective cost model (engine/cost). Included from
# tests/engine/CMakeLists.txt; paths are relative to tests/engine.
hap_add_test(tst_cluster cost/tst_cluster.cpp LIBS hap_engine)
hap_add_test(tst_collective_cost cost/tst_collective_cost.cpp LIBS hap_engine)
hap_add_test(tst_cluster_yaml cost/tst_cluster_yaml.cpp LIBS hap_engine)
hap_add_test(tst_collective_fit cost/tst_collective_fit.cpp LIBS hap_engine)
hap_add_test(tst_profile cost/tst_profile.cpp LIBS hap_engine)
hap_add_test(tst_calibration cost/tst_calibration.cpp LIBS hap_engine)
