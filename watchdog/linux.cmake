# watchdog/linux.cmake - the Linux backend (px_backend_linux). Its tests and
# the probe that runs inside the sandbox: tests/linux/linux.cmake.
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/backend.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/cgroup.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/landlock.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/collect.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/mounts.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/pool.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/reaper.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/disk.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/seccomp.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/spawn.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/steps.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/idmap.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/watchdog.c)
