# config/config.cmake - configuration file -> immutable policy, client
# matching and admission, code audit. Tests: group "config"
# (tests/CMakeLists.txt).
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
