#!/usr/bin/env bash
# setup.sh - install what building and testing PhoenixExecutor needs on
# Debian 12 / Ubuntu (as root, or through sudo). Idempotent: installs only
# what is missing. Used by tools/demo.sh, tools/test.sh and .ci/run.
set -euo pipefail

packages=(
    build-essential cmake ninja-build pkg-config git python3
    libcjson-dev libzmq3-dev libseccomp-dev         # Linux build
    gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 mingw-w64-tools  # Windows build
    wine wine64 wixl msitools dpkg-dev                 # Wine tests, MSI, deps
    clang libclang-rt-14-dev valgrind cppcheck clang-tidy  # fuzz, sanitizers
    bubblewrap iproute2 procps                         # benchmarks, tests
    e2fsprogs                                          # disk-backed job dirs (mke2fs)
    docker.io busybox-static curl                      # container backend tests
    libpython3.11-testsuite python3-venv nodejs sqlite3 # tests/compat
    yamllint                                           # workflow YAML (checksrc)
    libnats-dev nats-server jq                         # cluster worker and its tests
    openssl python3-cryptography                       # cluster TLS/creds test keys
)

# Node.js and npm for the MCP tests (tests/mcp: the official MCP SDK client,
# fetched by `npm ci` at test time). Debian's packages only when no node is
# installed at all: a newer Node.js from elsewhere (with its own npm) stays.
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)

# promtool, for the metrics lint test (linux.metrics_promtool): the one
# binary from Debian's prometheus package (19 MB download, 48 MB unpacked)
# into ~/.cache/phoenix-executor/bin, not the package itself, which would
# also install and start a Prometheus server (and 96 MB with its web deps).
promtool=${XDG_CACHE_HOME:-$HOME/.cache}/phoenix-executor/bin/promtool
if ! command -v promtool >/dev/null && [ ! -x "$promtool" ]; then
    echo "setup: fetching promtool (Debian's prometheus package)"
    tmp=$(mktemp -d)
    chmod 755 "$tmp"
    if (cd "$tmp" && apt-get -o DPkg::Lock::Timeout=600 download prometheus -qq); then
        mkdir -p "$(dirname "$promtool")"
        dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -xO ./usr/bin/promtool >"$promtool.tmp" &&
            chmod 755 "$promtool.tmp" && mv "$promtool.tmp" "$promtool"
    else
        echo "setup: promtool not fetched: linux.metrics_promtool will SKIP (fail under CI=true)" >&2
    fi
    rm -rf "$tmp" "$promtool.tmp"
fi

missing=()
for p in "${packages[@]}"; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] \
        || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all packages present"
    exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
