#!/usr/bin/env bash
# cluster_test.sh BUILD_DIR - the cluster worker (service/cluster/,
# docs/cluster-protocol.md) against a real nats-server with JetStream on a
# free loopback port and a temporary store, with real phoenix-executor
# daemons in worker mode (root: the sandbox) and px_cl_submit as the
# submitter. No mocks. ctest: linux.cluster (SKIP 77 without nats-server
# or root). Each case prints what it checks; the first failure stops the
# script with the daemons' logs.
set -u
build=${1:?usage: cluster_test.sh BUILD_DIR}
exe=$build/service/phoenix-executor
ctl=$build/tools/phoenixctl
sub_bin=$build/tests/px_cl_submit
hide_landlock=$build/tests/px_hide_landlock

. "$(dirname "$0")/cluster_lib.sh"
CL_TAIL=25
cl_init px-cluster "$exe" "$ctl" "$sub_bin" "$hide_landlock"

start_nats() { # start_nats [STORE]
  # --name px-nats-...: tools/leftovers.py finds it if it outlives a run
  nats-server -js -a 127.0.0.1 -p "$port" -sd "$tmp/${1:-js}" --name "px-nats-cltest-$$" \
    >>"$tmp/nats.log" 2>&1 &
  nats_pid=$!
  cl_wait_nats
}

# start_worker NAME CLUSTER_JSON [CLIENTS_JSON]: a daemon of its own (socket,
# work root, log) whose cluster block is CLUSTER_JSON merged over worker
# mode on $url; ready once its streams, buckets and consumers are.
cluster_client='{"name":"farm","match":{"cluster":true},"capabilities":["*"],"max_priority":"high"}'
start_worker() {
  local n=$1 extra=$2 clients=${3-$cluster_client} d=$tmp/$1
  mkdir -p "$d/jobs"
  cat >"$d/executor.json" <<JSON
{"transports":{"socket_path":"$d/s.sock","socket_group":"nogroup"},
 "work_root":"$d/jobs",
 "clients":[{"name":"root","match":{"unix_uid":0},"capabilities":["*"],"admin":true}${clients:+,$clients}],
 "cluster":$(python3 -c 'import json,sys; c={"mode":"worker","servers":[sys.argv[1]],"name":sys.argv[2],"ack_wait_ms":1500,"heartbeat_ms":250}; c.update(json.loads(sys.argv[3])); print(json.dumps(c))' "$url" "$n" "$extra")}
JSON
  ${WRAP:+"$WRAP"} "$exe" --config "$d/executor.json" --log-level debug >"$d/daemon.log" 2>&1 &
  dpid[$n]=$!
  cl_ready "$n" "consumers of pool"
}

job() { # job FILE ID CODE [EXTRA_JSON_MEMBERS]
  printf '{"type":"run","id":"%s","runtime":"sh","code":"%s"%s}\n' "$2" "$3" "${4-}" >"$tmp/$1"
}
count_is() { # count_is ID N
  local c
  c=$(sub count "$1") || fail "count $1"
  [ "$c" = "$2" ] || fail "$1: $c results stored, expected $2"
}
status_cluster() { # status.cluster of the daemon at socket $1, compact
  "$ctl" --socket "$1" status --json |
    python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("cluster"), separators=(",",":")))'
}
taken() { grep -c "cluster: job $2 taken" "$tmp/$1/daemon.log"; }

start_nats

