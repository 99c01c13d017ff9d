# watchdog/container.cmake - px_backend_container: jobs of image runtimes in
# containers made through the Docker Engine API (docs/container-backend.md).
# Built on Linux and on Windows (whose engine is remote: the named pipe of
# Docker Desktop, or loopback TCP in tests; files go by the archive API).
# The portable part, on both; then each platform's connection and host.
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/container/backend.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/collect.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/deliver.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/docker.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/gatecheck.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/http.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/pool.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/reaper.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/run.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/spec.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/tar.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/${PX_PLATFORM}/conn.c
  ${CMAKE_CURRENT_SOURCE_DIR}/container/${PX_PLATFORM}/host.c)
if(PX_IS_LINUX)
  target_sources(px_core PRIVATE
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
