#!/usr/bin/env bash
# cluster_auth_test.sh BUILD_DIR - the cluster link's TLS and credentials
# (cluster.tls, cluster.tls_ca_file, cluster.credentials;
# service/cluster/nats_link.c) against real nats-server processes on
# loopback: one with a TLS listener (a throwaway CA and server certificate
# made here with openssl) and JetStream, one in operator mode (an operator,
# accounts and users made here by nats_creds.py; memory resolver; the
# account has JetStream) and JetStream. Real phoenix-executor daemons
# (root: the sandbox), px_cl_submit as the submitter. No mocks.
# ctest: linux.cluster_auth (SKIP 77 without root, nats-server, openssl or
# python3-cryptography). Each case prints what it checks; the first failure
# stops the script with the daemons' logs. docs/cluster.md, "TLS and
# credentials".
set -u
build=${1:?usage: cluster_auth_test.sh BUILD_DIR}
exe=$build/service/phoenix-executor
ctl=$build/tools/phoenixctl
sub_bin=$build/tests/px_cl_submit
here=$(cd "$(dirname "$0")" && pwd)

. "$here/cluster_lib.sh"
CL_TAIL=12
command -v openssl >/dev/null ||
  { echo "SKIP: openssl is not installed (tools/setup.sh installs it)"; exit 77; }
python3 -c 'import cryptography' 2>/dev/null ||
  { echo "SKIP: python3-cryptography is not installed (tools/setup.sh installs it)"; exit 77; }
cl_init px-clauth "$exe" "$ctl" "$sub_bin"
tls_port=$port
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
op_port=$port
op_pid=
trap '[ -n "$op_pid" ] && kill "$op_pid" 2>/dev/null && wait "$op_pid" 2>/dev/null; cl_cleanup' EXIT