echo "== verdicts: ok, nonzero_exit, wall-time kill; events; status.cluster"
start_worker w1 '{"slots":2}'
job ok.json ok1 'echo cluster-ok-marker'
r=$(sub run ok1 "$tmp/ok.json" -w 20000 2>"$tmp/ok.err") || fail "ok1: no result"
expect "$r" '"status":"ok"' ok1
expect "$r" 'cluster-ok-marker' ok1
expect "$r" '"worker":"w1"' ok1
expect "$(cat "$tmp/ok.err")" 'events: started=1' "ok1 events"
job nz.json nz1 'exit 3'
r=$(sub run nz1 "$tmp/nz.json" -w 20000 2>/dev/null) || fail "nz1: no result"
expect "$r" '"status":"nonzero_exit","exit_code":3' nz1
job wall.json wall1 'sleep 20' ',"limits":{"wall_ms":300}'
r=$(sub run wall1 "$tmp/wall.json" -w 20000 2>/dev/null) || fail "wall1: no result"
expect "$r" '"status":"killed"' wall1
expect "$r" '"limit":"wall_time"' wall1
for id in ok1 nz1 wall1; do count_is $id 1; done
st=$(status_cluster "$tmp/w1/s.sock") || fail "status"
expect "$st" '{"mode":"worker","connected":true,"pool":"linux-x64","pending":0,"in_flight":0}' status
hb=$(sub node w1) || fail "no heartbeat of w1 in PX_NODES"
expect "$hb" '"pool":"linux-x64","slots":2,"running":0,"attestation":"' heartbeat
printf '%s' "$hb" | grep -Eq '"attestation":"(enforced|degraded)","ts_ms":[0-9]+' ||
  fail "heartbeat: $hb"
expect "$hb" '"heartbeat_ms":250,"accepting":true,"version":"' heartbeat
st=$("$ctl" --socket "$tmp/w1/s.sock" status) || fail "phoenixctl status"
expect "$st" 'cluster      worker, pool linux-x64, connected, 0 pending, 0 in flight' "phoenixctl status"

echo "== metrics.cluster counts the worker's jobs; phoenixctl cluster status lists it"
wait_metric w1 worker.jobs_taken 3
wait_metric w1 worker.results_published 3
[ "$(metric w1 worker.connected)" = true ] || fail "metrics: w1 not connected"
m=$("$ctl" --socket "$tmp/w1/s.sock" metrics) || fail "phoenixctl metrics"
expect "$m" $'\nphoenix_executor_cluster_jobs_taken_total 3\n' "Prometheus text"
expect "$m" $'\nphoenix_executor_cluster_worker_connected 1\n' "Prometheus text"
promtool=$(command -v promtool || echo "${XDG_CACHE_HOME:-$HOME/.cache}/phoenix-executor/bin/promtool")
if [ -x "$promtool" ]; then # the linter tests/agents/promtool.sh uses
  out=$(printf '%s\n' "$m" | "$promtool" check metrics 2>&1) || fail "promtool check metrics: $out"
else
  echo "(promtool absent: the cluster metrics' text is not linted)"
fi
ver=$("$ctl" --socket "$tmp/w1/s.sock" status --json | jpath version | tr -d '"')
ws=$(workers w1) || fail "cluster status"
printf '%s\n' "$ws" | grep -Eqx "w1 linux-x64 2 0 2 (enforced|degraded) true $ver 250 false" ||
  fail "cluster status of w1 (version $ver): $ws"
t=$("$ctl" --socket "$tmp/w1/s.sock" cluster status) || fail "phoenixctl cluster status"
expect "$t" 'this executor: worker, pool linux-x64, connected' "cluster status table"
expect "$t" '1 worker, 0 stale' "cluster status table"

echo "== scram: a paused worker fetches nothing until resume"
"$ctl" --socket "$tmp/w1/s.sock" scram >/dev/null || fail "scram"
job sc.json sc1 'echo after-resume'
sub publish sc1 "$tmp/sc.json" 2>/dev/null || fail "publish sc1"
sleep 1
c=$(sub consumer linux-x64 normal) || fail "consumer info"
# Waiting in the stream, or (rarely) delivered to a pull request that
# expired on the worker's side just as the scram came: libnats keeps that
# copy unread until the next pull, which a paused worker does not make.
# Either way it is not run while paused.
case "$c" in
  *'ack_pending=0 pending=1'*) # status.cluster.pending counts it (read every 2 s)
    for i in $(seq 40); do
      st=$(status_cluster "$tmp/w1/s.sock") || fail "status while paused"
      case $st in *'"pending":1,'*) break ;; esac
      sleep 0.1
    done
    expect "$st" '"pending":1,' "status.cluster.pending with sc1 waiting" ;;
  *'ack_pending=1 pending=0'*) ;;
  *) fail "sc1 waits in the stream while paused: $c" ;;
