# service/cluster/cluster.cmake - the cluster worker (NATS JetStream,
# docs/cluster-protocol.md): a library of its own, so that libnats links
# into the Linux daemon alone (no other executable and no Windows build
# needs it). Its files are of the service layer (prefix px__svc_cl_,
# includes "cluster/..." from service/). Tests: group "cluster"
# (tests/linux/linux.cmake).
find_package(PkgConfig REQUIRED)
pkg_check_modules(PX_NATS REQUIRED IMPORTED_TARGET GLOBAL libnats)
add_library(px_svc_cluster STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/cluster/worker.c
  ${CMAKE_CURRENT_SOURCE_DIR}/cluster/gateway.c
  ${CMAKE_CURRENT_SOURCE_DIR}/cluster/nats_link.c
  ${CMAKE_CURRENT_SOURCE_DIR}/cluster/job_msg.c
  ${CMAKE_CURRENT_SOURCE_DIR}/cluster/nodes.c)
target_include_directories(px_svc_cluster PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(px_svc_cluster PUBLIC px_service PkgConfig::PX_NATS)
px_target_defaults(px_svc_cluster)
target_link_libraries(phoenix-executor PRIVATE px_svc_cluster)