# ---- the keys: a CA, the server's certificate (SAN IP:127.0.0.1 only),
# another CA that signed nothing of the server's; the operator's JWTs ----
pki=$tmp/pki
mkdir -m 700 "$pki"
ossl() { openssl "$@" 2>>"$pki/openssl.log" || fail "openssl $1: $(tail -3 "$pki/openssl.log")"; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -subj "/CN=px test CA" -keyout "$pki/ca.key" -out "$pki/ca.pem"
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -subj "/CN=px other CA" -keyout "$pki/other.key" -out "$pki/other.pem"
ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=px-nats" \
  -keyout "$pki/server.key" -out "$pki/server.csr"
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$pki/ext"
ossl x509 -req -in "$pki/server.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" \
  -CAcreateserial -days 1 -extfile "$pki/ext" -out "$pki/server.pem"
# The same name and key, signed by the other CA: the server "replaced".
ossl x509 -req -in "$pki/server.csr" -CA "$pki/other.pem" -CAkey "$pki/other.key" \
  -CAcreateserial -days 1 -extfile "$pki/ext" -out "$pki/server-other.pem"
printf 'not a certificate\n' >"$pki/garbage.pem"
auth=$tmp/auth
mkdir -m 700 "$auth"
python3 "$here/nats_creds.py" "$auth" || fail "nats_creds.py"
printf 'not a creds file\n' >"$auth/garbage.creds"
chmod 600 "$auth/garbage.creds"
cp "$auth/worker.creds" "$auth/open.creds"
chmod 644 "$auth/open.creds"

# ---- the servers ----
start_tls_nats() { # start_tls_nats CERT
  cat >"$tmp/tls.conf" <<CONF
listen: 127.0.0.1:$tls_port
jetstream { store_dir: "$tmp/js-tls" }
tls { cert_file: "$1", key_file: "$pki/server.key", timeout: 2 }
CONF
  nats-server -c "$tmp/tls.conf" --name "px-nats-clauth-tls-$$" >>"$tmp/nats.log" 2>&1 &
  nats_pid=$!
  port=$tls_port cl_wait_nats
}
stop_tls_nats() { kill "$nats_pid"; wait "$nats_pid" 2>/dev/null; nats_pid=; }
start_tls_nats "$pki/server.pem"
start_op_nats() { # start_op_nats SERVER_CONF
  {
    cat "$1"
    printf 'listen: 127.0.0.1:%s\njetstream { store_dir: "%s" }\n' "$op_port" "$tmp/js-op"
  } >"$tmp/op.conf"
  nats-server -c "$tmp/op.conf" --name "px-nats-clauth-op-$$" >>"$tmp/nats-op.log" 2>&1 &
  op_pid=$!
  port=$op_port cl_wait_nats
}
start_op_nats "$auth/server.conf"
tls_url=tls://127.0.0.1:$tls_port
op_url=nats://127.0.0.1:$op_port
subt() { "$sub_bin" -s "$tls_url" -t "$pki/ca.pem" "$@"; }
subo() { "$sub_bin" -s "$op_url" -c "$auth/worker.creds" "$@"; }

# start_daemon NAME CLUSTER_JSON: a daemon of its own (socket, work root,
# log) with the cluster block CLUSTER_JSON merged over worker mode; started
# in the background (wait_log waits for what it should say).
start_daemon() {
  local n=$1 extra=$2 d=$tmp/$1
  mkdir -p "$d/jobs"
  cat >"$d/executor.json" <<JSON
{"transports":{"socket_path":"$d/s.sock","socket_group":"nogroup"},
 "work_root":"$d/jobs",
 "clients":[{"name":"root","match":{"unix_uid":0},"capabilities":["*"]},
            {"name":"farm","match":{"cluster":true},"capabilities":["*"]}],
 "cluster":$(python3 -c 'import json,sys; c={"mode":"worker","name":sys.argv[1],"pool":sys.argv[1]}; c.update(json.loads(sys.argv[2])); print(json.dumps(c))' "$n" "$extra")}
JSON
  "$exe" --config "$d/executor.json" --log-level debug >"$d/daemon.log" 2>&1 &
  dpid[$n]=$!
}
wait_log() { # wait_log NAME PATTERN [TENTHS]: until the daemon's log matches
  local i
  for i in $(seq "${3:-150}"); do
    grep -q -- "$2" "$tmp/$1/daemon.log" && return 0
    sleep 0.1
  done
  fail "$1: no \"$2\" in its log"
}
exited() { # exited NAME: the daemon exited at start with 1 (not a crash, not a sanitizer's code)
  cl_exited "$1" 1 "it should have refused to start"
}
job() { # job FILE ID CODE
  printf '{"type":"run","id":"%s","runtime":"sh","code":"%s"}\n' "$2" "$3" >"$tmp/$1"
}
status_cluster() { # status.cluster of daemon NAME, compact
  "$ctl" --socket "$tmp/$1/s.sock" status --json |
    python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("cluster"), separators=(",",":")))'
}
start_daemon tls-ok "{\"servers\":[\"$tls_url\"],\"tls\":true,\"tls_ca_file\":\"$pki/ca.pem\",\"mode\":\"both\"}"
start_daemon tls-badca "{\"servers\":[\"$tls_url\"],\"tls\":true,\"tls_ca_file\":\"$pki/other.pem\"}"
start_daemon tls-off "{\"servers\":[\"nats://127.0.0.1:$tls_port\"]}"
start_daemon tls-host "{\"servers\":[\"tls://localhost:$tls_port\"],\"tls\":true,\"tls_ca_file\":\"$pki/ca.pem\"}"
start_daemon tls-plain "{\"servers\":[\"$op_url\"],\"tls\":true,\"tls_ca_file\":\"$pki/ca.pem\",\"credentials\":\"$auth/worker.creds\"}"
start_daemon tls-garbage "{\"servers\":[\"$tls_url\"],\"tls\":true,\"tls_ca_file\":\"$pki/garbage.pem\"}"
start_daemon cr-ok "{\"servers\":[\"$op_url\"],\"credentials\":\"$auth/worker.creds\",\"mode\":\"both\"}"
start_daemon cr-stranger "{\"servers\":[\"$op_url\"],\"credentials\":\"$auth/stranger.creds\"}"
start_daemon cr-none "{\"servers\":[\"$op_url\"]}"
start_daemon cr-garbage "{\"servers\":[\"$op_url\"],\"credentials\":\"$auth/garbage.creds\"}"
start_daemon cr-open "{\"servers\":[\"$op_url\"],\"credentials\":\"$auth/open.creds\"}"

# end_to_end DAEMON SUBMITTER PREFIX: daemon DAEMON (mode both) runs a job
# published with SUBMITTER (PREFIX1) and one through its own gateway
# (PREFIX2, phoenixctl run --placement cluster).
end_to_end() {
  local d=$1 submitter=$2 p=$3 r out
  wait_log "$d" "consumers of pool"
  wait_log "$d" "gateway of pool"
  job "${p}1.json" "${p}1" "echo $d-marker"
  r=$("$submitter" run "${p}1" "$tmp/${p}1.json" -p "$d" -w 20000 2>/dev/null) || fail "${p}1: no result"
  expect "$r" '"status":"ok"' "${p}1"
  expect "$r" "$d-marker" "${p}1"
  expect "$r" "\"worker\":\"$d\"" "${p}1"
  printf 'echo %s-gw-marker\n' "$d" >"$tmp/${p}2.sh"
  out=$("$ctl" --socket "$tmp/$d/s.sock" run --runtime sh --id "${p}2" --placement cluster --json \
    "$tmp/${p}2.sh") || fail "${p}2 through the gateway: $out"
  expect "$out" '"status":[[:space:]]*"ok"' "${p}2 through the gateway"
  expect "$out" "$d-gw-marker" "${p}2 through the gateway"
  grep -q "cluster: job ${p}2 forwarded as" "$tmp/$d/daemon.log" || fail "${p}2 was not forwarded"
  expect "$(status_cluster "$d")" '"connected":true' "$d status.cluster"
}

