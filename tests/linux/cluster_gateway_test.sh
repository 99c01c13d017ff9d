#!/usr/bin/env bash
# cluster_gateway_test.sh BUILD_DIR - the cluster gateway (cluster.mode
# submit, service/cluster/gateway.c, docs/cluster-protocol.md "Gateway")
# against a real nats-server with JetStream on a free loopback port (its
# max_payload lowered to 64 KiB, a client that stops answering its pings
# dropped after about 2 s), one real worker daemon and one real
# gateway daemon. Clients talk to the gateway's Unix socket
# (tests/linux/gw_client.py on the Python client's framing); px_cl_submit
# reads PX_RESULTS. ctest: linux.cluster_gateway (SKIP 77 without
# nats-server or root). The first failure stops the script with the logs.
set -u
build=${1:?usage: cluster_gateway_test.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
exe=$build/service/phoenix-executor
ctl=$build/tools/phoenixctl
sub_bin=$build/tests/px_cl_submit
client=$here/gw_client.py

. "$here/cluster_lib.sh"
cl_init px-clgw "$exe" "$ctl" "$sub_bin"
max_payload=65536

start_nats() {
  cat >"$tmp/nats.conf" <<CONF
listen: 127.0.0.1:$port
max_payload: $max_payload
ping_interval: "1s"
ping_max: 1
debug: true # "Stale Client Connection" is logged at debug level
jetstream { store_dir: "$tmp/js" }
CONF
  nats-server -c "$tmp/nats.conf" >>"$tmp/nats.log" 2>&1 &
  nats_pid=$!
  cl_wait_nats
}

# start_daemon NAME MODE READY_PATTERN [EXTRA_TOP_LEVEL_JSON [POOL]]: a daemon of
# its own (socket, work root, log); root is a plain client (max_concurrent
# 2: the cap a forwarded job counts against), the cluster account may run.
start_daemon() {
  local n=$1 mode=$2 ready=$3 extra=${4-} pool=${5:-linux-x64} d=$tmp/$1
  mkdir -p "$d/jobs"
  cat >"$d/executor.json" <<JSON
{"transports":{"socket_path":"$d/s.sock","socket_group":"nogroup"},
 "work_root":"$d/jobs",$extra
 "clients":[{"name":"root","match":{"unix_uid":0},"capabilities":["*"],"max_concurrent":2},
            {"name":"farm","match":{"cluster":true},"capabilities":["*"],"max_priority":"high"}],
 "cluster":{"mode":"$mode","servers":["$url"],"name":"$n","ack_wait_ms":1500,"pool":"$pool"}}
JSON
  "$exe" --config "$d/executor.json" --log-level debug >"$d/daemon.log" 2>&1 &
  dpid[$n]=$!
  cl_ready "$n" "$ready"
}

gw() { python3 "$client" "$tmp/gw/s.sock" "$@"; }
run_json() { # run_json ID CODE PLACEMENT [EXTRA_MEMBERS]
  printf '{"type":"run","id":"%s","runtime":"sh","code":"%s","placement":"%s"%s}' \
    "$1" "$2" "$3" "${4-}"
}
absent() { # absent TEXT PATTERN WHAT
  printf '%s' "$1" | grep -q -- "$2" && fail "$3: $2 in: ${1:0:900}"
  return 0
}
lines_of() { # lines_of TEXT PATTERN: how many lines match
  printf '%s\n' "$1" | grep -c -- "$2"
}
status_cluster() { # status.cluster of the daemon at socket $1, compact
  "$ctl" --socket "$1" status --json |
    python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("cluster"), separators=(",",":")))'
}
cid_of() { # cid_of ID: the cluster id the gateway gave the client's job ID
  sed -n "s/.*cluster: job $1 forwarded as \([A-Za-z0-9_-]*\).*/\1/p" "$tmp/gw/daemon.log" | tail -1
}

start_nats
start_daemon w1 worker "consumers of pool"
start_daemon gw submit "gateway of pool" '"queue":{"workers":1},'

