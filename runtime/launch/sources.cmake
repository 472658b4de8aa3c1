# runtime/launch: starting and checking runs.
# hap_launch: `hap launch`'s process supervision, cluster launch scripts and the recording of a
# launch in the profile store (launcher.h, launch_scripts.h, launch_recording.h, local_launch.h).
# Plain C++ and POSIX, no LibTorch: the CLI and the desktop app link it without pulling in the
# executor. hap_runtime links it (free_port.cpp lives here).
add_library(hap_launch STATIC
  ${CMAKE_CURRENT_LIST_DIR}/launcher.cpp
  ${CMAKE_CURRENT_LIST_DIR}/launch_scripts.cpp
  ${CMAKE_CURRENT_LIST_DIR}/free_port.cpp
  ${CMAKE_CURRENT_LIST_DIR}/launch_recording.cpp
  ${CMAKE_CURRENT_LIST_DIR}/local_launch.cpp
)
target_include_directories(hap_launch PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(hap_launch PUBLIC hap_db hap_engine PRIVATE fmt::fmt Threads::Threads)
# The preflight imports the model (LibTorch), so it is compiled into hap_runtime; its header is
# free of LibTorch, for the app.
list(APPEND HAP_RUNTIME_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/preflight.cpp
)