esac
if sub result sc1 -w 300 >/dev/null 2>&1; then fail "sc1 was answered while paused"; fi
"$ctl" --socket "$tmp/w1/s.sock" resume >/dev/null || fail "resume"
r=$(sub result sc1 -w 20000) || fail "sc1: no result after resume"
expect "$r" '"status":"ok"' sc1

echo "== duplicate submission runs once"
job dup.json dup1 'echo dup-run'
sub publish dup1 "$tmp/dup.json" 2>/dev/null || fail "publish dup1"
out=$(sub publish dup1 "$tmp/dup.json" 2>&1) || fail "publish dup1 again"
expect "$out" duplicate "second publish, same Nats-Msg-Id"
# The same job id under another message id: reaches a worker, which finds
# the PX_STARTED marker and answers executor_lost, which the results
# stream drops (the first result is in).
sub publish dup1 "$tmp/dup.json" -m dup1-other 2>/dev/null || fail "publish dup1 other"
r=$(sub result dup1 -w 20000) || fail "dup1: no result"
expect "$r" '"status":"ok"' dup1
for i in $(seq 100); do
  grep -q "job dup1: the stream already had a result" "$tmp/w1/daemon.log" && break
  sleep 0.1
done
grep -q "job dup1 was started before" "$tmp/w1/daemon.log" || fail "dup1: the marker was not seen"
[ "$(taken w1 dup1)" = 1 ] || fail "dup1 ran $(taken w1 dup1) times"
count_is dup1 1
r=$(sub result dup1) && expect "$r" '"status":"ok"' "dup1 after the repeat"
# retry: "idempotent" is the exception: run again, still one result.
job idem.json idem1 'echo idem' ',"retry":"idempotent","submitter":"tester-7"'
sub publish idem1 "$tmp/idem.json" 2>/dev/null || fail "publish idem1"
r=$(sub result idem1 -w 20000) || fail "idem1: no result"
expect "$r" '"submitter":"tester-7"' "idem1 submitter echoed"
sub publish idem1 "$tmp/idem.json" -m idem1-other 2>/dev/null || fail "publish idem1 other"
for i in $(seq 100); do [ "$(taken w1 idem1)" = 2 ] && break; sleep 0.1; done
[ "$(taken w1 idem1)" = 2 ] || fail "idem1 ran $(taken w1 idem1) times, expected 2"
sleep 0.5
count_is idem1 1

echo "== malformed messages: terminated, answered with an error result"
printf 'not json at all' >"$tmp/bad.json"
sub publish bad "$tmp/bad.json" -n 2>/dev/null || fail "publish bad"
r=$(sub result _invalid -w 20000) || fail "bad: no error result"
expect "$r" '"status":"error"' bad
expect "$r" '"code":"bad_json"' bad
printf '{"type":"run","id":"bad2","code":"echo x"}' >"$tmp/bad2.json"
sub publish bad2 "$tmp/bad2.json" 2>/dev/null || fail "publish bad2"
r=$(sub result bad2 -w 20000) || fail "bad2: no error result"
expect "$r" '"code":"bad_request"' bad2
expect "$r" 'runtime' bad2
sleep 2.5 # > ack_wait: a message not terminated would be redelivered by now
c=$(sub consumer linux-x64 normal) || fail "consumer info"
expect "$c" 'ack_pending=0 pending=0 redelivered=0' "terminated, not redelivered"
printf '{"type":"run","id":"bad3","runtime":"sh","code":"echo x","retry":"always"}' >"$tmp/bad3.json"
sub publish bad3 "$tmp/bad3.json" 2>/dev/null || fail "publish bad3"
r=$(sub result bad3 -w 20000) || fail "bad3: no error result"
expect "$r" '"code":"bad_request","message":"retry' bad3
printf '{"type":"ping","id":"bad4"}' >"$tmp/bad4.json"
sub publish bad4 "$tmp/bad4.json" 2>/dev/null || fail "publish bad4"
r=$(sub result bad4 -w 20000) || fail "bad4: no error result"
expect "$r" '"code":"bad_request","message":"type' bad4
printf '{"type":"run","id":"no spaces","runtime":"sh","code":"echo x"}' >"$tmp/bad5.json"
sub publish bad5 "$tmp/bad5.json" 2>/dev/null || fail "publish bad5"
sleep 0.5
count_is _invalid 2 # "not json at all" and the id with a space
count_is bad2 1
wait_metric w1 worker.invalid_terminated 5 # bad, bad2 .. bad5
wait_metric w1 worker.executor_lost 1      # dup1's second message
wait_metric w1 worker.results_duplicate 2  # that answer, idem1's second run

