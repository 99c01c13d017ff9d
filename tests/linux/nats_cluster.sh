#!/usr/bin/env bash
# nats_cluster.sh - a real three-node NATS JetStream cluster in network
# namespaces, for the cluster tests (issue 27; docs/cluster.md, "The test
# cluster"). Root only.
#
#   nats_cluster.sh up DIR           make the network, start the three nodes;
#                                    returns when every node has routes to
#                                    the other two and JetStream has a meta
#                                    leader they agree on (else: an error,
#                                    and everything made is removed again)
#   nats_cluster.sh down DIR         end every process in the run's
#                                    namespaces (SIGKILL: stop a daemon
#                                    started there with `exec` yourself first
#                                    if it must unmount its job directories),
#                                    delete the namespaces and the host's
#                                    link (DIR itself stays: logs)
#   nats_cluster.sh kill-node DIR N [SIG]   signal node N (default KILL) and
#                                    wait until it is gone
#   nats_cluster.sh start-node DIR N start node N again (same store); waits
#                                    until its monitoring port answers
#   nats_cluster.sh link-down DIR N  cut node N's cable (N: 1-3, or cM for a
#   nats_cluster.sh link-up DIR N    client namespace): its port on the bridge
#                                    goes down/up, so neither side hears the
#                                    other (a partition, not a refused connect)
#   nats_cluster.sh wait DIR [S]     wait (at most S s, default 30) until the
#                                    cluster is formed again, as `up` does
#   nats_cluster.sh client-ns DIR M  a namespace of its own on the bridge for
#                                    a worker (M: 1-9, address .(10+M));
#                                    prints its name (`ip netns exec NAME ...`)
#   nats_cluster.sh exec DIR N CMD...  run CMD in the network namespace of
#                                    node N or client cM, and nothing else of
#                                    it: `nsenter --net`. Not `ip netns exec`,
#                                    which also mounts a fresh /sys, where
#                                    /sys/fs/cgroup is empty: a daemon started
#                                    that way finds no cgroups and fails every
#                                    job ("not supported on this platform")
#   nats_cluster.sh ns DIR N         the namespace name of node N (or cM)
#   nats_cluster.sh url DIR N        nats://ADDR:4222 of node N
#   nats_cluster.sh urls DIR         the three URLs, comma-separated
#   nats_cluster.sh mon DIR N PATH   node N's monitoring endpoint PATH (e.g.
#                                    "/jsz", "/routez"), read inside its own
#                                    namespace, so it answers during link-down
#   nats_cluster.sh leader DIR       the meta leader's server name, if any
#   nats_cluster.sh node-of DIR NAME N of the server named NAME
#   nats_cluster.sh req DIR N SUBJECT BODY [S]  a request/reply over core
#                                    NATS from the host to node N (at most S s,
#                                    default 5); prints the reply's payload.
#                                    PX_NATS_MSG_ID=ID adds the header
#                                    Nats-Msg-Id (JetStream's de-duplication)
#   nats_cluster.sh pub DIR N SUBJECT BODY   a core publish, flushed (PING/PONG)
#
# Topology (a run's KEY is 8 hex digits of md5(realpath DIR), so two runs or
# checkouts never share a name):
#
#   host namespace            namespace px-nc-KEY-br          px-nc-KEY-N
#   pxh-KEY 10.213.X.254/24 --- host ]                         (N = 1, 2, 3)
#                                    [ bridge br0 ] -- nN --- eth0 10.213.X.N
#                                                  -- cM --- eth0 10.213.X.(10+M)
#
# The bridge lives in a namespace of its own (no host firewall or
# br_netfilter rule applies to it); the host joins it through one veth
# pair, pxh-KEY, with address .254: from the host namespace every node's
# client port is nats://10.213.X.N:4222 (`url`, `urls`); a worker in a
# client namespace reaches the same addresses. X is chosen at `up` among
# the 10.213.X.0/24 that no interface or route of the host uses (under a
# lock, so two runs starting together pick different ones). Nothing is
# forwarded or NATed: the network reaches only the run's own namespaces
# and the host (loopback and the project's own namespaces, as the network
# rules say).
#
# Each node: nats-server (Debian's 2.9.10; PX_NATS_SERVER overrides)
# started as `nats-server -c DIR/nN/nats.conf --name px-nats-KEY-N` in its
# namespace, client port 4222, cluster port 6222 with explicit routes to
# all three (a route to itself is ignored; explicit routes are retried
# forever, so a node rejoins after link-up or restart), monitoring on 8222,
# JetStream with its store in DIR/nN/js (64 MB memory, 256 MB file), ping
# interval 1 s and 3 missed pings, so a dead route is noticed in about 4 s,
# not the default 4 minutes. Its log is DIR/nN/nats.log.
#
# Every wait is bounded; `up` on any failure runs `down` before it exits.
# With PX_NATS_OWNER_PID=PID, `up` also leaves a reaper (`bash -c ...
# px-nats-reaper`, host namespace) that runs `down` once PID is gone, so a
# test killed outright leaves nothing either; `down` ends it.
# Exit status: 0 done; 1 failed (the reason on stderr); 2 usage.
set -u
export LC_ALL=C
prog=$(basename "$0")
nats_server=${PX_NATS_SERVER:-nats-server}

