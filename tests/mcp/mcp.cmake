# tests/mcp/mcp.cmake - `phoenixctl mcp` driven by the official MCP SDK
# client (and our own JSON-RPC cases) against a real executor. Needs node
# and npm (npm ci fetches the pinned SDK at test time); skips only when
# they are not installed.
if(PX_IS_LINUX)
  add_test(NAME mcp.sdk_linux
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_linux.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(mcp.sdk_linux PROPERTIES LABELS "mcp;linux;integration"
    TIMEOUT 900 SKIP_RETURN_CODE 77)
endif()
