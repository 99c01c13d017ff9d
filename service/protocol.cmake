# service/protocol.cmake - the wire protocol: PXF1 framing, CRC-32, UTF-8,
# request parsing and validation, JSON encoders, result helpers; its unit
# tests, the protocol case loader (tests/cases) and the fuzzers.
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/crc32.c
  ${CMAKE_CURRENT_SOURCE_DIR}/frame.c
  ${CMAKE_CURRENT_SOURCE_DIR}/utf8.c
  ${CMAKE_CURRENT_SOURCE_DIR}/json_scan.c
  ${CMAKE_CURRENT_SOURCE_DIR}/request.c
  ${CMAKE_CURRENT_SOURCE_DIR}/request_check.c
  ${CMAKE_CURRENT_SOURCE_DIR}/encode.c
  ${CMAKE_CURRENT_SOURCE_DIR}/result.c)

# The case files are data: the checker test loads every one of them.
file(GLOB PX_CASE_FILES CONFIGURE_DEPENDS
  RELATIVE ${PROJECT_SOURCE_DIR}/tests/cases
  ${PROJECT_SOURCE_DIR}/tests/cases/*.json)
list(SORT PX_CASE_FILES)
string(REPLACE ";" "," PX_CASE_LIST "${PX_CASE_FILES}")

set(PX_PROTOCOL_TESTS
  ${PROJECT_SOURCE_DIR}/tests/unit/test_crc_frame.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_utf8.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_request.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_request_files.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_encode.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_request_kb.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_attest.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_attest_service.c
  ${PROJECT_SOURCE_DIR}/tests/unit/test_cases.c
  ${PROJECT_SOURCE_DIR}/tests/cases/cases.c)
target_sources(px_tests PRIVATE ${PX_PROTOCOL_TESTS})
# (Source properties are per directory: set them where px_tests lives.)
set_source_files_properties(${PROJECT_SOURCE_DIR}/tests/unit/test_cases.c
  DIRECTORY ${PROJECT_SOURCE_DIR}/tests PROPERTIES COMPILE_DEFINITIONS
  "PX_CASES_DIR=\"${PROJECT_SOURCE_DIR}/tests/cases/\";PX_CASE_LIST=\"${PX_CASE_LIST}\"")
px_add_test_group(px_tests protocol LABELS unit)

px_add_fuzzer(fuzz_frame ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_frame.c)
px_add_fuzzer(fuzz_request ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_request.c)
