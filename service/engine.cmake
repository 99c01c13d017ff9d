# service/engine.cmake - run queue, output guard, engine (and their tests).
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/queue.c
  ${CMAKE_CURRENT_SOURCE_DIR}/outguard.c
  ${CMAKE_CURRENT_SOURCE_DIR}/engine.c
  ${CMAKE_CURRENT_SOURCE_DIR}/engine_run.c
  ${CMAKE_CURRENT_SOURCE_DIR}/metrics.c)

target_sources(px_tests PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/unit/test_queue.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_outguard.c
  ${PROJECT_SOURCE_DIR}/tests/unit/engine_harness.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_engine.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_engine_life.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_metrics.c)
px_add_test_group(px_tests engine LABELS unit)
