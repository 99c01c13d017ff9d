# tests/agents/agents.cmake - the Python client against a real daemon (pip
# installed first when pip exists). The MCP tests are in tests/mcp.
if(PX_IS_LINUX)
  add_test(NAME python.client_linux
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/python_client.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(python.client_linux PROPERTIES LABELS "python;linux;integ"
    TIMEOUT 700)
endif()
# The daemon creates its missing state directories (and refuses clearly).
if(PX_IS_LINUX)
  add_test(NAME linux.state_dirs
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/state_dirs.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(linux.state_dirs PROPERTIES LABELS "linux;integ" TIMEOUT 120)
endif()
# The CLI explains itself: help, version, runtime by extension, verdicts in
# words, the status table, Prometheus metrics (against a real daemon).
if(PX_IS_LINUX)
  add_test(NAME linux.cli
    COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/with_daemon.py
      --daemon ${PROJECT_BINARY_DIR}/service/phoenix-executor --
      bash ${CMAKE_CURRENT_LIST_DIR}/cli.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(linux.cli PROPERTIES LABELS "linux;integ" TIMEOUT 300)
  # The metrics exposition after real jobs passes Prometheus's own linter
  # (promtool: tools/setup.sh; SKIP without it, a failure under CI=true).
  add_test(NAME linux.metrics_promtool
    COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/with_daemon.py
      --daemon ${PROJECT_BINARY_DIR}/service/phoenix-executor --
      bash ${CMAKE_CURRENT_LIST_DIR}/promtool.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(linux.metrics_promtool PROPERTIES LABELS "linux;integ"
    TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
