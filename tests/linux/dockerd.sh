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
# One engine per build directory: ctest's fixtures pass PX_TEST_DOCKER_KEY
# (a key of the build directory, tests/CMakeLists.txt) and
# PX_TEST_DOCKER_PORT, so the socket (/run/px-test-docker-KEY), data root
# (/var/lib/px-test-docker-KEY), exec root and TCP port are this build's
# and two checkouts testing at once never stop each other's engine. Without
# a key (by hand, the benchmarks): /run/px-test-docker, port 23751.
# Each data root imports the test images once; the root trees they are
# made of are cached as archives in /var/cache/px-test-docker (rebuilt when
# busybox or python3 changes), so another key's first start costs an
# import, not a rebuild of the tree.
#
# `stop` stops the engine with SIGTERM (SIGKILL after 20 s), then ends any
# process still naming this key's exec root (its containerd and shims):
# exit status 0 only when none is left.
#
# Exit status 0 when the engine answers; 77 (skip) when docker.io or
# busybox-static is not installed, unless CI=true, where that is an error:
# CI must not skip these tests silently.
set -u
key=${PX_TEST_DOCKER_KEY:+-$PX_TEST_DOCKER_KEY}
case "$key" in *[!a-zA-Z0-9-]*) echo "dockerd.sh: bad PX_TEST_DOCKER_KEY" >&2; exit 2 ;; esac
sock_dir=/run/px-test-docker$key
sock=$sock_dir/docker.sock
data=/var/lib/px-test-docker$key
cache=/var/cache/px-test-docker
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
# import_cached NAME REPO TAG BUILDER SOURCE...: docker import of the
# archive $cache/NAME-V.tar as REPO:TAG; BUILDER fills a tree (its first
# argument) to make the archive when it is missing or older than a SOURCE.
# V is a hash of BUILDER's text: a changed recipe makes a new archive. The
# archive is written aside and renamed: two keys starting at once are safe.
# BUILDER's status 2: nothing to make on this host (said by BUILDER).
import_cached() {
    local name=$1 repo=$2 tag=$3 builder=$4 v tarf src root rc
    shift 4
    v=$(declare -f "$builder" | md5sum | cut -c1-8)
    tarf=$cache/$name-$v.tar
    for src in "$@"; do [ "$src" -nt "$tarf" ] && rm -f "$tarf"; done
    if [ ! -s "$tarf" ]; then
        mkdir -p "$cache"
        root=$(mktemp -d)
        "$builder" "$root"
        rc=$?
        [ $rc = 0 ] && tar -C "$root" -cf "$tarf.$$" . && mv -f "$tarf.$$" "$tarf"
        rm -rf "$root" "$tarf.$$"
        [ $rc = 0 ] || return $rc
    fi
    curl -sf --unix-socket "$sock" -X POST -T "$tarf" \
        -H 'Content-Type: application/x-tar' \
        "http://docker/v1.41/images/create?fromSrc=-&repo=$repo&tag=$tag" >/dev/null
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
        api /_ping >/dev/null 2>&1 || { tail -20 "$log" >&2; stop; unavailable "dockerd did not start"; }
    fi
    if ! have_image "$image"; then
        import_cached busybox px-test/busybox 1 busybox_tree /bin/busybox ||
            unavailable "docker import of $image failed"
    fi
    if ! have_image "$py_image"; then
        py=$(host_python)
        if [ -z "$py" ]; then
            echo "dockerd.sh: no python3 on this host: $py_image not made" >&2
        else
            import_cached python px-test/python 3 python_tree "$py" ||
                unavailable "docker import of $py_image failed"
        fi
    fi
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

# px-test/busybox:1 into the tree $1: the host's static busybox.
busybox_tree() {
    local root=$1 a
    mkdir -p "$root/bin" "$root/etc" "$root/tmp"
    cp /bin/busybox "$root/bin/busybox"
    for a in sh echo cat sleep yes head tail dd true false ls id wget \
             nc seq printf env tr touch rm mkdir stat wc grep; do
        ln -s busybox "$root/bin/$a"
    done
    echo 'nobody:x:65534:65534:nobody:/job:/bin/sh' >"$root/etc/passwd"
}

# px-test/python:3 into the tree $1 from the host's python3, at the host's
# own paths (so the interpreter finds its prefix as on the host). Not made
# when the host has none: the tests that need it SKIP, saying so.
python_tree() {
    local root=$1 py stdlib dynload a lib
    py=$(host_python)
    [ -n "$py" ] || return 2
    set -- $("$py" -c 'import sysconfig as s; print(s.get_paths()["stdlib"], s.get_config_var("DESTSHARED"))')
    stdlib=$1 dynload=${2:-}
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
}

# Processes whose command line names this key's exec root or socket
# directory: the engine, its containerd, the containers' shims.
ours() {
    local p c
    for p in /proc/[0-9]*; do
        c=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
        [[ $c == *"$sock_dir/"* ]] && echo "${p#/proc/}"
    done
}

stop() {
    local pid left
    pid=$(cat "$sock_dir/dockerd.pid" 2>/dev/null)
    if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
        for _ in $(seq 1 200); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null
    fi
    # What the engine left (killed, or its pid file lost): containerd and
    # shims of this key. Never anything of another key or of the system's.
    left=$(ours)
    [ -n "$left" ] && kill $left 2>/dev/null && sleep 1
    left=$(ours)
    [ -n "$left" ] && kill -9 $left 2>/dev/null && sleep 0.5
    left=$(ours)
    if [ -n "$left" ]; then
        echo "dockerd.sh: still running after stop: $left" >&2
        return 1
    fi
    return 0
}

case "${1:-}" in
    start) start ;;
    tcp) echo "tcp://127.0.0.1:$tcp_port" ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop|tcp" >&2; exit 2 ;;
esac
