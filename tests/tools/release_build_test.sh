#!/usr/bin/env bash
# release_build_test.sh - a release build has no way to run a job outside
# the real sandbox (docs/development.md, "Test seams").
#
#   release_build_test.sh linux|win SEAM_BUILD_DIR WORK_DIR
#
# Configures WORK_DIR as a release build (PX_TEST_SEAMS=OFF, warnings as
# errors; win: the mingw-w64 toolchain), builds only the service and
# phoenixctl, and checks:
#   - the release service binary has no fake backend (px_backend_fake), no
#     fault registry (px_fault_*), no test hooks (px_kbfs_test_*,
#     px__winbe_test_*) and no fault site names;
#   - the same search finds them in the seam build's binary (positive
#     control: the search can fail);
#   - the release binary refuses `--backend fake` with a clear error and
#     does not start (win: under Wine, tools/wine-run);
#   - the release configuration has no test executables.
# WORK_DIR is kept, so a rerun only rebuilds what changed.
set -eu
plat=${1:?usage: release_build_test.sh linux|win SEAM_BUILD_DIR WORK_DIR}
seam=$(cd "${2:?seam build dir}" && pwd)
work=${3:?work dir}
src=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }

case $plat in
linux)
    nm=nm
    exe=service/phoenix-executor
    target=phoenix-executor
    cfg=()
    run() { timeout 30 "$@"; }
    # The Linux daemon never had a backend switch: it is an unknown option.
    refusal='unknown argument --backend'
    sites='linux\.cgroup_place|kb\.rollback_step|config\.filecheck_open'
    seam_has='px_fault_hit'
    real=px_backend_linux
    ;;
win)
    nm=x86_64-w64-mingw32-nm
    command -v "$nm" >/dev/null || { echo "SKIP: no $nm"; exit 77; }
    exe=service/PhoenixExecutor.exe
    target=PhoenixExecutor
    cfg=(-DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchain-mingw64.cmake")
    run() { timeout 120 "$src/tools/wine-run" "$@"; }
    refusal='--backend fake refused: this build runs jobs only in the real sandbox'
    sites='winapi\.CreateJobObjectW|kb\.rollback_step|config\.filecheck_open'
    seam_has='px_backend_fake'
    real=px_backend_windows
    ;;
*) fail "platform must be linux or win, not $plat" ;;
esac

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src" -B "$work" "${gen[@]}" "${cfg[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPX_TEST_SEAMS=OFF -DPX_WERROR=ON >"$work.configure.log" 2>&1 \
    || { cat "$work.configure.log"; fail "release configure"; }
grep -q '^PX_TEST_SEAMS:BOOL=OFF$' "$work/CMakeCache.txt" || fail "PX_TEST_SEAMS is not OFF"
cmake --build "$work" -j 2 --target "$target" phoenixctl >"$work.build.log" 2>&1 \
    || { tail -40 "$work.build.log"; fail "release build"; }
bin=$work/$exe
[ -f "$bin" ] || fail "no $bin"

# No test executables and no test support in the release configuration.
for t in px_tests px_test_support px_probe; do
    if cmake --build "$work" --target "$t" >/dev/null 2>&1; then
        fail "the release build has a target $t"
    fi
done

# Symbols and strings: none in the release binary, some in the seam one.
"$nm" "$bin" | grep -q "$real" || fail "release $exe: no $real symbol (stripped? nm proves nothing)"
release_syms=$("$nm" "$bin" | grep -E 'px_backend_fake|px_fault_(hit|arm|reset)|px_kbfs_test_|px__winbe_test_' || true)
[ -z "$release_syms" ] || fail "release $exe has test-seam symbols: $release_syms"
if grep -aqE "$sites" "$bin"; then
    fail "release $exe names fault sites: $(grep -aoE "$sites" "$bin" | sort -u | tr '\n' ' ')"
fi
if [ -f "$seam/$exe" ]; then
    "$nm" "$seam/$exe" | grep -q "$seam_has" \
        || fail "positive control: the seam build's $exe lacks $seam_has"
    grep -aqE "$sites" "$seam/$exe" \
        || fail "positive control: the seam build's $exe names no fault site"
else
    fail "positive control: no seam build at $seam/$exe (build it first)"
fi

# --backend fake: refused with a clear error, nothing started.
set +e
if [ "$plat" = win ]; then
    out=$(run "$bin" --console --backend fake --pipe '\\.\pipe\px-release-check' 2>&1)
else
    out=$(run "$bin" --backend fake --socket "$work/never.sock" 2>&1)
fi
rc=$?
set -e
echo "--backend fake -> exit $rc: $out"
[ "$rc" -ne 0 ] || fail "--backend fake was accepted"
[ "$rc" -ne 124 ] || fail "--backend fake: the service started (killed by timeout)"
printf '%s' "$out" | grep -qF -- "$refusal" || fail "--backend fake: no clear error (want: $refusal)"
echo "release-build ($plat): ok"
