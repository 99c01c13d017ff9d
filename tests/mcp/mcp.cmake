# tests/mcp/mcp.cmake - `phoenixctl mcp` driven by the official MCP SDK
# client (and our own JSON-RPC cases) against a real executor. Needs node
# and npm (npm ci fetches the pinned SDK at test time); skips only when
# they are not installed.
if(PX_IS_LINUX)
  add_test(NAME mcp.sdk_linux
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_linux.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(mcp.sdk_linux PROPERTIES LABELS "mcp;linux;integ"
    TIMEOUT 900 SKIP_RETURN_CODE 77)
endif()
if(NOT PX_IS_LINUX)
  # Installs the service: a Wine prefix of its own, keyed by the build dir
  # (its own wineserver, SCM and pipes), so it runs beside other tests.
  string(MD5 px_mcp_key "${PROJECT_BINARY_DIR}")
  string(SUBSTRING "${px_mcp_key}" 0 8 px_mcp_key)
  add_test(NAME mcp.sdk_wine
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_wine.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(mcp.sdk_wine PROPERTIES LABELS "mcp;win;integ"
    TIMEOUT 1200 SKIP_RETURN_CODE 77
    ENVIRONMENT "PX_WINEPREFIX=$ENV{HOME}/.cache/phoenix-executor/wine-mcp-${px_mcp_key}")
endif()
