# tests/linux/linux.cmake - px_tests_linux's suites: the Linux backend
# (sandbox, enforce, cgroup, faults, pool, their pooled reruns and the
# compat comparison), the probe that runs inside the sandbox, the daemon
# over its real socket, the install script, the namespace NATS cluster
# and the container backend against a private Docker Engine. Included from
# tests/CMakeLists.txt for the Linux configuration, after the components
# define their targets.

# ---- the Linux backend (watchdog/linux/) ----
target_sources(px_tests_linux PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/linux/job_helpers.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_job_sandbox.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_job_enforce.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_job_hostile.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_job_faults.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_job_pool.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_job_disk.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_cgroup.c)

# The probe runs inside minimal roots: static, no layer library, beside the tests.
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
px_add_test_group(px_tests_linux disk LABELS linux sandbox)
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

# ---- the daemon (service/linux/) ----
# Integration tests: the real daemon over its real socket.
target_sources(px_tests_linux PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/linux/test_daemon.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_daemon_kb.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_daemon_collect.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_daemon_attest.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_daemon_spawn.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_daemon_clients.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_daemon_disk.c
  ${PROJECT_SOURCE_DIR}/tests/linux/daemon_helpers.c
  ${PROJECT_SOURCE_DIR}/tests/cases/cases.c)
target_link_libraries(px_tests_linux PRIVATE px_client)
set_source_files_properties(${PROJECT_SOURCE_DIR}/tests/linux/test_daemon.c
  PROPERTIES COMPILE_DEFINITIONS
  "PX_CASES_DIR=\"${PROJECT_SOURCE_DIR}/tests/cases/\"")
add_dependencies(px_tests_linux phoenix-executor)
px_add_test_group(px_tests_linux daemon LABELS integ TIMEOUT 900)
# Daemon tests count job cgroups and processes: keep other tests away.
set_tests_properties(linux.daemon PROPERTIES RUN_SERIAL TRUE)

# The install script (systemd unit, default config) into a scratch root.
add_test(NAME tools.install_linux
  COMMAND bash ${PROJECT_SOURCE_DIR}/tests/tools/install_linux_test.sh ${PROJECT_BINARY_DIR})
set_tests_properties(tools.install_linux PROPERTIES LABELS "tools;linux;integ" TIMEOUT 120)

# ---- the cluster (issue 27, docs/cluster.md) ----
# The three-node NATS JetStream cluster in network namespaces that the
# cluster tests stand on (tests/linux/nats_cluster.sh): it forms, an R3
# stream survives a node's kill -9 and a cut link, and nothing is left.
add_test(NAME linux.nats_cluster
  COMMAND bash ${PROJECT_SOURCE_DIR}/tests/linux/nats_cluster_test.sh)
set_tests_properties(linux.nats_cluster PROPERTIES
  LABELS "linux;integ;cluster" TIMEOUT 180 SKIP_RETURN_CODE 77)

# ---- the container backend (watchdog/container/) ----
# Tests through the real daemon against a private Docker Engine that a
# fixture starts (tests/linux/dockerd.sh: its own socket and data root,
# keyed by this build directory (tests/CMakeLists.txt), no network, a test
# image imported from the host's static busybox).
target_sources(px_tests_linux PRIVATE
  ${PROJECT_SOURCE_DIR}/tests/linux/test_container.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_container_host.c)
set_property(SOURCE ${PROJECT_SOURCE_DIR}/tests/linux/test_container.c
  ${PROJECT_SOURCE_DIR}/tests/linux/test_container_host.c
  APPEND PROPERTY COMPILE_DEFINITIONS
  "PX_CTR_GATE_PATH=\"$<TARGET_FILE:px-ctr-gate>\""
  "PX_TEST_DOCKER_SOCK=\"${PX_TEST_DOCKER_SOCK}\""
  "PX_TEST_DOCKER_PORT=\"${PX_TEST_DOCKER_PORT}\"")
add_dependencies(px_tests_linux px-ctr-gate)
px_add_dockerd_fixture(px_dockerd 900)

