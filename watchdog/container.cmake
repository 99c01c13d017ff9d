# watchdog/container.cmake - px_backend_container: jobs of image runtimes in
# containers made through the Docker Engine API (docs/container-backend.md).
# Built on Linux and on Windows (whose engine is remote: the named pipe of
# Docker Desktop, or loopback TCP in tests; files go by the archive API).
if(PX_IS_LINUX)
  target_sources(px_core PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR}/container/backend.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/deliver.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/docker.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/http.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/pool.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/reaper.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/run.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/spec.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/tar.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/linux/conn.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/linux/host.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/linux/jobdir.c)
  target_compile_definitions(px_core PUBLIC PX_HAVE_CONTAINERS=1
    PX_CTR_GATE_DEFAULT="/usr/local/lib/phoenix-executor/px-ctr-gate")

  # The gate runs inside images we know nothing about: static, no px_core.
  add_executable(px-ctr-gate ${CMAKE_CURRENT_SOURCE_DIR}/container/linux/gate.c)
  target_compile_options(px-ctr-gate PRIVATE ${PX_WARNINGS})
  target_link_options(px-ctr-gate PRIVATE -static)
  target_compile_definitions(px-ctr-gate PRIVATE _GNU_SOURCE)
  target_include_directories(px-ctr-gate PRIVATE ${PROJECT_SOURCE_DIR})
  set_target_properties(px-ctr-gate PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/service)
elseif(PX_IS_WINDOWS)
  target_sources(px_core PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR}/container/backend.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/deliver.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/docker.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/http.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/pool.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/reaper.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/run.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/spec.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/tar.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/win/conn.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/win/host.c)
  target_link_libraries(px_core PUBLIC ws2_32)
  # The gate runs inside the (Linux) container: the Windows package needs
  # the Linux binary. It is installed beside PhoenixExecutor.exe by
  # default; containers.gate names another place.
  target_compile_definitions(px_core PUBLIC PX_HAVE_CONTAINERS=1
    "PX_CTR_GATE_DEFAULT=\"C:/Program Files/PhoenixOrch/Executor/px-ctr-gate\"")
  # A cross build on Linux makes it with the build host's C compiler
  # (static, the same flags as the Linux build); a build on Windows has no
  # Linux compiler: take px-ctr-gate from a Linux build.
  if(CMAKE_HOST_SYSTEM_NAME STREQUAL "Linux")
    find_program(PX_HOST_CC NAMES gcc cc)
  endif()
  if(PX_HOST_CC)
    set(_px_gate ${PROJECT_BINARY_DIR}/service/px-ctr-gate)
    add_custom_command(OUTPUT ${_px_gate}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/service
      COMMAND ${PX_HOST_CC} -std=c11 -O2 -Wall -Wextra -D_GNU_SOURCE -static
        -o ${_px_gate} ${CMAKE_CURRENT_SOURCE_DIR}/container/linux/gate.c
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/container/linux/gate.c
      COMMENT "px-ctr-gate (Linux, host compiler) for the container backend"
      VERBATIM)
    add_custom_target(px-ctr-gate ALL DEPENDS ${_px_gate})
  endif()
endif()

# The ustar writer, in the portable unit tests (no engine needed).
target_sources(px_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit/test_ctr_tar.c)

# Tests through the real daemon against a private Docker Engine that a
# fixture starts (tests/linux/dockerd.sh: its own socket and data root, no
# network, a test image imported from the host's static busybox).
if(PX_IS_LINUX)
  target_sources(px_tests_linux PRIVATE
    ${PROJECT_SOURCE_DIR}/tests/linux/test_container.c)
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/tests/linux/test_container.c
    DIRECTORY ${PROJECT_SOURCE_DIR}/tests APPEND PROPERTY COMPILE_DEFINITIONS
    "PX_CTR_GATE_PATH=\"$<TARGET_FILE:px-ctr-gate>\"")
  add_dependencies(px_tests_linux px-ctr-gate)
  px_add_test_group(px_tests_linux container LABELS linux integ container
    TIMEOUT 900)
  add_test(NAME linux.container_engine_start
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/linux/dockerd.sh start)
  add_test(NAME linux.container_engine_stop
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/linux/dockerd.sh stop)
  set_tests_properties(linux.container_engine_start PROPERTIES
    FIXTURES_SETUP px_dockerd LABELS "linux;integ;container" TIMEOUT 120
    SKIP_RETURN_CODE 77)
  set_tests_properties(linux.container_engine_stop PROPERTIES
    FIXTURES_CLEANUP px_dockerd LABELS "linux;integ;container" TIMEOUT 60)
  set_tests_properties(linux.container PROPERTIES FIXTURES_REQUIRED px_dockerd
    RUN_SERIAL TRUE)
endif()

# The Windows build under Wine against the same private dockerd, reached
# over loopback TCP (tests/win/test_container.c). The fixture runs on the
# Linux host (bash), the test under Wine.
if(PX_IS_WINDOWS)
  target_sources(px_tests_win PRIVATE
    ${PROJECT_SOURCE_DIR}/tests/win/test_container.c)
  # Where the cross build put the Linux gate, as Wine sees it (Z: is /);
  # where there is none, the tests SKIP saying so.
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/tests/win/test_container.c
    DIRECTORY ${PROJECT_SOURCE_DIR}/tests APPEND PROPERTY COMPILE_DEFINITIONS
    "PX_CTR_GATE_PATH=\"Z:${PROJECT_BINARY_DIR}/service/px-ctr-gate\"")
  if(TARGET px-ctr-gate)
    add_dependencies(px_tests_win px-ctr-gate)
  endif()
  px_add_test_group(px_tests_win container LABELS win integ container
    TIMEOUT 600)
  add_test(NAME win.container_engine_start
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/linux/dockerd.sh start)
  add_test(NAME win.container_engine_stop
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/linux/dockerd.sh stop)
  set_tests_properties(win.container_engine_start PROPERTIES
    FIXTURES_SETUP px_dockerd_win LABELS "win;integ;container" TIMEOUT 120
    SKIP_RETURN_CODE 77)
  set_tests_properties(win.container_engine_stop PROPERTIES
    FIXTURES_CLEANUP px_dockerd_win LABELS "win;integ;container" TIMEOUT 60)
  set_tests_properties(win.container PROPERTIES
    FIXTURES_REQUIRED px_dockerd_win RUN_SERIAL TRUE)
endif()
