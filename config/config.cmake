# config/config.cmake - configuration file -> immutable policy, client
# matching and admission, code audit. Tests: group "config".
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/config.c
  ${CMAKE_CURRENT_SOURCE_DIR}/config_lists.c
  ${CMAKE_CURRENT_SOURCE_DIR}/config_read.c
  ${CMAKE_CURRENT_SOURCE_DIR}/defaults.c
  ${CMAKE_CURRENT_SOURCE_DIR}/policy.c
  ${CMAKE_CURRENT_SOURCE_DIR}/audit.c
  ${CMAKE_CURRENT_SOURCE_DIR}/audit_rules.c
  ${CMAKE_CURRENT_SOURCE_DIR}/${PX_PLATFORM}/platform.c
  ${CMAKE_CURRENT_SOURCE_DIR}/${PX_PLATFORM}/filecheck.c)

target_sources(px_tests PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/unit/test_config.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_config_file.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_policy.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_audit.c)
px_add_test_group(px_tests config LABELS unit)

px_add_fuzzer(fuzz_config ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_config.c)