echo "== placement cluster: runs on the worker; events and one result relayed under the client's id"
out=$(gw "$(run_json c1 'echo gw-marker' cluster ',"stream":true')" --linger 1) || fail "c1: no result: $out"
expect "$out" '"type":"accepted","id":"c1","queue_position":0' "c1 accepted first"
[ "$(printf '%s\n' "$out" | head -1 | grep -c accepted)" = 1 ] || fail "c1: accepted is not first: $out"
expect "$out" '"type":"started","id":"c1"' "c1 started relayed"
expect "$out" '"type":"output","id":"c1".*gw-marker' "c1 output relayed"
expect "$out" '"type":"result","id":"c1".*"status":"ok"' "c1 result"
expect "$out" '"worker":"w1"' "c1 ran on the worker"
[ "$(lines_of "$out" '"type":"result"')" = 1 ] || fail "c1: not exactly one result: $out"
absent "$out" '"submitter"' "c1: the gateway's submitter stamp is not the client's"
cid=$(cid_of c1)
[ -n "$cid" ] || fail "c1: no cluster id in the gateway's log"
case $cid in gw-[0-9a-f]*) ;; *) fail "c1: cluster id $cid is not <node>-<hex>" ;; esac
grep -q "cluster: job $cid taken (submitter \"uid:0@gw\")" "$tmp/w1/daemon.log" ||
  fail "c1: the worker did not take $cid with the gateway's submitter"
[ "$(sub count "$cid")" = 1 ] || fail "c1: PX_RESULTS holds $(sub count "$cid") results"

st=$(status_cluster "$tmp/gw/s.sock") || fail "status"
expect "$st" '{"mode":"submit","connected":true,"pool":"linux-x64","pending":0,"in_flight":0}' "gateway status.cluster"
# The gateway reads the workers from PX_NODES with its own connection.
ws=$(workers gw) || fail "cluster status of the gateway"
printf '%s\n' "$ws" | grep -Eqx 'w1 linux-x64 1 [01] [01] (enforced|degraded) true [^ ]+ 5000 false' ||
  fail "the gateway's cluster status: $ws"
wait_metric gw gateway.forwarded 1
wait_metric gw gateway.results_relayed 1
wait_metric w1 worker.jobs_taken 1
[ "$(metric gw worker)" = null ] || fail "a gateway in submit mode reports worker counters"

echo "== phoenixctl run --placement cluster, the MCP run_code tool's placement"
printf 'echo ctl-marker\n' >"$tmp/ctl.sh"
out=$("$ctl" --socket "$tmp/gw/s.sock" run --runtime sh --id ctl1 --placement cluster --json "$tmp/ctl.sh") ||
  fail "phoenixctl: $out"
expect "$out" '"status":[[:space:]]*"ok"' "phoenixctl ctl1"
expect "$out" '"worker":[[:space:]]*"w1"' "phoenixctl ctl1 ran on the worker"
[ -n "$(cid_of ctl1)" ] || fail "ctl1 was not forwarded"
out=$(python3 - "$ctl" "$tmp/gw/s.sock" <<'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "--socket", sys.argv[2], "mcp"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)
def ask(m):
    p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
    while "id" in m:
        r = json.loads(p.stdout.readline())
        if r.get("id") == m["id"]:
            return r
ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
     "capabilities": {}, "clientInfo": {"name": "gw-test", "version": "1"}}})
ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
r = ask({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "run_code",
        "arguments": {"runtime": "sh", "code": "echo mcp-marker", "placement": "cluster",
                      "job_id": "mcp1"}}})
print(json.dumps(r))
p.stdin.close(); p.wait(10)
PY
) || fail "mcp: $out"
expect "$out" 'mcp-marker' "mcp run_code placement cluster"
[ -n "$(cid_of mcp1)" ] || fail "mcp1 was not forwarded: $out"