die() { echo "$prog: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

# ---- names ---------------------------------------------------------------

setup_names() { # DIR -> KEY, state names
    dir=$(realpath -m "$1")
    key=$(printf '%s' "$dir" | md5sum | cut -c1-8)
    ns_br=px-nc-$key-br
    host_if=pxh-$key
    state=$dir/cluster.env
    net=""
    [ -f "$state" ] && net=$(sed -n 's/^net=//p' "$state")
}
node_ns() { echo "px-nc-$key-$1"; }          # 1..3 or cM
port_of() { echo "n$1" | sed 's/^nc/c/'; }   # bridge port: n1..n3, c1..c9
addr_of() {
    case "$1" in
    [123]) echo "$net.$1" ;;
    c[1-9]) echo "$net.$((10 + ${1#c}))" ;;
    *) die "no such node: $1 (1-3, or c1-c9)" ;;
    esac
}
need_net() { [ -n "$net" ] || die "no cluster in $dir (run: $prog up $dir)"; }
our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep "^px-nc-$key-" || true; }

# ---- the network ---------------------------------------------------------

pick_subnet() { # -> net (10.213.X), not used by any host address or route
    local start x i used
    used=$(ip -4 -o addr show; ip -4 route show table all)
    start=$((0x${key:0:2} % 250))
    for i in $(seq 0 249); do
        x=$(((start + i) % 250 + 1))
        case "$used" in *"10.213.$x."*) continue ;; esac
        net=10.213.$x
        return 0
    done
    die "no free 10.213.X.0/24 on this host"
}

make_bridge() {
    ip netns add "$ns_br" || return 1
    ip -n "$ns_br" link set lo up &&
        ip -n "$ns_br" link add br0 type bridge &&
        ip -n "$ns_br" link set br0 up
}

make_host_link() { # under the lock: the subnet is taken once the address is on
    mkdir -p /run/lock && exec {lockfd}>/run/lock/px-nats-cluster.lock || return 1
    flock -w 10 "$lockfd" || { echo "$prog: lock busy" >&2; return 1; }
    pick_subnet
    ip link add "$host_if" type veth peer name host netns "$ns_br" &&
        ip addr add "$net.254/24" dev "$host_if" &&
        ip link set "$host_if" up &&
        ip -n "$ns_br" link set host master br0 &&
        ip -n "$ns_br" link set host up
    local rc=$?
    exec {lockfd}>&-
    return $rc
}

attach() { # NODE (1..3 or cM): its namespace with eth0 on the bridge
    local ns port
    ns=$(node_ns "$1")
    port=$(port_of "$1")
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up &&
        ip -n "$ns_br" link add "$port" type veth peer name eth0 netns "$ns" &&
        ip -n "$ns_br" link set "$port" master br0 &&
        ip -n "$ns_br" link set "$port" up &&
        ip -n "$ns" addr add "$(addr_of "$1")/24" dev eth0 &&
        ip -n "$ns" link set eth0 up
}

