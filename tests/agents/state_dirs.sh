#!/usr/bin/env bash
# state_dirs.sh - the Linux daemon creates its missing state directories
# (KB store 0700, log directory 0750, work root 0711) and starts; a
# directory it may not create is a clear error and it does not start.
#
#   tests/agents/state_dirs.sh BUILD_DIR
set -u
build=$(cd "${1:?usage: state_dirs.sh BUILD_DIR}" && pwd)
daemon="$build/service/phoenix-executor"
d=$(mktemp -d /tmp/px-state-XXXXXX)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$d"' EXIT
fail=0
mkdir -p "$d/kbroot"
cat > "$d/cfg.json" <<JSON
{"transports": {"socket_path": "$d/s.sock"},
 "work_root": "$d/state/jobs",
 "kb": {"roots": {"mind": "$d/kbroot"}, "store": "$d/state/kb/store"}}
JSON
"$daemon" --config "$d/cfg.json" --log-file "$d/logs/px/executor.log" >"$d/out" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -S "$d/s.sock" ] && break; sleep 0.1; done
if [ ! -S "$d/s.sock" ]; then echo "FAIL: the daemon did not start"; cat "$d/out"; exit 1; fi
check() { # path mode
    local m
    m=$(stat -c %a "$1" 2>/dev/null)
    if [ "$m" = "$2" ]; then echo "ok $1 mode $m"; else echo "FAIL $1: mode '$m', want $2"; fail=1; fi
}
check "$d/state/kb/store" 700
check "$d/logs/px" 750
check "$d/state/jobs" 711
[ "$(stat -c %u "$d/state/kb/store")" = "$(id -u)" ] || { echo "FAIL: store owner"; fail=1; }
kill $pid; wait $pid
# A store where no directory can be made: a clear error, no start.
cat > "$d/cfg2.json" <<JSON
{"transports": {"socket_path": "$d/s2.sock"}, "work_root": "$d/state/jobs",
 "kb": {"roots": {"mind": "$d/kbroot"}, "store": "/proc/px-no/store"}}
JSON
timeout 20 "$daemon" --config "$d/cfg2.json" >"$d/out2" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "cannot create the knowledge-base store /proc/px-no/store" "$d/out2"; then
    echo "ok refused: $(grep 'cannot create' "$d/out2")"
else
    echo "FAIL: exit $rc, output:"; cat "$d/out2"; fail=1
fi
exit $fail