echo "== placement any: local while the engine has a free slot, the cluster when not"
out=$(gw "$(run_json a1 'echo any-local' any)") || fail "a1: no result"
expect "$out" '"type":"result","id":"a1".*"status":"ok"' a1
absent "$out" '"worker"' "a1 ran locally"
[ -z "$(cid_of a1)" ] || fail "a1 was forwarded"
out=$(gw "$(run_json a2 'sleep 1' local)" --second "$(run_json a3 'echo any-spill' any)" \
  --second "$(run_json a7 'echo kb' any ',"capabilities":["kb:read"]')" --linger 2) ||
  fail "a2/a3: no result"
expect "$out" '"type":"result","id":"a7"' "a7 answered"
absent "$out" '"id":"a7".*"worker"' "a7 (a kb: capability) stayed local"
[ -z "$(cid_of a7)" ] || fail "a7 was forwarded"
expect "$out" '"type":"result","id":"a3".*"status":"ok"' a3
expect "$out" '"type":"result","id":"a3".*"worker":"w1"' "a3 spilled to the cluster"
expect "$out" '"type":"result","id":"a2".*"status":"ok"' a2
# At its max_concurrent (2: a local and a forwarded job in flight) the
# client's "any" job waits here, queued, rather than be refused queue_full.
out=$(gw "$(run_json a4 'sleep 1' local)" --second "$(run_json a5 'sleep 1' cluster)" \
  --second "$(run_json a6 'echo any-at-cap' any)" --linger 2) || fail "a4-a6: no result"
expect "$out" '"type":"result","id":"a6".*"status":"ok"' "a6 ran"
absent "$out" '"id":"a6".*"worker"' "a6 waited locally at the cap"
expect "$out" '"type":"result","id":"a5".*"worker":"w1"' "a5 forwarded"

echo "== refusals: bad placement, kb capability, duplicate id, the client's cap, max_payload"
out=$(gw "$(run_json p1 'echo x' remote)") || fail "p1: no result"
expect "$out" '"status":"rejected".*"code":"bad_request".*placement: must be one of local|cluster|any' p1
out=$(gw "$(run_json k1 'echo x' cluster ',"capabilities":["kb:read"]')") || fail "k1: no result"
expect "$out" '"status":"rejected".*"code":"capability_denied".*knowledge-base' k1
[ -z "$(cid_of k1)" ] || fail "k1 was forwarded"
out=$(gw "$(run_json d1 'sleep 1' cluster)" --second "$(run_json d1 'echo dup' local)" \
  --second "$(run_json d1 'echo dup' cluster)") || fail "d1: no result"
[ "$(lines_of "$out" '"type":"error","id":"d1","code":"duplicate_id"')" = 2 ] ||
  fail "d1: local and cluster after cluster are not both duplicate_id: $out"
[ "$(lines_of "$out" '"type":"result"')" = 1 ] || fail "d1: not exactly one result: $out"
out=$(gw "$(run_json d2 'sleep 1' local)" --second "$(run_json d2 'echo dup' cluster)") ||
  fail "d2: no result"
expect "$out" '"type":"error","id":"d2","code":"duplicate_id"' "d2 cluster after local"
[ -z "$(cid_of d2)" ] || fail "d2 was forwarded"
out=$(gw "$(run_json q1 'sleep 1' cluster)" --second "$(run_json q2 'sleep 1' cluster)" \
  --second "$(run_json q3 'echo over' cluster)") || fail "q1: no result"
expect "$out" '"type":"result","id":"q3".*"code":"queue_full".*max_concurrent is 2' "q3 over the cap"
expect "$out" '"type":"accepted","id":"q2"' "q2 under the cap"
[ -z "$(cid_of q3)" ] || fail "q3 was forwarded"
# The queue position: with the worker stopped (no pull request open after
# its 10 ms expiry), the second job has one ahead of it in the stream.
kill -STOP "${dpid[w1]}"; sleep 0.1
gw "$(run_json p1 'echo first' cluster)" --second "$(run_json p2 'echo second' cluster)" \
  --linger 1 >"$tmp/p.out" &
