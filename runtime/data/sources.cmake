# runtime/data: batch sources (synthetic, token file, CIFAR)
list(APPEND HAP_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/data.cpp
)