# ---- the nodes -----------------------------------------------------------

write_conf() { # N
    local n=$1 d=$dir/n$1
    mkdir -p "$d/js"
    cat >"$d/nats.conf" <<EOF
# node $n of the test cluster px-nats-$key (tests/linux/nats_cluster.sh)
listen: 0.0.0.0:4222
http: 0.0.0.0:8222
pid_file: "$d/nats.pid"
ping_interval: "1s"
ping_max: 3
jetstream {
  store_dir: "$d/js"
  max_memory_store: 64MB
  max_file_store: 256MB
}
cluster {
  name: px-nats-$key
  listen: 0.0.0.0:6222
  routes: [
    nats-route://$net.1:6222
    nats-route://$net.2:6222
    nats-route://$net.3:6222
  ]
}
EOF
}

node_pid() { # N -> the running server's pid, or nothing
    local pid
    pid=$(cat "$dir/n$1/nats.pid" 2>/dev/null) || return 0
    [ -n "$pid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" |
        grep -q -- "--name px-nats-$key-$1" && echo "$pid"
    return 0
}

mon() { # N PATH -> the endpoint's JSON, read on the node's own loopback
    ip netns exec "$(node_ns "$1")" curl -sf -m 2 "http://127.0.0.1:8222$2"
}

start_node() { # N: start it and wait (10 s) for its monitoring port
    local n=$1 i
    [ -z "$(node_pid "$n")" ] || die "node $n is running already"
    rm -f "$dir/n$n/nats.pid"
    setsid ip netns exec "$(node_ns "$n")" "$nats_server" -c "$dir/n$n/nats.conf" \
        --name "px-nats-$key-$n" >>"$dir/n$n/nats.log" 2>&1 </dev/null &
    for i in $(seq 100); do
        mon "$n" /varz >/dev/null && return 0
        kill -0 $! 2>/dev/null || break
        sleep 0.1
    done
    echo "$prog: node $n did not start; the end of $dir/n$n/nats.log:" >&2
    tail -n 5 "$dir/n$n/nats.log" >&2
    return 1
}

kill_node() { # N SIG: signal it, wait (10 s) until it is gone
    local pid i
    pid=$(node_pid "$1")
    [ -n "$pid" ] || die "node $1 is not running"
    kill -"$2" "$pid" || return 1
    for i in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    die "node $1 (pid $pid) still running 10 s after SIG$2"
}

formed() { # -> 0 when all three nodes have 2 routes and one meta leader
    local n j leader="" l
    for n in 1 2 3; do
        j=$(mon "$n" /routez) || return 1
        printf '%s' "$j" | jq -e '.num_routes == 2' >/dev/null || return 1
        j=$(mon "$n" /jsz) || return 1
        l=$(printf '%s' "$j" | jq -r '.meta_cluster.leader // empty')
        [ -n "$l" ] || return 1
        [ -z "$leader" ] || [ "$l" = "$leader" ] || return 1
        leader=$l
    done
}

wait_formed() { # SECONDS
    local end=$((SECONDS + $1)) n
    until formed; do
        if [ "$SECONDS" -ge "$end" ]; then
            echo "$prog: the cluster did not form within $1 s:" >&2
            for n in 1 2 3; do
                echo "  node $n: routes $(mon "$n" /routez | jq -c '[.routes[]?.remote_id] | length' 2>/dev/null || echo '?')," \
                    "meta leader '$(mon "$n" /jsz | jq -r '.meta_cluster.leader // ""' 2>/dev/null)'" >&2
            done
            return 1
        fi
        sleep 0.2
    done
}

# ---- up and down ---------------------------------------------------------

# With PX_NATS_OWNER_PID (a test's own pid), a reaper runs `down` when that
# process is gone, however it ended: a test killed by SIGKILL (a ctest
# timeout) cannot run its own cleanup. `down` ends the reaper.
start_reaper() {
    [ -n "${PX_NATS_OWNER_PID:-}" ] || return 0
    setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec bash "$2" down "$3"' \
        px-nats-reaper "$PX_NATS_OWNER_PID" "$(realpath "$0")" "$dir" \
        </dev/null >>"$dir/reaper.log" 2>&1 &
    echo $! >"$dir/reaper.pid"
}

stop_reaper() {
    local pid
    pid=$(cat "$dir/reaper.pid" 2>/dev/null) || return 0
    rm -f "$dir/reaper.pid"
    [ "$pid" != "$$" ] || return 0 # the reaper's own `down`
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "px-nats-reaper" && kill "$pid" 2>/dev/null
    return 0
}

down() {
    local ns pid n i left
    # Every process in the run's namespaces is the run's: the servers and
    # whatever a test started in a client namespace.
    for ns in $(our_namespaces); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    done
    for n in 1 2 3; do
        pid=$(node_pid "$n")
        [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null
    done
    for i in $(seq 50); do
        left=""
        for ns in $(our_namespaces); do left+=$(ip netns pids "$ns" 2>/dev/null); done
        for n in 1 2 3; do left+=$(node_pid "$n"); done
        [ -z "$left" ] && break
        sleep 0.1
    done
    [ -z "$left" ] || echo "$prog: processes still alive 5 s after SIGKILL: $left" >&2
    # The host's end first: deleting the bridge namespace would take it
    # along, but asynchronously (a check right after could still see it).
    if ip link show "$host_if" >/dev/null 2>&1; then
        ip link del "$host_if" 2>/dev/null || ! ip link show "$host_if" >/dev/null 2>&1 ||
            left+=" link:$host_if"
    fi
    for ns in $(our_namespaces); do ip netns del "$ns" || left+=" netns:$ns"; done
    rm -f "$state"
    stop_reaper
    [ -z "$left" ]
}

up() {
    local n
    [ -d "$dir" ] || mkdir -p "$dir" || die "cannot make $dir"
    [ -z "$(our_namespaces)" ] || die "a cluster of $dir is up already (run: $prog down $dir)"
    command -v "$nats_server" >/dev/null || die "$nats_server not found (tools/setup.sh installs nats-server)"
    # Any failure from here on (a failed command, die, a signal) removes
    # everything made so far before the exit.
    up_done=0
    trap 'trap - ERR; set +E; [ "$up_done" = 1 ] || { echo "$prog: up failed; removing what it made" >&2; down; }' EXIT
    trap 'exit 1' ERR INT TERM
    set -E
    make_bridge
    make_host_link
    printf 'key=%s\nnet=%s\n' "$key" "$net" >"$state"
    start_reaper
    for n in 1 2 3; do
        attach "$n"
        write_conf "$n"
        : >"$dir/n$n/nats.log"
    done
    for n in 1 2 3; do start_node "$n"; done
    wait_formed "${PX_NATS_UP_TIMEOUT:-30}"
    for n in 1 2 3; do # the host reaches every client port
        timeout 3 bash -c "exec 3<>/dev/tcp/$net.$n/4222 && head -c 4 <&3" | grep -q INFO ||
            { echo "$prog: the host cannot reach node $n's client port $net.$n:4222" >&2; false; }
    done
    up_done=1
    trap - ERR INT TERM
    echo "$prog: cluster px-nats-$key up: $(urls)"
}

urls() { echo "nats://$net.1:4222,nats://$net.2:4222,nats://$net.3:4222"; }

# ---- a NATS client in bash (the text protocol over /dev/tcp) ---------------

nats_session() { # ADDR MODE SUBJECT BODY: runs under `timeout` (see req/pub)
    local fd line hdr="" n total payload sub=_INBOX.pxsh.$$ msgid=${PX_NATS_MSG_ID:-}
    exec {fd}<>"/dev/tcp/$1/4222" || exit 1
    IFS= read -r -u "$fd" line && [ "${line#INFO }" != "$line" ] || { echo "no INFO from $1" >&2; exit 1; }
    printf 'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"name":"nats_cluster.sh"}\r\n' >&"$fd"
    [ "$2" = req ] && printf 'SUB %s 1\r\n' "$sub" >&"$fd"
    local reply=""
    [ "$2" = req ] && reply=$sub
    if [ -n "$msgid" ]; then
        printf -v hdr 'NATS/1.0\r\nNats-Msg-Id: %s\r\n\r\n' "$msgid"
        printf 'HPUB %s %s %d %d\r\n%s%s\r\n' "$3" "$reply" "${#hdr}" "$((${#hdr} + ${#4}))" "$hdr" "$4" >&"$fd"
    else
        printf 'PUB %s %s %d\r\n%s\r\n' "$3" "$reply" "${#4}" "$4" >&"$fd"
    fi
    printf 'PING\r\n' >&"$fd"
    while IFS= read -r -u "$fd" line; do
        line=${line%$'\r'}
        case "$line" in
        PING) printf 'PONG\r\n' >&"$fd" ;;
        PONG) [ "$2" = pub ] && exit 0 ;;
        -ERR*) echo "server: $line" >&2; exit 1 ;;
        MSG\ *)
            n=${line##* }
            IFS= read -r -N $((n + 2)) -u "$fd" payload || exit 1
            printf '%s\n' "${payload%$'\r\n'}"
            exit 0 ;;
        HMSG\ *)
            total=${line##* }
            IFS= read -r -N $((total + 2)) -u "$fd" payload || exit 1
            case "$payload" in
            NATS/1.0\ 503*) echo "no responders for $3" >&2; exit 1 ;;
            esac
            payload=${payload#*$'\r\n\r\n'}
            printf '%s\n' "${payload%$'\r\n'}"
            exit 0 ;;
        esac
    done
    echo "connection to $1 closed" >&2
    exit 1
}