cpid=$!
for i in $(seq 100); do grep -q '"accepted","id":"p2"' "$tmp/p.out" && break; sleep 0.02; done
kill -CONT "${dpid[w1]}"
wait "$cpid" || fail "p1: no result: $(cat "$tmp/p.out")"
out=$(cat "$tmp/p.out")
expect "$out" '"type":"accepted","id":"p1","queue_position":0' "p1 first in the stream"
expect "$out" '"type":"accepted","id":"p2","queue_position":1' "p2 behind p1"
big=$(head -c 70000 /dev/zero | tr '\0' 'x')
out=$(gw "$(run_json b1 "echo $big" cluster)") || fail "b1: no result"
expect "$out" '"status":"rejected".*"code":"bad_request".*max_payload of 65536 bytes' b1
out=$(gw "$(run_json b2 "echo $big | wc -c" local)") || fail "b2: no result"
expect "$out" '"status":"ok"' "b2: the same job runs locally"
wait_metric gw gateway.refused.queue_full 1 # q3
wait_metric gw gateway.refused.bad_request 1 # b1
wait_metric gw gateway.refused.cluster_unavailable 0
m=$("$ctl" --socket "$tmp/gw/s.sock" metrics) || fail "phoenixctl metrics of the gateway"
expect "$m" $'\nphoenix_executor_cluster_forward_refused_total{code="queue_full"} 1\n' "Prometheus text"

echo "== cancel: by the client, and by its disconnect (on_disconnect cancel)"
out=$(gw "$(run_json x1 'sleep 20' cluster)" --cancel-after-started) || fail "x1: no result"
expect "$out" '"type":"result","id":"x1".*"status":"cancelled"' x1
expect "$out" '"worker":"w1"' "x1 cancelled on the worker"
gw "$(run_json x2 'sleep 20' cluster)" --until started >/dev/null || fail "x2 not started"
cid=$(cid_of x2)
r=$(sub result "$cid" -w 10000) || fail "x2 ($cid): no result after the disconnect"
expect "$r" '"status":"cancelled"' "x2 cancelled after its client left"

echo "== the gateway's connection dropped while the result came: found in PX_RESULTS, relayed once"
gw "$(run_json r1 'sleep 4; echo after-the-drop' cluster)" --linger 1 >"$tmp/r1.out" &
cpid=$!
for i in $(seq 200); do grep -q '"started"' "$tmp/r1.out" && break; sleep 0.05; done
grep -q '"started"' "$tmp/r1.out" || fail "r1 not started: $(cat "$tmp/r1.out")"
kill -STOP "${dpid[gw]}" # no pongs: the server drops its connection
for i in $(seq 100); do grep -q "Stale Client Connection" "$tmp/nats.log" && break; sleep 0.05; done
grep -q "Stale Client Connection" "$tmp/nats.log" || { kill -CONT "${dpid[gw]}"; fail "r1: the server kept the stopped gateway"; }
cid=$(cid_of r1)
sub result "$cid" -w 10000 >/dev/null || { kill -CONT "${dpid[gw]}"; fail "r1 ($cid): no result stored"; }
kill -CONT "${dpid[gw]}"
wait "$cpid" || fail "r1: no result relayed: $(cat "$tmp/r1.out")"
out=$(cat "$tmp/r1.out")
expect "$out" '"type":"result","id":"r1".*"status":"ok".*after-the-drop' r1
[ "$(lines_of "$out" '"type":"result"')" = 1 ] || fail "r1: not exactly one result: $out"
grep -q "the result of $cid found in PX_RESULTS" "$tmp/gw/daemon.log" || fail "r1: not from PX_RESULTS"
wait_metric gw gateway.results_recovered 1
[ "$(metric gw gateway.reconnects)" -ge 1 ] || fail "gateway reconnects: $(metric gw gateway.reconnects)"

echo "== NATS stopped: cluster_unavailable; back: forwarded again"
ready_gw=$(grep -c "gateway of pool" "$tmp/gw/daemon.log")
ready_w1=$(grep -c "consumers of pool" "$tmp/w1/daemon.log")
kill "$nats_pid"; wait "$nats_pid" 2>/dev/null; nats_pid=
for i in $(seq 100); do
  grep -q "disconnected from NATS" "$tmp/gw/daemon.log" && break; sleep 0.05
