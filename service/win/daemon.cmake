# service/win/daemon.cmake - the Windows service: named-pipe transport,
# Event Log sink, crash recovery and SCM registration (in px_core so the
# tests reach them), the message table (installer/messages.mc -> windmc ->
# windres) and PhoenixExecutor.exe; its tests in px_tests_win.
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/win/pipe_server.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/pipe_sec.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/eventlog.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/recovery.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/scm.c)
# NtCreateFile (recovery opens entries relative to their parent's handle).
target_link_libraries(px_core PUBLIC ntdll)
# The pipe's client group: NetLocalGroupAdd/Del (service/win/group.c).
target_sources(px_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/win/group.c)
target_link_libraries(px_core PUBLIC netapi32)

# ---- message table: messages.h (MSG_* IDs), messages.rc, MSG00409.bin ----
set(PX_MC_SOURCE ${PROJECT_SOURCE_DIR}/installer/messages.mc)
set(PX_MC_OUT ${CMAKE_CURRENT_BINARY_DIR}/messages.h
              ${CMAKE_CURRENT_BINARY_DIR}/messages.rc
              ${CMAKE_CURRENT_BINARY_DIR}/MSG00409.bin)
add_custom_command(OUTPUT ${PX_MC_OUT}
  COMMAND ${CMAKE_MC_COMPILER} -h ${CMAKE_CURRENT_BINARY_DIR}
          -r ${CMAKE_CURRENT_BINARY_DIR} ${PX_MC_SOURCE}
  DEPENDS ${PX_MC_SOURCE}
  COMMENT "windmc messages.mc"
  VERBATIM)
add_custom_target(px_messages DEPENDS ${PX_MC_OUT})
add_dependencies(px_core px_messages)
# eventlog.c checks px_events.h against the generated messages.h.
target_include_directories(px_core PRIVATE ${CMAKE_CURRENT_BINARY_DIR})

# The resource object (COFF) that carries the MESSAGETABLE.
add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/messages_res.o
  COMMAND ${CMAKE_RC_COMPILER} -O coff -I ${CMAKE_CURRENT_BINARY_DIR}
          -i ${CMAKE_CURRENT_BINARY_DIR}/messages.rc
          -o ${CMAKE_CURRENT_BINARY_DIR}/messages_res.o
  DEPENDS ${PX_MC_OUT}
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
  COMMENT "windres messages.rc"
  VERBATIM)

add_executable(PhoenixExecutor ${CMAKE_CURRENT_SOURCE_DIR}/win/main.c
  ${CMAKE_CURRENT_BINARY_DIR}/messages_res.o)
