# watchdog/container.cmake - px_backend_container: jobs of image runtimes in
# containers made through the Docker Engine API (docs/container-backend.md).
# Built on Linux; the Windows connection (named pipe) is not written yet.
if(PX_IS_LINUX)
  target_sources(px_core PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR}/container/backend.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/docker.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/http.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/pool.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/reaper.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/run.c
    ${CMAKE_CURRENT_SOURCE_DIR}/container/spec.c
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
endif()