echo "== a KB capability is refused for cluster jobs"
job kb.json kb1 'echo kb' ',"capabilities":["kb:read"]'
sub publish kb1 "$tmp/kb.json" 2>/dev/null || fail "publish kb1"
r=$(sub result kb1 -w 20000) || fail "kb1: no result"
expect "$r" '"status":"rejected"' kb1
expect "$r" '"code":"capability_denied"' kb1
expect "$r" 'knowledge-base' kb1

echo "== cancel subject"
job can.json can1 'sleep 20'
sub publish can1 "$tmp/can.json" 2>/dev/null || fail "publish can1"
sub started can1 -w 20000 >/dev/null || fail "can1 not started"
sub cancel can1 || fail "cancel can1"
r=$(sub result can1 -w 10000) || fail "can1: no result"
expect "$r" '"status":"cancelled"' can1

echo "== a worker killed mid-job: executor_lost once, the other worker goes on"
start_worker w2 '{"slots":1}'
job lost.json lost1 'sleep 30'
sub publish lost1 "$tmp/lost.json" 2>/dev/null || fail "publish lost1"
who=$(sub started lost1 -w 20000) || fail "lost1 not started"
case $who in w1) other=w2 ;; w2) other=w1 ;; *) fail "lost1 started by '$who'" ;; esac
sleep 0.3 # running in the sandbox now
# Both listed by the other, $who with lost1 in flight (its next heartbeat).
for i in $(seq 40); do
  ws=$(workers "$other") || fail "cluster status of $other"
  printf '%s\n' "$ws" | grep -Eq "^$who linux-x64 [12] 1 [01] .* false$" && break
  sleep 0.05
done
printf '%s\n' "$ws" | grep -Eq "^$who linux-x64 [12] 1 [01] .* false$" ||
  fail "cluster status: $who with 1 in flight, not stale: $ws"
printf '%s\n' "$ws" | grep -Eq "^$other linux-x64 .* false$" || fail "cluster status: $other: $ws"
lost_before=$(metric "$other" worker.executor_lost)
kill -0 "${dpid[$who]}" 2>/dev/null || fail "worker $who died before the kill"
kill -KILL "${dpid[$who]}"
wait "${dpid[$who]}" 2>/dev/null
unset "dpid[$who]"
# No heartbeat for three of its periods (750 ms): stale, still listed. The
# wait is by the clock (each look takes a while under load): stale within
# 3 s of the kill, not merely at some point.
until=$((${EPOCHREALTIME/./} / 1000 + 3000))
while :; do
  ws=$(workers "$other") || fail "cluster status of $other"
  printf '%s\n' "$ws" | grep -Eq "^$who .* true$" && break
  [ $((${EPOCHREALTIME/./} / 1000)) -lt $until ] || break
  sleep 0.05
