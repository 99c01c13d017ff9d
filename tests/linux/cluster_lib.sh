# cluster_lib.sh - what the single-server cluster tests share
# (cluster_test.sh, cluster_gateway_test.sh; sourced, not run): the skip
# rules, a scratch directory, the cleanup of daemons, nats-server and the
# job mounts a dead daemon leaves, the failure report with the logs, a
# free loopback port for nats-server and the submitter on it.
#
#   cl_init PREFIX FILE...   SKIP (77) without root or nats-server, FAIL
#                            without a built FILE; sets tmp (mode 755),
#                            port, url; the cleanup runs at exit
#   cl_wait_nats             wait (5 s) until nats-server listens on $port
#   fail MESSAGE             print it and every log's tail ($CL_TAIL lines,
#                            default 30), exit 1
#   sub ARGS...              px_cl_submit on $url ($sub_bin)
#   expect TEXT PATTERN WHAT fail unless TEXT matches PATTERN
#   jpath PATH               the JSON on stdin at PATH (a.b.0.c), compact
#   metric DAEMON PATH       metrics.cluster.PATH of daemon DAEMON ($tmp/DAEMON/s.sock)
#   wait_metric DAEMON PATH N   until that is N (5 s), else fail
#   workers DAEMON           its `phoenixctl cluster status --json`, one worker
#                            a line: name pool slots in_flight free
#                            attestation accepting version heartbeat_ms stale
# The test keeps its daemons' pids in dpid[NAME] and nats-server's in
# nats_pid.
nats_pid=
declare -A dpid

cl_cleanup() {
  local n
  for n in "${!dpid[@]}"; do
    kill -TERM "${dpid[$n]}" 2>/dev/null && wait "${dpid[$n]}" 2>/dev/null
  done
  [ -n "$nats_pid" ] && kill "$nats_pid" 2>/dev/null && wait "$nats_pid" 2>/dev/null
  # A daemon that died (a failed run) leaves its job directories mounted.
  findmnt -rn -o TARGET | grep "^$tmp/" | sort -r | xargs -r -n1 umount -l
  rm -rf "$tmp"
}

cl_init() { # cl_init PREFIX FILE...
  local prefix=$1 f
  shift
  [ "$(id -u)" = 0 ] || { echo "SKIP: the daemon's sandbox needs root"; exit 77; }
  command -v nats-server >/dev/null ||
    { echo "SKIP: nats-server is not installed (tools/setup.sh installs it)"; exit 77; }
  for f in "$@"; do
    [ -x "$f" ] || { echo "FAIL: $f is not built"; exit 1; }
  done
  tmp=$(mktemp -d "/tmp/$prefix.XXXXXX")
  chmod 755 "$tmp"
  trap cl_cleanup EXIT
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  url=nats://127.0.0.1:$port
}

fail() {
  local f
  echo "FAIL: $*"
  for f in "$tmp"/*/daemon.log "$tmp/nats.log"; do
    [ -f "$f" ] && { echo "--- $f (tail)"; tail -"${CL_TAIL:-30}" "$f"; }
  done
  exit 1
}

cl_wait_nats() {
  local i
  for i in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.05
  done
  fail "nats-server did not listen on $port"
}

sub() { "$sub_bin" -s "$url" "$@"; }

expect() { # expect TEXT PATTERN WHAT
  printf '%s' "$1" | grep -q -- "$2" || fail "$3: no $2 in: ${1:0:900}"
}

# cl_ready NAME PATTERN: daemon NAME ($dpid, log $tmp/NAME/daemon.log)
# logged PATTERN within 15 s, and did not die first.
cl_ready() {
  local n=$1 i
  for i in $(seq 300); do
    grep -q -- "$2" "$tmp/$n/daemon.log" && return 0
    kill -0 "${dpid[$n]}" 2>/dev/null || fail "daemon $n died at start"
    sleep 0.05
  done
  fail "daemon $n not ready: no \"$2\" in its log"
}

# cl_exited NAME RC WHY: daemon NAME ($dpid) gone within 15 s with exit
# status RC; WHY names what a daemon still running means.
cl_exited() {
  local n=$1 want=$2 i rc
  for i in $(seq 300); do kill -0 "${dpid[$n]}" 2>/dev/null || break; sleep 0.05; done
  kill -0 "${dpid[$n]}" 2>/dev/null && fail "daemon $n still runs after 15 s: $3"
  wait "${dpid[$n]}"
  rc=$?
  unset "dpid[$n]"
  [ "$rc" = "$want" ] || fail "daemon $n exited $rc, expected $want"
}
cl_stop() { # cl_stop NAME: SIGTERM to daemon NAME, exit 0
  kill -TERM "${dpid[$1]}"
  cl_exited "$1" 0 "SIGTERM did not stop it"
}

jpath() {
  python3 -c 'import json,sys
v=json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v=v[int(k)] if isinstance(v,list) else v.get(k)
print(json.dumps(v,separators=(",",":")))' "$1"
}

metric() { "$ctl" --socket "$tmp/$1/s.sock" metrics --json | jpath "cluster.$2"; }

wait_metric() { # wait_metric DAEMON PATH N
  local i v
  for i in $(seq 100); do
    v=$(metric "$1" "$2")
    [ "$v" = "$3" ] && return 0
    sleep 0.05
  done
  fail "$1: metrics.cluster.$2 is $v, expected $3"
}

workers() {
  "$ctl" --socket "$tmp/$1/s.sock" cluster status --json | python3 -c 'import json,sys
for w in json.load(sys.stdin)["workers"]:
    print(" ".join(json.dumps(w[k]).strip("\"") for k in ("name","pool","slots","in_flight",
          "free","attestation","accepting","version","heartbeat_ms","stale")))'
}
