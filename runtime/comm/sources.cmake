# runtime/comm: the communicator (process groups, collectives on uneven pieces) and differentiable collectives
list(APPEND HAP_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/communicator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collectives.cpp
)
