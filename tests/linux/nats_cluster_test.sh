#!/usr/bin/env bash
# nats_cluster_test.sh - the namespace NATS cluster the cluster tests stand
# on (tests/linux/nats_cluster.sh) does what they rely on; ctest:
# linux.nats_cluster. Steps, each wait bounded:
#   0. a failed `up` (a nats-server that exits at once) says why and leaves
#      nothing behind: no namespace, no host link, no process;
#   1. `up`: three nodes, routes between all, one meta leader; the host
#      reaches every client port (a NATS CONNECT/PING over /dev/tcp);
#   2. an R3 stream is created through the JetStream API
#      ($JS.API.STREAM.CREATE), written (the publish acks, a second
#      message with the same Nats-Msg-Id acked as a duplicate) and read back
#      ($JS.API.STREAM.MSG.GET) from another node;
#   3. kill -9 of the meta leader: the two others elect a new one, and the
#      stream is readable and writable through them; the node restarts
#      and the cluster forms again;
#   4. link-down of a node: the host cannot reach its client port, it
#      cannot reach the others' cluster ports, and the two others still
#      take writes; link-up: the cluster forms again and the node's own
#      replica catches up on the message written while it was cut off;
#   5. a client namespace (where a worker can run) reaches every node's
#      client port; `exec` runs a command in it with the host's mounts
#      (/sys/fs/cgroup, which `ip netns exec` hides); link-down cuts it
#      off, link-up brings it back;
#   6. `down` leaves no namespace, link or process of the run (nor the
#      reaper `up` left for the case this script is killed outright).
# Exit 77 (skip, reason printed) without root, nats-server, `ip netns`,
# curl or jq, unless CI=true: CI must not skip it silently.
set -u
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
nc=$here/nats_cluster.sh

