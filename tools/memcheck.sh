#!/usr/bin/env bash
# memcheck.sh - Valgrind memcheck passes (tools/test.sh runs them).
#
#   tools/memcheck.sh BUILD_DIR      a Linux build (RelWithDebInfo is fine)
#
# 1. The portable unit suite (px_tests): the runner and every test child
#    under memcheck (--trace-children; each test runs in its own process).
# 2. The daemon (phoenix-executor) under memcheck for a short session:
#    ping, status, protocol abuse, jobs, a cancel, a client that vanishes,
#    then SIGTERM. Valgrind 3.19 (Debian 12) does not implement clone3
#    (ENOSYS), seccomp, landlock_create_ruleset or the warm pool's clone()
#    (the session's configuration turns the pool off), so under memcheck the
#    backend reports no Landlock and no job starts (clone3 refused: the
#    attestation's probe ends `error`/`process_create_failed`, every run is
#    refused `sandbox_unverified`):
#    the session covers start-up, configuration, transport, session,
#    engine, results, cancel and orderly stop; the spawn and sandbox paths
#    are covered by the ASan+UBSan pass instead (docs/testing.md).
#
# Any memcheck error, and any definitely or indirectly lost block, fails.
# PX_MEMCHECK_ONLY=unit|daemon runs one part.
# Suppressions (tools/analysis/valgrind.supp) are for third-party
# libraries only. Every step is bounded by `timeout`.
set -uo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.."
build=${1:?usage: tools/memcheck.sh BUILD_DIR}
root=$(pwd)
vg=(valgrind -q --error-exitcode=99 --leak-check=full
    --errors-for-leak-kinds=definite,indirect
    --show-leak-kinds=definite,indirect --num-callers=30
    --suppressions="$root/tools/analysis/valgrind.supp")
rc=0

# (internal) one group of px_tests under memcheck: --unit-group BUILD GROUP
if [ "$build" = --unit-group ]; then
    build=$2 g=$3
    # Every test is many times slower under memcheck: the runner's
    # per-test timeouts (which catch hangs) scaled by 4.
    PX_TEST_TIMEOUT_SCALE=4 timeout 1800 "${vg[@]}" --trace-children=yes \
        "$build/tests/px_tests" --group "$g" > "$build/memcheck-unit-$g.log" 2>&1
    r=$?
    printf '  %-10s %s (exit %d)\n' "$g" "$(grep -E ' passed, ' "$build/memcheck-unit-$g.log" | tail -1)" "$r"
    exit $(( r != 0 ? 255 : 0 ))   # 255 stops xargs early
fi

only=${PX_MEMCHECK_ONLY:-}   # "unit" or "daemon": one part only
if [ "$only" != daemon ]; then
echo "-- memcheck: px_tests (every test in its own process under memcheck)"
start=$(date +%s)
# One valgrind'd runner per group, as many at once as there are CPUs; the
# runner starts each test as a child (--trace-children follows it).
groups=$("$build/tests/px_tests" --list | awk '$1 != "fixture" {print $1}' | sort -u)
if ! printf '%s\n' $groups | xargs -P "$(nproc)" -n 1 "$self" --unit-group "$build"; then
    for g in $groups; do
        grep -E '^(not ok|==[0-9]+==)' "$build/memcheck-unit-$g.log" | head -60
    done
    echo "memcheck: px_tests FAILED (logs: $build/memcheck-unit-*.log)"
    rc=1
fi
echo "memcheck: px_tests took $(( $(date +%s) - start )) s"
fi
[ "$only" = unit ] && exit $rc

echo "-- memcheck: phoenix-executor session"
start=$(date +%s)
dir=$(mktemp -d /tmp/px-memcheck.XXXXXX)
chmod 755 "$dir"
mkdir -p "$dir/jobs"
# No warm pool: its slots are made with clone() flags Valgrind does not
# implement (it would end the daemon); the pool's own paths run under
# ASan+UBSan (linux.pool, the *_pooled groups).
# tmpfs job directories: Valgrind 3.19 (Debian 12) knows neither the new
# mount API (fsopen/fsconfig/fsmount) nor LOOP_CONFIGURE, and warns on the
# loop ioctls the disk-backed ones need. Nor does it know clone3, so under
# it no job can start at all (px__lnx_spawn: clone3 ENOSYS; the attestation
# fails and every run is refused sandbox_unverified, as it must be): the
# session then covers the protocol, refusals, the attestation's failure
# path, scram/resume and status, and the job paths run under ASan+UBSan.
# check_session below says which of the two it saw.
cat > "$dir/executor.json" <<EOF
{"transports": {"socket_path": "$dir/s.sock"}, "work_root": "$dir/jobs",
 "queue": {"workers": 2}, "linux": {"pool": 0, "job_dir": "tmpfs"}}
