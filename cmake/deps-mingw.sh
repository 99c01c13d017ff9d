#!/usr/bin/env bash
# deps-mingw.sh - cross-build cJSON and libzmq for x86_64-w64-mingw32 from
# Debian's own source packages, into a cache outside the repository.
#
# Nothing third-party is vendored: `apt-get source` fetches the exact sources
# Debian ships (cjson, zeromq3), we build static libraries with the mingw-w64
# toolchain and install them under
#   ${PX_DEPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phoenix-executor}/mingw-cjson<V>-zmq<V>
# The directory name carries both package versions, so a second run with the
# same versions is a cache hit and costs nothing.
#
# Usage: cmake/deps-mingw.sh            prints the prefix on its last line
#        PX_DEPS_FORCE=1 cmake/deps-mingw.sh   rebuilds even on a cache hit
set -euo pipefail

log() { printf 'deps-mingw: %s\n' "$*" >&2; }

cache_root=${PX_DEPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phoenix-executor}
host=x86_64-w64-mingw32

ensure_deb_src() {
    # apt-get source needs a deb-src line; Debian 12 images often ship none.
    if apt-get indextargets --format '$(IDENTIFIER)' 2>/dev/null | grep -qx 'Sources'; then
        return 0
    fi
    log "adding a deb-src entry for bookworm main"
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        # deb822 format: a Sources stanza mirroring the first URIs line.
        uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
        cat > /etc/apt/sources.list.d/phoenix-deb-src.sources <<EOF
Types: deb-src
URIs: ${uri:-http://deb.debian.org/debian}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    else
        uri=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
        echo "deb-src ${uri:-http://deb.debian.org/debian} bookworm main" \
            > /etc/apt/sources.list.d/phoenix-deb-src.list
    fi
    apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
}

src_version() {
    # The version apt would fetch for a source package (epoch stripped).
    apt-cache showsrc "$1" 2>/dev/null | awk '/^Version:/ {print $2; exit}' | sed 's/^[0-9]*://'
}

ensure_deb_src
cjson_v=$(src_version cjson)
zmq_v=$(src_version zeromq3)
if [ -z "$cjson_v" ] || [ -z "$zmq_v" ]; then
    log "cannot find source packages cjson/zeromq3 (is deb-src reachable?)"
    exit 1
fi
prefix="$cache_root/mingw-cjson${cjson_v}-zmq${zmq_v}"

if [ -f "$prefix/.complete" ] && [ "${PX_DEPS_FORCE:-0}" != 1 ]; then
    log "cache hit: $prefix (cjson $cjson_v, zeromq3 $zmq_v); skipping the cross-build"
    echo "$prefix"
    exit 0
fi

log "cache miss: building cjson $cjson_v and zeromq3 $zmq_v into $prefix"
work=$(mktemp -d "${TMPDIR:-/tmp}/px-deps.XXXXXX")
trap 'rm -rf "$work"' EXIT
rm -rf "$prefix"
mkdir -p "$prefix"
jobs=$(nproc 2>/dev/null || echo 2)
toolchain="$(cd "$(dirname "$0")" && pwd)/toolchain-mingw64.cmake"

( cd "$work" && apt-get source -qq cjson zeromq3 >&2 2>&1 ) >&2

build() { # name srcdir extra-cmake-args...
    local name=$1 src=$2; shift 2
    log "building $name"
    cmake -S "$src" -B "$work/build-$name" -G Ninja \
        -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DPX_TOOLCHAIN_NO_EMULATOR=ON \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
        -DBUILD_SHARED_LIBS=OFF "$@" >"$work/$name-configure.log" 2>&1 \
        || { tail -40 "$work/$name-configure.log" >&2; exit 1; }
    cmake --build "$work/build-$name" -j "$jobs" >"$work/$name-build.log" 2>&1 \
        || { tail -60 "$work/$name-build.log" >&2; exit 1; }
    cmake --install "$work/build-$name" >/dev/null
}

build cjson "$(ls -d "$work"/cjson-*/ | head -1)" \
    -DENABLE_CUSTOM_COMPILER_FLAGS=OFF -DENABLE_CJSON_TEST=OFF \
    -DENABLE_CJSON_UTILS=OFF -DBUILD_SHARED_AND_STATIC_LIBS=OFF \
    -DCJSON_BUILD_SHARED_LIBS=OFF -DENABLE_TARGET_EXPORT=ON

zmq_src=$(ls -d "$work"/zeromq3-*/ | head -1)
zmq_common=(-DZMQ_HAVE_IPC=OFF -DZMQ_CV_IMPL=win32api -DZMQ_WIN32_WINNT=0x0A00
    -DWITH_LIBBSD=OFF -DPOLLER=select -DBUILD_TESTS=OFF -DWITH_DOCS=OFF
    -DWITH_PERF_TOOL=OFF -DENABLE_DRAFTS=OFF -DBUILD_STATIC=ON
    -DBUILD_SHARED=OFF -DWITH_LIBSODIUM=OFF -DENABLE_PRECOMPILED=OFF)
# CURVE with libzmq's bundled TweetNaCl (part of the Debian source package).
if ( build zmq "$zmq_src" "${zmq_common[@]}" -DENABLE_CURVE=ON ); then
    curve=ON
else
    log "libzmq with CURVE failed to build; retrying without CURVE"
    curve=OFF
    build zmq "$zmq_src" "${zmq_common[@]}" -DENABLE_CURVE=OFF
fi

# libzmq names its static archive after the toolset; give it a stable name.
lib=$(ls "$prefix"/lib/libzmq*.a | head -1)
[ "$lib" = "$prefix/lib/libzmq.a" ] || cp "$lib" "$prefix/lib/libzmq.a"
printf 'cjson=%s\nzeromq3=%s\ncurve=%s\n' "$cjson_v" "$zmq_v" "$curve" > "$prefix/.complete"
log "done: $prefix (curve=$curve)"
echo "$prefix"
