# tests/win/win.cmake - px_tests_win's suites: the Windows backend
# (winspawn, winjob, winwatchdog, winfault, windesk, winstorm, enforce) and
# the probe it launches inside the sandbox, the service (evt, pipe,
# recovery, svc, storm, svc_demo, setup, zmq_cross) with the pipe squatter
# and the svc group's Wine prefix fixture. Included from
# tests/CMakeLists.txt for the Windows configuration, after the components
# define their targets.

# ---- the Windows backend (watchdog/win/) ----
# Tests: px_tests_win (run under Wine by ctest) and the probe it launches
# inside the sandbox.
target_sources(px_tests_win PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/win/wintest.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_spawn.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_job.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_watchdog.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_disk.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_collect.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_fault.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_enforce.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_desktop.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_identity.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_storm_race.c)
target_link_libraries(px_tests_win PRIVATE ws2_32)
add_executable(px_probe ${PROJECT_SOURCE_DIR}/tests/win/probe.c
  ${PROJECT_SOURCE_DIR}/tests/win/probe_attack.c
  ${PROJECT_SOURCE_DIR}/tests/win/probe_netfs.c)
px_executable(px_probe WHITEBOX)
target_link_options(px_probe PRIVATE ${PX_LINK_UNICODE})
target_link_libraries(px_probe PRIVATE ws2_32 user32)
# probe_attack.c: SSPI (outbound authentication), the COM GUIDs (uuid);
# user32, ole32 and oleaut32 it loads itself on first use (a job without a
# usable desktop must still run every other mode).
target_link_libraries(px_probe PRIVATE secur32 uuid)
add_dependencies(px_tests_win px_probe)
set_target_properties(px_probe PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
px_add_test_group(px_tests_win winspawn LABELS win)
px_add_test_group(px_tests_win winjob LABELS win)
px_add_test_group(px_tests_win winwatchdog LABELS win)
px_add_test_group(px_tests_win winfault LABELS win)
px_add_test_group(px_tests_win windesk LABELS win)
# A process bomb killed while it spawns (tests/win/test_storm_race.c).
# Wine 8 can leave a half-started probe alive at the Linux level: the
# wrapper keeps it off ctest's output pipe and ends it afterwards.
add_test(NAME win.winstorm
  COMMAND bash ${PROJECT_SOURCE_DIR}/tests/win/without_strays.sh
    ${PROJECT_BINARY_DIR} ${CMAKE_CROSSCOMPILING_EMULATOR}
    $<TARGET_FILE:px_tests_win> --group winstorm)
set_tests_properties(win.winstorm PROPERTIES LABELS "win" TIMEOUT 600
  SKIP_RETURN_CODE 77)
# What only real Windows enforces: SKIPs under Wine with the reason.
px_add_test_group(px_tests_win enforce LABELS win win-enforce)

# ---- the service (service/win/) ----
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
     ${PROJECT_BINARY_DIR}/service/PhoenixExecutor.exe)
string(REPLACE "/" "\\\\" PX_SVC_EXE_REL "${PX_SVC_EXE_REL}")
set_property(SOURCE ${PROJECT_SOURCE_DIR}/tests/win/test_svc_evt.c
                    ${PROJECT_SOURCE_DIR}/tests/win/test_svc_service.c
                    ${PROJECT_SOURCE_DIR}/tests/win/test_svc_attest.c
                    ${PROJECT_SOURCE_DIR}/tests/win/test_svc_priv.c
                    ${PROJECT_SOURCE_DIR}/tests/win/test_svc_storm.c
  APPEND PROPERTY COMPILE_DEFINITIONS
  "PX_SVC_EXE_REL=\"${PX_SVC_EXE_REL}\""
  "PX_CASES_DIR=\"${PROJECT_SOURCE_DIR}/tests/cases/\"")
add_dependencies(px_tests_win PhoenixExecutor phoenixctl)

# The client's server verification: a process squatting a pipe name, and
# phoenixctl itself (tests/win/test_svc_pipe.c).
add_executable(px_pipe_squatter ${PROJECT_SOURCE_DIR}/tests/win/pipe_squatter.c)
px_executable(px_pipe_squatter WHITEBOX)
target_link_options(px_pipe_squatter PRIVATE ${PX_LINK_UNICODE})
set_target_properties(px_pipe_squatter PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
add_dependencies(px_tests_win px_pipe_squatter phoenixctl)
file(RELATIVE_PATH PX_CTL_EXE_REL ${PROJECT_BINARY_DIR}/tests
     ${PROJECT_BINARY_DIR}/tools/phoenixctl.exe)
string(REPLACE "/" "\\\\" PX_CTL_EXE_REL "${PX_CTL_EXE_REL}")
set_property(SOURCE ${PROJECT_SOURCE_DIR}/tests/win/test_svc_pipe.c
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
# (px_build_key: tests/CMakeLists.txt)
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
# Its spawn trees are killed while they spawn, which leaves Wine's
# half-made px_probe processes (issue 22): the same wrapper as winstorm.
add_test(NAME win.storm
  COMMAND bash ${PROJECT_SOURCE_DIR}/tests/win/without_strays.sh
    ${PROJECT_BINARY_DIR} ${CMAKE_CROSSCOMPILING_EMULATOR}
    $<TARGET_FILE:px_tests_win> --group storm)
set_tests_properties(win.storm PROPERTIES LABELS "win;integ;storm" TIMEOUT 900
  SKIP_RETURN_CODE 77 ENVIRONMENT "${PX_SVC_PREFIX}"
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

# Machine set-up the MSI cannot express (service/win/setup.c), the path
# checks, the KB privilege scope and the SCM registration.
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

# The container backend under Wine against the Linux build's private
# dockerd, reached over loopback TCP (tests/win/test_container.c). The
# fixture runs on the Linux host (bash), the test under Wine.
target_sources(px_tests_win PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/win/test_container.c)
# Where the cross build put the Linux gate, as Wine sees it (Z: is /);
# where there is none, the tests SKIP saying so.
set_property(SOURCE ${PROJECT_SOURCE_DIR}/tests/win/test_container.c
  APPEND PROPERTY COMPILE_DEFINITIONS
  "PX_CTR_GATE_PATH=\"Z:${PROJECT_BINARY_DIR}/service/px-ctr-gate\"")
if(TARGET px-ctr-gate)
  add_dependencies(px_tests_win px-ctr-gate)
endif()
px_add_dockerd_fixture(px_dockerd_win 600)