skip() {
    if [ "${CI:-}" = true ]; then echo "FAIL (CI must not skip): $*"; exit 1; fi
    echo "SKIP: $*"; exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v nats-server >/dev/null || skip "nats-server not installed (tools/setup.sh installs it)"
ip netns list >/dev/null 2>&1 || skip "'ip netns' does not work here (iproute2)"
for t in curl jq timeout flock; do command -v $t >/dev/null || skip "$t not installed"; done

dir=$(mktemp -d "${TMPDIR:-/tmp}/px-nats-test.XXXXXX")
# Killed outright (a ctest timeout's SIGKILL), this script runs no trap:
# the cluster's reaper then runs `down` (its namespaces and servers go;
# the directory stays).
export PX_NATS_OWNER_PID=$$
bad=$dir-bad
failures=0
t_start=$SECONDS
cleanup() {
    "$nc" down "$dir" >/dev/null 2>&1
    "$nc" down "$bad" >/dev/null 2>&1
    rm -rf "$dir" "$bad"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
step() { echo "---- $* ($((SECONDS - t_start)) s)"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
die() {
    echo "FAIL: $*"
    for n in 1 2 3; do
        echo "== the end of node $n's log"
        tail -n 15 "$dir/n$n/nats.log" 2>/dev/null
    done
    exit 1
}
key_of() { realpath -m "$1" | tr -d '\n' | md5sum | cut -c1-8; }
# What a run leaves: its namespaces, its host link, its servers.
leftovers() { # DIR -> prints them
    local k
    k=$(key_of "$1")
    ip netns list | awk '{print $1}' | grep "^px-nc-$k-" | sed 's/^/netns /'
    ip -o link show "pxh-$k" 2>/dev/null | awk '{print "link", $2}'
    pgrep -af -- "--name px-nats-$k-" | sed 's/^/process /'
    pgrep -af -- "px-nats-reaper .* $1\$" | sed 's/^/reaper /'
    return 0
}
# Poll CMD until it succeeds, at most S seconds.
until_ok() { # S CMD...
    local end=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.2
    done
}
req() { "$nc" req "$dir" "$@"; }
jsget() { # NODE SEQ -> the message's data, decoded
    req "$1" '$JS.API.STREAM.MSG.GET.PXH' "{\"seq\":$2}" 3 |
        jq -er '.message.data' | base64 -d
}
jspub() { # NODE MSGID DATA -> the publish ack
    PX_NATS_MSG_ID=$2 req "$1" "pxh.test" "$3" 3
}
meta_leader_is_other_than() { # NAME: a live node names a leader not NAME
    local n l
    for n in 1 2 3; do
        l=$("$nc" mon "$dir" "$n" /jsz 2>/dev/null | jq -r '.meta_cluster.leader // empty')
        [ -n "$l" ] && [ "$l" != "$1" ] && return 0
    done
    return 1
}
reads() { [ "$(jsget "$1" "$2")" = "$3" ]; }
local_last_seq() { # NODE -> the last sequence of its own replica of PXH
    "$nc" mon "$dir" "$1" '/jsz?streams=true' |
        jq -r '[.account_details[]?.stream_detail[]? | select(.name == "PXH") | .state.last_seq][0] // 0'
}
replica_has() { [ "$(local_last_seq "$1")" -ge "$2" ]; }

step "0. a failed up cleans up"
fake=$dir-fake-nats
printf '#!/bin/sh\necho "fake nats-server: refusing to start" >&2\nexit 3\n' >"$fake"
chmod +x "$fake"
if out=$(PX_NATS_SERVER=$fake "$nc" up "$bad" 2>&1); then
    fail "up with a server that exits at once succeeded"
fi
rm -f "$fake"
printf '%s\n' "$out" | sed 's/^/  | /'
printf '%s\n' "$out" | grep -q "node 1 did not start" || fail "up's error does not say which node did not start"
printf '%s\n' "$out" | grep -q "refusing to start" || fail "up's error does not show the node's log"
left=$(leftovers "$bad")
[ -z "$left" ] || fail "a failed up left: $left"

step "1. up"
"$nc" up "$dir" || die "up failed"
for n in 1 2 3; do
    out=$("$nc" pub "$dir" "$n" pxh.ping hello 2>&1) || fail "the host cannot reach node $n: $out"
done
echo "urls: $("$nc" urls "$dir")"

step "2. an R3 stream: create, write, read"
out=$(req 1 '$JS.API.STREAM.CREATE.PXH' \
    '{"name":"PXH","subjects":["pxh.>"],"num_replicas":3,"storage":"file","duplicate_window":120000000000}' 10) ||
    die "stream create: $out"
printf '%s' "$out" | jq -e '.config.num_replicas == 3 and (.error == null)' >/dev/null ||
    die "stream create answered: $out"
ack=$(jspub 2 m1 first) || die "publish: $ack"
printf '%s' "$ack" | jq -e '.stream == "PXH" and .seq == 1' >/dev/null || fail "first ack: $ack"
ack=$(jspub 3 m1 first-again) || die "publish: $ack"
printf '%s' "$ack" | jq -e '.seq == 1 and .duplicate == true' >/dev/null ||
    fail "the same Nats-Msg-Id was not acked as a duplicate: $ack"
ack=$(jspub 1 m2 second) || die "publish: $ack"
printf '%s' "$ack" | jq -e '.seq == 2' >/dev/null || fail "second ack: $ack"
[ "$(jsget 3 1)" = first ] || fail "message 1 does not read back as 'first'"
[ "$(jsget 2 2)" = second ] || fail "message 2 does not read back as 'second'"
until_ok 10 replica_has 3 2 || fail "node 3's replica does not reach seq 2"

step "3. kill -9 the meta leader"
leader=$("$nc" leader "$dir") || die "no meta leader"
dead=$("$nc" node-of "$dir" "$leader") || die "leader '$leader' is not a node"
echo "meta leader: $leader (node $dead)"
"$nc" kill-node "$dir" "$dead" KILL || die "kill-node failed"
live=$((dead % 3 + 1))
until_ok 30 meta_leader_is_other_than "$leader" ||
    fail "no new meta leader 30 s after the old one died"
echo "new meta leader: $("$nc" leader "$dir")"
until_ok 30 reads "$live" 2 second || fail "the R3 stream is not readable through node $live"
ack=$(jspub "$live" m3 third) || fail "publish with a node down: $ack"
printf '%s' "$ack" | jq -e '.seq == 3' >/dev/null || fail "third ack: $ack"
"$nc" start-node "$dir" "$dead" || die "start-node failed"
"$nc" wait "$dir" 30 || die "the cluster did not form again after the restart"
until_ok 20 replica_has "$dead" 3 || fail "the restarted node's replica does not catch up to seq 3"

step "4. link-down, link-up"
# The node cut off leads neither JetStream's meta group nor the stream
# (there is always one such of three): step 3 showed a leader's loss; here
# the two others keep taking writes without an election.
sleader=$(req 1 '$JS.API.STREAM.INFO.PXH' '{}' 3 | jq -r '.cluster.leader // empty')
leader=$("$nc" leader "$dir")
cut=""
for n in 1 2 3; do
    case "px-nats-$(key_of "$dir")-$n" in "$sleader" | "$leader") ;; *) cut=$n ;; esac
done
[ -n "$cut" ] || die "no node is free of leaders (meta '$leader', stream '$sleader')"
other=$((cut % 3 + 1))
echo "cutting node $cut (meta leader $leader, stream leader $sleader)"
net=$("$nc" url "$dir" 1 | sed 's|nats://\(.*\)\.1:4222|\1|')
"$nc" link-down "$dir" "$cut" || die "link-down failed"
if timeout 1 bash -c "exec 3<>/dev/tcp/$net.$cut/4222" 2>/dev/null; then
    fail "the host still reaches node $cut's client port after link-down"
fi
if ip netns exec "$("$nc" ns "$dir" "$cut")" timeout 1 bash -c "exec 3<>/dev/tcp/$net.$other/6222" 2>/dev/null; then
    fail "node $cut still reaches node $other's cluster port after link-down"
fi
ack=$(jspub "$other" m4 fourth) || fail "publish to the two connected nodes: $ack"
printf '%s' "$ack" | jq -e '.seq == 4' >/dev/null || fail "fourth ack: $ack"
"$nc" link-up "$dir" "$cut" || die "link-up failed"
"$nc" wait "$dir" 30 || fail "the cluster did not form again after link-up"
until_ok 20 replica_has "$cut" 4 || fail "node $cut's replica does not catch up to seq 4 after link-up"
until_ok 10 reads "$cut" 4 fourth || fail "message 4 is not readable through node $cut"

step "5. a client namespace: reaches every node, and its cable can be cut"
cns=$("$nc" client-ns "$dir" 1) || die "client-ns failed"
from_client() { # NODE: a NATS INFO read from inside the client namespace
    "$nc" exec "$dir" c1 timeout 2 bash -c \
        "exec 3<>/dev/tcp/$net.$1/4222 && head -c 4 <&3" 2>/dev/null | grep -q INFO
}
for n in 1 2 3; do from_client "$n" || fail "client namespace $cns cannot reach node $n"; done
# `exec` keeps the host's mounts (a daemon there needs /sys/fs/cgroup).
[ "$("$nc" exec "$dir" c1 ls /sys/fs/cgroup | wc -l)" = "$(ls /sys/fs/cgroup | wc -l)" ] ||
    fail "exec in the client namespace does not see the host's /sys/fs/cgroup"
[ "$("$nc" exec "$dir" c1 ip -o -4 addr show dev eth0 | awk '{print $4}')" = "$net.11/24" ] ||
    fail "exec c1 does not run in the client namespace (no eth0 with $net.11)"
"$nc" link-down "$dir" c1 || die "link-down c1 failed"
from_client 1 && fail "client namespace still reaches node 1 after link-down"
"$nc" link-up "$dir" c1 || die "link-up c1 failed"
until_ok 10 from_client 1 || fail "client namespace does not reach node 1 after link-up"

step "6. down leaves nothing"
"$nc" down "$dir" || fail "down reported something left"
left=$(leftovers "$dir")
[ -z "$left" ] || fail "down left: $left"

echo "---- $((SECONDS - t_start)) s"
if [ "$failures" = 0 ]; then
    echo "nats_cluster_test: ok"
    exit 0
fi
echo "nats_cluster_test: $failures failure(s)"
exit 1
