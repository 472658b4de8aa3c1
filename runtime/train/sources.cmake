# runtime/train: the worker's training job. The trainer (open the plan, build, train, report),
# parameter pieces, optimizers and clipping, checkpoints and their listing, the exactness check,
# and the recording of steps in the profile store (optimizer_options.cpp is compiled into
# hap_launch: launch/sources.cmake).
list(APPEND HAP_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/trainer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/parameters.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint_format.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint_list.cpp
  ${CMAKE_CURRENT_LIST_DIR}/exactness_check.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_recorder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pipeline_trainer.cpp
)
