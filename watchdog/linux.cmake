# watchdog/linux.cmake - the Linux backend (px_backend_linux), its tests and
# the probe that runs inside the sandbox.
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/backend.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/cgroup.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/landlock.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/mounts.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/pool.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/reaper.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/seccomp.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/spawn.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/steps.c
  ${CMAKE_CURRENT_SOURCE_DIR}/linux/watchdog.c)

target_sources(px_tests_linux PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/linux/job_helpers.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_job_sandbox.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_job_enforce.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_job_faults.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_job_pool.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_cgroup.c)

# The probe runs inside minimal roots: static, no px_core, beside the tests.
add_executable(px_probe ${PROJECT_SOURCE_DIR}/tests/linux/probe.c)
target_compile_options(px_probe PRIVATE ${PX_WARNINGS})
target_link_options(px_probe PRIVATE -static)
set_target_properties(px_probe PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY $<TARGET_FILE_DIR:px_tests_linux>)
target_compile_definitions(px_probe PRIVATE _GNU_SOURCE)
target_include_directories(px_probe PRIVATE ${PROJECT_SOURCE_DIR})
add_dependencies(px_tests_linux px_probe)

px_add_test_group(px_tests_linux sandbox LABELS linux sandbox)
px_add_test_group(px_tests_linux enforce LABELS linux sandbox)
px_add_test_group(px_tests_linux cgroup LABELS linux sandbox)
px_add_test_group(px_tests_linux faults LABELS linux sandbox)
px_add_test_group(px_tests_linux pool LABELS linux sandbox)
# Real programs inside a job and outside, compared (tests/compat): the fast
# set here; `tests/compat/compat.py --build <dir> --set full` on demand. The
# self-test runs one program without the list of intended differences and
# must fail.
add_test(NAME linux.compat COMMAND python3
  ${PROJECT_SOURCE_DIR}/tests/compat/compat.py --build ${CMAKE_BINARY_DIR})
add_test(NAME linux.compat_selftest COMMAND python3
  ${PROJECT_SOURCE_DIR}/tests/compat/compat.py --build ${CMAKE_BINARY_DIR}
  --only sandbox-view --ignore-intended)
set_tests_properties(linux.compat linux.compat_selftest PROPERTIES
  LABELS "linux;integ;compat" TIMEOUT 600 SKIP_RETURN_CODE 77)
set_tests_properties(linux.compat_selftest PROPERTIES
  PASS_REGULAR_EXPRESSION "DIFFERENT hostname: inside px.*1 with unlisted differences: sandbox-view")
# The same suites with warm slots (linux.pool): results must not change.
foreach(group sandbox enforce faults)
  add_test(NAME linux.${group}_pooled COMMAND px_tests_linux --group ${group})
  set_tests_properties(linux.${group}_pooled PROPERTIES
    LABELS "linux;sandbox" TIMEOUT 600 SKIP_RETURN_CODE 77
    ENVIRONMENT "PX_TEST_POOL=2")
endforeach()
