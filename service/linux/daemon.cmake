# service/linux/daemon.cmake - the Linux daemon: Unix-socket transport and
# main (phoenix-executor).
target_sources(px_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/linux/server.c)
