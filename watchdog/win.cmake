# watchdog/win.cmake - the Windows sandbox backend (px_backend_windows) and
# its tests. See docs/windows-backend.md.
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/win/backend.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/winapi.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/job.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/token.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/acl.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/spawn.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/watchdog.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/cleanup.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/disk.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/desktop.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/mitigations.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/pathcheck.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/identity.c)
# psapi: K32GetProcessMemoryInfo lives in kernel32 on Windows 7+, but the
# import library keeps the name in psapi for older SDKs.
target_link_libraries(px_core PUBLIC psapi)
# user32: the job's window station and desktop (desktop.c).
target_link_libraries(px_core PUBLIC user32)
# netapi32 (NetUserAdd), secur32 (LsaLogonUser): the job account (identity.c).
target_link_libraries(px_core PUBLIC netapi32 secur32)

# Tests: px_tests_win (run under Wine by ctest) and the probe it launches
# inside the sandbox.
target_sources(px_tests_win PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/win/wintest.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_spawn.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_job.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_watchdog.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_disk.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_fault.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_enforce.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_desktop.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_identity.c
  ${PROJECT_SOURCE_DIR}/tests/win/test_storm_race.c)
target_link_libraries(px_tests_win PRIVATE ws2_32)
add_executable(px_probe ${PROJECT_SOURCE_DIR}/tests/win/probe.c
  ${PROJECT_SOURCE_DIR}/tests/win/probe_attack.c
  ${PROJECT_SOURCE_DIR}/tests/win/probe_netfs.c)
px_executable(px_probe)
target_link_options(px_probe PRIVATE -municode)
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
