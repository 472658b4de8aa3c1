# runtime/comm: how the ranks talk. The communicator (the TCPStore rendezvous, Gloo or NCCL process
# groups, flat and hierarchical all-reduces), the algorithms of the collectives on uneven pieces,
# the thread that runs hierarchical gradient all-reduces in order, every rank's sign of life
# (liveness), and the collectives as autograd functions with exact duals.
list(APPEND HAP_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/communicator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/uneven_pieces.cpp
  ${CMAKE_CURRENT_LIST_DIR}/job_chain.cpp
  ${CMAKE_CURRENT_LIST_DIR}/liveness.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collectives.cpp
  ${CMAKE_CURRENT_LIST_DIR}/point_to_point.cpp
)
