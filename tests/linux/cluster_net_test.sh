#!/usr/bin/env bash
# cluster_net_test.sh BUILD_DIR - issue 27's cluster under faults, with no
# mock: three nats-server nodes in network namespaces
# (tests/linux/nats_cluster.sh) holding the streams at replicas 3, three
# phoenix-executor workers of one pool (each its own socket, work root and
# config; in the host namespace, each preferring another node), and
# px_cl_load publishing 1,000 mixed jobs (ok, failing, memory, wall, fork
# bomb; ten submitted twice) at a bounded rate. While they arrive:
#   t+2 s   node 1 is killed (SIGKILL); t+5 s it is started again
#   t+8 s   node 2's cable is cut; t+11 s it is back
#   then    a worker is killed (SIGKILL) in the middle of a job it holds
#           (a `sleep 4.321` published on its own, whose PX_STARTED marker
#           names the worker)
# and then, for every job: exactly one stored result, no job started
# twice, each verdict the one a local job gets, `executor_lost` only for a
# job the killed worker held; the killed worker's job answered `executor_lost`
# exactly once; no job process outlives the test.
# Exit 0 pass, 1 fail, 77 skip (no root, nats-server or network
# namespaces).
set -u
export LC_ALL=C
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
harness="$src/tests/linux/nats_cluster.sh"
daemon="$build/service/phoenix-executor"
bin_dir=$(dirname "$(find "$build/tests" -maxdepth 2 -name px_cl_load -type f | head -1)")
load="$bin_dir/px_cl_load"
submit="$bin_dir/px_cl_submit"

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (the daemons and the namespaces do)"
command -v nats-server > /dev/null || skip "nats-server is not installed"
ip netns list > /dev/null 2>&1 || skip "ip netns is not available"
[ -x "$load" ] && [ -x "$submit" ] && [ -x "$daemon" ] ||
    { echo "FAIL: px_cl_load, px_cl_submit or phoenix-executor not built"; exit 1; }