EOF
timeout 300 "${vg[@]}" "$build/service/phoenix-executor" --config "$dir/executor.json" \
    > "$dir/daemon.log" 2>&1 &
vpid=$!
ctl=("$build/tools/phoenixctl" --socket "$dir/s.sock")
for _ in $(seq 150); do [ -S "$dir/s.sock" ] && break; sleep 0.2; done
session() {
    "${ctl[@]}" ping
    "${ctl[@]}" status
    echo 'echo hello' | "${ctl[@]}" run --runtime sh -
    echo 'exit 3' | "${ctl[@]}" run --runtime sh --wall 2s -
    echo 'print(1)' | "${ctl[@]}" run --runtime python --memory 64M -
    "${ctl[@]}" send '{"type":"run","id":"bad","runtime":"sh","code":"x","limits":{"cpu_ms":-1}}'
    "${ctl[@]}" send '{"type":"run","id":"nort","runtime":"nope","code":"x"}'
    "${ctl[@]}" send '{"type":"colour"}'
    "${ctl[@]}" send '{"type":"cancel","id":"nothing"}'
    "${ctl[@]}" send '{"type":"scram"}'
    "${ctl[@]}" send '{"type":"resume"}'
    for i in 1 2 3 4 5 6; do
        echo "echo job $i" | "${ctl[@]}" run --runtime sh --priority high - &
    done
    wait
    "${ctl[@]}" status
}
timeout 240 bash -c "$(declare -f session); ctl=(${ctl[*]}); session" \
    > "$dir/session.log" 2>&1
echo "session: $(grep -c . "$dir/session.log") lines of client output"
kill -TERM "$vpid" 2>/dev/null
wait "$vpid"
vrc=$?
# The session's answers, not only a clean memcheck: a daemon that answered
# nothing would leave no Valgrind error either.
check_session() {
    local log=$dir/session.log want
    for want in '"type":[[:space:]]*"pong"' '"code":[[:space:]]*"bad_request"' \
        '"code":[[:space:]]*"unknown_type"' '"code":[[:space:]]*"unknown_id"'; do
        grep -Eq "$want" "$log" || { echo "memcheck: no $want in the session"; return 1; }
    done
    [ "$(grep -Ec '"type":[[:space:]]*"status"' "$log")" -ge 2 ] ||
        { echo "memcheck: fewer than 2 status replies"; return 1; }
    if grep -q 'clone3 failed: errno 38' "$dir/daemon.log"; then
        [ "$(grep -c 'rejected: sandbox_unverified' "$log")" -ge 9 ] ||
            { echo "memcheck: jobs neither ran nor were refused sandbox_unverified"; return 1; }
        echo "memcheck: no job can start under this Valgrind (clone3: ENOSYS); each run was refused sandbox_unverified, as it must be"
    else
        grep -qx hello "$log" && grep -qx 'job 6' "$log" ||
            { echo "memcheck: the session's jobs printed nothing"; return 1; }
        echo "memcheck: the session's jobs ran"
    fi
}
if ! check_session; then
    vrc=98
fi
if [ "$vrc" -ne 0 ] || grep -q '^==[0-9]*==' "$dir/daemon.log"; then
    grep -E '^==[0-9]+==' "$dir/daemon.log" | head -80
    echo "memcheck: phoenix-executor FAILED (exit $vrc; log kept in $dir)"
    rc=1
else
    echo "memcheck: phoenix-executor clean (exit 0)"
    cp "$dir/session.log" "$build/memcheck-session.log"
    cp "$dir/daemon.log" "$build/memcheck-daemon.log"
    rm -rf "$dir"
fi
echo "memcheck: the daemon session took $(( $(date +%s) - start )) s"
exit $rc