# ---- the cluster worker (service/cluster/) ----
# Real daemons in worker mode against a real nats-server on loopback
# (tests/linux/cluster_test.sh), driven by px_cl_submit, a submitter on
# libnats alone. SKIPs (77) without nats-server or root.
add_executable(px_cl_submit ${PROJECT_SOURCE_DIR}/tests/linux/px_cl_submit.c)
target_compile_options(px_cl_submit PRIVATE ${PX_WARNINGS})
target_compile_definitions(px_cl_submit PRIVATE _GNU_SOURCE)
target_link_libraries(px_cl_submit PRIVATE PkgConfig::PX_NATS)
set_target_properties(px_cl_submit PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY $<TARGET_FILE_DIR:px_tests_linux>)
# A daemon under it sees no Landlock: its attestation fails.
add_executable(px_hide_landlock ${PROJECT_SOURCE_DIR}/tests/linux/px_hide_landlock.c)
target_compile_options(px_hide_landlock PRIVATE ${PX_WARNINGS})
target_link_libraries(px_hide_landlock PRIVATE ${PX_SECCOMP_LIB})
target_include_directories(px_hide_landlock PRIVATE ${PX_SECCOMP_INCLUDE})
set_target_properties(px_hide_landlock PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY $<TARGET_FILE_DIR:px_tests_linux>)
add_dependencies(px_tests_linux px_cl_submit px_hide_landlock)
if(PX_WERROR)
  target_compile_options(px_cl_submit PRIVATE ${PX_WERROR_FLAG})
  target_compile_options(px_hide_landlock PRIVATE ${PX_WERROR_FLAG})
endif()
add_test(NAME linux.cluster COMMAND bash
  ${PROJECT_SOURCE_DIR}/tests/linux/cluster_test.sh ${PROJECT_BINARY_DIR})
# Not RUN_SERIAL: the one test that counts the host's job cgroups and
# processes (linux.daemon) runs alone already.
set_tests_properties(linux.cluster PROPERTIES LABELS "linux;integ;cluster"
  TIMEOUT 180 SKIP_RETURN_CODE 77)

# ---- the cluster link's TLS and credentials ----
# A TLS nats-server (a CA and certificate made by openssl at test time) and
# an operator-mode one (JWTs and NKeys made by tests/linux/nats_creds.py),
# workers and a gateway with tls, tls_ca_file and credentials, and the
# refusals (tests/linux/cluster_auth_test.sh). SKIPs (77) without root,
# nats-server, openssl or python3-cryptography.
add_test(NAME linux.cluster_auth COMMAND bash
  ${PROJECT_SOURCE_DIR}/tests/linux/cluster_auth_test.sh ${PROJECT_BINARY_DIR})
set_tests_properties(linux.cluster_auth PROPERTIES LABELS "linux;integ;cluster"
  TIMEOUT 120 SKIP_RETURN_CODE 77)

# ---- the cluster under faults (issue 27) ----
# Three nats-server nodes in network namespaces (nats_cluster.sh), three
# worker daemons and a gateway daemon; px_cl_load submits 1,000 mixed jobs
# through the gateway (the local protocol's client library; NATS for the
# cluster's side of the checks) while a node is killed and restarted, a
# node's link is cut and restored and a worker is killed mid-job
# (tests/linux/cluster_net_test.sh). SKIPs (77) without root, nats-server
# or network namespaces.
add_executable(px_cl_load ${PROJECT_SOURCE_DIR}/tests/linux/px_cl_load.c)
target_compile_definitions(px_cl_load PRIVATE _GNU_SOURCE)
target_link_libraries(px_cl_load PRIVATE px_client PkgConfig::PX_NATS Threads::Threads)
px_executable(px_cl_load WHITEBOX)
set_target_properties(px_cl_load PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY $<TARGET_FILE_DIR:px_tests_linux>)
add_dependencies(px_tests_linux px_cl_load)
add_test(NAME linux.cluster_net COMMAND bash
  ${PROJECT_SOURCE_DIR}/tests/linux/cluster_net_test.sh ${PROJECT_BINARY_DIR})
set_tests_properties(linux.cluster_net PROPERTIES LABELS "linux;integ;cluster"
  TIMEOUT 300 SKIP_RETURN_CODE 77)

# ---- the cluster gateway (cluster.mode submit) ----
# A worker and a gateway daemon,
# clients on the gateway's socket (tests/linux/cluster_gateway_test.sh).
add_test(NAME linux.cluster_gateway COMMAND bash
  ${PROJECT_SOURCE_DIR}/tests/linux/cluster_gateway_test.sh ${PROJECT_BINARY_DIR})
set_tests_properties(linux.cluster_gateway PROPERTIES LABELS "linux;integ;cluster"
  TIMEOUT 120 SKIP_RETURN_CODE 77)
