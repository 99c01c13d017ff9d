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
# pulled: the test images are made here (`docker import` of a small root
# tree), once; a start finds them in the engine's data root afterwards:
#   px-test/busybox:1  the host's static busybox
#   px-test/python:3   the host's python3: the interpreter, the shared
#                      libraries ldd lists for it and its extension modules
#                      (with the loader), the standard library without test
#                      suites, __pycache__, idle, tkinter, ensurepip; busybox
#                      for /bin/sh. Not made (the adversarial suite's Python
#                      payloads then SKIP) when the host has no python3.
# Containers get the engine's default ulimits: the backend sets none, so the
# engine is started with nofile 4096 (a descriptor bomb meets EMFILE, as it
# meets the native backend's RLIMIT_NOFILE; docs/container-backend.md).
#
# Exit status 0 when the engine answers; 77 (skip) when docker.io or
# busybox-static is not installed, unless CI=true, where that is an error:
# CI must not skip these tests silently.
set -u
sock_dir=/run/px-test-docker
sock=$sock_dir/docker.sock
data=/var/lib/px-test-docker
image=px-test/busybox:1
py_image=px-test/python:3
log=$sock_dir/dockerd.log
tcp_port=${PX_TEST_DOCKER_PORT:-23751}

unavailable() {
    echo "dockerd.sh: $1" >&2
    [ "${CI:-}" = true ] && exit 1
    exit 77
}

api() { curl -sf --unix-socket "$sock" "http://docker$1"; }
api_tcp() { curl -sf "http://127.0.0.1:$tcp_port$1"; }
have_image() { api "/v1.41/images/$(printf %s "$1" | sed 's|/|%2F|;s|:|%3A|')/json" >/dev/null; }
# docker import of the tree $1 as repo $2, tag $3 (removes the tree).
import_tree() {
    tar -C "$1" -c . | curl -sf --unix-socket "$sock" -X POST \
        -H 'Content-Type: application/x-tar' --data-binary @- \
        "http://docker/v1.41/images/create?fromSrc=-&repo=$2&tag=$3" >/dev/null
    rc=$?
    rm -rf "$1"
    return $rc
}

start() {
    command -v dockerd >/dev/null || unavailable "no dockerd (apt-get install docker.io)"
    [ -x /bin/busybox ] || unavailable "no static busybox (apt-get install busybox-static)"
    command -v curl >/dev/null || unavailable "no curl"
    [ "$(id -u)" = 0 ] || unavailable "dockerd needs root"
    mkdir -p "$sock_dir"
    # One started by an older version of this script has no TCP listener
    # or no default ulimit: restart it with this one's flags.
    if api /_ping >/dev/null 2>&1 && { ! api_tcp /_ping >/dev/null 2>&1 ||
            ! tr '\0' ' ' <"/proc/$(cat "$sock_dir/dockerd.pid" 2>/dev/null)/cmdline" \
                2>/dev/null | grep -q -- '--default-ulimit nofile=4096'; }; then
        stop
    fi
    if ! api /_ping >/dev/null 2>&1; then
        dockerd --host "unix://$sock" --host "tcp://127.0.0.1:$tcp_port" \
            --data-root "$data" \
            --exec-root "$sock_dir/exec" --pidfile "$sock_dir/dockerd.pid" \
            --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
            --default-ulimit nofile=4096:4096 \
            >"$log" 2>&1 &
        for _ in $(seq 1 100); do
            api /_ping >/dev/null 2>&1 && break
            sleep 0.1
        done
        api /_ping >/dev/null 2>&1 || { tail -20 "$log" >&2; unavailable "dockerd did not start"; }
    fi
    if ! have_image "$image"; then
        root=$(mktemp -d)
        mkdir -p "$root/bin" "$root/etc" "$root/tmp"
        cp /bin/busybox "$root/bin/busybox"
        for a in sh echo cat sleep yes head tail dd true false ls id wget \
                 nc seq printf env tr touch rm mkdir stat wc grep; do
            ln -s busybox "$root/bin/$a"
        done
        echo 'nobody:x:65534:65534:nobody:/job:/bin/sh' >"$root/etc/passwd"
        import_tree "$root" px-test/busybox 1 || unavailable "docker import failed"
    fi
    have_image "$py_image" || python_image
    echo "unix://$sock"
}

# The host's python3, the real interpreter (not a pyenv or venv shim):
# Debian's first, the one on PATH otherwise. Empty when there is none.
host_python() {
    for p in /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
        [ -n "$p" ] && [ -x "$p" ] || continue
        "$p" -c 'import sys; print(sys.executable)' 2>/dev/null && return 0
    done
    return 0
}

# px-test/python:3 from the host's python3, at the host's own paths (so the
# interpreter finds its prefix as on the host). Not made when the host has
# none: the tests that need it SKIP, saying so.
python_image() {
    py=$(host_python)
    if [ -z "$py" ]; then
        echo "dockerd.sh: no python3 on this host: $py_image not made" >&2
        return 0
    fi
    set -- $("$py" -c 'import sysconfig as s; print(s.get_paths()["stdlib"], s.get_config_var("DESTSHARED"))')
    stdlib=$1 dynload=${2:-}
    root=$(mktemp -d)
    mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/usr/bin" "$root$(dirname "$py")"
    cp /bin/busybox "$root/bin/busybox"
    for a in sh echo cat sleep ls id env; do ln -s busybox "$root/bin/$a"; done
    cp -L "$py" "$root$py"
    ln -s "$py" "$root/usr/bin/python3" 2>/dev/null || true
    ln -s "$py" "$root/bin/python3"
    # the standard library, less what no job needs and what is large
    tar -C / -c --exclude=__pycache__ --exclude="${stdlib#/}/test" \
        --exclude="${stdlib#/}/idlelib" --exclude="${stdlib#/}/tkinter" \
        --exclude="${stdlib#/}/ensurepip" --exclude="${stdlib#/}/lib2to3/tests" \
        --exclude="${stdlib#/}/site-packages" --exclude="${stdlib#/}/dist-packages" \
        --exclude="${stdlib#/}/config-*" "${stdlib#/}" | tar -C "$root" -x
    if [ -n "$dynload" ] && [ -d "$dynload" ] && [ ! -d "$root$dynload" ]; then
        mkdir -p "$root$dynload" && cp -a "$dynload/." "$root$dynload/"
    fi
    # every shared library the interpreter and its extension modules load,
    # the loader among them (ldd's "=> /path" and bare "/path" lines)
    for lib in $(ldd "$py" $(find "$root$dynload" -name '*.so' 2>/dev/null |
                             sed "s|^$root||") 2>/dev/null |
                 grep -o '/[^ ]*' | grep -v ':$' | sort -u); do
        [ -e "$lib" ] || continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
    printf 'root:x:0:0:root:/nonexistent:/bin/sh\nnobody:x:65534:65534:nobody:/job:/bin/sh\n' \
        >"$root/etc/passwd"
    import_tree "$root" px-test/python 3 || unavailable "docker import of $py_image failed"
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
