#!/usr/bin/env bash
# run_linux.sh - the MCP tests on Linux, as ctest runs them:
#   1. the official MCP TypeScript SDK client (package.json pins
#      @modelcontextprotocol/sdk; installed here with `npm ci` into the
#      build tree) drives `phoenixctl mcp` against a real daemon, as root
#      (an admin: the kb tools are listed) and as uid 65534 (not listed);
#   2. our own malformed JSON-RPC cases (jsonrpc_cases.py).
#
#   tests/mcp/run_linux.sh BUILD_DIR
#
# Exit 77 (ctest: skipped) only when node or npm is not installed.
set -u
build=$(cd "${1:?usage: run_linux.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
ctl="$build/tools/phoenixctl"
daemon="$build/service/phoenix-executor"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "SKIP: node/npm not installed (apt-get install nodejs npm)"
    exit 77
fi
work="$build/tests/mcp-sdk"
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here/mcp_sdk_test.mjs" "$work/"
if [ ! -d "$work/node_modules/@modelcontextprotocol/sdk" ] ||
   ! cmp -s "$here/package-lock.json" "$work/node_modules/.package-lock.json.src" 2>/dev/null; then
    (cd "$work" && timeout 300 npm ci --no-audit --no-fund) || { echo "FAIL: npm ci"; exit 1; }
    cp "$here/package-lock.json" "$work/node_modules/.package-lock.json.src"
fi
echo "SDK: @modelcontextprotocol/sdk $(node -p "require('$work/node_modules/@modelcontextprotocol/sdk/package.json').version")"
fail=0
with() { timeout 600 python3 "$here/../agents/with_daemon.py" --daemon "$daemon" -- "$@"; }

echo "==== SDK client, as root (admin) ===="
with env PX_MCP_EXPECT_ADMIN=1 bash -c \
    "cd '$work' && node mcp_sdk_test.mjs --platform linux -- '$ctl' --socket \"\$PX_SOCKET\" mcp" || fail=1
if command -v setpriv >/dev/null; then
    echo "==== SDK client, as uid 65534 (not an admin) ===="
    chmod o+rx "$build" "$build/tools" 2>/dev/null
    with env PX_MCP_EXPECT_ADMIN=0 bash -c \
        "cd '$work' && node mcp_sdk_test.mjs --platform linux -- setpriv --reuid=65534 --regid=65534 --clear-groups '$ctl' --socket \"\$PX_SOCKET\" mcp" || fail=1
fi
echo "==== malformed JSON-RPC ===="
with bash -c "python3 '$here/jsonrpc_cases.py' '$ctl' --socket \"\$PX_SOCKET\" mcp" || fail=1
exit $fail
