# service/linux/daemon.cmake - the Linux daemon: Unix-socket transport and
# main (phoenix-executor).
target_sources(px_service PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/linux/server.c)

add_executable(phoenix-executor
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/main.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/notify.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/state_dirs.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/syslog_sink.c)
px_executable(phoenix-executor)