done
printf '%s\n' "$ws" | grep -Eq "^$who .* true$" || fail "cluster status: the killed $who is not stale 3 s after: $ws"
printf '%s\n' "$ws" | grep -Eq "^$other .* false$" || fail "cluster status: $other stale too: $ws"
t=$("$ctl" --socket "$tmp/$other/s.sock" cluster status) || fail "phoenixctl cluster status"
printf '%s\n' "$t" | grep -Eq "^$who .*  STALE$" || fail "cluster status table: $who not STALE: $t"
expect "$t" '2 workers, 1 stale' "cluster status table"
r=$(sub result lost1 -w 30000) || fail "lost1: no result after the kill"
expect "$r" '"code":"executor_lost"' lost1
expect "$r" "\"worker\":\"$other\"" lost1
wait_metric "$other" worker.executor_lost $((lost_before + 1))
job after.json after1 'echo after-kill'
sub publish after1 "$tmp/after.json" 2>/dev/null || fail "publish after1"
r=$(sub result after1 -w 20000) || fail "after1: no result"
expect "$r" '"status":"ok"' after1
expect "$r" "\"worker\":\"$other\"" after1
sleep 2 # another ack wait: no second answer for lost1
count_is lost1 1
# The killed daemon, started again, recovers (kills) its orphaned job.
start_worker "$who" '{"slots":1}'
grep -q "recovered 1 leftover job" "$tmp/$who/daemon.log" ||
  fail "$who: the orphaned job of the killed daemon was not recovered"
# Its heartbeat again: not stale any more (the control of the stale mark).
for i in $(seq 60); do
  ws=$(workers "$other") || fail "cluster status of $other"
  printf '%s\n' "$ws" | grep -Eq "^$who .* false$" && break
  sleep 0.05
done
printf '%s\n' "$ws" | grep -Eq "^$who .* false$" || fail "cluster status: restarted $who still stale: $ws"

echo "== a marker written though its create was not answered: the job runs, once"
# (An election after a node's death can store the create and lose its
# answer. Read back, the marker holds this take's value: the job is the
# worker's own. Before, it counted as started by another worker: left
# unacked, answered executor_lost after the ack wait, never run.)
PX_TEST_FAULTS=cluster.marker_answer_lost:1:1 start_worker w6 '{"slots":1,"pool":"lostpool"}'
grep -q "test fault armed: cluster.marker_answer_lost" "$tmp/w6/daemon.log" ||
  fail "w6: the test fault was not armed (a build without PX_TEST_SEAMS?)"
job ml.json ml1 'echo marker-lost-ran'
r=$(sub run ml1 "$tmp/ml.json" -p lostpool -w 20000 2>/dev/null) || fail "ml1: no result"
expect "$r" '"status":"ok"' ml1
expect "$r" 'marker-lost-ran' ml1
grep -q "job ml1: PX_STARTED written by this take" "$tmp/w6/daemon.log" ||
  fail "ml1: the lost answer was not the path taken"
[ "$(sub started ml1)" = w6 ] || fail "ml1: PX_STARTED does not name w6"
sleep 2 # past the ack wait: no redelivery answers it again
count_is ml1 1
[ "$(taken w6 ml1)" = 1 ] || fail "ml1 ran $(taken w6 ml1) times"

echo "== a live worker's job redelivered: its marker is fresh, the copy is left alone, one result"
# (A consumer whose leader changed redelivers jobs still being run; here
# w7's InProgress is left out by a test fault, so the server redelivers
# its job after each ack wait (1.5 s) while w7 still runs it and renews
# its marker. w8 gets the copies: it must leave them to w7, not answer
# executor_lost, which would have the stream drop w7's real result.)
PX_TEST_FAULTS=cluster.in_progress_skipped:0:1 start_worker w7 '{"slots":1,"pool":"leasepool"}'
job lease.json lease1 'sleep 4; echo lease-ran'
sub publish lease1 "$tmp/lease.json" -p leasepool 2>/dev/null || fail "publish lease1"
[ "$(sub started lease1 -w 20000)" = w7 ] || fail "lease1 was not started by w7"
start_worker w8 '{"slots":1,"pool":"leasepool"}'
r=$(sub result lease1 -w 20000) || fail "lease1: no result"
expect "$r" '"status":"ok"' lease1
expect "$r" 'lease-ran' lease1
expect "$r" '"worker":"w7"' lease1
grep -q "job lease1: redelivered while its worker still holds it" "$tmp/w8/daemon.log" ||
  fail "lease1 was never redelivered to w8: the case was not tested"