# ---- main ----------------------------------------------------------------

[ $# -ge 2 ] || usage
cmd=$1
setup_names "$2"
case "$cmd" in
_session) nats_session "$3" "$4" "$5" "$6" ;; # internal: req/pub under timeout
up) [ "$(id -u)" = 0 ] || die "needs root (network namespaces)"; up ;;
down) down || die "down left something (above)" ;;
kill-node) need_net; kill_node "${3:?node}" "${4:-KILL}" ;;
start-node) need_net; start_node "${3:?node}" ;;
link-down | link-up)
    need_net
    addr_of "${3:?node}" >/dev/null
    ip -n "$ns_br" link set "$(port_of "$3")" "${cmd#link-}" ;;
wait) need_net; wait_formed "${3:-30}" ;;
client-ns)
    need_net
    case "${3:-}" in [1-9]) ;; *) die "client-ns: M is 1-9" ;; esac
    ip netns list | grep -q "^$(node_ns "c$3")\b" || attach "c$3" || die "cannot make client namespace c$3"
    node_ns "c$3" ;;
ns) addr_of "${3:?node}" >/dev/null; node_ns "$3" ;;
exec)
    [ $# -ge 4 ] || usage
    addr_of "$3" >/dev/null
    target=/run/netns/$(node_ns "$3")
    [ -e "$target" ] || die "no namespace $(node_ns "$3") (client-ns first?)"
    shift 3
    exec nsenter --net="$target" "$@" ;;
url) need_net; echo "nats://$(addr_of "${3:?node}"):4222" ;;
urls) need_net; urls ;;
mon) need_net; mon "${3:?node}" "${4:?path}" ;;
leader)
    need_net
    for n in 1 2 3; do
        l=$(mon "$n" /jsz 2>/dev/null | jq -r '.meta_cluster.leader // empty' 2>/dev/null)
        [ -n "$l" ] && { echo "$l"; exit 0; }
    done
    exit 1 ;;
node-of)
    case "${3:-}" in px-nats-"$key"-[123]) echo "${3##*-}" ;; *) die "not a node of $dir: ${3:-}" ;; esac ;;
req | pub)
    need_net
    [ $# -ge 5 ] || usage
    timeout "${6:-5}" bash "$0" _session "$dir" "$(addr_of "$3")" "$cmd" "$4" "$5" ||
        die "$cmd $4 to node $3 failed" ;;
*) usage ;;
esac
