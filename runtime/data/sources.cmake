# runtime/data: the batch sources (synthetic, token file, CIFAR-10 binary), each rank reading its
# pieces of every global batch (data_options.h, header only, says where the batches come from).
list(APPEND HAP_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/data.cpp
)
