# service/linux/daemon.cmake - the Linux daemon: Unix-socket transport and
# main (phoenix-executor).
target_sources(px_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/linux/server.c)

add_executable(phoenix-executor
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/main.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/notify.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/state_dirs.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/syslog_sink.c)
px_executable(phoenix-executor)

# Integration tests: the real daemon over its real socket.
target_sources(px_tests_linux PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/linux/test_daemon.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_daemon_kb.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_daemon_attest.c
  ${PROJECT_SOURCE_DIR}/tests/linux/daemon_helpers.c
  ${PROJECT_SOURCE_DIR}/tests/cases/cases.c)
target_link_libraries(px_tests_linux PRIVATE px_client)
set_source_files_properties(${PROJECT_SOURCE_DIR}/tests/linux/test_daemon.c
  DIRECTORY ${PROJECT_SOURCE_DIR}/tests PROPERTIES COMPILE_DEFINITIONS
  "PX_CASES_DIR=\"${PROJECT_SOURCE_DIR}/tests/cases/\"")
add_dependencies(px_tests_linux phoenix-executor)
px_add_test_group(px_tests_linux daemon LABELS integ TIMEOUT 900)
# Daemon tests count job cgroups and processes: keep other tests away.
set_tests_properties(linux.daemon PROPERTIES RUN_SERIAL TRUE)

# The install script (systemd unit, default config) into a scratch root.
add_test(NAME tools.install_linux
  COMMAND bash ${PROJECT_SOURCE_DIR}/tests/tools/install_linux_test.sh ${PROJECT_BINARY_DIR})
set_tests_properties(tools.install_linux PROPERTIES LABELS "tools;linux;integ" TIMEOUT 120)
