#!/usr/bin/env bash
# run_wine.sh - the MCP SDK test against the Windows service under Wine:
# `PhoenixExecutor install`, `sc start`, then the official MCP TypeScript
# SDK client on the Linux side drives `wine phoenixctl.exe mcp` over stdio
# (the same mcp_sdk_test.mjs as on Linux, jobs as cmd scripts and a probe),
# then `sc stop` and `uninstall`.
#
#   tests/mcp/run_wine.sh BUILD_DIR      (a windows-mingw build)
#
# Uses PX_WINEPREFIX (ctest gives this test a prefix of its own: it
# installs a service). Exit 77 (skipped) only when node/npm are missing.
set -u
build=$(cd "${1:?usage: run_wine.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "SKIP: node/npm not installed (apt-get install nodejs npm)"
    exit 77
fi
source "$root/tools/wine-env.sh" env
bash "$root/tools/wine-env.sh" start
work="$build/tests/mcp-sdk"
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here/mcp_sdk_test.mjs" "$work/"
if [ ! -d "$work/node_modules/@modelcontextprotocol/sdk" ] ||
   ! cmp -s "$here/package-lock.json" "$work/node_modules/.package-lock.json.src" 2>/dev/null; then
    (cd "$work" && timeout 300 npm ci --no-audit --no-fund) || { echo "FAIL: npm ci"; exit 1; }
    cp "$here/package-lock.json" "$work/node_modules/.package-lock.json.src"
fi
exe=$(winepath -w "$build/service/PhoenixExecutor.exe" 2>/dev/null)
ctl="$build/tools/phoenixctl.exe"
jobs="$WINEPREFIX/drive_c/px-mcp"
w() { timeout "$1" wine "${@:2}" </dev/null; }
cleanup() {
    w 60 sc stop PhoenixExecutor >/dev/null 2>&1
    w 60 "$exe" uninstall >/dev/null 2>&1
    rm -rf "$jobs"
    bash "$root/tools/wine-env.sh" stop # this prefix's wineserver
}
trap cleanup EXIT
mkdir -p "$jobs"
cp "$build/tests/px_probe.exe" "$jobs/probe.exe"

# The CI's Wine configuration: Wine enforces nothing the start-up
# attestation checks, so runs need windows.allow_degraded, said explicitly
# (docs/windows-service.md, "Attestation"). Inside the prefix's C: drive:
# the service refuses a configuration below a directory others may write.
cfgdir="$WINEPREFIX/drive_c/px-mcp"
mkdir -p "$cfgdir"
printf '{"windows": {"allow_degraded": true}}\n' > "$cfgdir/executor.json"
w 60 "$exe" uninstall >/dev/null 2>&1
w 60 "$exe" install --config 'C:\px-mcp\executor.json' || { echo "FAIL: install"; exit 1; }
w 60 sc start PhoenixExecutor >/dev/null
for _ in $(seq 100); do
    w 10 "$ctl" ping >/dev/null 2>&1 && break
    sleep 0.2
done
w 10 "$ctl" ping >/dev/null || { echo "FAIL: the service does not answer"; exit 1; }
echo "==== SDK client -> wine phoenixctl.exe mcp -> the Windows service ===="
(cd "$work" && PX_MCP_PROBE='C:\px-mcp\probe.exe' timeout 600 \
    node mcp_sdk_test.mjs --platform windows -- wine "$ctl" mcp)
rc=$?
echo "==== malformed JSON-RPC (wine phoenixctl.exe mcp) ===="
PX_MCP_SLEEP_CODE='@C:\px-mcp\probe.exe sleep 60000' \
    timeout 300 python3 "$here/jsonrpc_cases.py" wine "$ctl" mcp || rc=1
exit $rc