echo "== TLS: a worker and a gateway with tls + tls_ca_file run a job end to end"
end_to_end tls-ok subt t

echo "== TLS refused, the daemon does not start, its log says why: wrong CA, tls false, a host the certificate does not name, a server without TLS, a CA file that is no PEM"
refused() { # refused NAME PATTERN: exited at start, the reason logged
  exited "$1"
  expect "$(cat "$tmp/$1/daemon.log")" "$2" "$1"
  grep -q "cluster: job .* taken\|NATS connection up" "$tmp/$1/daemon.log" && fail "$1 connected"
  return 0
}
refused tls-badca "the NATS servers refused this executor: SSL Error (.*SSL handshake error: .*unable to get local issuer certificate"
refused tls-off "the NATS servers refused this executor: SSL Error (.*unable to get local issuer certificate"
refused tls-host "the NATS servers refused this executor: SSL Error (.*SSL handshake error: .*[Hh]ostname mismatch"
refused tls-plain "the NATS servers refused this executor: Secure Connection not available"
refused tls-garbage "NATS options failed: SSL Error (.*Error loading trusted certificates"

echo "== credentials: a worker and a gateway, users of the server's operator, run a job end to end"
end_to_end cr-ok subo c

echo "== credentials refused, the daemon does not start, its log says why: an unknown account's user, none, a file that is no creds"
refused cr-stranger "the NATS servers refused this executor: Authentication Violation (.*Authorization Violation"
refused cr-none "the NATS servers refused this executor: Authentication Violation (.*Authorization Violation"
refused cr-garbage "the NATS servers refused this executor: Error (.*no nkey user seed found"
grep -q "authentication error" "$tmp/nats-op.log" || fail "the operator server logged no authentication error"
c=$("$sub_bin" -s "$op_url" consumer cr-ok normal 2>&1) && fail "no creds: the submitter got in: $c"
expect "$c" "Authorization Violation" "the submitter without creds"

echo "== credentials readable by others: refused at the config load (--check-config too)"
exited cr-open
expect "$(cat "$tmp/cr-open/daemon.log")" "cluster.credentials: $auth/open.creds: secrets readable by group or others (chmod 600)" cr-open
out=$("$exe" --check-config --config "$tmp/cr-open/executor.json" 2>&1) && fail "--check-config accepted open.creds: $out"
expect "$out" "cluster.credentials: $auth/open.creds: secrets readable" "--check-config"
out=$("$exe" --check-config --config "$tmp/cr-ok/executor.json" 2>&1) || fail "--check-config refused cr-ok: $out"

echo "== TLS after a reconnect: a server certificate of another CA is refused, each attempt's error logged; its own again: reconnected"
stop_tls_nats
start_tls_nats "$pki/server-other.pem"
wait_log tls-ok "reconnect attempt [0-9]*; last error: .*SSL handshake error: .*unable to get local issuer certificate"
expect "$(status_cluster tls-ok)" '"connected":false' "tls-ok status.cluster while refused"
stop_tls_nats
start_tls_nats "$pki/server.pem"
for i in $(seq 100); do
  case $(status_cluster tls-ok) in *'"connected":true'*) break ;; esac
  sleep 0.1
done
expect "$(status_cluster tls-ok)" '"connected":true' "tls-ok status.cluster after the reconnect"
job t3.json t3 'echo tls-again'
r=$(subt run t3 "$tmp/t3.json" -p tls-ok -w 20000 2>/dev/null) || fail "t3: no result after the reconnect"
expect "$r" '"status":"ok"' t3

echo "== credentials after a reconnect: the server no longer knows the account: refused twice, the connection closed and logged, the daemon still stops cleanly"
kill "$op_pid"; wait "$op_pid" 2>/dev/null
start_op_nats "$auth/server-nopx.conf"
wait_log cr-ok "reconnect attempt [0-9]*; last error: .*Authorization Violation"
wait_log cr-ok "the NATS connection is closed (last error: .*Authorization Violation"
expect "$(status_cluster cr-ok)" '"connected":false' "cr-ok status.cluster once closed"
cl_stop cr-ok

echo "PASS: cluster TLS and credentials"
