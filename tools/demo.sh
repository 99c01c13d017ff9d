#!/usr/bin/env bash
# demo.sh - README's first command: set up, build, start the executor with
# its built-in default configuration, run real jobs through it and print
# their verdicts, then stop it.
#
# 1. Linux: the phoenix-executor daemon with real kernel enforcement
#    (namespaces, cgroups, seccomp, Landlock) on its default Unix socket.
# 2. Windows: the PhoenixExecutor service cross-built with mingw-w64,
#    installed and started with `sc` under Wine, the same kinds of jobs
#    through phoenixctl over the named pipe (Wine enforces no job limit:
#    the verdicts there come from the service's own watchdog). Its start-up
#    attestation finds that out, so the Wine run sets
#    windows.allow_degraded explicitly (tests/win/svc_demo.sh) and its
#    results say "degraded".
#
#   tools/demo.sh [--linux-only]
#
# Needs root (the sandbox builds namespaces and cgroups); re-runs itself
# with sudo when started as another user.
set -euo pipefail
linux_only=0
[ "${1:-}" = "--linux-only" ] && linux_only=1
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
    exec sudo -E "$0" "$@"
fi

bash tools/setup.sh
echo "==== building (Linux) ===="
build_log=$(mktemp /tmp/phoenix-demo-build.XXXXXX)
if ! { cmake --preset linux-native && cmake --build build/linux-native -j "$(nproc)"; } >"$build_log" 2>&1; then
    tail -n 40 "$build_log"
    echo "demo: the build failed (full log: $build_log)" >&2
    exit 1
fi
daemon=build/linux-native/service/phoenix-executor
ctl=build/linux-native/tools/phoenixctl

log=$(mktemp /tmp/phoenix-demo-log.XXXXXX)
echo "==== starting phoenix-executor with the built-in defaults ===="
"$daemon" --log-level info >"$log" 2>&1 &
pid=$!
stop() {
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
trap stop EXIT
for _ in $(seq 100); do
    "$ctl" ping >/dev/null 2>&1 && break
    sleep 0.05
done
"$ctl" ping >/dev/null || { cat "$log"; exit 1; }
echo "---- the sandbox attestation at start (status.attestation.state) ----"
"$ctl" status || true

jobdir=$(mktemp -d /tmp/phoenix-demo.XXXXXX)
cat > "$jobdir/hello.py" <<'PY'
import platform, os
print("hello from", platform.python_implementation(), "in", os.getcwd())
PY
cat > "$jobdir/exit3.sh" <<'SH'
echo "about to fail"; exit 3
SH
cat > "$jobdir/memory_hog.py" <<'PY'
chunks = []
while True:
    chunks.append(bytearray(16 * 1024 * 1024))
PY
cat > "$jobdir/fork_bomb.sh" <<'SH'
bomb() { bomb | bomb & }; bomb
sleep 5
SH
cat > "$jobdir/busy_loop.py" <<'PY'
while True:
    pass
PY
cat > "$jobdir/sleeper.sh" <<'SH'
sleep 60
SH
cat > "$jobdir/flood.py" <<'PY'
import sys
while True:
    sys.stdout.write("x" * 65536)
PY
cat > "$jobdir/escape.py" <<'PY'
import os, socket
def attempt(what, action):
    try:
        action()
        print(what + ": ALLOWED")
    except Exception as e:
        print(what + ": denied (" + type(e).__name__ + ": " + str(e) + ")")
attempt("write /etc/phoenix-demo", lambda: open("/etc/phoenix-demo", "w").write("x"))
attempt("read /etc/shadow", lambda: open("/etc/shadow").read())
# No packet is sent anywhere: the job's network namespace has nothing but
# its own loopback, so there is no route out to try.
print("network interfaces: " + ", ".join(n for _, n in socket.if_nameindex()) +
      " (no route out of the job's own network namespace)")
attempt("listen on 127.0.0.1:8080 (the job's own loopback, not the host's)",
        lambda: socket.socket().bind(("127.0.0.1", 8080)))
PY

out=$(mktemp /tmp/phoenix-demo-out.XXXXXX)
run() { # title, phoenixctl run arguments...
    local title=$1 rc size; shift
    printf '\n---- %s ----\n' "$title"
    set +e
    "$ctl" run "$@" >"$out"
    rc=$?
    set -e
    head -c 400 "$out"
    size=$(stat -c %s "$out")
    [ "$size" -le 400 ] || printf '... (%d bytes of output in all)\n' "$size"
    printf '(phoenixctl exit status %d)\n' "$rc"
}
run "a normal Python job" "$jobdir/hello.py"
run "a shell job that exits 3" "$jobdir/exit3.sh"
run "a memory hog under a 64 MiB limit" --memory 64M "$jobdir/memory_hog.py"
run "a fork bomb under an 8-process limit" --procs 8 --wall 5s "$jobdir/fork_bomb.sh"
run "an infinite loop under 1 s of CPU" --cpu 1s "$jobdir/busy_loop.py"
run "a sleeper under a 1 s wall limit" --wall 1s "$jobdir/sleeper.sh"
run "an output flood under a 1 MiB cap" --output 1M "$jobdir/flood.py"
run "escape attempts (file, secrets, network)" "$jobdir/escape.py"
run "a request above policy (100 GiB memory)" --memory 100G "$jobdir/hello.py"

printf '\n---- service status ----\n'
"$ctl" status
stop
trap - EXIT
printf '\n---- daemon log (last lines) ----\n'
tail -n 15 "$log"
rm -rf "$jobdir" "$out"

[ "$linux_only" = 1 ] && exit 0
echo
echo "==== Windows: cross-building with mingw-w64 (dependencies cached after the first run) ===="
if ! { cmake --preset windows-mingw && cmake --build build/windows-mingw -j "$(nproc)"; } \
        >"$build_log" 2>&1; then
    tail -n 40 "$build_log"
    echo "demo: the Windows build failed (full log: $build_log)" >&2
    exit 1
fi
rm -f "$build_log"
echo "==== Windows: the PhoenixExecutor service under Wine ===="
demo_prefix=${PX_WINEPREFIX:-$HOME/.cache/phoenix-executor/wine-demo}
# svc_demo.sh starts the prefix's persistent wineserver: stop it at the end,
# whatever happens, so no Wine process outlives the demo.
stop_wine() { PX_WINEPREFIX=$demo_prefix bash tools/wine-env.sh stop; }
trap 'stop; stop_wine' EXIT
PX_WINEPREFIX=$demo_prefix bash tests/win/svc_demo.sh build/windows-mingw