set_source_files_properties(${CMAKE_CURRENT_BINARY_DIR}/messages_res.o
  PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
px_executable(PhoenixExecutor)
target_link_options(PhoenixExecutor PRIVATE -municode)

# ---- tests (px_tests_win, under Wine) ----
target_sources(px_tests_win PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/win/test_svc_evt.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_svc_pipe.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_svc_recovery.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_svc_service.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_svc_attest.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_svc_storm.c
  ${PROJECT_SOURCE_DIR}/tests/cases/cases.c)
target_link_libraries(px_tests_win PRIVATE px_client)
# The tests find PhoenixExecutor.exe relative to their own executable.
file(RELATIVE_PATH PX_SVC_EXE_REL ${PROJECT_BINARY_DIR}/tests
     ${CMAKE_CURRENT_BINARY_DIR}/PhoenixExecutor.exe)
string(REPLACE "/" "\\\\" PX_SVC_EXE_REL "${PX_SVC_EXE_REL}")
set_property(SOURCE ${PROJECT_SOURCE_DIR}/tests/win/test_svc_evt.c
                    ${PROJECT_SOURCE_DIR}/tests/win/test_svc_service.c
                    ${PROJECT_SOURCE_DIR}/tests/win/test_svc_attest.c
                    ${PROJECT_SOURCE_DIR}/tests/win/test_svc_priv.c
                    ${PROJECT_SOURCE_DIR}/tests/win/test_svc_storm.c
  DIRECTORY ${PROJECT_SOURCE_DIR}/tests
  APPEND PROPERTY COMPILE_DEFINITIONS
  "PX_SVC_EXE_REL=\"${PX_SVC_EXE_REL}\""
  "PX_CASES_DIR=\"${PROJECT_SOURCE_DIR}/tests/cases/\"")
add_dependencies(px_tests_win PhoenixExecutor phoenixctl)

# The client's server verification: a process squatting a pipe name, and
# phoenixctl itself (tests/win/test_svc_pipe.c).
add_executable(px_pipe_squatter ${PROJECT_SOURCE_DIR}/tests/win/pipe_squatter.c)
px_executable(px_pipe_squatter)
target_link_options(px_pipe_squatter PRIVATE -municode)
set_target_properties(px_pipe_squatter PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
add_dependencies(px_tests_win px_pipe_squatter phoenixctl)
file(RELATIVE_PATH PX_CTL_EXE_REL ${PROJECT_BINARY_DIR}/tests
     ${PROJECT_BINARY_DIR}/tools/phoenixctl.exe)
string(REPLACE "/" "\\\\" PX_CTL_EXE_REL "${PX_CTL_EXE_REL}")
set_property(SOURCE ${PROJECT_SOURCE_DIR}/tests/win/test_svc_pipe.c
  DIRECTORY ${PROJECT_SOURCE_DIR}/tests
  APPEND PROPERTY COMPILE_DEFINITIONS "PX_CTL_EXE_REL=\"${PX_CTL_EXE_REL}\""
  "PX_SVC_EXE_REL=\"${PX_SVC_EXE_REL}\"")

px_add_test_group(px_tests_win evt LABELS win integ)
px_add_test_group(px_tests_win pipe LABELS win integ)
px_add_test_group(px_tests_win recovery LABELS win integ)
px_add_test_group(px_tests_win svc LABELS win integ TIMEOUT 1500)
# The svc group installs a service: it gets a Wine prefix of its own,
# booted (persistent wineserver, stdio detached) by a fixture so that no
# services.exe started on demand holds ctest's pipes, and stopped after.
# Keyed by the build directory, so two checkouts (or worktrees) testing at
# once never share a prefix and its installed service.
string(MD5 px_build_key "${PROJECT_BINARY_DIR}")
string(SUBSTRING "${px_build_key}" 0 8 px_build_key)
set(PX_SVC_PREFIX
  "PX_WINEPREFIX=$ENV{HOME}/.cache/phoenix-executor/wine-svc-tests-${px_build_key}")
add_test(NAME win.svc_prefix_start
  COMMAND bash ${PROJECT_SOURCE_DIR}/tools/wine-env.sh start)
add_test(NAME win.svc_prefix_stop
  COMMAND bash ${PROJECT_SOURCE_DIR}/tools/wine-env.sh stop)
set_tests_properties(win.svc_prefix_start PROPERTIES FIXTURES_SETUP px_svc_prefix
  ENVIRONMENT "${PX_SVC_PREFIX}" LABELS "win;integ" TIMEOUT 300)
set_tests_properties(win.svc_prefix_stop PROPERTIES FIXTURES_CLEANUP px_svc_prefix
  ENVIRONMENT "${PX_SVC_PREFIX}" LABELS "win;integ" TIMEOUT 120)
set_tests_properties(win.svc PROPERTIES ENVIRONMENT "${PX_SVC_PREFIX}"
  FIXTURES_REQUIRED px_svc_prefix RUN_SERIAL TRUE)
# The installed service under load (tests/win/test_svc_storm.c, issue 19):
# the 1,000-job storm in CI; the 10,000-job soak on demand
# (-DPX_WIN_SOAK=ON, or `px_tests_win --group soak-win`).
px_add_test_group(px_tests_win storm LABELS win integ storm TIMEOUT 900)
set_tests_properties(win.storm PROPERTIES ENVIRONMENT "${PX_SVC_PREFIX}"
  FIXTURES_REQUIRED px_svc_prefix RUN_SERIAL TRUE)
option(PX_WIN_SOAK "Register the Windows 10,000-job soak (win.soak-win) with ctest" OFF)
if(PX_WIN_SOAK)
  px_add_test_group(px_tests_win soak-win LABELS win integ soak-win TIMEOUT 3600)
  set_tests_properties(win.soak-win PROPERTIES ENVIRONMENT "${PX_SVC_PREFIX}"
    FIXTURES_REQUIRED px_svc_prefix RUN_SERIAL TRUE)
endif()

# The service end to end through phoenixctl (a shell script driving Wine).
add_test(NAME win.svc_demo
  COMMAND bash ${PROJECT_SOURCE_DIR}/tests/win/svc_demo.sh ${PROJECT_BINARY_DIR})
set_tests_properties(win.svc_demo PROPERTIES LABELS "win;integ" TIMEOUT 900
  RUN_SERIAL TRUE FIXTURES_REQUIRED px_svc_prefix ENVIRONMENT "${PX_SVC_PREFIX}")

# Machine set-up the MSI cannot express: directory ACLs, KB capability
# SIDs, and the fail-closed check at every start (service/win/setup.c).
target_sources(px_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/win/setup.c)
target_sources(px_tests_win PRIVATE ${PROJECT_SOURCE_DIR}/tests/win/test_setup.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_pathcheck.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_kbpriv.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_scm.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_svc_priv.c)
px_add_test_group(px_tests_win setup LABELS win unit)

# Across platforms: a native Linux phoenixctl (ZeroMQ, CURVE) runs a job on
# this service under Wine; a key off the allow-list gets nothing. Needs the
# Linux build (tools/test.sh builds it first); skips (77) without it.
set(PX_LINUX_BUILD_DIR "${PROJECT_SOURCE_DIR}/build/linux-native" CACHE PATH
    "Linux build whose phoenixctl and px_keygen win.zmq_cross uses")
add_test(NAME win.zmq_cross
  COMMAND bash ${PROJECT_SOURCE_DIR}/tests/win/zmq_cross.sh ${PROJECT_BINARY_DIR} ${PX_LINUX_BUILD_DIR})
set_tests_properties(win.zmq_cross PROPERTIES LABELS "win;integ" TIMEOUT 300
  SKIP_RETURN_CODE 77)
