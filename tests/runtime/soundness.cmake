# Soundness of every sharding rule (../shared/DESIGN.md §3): every registered op and rule variant
# run by the runtime's step kernel on 1-4 ranks (threads with Gloo on loopback) against the
# single-device op.
set(HAP_SOUNDNESS ${CMAKE_CURRENT_LIST_DIR}/soundness)
hap_add_test(tst_rule_soundness
  ${HAP_SOUNDNESS}/tst_rule_soundness.cpp
  ${HAP_SOUNDNESS}/samples_elementwise.cpp
  ${HAP_SOUNDNESS}/samples_random.cpp
  ${HAP_SOUNDNESS}/samples_reduction.cpp
  ${HAP_SOUNDNESS}/samples_normalization.cpp
  ${HAP_SOUNDNESS}/samples_loss.cpp
  ${HAP_SOUNDNESS}/samples_shape.cpp
  ${HAP_SOUNDNESS}/samples_matmul.cpp
  ${HAP_SOUNDNESS}/samples_indexing.cpp
  ${HAP_SOUNDNESS}/samples_resampling.cpp
  ${HAP_SOUNDNESS}/samples_scatter.cpp
  LIBS hap_runtime Qt6::Core TIMEOUT 600)
