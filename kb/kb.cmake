# kb/kb.cmake - knowledge-base snapshots and verified rollback (portable,
# with a small filesystem layer per platform).
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/sha256.c
  ${CMAKE_CURRENT_SOURCE_DIR}/manifest.c
  ${CMAKE_CURRENT_SOURCE_DIR}/store.c
  ${CMAKE_CURRENT_SOURCE_DIR}/dirlist.c
  ${CMAKE_CURRENT_SOURCE_DIR}/snapshot.c
  ${CMAKE_CURRENT_SOURCE_DIR}/rollback.c
  ${CMAKE_CURRENT_SOURCE_DIR}/journal.c
  ${CMAKE_CURRENT_SOURCE_DIR}/gc.c
  ${CMAKE_CURRENT_SOURCE_DIR}/kb.c
  ${CMAKE_CURRENT_SOURCE_DIR}/hooks.c
  ${CMAKE_CURRENT_SOURCE_DIR}/${PX_PLATFORM}/fs.c)
if(PX_IS_WINDOWS)
  # Test-only helpers (plant links); Linux keeps its few in linux/fs.c.
  target_sources(px_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/win/fs_test.c)
  # The privilege scope of a snapshot or rollback (thread token only).
  target_sources(px_core PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/win/priv.c)
endif()

target_sources(px_tests PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/unit/test_sha256.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_kb_util.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_kb_snapshot.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_kb_rollback.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_kb_links.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_kb_admin.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_kb_hooks.c)
px_add_test_group(px_tests kb LABELS unit)

# px_kb_crash: a rollback that dies at step N (crash-recovery test). It
# sits beside px_tests so the test finds it with px_test_self_dir().
add_executable(px_kb_crash ${PROJECT_SOURCE_DIR}/tests/unit/test_kb_crash_main.c)
px_executable(px_kb_crash)
set_target_properties(px_kb_crash PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY $<TARGET_FILE_DIR:px_tests>)
add_dependencies(px_tests px_kb_crash)

# Benchmark (bench/kb_bench.c): printed numbers, never a test.
add_executable(px_bench_kb ${PROJECT_SOURCE_DIR}/bench/kb_bench.c)
px_executable(px_bench_kb)
set_target_properties(px_bench_kb PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
