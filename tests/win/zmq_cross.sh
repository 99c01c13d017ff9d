#!/usr/bin/env bash
# zmq_cross.sh - the remote orchestrator's path across platforms: a native
# Linux phoenixctl (libzmq with libsodium CURVE) runs a job on the Windows
# service running under Wine (libzmq with TweetNaCl CURVE) over
# tcp://127.0.0.1; a client whose key is not on the allow-list gets no
# answer. Keys come from px_keygen.
#
#   tests/win/zmq_cross.sh WIN_BUILD LINUX_BUILD
#
# Exit 0 pass, 1 fail, 77 skipped (no Linux build beside the Windows one).
set -u
win=$(cd "${1:?usage: zmq_cross.sh WIN_BUILD LINUX_BUILD}" && pwd)
lin=${2:?usage: zmq_cross.sh WIN_BUILD LINUX_BUILD}
here=$(cd "$(dirname "$0")/../.." && pwd)
ctl="$lin/tools/phoenixctl"
keygen="$lin/service/px_keygen"
if [ ! -x "$ctl" ] || [ ! -x "$keygen" ]; then
    echo "SKIP: no Linux build at $lin (phoenixctl, px_keygen): build linux-native first"
    exit 77
fi
source "$here/tools/wine-env.sh" env
bash "$here/tools/wine-env.sh" start

tmp=$(mktemp -d)
svc_pid=
cleanup() {
    [ -n "$svc_pid" ] && kill "$svc_pid" 2>/dev/null
    wait "$svc_pid" 2>/dev/null
    rm -rf "$tmp" "${cdir:-}"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; sed -n '1,60p' "$tmp/service.log"; exit 1; }

"$keygen" > "$tmp/server.key"
"$keygen" > "$tmp/client.key"
"$keygen" > "$tmp/stranger.key"
chmod 600 "$tmp"/*.key
pub() { sed -n 's/^# public-key: //p' "$1"; }
spub=$(pub "$tmp/server.key")
cpub=$(pub "$tmp/client.key")
[ ${#spub} = 40 ] && [ ${#cpub} = 40 ] || fail "px_keygen gave no public keys"
port=$((20000 + RANDOM % 20000))
endpoint="tcp://127.0.0.1:$port"
wkey=$(winepath -w "$tmp/server.key")
# The configuration and work root live inside the prefix's C: drive: the
# service refuses a path below a directory others may write (Z:\tmp is
# /tmp), as it would on Windows (docs/windows-service.md).
cdir="$WINEPREFIX/drive_c/px-cross-$$"
mkdir -p "$cdir"
wwork='C:\px-cross-'$$'\jobs'
python3 - "$cdir/executor.json" "$endpoint" "$wkey" "$cpub" "$wwork" "px-cross-$$" <<'PY'
import json, sys
path, endpoint, key, cpub, work, pipe = sys.argv[1:]
json.dump({
    "transports": {"pipe_name": "\\\\.\\pipe\\" + pipe,
                   "zmq": {"endpoint": endpoint, "secret_key_file": key,
                           "client_keys": [cpub]}},
    "work_root": work,
    # The CI's Wine configuration: Wine enforces none of what the start-up
    # attestation checks; without this every run is refused.
    "windows": {"allow_degraded": True},
    "clients": [{"name": "orchestrator", "match": {"zmq_key": cpub},
                 "capabilities": ["runtimes"], "max_priority": "high"}],
}, open(path, "w"), indent=2)
PY
wine "$win/service/PhoenixExecutor.exe" --console --config 'C:\px-cross-'$$'\executor.json' \
    >"$tmp/service.log" 2>&1 </dev/null &
svc_pid=$!

printf '@echo hello from Windows, asked by Linux\r\n@exit /b 7\r\n' > "$tmp/job.cmd"
ok=0
for _ in $(seq 60); do   # the service needs a moment under Wine
    timeout 20 "$ctl" --zmq "$endpoint" --zmq-server-key "$spub" --zmq-key-file "$tmp/client.key" \
        run --runtime cmd "$tmp/job.cmd" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if grep -q "hello from Windows" "$tmp/out"; then ok=1; break; fi
    sleep 0.5
done
[ "$ok" = 1 ] || fail "the authenticated Linux client got no result: $(cat "$tmp/err")"
[ "$rc" = 7 ] || fail "job exit status $rc, expected 7 (stderr: $(cat "$tmp/err"))"
echo "authenticated Linux client: $(tail -1 "$tmp/err")"

if timeout 10 "$ctl" --zmq "$endpoint" --zmq-server-key "$spub" --zmq-key-file "$tmp/stranger.key" \
        ping >"$tmp/out2" 2>&1; then
    fail "a client off the allow-list got an answer: $(cat "$tmp/out2")"
fi
grep -q pong "$tmp/out2" && fail "a client off the allow-list got pong"
echo "unauthenticated client: refused (no answer)"
echo "zmq_cross: ok"
