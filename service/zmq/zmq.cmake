# service/zmq/zmq.cmake - the optional ZeroMQ endpoint (portable) and
# px_keygen, the CURVE key-pair tool. Tests: group "zmq" (tests/).
target_sources(px_service PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/zmq/zmq_endpoint.c
  ${CMAKE_CURRENT_SOURCE_DIR}/zmq/zmq_auth.c)

add_executable(px_keygen ${PROJECT_SOURCE_DIR}/tools/px-keygen.c)
px_executable(px_keygen)