dir=$(mktemp -d /tmp/px-test-clnet-XXXXXX)
pids=()
fail() {
    local k
    echo "FAIL: $*"
    for k in 1 2 3; do # what the workers said, for whoever reads the failure
        [ -f "$dir/w$k/daemon.log" ] || continue
        echo "---- worker w$k, its log's warnings and errors (last 25):"
        grep -aE " (warn|error) " "$dir/w$k/daemon.log" | tail -25
    done
    [ -n "${PX_CLNET_KEEP:-}" ] && cp -r "$dir" "$PX_CLNET_KEEP" 2> /dev/null
    exit 1
}
cleanup() {
    local p m
    for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2> /dev/null; done
    bash "$harness" down "$dir" > /dev/null 2>&1
    # A worker killed with SIGKILL leaves its pool slots' cgroups (empty:
    # its jobs died with it) and its job mounts: none may stay.
    for p in ${killed_pid:-}; do
        for m in /sys/fs/cgroup/*/px-slot-*-"$p"-*; do rmdir "$m" 2> /dev/null; done
    done
    grep -o " $dir[^ ]*" /proc/mounts | sort -r | while read -r m; do
        umount -l "$m" 2> /dev/null
    done
    rm -rf "$dir"
}
trap cleanup EXIT

echo "-- the cluster: three nodes, network namespaces"
bash "$harness" up "$dir" || fail "the NATS cluster did not form"
for n in 1 2 3; do url[$n]=$(bash "$harness" url "$dir" "$n"); done

# Worker K prefers node K (then the others: they reconnect there). The
# ack wait (8 s) is longer than the cut (3 s): a worker behind the cut
# link keeps its jobs (a longer cut is answered executor_lost by design:
# docs/cluster.md), and shorter than the default, so that the killed
# worker's job is answered soon.
start_worker() { # K
    local k=$1 a=${url[$1]} b=${url[$(( $1 % 3 + 1 ))]} c=${url[$(( ($1 + 1) % 3 + 1 ))]}
    local w="$dir/w$k"
    mkdir -p "$w/jobs"
    cat > "$w/executor.json" <<EOF
{"transports": {"socket_path": "$w/s.sock"}, "work_root": "$w/jobs",
 "log_level": "info",
 "clients": [{"name": "root", "match": {"unix_uid": 0}, "capabilities": ["*"],
              "max_priority": "critical", "max_concurrent": 0, "admin": true},
             {"name": "cluster", "match": {"cluster": true},
              "capabilities": ["runtimes"], "max_concurrent": 0}],
 "cluster": {"mode": "worker", "servers": ["$a", "$b", "$c"], "pool": "netpool",
             "slots": 2, "replicas": 3, "ack_wait_ms": 8000, "name": "w$k"}}
EOF
    "$daemon" --config "$w/executor.json" > "$w/daemon.log" 2>&1 &
    wpid[$k]=$!
    pids+=("$!")
}
for k in 1 2 3; do start_worker "$k"; done
for k in 1 2 3; do
    for _ in $(seq 100); do [ -S "$dir/w$k/s.sock" ] && break; sleep 0.1; done
    [ -S "$dir/w$k/s.sock" ] || { cat "$dir/w$k/daemon.log"; fail "worker $k did not start"; }
done

# The workers make the streams and their consumers when they connect.
for _ in $(seq 150); do
    "$submit" -s "${url[3]}" consumer netpool normal > /dev/null 2>&1 && break
    sleep 0.2
done
"$submit" -s "${url[3]}" consumer netpool normal > /dev/null ||
    fail "the workers made no consumer px-netpool-normal in 30 s"

echo "-- 1,000 mixed jobs at 60/s, faults while they arrive"
"$load" -s "${url[3]}" -n 1000 -d 10 -r 60 -p netpool -w 180 -m "$dir/mark" -k "$dir/killed" \
    > "$dir/load.out" 2> "$dir/load.err" &
load_pid=$!
pids+=("$load_pid")
t0=$(date +%s)
at() { while [ $(( $(date +%s) - t0 )) -lt "$1" ]; do sleep 0.2; done; }

# One failure at a time, as replicas 3 promise: a node that comes back
# must have caught up before the next one fails. (A killed node loses
# what it had not synced to disk - nats-server syncs every 2 minutes by
# default; the two others hold it - so cutting a second node before the
# first caught up can lose acknowledged messages: that is past what R3
# tolerates, and this test once lost a job that way.)
streams_current() { # every replica of the three streams current (30 s)
    local s ok
    for _ in $(seq 60); do
        ok=1
        for s in PX_JOBS PX_RESULTS KV_PX_STARTED; do
            bash "$harness" req "$dir" 3 "\$JS.API.STREAM.INFO.$s" "" 2> /dev/null |
                jq -e '.cluster.leader != null and
                       ((.cluster.replicas // []) | length) == 2 and
                       all(.cluster.replicas[]; .current == true)' > /dev/null ||
                { ok=0; break; }
        done
        [ "$ok" = 1 ] && return 0
        sleep 0.5
    done
    return 1
}

at 2;  echo "   t+2 s: kill -9 node 1"; bash "$harness" kill-node "$dir" 1 || fail "kill-node 1"
at 5;  echo "   t+5 s: node 1 back";   bash "$harness" start-node "$dir" 1 || fail "start-node 1"
bash "$harness" wait "$dir" 30 || fail "the cluster did not form again after node 1's restart"
streams_current || fail "node 1's replicas did not catch up in 30 s"
at 8;  echo "   t+8 s: node 2's cable cut"; bash "$harness" link-down "$dir" 2 || fail "link-down 2"
at 11; echo "   t+11 s: node 2's cable back"; bash "$harness" link-up "$dir" 2 || fail "link-up 2"
bash "$harness" wait "$dir" 30 || fail "the cluster did not form again after the link came back"
streams_current || fail "node 2's replicas did not catch up in 30 s"

echo "-- kill -9 a worker in the middle of a job"
printf '{"type":"run","id":"mid-1","runtime":"sh","code":"sleep 4.321"}' > "$dir/mid.json"
# (Retried as any client must while the streams elect their leaders
# again after the faults: the same message id makes a retry harmless.)
published=0
for _ in $(seq 15); do
    "$submit" -s "${url[3]}" -r 3 publish mid-1 "$dir/mid.json" -p netpool &&
        { published=1; break; }
    sleep 2
done
[ "$published" = 1 ] || fail "cannot publish mid-1 in 30 s"
holder=$("$submit" -s "${url[3]}" started mid-1 -w 60000) || fail "no worker started mid-1"
k=${holder#w}
case "$k" in 1|2|3) ;; *) fail "mid-1 is held by '$holder', not a worker of this test" ;; esac
sleep 0.5
echo "   $holder holds mid-1: kill -9 (pid ${wpid[$k]})"
echo "$holder" >> "$dir/killed" # before the kill: px_cl_load reads it later
killed_pid=${wpid[$k]}
kill -KILL "${wpid[$k]}"
wait "${wpid[$k]}" 2> /dev/null

rc=0
wait "$load_pid" || rc=$?
cat "$dir/load.out"
[ "$rc" = 0 ] || { tail -20 "$dir/load.err"; fail "px_cl_load found violations (exit $rc)"; }
grep -q "answered 1000;" "$dir/load.out" || fail "not every job was answered"

res=$("$submit" -s "${url[3]}" result mid-1 -w 60000) || fail "mid-1 got no result"
echo "   mid-1: $res"
case "$res" in *'"executor_lost"'*) ;; *) fail "mid-1's result is not executor_lost" ;; esac
n=$("$submit" -s "${url[3]}" count mid-1) || fail "cannot count mid-1's results"
[ "$n" = 1 ] || fail "mid-1 has $n results stored, not one"

echo "-- no job process outlives its worker"
sleep 1
if pgrep -f "sleep (4\.321|5\.43[23])" > /dev/null; then
    ps -ef | grep -E "sleep (4\.321|5\.43[23])" | grep -v grep
    fail "a job process outlived its job"
fi
echo "PASS"
