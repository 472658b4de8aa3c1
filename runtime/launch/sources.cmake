# runtime/launch: starting and checking runs.
# hap_launch: hap-worker's options and their command line (worker_options.h, with the plain
# option structs of data/ and train/ it holds), `hap launch`'s process supervision, cluster launch
# scripts and the recording of a launch in the profile store (launcher.h, launch_scripts.h,
# launch_recording.h, local_launch.h). Plain C++ and POSIX, no LibTorch: the CLI and the desktop
# app link it without pulling in the executor. hap_runtime links it (free_port.cpp lives here,
# and hap-worker's command line).
add_library(hap_launch STATIC
  ${CMAKE_CURRENT_LIST_DIR}/launcher.cpp
  ${CMAKE_CURRENT_LIST_DIR}/launch_scripts.cpp
  ${CMAKE_CURRENT_LIST_DIR}/free_port.cpp
  ${CMAKE_CURRENT_LIST_DIR}/launch_recording.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gathered_recording.cpp
  ${CMAKE_CURRENT_LIST_DIR}/local_launch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/worker_options.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../train/optimizer_options.cpp
)
target_include_directories(hap_launch PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(hap_launch PUBLIC hap_db hap_engine PRIVATE CLI11::CLI11 fmt::fmt Threads::Threads)
# The preflight imports the model (LibTorch), so it is compiled into hap_runtime; its header is
# free of LibTorch, for the app.
list(APPEND HAP_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/preflight.cpp
)
