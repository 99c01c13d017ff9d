#!/usr/bin/env bash
# dockerd.sh - a private Docker Engine for the container backend's tests.
#
#   tests/linux/dockerd.sh start   start it (if not running) and make the
#                                  test image; prints the endpoint
#   tests/linux/dockerd.sh stop    stop it
#   tests/linux/dockerd.sh tcp     the loopback TCP endpoint it also
#                                  listens on (tcp://127.0.0.1:PORT)
#
# The engine also listens on plain TCP at 127.0.0.1:$PX_TEST_DOCKER_PORT
# (default 23751) for the Windows build's test under Wine, which cannot
# reach a Unix socket: no TLS, loopback only, for as long as the tests
# run. Whoever can reach that port is root on this machine: never start
# it on a host with untrusted local users (docs/container-backend.md).
#
# The engine is Debian's docker.io (tools/setup.sh installs it). It gets a
# socket, data root and exec root of its own, so it never touches a
# system dockerd, and no network: --bridge=none, no iptables, no IP
# forwarding (container jobs run with NetworkMode none anyway). Nothing is
# pulled: the test image is made here from the host's static busybox
# (`docker import` of a small root tree).
#
# Exit status 0 when the engine answers; 77 (skip) when docker.io or
# busybox-static is not installed, unless CI=true, where that is an error:
# CI must not skip these tests silently.
set -u
sock_dir=/run/px-test-docker
sock=$sock_dir/docker.sock
data=/var/lib/px-test-docker
image=px-test/busybox:1
log=$sock_dir/dockerd.log
tcp_port=${PX_TEST_DOCKER_PORT:-23751}

unavailable() {
    echo "dockerd.sh: $1" >&2
    [ "${CI:-}" = true ] && exit 1
    exit 77
}

api() { curl -sf --unix-socket "$sock" "http://docker$1"; }
api_tcp() { curl -sf "http://127.0.0.1:$tcp_port$1"; }

start() {
    command -v dockerd >/dev/null || unavailable "no dockerd (apt-get install docker.io)"
    [ -x /bin/busybox ] || unavailable "no static busybox (apt-get install busybox-static)"
    command -v curl >/dev/null || unavailable "no curl"
    [ "$(id -u)" = 0 ] || unavailable "dockerd needs root"
    mkdir -p "$sock_dir"
    # One started by an older version of this script has no TCP listener.
    if api /_ping >/dev/null 2>&1 && ! api_tcp /_ping >/dev/null 2>&1; then
        stop
    fi
    if ! api /_ping >/dev/null 2>&1; then
        dockerd --host "unix://$sock" --host "tcp://127.0.0.1:$tcp_port" \
            --data-root "$data" \
            --exec-root "$sock_dir/exec" --pidfile "$sock_dir/dockerd.pid" \
            --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
            >"$log" 2>&1 &
        for _ in $(seq 1 100); do
            api /_ping >/dev/null 2>&1 && break
            sleep 0.1
        done
        api /_ping >/dev/null 2>&1 || { tail -20 "$log" >&2; unavailable "dockerd did not start"; }
    fi
    if ! api "/v1.41/images/$(printf %s "$image" | sed 's|/|%2F|;s|:|%3A|')/json" >/dev/null; then
        root=$(mktemp -d)
        mkdir -p "$root/bin" "$root/etc" "$root/tmp"
        cp /bin/busybox "$root/bin/busybox"
        for a in sh echo cat sleep yes head tail dd true false ls id wget \
                 nc seq printf env tr touch rm mkdir stat wc grep; do
            ln -s busybox "$root/bin/$a"
        done
        echo 'nobody:x:65534:65534:nobody:/job:/bin/sh' >"$root/etc/passwd"
        tar -C "$root" -c . | curl -sf --unix-socket "$sock" -X POST \
            -H 'Content-Type: application/x-tar' --data-binary @- \
            "http://docker/v1.41/images/create?fromSrc=-&repo=px-test/busybox&tag=1" \
            >/dev/null || { rm -rf "$root"; unavailable "docker import failed"; }
        rm -rf "$root"
    fi
    echo "unix://$sock"
}

stop() {
    [ -f "$sock_dir/dockerd.pid" ] || return 0
    pid=$(cat "$sock_dir/dockerd.pid")
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null
    return 0
}

case "${1:-}" in
    start) start ;;
    tcp) echo "tcp://127.0.0.1:$tcp_port" ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop|tcp" >&2; exit 2 ;;
esac