grep -q "job lease1 taken" "$tmp/w8/daemon.log" && fail "w8 ran lease1 too"
count_is lease1 1
cl_stop w7
cl_stop w8

echo "== no {\"cluster\": true} client: cluster jobs are refused by policy"
start_worker w3 '{"pool":"nopolicy"}' ''
job np.json np1 'echo np'
sub publish np1 "$tmp/np.json" -p nopolicy 2>/dev/null || fail "publish np1"
r=$(sub result np1 -w 20000) || fail "np1: no result"
expect "$r" '"code":"forbidden"' np1

echo "== a worker whose attestation failed takes no jobs"
if [ "$(python3 -c 'import ctypes,sys; print(ctypes.CDLL(None).syscall(444, None, 0, 1) > 0)')" = True ]; then
  WRAP=$hide_landlock start_worker w4 '{"pool":"noattest"}'
  for i in $(seq 40); do grep -q "takes no cluster jobs" "$tmp/w4/daemon.log" && break; sleep 0.05; done
  grep -q "takes no cluster jobs" "$tmp/w4/daemon.log" || fail "w4: no refusal logged"
  job na.json na1 'echo should-not-run'
  sub publish na1 "$tmp/na.json" -p noattest 2>/dev/null || fail "publish na1"
  sleep 2
  sub result na1 -w 1 >/dev/null 2>&1 && fail "na1 was answered by a worker whose attestation failed"
  c=$(sub consumer noattest normal) || fail "consumer noattest"
  expect "$c" 'ack_pending=0 pending=1' "na1 still waiting in the stream"
  grep -q "job na1 taken" "$tmp/w4/daemon.log" && fail "w4 took na1"
  # The control: a healthy worker of that pool takes it.
  start_worker w5 '{"pool":"noattest"}'
  r=$(sub result na1 -w 20000) || fail "na1: no result from the healthy worker"
  expect "$r" '"worker":"w5"' na1
else
  echo "SKIP (this case): the kernel has no Landlock, nothing to hide"
fi

echo "== NATS down and back with an empty store: the workers reconnect and set up again"
kill "$nats_pid"; wait "$nats_pid" 2>/dev/null
for i in $(seq 100); do
  grep -q "disconnected from NATS" "$tmp/w3/daemon.log" && break; sleep 0.05
done
st=$(status_cluster "$tmp/w3/s.sock") || fail "status while down"
expect "$st" '"connected":false' "status while NATS is down"
st=$("$ctl" --socket "$tmp/w3/s.sock" status) || fail "phoenixctl status while down"
expect "$st" 'DISCONNECTED (reconnecting)' "phoenixctl status while NATS is down"
"$ctl" --socket "$tmp/w3/s.sock" cluster status >"$tmp/cs.out" 2>&1 &&
  fail "cluster status answered while NATS is down: $(cat "$tmp/cs.out")"
expect "$(cat "$tmp/cs.out")" 'phoenixctl: cluster_unavailable: ' "cluster status while NATS is down"
[ "$(metric w3 worker.connected)" = false ] || fail "metrics: w3 connected while NATS is down"
start_nats js-new # streams, consumers and buckets are gone
job re.json re1 'echo reconnected'
sub publish re1 "$tmp/re.json" 2>/dev/null || fail "publish re1"
r=$(sub result re1 -w 30000) || fail "re1: no result after the reconnect"
expect "$r" '"status":"ok"' re1
for i in $(seq 100); do
  st=$(status_cluster "$tmp/w3/s.sock") || fail "status after the restart"
  case $st in *'"connected":true'*) break ;; esac
  sleep 0.1
done
expect "$st" '"connected":true' "w3 status after the reconnect"
grep -q "connected to NATS" "$tmp/w3/daemon.log" || fail "no reconnect logged"
[ "$(metric w3 worker.reconnects)" -ge 1 ] || fail "metrics: w3 reconnects $(metric w3 worker.reconnects)"

echo "== stop: every worker exits 0 on SIGTERM"
for n in "${!dpid[@]}"; do cl_stop "$n"; done

echo "PASS: cluster worker"
