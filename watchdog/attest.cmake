# watchdog/attest.cmake - px-attest, the attestation probe the service runs
# inside its own sandbox at every start (watchdog/attest/probe.h). Built
# beside the service executable, where the service looks for it and the
# installers put it. No px_core: libc (Linux: static, it is copied into
# the job directory) or the system DLLs only.
if(PX_IS_WINDOWS)
  add_executable(px-attest
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/probe.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/win/main.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/win/token.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/win/fs.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/win/job.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/win/process.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/win/net.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/win/protected.c)
  target_link_options(px-attest PRIVATE ${PX_LINK_UNICODE} ${PX_LINK_STATIC})
  target_link_libraries(px-attest PRIVATE ws2_32 advapi32)
else()
  add_executable(px-attest
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/probe.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/linux/main.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/linux/ns.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/linux/status.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/linux/fs.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/linux/cgroup.c
    ${CMAKE_CURRENT_SOURCE_DIR}/attest/linux/net.c)
  target_link_options(px-attest PRIVATE -static)
endif()
if(PX_IS_WINDOWS)
  px_target_defaults(px-attest)
else()
  # Static and run inside the sandbox's minimal root: like px_probe and
  # px-ctr-gate it takes the warnings only, never the sanitizer or fuzzer
  # runtime of an instrumented build (a static link cannot carry them, and
  # the probe checks the sandbox, not itself).
  target_compile_options(px-attest PRIVATE ${PX_WARNINGS})
  if(PX_WERROR)
    target_compile_options(px-attest PRIVATE -Werror)
  endif()
  target_compile_definitions(px-attest PRIVATE _GNU_SOURCE)
endif()
target_include_directories(px-attest PRIVATE ${PROJECT_SOURCE_DIR})
set_target_properties(px-attest PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/service)
# The service looks for the probe beside itself: build them together.
if(TARGET phoenix-executor)
  add_dependencies(phoenix-executor px-attest)
endif()
if(TARGET PhoenixExecutor)
  add_dependencies(PhoenixExecutor px-attest)
endif()
