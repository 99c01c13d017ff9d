# service/zmq/zmq.cmake - the optional ZeroMQ endpoint (portable), its unit
# tests (group "zmq") and px_keygen, the CURVE key-pair tool.
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/zmq/zmq_endpoint.c
  ${CMAKE_CURRENT_SOURCE_DIR}/zmq/zmq_auth.c)

target_sources(px_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit/test_zmq.c)
# Until the service core (session.c) is part of px_core the tests drive the
# endpoint through a small session stub inside test_zmq.c; once it is, they
# run against the real px_service_t with the fake backend.
# Decided at the end of the top-level configure, when every component has
# added its sources.
function(px_zmq_pick_service)
  get_target_property(srcs px_core SOURCES)
  list(FILTER srcs INCLUDE REGEX "(^|/)session\\.c$")
  if(srcs)
    set_source_files_properties(${PROJECT_SOURCE_DIR}/tests/unit/test_zmq.c
      DIRECTORY ${PROJECT_SOURCE_DIR}/tests
      PROPERTIES COMPILE_DEFINITIONS PX_ZMQ_TEST_REAL_SERVICE=1)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL px_zmq_pick_service)
px_add_test_group(px_tests zmq LABELS unit)

add_executable(px_keygen ${PROJECT_SOURCE_DIR}/tools/px-keygen.c)
px_executable(px_keygen)
