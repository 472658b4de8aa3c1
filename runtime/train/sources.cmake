# runtime/train: the worker's training job: trainer, parameter pieces, optimizers and clipping, checkpoints, the exactness check, step recording
list(APPEND HAP_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/trainer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/parameters.cpp
  ${CMAKE_CURRENT_LIST_DIR}/optimizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint_list.cpp
  ${CMAKE_CURRENT_LIST_DIR}/exactness_check.cpp
  ${CMAKE_CURRENT_LIST_DIR}/run_recorder.cpp
)
