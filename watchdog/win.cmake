# watchdog/win.cmake - the Windows sandbox backend (px_backend_windows).
# Its tests: tests/win/win.cmake. See docs/windows-backend.md.
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/win/backend.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/winapi.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/job.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/token.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/acl.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/spawn.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/watchdog.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/cleanup.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/collect.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/treekill.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/disk.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/desktop.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/mitigations.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/pathcheck.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/identity.c
  ${CMAKE_CURRENT_SOURCE_DIR}/win/runtimes.c)
# psapi: K32GetProcessMemoryInfo lives in kernel32 on Windows 7+, but the
# import library keeps the name in psapi for older SDKs.
target_link_libraries(px_core PUBLIC psapi)
# user32: the job's window station and desktop (desktop.c).
target_link_libraries(px_core PUBLIC user32)
# netapi32 (NetUserAdd), secur32 (LsaLogonUser): the job account (identity.c).
target_link_libraries(px_core PUBLIC netapi32 secur32)
