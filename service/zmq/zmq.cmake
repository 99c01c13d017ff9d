# service/zmq/zmq.cmake - the optional ZeroMQ endpoint (portable), its unit
# tests (group "zmq") and px_keygen, the CURVE key-pair tool.
target_sources(px_core PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/zmq/zmq_endpoint.c
  ${CMAKE_CURRENT_SOURCE_DIR}/zmq/zmq_auth.c)

target_sources(px_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit/test_zmq.c)
px_add_test_group(px_tests zmq LABELS unit)

add_executable(px_keygen ${PROJECT_SOURCE_DIR}/tools/px-keygen.c)
px_executable(px_keygen)