done
out=$(gw "$(run_json u1 'echo x' cluster)") || fail "u1: no result"
expect "$out" '"status":"rejected".*"code":"cluster_unavailable"' u1
wait_metric gw gateway.refused.cluster_unavailable 1
[ "$(metric gw gateway.connected)" = false ] || fail "metrics: the gateway connected while NATS is down"
[ "$(lines_of "$out" '"type":"result"')" = 1 ] || fail "u1: not exactly one result: $out"
out=$(gw "$(run_json u2 'echo still-local' any)") || fail "u2: no result"
expect "$out" '"status":"ok"' "u2: any runs locally with a free slot"
start_nats
for i in $(seq 200); do
  [ "$(grep -c "gateway of pool" "$tmp/gw/daemon.log")" -gt "$ready_gw" ] &&
    [ "$(grep -c "consumers of pool" "$tmp/w1/daemon.log")" -gt "$ready_w1" ] && break
  sleep 0.05
done
out=$(gw "$(run_json u3 'echo back' cluster)") || fail "u3: no result"
expect "$out" '"type":"result","id":"u3".*"status":"ok".*"worker":"w1"' "u3 after NATS came back"

echo "== placement cluster or any on a daemon without a gateway (worker mode): refused typed"
out=$(python3 "$client" "$tmp/w1/s.sock" "$(run_json m1 'echo x' cluster)") || fail "m1: no result"
expect "$out" '"status":"rejected".*"code":"cluster_unavailable".*cluster.mode' m1
out=$(python3 "$client" "$tmp/w1/s.sock" "$(run_json m2 'echo x' any)") || fail "m2: no result"
expect "$out" '"status":"rejected".*"code":"cluster_unavailable".*placement .*any.* needs cluster.mode' m2

echo "== the gateway stops with a job in flight: its client gets aborted"
gw "$(run_json s1 'sleep 20' cluster)" >"$tmp/s1.out" &
cpid=$!
for i in $(seq 200); do grep -q '"started"' "$tmp/s1.out" && break; sleep 0.05; done
grep -q '"started"' "$tmp/s1.out" || fail "s1 not started: $(cat "$tmp/s1.out")"
kill -TERM "${dpid[gw]}"; wait "${dpid[gw]}"; rc=$?; unset "dpid[gw]"
[ "$rc" = 0 ] || fail "the gateway stopped with $rc"
wait "$cpid" || fail "s1: no result: $(cat "$tmp/s1.out")"
expect "$(cat "$tmp/s1.out")" '"type":"result","id":"s1".*"status":"aborted"' s1
cid=$(cid_of s1)
r=$(sub result "$cid" -w 10000) || fail "s1 ($cid): no result on the worker"
expect "$r" '"status":"cancelled"' "s1 cancelled on the worker"

echo "== mode both: one daemon, gateway and worker of its own pool"
start_daemon bo both "consumers of pool" '' solo
for i in $(seq 100); do grep -q "gateway of pool" "$tmp/bo/daemon.log" && break; sleep 0.05; done
out=$(python3 "$client" "$tmp/bo/s.sock" "$(run_json o1 'echo both-marker' cluster)") || fail "o1: no result"
expect "$out" '"type":"result","id":"o1".*"status":"ok".*both-marker.*"worker":"bo"' "o1 ran on itself"
st=$(status_cluster "$tmp/bo/s.sock") || fail "status of bo"
expect "$st" '"mode":"both","connected":true,"pool":"solo"' "mode both status.cluster"
wait_metric bo gateway.forwarded 1
wait_metric bo worker.jobs_taken 1
ws=$(workers bo) || fail "cluster status of bo"
expect "$ws" '^bo solo 1 ' "bo lists itself"

echo "== every daemon stops with 0 (under ASan: no leak, no error)"
for n in "${!dpid[@]}"; do
  kill -TERM "${dpid[$n]}"; wait "${dpid[$n]}"; rc=$?; unset "dpid[$n]"
  [ "$rc" = 0 ] || fail "daemon $n stopped with $rc"
done

echo "PASS: cluster gateway"
